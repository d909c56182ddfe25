// graft's warnings and LibTorch's handler API, in both of LibTorch's spellings (c10/util/Exception.h):
//   LibTorch 1.13:  struct Collect : graft::WarningHandler {
//                     void process(const graft::SourceLocation&, const std::string& msg, bool verbatim) override;
//                   };
//                   graft::Warning::set_warning_handler(&collect);   // or Warning::WarningHandlerGuard
//   PyTorch 2.x:    void process(const graft::Warning& w) override;  // WarningUtils::WarningHandlerGuard
// A handler overrides either process: graft calls process(const Warning&), whose default calls the
// 1.13 form, whose default prints.
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

class WarningHandler;

class Warning {
 public:
  Warning(SourceLocation source_location, std::string msg, bool verbatim = true)
      : source_location_(source_location), msg_(std::move(msg)), verbatim_(verbatim) {}
  const SourceLocation& source_location() const { return source_location_; }
  const std::string& msg() const { return msg_; }
  bool verbatim() const { return verbatim_; }

  // LibTorch 1.13's spelling (c10::Warning was a namespace there): the handler of the moment,
  // nullptr restoring the default; the caller keeps the handler alive while it is set.
  static void set_warning_handler(WarningHandler* handler) noexcept;
  static WarningHandler* get_warning_handler() noexcept;
  // Gives a warning to the current handler.
  static void warn(const SourceLocation& source_location, const std::string& msg, bool verbatim);
  // The warn-always switch (TORCH_WARN_ONCE warns every time while it is on). graft has no
  // once-only warnings, so it is only recorded.
  static void set_warnAlways(bool setting) noexcept;
  static bool get_warnAlways() noexcept;

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

  // Sets the warn-always switch for a scope.
  class WarnAlways {
   public:
    explicit WarnAlways(bool setting = true) : prev_(get_warnAlways()) { set_warnAlways(setting); }
    ~WarnAlways() { set_warnAlways(prev_); }
    WarnAlways(const WarnAlways&) = delete;
    WarnAlways& operator=(const WarnAlways&) = delete;

   private:
    bool prev_;
  };

 private:
  SourceLocation source_location_;
  std::string msg_;
  bool verbatim_;
};

class WarningHandler {
 public:
  virtual ~WarningHandler() = default;
  // PyTorch 2.x's form; the default passes the warning on to LibTorch 1.13's form below.
  virtual void process(const Warning& warning);
  // LibTorch 1.13's form; the default prints "graft warning: <msg>" to stderr.
  virtual void process(const SourceLocation& source_location, const std::string& msg, bool verbatim);
};

// PyTorch 2.x's spelling of the same functions.
namespace WarningUtils {
inline void set_warning_handler(WarningHandler* handler) noexcept { Warning::set_warning_handler(handler); }
inline WarningHandler* get_warning_handler() noexcept { return Warning::get_warning_handler(); }
using WarningHandlerGuard = Warning::WarningHandlerGuard;
using WarnAlways = Warning::WarnAlways;
}  // namespace WarningUtils

// Gives a warning to the current handler (graft's ops call this; so may users).
void warn(const std::string& msg, SourceLocation where = {});

}  // namespace graft

// GRAFT_WARN(msg): graft::warn with the caller's function, file and line (LibTorch's TORCH_WARN
// takes the message in pieces; this takes one string).
#define GRAFT_WARN(msg) ::graft::warn((msg), ::graft::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)})
