// The checks the LibTorch-style porting programs share (tests/porting). Like the programs, this
// header is in LibTorch's spelling: the build ports it next to them, and the LibTorch twins include
// it as it is.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace porting {

inline int failures = 0;

inline void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// Prints t's values (row-major, after a space each) and checks each against `expected` within
// atol + rtol |expected|, and the count.
inline void print_and_check_values(const std::string& name, const torch::Tensor& t, const std::vector<double>& expected,
                                   double atol, double rtol) {
  torch::Tensor c = t.to(torch::kFloat64).contiguous().view({-1});
  check(c.numel() == static_cast<int64_t>(expected.size()), name + " has " + std::to_string(expected.size()) + " values");
  for (int64_t i = 0; i < c.numel(); ++i) {
    const double v = c[i].item<double>();
    std::printf(" %.6g", v);
    if (i >= static_cast<int64_t>(expected.size())) continue;
    const double e = expected[static_cast<size_t>(i)];
    check(std::abs(v - e) <= atol + rtol * std::abs(e), name + "[" + std::to_string(i) + "] = " + std::to_string(e));
  }
}

// "name: v0 v1 ...", checked to 1e-5 (absolute plus relative).
inline void show(const std::string& name, const torch::Tensor& t, const std::vector<double>& expected) {
  std::printf("%s:", name.c_str());
  print_and_check_values(name, t, expected, 1e-5, 1e-5);
  std::printf("\n");
}

// "name: shape s0 s1 ... values v0 v1 ...", the shape checked exactly and the values to 1e-9.
inline void show(const std::string& name, const torch::Tensor& t, const std::vector<int64_t>& shape,
                 const std::vector<double>& expected) {
  std::printf("%s: shape", name.c_str());
  for (int64_t s : t.sizes()) std::printf(" %lld", static_cast<long long>(s));
  check(t.sizes().vec() == shape, name + " has the expected shape");
  std::printf(" values");
  print_and_check_values(name, t, expected, 1e-9, 0.0);
  std::printf("\n");
}

// The last line and the exit status.
inline int finish() {
  std::printf("%s\n", failures == 0 ? "all checks passed" : "SOME CHECKS FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace porting
