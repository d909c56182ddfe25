// The warning handler (graft/core/warning.h).
#include "graft/core/warning.h"

#include <atomic>
#include <cstdio>

namespace graft {

void WarningHandler::process(const Warning& warning) {
  process(warning.source_location(), warning.msg(), warning.verbatim());
}

void WarningHandler::process(const SourceLocation& /*source_location*/, const std::string& msg, bool /*verbatim*/) {
  // One fputs per warning, so lines from two threads do not interleave mid-line.
  const std::string line = "graft warning: " + msg + "\n";
  std::fputs(line.c_str(), stderr);
}

namespace {
WarningHandler g_default_handler;
std::atomic<WarningHandler*> g_handler{nullptr};  // nullptr: the default
std::atomic<bool> g_warn_always{false};
}  // namespace

void Warning::set_warning_handler(WarningHandler* handler) noexcept { g_handler.store(handler, std::memory_order_release); }
WarningHandler* Warning::get_warning_handler() noexcept {
  WarningHandler* h = g_handler.load(std::memory_order_acquire);
  return h ? h : &g_default_handler;
}
void Warning::warn(const SourceLocation& source_location, const std::string& msg, bool verbatim) {
  get_warning_handler()->process(Warning(source_location, msg, verbatim));
}
void Warning::set_warnAlways(bool setting) noexcept { g_warn_always.store(setting, std::memory_order_relaxed); }
bool Warning::get_warnAlways() noexcept { return g_warn_always.load(std::memory_order_relaxed); }

void warn(const std::string& msg, SourceLocation where) { Warning::warn(where, msg, true); }

}  // namespace graft
