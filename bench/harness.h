// The benchmark programs' library-neutral harness: command line, medians, JSON lists, /proc
// figures, and what the process's OpenBLAS says about itself. Includes neither graft nor LibTorch,
// so that each program (overhead.cpp, kernels.cpp, train_step.cpp) is one source in LibTorch's
// spelling, built once against LibTorch and once, after tools/port-from-libtorch.sh, against graft
// (bench/CMakeLists.txt). The ported build defines GRAFT_PORTED; kLibrary below names the side.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

#ifdef GRAFT_PORTED
inline constexpr const char* kLibrary = "graft";
#else
inline constexpr const char* kLibrary = "libtorch";
#endif

// --key=value pairs (a bare --flag is "1").
using Args = std::map<std::string, std::string>;

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s.rfind("--", 0) != 0) continue;
    const auto eq = s.find('=');
    if (eq == std::string::npos) a[s.substr(2)] = std::string(1, '1');  // (not = "1": GCC 12 -Wrestrict false positive)
    else a[s.substr(2, eq - 2)] = s.substr(eq + 1);
  }
  return a;
}

inline std::string arg_str(const Args& a, const std::string& k, const std::string& fallback) {
  const auto it = a.find(k);
  return it == a.end() ? fallback : it->second;
}

inline int arg_int(const Args& a, const std::string& k, int fallback) {
  const auto it = a.find(k);
  return it == a.end() ? fallback : std::atoi(it->second.c_str());
}

inline double arg_double(const Args& a, const std::string& k, double fallback) {
  const auto it = a.find(k);
  return it == a.end() ? fallback : std::atof(it->second.c_str());
}

inline const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline std::string json_list(const std::vector<double>& v) {
  std::ostringstream s;
  s.precision(9);
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + "]";
}

// kB from a "Name:   123 kB" line of /proc/self/status (VmHWM, VmRSS).
inline long proc_status_kb(const char* name) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(name);
  while (std::getline(f, line))
    if (line.compare(0, len, name) == 0 && line.size() > len && line[len] == ':') return std::atol(line.c_str() + len + 1);
  return -1;
}

// Both libraries use the OpenBLAS the process loaded (LibTorch's matrix products, graft's): looked
// up at run time, so that the LibTorch build links nothing but LibTorch. "(none)" / -1 if absent.
inline std::string openblas_corename() {
  using Fn = char* (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return fn ? std::string(fn()) : std::string("(none)");
}
inline int openblas_num_threads() {
  using Fn = int (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return fn ? fn() : -1;
}

// One line for the logs: library, thread settings, OpenBLAS, the environment both sides run under.
inline std::string describe_process(int intra_threads) {
  std::ostringstream s;
  s << kLibrary << ": intra-op threads " << intra_threads << "; OpenBLAS " << openblas_corename() << ", "
    << openblas_num_threads() << " thread(s); OPENBLAS_CORETYPE=" << env_or("OPENBLAS_CORETYPE", "(unset)")
    << " OPENBLAS_NUM_THREADS=" << env_or("OPENBLAS_NUM_THREADS", "(unset)")
    << " OMP_WAIT_POLICY=" << env_or("OMP_WAIT_POLICY", "(unset)");
  return s.str();
}

}  // namespace bench
