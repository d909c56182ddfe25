// The pooling kernels (src/kernels/pooling.h) called directly, float32 and float64, against plain
// loops written here in double: max pool forward (values and argmax indices; the 2x2 / stride 2
// fast path and the general loop with padding, dilation and ceil_mode; ties and nan windows), its
// backward scatter, avg pool forward and backward (count_include_pad on and off, a divisor
// override, ceil_mode), adaptive avg pool forward and backward and adaptive max pool forward.
//
// Max pools pick an input element, so their values and indices must match exactly; the inputs are
// on a grid of quarters so that ties are frequent. Sums are compared with a relative tolerance
// (the kernels add in T, the references in double).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/kernels/pooling.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace pooling_kernels_ref {

using kernels::pooling::AvgOpts;
using kernels::pooling::PoolGeom;

template <class T>
DType dtype_of() {
  return std::is_same_v<T, float> ? kFloat32 : kFloat64;
}

// n values uniform in [-1, 1), or on the grid {-2, -1.75, ..., 2} when quantised (many ties).
std::vector<double> random_values(int64_t n, uint64_t seed, bool quantised) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = quantised ? std::round(2.0 * u(rng) * 4.0) / 4.0 : u(rng);
  return v;
}

// PyTorch's pooling output size: floor (or ceil) of (in + 2 pad - dilation (k - 1) - 1) / stride,
// plus one; in ceil mode a last window that would start in the right padding is dropped.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double q = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct MaxCase {
  int64_t N, C, H, W, kH, kW, sH, sW, pH, pW, dH, dW;
  bool ceil_mode;
};

PoolGeom geom_of(const MaxCase& c) {
  PoolGeom g{};
  g.planes = c.N * c.C;
  g.H = c.H;
  g.W = c.W;
  g.kH = c.kH;
  g.kW = c.kW;
  g.sH = c.sH;
  g.sW = c.sW;
  g.pH = c.pH;
  g.pW = c.pW;
  g.dH = c.dH;
  g.dW = c.dW;
  g.oH = out_size(c.H, c.kH, c.sH, c.pH, c.dH, c.ceil_mode);
  g.oW = out_size(c.W, c.kW, c.sW, c.pW, c.dW, c.ceil_mode);
  return g;
}

// Max pool of x (planes, H, W) in double: each window's taps in row order (those inside the image);
// the winner is the last nan among them, else the first maximum.
void max_pool_ref(const std::vector<double>& x, const PoolGeom& g, std::vector<double>& y, std::vector<double>& idx) {
  y.assign(static_cast<size_t>(g.planes * g.oH * g.oW), 0.0);
  idx.assign(y.size(), -1.0);
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.oH; ++oh)
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        std::vector<int64_t> taps;
        for (int64_t i = 0; i < g.kH; ++i)
          for (int64_t j = 0; j < g.kW; ++j) {
            const int64_t ih = oh * g.sH - g.pH + i * g.dH, iw = ow * g.sW - g.pW + j * g.dW;
            if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) taps.push_back(ih * g.W + iw);
          }
        int64_t win = -1;
        for (int64_t t : taps)
          if (std::isnan(x[static_cast<size_t>(p * g.H * g.W + t)])) win = t;
        if (win < 0) {
          for (int64_t t : taps)
            if (win < 0 || x[static_cast<size_t>(p * g.H * g.W + t)] > x[static_cast<size_t>(p * g.H * g.W + win)])
              win = t;
        }
        const size_t o = static_cast<size_t>((p * g.oH + oh) * g.oW + ow);
        y[o] = x[static_cast<size_t>(p * g.H * g.W + win)];
        idx[o] = static_cast<double>(win);
      }
}

template <class T>
double sum_rtol() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

const std::vector<MaxCase>& max_cases() {
  static const std::vector<MaxCase> cases = {
      // N, C, H, W, kH, kW, sH, sW, pH, pW, dH, dW, ceil_mode
      {2, 3, 6, 8, 2, 2, 2, 2, 0, 0, 1, 1, false},    // 2x2 fast path
      {2, 3, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, false},    // fast path, odd sizes (last row, column unused)
      {2, 3, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, true},     // ceil_mode: clipped last windows, general loop
      {1, 2, 7, 8, 3, 2, 2, 1, 1, 1, 1, 1, false},    // padding, overlapping windows
      {2, 2, 9, 10, 3, 3, 2, 2, 1, 1, 2, 2, true},    // dilation and ceil_mode
      {2, 3, 1, 11, 1, 3, 1, 2, 0, 1, 1, 1, false},   // a 1-D pool on a height of 1
      {1, 1, 5, 5, 5, 5, 1, 1, 2, 2, 1, 1, false},    // one tap per window edge: padding everywhere
  };
  return cases;
}

// A max-pool input: quantised values, a few nan, and nan at (0, 0) and (dH, dW) of plane 0, which
// share a window in most cases (the 2x2 fast path's first window among them): the later one wins.
std::vector<double> max_input(const MaxCase& c, uint64_t seed) {
  std::vector<double> v = random_values(c.N * c.C * c.H * c.W, seed, true);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::mt19937_64 rng(seed + 1000);
  for (double& e : v)
    if (rng() % 29 == 0) e = nan;
  v[0] = nan;
  if (c.dH < c.H && c.dW < c.W && c.kH > 1 && c.kW > 1) v[static_cast<size_t>(c.dH * c.W + c.dW)] = nan;
  return v;
}

template <class T>
void check_max_pool() {
  const DType dt = dtype_of<T>();
  uint64_t seed = 11;
  for (const MaxCase& c : max_cases()) {
    SCOPED_TRACE("case H " + std::to_string(c.H) + " W " + std::to_string(c.W) + " k " + std::to_string(c.kH) + "x" +
                 std::to_string(c.kW) + " dtype " + dtype_name(dt));
    const PoolGeom g = geom_of(c);
    const Tensor x = make(max_input(c, seed++), {c.N, c.C, c.H, c.W}, dt);
    Tensor y = empty({c.N, c.C, g.oH, g.oW}, TensorOptions(dt));
    Tensor idx = empty({c.N, c.C, g.oH, g.oW}, TensorOptions(kInt64));
    kernels::pooling::max_pool2d_forward<T>(x, y, idx, g);
    std::vector<double> ry, ri;
    max_pool_ref(values(x), g, ry, ri);
    EXPECT_TRUE(same_values(values(y), ry));
    EXPECT_TRUE(same_values(values(idx), ri));

    // Backward: grad_out scattered (added) to the indices; an index outside the plane is skipped.
    const std::vector<double> go = random_values(g.planes * g.oH * g.oW, seed++, false);
    std::vector<double> ri_edit = ri;
    ri_edit[0] = -1;
    if (ri_edit.size() > 1) ri_edit[1] = static_cast<double>(c.H * c.W);
    const Tensor gout = make(go, {c.N, c.C, g.oH, g.oW}, dt);
    const Tensor gidx = make(ri_edit, {c.N, c.C, g.oH, g.oW}, kInt64);
    Tensor gin = zeros({c.N, c.C, c.H, c.W}, TensorOptions(dt));
    kernels::pooling::max_pool2d_backward<T>(gout, gidx, gin);
    std::vector<double> rg(static_cast<size_t>(g.planes * c.H * c.W), 0.0);
    const std::vector<double> gov = values(gout);
    for (int64_t p = 0; p < g.planes; ++p)
      for (int64_t l = 0; l < g.oH * g.oW; ++l) {
        const double i = ri_edit[static_cast<size_t>(p * g.oH * g.oW + l)];
        if (i < 0 || i >= static_cast<double>(c.H * c.W)) continue;
        const size_t to = static_cast<size_t>(p * c.H * c.W + static_cast<int64_t>(i));
        rg[to] += gov[static_cast<size_t>(p * g.oH * g.oW + l)];
      }
    EXPECT_TRUE(all_close(gin, rg, {c.N, c.C, c.H, c.W}, sum_rtol<T>(), sum_rtol<T>()));
  }
}

struct AvgCase {
  int64_t N, C, H, W, kH, kW, sH, sW, pH, pW;
  bool ceil_mode, count_include_pad;
  int64_t divisor;  // 0: none
};

// Avg pool in double, by membership: a window's rows are [oh sH - pH, oh sH - pH + kH); those in
// [-pH, H + pH) count towards the padded size, those in [0, H) are summed (columns alike). The
// divisor is the override, else the padded or the plain count.
void avg_pool_ref(const std::vector<double>& x, const AvgCase& c, int64_t oH, int64_t oW, std::vector<double>* y,
                  const std::vector<double>* gy, std::vector<double>* gx) {
  const int64_t planes = c.N * c.C;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < oH; ++oh)
      for (int64_t ow = 0; ow < oW; ++ow) {
        int64_t padded_rows = 0, padded_cols = 0, valid = 0;
        double s = 0;
        for (int64_t ih = oh * c.sH - c.pH; ih < oh * c.sH - c.pH + c.kH; ++ih) padded_rows += ih < c.H + c.pH;
        for (int64_t iw = ow * c.sW - c.pW; iw < ow * c.sW - c.pW + c.kW; ++iw) padded_cols += iw < c.W + c.pW;
        for (int64_t ih = oh * c.sH - c.pH; ih < oh * c.sH - c.pH + c.kH; ++ih)
          for (int64_t iw = ow * c.sW - c.pW; iw < ow * c.sW - c.pW + c.kW; ++iw)
            if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W) {
              ++valid;
              if (y) s += x[static_cast<size_t>((p * c.H + ih) * c.W + iw)];
            }
        const double div = static_cast<double>(c.divisor != 0          ? c.divisor
                                               : c.count_include_pad ? padded_rows * padded_cols
                                                                     : valid);
        const size_t o = static_cast<size_t>((p * oH + oh) * oW + ow);
        if (y) (*y)[o] = s / div;
        if (gx) {
          for (int64_t ih = std::max<int64_t>(0, oh * c.sH - c.pH); ih < std::min(c.H, oh * c.sH - c.pH + c.kH); ++ih)
            for (int64_t iw = std::max<int64_t>(0, ow * c.sW - c.pW); iw < std::min(c.W, ow * c.sW - c.pW + c.kW); ++iw)
              (*gx)[static_cast<size_t>((p * c.H + ih) * c.W + iw)] += (*gy)[o] / div;
        }
      }
}

template <class T>
void check_avg_pool() {
  const DType dt = dtype_of<T>();
  const std::vector<AvgCase> cases = {
      // N, C, H, W, kH, kW, sH, sW, pH, pW, ceil_mode, count_include_pad, divisor
      {2, 3, 6, 7, 3, 3, 2, 2, 1, 1, false, true, 0},
      {2, 3, 6, 7, 3, 3, 2, 2, 1, 1, false, false, 0},
      {2, 2, 6, 7, 3, 2, 2, 2, 1, 1, true, true, 0},  // ceil_mode: last windows past the padded input
      {2, 2, 6, 7, 3, 2, 2, 2, 1, 1, true, false, 0},
      {1, 3, 5, 6, 3, 3, 2, 1, 1, 0, false, true, 5},  // divisor override
      {2, 2, 4, 5, 2, 2, 1, 1, 0, 0, false, true, 0},  // overlapping windows, no padding
      {2, 2, 1, 9, 1, 4, 1, 3, 0, 2, true, false, 0},  // a 1-D pool on a height of 1
  };
  uint64_t seed = 101;
  for (const AvgCase& c : cases) {
    SCOPED_TRACE("case H " + std::to_string(c.H) + " W " + std::to_string(c.W) + " k " + std::to_string(c.kH) + "x" +
                 std::to_string(c.kW) + " cip " + std::to_string(c.count_include_pad) + " divisor " +
                 std::to_string(c.divisor) + " dtype " + dtype_name(dt));
    PoolGeom g{};
    g.planes = c.N * c.C;
    g.H = c.H;
    g.W = c.W;
    g.kH = c.kH;
    g.kW = c.kW;
    g.sH = c.sH;
    g.sW = c.sW;
    g.pH = c.pH;
    g.pW = c.pW;
    g.oH = out_size(c.H, c.kH, c.sH, c.pH, 1, c.ceil_mode);
    g.oW = out_size(c.W, c.kW, c.sW, c.pW, 1, c.ceil_mode);
    const AvgOpts o{c.count_include_pad, c.divisor};
    const Tensor x = make(random_values(c.N * c.C * c.H * c.W, seed++, false), {c.N, c.C, c.H, c.W}, dt);
    Tensor y = empty({c.N, c.C, g.oH, g.oW}, TensorOptions(dt));
    kernels::pooling::avg_pool2d_forward<T>(x, y, g, o);
    std::vector<double> ry(static_cast<size_t>(g.planes * g.oH * g.oW));
    avg_pool_ref(values(x), c, g.oH, g.oW, &ry, nullptr, nullptr);
    EXPECT_TRUE(all_close(y, ry, {c.N, c.C, g.oH, g.oW}, sum_rtol<T>(), sum_rtol<T>()));

    const Tensor gout = make(random_values(g.planes * g.oH * g.oW, seed++, false), {c.N, c.C, g.oH, g.oW}, dt);
    Tensor gin = zeros({c.N, c.C, c.H, c.W}, TensorOptions(dt));
    kernels::pooling::avg_pool2d_backward<T>(gout, gin, g, o);
    std::vector<double> rg(static_cast<size_t>(g.planes * c.H * c.W), 0.0);
    const std::vector<double> gov = values(gout);
    avg_pool_ref({}, c, g.oH, g.oW, nullptr, &gov, &rg);
    EXPECT_TRUE(all_close(gin, rg, {c.N, c.C, c.H, c.W}, sum_rtol<T>(), sum_rtol<T>()));
  }
}

// Adaptive window i of n over a size-s dim: [floor(i s / n), ceil((i + 1) s / n)).
int64_t adaptive_lo(int64_t i, int64_t n, int64_t s) {
  return static_cast<int64_t>(std::floor(static_cast<double>(i * s) / static_cast<double>(n)));
}
int64_t adaptive_hi(int64_t i, int64_t n, int64_t s) {
  return static_cast<int64_t>(std::ceil(static_cast<double>((i + 1) * s) / static_cast<double>(n)));
}

struct AdaptiveCase {
  int64_t N, C, H, W, oH, oW;
};

const std::vector<AdaptiveCase>& adaptive_cases() {
  static const std::vector<AdaptiveCase> cases = {
      {2, 3, 7, 5, 3, 2},  // uneven, overlapping windows
      {1, 2, 4, 4, 4, 4},  // one element per window
      {2, 2, 5, 9, 1, 1},  // global pooling
      {2, 1, 3, 7, 5, 4},  // more outputs than inputs in H
      {1, 3, 1, 10, 1, 4},  // a 1-D pool on a height of 1
  };
  return cases;
}

template <class T>
void check_adaptive_avg_pool() {
  const DType dt = dtype_of<T>();
  uint64_t seed = 201;
  for (const AdaptiveCase& c : adaptive_cases()) {
    SCOPED_TRACE("case " + std::to_string(c.H) + "x" + std::to_string(c.W) + " -> " + std::to_string(c.oH) + "x" +
                 std::to_string(c.oW) + " dtype " + dtype_name(dt));
    const int64_t planes = c.N * c.C;
    const Tensor x = make(random_values(planes * c.H * c.W, seed++, false), {c.N, c.C, c.H, c.W}, dt);
    Tensor y = empty({c.N, c.C, c.oH, c.oW}, TensorOptions(dt));
    kernels::pooling::adaptive_avg_pool2d_forward<T>(x, y);
    const Tensor gout = make(random_values(planes * c.oH * c.oW, seed++, false), {c.N, c.C, c.oH, c.oW}, dt);
    Tensor gin = zeros({c.N, c.C, c.H, c.W}, TensorOptions(dt));
    kernels::pooling::adaptive_avg_pool2d_backward<T>(gout, gin);

    const std::vector<double> xv = values(x), gov = values(gout);
    std::vector<double> ry(static_cast<size_t>(planes * c.oH * c.oW)), rg(static_cast<size_t>(planes * c.H * c.W));
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oh = 0; oh < c.oH; ++oh)
        for (int64_t ow = 0; ow < c.oW; ++ow) {
          const int64_t h0 = adaptive_lo(oh, c.oH, c.H), h1 = adaptive_hi(oh, c.oH, c.H);
          const int64_t w0 = adaptive_lo(ow, c.oW, c.W), w1 = adaptive_hi(ow, c.oW, c.W);
          const double n = static_cast<double>((h1 - h0) * (w1 - w0));
          const size_t o = static_cast<size_t>((p * c.oH + oh) * c.oW + ow);
          double s = 0;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) {
              s += xv[static_cast<size_t>((p * c.H + ih) * c.W + iw)];
              rg[static_cast<size_t>((p * c.H + ih) * c.W + iw)] += gov[o] / n;
            }
          ry[o] = s / n;
        }
    EXPECT_TRUE(all_close(y, ry, {c.N, c.C, c.oH, c.oW}, sum_rtol<T>(), sum_rtol<T>()));
    EXPECT_TRUE(all_close(gin, rg, {c.N, c.C, c.H, c.W}, sum_rtol<T>(), sum_rtol<T>()));
  }
}

template <class T>
void check_adaptive_max_pool() {
  const DType dt = dtype_of<T>();
  uint64_t seed = 301;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const AdaptiveCase& c : adaptive_cases()) {
    SCOPED_TRACE("case " + std::to_string(c.H) + "x" + std::to_string(c.W) + " -> " + std::to_string(c.oH) + "x" +
                 std::to_string(c.oW) + " dtype " + dtype_name(dt));
    const int64_t planes = c.N * c.C;
    std::vector<double> xin = random_values(planes * c.H * c.W, seed, true);
    std::mt19937_64 rng(seed++ + 1000);
    for (double& e : xin)
      if (rng() % 23 == 0) e = nan;
    xin[0] = nan;  // the first window of plane 0 keeps its last nan
    if (c.W > 1) xin[1] = nan;
    const Tensor x = make(xin, {c.N, c.C, c.H, c.W}, dt);
    Tensor y = empty({c.N, c.C, c.oH, c.oW}, TensorOptions(dt));
    Tensor idx = empty({c.N, c.C, c.oH, c.oW}, TensorOptions(kInt64));
    kernels::pooling::adaptive_max_pool2d_forward<T>(x, y, idx);

    const std::vector<double> xv = values(x);
    std::vector<double> ry(static_cast<size_t>(planes * c.oH * c.oW)), ri(ry.size());
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oh = 0; oh < c.oH; ++oh)
        for (int64_t ow = 0; ow < c.oW; ++ow) {
          int64_t win = -1;
          bool nan_seen = false;
          for (int64_t ih = adaptive_lo(oh, c.oH, c.H); ih < adaptive_hi(oh, c.oH, c.H); ++ih)
            for (int64_t iw = adaptive_lo(ow, c.oW, c.W); iw < adaptive_hi(ow, c.oW, c.W); ++iw) {
              const double v = xv[static_cast<size_t>((p * c.H + ih) * c.W + iw)];
              const int64_t t = ih * c.W + iw;
              if (std::isnan(v)) {
                win = t;
                nan_seen = true;
              } else if (!nan_seen && (win < 0 || v > xv[static_cast<size_t>(p * c.H * c.W + win)])) {
                win = t;
              }
            }
          const size_t o = static_cast<size_t>((p * c.oH + oh) * c.oW + ow);
          ry[o] = xv[static_cast<size_t>(p * c.H * c.W + win)];
          ri[o] = static_cast<double>(win);
        }
    EXPECT_TRUE(same_values(values(y), ry));
    EXPECT_TRUE(same_values(values(idx), ri));
  }
}

}  // namespace pooling_kernels_ref

TEST(PoolingKernels, MaxPool2dForwardAndBackward) {
  pooling_kernels_ref::check_max_pool<float>();
  pooling_kernels_ref::check_max_pool<double>();
}

TEST(PoolingKernels, AvgPool2dForwardAndBackward) {
  pooling_kernels_ref::check_avg_pool<float>();
  pooling_kernels_ref::check_avg_pool<double>();
}

TEST(PoolingKernels, AdaptiveAvgPool2dForwardAndBackward) {
  pooling_kernels_ref::check_adaptive_avg_pool<float>();
  pooling_kernels_ref::check_adaptive_avg_pool<double>();
}

TEST(PoolingKernels, AdaptiveMaxPool2dForward) {
  pooling_kernels_ref::check_adaptive_max_pool<float>();
  pooling_kernels_ref::check_adaptive_max_pool<double>();
}

}  // namespace graft::test
