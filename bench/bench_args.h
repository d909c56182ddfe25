// The bench programs' command line: --key=value pairs (a bare --flag is "1").
#pragma once

#include <cstdlib>
#include <map>
#include <string>

namespace bench {

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

}  // namespace bench
