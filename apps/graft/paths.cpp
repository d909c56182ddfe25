// Checks of the command's file arguments (paths.h).
#include "paths.h"

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "graft/core/error.h"

namespace graft::cli {

namespace fs = std::filesystem;

namespace {
fs::path resolved(const std::string& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::path(p).lexically_normal() : r;
}
}  // namespace

bool same_path(const std::string& a, const std::string& b) { return resolved(a) == resolved(b); }

void check_output_directory(const std::string& op, const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  GRAFT_CHECK(fs::is_directory(dir, ec), op + " " + flag, "a file in an existing directory",
              path + " (its directory " + dir.string() + " does not exist or is not a directory)",
              "create the directory first (mkdir -p " + dir.string() + ") or fix the path");
}

void check_output_file(const std::string& op, const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows symlinks
  std::string what;
  if (ec) {
    if (ec.value() != ELOOP) return;  // absent (or unreadable): writing it reports the error
    what = "a symlink loop";
  } else {
    switch (st.type()) {
      case fs::file_type::regular: return;
      case fs::file_type::directory: what = "a directory"; break;
      case fs::file_type::character: what = "a character device"; break;
      case fs::file_type::block: what = "a block device"; break;
      case fs::file_type::fifo: what = "a FIFO (named pipe)"; break;
      case fs::file_type::socket: what = "a socket"; break;
      default: return;  // not_found: a new file
    }
    if (fs::is_symlink(fs::symlink_status(path, ec))) what = "a symlink to " + what;
  }
  throw Error(op + " " + flag, "a regular file (or a new one) to write", path + " is " + what,
              "graft replaces only regular files, never a device, FIFO, socket or directory; pass a file path");
}

void check_input_file(const std::string& op, const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows symlinks
  if (!ec && st.type() == fs::file_type::regular) return;
  const std::string what = ec || st.type() == fs::file_type::not_found ? "does not exist (or cannot be reached)"
                           : st.type() == fs::file_type::directory     ? "is a directory"
                                                                       : "is not a regular file";
  throw Error(op + " " + flag, "an existing file to read", path + " " + what,
              "check the path; relative paths start at the current directory");
}

void check_distinct_paths(const std::string& op, const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [fa, pa] = outputs[i];
      const auto& [fb, pb] = outputs[j];
      if (pa.empty() || pb.empty()) continue;
      GRAFT_CHECK(!same_path(pa, pb), op, "a different file for " + fa + " and " + fb,
                  "the same file " + pa + " for both", "writing one would destroy the other; give each its own path");
    }
  }
}

}  // namespace graft::cli
