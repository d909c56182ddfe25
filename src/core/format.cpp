// Number formatting (Note [Number formats] in format.h).
#include "core/format.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace graft::detail {

void append_shortest(std::string& out, double v) {
  char buf[32];  // the longest shortest form is 24 characters ("-2.2250738585072014e-308")
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

std::string shortest(double v) {
  std::string s;
  append_shortest(s, v);
  return s;
}

// fmt's "{}" is Python's repr except that an integral value has no ".0" and nan may carry a sign.
std::string py_repr(double v) {
  std::string s = fmt::format("{}", std::isnan(v) ? std::fabs(v) : v);
  if (std::isfinite(v) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string significant(double v, int digits) { return fmt::format("{:.{}g}", v, digits); }

// fabs clears a nan's sign bit, so it prints as "nan" (Python), not "-nan" (printf).
std::string py_fixed(double v, int precision, int width) {
  return fmt::format("{:>{}.{}f}", std::isnan(v) ? std::fabs(v) : v, width, precision);
}

std::string py_scientific(double v, int precision, int width) {
  return fmt::format("{:>{}.{}e}", std::isnan(v) ? std::fabs(v) : v, width, precision);
}

}  // namespace graft::detail
