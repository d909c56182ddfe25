// graft::Error formatting.
#include "graft/core/error.h"

#include <sstream>

namespace graft {

namespace {
std::string format(const std::string& op, const std::string& expected, const std::string& got,
                   const std::string& hint) {
  std::string m = op + ": expected " + expected + ", but got " + got;
  if (!hint.empty()) m += ". Hint: " + hint;
  return m;
}
}  // namespace

Error::Error(std::string op, std::string expected, std::string got, std::string hint)
    : std::runtime_error(format(op, expected, got, hint)),
      op_(std::move(op)), expected_(std::move(expected)), got_(std::move(got)), hint_(std::move(hint)) {}

Error::Error(std::string op, std::string message)
    : std::runtime_error(op + ": " + message), op_(std::move(op)) {}

namespace detail {
void assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  std::ostringstream os;
  os << "internal error (a bug in graft, please report it): " << cond << " failed at " << file << ":" << line
     << (msg.empty() ? "" : ": ") << msg;
  throw Error("graft", os.str());
}
}  // namespace detail

}  // namespace graft
