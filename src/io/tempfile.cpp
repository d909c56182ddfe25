// make_tempfile and TempFile (graft/io/tempfile.h).
#include "graft/io/tempfile.h"

#include <stdlib.h>  // mkstemp
#include <unistd.h>  // close, unlink

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "graft/core/error.h"

namespace graft {
namespace {

std::string temp_directory() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

// mkstemp's result: the file's name and descriptor, or the errno of the failure.
std::optional<TempFile> make(const std::string& name_prefix, int* error) {
  const std::string pattern = temp_directory() + "/" + name_prefix + "XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());
  if (fd < 0) {
    *error = errno;
    return std::nullopt;
  }
  return TempFile(std::string(buf.data()), fd);
}

}  // namespace

TempFile::TempFile(TempFile&& other) noexcept
    : name(std::exchange(other.name, std::string())), fd(std::exchange(other.fd, -1)) {}

TempFile& TempFile::operator=(TempFile&& other) noexcept {
  if (this != &other) {
    if (fd >= 0) ::close(fd);
    if (!name.empty()) ::unlink(name.c_str());
    name = std::exchange(other.name, std::string());
    fd = std::exchange(other.fd, -1);
  }
  return *this;
}

TempFile::~TempFile() {
  if (fd >= 0) ::close(fd);
  if (!name.empty()) ::unlink(name.c_str());  // already gone (the user removed it): nothing to do
}

std::optional<TempFile> try_make_tempfile(const std::string& name_prefix) {
  int error = 0;
  return make(name_prefix, &error);
}

TempFile make_tempfile(const std::string& name_prefix) {
  int error = 0;
  std::optional<TempFile> file = make(name_prefix, &error);
  if (!file) {
    throw Error("make_tempfile", "a new file " + temp_directory() + "/" + name_prefix + "XXXXXX",
                std::string("mkstemp failed: ") + std::strerror(error),
                "TMPDIR (or /tmp when unset) must name a writable directory");
  }
  return std::move(*file);
}

}  // namespace graft
