// Reading whole files or ranges of them, and atomic writes (temporary file + fsync + rename).
#include "io/file_util.h"
#include "graft/io/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string_view>
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

// ---- the target of a save: symlinks followed, only regular files replaced ----

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "something that is not a regular file";
}

[[noreturn]] void refuse_target(const std::string& op, const std::string& path, const std::string& what) {
  throw Error(op, "a regular file (or a new one) to write", path + " is " + what,
              "a save renames a new file over its target, so the target must be a regular file (or not exist "
              "yet), never a device, FIFO, socket or directory: pass a file path");
}

// The file a save of `path` must replace: `path` itself, or the end of its symlink chain (a link
// `latest -> run42.safetensors` replaces run42.safetensors and stays a link). A dangling link names
// the file to create, as `echo > link` would. An existing target that is not a regular file, or a
// chain longer than kMaxLinks (a loop), is refused before anything is written.
std::string resolve_target(const std::string& path, const std::string& op) {
  constexpr int kMaxLinks = 40;  // Linux's own limit (MAXSYMLINKS)
  std::string cur = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    // Absent: a new file (creating the temporary checks its directory); another error (EACCES):
    // creating the temporary reports it.
    if (::lstat(cur.c_str(), &st) != 0) return cur;
    if (S_ISREG(st.st_mode)) return cur;
    if (!S_ISLNK(st.st_mode)) refuse_target(op, path, cur == path ? file_kind(st.st_mode)
                                                                 : std::string("a symlink to ") + cur + ", " +
                                                                       file_kind(st.st_mode));
    // What the whole chain ends at: /proc/self/fd/1 is a "magic" link whose readlink text
    // ("pipe:[123]") names no file, but stat follows it to the pipe.
    struct stat end {};
    const bool ends = ::stat(cur.c_str(), &end) == 0;
    const int err = ends ? 0 : errno;
    if (ends && !S_ISREG(end.st_mode)) refuse_target(op, path, std::string("a symlink to ") + file_kind(end.st_mode));
    if (hops >= kMaxLinks || err == ELOOP) {
      refuse_target(op, path, "a symlink loop (or a chain of more than " + std::to_string(kMaxLinks) + " links)");
    }
    std::vector<char> buf(static_cast<size_t>(std::max<off_t>(st.st_size, 0)) + 256);
    const ssize_t n = ::readlink(cur.c_str(), buf.data(), buf.size());
    if (n <= 0 || static_cast<size_t>(n) >= buf.size()) {
      throw Error(op, "a readable symlink", path + " (reading the link " + cur + " failed)",
                  "check the link, or pass the path of the file itself");
    }
    std::string next(buf.data(), static_cast<size_t>(n));
    cur = next.front() == '/' ? next : parent_dir(cur) + "/" + next;
  }
}

// Note [Temporaries and signals]
// A save interrupted by SIGINT or SIGTERM (Ctrl-C, `kill`, a scheduler's time limit) would leave its
// full-size temporary file behind for ever. Each temporary being written is registered in a fixed
// table (no allocation, no locks: a handler may run at any point, on any thread); the handler
// unlinks the live ones (unlink is async-signal-safe), puts back the disposition it found when it
// was installed and re-raises the signal: the signal is blocked while the handler runs, so it is
// delivered as soon as the handler returns, and the process dies of it as before (exit status
// 128 + sig) or the program's own earlier handler runs (SA_RESETHAND style, chained). The handlers
// are installed once, at the first save, and only for a signal that is not ignored (a `nohup`ed
// process or `trap '' TERM` keeps ignoring it); a handler installed later by the program replaces
// graft's. Each slot is a seqlock: `seq` % 4 is 0 free, 1 being filled, 2 live; the handler copies
// the path and unlinks it only when `seq` did not change meanwhile, so a slot released and reused
// by another thread is never read half-written. A save that finds no free slot (more than kSlots
// at once, or a path longer than kPathMax) or a process killed by SIGKILL leaves its temporary;
// the next save of the same target removes temporaries whose process is gone
// (remove_stale_temporaries).

constexpr int kSlots = 32;
constexpr size_t kPathMax = 4096;
static_assert(std::atomic<char>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

struct TempSlot {
  std::atomic<uint32_t> seq{0};
  std::atomic<char> path[kPathMax];
};
TempSlot g_temps[kSlots];
struct sigaction g_previous_int {}, g_previous_term {};

void unlink_live_temporaries() {
  char copy[kPathMax];
  for (TempSlot& slot : g_temps) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      const uint32_t s = slot.seq.load(std::memory_order_acquire);
      if (s % 4 != 2) break;
      size_t i = 0;
      for (; i + 1 < kPathMax; ++i) {
        copy[i] = slot.path[i].load(std::memory_order_relaxed);
        if (copy[i] == '\0') break;
      }
      copy[i] = '\0';
      std::atomic_thread_fence(std::memory_order_acquire);
      if (slot.seq.load(std::memory_order_relaxed) == s) {
        (void)::unlink(copy);
        break;
      }
    }
  }
}

extern "C" void graft_unlink_temporaries_on_signal(int sig) {
  const int saved_errno = errno;
  unlink_live_temporaries();
  ::sigaction(sig, sig == SIGINT ? &g_previous_int : &g_previous_term, nullptr);
  ::raise(sig);  // blocked until this handler returns; then delivered to the previous disposition
  errno = saved_errno;
}

void install_signal_cleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : {SIGINT, SIGTERM}) {
      struct sigaction& previous = sig == SIGINT ? g_previous_int : g_previous_term;
      if (::sigaction(sig, nullptr, &previous) != 0) continue;
      if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = graft_unlink_temporaries_on_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      (void)::sigaction(sig, &sa, nullptr);
    }
  });
}

// A temporary file registered for the signal handler while it exists (a no-op when no slot is free).
class LiveTemporary {
 public:
  explicit LiveTemporary(const std::string& path) {
    if (path.size() >= kPathMax) return;
    install_signal_cleanup();
    for (int i = 0; i < kSlots; ++i) {
      uint32_t s = g_temps[i].seq.load(std::memory_order_relaxed);
      if (s % 4 != 0 || !g_temps[i].seq.compare_exchange_strong(s, s + 1, std::memory_order_relaxed)) continue;
      std::atomic_thread_fence(std::memory_order_release);
      for (size_t k = 0; k <= path.size(); ++k) g_temps[i].path[k].store(path.c_str()[k], std::memory_order_relaxed);
      g_temps[i].seq.store(s + 2, std::memory_order_release);
      slot_ = i;
      return;
    }
  }
  ~LiveTemporary() {
    if (slot_ >= 0) g_temps[slot_].seq.fetch_add(2, std::memory_order_release);  // live (2) -> free (0)
  }
  LiveTemporary(const LiveTemporary&) = delete;
  LiveTemporary& operator=(const LiveTemporary&) = delete;

 private:
  int slot_ = -1;
};

// Removes `<base>.tmp.<PID>.<N>` files next to `target` (exactly that name, as write_file_atomically
// makes them, and regular files only) whose process no longer exists (kill(pid, 0) fails with ESRCH):
// the leftovers of a save killed by SIGKILL or a power cut. Temporaries of live processes (another
// run saving the same file) and of this process are left alone. Best effort: errors are ignored.
void remove_stale_temporaries(const std::string& target) {
  const auto slash = target.find_last_of('/');
  const std::string prefix = (slash == std::string::npos ? target : target.substr(slash + 1)) + ".tmp.";
  DIR* dir = ::opendir(parent_dir(target).c_str());
  if (!dir) return;
  // A decimal number as write_file_atomically writes it: digits, no sign, no leading zero.
  auto number = [](std::string_view s, uint64_t max, uint64_t& out) {
    if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return false;
    out = 0;
    for (const char c : s) {
      if (c < '0' || c > '9') return false;
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (out > (max - d) / 10) return false;
      out = out * 10 + d;
    }
    return true;
  };
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) continue;
    const std::string_view rest = name.substr(prefix.size());
    const auto dot = rest.find('.');
    uint64_t pid = 0, n = 0;
    if (dot == std::string_view::npos || !number(rest.substr(0, dot), INT_MAX, pid) || pid == 0 ||
        !number(rest.substr(dot + 1), UINT64_MAX, n)) {
      continue;
    }
    if (static_cast<pid_t>(pid) == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (EPERM: another user's)
    struct stat st {};
    if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    (void)::unlinkat(::dirfd(dir), e->d_name, 0);
  }
  ::closedir(dir);
}

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
  // The file to replace (symlinks followed, non-regular files refused), and the leftovers of
  // earlier saves of it that were killed (Note [Temporaries and signals]).
  const std::string target = resolve_target(path, op);
  remove_stale_temporaries(target);
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST && errno != EINTR) break;
  }
  if (fd < 0) {
    const int err = errno;
    throw Error(op, "to create a temporary file in " + parent_dir(target),
                "an error (" + errno_text(err) + ")",
                err == ENOENT ? "create the directory first" : "check that the directory exists and is writable");
  }
  const LiveTemporary live(tmp);
  // An existing file keeps its permissions.
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode)) (void)::fchmod(fd, st.st_mode & 07777);

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
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
      throw Error(op, "to rename the temporary file over the target", "an error (" + errno_text(errno) + ")",
                  "check that the target is not a directory");
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable (best effort: some file systems refuse fsync on directories).
  const int dfd = ::open(parent_dir(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
