// LibTorch's check and warning macros, for ported code. tools/port-from-libtorch.sh renames
// TORCH_CHECK( to GRAFT_TORCH_CHECK( (and the others below likewise): graft's own GRAFT_CHECK takes
// the op, what was expected, what was got and a hint, so LibTorch's form, a condition and a message
// in pieces, needs a name of its own.
//   GRAFT_TORCH_CHECK(cond, pieces...)            throws graft::Error; its message is the pieces written
//                                                  one after the other (c10::str), or, with none, LibTorch's
//                                                  "Expected cond to be true, but got false."
//   GRAFT_TORCH_CHECK_INDEX/_VALUE/_TYPE/_NOT_IMPLEMENTED(cond, pieces...)   the same (LibTorch throws
//                                                  c10::Error's subclasses; graft has one error type)
//   GRAFT_TORCH_INTERNAL_ASSERT(cond, pieces...)   "cond INTERNAL ASSERT FAILED at file:line, ..."
//   GRAFT_TORCH_WARN(pieces...), GRAFT_TORCH_WARN_ONCE(pieces...)   a warning to the handler of the moment
#pragma once

#include <string>

#include "graft/core/error.h"
#include "graft/core/util.h"
#include "graft/core/warning.h"

namespace graft::detail {

inline std::string torch_check_message(const char* cond) {
  return std::string("Expected ") + cond + " to be true, but got false.";
}
template <class... Args>
std::string torch_check_message(const char* /*cond*/, const Args&... pieces) {
  return ::graft::str(pieces...);
}
template <class... Args>
std::string torch_internal_assert_message(const char* cond, const char* file, int line, const Args&... pieces) {
  return ::graft::str(cond, " INTERNAL ASSERT FAILED at \"", file, "\":", line, ", please report a bug to graft. ",
                      pieces...);
}

}  // namespace graft::detail

#define GRAFT_TORCH_CHECK(cond, ...)                                                              \
  do {                                                                                            \
    if (!(cond)) [[unlikely]] {                                                                   \
      throw ::graft::Error(__func__, ::graft::detail::torch_check_message(#cond __VA_OPT__(, ) __VA_ARGS__)); \
    }                                                                                             \
  } while (0)
#define GRAFT_TORCH_CHECK_INDEX(cond, ...) GRAFT_TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define GRAFT_TORCH_CHECK_VALUE(cond, ...) GRAFT_TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define GRAFT_TORCH_CHECK_TYPE(cond, ...) GRAFT_TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define GRAFT_TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) GRAFT_TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)

#define GRAFT_TORCH_INTERNAL_ASSERT(cond, ...)                                                       \
  do {                                                                                               \
    if (!(cond)) [[unlikely]] {                                                                      \
      throw ::graft::Error(__func__, ::graft::detail::torch_internal_assert_message(                 \
                                         #cond, __FILE__, __LINE__ __VA_OPT__(, ) __VA_ARGS__));     \
    }                                                                                                \
  } while (0)
#define GRAFT_TORCH_INTERNAL_ASSERT_DEBUG_ONLY(cond, ...) GRAFT_TORCH_INTERNAL_ASSERT(cond __VA_OPT__(, ) __VA_ARGS__)

#define GRAFT_TORCH_WARN(...)                                                                    \
  ::graft::Warning::warn(::graft::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, \
                         ::graft::str(__VA_ARGS__), false)
// Once per call site, or every time while the warn-always switch is on (as LibTorch).
#define GRAFT_TORCH_WARN_ONCE(...)                                                   \
  do {                                                                               \
    static bool graft_warned_once_ = false;                                          \
    if (!graft_warned_once_ || ::graft::Warning::get_warnAlways()) {                 \
      graft_warned_once_ = true;                                                     \
      GRAFT_TORCH_WARN(__VA_ARGS__);                                                 \
    }                                                                                \
  } while (0)
