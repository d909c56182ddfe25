// The scan kernel (src/kernels/cumulative.h) called directly, against plain loops written here:
// running sums and products, forward and reverse, along the first, a middle and the last dim, in
// float64, float32 (the kernel accumulates in double and rounds each partial result once, so the
// reference, in double, must match bit for bit) and int64 (wrapping on overflow); a nan in a line
// and empty tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../src/kernels/cumulative.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace cumulative_kernels_ref {

// The scan of x (outer, n, inner) along n, in double; each partial result is passed through
// `round` (to float32, or none for float64).
template <class Round>
std::vector<double> ref_scan(const std::vector<double>& x, int64_t outer, int64_t n, int64_t inner, bool product,
                             bool reverse, Round round) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double a = product ? 1.0 : 0.0;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t j = reverse ? n - 1 - s : s;
        const size_t at = static_cast<size_t>((o * n + j) * inner + i);
        a = product ? a * x[at] : a + x[at];
        y[at] = round(a);
      }
    }
  return y;
}

void check_floating(DType dt, int64_t outer, int64_t n, int64_t inner) {
  std::mt19937_64 rng(static_cast<uint64_t>(outer * 100 + n * 10 + inner));
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<double> xv(static_cast<size_t>(outer * n * inner));
  for (double& v : xv) v = u(rng) * (rng() % 2 ? 1.0 : -1.0);
  if (xv.size() > 3) xv[3] = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = make(xv, {outer, n, inner}, dt);
  const std::vector<double> xs = values(x);
  const auto round = [dt](double v) { return dt == kFloat32 ? static_cast<double>(static_cast<float>(v)) : v; };
  for (bool product : {false, true})
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " outer " + std::to_string(outer) + " n " + std::to_string(n) +
                   " inner " + std::to_string(inner) + (product ? " cumprod" : " cumsum") +
                   (reverse ? " reverse" : ""));
      Tensor y = empty({outer, n, inner}, TensorOptions(dt));
      kernels::cumulative::scan("cumsum", x, outer, n, inner, product, reverse, y);
      EXPECT_TRUE(same_values(values(y), ref_scan(xs, outer, n, inner, product, reverse, round)));
    }
}

}  // namespace cumulative_kernels_ref

TEST(CumulativeKernels, Floating) {
  for (DType dt : {kFloat64, kFloat32}) {
    cumulative_kernels_ref::check_floating(dt, 1, 40, 1);  // one line
    cumulative_kernels_ref::check_floating(dt, 3, 6, 1);   // last dim
    cumulative_kernels_ref::check_floating(dt, 2, 5, 4);   // middle dim
    cumulative_kernels_ref::check_floating(dt, 1, 4, 7);   // first dim
    cumulative_kernels_ref::check_floating(dt, 0, 3, 2);   // empty
    cumulative_kernels_ref::check_floating(dt, 2, 0, 3);   // empty scanned dim
  }
}

TEST(CumulativeKernels, Int64WrapsAround) {
  // Products of 2^40 overflow int64: the kernel wraps modulo 2^64, as uint64 arithmetic does.
  const int64_t big = int64_t{1} << 40;
  const std::vector<int64_t> xv = {3, -5, big, 7, big, -1, 2, 4, 9, big};  // (2, 5, 1)
  std::vector<double> xd(xv.begin(), xv.end());
  const Tensor x = make(xd, {2, 5, 1}, kInt64);
  for (bool product : {false, true})
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(std::string(product ? "cumprod" : "cumsum") + (reverse ? " reverse" : ""));
      std::vector<int64_t> expected(xv.size());
      for (int64_t o = 0; o < 2; ++o) {
        uint64_t a = product ? 1 : 0;
        for (int64_t s = 0; s < 5; ++s) {
          const size_t at = static_cast<size_t>(o * 5 + (reverse ? 4 - s : s));
          const auto v = static_cast<uint64_t>(xv[at]);
          a = product ? a * v : a + v;
          expected[at] = static_cast<int64_t>(a);
        }
      }
      Tensor y = empty({2, 5, 1}, TensorOptions(kInt64));
      kernels::cumulative::scan("cumprod", x, 2, 5, 1, product, reverse, y);
      const int64_t* py = y.data_ptr<int64_t>();
      EXPECT_EQ(std::vector<int64_t>(py, py + 10), expected);
    }
}

}  // namespace graft::test
