// File helpers shared by the checkpoint and dataset readers (internal to graft).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace graft::io::detail {

// `op("path")`, the way every file error names its operation and file.
std::string file_op(const char* op, const std::string& path);

// A file opened for reading; errors name `op` (already holding the path).
class InputFile {
 public:
  InputFile(const std::string& path, std::string op);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }
  // Reads exactly dst.size() bytes at `offset`; a short read throws, naming `what`.
  void read_at(uint64_t offset, std::span<uint8_t> dst, const std::string& what);
  // The whole file.
  std::vector<uint8_t> read_all();

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string op_;
};

// Writes through a buffer; write errors throw naming `op`.
class Writer {
 public:
  virtual ~Writer() = default;
  virtual void write(const void* data, size_t n) = 0;
};

// Creates a temporary file next to `path`, lets `body` write it, flushes it to disk (fsync) and
// renames it over `path`. On any failure the temporary file is removed, `path` is left as it was,
// and a graft::Error naming `op` is thrown.
void write_file_atomically(const std::string& path, const std::string& op,
                           const std::function<void(Writer&)>& body);

// Test hook behind graft::io::detail::set_save_failure_after_bytes.
void set_write_failure_after_bytes(int64_t n);

}  // namespace graft::io::detail
