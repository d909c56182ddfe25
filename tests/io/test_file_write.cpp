// Atomic writes onto what is not a plain new or regular file (issue 14, items 1 and 3): a symlink is
// followed and its file replaced (the link stays), a device, FIFO, socket or directory is refused
// before anything is written, the temporary of a save interrupted by SIGINT/SIGTERM is removed, and
// the next save of a target removes the temporaries of dead processes (and nothing else).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "../../src/io/file_util.h"  // the streaming write path, to interrupt a save midway
#include "../support/test_util.h"
#include "graft/graft.h"
#include "graft/io/file.h"
#include "temp_dir.h"

namespace graft::test {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  const auto b = read_bytes(path);
  return {b.begin(), b.end()};
}

void write_text(const std::string& path, const std::string& s) { write_bytes(path, {s.begin(), s.end()}); }

std::vector<std::string> sorted_files(const TempDir& dir) {
  auto f = dir.files();
  std::sort(f.begin(), f.end());
  return f;
}

TEST(FileWrite, SymlinkedTargetIsReplacedAndTheLinkStays) {
  TempDir dir;
  write_text(dir / "run42.safetensors", "old");
  fs::create_symlink("run42.safetensors", dir / "latest");  // relative, as `ln -s` makes it
  io::write_file_atomically(dir / "latest", "new contents", "test");
  EXPECT_TRUE(fs::is_symlink(dir / "latest"));
  EXPECT_EQ(fs::read_symlink(dir / "latest"), "run42.safetensors");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir / "run42.safetensors")));
  EXPECT_EQ(read_text(dir / "run42.safetensors"), "new contents");
  EXPECT_EQ(sorted_files(dir), (std::vector<std::string>{"latest", "run42.safetensors"}));
}

TEST(FileWrite, ChainOfSymlinksEndsAtTheFileReplaced) {
  TempDir dir;
  fs::create_directory(dir / "sub");
  write_text(dir / "sub/real", "old");
  fs::create_symlink(dir / "sub/real", dir / "sub/abs");  // absolute
  fs::create_symlink("sub/abs", dir / "b");               // relative, across directories
  fs::create_symlink("b", dir / "a");
  io::write_file_atomically(dir / "a", "chained", "test");
  EXPECT_EQ(read_text(dir / "sub/real"), "chained");
  for (const char* link : {"a", "b", "sub/abs"}) EXPECT_TRUE(fs::is_symlink(dir / link)) << link;
  EXPECT_EQ(sorted_files(dir), (std::vector<std::string>{"a", "b", "sub"}));
  // The temporary was made next to the real file, and is gone.
  std::vector<std::string> sub;
  for (const auto& e : fs::directory_iterator(dir / "sub")) sub.push_back(e.path().filename().string());
  std::sort(sub.begin(), sub.end());
  EXPECT_EQ(sub, (std::vector<std::string>{"abs", "real"}));
}

TEST(FileWrite, DanglingSymlinkCreatesTheFileItNames) {
  TempDir dir;
  fs::create_symlink("new.txt", dir / "link");
  io::write_file_atomically(dir / "link", "fresh", "test");
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_text(dir / "new.txt"), "fresh");
}

TEST(FileWrite, NonRegularTargetsAreRefusedBeforeWriting) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  fs::create_directory(dir / "adir");
  fs::create_symlink("fifo", dir / "to_fifo");
  fs::create_symlink("loop2", dir / "loop1");
  fs::create_symlink("loop1", dir / "loop2");
  // A Unix socket.
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = dir / "sock";
  ASSERT_LT(sock_path.size(), sizeof addr.sun_path);
  std::copy(sock_path.begin(), sock_path.end(), addr.sun_path);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  // A symlink to a pipe through /proc/self/fd (as `ln -s /proc/self/fd/1 out` onto a piped stdout).
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  fs::create_symlink("/proc/self/fd/" + std::to_string(pipe_fds[1]), dir / "to_pipe");

  const std::string refused = "a regular file (or a new one) to write";
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(dir / "fifo", "x", "test"); },
                           {refused, dir / "fifo", "is a FIFO"}));
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(dir / "to_fifo", "x", "test"); },
                           {refused, "is a symlink to a FIFO"}));
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(dir / "adir", "x", "test"); }, {refused, "is a directory"}));
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(sock_path, "x", "test"); }, {refused, "is a socket"}));
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(dir / "loop1", "x", "test"); }, {refused, "symlink loop"}));
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(dir / "to_pipe", "x", "test"); },
                           {refused, "is a symlink to a FIFO"}));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  ::close(sock);

  // Everything is as it was: no temporaries, each name still what it was.
  EXPECT_EQ(sorted_files(dir), (std::vector<std::string>{"adir", "fifo", "loop1", "loop2", "sock", "to_fifo", "to_pipe"}));
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(dir / "fifo")));
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(dir / "adir")));
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(sock_path)));
  for (const char* link : {"to_fifo", "loop1", "loop2", "to_pipe"}) EXPECT_TRUE(fs::is_symlink(dir / link)) << link;
  EXPECT_TRUE(fs::is_empty(dir / "adir"));
}

TEST(FileWrite, DeviceNodeIsRefusedAndStaysADevice) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  TempDir dir;
  const std::string node = dir / "null";
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);  // a second /dev/null
  fs::create_symlink("null", dir / "to_null");
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(node, "x", "test"); }, {node, "is a character device"}));
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(dir / "to_null", "x", "test"); },
                           {"is a symlink to a character device"}));
  struct stat st {};
  ASSERT_EQ(::lstat(node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(sorted_files(dir), (std::vector<std::string>{"null", "to_null"}));
}

TEST(FileWrite, FailedWriteThroughASymlinkLeavesTheFileAndTheLink) {
  TempDir dir;
  write_text(dir / "real", "precious");
  fs::create_symlink("real", dir / "link");
  io::detail::set_write_failure_after_bytes(3);
  EXPECT_TRUE(throws_error([&] { io::write_file_atomically(dir / "link", "replacement", "test"); },
                           {"write error after 3 bytes"}));
  io::detail::set_write_failure_after_bytes(-1);
  EXPECT_EQ(read_text(dir / "real"), "precious");
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(sorted_files(dir), (std::vector<std::string>{"link", "real"}));
}

// The PID of a process that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(FileWrite, StaleTemporariesOfDeadProcessesAreRemoved) {
  TempDir dir;
  const std::string dead = std::to_string(dead_pid());
  const std::string parent = std::to_string(::getppid());  // alive: the process that runs the tests
  const std::string self = std::to_string(::getpid());
  write_text(dir / "t", "old");
  const std::vector<std::string> stale = {"t.tmp." + dead + ".0", "t.tmp." + dead + ".17"};
  const std::vector<std::string> kept = {
      "t.tmp." + parent + ".0",     // another live process saving t
      "t.tmp." + self + ".999",     // this process
      "t.tmp." + dead,              // not the pattern: no .N
      "t.tmp." + dead + ".1x",      // not the pattern
      "t.tmp.0" + dead + ".1",      // a leading zero: not a name graft makes
      "t.tmp." + dead + ".",        // empty N
      "tt.tmp." + dead + ".0",      // another target's
      "u.tmp." + dead + ".0",       // another target's
      "t.tmp." + dead + ".0.bak",   // not the pattern
  };
  for (const auto& f : stale) write_text(dir / f, "stale");
  for (const auto& f : kept) write_text(dir / f, "keep");
  fs::create_directory(dir / ("t.tmp." + dead + ".5"));  // not a regular file: left alone
  io::write_file_atomically(dir / "t", "new", "test");
  EXPECT_EQ(read_text(dir / "t"), "new");
  for (const auto& f : stale) EXPECT_FALSE(fs::exists(fs::symlink_status(dir / f))) << f;
  for (const auto& f : kept) EXPECT_EQ(read_text(dir / f), "keep") << f;
  EXPECT_TRUE(fs::is_directory(dir / ("t.tmp." + dead + ".5")));
}

TEST(FileWrite, StaleTemporariesNextToASymlinkedFileAreRemoved) {
  TempDir dir;
  fs::create_directory(dir / "runs");
  write_text(dir / "runs/run42", "old");
  fs::create_symlink("runs/run42", dir / "latest");
  const std::string dead = std::to_string(dead_pid());
  write_text(dir / ("runs/run42.tmp." + dead + ".3"), "stale");
  io::write_file_atomically(dir / "latest", "new", "test");
  EXPECT_EQ(read_text(dir / "runs/run42"), "new");
  EXPECT_FALSE(fs::exists(dir / ("runs/run42.tmp." + dead + ".3")));
}

// A child saves `dir/t` through the real write path; midway the body raises `sig` at itself. The
// child must die of the signal (exit status 128 + sig in a shell) and leave no temporary.
void expect_signal_removes_temporary(int sig) {
  struct sigaction now {};
  ASSERT_EQ(::sigaction(sig, nullptr, &now), 0);
  if (!(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN) {
    GTEST_SKIP() << "the signal is ignored in this process (and graft keeps it ignored)";
  }
  TempDir dir;
  const std::string target = dir / "t";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      io::detail::write_file_atomically(target, "test", [sig](io::detail::Writer& w) {
        const std::vector<char> block(size_t{3} << 20, 'x');  // past the writer's 1 MiB buffer: on disk
        w.write(block.data(), block.size());
        ::raise(sig);
        w.write("never", 5);
      });
    } catch (...) {
    }
    ::_exit(3);  // reached only if the signal did not end the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig)
      << "status " << status << (WIFEXITED(status) ? " (exited " + std::to_string(WEXITSTATUS(status)) + ")" : "");
  EXPECT_EQ(dir.files(), std::vector<std::string>{}) << "the temporary (or a target) was left behind";
}

TEST(FileWrite, SigtermDuringASaveRemovesTheTemporary) { expect_signal_removes_temporary(SIGTERM); }
TEST(FileWrite, SigintDuringASaveRemovesTheTemporary) { expect_signal_removes_temporary(SIGINT); }

}  // namespace
}  // namespace graft::test
