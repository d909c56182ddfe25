// Reading whole files or ranges of them, and atomic writes (temporary file + fsync + rename).
#include "io/file_util.h"
#include "graft/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "graft/core/error.h"

namespace graft::io::detail {

namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

std::atomic<int64_t> g_fail_after{-1};

std::string parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

class FdWriter final : public Writer {
 public:
  FdWriter(int fd, const std::string& op, int64_t fail_after) : fd_(fd), op_(op), fail_after_(fail_after) {
    buf_.reserve(kBuffer);
  }
  void write(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    if (buf_.size() + n <= kBuffer) {
      buf_.insert(buf_.end(), p, p + n);
      return;
    }
    flush();
    if (n >= kBuffer) {
      write_through(p, n);
    } else {
      buf_.insert(buf_.end(), p, p + n);
    }
  }
  void flush() {
    write_through(buf_.data(), buf_.size());
    buf_.clear();
  }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;
  void write_through(const uint8_t* p, size_t n) {
    while (n > 0) {
      size_t chunk = n;
      if (fail_after_ >= 0) {
        const uint64_t room = static_cast<uint64_t>(fail_after_) > written_
                                  ? static_cast<uint64_t>(fail_after_) - written_ : 0;
        if (room == 0) fail(ENOSPC);
        chunk = static_cast<size_t>(std::min<uint64_t>(chunk, room));
      }
      const ssize_t w = ::write(fd_, p, chunk);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail(errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
      written_ += static_cast<uint64_t>(w);
    }
  }
  [[noreturn]] void fail(int err) {
    throw Error(op_, "to write the file", "a write error after " + std::to_string(written_) + " bytes (" +
                                              errno_text(err) + ")",
                "check the free disk space and that the directory is writable; the previous file, if "
                "any, is unchanged");
  }

  int fd_;
  const std::string& op_;
  int64_t fail_after_;
  uint64_t written_ = 0;
  std::vector<uint8_t> buf_;
};

}  // namespace

std::string file_op(const char* op, const std::string& path) { return std::string(op) + "(\"" + path + "\")"; }

InputFile::InputFile(const std::string& path, std::string op) : op_(std::move(op)) {
  // O_NONBLOCK: open() of a FIFO without a writer (or of some devices) would block for ever; the
  // type is checked on the open descriptor (no race with a rename), then blocking reads are restored.
  do {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int err = errno;
    throw Error(op_, "a readable file", "an error opening it (" + errno_text(err) + ")",
                err == ENOENT ? "check the path; relative paths start at the current directory"
                : err == ELOOP ? "a symbolic link on the path points back to itself; fix or remove it"
                               : "check the file's permissions");
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe), not a regular file"
                       : S_ISCHR(st.st_mode)  ? "a character device, not a regular file"
                       : S_ISBLK(st.st_mode)  ? "a block device, not a regular file"
                       : S_ISSOCK(st.st_mode) ? "a socket, not a regular file"
                                              : "something that is not a regular file";
    ::close(fd_);
    fd_ = -1;
    throw Error(op_, "a regular file", what, "pass the path of the file itself (pipes and devices are not read)");
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(uint64_t offset, std::span<uint8_t> dst, const std::string& what) {
  size_t done = 0;
  while (done < dst.size()) {
    const ssize_t r = ::pread(fd_, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error(op_, "to read " + what, "a read error (" + errno_text(errno) + ")", "");
    }
    if (r == 0) {
      throw Error(op_, std::to_string(dst.size()) + " bytes of " + what + " at byte " + std::to_string(offset),
                  "the end of the file after " + std::to_string(done) + " bytes",
                  "the file shrank while it was read");
    }
    done += static_cast<size_t>(r);
  }
}

std::vector<uint8_t> InputFile::read_all() {
  std::vector<uint8_t> bytes(static_cast<size_t>(size_));
  read_at(0, bytes, "the file");
  return bytes;
}

void write_file_atomically(const std::string& path, const std::string& op,
                           const std::function<void(Writer&)>& body) {
  GRAFT_CHECK(!path.empty() && path.back() != '/', op, "a file path", "\"" + path + "\"",
              "name the file to write, not a directory");
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST && errno != EINTR) break;
  }
  if (fd < 0) {
    const int err = errno;
    throw Error(op, "to create a temporary file in " + parent_dir(path),
                "an error (" + errno_text(err) + ")",
                err == ENOENT ? "create the directory first" : "check that the directory exists and is writable");
  }
  // An existing file keeps its permissions.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) (void)::fchmod(fd, st.st_mode & 07777);

  try {
    FdWriter w(fd, op, g_fail_after.load());
    body(w);
    w.flush();
    if (::fsync(fd) != 0) {
      throw Error(op, "to flush the file to disk", "an error (" + errno_text(errno) + ")", "");
    }
    const int fd_copy = fd;
    fd = -1;
    if (::close(fd_copy) != 0) {
      throw Error(op, "to close the file", "an error (" + errno_text(errno) + ")", "");
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      throw Error(op, "to rename the temporary file over the target", "an error (" + errno_text(errno) + ")",
                  "check that the target is not a directory");
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable (best effort: some file systems refuse fsync on directories).
  const int dfd = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void set_write_failure_after_bytes(int64_t n) { g_fail_after.store(n); }

}  // namespace graft::io::detail

namespace graft::io {

void write_file_atomically(const std::string& path, std::string_view contents, const std::string& op) {
  detail::write_file_atomically(path, op, [&](detail::Writer& w) { w.write(contents.data(), contents.size()); });
}

}  // namespace graft::io
