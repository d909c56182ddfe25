// The separable index-map kernel (src/kernels/resample.h) called directly against plain loops
// written here in double: the forward y[p, oh, ow] = sum_a wh sum_b ww x[p, ih, iw] and its adjoint
// gx[p, ih, iw] += wh ww g[p, oh, ow], for single-tap maps (a pad-like gather with repeated source
// positions; float32, float64, int64 forward) and two-tap maps (bilinear-like weights; float32,
// float64), a 1-D op (h the identity of size 1), and the edge cases of no planes and an empty
// output axis. Tolerances: float64 1e-12, float32 1e-5 (the kernel multiplies and adds in T);
// int64 exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../../src/kernels/resample.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace resample_kernels_ref {

namespace rs = kernels::resample;
using Vec = std::vector<double>;

// A map of `taps` taps per output position, from in to out, with seeded positions and weights
// (weight 1 for a single tap, two weights summing to 1 otherwise).
rs::Axis random_axis(int64_t in, int64_t out, int64_t taps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pos(0, in - 1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  rs::Axis a;
  a.in = in, a.out = out, a.taps = taps;
  for (int64_t o = 0; o < out; ++o) {
    const double l = u(rng);
    for (int64_t t = 0; t < taps; ++t) {
      a.idx.push_back(pos(rng));
      a.w.push_back(taps == 1 ? 1.0 : t == 0 ? 1.0 - l : l);
    }
  }
  return a;
}

Vec ref_forward(const rs::Axis& h, const rs::Axis& w, const Vec& x, int64_t planes) {
  Vec y(static_cast<size_t>(planes * h.out * w.out), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < h.out; ++oh)
      for (int64_t ow = 0; ow < w.out; ++ow) {
        double acc = 0;
        for (int64_t a = 0; a < h.taps; ++a)
          for (int64_t b = 0; b < w.taps; ++b) {
            const auto ka = static_cast<size_t>(oh * h.taps + a), kb = static_cast<size_t>(ow * w.taps + b);
            acc += h.w[ka] * w.w[kb] * x[static_cast<size_t>((p * h.in + h.idx[ka]) * w.in + w.idx[kb])];
          }
        y[static_cast<size_t>((p * h.out + oh) * w.out + ow)] = acc;
      }
  return y;
}

Vec ref_adjoint(const rs::Axis& h, const rs::Axis& w, const Vec& g, int64_t planes) {
  Vec gx(static_cast<size_t>(planes * h.in * w.in), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < h.out; ++oh)
      for (int64_t ow = 0; ow < w.out; ++ow)
        for (int64_t a = 0; a < h.taps; ++a)
          for (int64_t b = 0; b < w.taps; ++b) {
            const auto ka = static_cast<size_t>(oh * h.taps + a), kb = static_cast<size_t>(ow * w.taps + b);
            gx[static_cast<size_t>((p * h.in + h.idx[ka]) * w.in + w.idx[kb])] +=
                h.w[ka] * w.w[kb] * g[static_cast<size_t>((p * h.out + oh) * w.out + ow)];
          }
  return gx;
}

// Values on a grid of eighths in [-4, 4]: exact in every dtype, integers for int64.
Vec grid_values(int64_t n, uint64_t seed, bool integers) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(-32, 32);
  Vec v(static_cast<size_t>(n));
  for (double& e : v) e = integers ? static_cast<double>(u(rng)) : u(rng) / 8.0;
  return v;
}

void check_map(const rs::Axis& h, const rs::Axis& w, int64_t planes, DType dt, bool adjoint_too) {
  const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 0.0;
  const Vec x = grid_values(planes * h.in * w.in, 11, dt == kInt64);
  Tensor y = make_empty({planes, h.out, w.out}, dt);
  rs::forward("resample_test", h, w, make(x, {planes, h.in, w.in}, dt), y, planes);
  EXPECT_TRUE(all_close(y, ref_forward(h, w, x, planes), {planes, h.out, w.out}, tol, tol)) << "forward";
  if (!adjoint_too) return;
  const Vec g = grid_values(planes * h.out * w.out, 12, false);
  Tensor gx = zeros({planes, h.in, w.in}, dt);
  rs::adjoint("resample_test_backward", h, w, make(g, {planes, h.out, w.out}, dt), gx, planes);
  EXPECT_TRUE(all_close(gx, ref_adjoint(h, w, g, planes), {planes, h.in, w.in}, tol, tol)) << "adjoint";
}

}  // namespace resample_kernels_ref

TEST(ResampleKernels, SingleTapMaps) {
  using namespace resample_kernels_ref;
  const rs::Axis h = random_axis(5, 9, 1, 1), w = random_axis(7, 4, 1, 2);
  for (DType dt : {kFloat64, kFloat32, kInt64}) {
    SCOPED_TRACE(dtype_name(dt));
    check_map(h, w, 3, dt, dt != kInt64);
  }
}

TEST(ResampleKernels, TwoTapMaps) {
  using namespace resample_kernels_ref;
  const rs::Axis h = random_axis(4, 8, 2, 3), w = random_axis(6, 11, 2, 4);
  for (DType dt : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dt));
    check_map(h, w, 5, dt, true);
    check_map(rs::Axis{1, 1, 1, {0}, {1.0}}, w, 5, dt, true);  // a 1-D op
  }
}

TEST(ResampleKernels, EmptyPlanesAndAxes) {
  using namespace resample_kernels_ref;
  const rs::Axis h = random_axis(4, 8, 2, 5), w = random_axis(6, 11, 2, 6);
  check_map(h, w, 0, kFloat64, true);                          // no planes
  check_map(h, random_axis(6, 0, 2, 7), 2, kFloat32, true);    // no output columns: gx stays 0
}

TEST(ResampleKernels, RejectsOtherDtypes) {
  using namespace resample_kernels_ref;
  const rs::Axis a = random_axis(2, 3, 1, 8);
  Tensor y = make_empty({1, 3, 3}, kBool);
  EXPECT_TRUE(throws_error([&] { rs::forward("resample_test", a, a, make({1, 0, 1, 1}, {1, 2, 2}, kBool), y, 1); },
                           {"resample_test"}));
  Tensor gx = zeros({1, 2, 2}, kInt64);
  EXPECT_TRUE(throws_error(
      [&] { rs::adjoint("resample_test_backward", a, a, make(Vec(9, 1.0), {1, 3, 3}, kInt64), gx, 1); },
      {"resample_test_backward"}));
}

}  // namespace graft::test
