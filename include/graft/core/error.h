// graft::Error and the two checking macros.
//
// Note [Two error channels]
// GRAFT_CHECK is for user mistakes: it throws graft::Error with the op, what was expected, what was
// got, and a hint on what to do. GRAFT_ASSERT is for graft's own invariants: a failure is a bug in
// graft, reported with file and line. Shapes in messages always print as [2, 3].
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace graft {

class Error : public std::runtime_error {
 public:
  Error(std::string op, std::string expected, std::string got, std::string hint);
  // A free-form error (engine state, files): op and a complete message.
  Error(std::string op, std::string message);

  const std::string& op() const noexcept { return op_; }
  const std::string& expected() const noexcept { return expected_; }
  const std::string& got() const noexcept { return got_; }
  const std::string& hint() const noexcept { return hint_; }
  // LibTorch's c10::Error: the message without a backtrace (graft's messages have none), and msg().
  const char* what_without_backtrace() const noexcept { return what(); }
  std::string msg() const { return what(); }

 private:
  std::string op_, expected_, got_, hint_;
};


namespace detail {
[[noreturn]] void assert_fail(const char* cond, const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace graft

// GRAFT_CHECK(cond, op, expected, got, hint): each argument is evaluated only on failure.
#define GRAFT_CHECK(cond, op, expected, got, hint)                     \
  do {                                                                 \
    if (!(cond)) [[unlikely]] {                                        \
      throw ::graft::Error((op), (expected), (got), (hint));           \
    }                                                                  \
  } while (0)

#define GRAFT_ASSERT(cond, msg)                                              \
  do {                                                                       \
    if (!(cond)) [[unlikely]] {                                              \
      ::graft::detail::assert_fail(#cond, __FILE__, __LINE__, (msg));        \
    }                                                                        \
  } while (0)
