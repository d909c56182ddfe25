// Checks of the command's file arguments (paths.h).
#include "paths.h"

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
