// Number formatting for every message and repr graft prints (Note [Number formats]).
//
// Note [Number formats]
// Four conventions are in use, and they differ on purpose, so each has its own name here:
//  - shortest: the shortest decimal that reads back as the same double, in fixed or exponent form
//    whichever is shorter (std::to_chars): "0.1", "1e-05", "1e+05", "-0", "nan". Error messages
//    and the gradient monitor's JSON lines, where a value must read back exactly.
//  - py_repr / py_bool: Python's repr, as PyTorch prints a module's options: "0.01", "1.0",
//    "100000.0", "1e-05", "1e+16" (exponent form below 1e-4 and from 1e16), "nan", "-inf";
//    "True" / "False".
//  - significant: printf's %.Ng, N significant digits ("0.0123", "1.23e+05"): the gradient
//    monitor's warnings.
//  - py_fixed / py_scientific: Python's "{:.Pf}" / "{:.Pe}" right-aligned in a width, as
//    torch/_tensor_str.py prints tensor elements ("1.0000", "1.0000e+10").
// Python never prints a sign on nan; py_* follow it (shortest and significant keep "-nan").
// Everything but shortest is written with fmt (only format.cpp includes it).
#pragma once

#include <string>

namespace graft::detail {

std::string shortest(double v);
void append_shortest(std::string& out, double v);  // shortest(v) appended, without a temporary

std::string py_repr(double v);
inline std::string py_bool(bool b) { return b ? "True" : "False"; }

std::string significant(double v, int digits);

std::string py_fixed(double v, int precision, int width = 0);
std::string py_scientific(double v, int precision, int width = 0);

}  // namespace graft::detail
