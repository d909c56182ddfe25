// The warning handler (graft/core/warning.h).
#include "graft/core/warning.h"

#include <atomic>
#include <cstdio>

namespace graft {

void WarningHandler::process(const Warning& warning) {
  // One fputs per warning, so lines from two threads do not interleave mid-line.
  const std::string line = "graft warning: " + warning.msg() + "\n";
  std::fputs(line.c_str(), stderr);
}

namespace {
WarningHandler g_default_handler;
std::atomic<WarningHandler*> g_handler{nullptr};  // nullptr: the default
}  // namespace

namespace WarningUtils {
void set_warning_handler(WarningHandler* handler) noexcept { g_handler.store(handler, std::memory_order_release); }
WarningHandler* get_warning_handler() noexcept {
  WarningHandler* h = g_handler.load(std::memory_order_acquire);
  return h ? h : &g_default_handler;
}
}  // namespace WarningUtils

void warn(const std::string& msg, SourceLocation where) {
  WarningUtils::get_warning_handler()->process(Warning(where, msg));
}

}  // namespace graft
