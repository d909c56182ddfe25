// The normalisation kernels (src/kernels/normalization.h) called directly, float32 and float64,
// against references written here in double: statistics by the two-pass formula (mean first, then
// the mean of squared deviations), the outputs from them, and the input gradients by central finite
// differences of L = sum(g * y(x)) through the reference forward (training batch_norm, layer_norm,
// group_norm: the statistics' own derivative included); dweight = sum(g xhat) and dbias = sum(g) by
// their definitions. The values sit around 100 with a spread of 1, where a one-pass
// sum(x^2) - sum(x)^2 / n would lose most digits of the variance in float32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "../../src/kernels/normalization.h"
#include "../../src/kernels/values.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace normalization_kernels_ref {

namespace nk = kernels::normalization;

std::vector<double> centred_values(int64_t n, uint64_t seed, double centre, double spread) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-spread, spread);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = centre + u(rng);
  return v;
}

// The layouts of normalization.h as one rule: element (n, c, s) of x (N, C, S) belongs to group
// group_of(n, c) and takes weight[c]; layer_norm is N = R rows, C = 1, S = M with the weight per s.
enum class Kind { Batch, Layer, Group };

struct Layout {
  Kind kind;
  int64_t N, C, S, G;  // G: group_norm's groups
  int64_t groups() const { return kind == Kind::Batch ? C : kind == Kind::Layer ? N : N * G; }
  int64_t group_of(int64_t n, int64_t c) const {
    return kind == Kind::Batch ? c : kind == Kind::Layer ? n : n * G + c / (C / G);
  }
  int64_t param_of(int64_t c, int64_t s) const { return kind == Kind::Layer ? s : c; }
  int64_t params() const { return kind == Kind::Layer ? S : C; }
};

struct RefStats {
  std::vector<double> mean, var;
};

RefStats ref_stats(const Layout& l, const std::vector<double>& x) {
  const auto G = static_cast<size_t>(l.groups());
  std::vector<double> sum(G), count(G), sq(G);
  for (int64_t n = 0; n < l.N; ++n)
    for (int64_t c = 0; c < l.C; ++c)
      for (int64_t s = 0; s < l.S; ++s) {
        const auto k = static_cast<size_t>(l.group_of(n, c));
        sum[k] += x[static_cast<size_t>((n * l.C + c) * l.S + s)];
        count[k] += 1;
      }
  RefStats r{std::vector<double>(G), std::vector<double>(G)};
  for (size_t k = 0; k < G; ++k) r.mean[k] = sum[k] / count[k];
  for (int64_t n = 0; n < l.N; ++n)
    for (int64_t c = 0; c < l.C; ++c)
      for (int64_t s = 0; s < l.S; ++s) {
        const auto k = static_cast<size_t>(l.group_of(n, c));
        const double d = x[static_cast<size_t>((n * l.C + c) * l.S + s)] - r.mean[k];
        sq[k] += d * d;
      }
  for (size_t k = 0; k < G; ++k) r.var[k] = sq[k] / count[k];
  return r;
}

std::vector<double> ref_forward(const Layout& l, const std::vector<double>& x, const std::vector<double>& w,
                                const std::vector<double>& b, double eps) {
  const RefStats st = ref_stats(l, x);
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < l.N; ++n)
    for (int64_t c = 0; c < l.C; ++c)
      for (int64_t s = 0; s < l.S; ++s) {
        const auto i = static_cast<size_t>((n * l.C + c) * l.S + s);
        const auto k = static_cast<size_t>(l.group_of(n, c));
        const auto p = static_cast<size_t>(l.param_of(c, s));
        y[i] = (x[i] - st.mean[k]) / std::sqrt(st.var[k] + eps) * w[p] + b[p];
      }
  return y;
}

// d sum(g y(x)) / dx by central differences in double.
std::vector<double> ref_dx(const Layout& l, std::vector<double> x, const std::vector<double>& w,
                           const std::vector<double>& b, const std::vector<double>& g, double eps) {
  std::vector<double> dx(x.size());
  const double h = 1e-5;
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    double L[2];
    for (int side = 0; side < 2; ++side) {
      x[i] = keep + (side ? -h : h);
      const std::vector<double> y = ref_forward(l, x, w, b, eps);
      L[side] = 0;
      for (size_t j = 0; j < y.size(); ++j) L[side] += g[j] * y[j];
    }
    x[i] = keep;
    dx[i] = (L[0] - L[1]) / (2 * h);
  }
  return dx;
}

Shape x_shape(const Layout& l) { return l.kind == Kind::Layer ? Shape{l.N, l.S} : Shape{l.N, l.C, l.S}; }

void check_family(const Layout& l, DType dt) {
  const double eps = 1e-5;
  const int64_t numel = l.N * l.C * l.S;
  const std::vector<double> xv = centred_values(numel, 11, 100.0, 1.0), gv = centred_values(numel, 12, 0.0, 1.0);
  const std::vector<double> wv = centred_values(l.params(), 13, 1.0, 0.5);
  const std::vector<double> bv = centred_values(l.params(), 14, 0.0, 0.5);
  const Tensor x = make(xv, x_shape(l)).to(dt), g = make(gv, x_shape(l)).to(dt);
  const Tensor w = make(wv, {l.params()}).to(dt), b = make(bv, {l.params()}).to(dt);
  // The references see exactly the values the kernel sees (rounded to dt).
  const std::vector<double> xr = values(x), gr = values(g), wr = values(w), br = values(b);
  const double tol = dt == kFloat32 ? 2e-5 : 1e-11;  // relative, for values of order 1

  const int64_t inner = l.kind == Kind::Batch ? l.S : l.kind == Kind::Layer ? l.S : (l.C / l.G) * l.S;
  const int64_t outer = l.kind == Kind::Batch ? l.N : 1;
  const nk::Stats st = nk::group_stats("test", x, outer, l.groups(), inner, eps);
  const RefStats rs = ref_stats(l, xr);
  for (size_t k = 0; k < rs.mean.size(); ++k) {
    EXPECT_NEAR(st.mean[k], rs.mean[k], 1e-12 * std::abs(rs.mean[k])) << "group " << k;
    EXPECT_NEAR(st.var[k], rs.var[k], 1e-9 * rs.var[k]) << "group " << k;  // shifted data: no cancellation
    EXPECT_NEAR(st.invstd[k], 1.0 / std::sqrt(rs.var[k] + eps), 1e-9 / std::sqrt(rs.var[k] + eps));
  }

  Tensor y = make_empty(x.sizes(), dt);
  if (l.kind == Kind::Batch) nk::batch_norm_forward(x, w, b, st, y);
  if (l.kind == Kind::Layer) nk::layer_norm_forward(x, w, b, st, l.S, y);
  if (l.kind == Kind::Group) nk::group_norm_forward(x, w, b, st, l.G, y);
  const std::vector<double> yk = values(y), yr = ref_forward(l, xr, wr, br, eps);
  for (size_t i = 0; i < yr.size(); ++i) EXPECT_NEAR(yk[i], yr[i], tol * (1 + std::abs(yr[i]))) << "y " << i;

  const Tensor mean = kernels::from_doubles(st.mean), invstd = kernels::from_doubles(st.invstd);
  const nk::Grads gk = l.kind == Kind::Batch   ? nk::batch_norm_backward(g, x, w, mean, invstd, true, true)
                       : l.kind == Kind::Layer ? nk::layer_norm_backward(g, x, w, mean, invstd, l.S, true)
                                               : nk::group_norm_backward(g, x, w, mean, invstd, l.G, true);
  const std::vector<double> dxk = values(gk.dx), dxr = ref_dx(l, xr, wr, br, gr, eps);
  for (size_t i = 0; i < dxr.size(); ++i)
    EXPECT_NEAR(dxk[i], dxr[i], (dt == kFloat32 ? 1e-4 : 1e-6) * (1 + std::abs(dxr[i]))) << "dx " << i;
  // dweight = sum(g xhat), dbias = sum(g) over everything a parameter touches.
  std::vector<double> dw(static_cast<size_t>(l.params())), db(static_cast<size_t>(l.params()));
  for (int64_t n = 0; n < l.N; ++n)
    for (int64_t c = 0; c < l.C; ++c)
      for (int64_t s = 0; s < l.S; ++s) {
        const auto i = static_cast<size_t>((n * l.C + c) * l.S + s);
        const auto k = static_cast<size_t>(l.group_of(n, c));
        const auto p = static_cast<size_t>(l.param_of(c, s));
        dw[p] += gr[i] * (xr[i] - rs.mean[k]) / std::sqrt(rs.var[k] + eps);
        db[p] += gr[i];
      }
  ASSERT_EQ(gk.dweight.size(), dw.size());
  for (size_t p = 0; p < dw.size(); ++p) {
    EXPECT_NEAR(gk.dweight[p], dw[p], 1e-8 * (1 + std::abs(dw[p]))) << "dweight " << p;
    EXPECT_NEAR(gk.dbias[p], db[p], 1e-10 * (1 + std::abs(db[p]))) << "dbias " << p;
  }
}

TEST(NormalizationKernels, BatchNormAgainstTwoPassAndFiniteDifferences) {
  for (DType dt : {kFloat32, kFloat64}) check_family({Kind::Batch, 3, 4, 5, 1}, dt);
}

TEST(NormalizationKernels, LayerNormAgainstTwoPassAndFiniteDifferences) {
  for (DType dt : {kFloat32, kFloat64}) check_family({Kind::Layer, 4, 1, 7, 1}, dt);
}

TEST(NormalizationKernels, GroupNormAgainstTwoPassAndFiniteDifferences) {
  for (DType dt : {kFloat32, kFloat64}) check_family({Kind::Group, 2, 6, 3, 3}, dt);
}

// Running statistics (evaluation): dx = g weight invstd, with no derivative through the statistics.
TEST(NormalizationKernels, BatchNormBackwardWithRunningStatistics) {
  const int64_t N = 2, C = 3, S = 4;
  const std::vector<double> xv = centred_values(N * C * S, 21, 0.0, 2.0);
  const std::vector<double> gv = centred_values(N * C * S, 22, 0.0, 1.0);
  const std::vector<double> wv{0.5, -1.5, 2.0}, mv{0.1, -0.2, 0.3}, iv{1.5, 0.5, 2.5};
  const Tensor x = make(xv, {N, C, S}), g = make(gv, {N, C, S});
  const nk::Grads r = nk::batch_norm_backward(g, x, make(wv, {C}), kernels::from_doubles(mv), kernels::from_doubles(iv),
                                              /*training=*/false, true);
  const std::vector<double> dx = values(r.dx);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const auto i = static_cast<size_t>((n * C + c) * S + s);
        EXPECT_NEAR(dx[i], gv[i] * wv[static_cast<size_t>(c)] * iv[static_cast<size_t>(c)], 1e-14);
      }
}

// No values: the statistics are 0 and nothing is read (the kernel must not touch x[0]).
TEST(NormalizationKernels, EmptyGroupsGiveZeroStatistics) {
  const nk::Stats st = nk::group_stats("test", make_empty({0, 3, 2}, kFloat32), 0, 3, 2, 1e-5);
  ASSERT_EQ(st.mean.size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(st.mean[k] + st.var[k] + st.invstd[k], 0.0);
}

}  // namespace normalization_kernels_ref

}  // namespace graft::test
