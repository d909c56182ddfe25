// F::interpolate in 1-D, 2-D and 3-D, every mode (nearest, nearest-exact, linear, bilinear, bicubic,
// trilinear, area), against PyTorch 1.13 (tests/fixtures/interp_fixtures.txt, written by
// gen_interp_fixtures.py: this test only reads it): values and input gradients in float64 (and the
// values in float32), gradcheck / gradgradcheck of the upsample ops in float64, the mode-vs-rank
// and option errors, kLinear (init's Nonlinearity) as a mode, Upsample with the new modes, and the
// shapes on the meta device.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "../support/fixture_file.h"
#include "../support/nn_util.h"
#include "../support/test_util.h"
#include "graft/engine/gradcheck.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

const std::vector<FixtureCase>& interp_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("interp_fixtures.txt");
  return cases;
}

InterpolateMode interp_mode(const std::string& m) {
  if (m == "nearest") return kNearest;
  if (m == "nearest-exact") return kNearestExact;
  if (m == "linear") return InterpolateMode::Linear;
  if (m == "bilinear") return kBilinear;
  if (m == "bicubic") return kBicubic;
  if (m == "trilinear") return kTrilinear;
  if (m == "area") return kArea;
  throw std::runtime_error("unknown mode " + m);
}

// The case's options, rebuilt from its params.
F::InterpolateFuncOptions interp_options(const FixtureCase& c) {
  F::InterpolateFuncOptions o;
  o.mode(interp_mode(c.param("mode")));
  if (c.params.count("size")) {
    std::vector<int64_t> size;
    for (double v : c.numbers("size")) size.push_back(static_cast<int64_t>(v));
    o.size(size);
  } else {
    o.scale_factor(c.numbers("scale_factor"));
  }
  if (c.params.count("align_corners")) o.align_corners(c.flag("align_corners"));
  if (c.params.count("recompute_scale_factor")) o.recompute_scale_factor(c.flag("recompute_scale_factor"));
  return o;
}

TEST(InterpolateNdFixtures, FileLoads) {
  ASSERT_NO_THROW(interp_fixtures());
  std::map<std::string, int> per_mode;
  for (const auto& c : interp_fixtures()) ++per_mode[c.param("mode") + std::to_string(c.tensor("input").dim() - 2)];
  for (const char* m : {"nearest1", "nearest2", "nearest3", "nearest-exact1", "nearest-exact2", "nearest-exact3",
                        "linear1", "bilinear2", "bicubic2", "trilinear3", "area1", "area2", "area3"})
    EXPECT_GE(per_mode[m], 5) << "too few fixtures for " << m;
}

class InterpolateNdFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(InterpolateNdFixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = interp_fixtures()[GetParam()];
  const Tensor x = c.tensor("input").clone().requires_grad_();
  Tensor out;
  try {
    out = F::interpolate(x, interp_options(c));
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_TRUE(all_close(out, c.tensor("out"), 1e-12, 1e-12)) << "value";
  out.backward(c.tensor("grad_output"));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(all_close(x.grad(), c.tensor("grad_input"), 1e-12, 1e-12)) << "gradient";
  // float32: the same values within float32's rounding (the source coordinates in float, as ATen)
  const Tensor out32 = F::interpolate(c.tensor("input").to(kFloat32), interp_options(c));
  EXPECT_EQ(out32.dtype(), kFloat32);
  EXPECT_TRUE(all_close(out32.to(kFloat64), c.tensor("out"), 1e-5, 1e-5)) << "float32 value";
}

size_t interp_fixture_count() {
  try {
    return interp_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, InterpolateNdFixture, ::testing::Range<size_t>(0, interp_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return interp_fixtures()[info.param].name;
                         });

// ---- gradcheck / gradgradcheck (float64) of each op, upsampling and downsampling ----
TEST(InterpolateNdGradcheck, EachOp) {
  using Fn = autograd::TestFunction;
  const Tensor x1 = uniform_sample({2, 2, 4}, 41, -1, 1).requires_grad_();
  const Tensor x2 = uniform_sample({1, 2, 3, 4}, 42, -1, 1).requires_grad_();
  const Tensor x3 = uniform_sample({1, 2, 2, 3, 3}, 43, -1, 1).requires_grad_();
  const std::vector<std::tuple<std::string, Fn, Tensor>> cases = {
      {"nearest1d", [](const TensorList& a) { return upsample_nearest1d(a[0], {7}); }, x1},
      {"nearest1d_scale", [](const TensorList& a) { return upsample_nearest1d(a[0], {3}, 0.7); }, x1},
      {"linear1d", [](const TensorList& a) { return upsample_linear1d(a[0], {7}, false); }, x1},
      {"linear1d_ac", [](const TensorList& a) { return upsample_linear1d(a[0], {3}, true); }, x1},
      {"nearest3d", [](const TensorList& a) { return upsample_nearest3d(a[0], {3, 4, 2}); }, x3},
      {"nearest_exact1d", [](const TensorList& a) { return _upsample_nearest_exact1d(a[0], {7}); }, x1},
      {"nearest_exact2d", [](const TensorList& a) { return _upsample_nearest_exact2d(a[0], {5, 3}); }, x2},
      {"nearest_exact3d", [](const TensorList& a) { return _upsample_nearest_exact3d(a[0], {3, 2, 5}); }, x3},
      {"trilinear3d", [](const TensorList& a) { return upsample_trilinear3d(a[0], {3, 5, 2}, false); }, x3},
      {"trilinear3d_ac", [](const TensorList& a) { return upsample_trilinear3d(a[0], {3, 2, 4}, true); }, x3},
      {"trilinear3d_scales",
       [](const TensorList& a) { return upsample_trilinear3d(a[0], {3, 4, 4}, false, 1.5, 1.5, 1.5); }, x3},
      {"bicubic2d", [](const TensorList& a) { return upsample_bicubic2d(a[0], {5, 7}, false); }, x2},
      {"bicubic2d_ac", [](const TensorList& a) { return upsample_bicubic2d(a[0], {2, 6}, true); }, x2},
      {"area1d", [](const TensorList& a) { return F::interpolate(a[0], F::InterpolateFuncOptions().size(std::vector<int64_t>{3}).mode(kArea)); }, x1},
      {"area3d",
       [](const TensorList& a) {
         return F::interpolate(a[0], F::InterpolateFuncOptions().size(std::vector<int64_t>{1, 2, 2}).mode(kArea));
       },
       x3},
  };
  for (const auto& [name, fn, x] : cases) {
    EXPECT_TRUE(autograd::gradcheck(fn, {x})) << name;
    EXPECT_TRUE(autograd::gradgradcheck(fn, {x})) << name;
  }
}

// ---- the mode picks the input's rank; the options' checks ----
TEST(InterpolateNd, ModeAndRankErrors) {
  const Tensor x1 = zeros({1, 2, 4}), x2 = zeros({1, 2, 3, 4}), x3 = zeros({1, 1, 2, 3, 4});
  const auto opt = [](std::vector<int64_t> size, InterpolateMode m) {
    return F::InterpolateFuncOptions().size(std::move(size)).mode(m);
  };
  EXPECT_TRUE(throws_error([&] { F::interpolate(x1, opt({4, 4}, kBilinear)); },
                           {"interpolate", "a 3-D input with mode kNearest, kNearestExact, kLinear or kArea", "[1, 2, 4]", "bilinear"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x1, opt({4}, kTrilinear)); }, {"interpolate", "3-D", "trilinear"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x2, F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).mode(kLinear)); },
                           {"interpolate", "a 4-D input with mode kNearest, kNearestExact, kBilinear, kBicubic or kArea", "linear"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x2, opt({4, 4}, kTrilinear)); }, {"interpolate", "4-D", "trilinear"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x3, opt({4, 4, 4}, kBilinear)); },
                           {"interpolate", "a 5-D input with mode kNearest, kNearestExact, kTrilinear or kArea", "bilinear"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x3, opt({4, 4, 4}, kBicubic)); }, {"interpolate", "5-D", "bicubic"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(zeros({2, 4}), opt({4}, kNearest)); },
                           {"interpolate", "3-D (N, C, W), 4-D (N, C, H, W) or 5-D", "[2, 4]", "unsqueeze"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(zeros({1, 1, 1, 2, 2, 2}), opt({4, 4, 4, 4}, kNearest)); },
                           {"interpolate", "5-D (N, C, D, H, W)", "6-D"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x3, opt({4, 4}, kNearest)); },
                           {"interpolate", "size of 3 values {oD, oH, oW} for a 5-D input", "2 values"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x1, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2})); },
                           {"interpolate", "scale_factor of 1 values {sW} for a 3-D input", "2 values"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x3, opt({4, 4, 4}, kArea).align_corners(false)); },
                           {"interpolate", "align_corners only with the linear modes", "area"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x1, opt({4}, kNearestExact).align_corners(true)); },
                           {"interpolate", "align_corners only with the linear modes", "nearest-exact"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x2, opt({4, 4}, kBicubic).antialias(true)); },
                           {"interpolate", "antialias=false"}));
  EXPECT_TRUE(throws_error([&] { F::InterpolateFuncOptions().mode(kTanh); },
                           {"InterpolateFuncOptions::mode", "kLinear", "another nonlinearity"}));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x1, F::InterpolateFuncOptions().scale_factor(std::vector<double>{-2})); },
                           {"interpolate", "positive finite scale factors", "-2"}));
  // a huge 1 / scale reaching an op clamps the source index into the input (no overflowing cast)
  EXPECT_TRUE(all_close(upsample_nearest1d(make({1, 2, 3}, {1, 1, 3}), {2}, 1e-300), {1, 3}, {1, 1, 2}, 0, 0));
  EXPECT_EQ(upsample_bicubic2d(zeros({1, 1, 2, 2}), {2, 2}, false, 1e-300, 1e-300).sizes().vec(),
            (std::vector<int64_t>{1, 1, 2, 2}));
  // the ops' own checks
  EXPECT_TRUE(throws_error([&] { upsample_linear1d(x2, {4}, false); }, {"upsample_linear1d", "3-D (N, C, W)", "4-D"}));
  EXPECT_TRUE(throws_error([&] { upsample_trilinear3d(zeros({1, 2, 3, 4}), {4, 4, 4}, false); },
                           {"upsample_trilinear3d", "5-D", "[1, 2, 3, 4]", "unsqueeze"}));
  EXPECT_TRUE(throws_error([&] { upsample_nearest3d(x3, {4, 4}); },
                           {"upsample_nearest3d", "output_size of 3 values {oD, oH, oW}", "2 values"}));
  EXPECT_TRUE(throws_error([&] { upsample_bicubic2d(x2, {0, 4}, false); }, {"upsample_bicubic2d", "greater than 0", "(0, 4)"}));
  EXPECT_TRUE(throws_error([&] { upsample_nearest1d(zeros({1, 2, 4}, kInt64), {3}); },
                           {"upsample_nearest1d", "floating-point", "int64"}));
}

// kLinear is init's Nonlinearity (as LibTorch's torch::kLinear serves both): the options take it.
TEST(InterpolateNd, KLinearAndUpsample) {
  const Tensor x = uniform_sample({1, 2, 5}, 44, -1, 1);
  const Tensor a = F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8}).mode(kLinear));
  EXPECT_TRUE(all_close(a, upsample_linear1d(x, {8}, false), 0, 0));
  nn::Upsample up(nn::UpsampleOptions().scale_factor(std::vector<double>{2}).mode(kLinear).align_corners(true));
  EXPECT_TRUE(all_close(up(x), upsample_linear1d(x, {10}, true, 2.0), 0, 0));
  {
    const PrintStyleGuard python(PrintStyle::Python);  // PyTorch's repr; LibTorch's is in test_print_libtorch.cpp
    EXPECT_NE(repr(*up).find("Upsample(scale_factor=(2.0,), mode='linear')"), std::string::npos) << repr(*up);
  }
  const Tensor x3 = uniform_sample({1, 1, 2, 2, 3}, 45, -1, 1);
  nn::Upsample tri(nn::UpsampleOptions().size(std::vector<int64_t>{3, 4, 5}).mode(kTrilinear).align_corners(false));
  EXPECT_TRUE(all_close(tri(x3), upsample_trilinear3d(x3, {3, 4, 5}, false), 0, 0));
  nn::Upsample cub(nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(kBicubic).align_corners(false));
  EXPECT_EQ(cub(x3.view({1, 2, 2, 3})).sizes().vec(), (std::vector<int64_t>{1, 2, 4, 6}));
  nn::Upsample area(nn::UpsampleOptions().size(std::vector<int64_t>{1, 1, 1}).mode(kArea));
  EXPECT_TRUE(all_close(area(x3).view({1}), x3.mean().view({1}), 1e-15, 1e-15));
}

// Hand-worked values: bicubic with A = -0.75 at t = 1/2 weighs (-3/32, 19/32, 19/32, -3/32); the
// 3-D area of a 2x2x2 box is its mean; linear 1-D align_corners from 2 to 3 points is the midpoint.
TEST(InterpolateNd, HandValues) {
  const Tensor x = make({1, 2, 4, 8}, {1, 1, 1, 4});
  // output 2 of 4 -> scale 2, src = (o + 0.5) * 2 - 0.5: o = 0 -> 0.5 (taps -1..2 clamped: 0, 0, 1, 2)
  const Tensor y = upsample_bicubic2d(x, {1, 2}, false);
  const double w0 = -3.0 / 32, w1 = 19.0 / 32;
  EXPECT_TRUE(all_close(y, {w0 * 1 + w1 * 1 + w1 * 2 + w0 * 4, w0 * 2 + w1 * 4 + w1 * 8 + w0 * 8}, {1, 1, 1, 2}, 1e-15, 1e-15));
  EXPECT_TRUE(all_close(upsample_linear1d(make({2, 6}, {1, 1, 2}), {3}, true), {2, 4, 6}, {1, 1, 3}, 1e-15, 1e-15));
  // nearest-exact 3 -> 5: floor((o + 1/2) 3/5) = 0, 0, 1, 2, 2 (nearest: floor(o 3/5) = 0, 0, 1, 1, 2)
  EXPECT_TRUE(all_close(_upsample_nearest_exact1d(make({1, 2, 3}, {1, 1, 3}), {5}), {1, 1, 2, 3, 3}, {1, 1, 5}, 0, 0));
  EXPECT_TRUE(all_close(upsample_nearest1d(make({1, 2, 3}, {1, 1, 3}), {5}), {1, 1, 2, 2, 3}, {1, 1, 5}, 0, 0));
  const Tensor cube = make({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 2, 2});
  EXPECT_TRUE(all_close(F::interpolate(cube, F::InterpolateFuncOptions().size(std::vector<int64_t>{1, 1, 1}).mode(kArea)),
                        {4.5}, {1, 1, 1, 1, 1}, 1e-15, 1e-15));
  EXPECT_TRUE(all_close(upsample_nearest3d(cube, {2, 2, 4}), {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8},
                        {1, 1, 2, 2, 4}, 0, 0));
}

// Meta tensors: the shapes only.
TEST(InterpolateNd, MetaShapes) {
  const Tensor x1 = zeros({2, 3, 5}).to(Device(kMeta)), x3 = zeros({1, 2, 3, 4, 5}).to(Device(kMeta));
  EXPECT_EQ(upsample_linear1d(x1, {9}, false).sizes().vec(), (std::vector<int64_t>{2, 3, 9}));
  EXPECT_EQ(upsample_nearest1d(x1, {2}).sizes().vec(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(upsample_trilinear3d(x3, {2, 6, 7}, true).sizes().vec(), (std::vector<int64_t>{1, 2, 2, 6, 7}));
  EXPECT_EQ(upsample_nearest3d(x3, {6, 8, 10}).sizes().vec(), (std::vector<int64_t>{1, 2, 6, 8, 10}));
  const Tensor y = upsample_bicubic2d(zeros({1, 2, 3, 4}).to(Device(kMeta)), {5, 6}, false);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2, 5, 6}));
}

}  // namespace
}  // namespace graft::test
