// The loss kernels (src/kernels/loss.h) called directly, float32 and float64, against plain loops
// written here in double: the fused cross-entropy's forward (lse, the per-row losses and their sum
// and mean) and backward, with ignored rows, a row holding a nan, a row of -inf, every row ignored
// (the mean is 0 / 0 = nan) and no rows at all; and the value readers on non-contiguous tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/kernels/loss.h"
#include "../../src/kernels/values.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace loss_kernels_ref {

using kernels::loss::Reduce;

template <class T>
DType dtype_of() {
  return std::is_same_v<T, float> ? kFloat32 : kFloat64;
}

template <class T>
double tol() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-13;
}

struct CeCase {
  int64_t N, C;
  std::vector<double> x;   // (N, C)
  std::vector<int64_t> t;  // (N)
};

// Logits in [-4, 4) and targets in [0, C), with ignore_index at every fourth row. With `specials`
// (and enough rows), row 1 holds a nan and row 2 is all -inf, each with a counted target (their
// losses, and so the sum and mean, are nan).
CeCase make_case(int64_t N, int64_t C, int64_t ignore_index, uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  CeCase c{N, C, std::vector<double>(static_cast<size_t>(N * C)), std::vector<int64_t>(static_cast<size_t>(N))};
  for (double& v : c.x) v = u(rng);
  for (int64_t i = 0; i < N; ++i)
    c.t[static_cast<size_t>(i)] = i % 4 == 3 ? ignore_index : static_cast<int64_t>(rng() % static_cast<uint64_t>(C));
  if (specials && N > 2 && C > 1) {
    c.x[static_cast<size_t>(1 * C + 1)] = std::numeric_limits<double>::quiet_NaN();
    for (int64_t k = 0; k < C; ++k) c.x[static_cast<size_t>(2 * C + k)] = -std::numeric_limits<double>::infinity();
  }
  return c;
}

// lse_i = log sum_c exp(x_ic), written as max + log sum exp(x - max); nan for a row with a nan or a
// row of -inf (as log_softmax gives).
std::vector<double> ref_lse(const CeCase& c) {
  std::vector<double> lse(static_cast<size_t>(c.N));
  for (int64_t i = 0; i < c.N; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (int64_t k = 0; k < c.C; ++k) {
      const double v = c.x[static_cast<size_t>(i * c.C + k)];
      nan = nan || std::isnan(v);
      if (v > m) m = v;
    }
    if (nan || m == -std::numeric_limits<double>::infinity()) {
      lse[static_cast<size_t>(i)] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    double s = 0;
    for (int64_t k = 0; k < c.C; ++k) s += std::exp(c.x[static_cast<size_t>(i * c.C + k)] - m);
    lse[static_cast<size_t>(i)] = m + std::log(s);
  }
  return lse;
}

template <class T>
void check_cross_entropy(int64_t N, int64_t C, bool all_ignored, bool specials) {
  const DType dt = dtype_of<T>();
  const int64_t ignore_index = -100;
  CeCase c = make_case(N, C, ignore_index, static_cast<uint64_t>(N * 31 + C), specials);
  if (all_ignored)
    for (int64_t& v : c.t) v = ignore_index;
  // The logits as T, then back: the reference sees the values the kernel sees.
  const Tensor x = make(c.x, {N, C}, dt);
  c.x = values(x);
  std::vector<double> tv(c.t.begin(), c.t.end());
  const Tensor t = make(tv, {N}, kInt64);
  const std::vector<double> lse = ref_lse(c);
  std::vector<double> losses(static_cast<size_t>(N), 0.0);
  int64_t counted = 0;
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t ti = c.t[static_cast<size_t>(i)];
    if (ti == ignore_index) continue;
    ++counted;
    losses[static_cast<size_t>(i)] = lse[static_cast<size_t>(i)] - c.x[static_cast<size_t>(i * C + ti)];
    total += losses[static_cast<size_t>(i)];
  }
  for (Reduce red : {Reduce::None, Reduce::Mean, Reduce::Sum}) {
    SCOPED_TRACE("N " + std::to_string(N) + " C " + std::to_string(C) + (specials ? " nan rows" : "") + " reduction " +
                 std::to_string(static_cast<int>(red)) + " dtype " + dtype_name(dt));
    Tensor lse_k = empty({N}, TensorOptions(dt));
    Tensor out = red == Reduce::None ? empty({N}, TensorOptions(dt)) : empty({}, TensorOptions(dt));
    const int64_t got = kernels::loss::cross_entropy_forward(x, t, ignore_index, red, lse_k, out);
    EXPECT_EQ(got, counted);
    EXPECT_TRUE(all_close(lse_k, lse, {N}, tol<T>(), tol<T>()));
    if (red == Reduce::None) {
      EXPECT_TRUE(all_close(out, losses, {N}, tol<T>(), tol<T>()));
    } else if (red == Reduce::Sum) {
      EXPECT_TRUE(all_close(out, {total}, {}, tol<T>(), tol<T>()));
    } else {
      const double mean =
          counted == 0 ? std::numeric_limits<double>::quiet_NaN() : total / static_cast<double>(counted);
      EXPECT_TRUE(all_close(out, {mean}, {}, tol<T>(), tol<T>()));
    }

    // Backward: dx_ic = g_i (softmax_ic - [c = t_i]) / denom, 0 on ignored rows.
    std::vector<double> gv(red == Reduce::None ? static_cast<size_t>(N) : 1);
    for (size_t i = 0; i < gv.size(); ++i) gv[i] = 0.5 + 0.25 * static_cast<double>(i % 5);
    const Tensor g = make(gv, red == Reduce::None ? std::vector<int64_t>{N} : std::vector<int64_t>{}, dt);
    const double denom = red == Reduce::Mean ? static_cast<double>(counted) : 1.0;
    Tensor dx = empty({N, C}, TensorOptions(dt));
    kernels::loss::cross_entropy_backward(x, t, lse_k, g, ignore_index, red, denom, dx);
    std::vector<double> rdx(static_cast<size_t>(N * C), 0.0);
    for (int64_t i = 0; i < N; ++i) {
      const int64_t ti = c.t[static_cast<size_t>(i)];
      if (ti == ignore_index) continue;
      const double gi = (red == Reduce::None ? gv[static_cast<size_t>(i)] : gv[0]) / denom;
      for (int64_t k = 0; k < C; ++k) {
        const size_t o = static_cast<size_t>(i * C + k);
        rdx[o] = gi * (std::exp(c.x[o] - lse[static_cast<size_t>(i)]) - (k == ti ? 1.0 : 0.0));
      }
    }
    EXPECT_TRUE(all_close(dx, rdx, {N, C}, 4 * tol<T>(), 4 * tol<T>()));
  }
}

}  // namespace loss_kernels_ref

TEST(LossKernels, CrossEntropyFloat64) {
  for (bool specials : {false, true}) {
    loss_kernels_ref::check_cross_entropy<double>(13, 7, false, specials);
    loss_kernels_ref::check_cross_entropy<double>(6, 10, true, specials);  // every row ignored: mean nan
  }
  loss_kernels_ref::check_cross_entropy<double>(5, 1, false, false);  // one class: loss 0, gradient 0
  loss_kernels_ref::check_cross_entropy<double>(0, 4, false, false);  // no rows
}

TEST(LossKernels, CrossEntropyFloat32) {
  for (bool specials : {false, true}) {
    loss_kernels_ref::check_cross_entropy<float>(13, 7, false, specials);
    loss_kernels_ref::check_cross_entropy<float>(40, 33, false, specials);
    loss_kernels_ref::check_cross_entropy<float>(6, 10, true, specials);
  }
  loss_kernels_ref::check_cross_entropy<float>(0, 4, false, false);
}

TEST(LossKernels, ValueReaders) {
  // Non-contiguous inputs are read in row-major order; floats are converted to double.
  const Tensor f = make({1.5, -2.0, 0.25, 3.0, -0.5, 7.0}, {2, 3}, kFloat32).transpose(0, 1);
  EXPECT_EQ(kernels::to_doubles(f), (std::vector<double>{1.5, 3.0, -2.0, -0.5, 0.25, 7.0}));
  const Tensor i = make({4, -100, 2, 0, 9, 1}, {3, 2}, kInt64).transpose(0, 1);
  EXPECT_EQ(kernels::to_int64s(i), (std::vector<int64_t>{4, 2, 9, -100, 0, 1}));
  EXPECT_TRUE(kernels::to_doubles(empty({0, 3}, TensorOptions(kFloat64))).empty());
}

}  // namespace graft::test
