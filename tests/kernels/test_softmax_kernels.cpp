// The softmax kernel (src/kernels/softmax.h) called directly, float32 and float64, softmax and
// log_softmax, against a plain loop written here in double: rows along a middle dim (inner > 1,
// the loop in T) and along the last dim (inner = 1: the loop in T for float64, the vectorised
// kernel for float32), with a row holding a nan (all nan) and a row of -inf (all nan).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/kernels/softmax.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace softmax_kernels_ref {

template <class T>
DType dtype_of() {
  return std::is_same_v<T, float> ? kFloat32 : kFloat64;
}

// Softmax (or log_softmax) in double of x (outer, n, inner) over n: exp(v - m) / sum exp(v - m)
// with m the row max; a row with a nan, or of -inf only, is nan throughout.
std::vector<double> ref_softmax(const std::vector<double>& x, int64_t outer, int64_t n, int64_t inner, bool log) {
  std::vector<double> y(x.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * n + j) * inner + i); };
      double m = -std::numeric_limits<double>::infinity();
      bool bad = false;
      for (int64_t j = 0; j < n; ++j) {
        bad = bad || std::isnan(x[at(j)]);
        m = std::max(m, x[at(j)]);
      }
      bad = bad || m == -std::numeric_limits<double>::infinity();
      double s = 0;
      for (int64_t j = 0; j < n && !bad; ++j) s += std::exp(x[at(j)] - m);
      for (int64_t j = 0; j < n; ++j)
        y[at(j)] = bad ? nan : log ? x[at(j)] - m - std::log(s) : std::exp(x[at(j)] - m) / s;
    }
  return y;
}

template <class T>
void check_softmax(int64_t outer, int64_t n, int64_t inner, bool specials) {
  const DType dt = dtype_of<T>();
  std::mt19937_64 rng(static_cast<uint64_t>(outer * 1000 + n * 10 + inner));
  std::uniform_real_distribution<double> u(-6.0, 6.0);
  std::vector<double> xv(static_cast<size_t>(outer * n * inner));
  for (double& v : xv) v = u(rng);
  if (specials && outer * inner >= 2 && n >= 2) {
    // Line (o 0, i 0) gets a nan; line (o 0, i 1) (or (o 1, i 0)) is all -inf.
    xv[static_cast<size_t>(inner)] = std::numeric_limits<double>::quiet_NaN();
    const int64_t base = inner > 1 ? 1 : n;
    for (int64_t j = 0; j < n; ++j)
      xv[static_cast<size_t>(base + j * inner)] = -std::numeric_limits<double>::infinity();
  }
  const Tensor x = make(xv, {outer, n, inner}, dt);
  const std::vector<double> xs = values(x);  // as T
  // float32: the T loop adds n terms in float; the vectorised kernel's exp is within a few ulps.
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-14;
  for (bool log : {false, true}) {
    SCOPED_TRACE("outer " + std::to_string(outer) + " n " + std::to_string(n) + " inner " + std::to_string(inner) +
                 (log ? " log_softmax " : " softmax ") + dtype_name(dt));
    Tensor y = empty({outer, n, inner}, TensorOptions(dt));
    kernels::softmax::forward("softmax", x, outer, n, inner, log, y);
    EXPECT_TRUE(all_close(y, ref_softmax(xs, outer, n, inner, log), {outer, n, inner}, tol, 4 * tol));
  }
}

}  // namespace softmax_kernels_ref

TEST(SoftmaxKernels, Float64) {
  for (bool specials : {false, true}) {
    softmax_kernels_ref::check_softmax<double>(3, 7, 5, specials);   // middle dim
    softmax_kernels_ref::check_softmax<double>(6, 19, 1, specials);  // last dim
  }
  softmax_kernels_ref::check_softmax<double>(2, 1, 3, false);  // one value per row: 1 (log: 0)
}

TEST(SoftmaxKernels, Float32) {
  for (bool specials : {false, true}) {
    softmax_kernels_ref::check_softmax<float>(3, 7, 5, specials);     // the loop in T
    softmax_kernels_ref::check_softmax<float>(5, 37, 1, specials);    // the vectorised rows
    softmax_kernels_ref::check_softmax<float>(2, 1000, 1, specials);  // long rows
  }
}

TEST(SoftmaxKernels, RejectsIntegers) {
  const Tensor x = make({1, 2, 3}, {1, 3, 1}, kInt64);
  Tensor y = empty({1, 3, 1}, TensorOptions(kInt64));
  EXPECT_TRUE(
      throws_error([&] { kernels::softmax::forward("log_softmax", x, 1, 3, 1, true, y); }, {"log_softmax", "int64"}));
}

}  // namespace graft::test
