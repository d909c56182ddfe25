// A file that grows by whole lines (line_file.h).
#include "line_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "graft/core/error.h"

namespace graft::cli {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

namespace {

const char* kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

LineFile::LineFile(const std::string& path, bool append, std::string op) : path_(path), op_(std::move(op)) {
  auto refuse = [&](const std::string& what) {
    throw Error(op_, "a regular file (or a new one) to write", path_ + " is " + what,
                "graft writes only regular files, never a device, FIFO, socket or directory; pass a file path");
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse(kind(st.st_mode));
  // O_NONBLOCK: a FIFO that appeared meanwhile fails at once (ENXIO) instead of waiting for a reader;
  // no O_TRUNC: nothing is emptied before the type is checked on the open file.
  do {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ENXIO) refuse("a FIFO (named pipe)");
    if (err == EISDIR) refuse("a directory");
    throw Error(op_, "a writable file", path_ + " (" + errno_text(err) + ")",
                err == ENOENT ? "create the directory first" : "check that the directory exists and is writable");
  }
  try {
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) refuse(kind(st.st_mode));
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0 || (!append && ::ftruncate(fd_, 0) != 0)) {
      throw Error(op_, "a writable file", path_ + " (" + errno_text(errno) + ")", "check the file's permissions");
    }
    size_ = append ? static_cast<uint64_t>(st.st_size) : 0;
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

LineFile::~LineFile() {
  if (fd_ >= 0) ::close(fd_);
}

void LineFile::write_line(std::string_view line) {
  std::string bytes;
  bytes.reserve(line.size() + 1);
  bytes.append(line);
  bytes.push_back('\n');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (w > 0) {
      done += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    const int err = w < 0 ? errno : EIO;
    // Cut a partial line back off: the file ends with the last complete line (O_APPEND: the
    // partial bytes are at the end).
    const bool cut = done == 0 || ::ftruncate(fd_, static_cast<off_t>(size_)) == 0;
    throw Error(op_, "to write a line to " + path_,
                "a write error after " + std::to_string(size_) + " bytes (" + errno_text(err) + ")" +
                    (cut ? "; the file ends with the last complete line"
                         : "; the partial line could not be removed"),
                "check the free disk space and the file-size limit (ulimit -f); the run stops here");
  }
  size_ += bytes.size();
}

}  // namespace graft::cli
