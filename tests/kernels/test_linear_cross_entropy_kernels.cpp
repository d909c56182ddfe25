// The linear cross-entropy kernels (src/kernels/linear_cross_entropy.h) called directly, float32 and
// float64, against plain loops written here in double: lse, the losses (per row, sum, mean) and the
// three gradients, for chunks of 1, 3 and all rows (7 rows: 3 does not divide them), with and
// without a bias and label smoothing, an ignored row; and no rows at all (zero weight and bias
// gradients, a nan mean).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../../src/kernels/linear_cross_entropy.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace lce_kernels_ref {

using kernels::loss::LinearCrossEntropyShape;
using kernels::loss::Reduce;

struct LceRef {
  std::vector<double> lse, losses, gx, gw, gb;
  double total = 0;
  int64_t counted = 0;
};

// The forward and, for the incoming gradient g (per row for None, else g[0]), the backward, by hand.
LceRef lce_ref(const LinearCrossEntropyShape& s, const std::vector<double>& x, const std::vector<double>& w,
               const std::vector<double>& b, const std::vector<int64_t>& t, const std::vector<double>& g) {
  const int64_t N = s.rows, in = s.in, V = s.vocab;
  const double eps = s.label_smoothing;
  LceRef r;
  r.gx.assign(static_cast<size_t>(N * in), 0.0);
  r.gw.assign(static_cast<size_t>(V * in), 0.0);
  r.gb.assign(static_cast<size_t>(V), 0.0);
  for (int64_t i = 0; i < N; ++i)
    if (t[static_cast<size_t>(i)] != s.ignore_index) ++r.counted;
  for (int64_t i = 0; i < N; ++i) {
    std::vector<double> l(static_cast<size_t>(V));
    double m = -INFINITY, sum = 0, sl = 0;
    for (int64_t v = 0; v < V; ++v) {
      double z = b.empty() ? 0.0 : b[static_cast<size_t>(v)];
      for (int64_t k = 0; k < in; ++k) z += x[static_cast<size_t>(i * in + k)] * w[static_cast<size_t>(v * in + k)];
      l[static_cast<size_t>(v)] = z;
      m = std::max(m, z);
      sl += z;
    }
    for (double z : l) sum += std::exp(z - m);
    const double lse = m + std::log(sum);
    r.lse.push_back(lse);
    const int64_t ti = t[static_cast<size_t>(i)];
    const bool ignored = ti == s.ignore_index;
    const double loss =
        ignored ? 0.0 : lse - (1 - eps) * l[static_cast<size_t>(ti)] - eps / static_cast<double>(V) * sl;
    r.losses.push_back(loss);
    r.total += loss;
    if (ignored) continue;
    const double denom = s.red == Reduce::Mean ? static_cast<double>(r.counted) : 1.0;
    const double gi = (s.red == Reduce::None ? g[static_cast<size_t>(i)] : g[0]) / denom;
    for (int64_t v = 0; v < V; ++v) {
      const double gl =
          gi * (std::exp(l[static_cast<size_t>(v)] - lse) - (v == ti ? 1 - eps : 0.0) - eps / static_cast<double>(V));
      r.gb[static_cast<size_t>(v)] += gl;
      for (int64_t k = 0; k < in; ++k) {
        r.gx[static_cast<size_t>(i * in + k)] += gl * w[static_cast<size_t>(v * in + k)];
        r.gw[static_cast<size_t>(v * in + k)] += gl * x[static_cast<size_t>(i * in + k)];
      }
    }
  }
  return r;
}

void lce_expect_near(const std::vector<double>& a, const std::vector<double>& e, double tol, const char* what) {
  ASSERT_EQ(a.size(), e.size()) << what;
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], e[k], tol * (1 + std::abs(e[k]))) << what << " " << k;
}

template <class T> void lce_check_kernels(int64_t N, int64_t chunk, bool bias, double eps, Reduce red) {
  const DType dt = std::is_same_v<T, float> ? kFloat32 : kFloat64;
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  LinearCrossEntropyShape s;
  s.rows = N;
  s.in = 3;
  s.vocab = 5;
  s.chunk = chunk;
  s.ignore_index = -100;
  s.label_smoothing = eps;
  s.red = red;
  // Values rounded to T first, so that the reference reads what the kernel reads.
  const Tensor x = uniform_sample({N, s.in}, 501, -2, 2).to(dt), w = uniform_sample({s.vocab, s.in}, 502, -1, 1).to(dt);
  const Tensor b = bias ? uniform_sample({s.vocab}, 503, -1, 1).to(dt) : Tensor();
  std::vector<int64_t> tv;
  for (int64_t i = 0; i < N; ++i) tv.push_back(i == 2 ? -100 : (3 * i + 1) % s.vocab);
  const Tensor t = make(std::vector<double>(tv.begin(), tv.end()), {N}, kInt64);
  const Tensor g = (red == Reduce::None ? uniform_sample({N}, 504, 0.5, 1.5) : make({0.75}, {})).to(dt);
  const LceRef ref = lce_ref(s, values(x), values(w), bias ? values(b) : std::vector<double>(), tv, values(g));

  Tensor logits = empty({std::min(chunk, N), s.vocab}, dt), lse = empty({N}, dt);
  Tensor out = red == Reduce::None ? empty({N}, dt) : empty({}, dt);
  const int64_t counted = kernels::loss::linear_cross_entropy_forward(s, x, w, b, t, logits, lse, out);
  EXPECT_EQ(counted, ref.counted);
  lce_expect_near(values(lse), ref.lse, tol, "lse");
  if (red == Reduce::None) lce_expect_near(values(out), ref.losses, tol, "losses");
  if (red == Reduce::Sum) lce_expect_near(values(out), {ref.total}, tol, "sum");
  if (red == Reduce::Mean) lce_expect_near(values(out), {ref.total / static_cast<double>(ref.counted)}, tol, "mean");

  Tensor gx = full({N, s.in}, 7.0, dt), gw = full({s.vocab, s.in}, 7.0, dt);  // old contents ignored
  Tensor gb = bias ? full({s.vocab}, 7.0, dt) : Tensor();
  const double denom = red == Reduce::Mean ? static_cast<double>(counted) : 1.0;
  kernels::loss::linear_cross_entropy_backward(s, x, w, b, t, lse, g, denom, logits, gx, gw, gb);
  lce_expect_near(values(gx), ref.gx, tol, "grad input");
  lce_expect_near(values(gw), ref.gw, tol, "grad weight");
  if (bias) lce_expect_near(values(gb), ref.gb, tol, "grad bias");
}

}  // namespace lce_kernels_ref

TEST(LinearCrossEntropyKernels, MatchPlainLoops) {
  using lce_kernels_ref::Reduce;
  for (int64_t chunk : {1, 3, 7})
    for (bool bias : {true, false})
      for (double eps : {0.0, 0.3})
        for (Reduce red : {Reduce::None, Reduce::Mean, Reduce::Sum}) {
          SCOPED_TRACE(::testing::Message() << "chunk " << chunk << " bias " << bias << " eps " << eps << " reduce "
                                            << static_cast<int>(red));
          lce_kernels_ref::lce_check_kernels<double>(7, chunk, bias, eps, red);
          lce_kernels_ref::lce_check_kernels<float>(7, chunk, bias, eps, red);
        }
}

TEST(LinearCrossEntropyKernels, NoRows) {
  kernels::loss::LinearCrossEntropyShape s;
  s.rows = 0;
  s.in = 3;
  s.vocab = 4;
  s.chunk = 1;
  s.red = kernels::loss::Reduce::Mean;
  const Tensor x = empty({0, 3}, kFloat64), w = ones({4, 3}, kFloat64), b = ones({4}, kFloat64);
  const Tensor t = empty({0}, kInt64);
  Tensor logits = empty({0, 4}, kFloat64), lse = empty({0}, kFloat64), out = empty({}, kFloat64);
  EXPECT_EQ(kernels::loss::linear_cross_entropy_forward(s, x, w, b, t, logits, lse, out), 0);
  EXPECT_TRUE(std::isnan(out.item<double>()));  // 0 / 0, as cross_entropy
  Tensor gx = empty({0, 3}, kFloat64), gw = full({4, 3}, 7.0, kFloat64), gb = full({4}, 7.0, kFloat64);
  kernels::loss::linear_cross_entropy_backward(s, x, w, b, t, lse, make({1.0}, {}), 0.0, logits, gx, gw, gb);
  for (double v : values(gw)) EXPECT_EQ(v, 0.0);
  for (double v : values(gb)) EXPECT_EQ(v, 0.0);
}

}  // namespace graft::test
