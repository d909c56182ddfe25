// graft::make_tempfile(): a fresh, empty file that is removed when its TempFile dies (c10's
// make_tempfile, which LibTorch's tests use for save/load round trips).
//
//   {
//     graft::TempFile file = graft::make_tempfile();   // $TMPDIR/graft-file-XXXXXX, created empty
//     graft::save(model, file.name);
//     graft::load(model, file.name);
//   }                                                  // the file is gone
//
// The file is made by mkstemp (so no other process can have taken the name) in $TMPDIR, or /tmp
// when TMPDIR is unset or empty. A TempFile owns the file and its descriptor: it moves, never
// copies; a moved-from TempFile removes nothing.
#pragma once

#include <optional>
#include <string>

namespace graft {

struct TempFile {
  TempFile(std::string name, int fd) noexcept : name(std::move(name)), fd(fd) {}
  TempFile(TempFile&& other) noexcept;
  TempFile& operator=(TempFile&& other) noexcept;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  // Closes the descriptor and removes the file (when it still exists).
  ~TempFile();

  std::string name;  // the file's full path; empty once moved from
  int fd = -1;       // open for reading and writing; -1 once moved from
};

// A new file "<dir>/<name_prefix>XXXXXX" (the X's made unique by mkstemp), or nullopt when it
// cannot be made (a missing or read-only directory).
std::optional<TempFile> try_make_tempfile(const std::string& name_prefix = "graft-file-");
// The same, throwing graft::Error naming the directory and the system's reason on failure.
TempFile make_tempfile(const std::string& name_prefix = "graft-file-");

}  // namespace graft
