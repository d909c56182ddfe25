// Zip archives in memory, on libzip (internal to graft): the container of PyTorch's torch.save
// (1.6+) and LibTorch's torch::save files.
//
// libzip does the parsing (its readers are fuzzed upstream); this layer adds what a checkpoint
// reader needs on top: every failure is a graft::Error naming the caller's op and the file, entry
// sizes are bounded before anything is allocated (Note [Zip entry bounds] in
// src/io/zip_archive.cpp), and the writer produces the same bytes for the same entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

struct zip;  // libzip's zip_t (libzip's header stays out of graft's headers)

namespace graft::io::detail {

// A zip archive read from bytes held in memory (a whole file). The bytes are not copied: they must
// outlive the reader. `source` names the file in every error ("model.pt", "<memory>"); `op` is the
// caller's name ("pickle_load"): errors read `pickle_load("model.pt"): expected ..., but got ...`,
// with libzip's message where libzip found the fault, and a hint.
// Opened with libzip's consistency checks (ZIP_CHECKCONS: every local header agrees with its central
// directory entry, entries lie before the central directory, no two entries share a name).
// Not thread-safe: one thread at a time (libzip's archive handle has no locking).
class ZipReader {
 public:
  // A compressed entry may claim at most this many times its compressed size (deflate cannot
  // exceed about 1032:1).
  static constexpr uint64_t max_ratio = 1100;

  ZipReader(const char* data, size_t size, std::string source, std::string op);
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;
  ZipReader(ZipReader&& other) noexcept;
  ZipReader& operator=(ZipReader&& other) noexcept;

  const std::vector<std::string>& names() const { return names_; }  // in the archive's order
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  uint64_t entry_size(const std::string& name) const;  // uncompressed size; an error when absent
  // The whole entry, after the bounds of Note [Zip entry bounds] and libzip's CRC check.
  std::string read(const std::string& name) const;
  // Reads the entry into caller memory (tensor storages: no extra copy); size must equal entry_size.
  void read_into(const std::string& name, void* dst, uint64_t size) const;

 private:
  uint64_t index_of(const std::string& name) const;
  // Checks the entry's claimed size against the bounds; returns it.
  uint64_t checked_size(uint64_t index, const std::string& name) const;
  void read_entry(uint64_t index, const std::string& name, char* dst, uint64_t size) const;

  ::zip* archive_ = nullptr;
  size_t size_ = 0;
  std::string op_;  // op("source")
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint64_t> index_;
};

// A zip archive built in memory (Note [Zip writer layout] in src/io/zip_archive.cpp): entries in the
// order added, STORED (no compression), a fixed modification time (1980-01-01 00:00:00), each entry's
// data at a 64-byte-aligned offset of the archive as PyTorch writes them, zip64 where sizes need it.
// The same entries give the same bytes.
class ZipWriter {
 public:
  explicit ZipWriter(std::string op);
  ~ZipWriter();
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;

  // The writer keeps the bytes until finish(). An empty name, a name holding a NUL byte or longer
  // than 65535 bytes, and a name already added are errors.
  void add(const std::string& name, std::string bytes);
  // The archive's bytes; the writer is then empty and refuses further use.
  std::string finish();

 private:
  struct Entry {
    std::string name, bytes;
  };
  std::string op_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> added_;
  bool finished_ = false;
};

// Whether the bytes start as a zip archive does: a local file header ("PK\x03\x04"), or the end
// record of an empty archive ("PK\x05\x06").
bool looks_like_zip(const char* data, size_t size);

}  // namespace graft::io::detail
