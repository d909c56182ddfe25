// A file that grows by whole lines: the run log of graft train --log (issue 14, item 2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace graft::cli {

// The message of an errno value ("No such file or directory").
std::string errno_text(int err);

// Every write is checked, and a line that cannot be written completely (a full disk, a file-size
// limit) is cut off again, so the file always ends with a complete line: what graft report reads
// stays readable. A symlink is followed (its file is written, the link stays); a target that is not
// a regular file (a device, a FIFO, a socket, a directory) is refused without writing to it. Lines
// go to the file as they come (write(2), no buffer of its own): a crash loses no finished line.
// Errors throw graft::Error naming `op` and the path.
class LineFile {
 public:
  // Opens `path`, creating it: emptied first, or with `append` kept and added to.
  LineFile(const std::string& path, bool append, std::string op);
  ~LineFile();
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;

  // Writes `line` and a newline: all of it, or nothing (then it throws).
  void write_line(std::string_view line);

 private:
  int fd_ = -1;
  uint64_t size_ = 0;  // the bytes of complete lines: where a failed line is cut back to
  std::string path_, op_;
};

}  // namespace graft::cli
