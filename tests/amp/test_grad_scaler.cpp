// amp::GradScaler (Note [Gradient scaling] in graft/amp/grad_scaler.h): defaults, the scale sequence
// with injected inf/nan gradients worked out by hand, skipped steps, growth, unscale-then-clip, the
// call-order errors, state dicts, and float16 gradients that underflow without scaling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;
using amp::GradScaler;
using amp::GradScalerOptions;

constexpr double kInf = std::numeric_limits<double>::infinity();

// One parameter [1, 2] with SGD(lr 1): a step subtracts the (unscaled) gradient.
struct OneParam {
  Tensor p = make({1, 2}, {2}, kFloat32).requires_grad_();
  optim::SGD opt{std::vector<Tensor>{p}, optim::SGDOptions(1.0)};
  // Sets p.grad to scale * g, as backward of scale(loss) would.
  void set_grad(const std::vector<double>& g, double scale) {
    std::vector<double> s(g);
    for (double& v : s) v *= scale;
    p.mutable_grad() = make(s, {2}, kFloat32);
  }
};

TEST(GradScaler, PyTorchDefaults) {
  GradScaler s;
  EXPECT_EQ(s.get_scale(), 65536.0);
  EXPECT_EQ(s.get_growth_factor(), 2.0);
  EXPECT_EQ(s.get_backoff_factor(), 0.5);
  EXPECT_EQ(s.get_growth_interval(), 2000);
  EXPECT_TRUE(s.is_enabled());
  const Tensor loss = make({0.25}, {}, kFloat32).requires_grad_();
  const Tensor scaled = s.scale(loss);
  EXPECT_EQ(scaled.item<double>(), 16384.0);
  scaled.backward();
  EXPECT_EQ(loss.grad().item<double>(), 65536.0);
}

TEST(GradScaler, UnscalesAndSteps) {
  OneParam t;
  GradScaler s(GradScalerOptions().init_scale(1024));
  t.set_grad({0.5, -0.25}, 1024);
  s.unscale_(t.opt);
  EXPECT_EQ(values(t.p.grad()), (std::vector<double>{0.5, -0.25}));
  EXPECT_TRUE(s.step(t.opt));  // does not unscale again
  EXPECT_EQ(values(t.p), (std::vector<double>{0.5, 2.25}));
  s.update();
  EXPECT_EQ(s.get_scale(), 1024.0);
  EXPECT_EQ(s.growth_tracker(), 1);
  // step() unscales by itself when unscale_ was not called
  t.set_grad({1, 1}, 1024);
  EXPECT_TRUE(s.step(t.opt));
  EXPECT_EQ(values(t.p), (std::vector<double>{-0.5, 1.25}));
  s.update();
}

TEST(GradScaler, ScaleSequenceWithInjectedInfsWorkedByHand) {
  // init 8, growth x2 after 3 clean steps, back-off x0.5 on inf/nan:
  //   step:   1    2    3      4      5    6    7      8    9    10
  //   grad:   ok   ok   ok     inf    ok   ok   nan    ok   ok   ok
  //   scale after update:
  //           8    8    16     8      8    8    4      4    4    8
  //   tracker 1    2    0      0      1    2    0      1    2    0
  OneParam t;
  GradScaler s(GradScalerOptions().init_scale(8).growth_interval(3));
  const std::vector<bool> bad = {false, false, false, true, false, false, true, false, false, false};
  const std::vector<double> scale_after = {8, 8, 16, 8, 8, 8, 4, 4, 4, 8};
  const std::vector<int64_t> tracker_after = {1, 2, 0, 0, 1, 2, 0, 1, 2, 0};
  std::vector<double> p_expect = {1, 2};
  for (size_t i = 0; i < bad.size(); ++i) {
    const double sc = s.get_scale();
    const std::vector<double> g = {0.125, 0.0625};
    if (bad[i]) t.set_grad({i == 3 ? kInf : std::nan(""), 0.0625}, sc);
    else t.set_grad(g, sc);
    const std::vector<double> before = values(t.p);
    const bool stepped = s.step(t.opt);
    EXPECT_EQ(stepped, !bad[i]) << "step " << i + 1;
    if (bad[i]) {
      EXPECT_EQ(values(t.p), before) << "a skipped step leaves the parameters untouched";
    } else {
      p_expect[0] -= g[0];
      p_expect[1] -= g[1];
      EXPECT_EQ(values(t.p), p_expect) << "step " << i + 1;
    }
    s.update();
    EXPECT_EQ(s.get_scale(), scale_after[i]) << "step " << i + 1;
    EXPECT_EQ(s.growth_tracker(), tracker_after[i]) << "step " << i + 1;
  }
  EXPECT_EQ(t.opt.steps_taken(), 8);  // steps 4 and 7 were skipped
}

TEST(GradScaler, GrowthStopsBeforeInfinityAndUpdateCanSetTheScale) {
  OneParam t;
  GradScaler s(GradScalerOptions().init_scale(std::ldexp(1.0, 127)).growth_interval(1));
  t.set_grad({0, 0}, 1);
  s.step(t.opt);
  s.update();
  EXPECT_EQ(s.get_scale(), std::ldexp(1.0, 127));  // 2^128 is not a finite float32
  s.update(3.0);
  EXPECT_EQ(s.get_scale(), 3.0);
}

// Issue 34, item 11: the scale underflowed to 0 under repeated infs and never recovered (0 * 2 is 0, and
// 1/0 makes every unscaled gradient inf or nan). It stops at FLT_MIN = 2^-126, the smallest normal float32.
TEST(GradScaler, BackOffStopsAtTheSmallestNormalFloatAndGrowthRecovers) {
  // init 1, back-off x0.5: after k inf steps S = 2^-k, until 2^-126 after 126 steps; there it stays
  // (unbounded: 2^-149, the least subnormal, after 149 steps, and 0 from step 150 on).
  const double bound = std::ldexp(1.0, -126);
  OneParam t;
  GradScaler s(GradScalerOptions().init_scale(1).growth_interval(3));
  for (int k = 1; k <= 200; ++k) {
    t.set_grad({kInf, 0}, s.get_scale());
    EXPECT_FALSE(s.step(t.opt));
    s.update();
    ASSERT_EQ(s.get_scale(), std::ldexp(1.0, -std::min(k, 126))) << "after inf step " << k;
  }
  EXPECT_EQ(s.get_scale(), bound);
  EXPECT_GT(s.get_scale(), 0.0);
  // Growth x2 after 3 clean steps: 2^-125 after 3, 2^-124 after 6; the zero gradients unscale to 0 (1/S
  // = 2^126 is finite), so every step is taken.
  for (int k = 1; k <= 6; ++k) {
    t.set_grad({0, 0}, s.get_scale());
    EXPECT_TRUE(s.step(t.opt)) << "clean step " << k;
    s.update();
    EXPECT_EQ(s.get_scale(), k < 3 ? bound : k < 6 ? bound * 2 : bound * 4) << "after clean step " << k;
  }
  EXPECT_EQ(values(t.p), (std::vector<double>{1, 2}));
  // A scale given by hand is held to the same bound (1e-40 is a float32 subnormal, 1e-50 rounds to 0).
  EXPECT_TRUE(throws_error([&] { s.update(1e-40); }, {"GradScaler::update", "FLT_MIN", "new_scale 1e-40"}));
  EXPECT_EQ(s.get_scale(), bound * 4);
  EXPECT_TRUE(throws_error([] { GradScaler bad(GradScalerOptions().init_scale(1e-50)); }, {"init_scale 1e-50"}));
  auto sd = s.state_dict();
  sd["scale"] = full({}, 1e-39, kFloat64);
  EXPECT_TRUE(throws_error([&] { GradScaler c; c.load_state_dict(sd); }, {"load_state_dict", "FLT_MIN", "1e-39"}));
  s.update(bound);  // the bound itself is a valid scale
  EXPECT_EQ(s.get_scale(), bound);
}

TEST(GradScaler, UnscaleThenClipSeesTrueGradients) {
  // The documented pattern: unscale_, clip_grad_norm_, step, update.
  OneParam t;
  GradScaler s(GradScalerOptions().init_scale(4096));
  t.set_grad({3, 4}, 4096);  // true gradient [3, 4], norm 5
  s.unscale_(t.opt);
  const double norm = nn::utils::clip_grad_norm_(std::vector<Tensor>{t.p}, 1.0);
  EXPECT_NEAR(norm, 5.0, 1e-6);  // the unscaled norm, not 5 * 4096
  EXPECT_TRUE(s.step(t.opt));                   // no second unscale: the clipped gradient is used
  EXPECT_TRUE(all_close(t.p, std::vector<double>{1 - 0.6, 2 - 0.8}, {2}, 1e-6, 1e-6));
  s.update();
  // Clipping without unscaling first would have seen norm 5 * 4096 and scaled by 1 / 20480.
}

TEST(GradScaler, CallOrderErrors) {
  OneParam t;
  GradScaler s;
  t.set_grad({1, 1}, s.get_scale());
  s.unscale_(t.opt);
  EXPECT_TRUE(throws_error([&] { s.unscale_(t.opt); }, {"unscale_", "already been called", "update()"}));
  s.step(t.opt);
  EXPECT_TRUE(throws_error([&] { s.unscale_(t.opt); }, {"unscale_", "after step()"}));
  EXPECT_TRUE(throws_error([&] { s.step(t.opt); }, {"step", "update()"}));
  s.update();
  EXPECT_TRUE(throws_error([&] { s.update(); }, {"update", "no inf checks were recorded"}));
  // after update() the cycle starts again
  t.set_grad({1, 1}, s.get_scale());
  EXPECT_TRUE(s.step(t.opt));
  s.update();
  // half gradients are refused: master weights stay float32
  optim::SGD hopt(std::vector<Tensor>{make({1}, {1}, kFloat32).requires_grad_()}, optim::SGDOptions(1.0));
  hopt.parameters()[0].mutable_grad() = make({1}, {1}, kFloat32).to(kHalf);
  EXPECT_TRUE(throws_error([&] { s.unscale_(hopt); }, {"unscale_", "float16", "float32"}));
  EXPECT_TRUE(throws_error([] { GradScaler bad(GradScalerOptions().growth_factor(0.5)); }, {"growth_factor > 1"}));
  EXPECT_TRUE(throws_error([] { GradScaler bad(GradScalerOptions().backoff_factor(1.5)); }, {"backoff_factor"}));
  EXPECT_TRUE(throws_error([] { GradScaler bad(GradScalerOptions().growth_interval(0)); }, {"growth_interval"}));
  EXPECT_TRUE(throws_error([] { GradScaler bad(GradScalerOptions().init_scale(0)); }, {"init_scale"}));
}

TEST(GradScaler, DisabledIsAPassThrough) {
  OneParam t;
  GradScaler s(GradScalerOptions().enabled(false));
  EXPECT_FALSE(s.is_enabled());
  EXPECT_EQ(s.get_scale(), 1.0);
  const Tensor loss = make({2}, {}, kFloat32);
  EXPECT_TRUE(s.scale(loss).is_same(loss));
  t.set_grad({kInf, 1}, 1);
  s.unscale_(t.opt);
  EXPECT_TRUE(s.step(t.opt));  // steps whatever the gradients are, as opt.step() would
  s.update();
  EXPECT_TRUE(s.state_dict().is_empty());
}

TEST(GradScaler, StateDictRoundTrip) {
  OneParam t;
  GradScaler a(GradScalerOptions().init_scale(256).growth_interval(10).growth_factor(4).backoff_factor(0.25));
  for (int i = 0; i < 3; ++i) {
    t.set_grad({1, 1}, a.get_scale());
    a.step(t.opt);
    a.update();
  }
  const auto sd = a.state_dict();
  EXPECT_EQ(sd["scale"].item<double>(), 256.0);
  EXPECT_EQ(sd["_growth_tracker"].item<int64_t>(), 3);
  EXPECT_EQ(sd["growth_interval"].dtype(), kInt64);
  GradScaler b;
  b.load_state_dict(sd);
  EXPECT_EQ(b.get_scale(), 256.0);
  EXPECT_EQ(b.get_growth_factor(), 4.0);
  EXPECT_EQ(b.get_backoff_factor(), 0.25);
  EXPECT_EQ(b.get_growth_interval(), 10);
  EXPECT_EQ(b.growth_tracker(), 3);
  // it goes on exactly like the original
  for (int i = 0; i < 7; ++i) {
    t.set_grad({1, 1}, b.get_scale());
    b.step(t.opt);
    b.update();
  }
  EXPECT_EQ(b.get_scale(), 1024.0);
  // the state dict saves with the checkpoint's other tensors
  auto bad = sd;
  bad["_growth_tracker"] = full({}, 10, kInt64);
  EXPECT_TRUE(throws_error([&] { GradScaler c; c.load_state_dict(bad); }, {"load_state_dict", "_growth_tracker"}));
  OrderedDict<std::string, Tensor> missing;
  missing.insert("scale", full({}, 2.0, kFloat64));
  EXPECT_TRUE(throws_error([&] { GradScaler c; c.load_state_dict(missing); }, {"growth_factor"}));
  GradScaler untouched;
  EXPECT_ANY_THROW(untouched.load_state_dict(missing));
  EXPECT_EQ(untouched.get_scale(), 65536.0);
}

TEST(GradScaler, Float16GradientsUnderflowWithoutScaling) {
  // loss = 1e-8 * sum(linear(x, w)) under float16 autocast: the gradient reaching the float16 output
  // is 1e-8, below half of float16's smallest subnormal (2^-25), so it becomes 0 and w learns
  // nothing. Scaled by 65536 it is 6.6e-4, fine in float16, and unscale_ brings w.grad back to
  // 1e-8 * sum of x's rows.
  const Tensor x = make({1, 2, 3, 4}, {2, 2}, kFloat32);
  auto run = [&](bool scaled) {
    const Tensor w = make({0.5, -0.5}, {1, 2}, kFloat32).requires_grad_();
    optim::SGD opt(std::vector<Tensor>{w}, optim::SGDOptions(1.0));
    GradScaler s(GradScalerOptions().enabled(scaled));
    Tensor loss;
    {
      AutocastGuard g(kHalf);
      loss = F::linear(x, w).to(kFloat32).sum() * 1e-8;
    }
    s.scale(loss).backward();
    s.unscale_(opt);
    return values(w.grad());
  };
  EXPECT_EQ(run(false), (std::vector<double>{0, 0}));
  const auto g = run(true);
  // 1e-8 * 65536 is rounded to float16 (~0.05% error) on the way
  EXPECT_NEAR(g[0], 4e-8, 4e-8 * 1e-3);
  EXPECT_NEAR(g[1], 6e-8, 6e-8 * 1e-3);
}

}  // namespace
}  // namespace graft::test
