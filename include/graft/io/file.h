// Writing a whole file safely: the same atomic save graft's checkpoints use, for programs built on
// graft (the `graft report` page, a user's own outputs).
#pragma once

#include <string>
#include <string_view>

namespace graft::io {

// Writes `contents` to `path` atomically: a temporary file next to `path`, flushed to disk (fsync)
// and renamed over it. On any failure the temporary file is removed, `path` is left as it was, and
// a graft::Error naming `op` and the path is thrown.
void write_file_atomically(const std::string& path, std::string_view contents, const std::string& op);

}  // namespace graft::io
