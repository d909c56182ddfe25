// graft's warnings and LibTorch's handler API (PyTorch 2.x's spelling, c10/util/Exception.h):
//   struct Collect : graft::WarningHandler { void process(const graft::Warning& w) override { ... } };
//   graft::WarningUtils::WarningHandlerGuard guard(&collect);
// Every warning graft gives goes through the handler of the moment; the default handler prints
// "graft warning: <msg>" to stderr. The handler is process-wide, as in LibTorch: set it once, or
// through the guard, while no other thread gives warnings.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace graft {

struct SourceLocation {
  const char* function = "";
  const char* file = "";
  uint32_t line = 0;
};

class Warning {
 public:
  Warning(SourceLocation source_location, std::string msg, bool verbatim = true)
      : source_location_(source_location), msg_(std::move(msg)), verbatim_(verbatim) {}
  const SourceLocation& source_location() const { return source_location_; }
  const std::string& msg() const { return msg_; }
  bool verbatim() const { return verbatim_; }

 private:
  SourceLocation source_location_;
  std::string msg_;
  bool verbatim_;
};

class WarningHandler {
 public:
  virtual ~WarningHandler() = default;
  // The default prints the message to stderr.
  virtual void process(const Warning& warning);
};

namespace WarningUtils {
// nullptr restores the default handler. The caller keeps the handler alive while it is set.
void set_warning_handler(WarningHandler* handler) noexcept;
WarningHandler* get_warning_handler() noexcept;

class WarningHandlerGuard {
 public:
  explicit WarningHandlerGuard(WarningHandler* handler) : prev_(get_warning_handler()) {
    set_warning_handler(handler);
  }
  ~WarningHandlerGuard() { set_warning_handler(prev_); }
  WarningHandlerGuard(const WarningHandlerGuard&) = delete;
  WarningHandlerGuard& operator=(const WarningHandlerGuard&) = delete;

 private:
  WarningHandler* prev_;
};
}  // namespace WarningUtils

// Gives a warning to the current handler (graft's ops call this; so may users).
void warn(const std::string& msg, SourceLocation where = {});

}  // namespace graft

// GRAFT_WARN(msg): graft::warn with the caller's function, file and line (LibTorch's TORCH_WARN
// takes the message in pieces; this takes one string).
#define GRAFT_WARN(msg) ::graft::warn((msg), ::graft::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)})
