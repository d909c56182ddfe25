// Checks of the command's file arguments, made before any work (issue 14, items 4 and 5).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace graft::cli {

// True when a and b name the same file: equal after resolving ".", "..", and symlinks of the parts
// that exist (std::filesystem::weakly_canonical), so "run.log" and "./x/../run.log" are the same.
bool same_path(const std::string& a, const std::string& b);

// Throws a graft::Error naming `flag` when `path`'s directory does not exist or is not a directory,
// so that a typo in --report's directory fails at once, not after the whole run.
void check_output_directory(const std::string& op, const std::string& flag, const std::string& path);

// Throws a graft::Error naming `flag` when `path` exists and is not a regular file after following
// its symlinks (a device node, a FIFO, a socket, a directory, or a symlink loop): graft would replace
// it, or block on it. A new file, or a symlink to a regular or a new file, passes.
void check_output_file(const std::string& op, const std::string& flag, const std::string& path);

// Throws a graft::Error naming `flag` when `path` (unless empty) is not an existing regular file after
// following its symlinks, so that a typo in an input's name fails before the data set is loaded.
void check_input_file(const std::string& op, const std::string& flag, const std::string& path);

// Throws a graft::Error when two of the (flag, path) pairs name the same file (empty paths are
// skipped): writing both would destroy one of them.
void check_distinct_paths(const std::string& op, const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace graft::cli
