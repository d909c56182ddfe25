// GroupNorm, InstanceNorm1d/2d, Upsample, the padding modules and PixelShuffle / PixelUnshuffle:
// LibTorch's Options spelling, parameter and buffer names and shapes as PyTorch names them, the
// documented defaults (weight ones, bias zeros, affine=false and no running statistics for
// InstanceNorm), Python's repr, and that each forward is its functional.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "../support/nn_util.h"
#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

Tensor rnd_f32(IntArrayRef shape, uint64_t seed) { return uniform_sample(shape, seed, -2, 2).to(kFloat32); }

TEST(GroupNormModule, ParametersReprAndForward) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  nn::GroupNorm gn(nn::GroupNormOptions(2, 4).eps(1e-3));
  EXPECT_EQ(keys(*gn), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_TRUE(all_close(gn->weight, {1, 1, 1, 1}, {4}, 0, 0));
  EXPECT_TRUE(all_close(gn->bias, {0, 0, 0, 0}, {4}, 0, 0));
  EXPECT_EQ(repr(*gn), "GroupNorm(2, 4, eps=0.001, affine=True)");
  const Tensor x = rnd_f32({2, 4, 3}, 1);
  EXPECT_TRUE(all_close(gn(x), F::group_norm(x, F::GroupNormFuncOptions(2).eps(1e-3)), 0, 0));
  gn->eval();  // no running statistics: eval is the same
  EXPECT_TRUE(all_close(gn(x), F::group_norm(x, F::GroupNormFuncOptions(2).eps(1e-3)), 0, 0));
  nn::GroupNorm plain(nn::GroupNormOptions(1, 3).affine(false));
  EXPECT_TRUE(keys(*plain).empty());
  EXPECT_TRUE(throws_error([] { nn::GroupNorm(nn::GroupNormOptions(3, 4)); }, {"GroupNorm", "divisible"}));
}

TEST(InstanceNormModule, DefaultsHaveNoStateAndUseInstanceStatistics) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  nn::InstanceNorm2d in(3);
  EXPECT_TRUE(keys(*in).empty());
  EXPECT_FALSE(in->options.affine());
  EXPECT_FALSE(in->options.track_running_stats());
  EXPECT_EQ(repr(*in), "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
  const Tensor x = rnd_f32({2, 3, 2, 2}, 2);
  const Tensor expected = F::instance_norm(x);
  EXPECT_TRUE(all_close(in(x), expected, 0, 0));
  in->eval();
  EXPECT_TRUE(all_close(in(x), expected, 0, 0));
  // unbatched (C, H, W)
  EXPECT_TRUE(all_close(in(x[0]), expected[0], 0, 0));
  EXPECT_TRUE(throws_error([&] { in(x.view({24})); }, {"InstanceNorm2d", "3-D (C, H, W) or 4-D", "[24]"}));
}

TEST(InstanceNormModule, RunningStatsTrainAndEval) {
  nn::InstanceNorm1d in(nn::InstanceNorm1dOptions(2).affine(true).track_running_stats(true).momentum(0.5));
  EXPECT_EQ(keys(*in), (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(in->parameters().size(), 2u);
  EXPECT_TRUE(all_close(in->running_var, {1, 1}, {2}, 0, 0));
  const Tensor x = rnd_f32({3, 2, 5}, 3);
  Tensor rm = zeros({2}), rv = ones({2});
  const Tensor y = in(x);
  const Tensor ref = F::instance_norm(
      x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).weight(in->weight).bias(in->bias).momentum(0.5));
  EXPECT_TRUE(all_close(y, ref, 0, 0));
  EXPECT_TRUE(all_close(in->running_mean, rm, 0, 0));
  EXPECT_TRUE(all_close(in->running_var, rv, 0, 0));
  EXPECT_FALSE(all_close(rm, {0, 0}, {2}, 0, 0));
  in->eval();
  EXPECT_TRUE(all_close(in(x), F::batch_norm(x, rm, rv, F::BatchNormFuncOptions().weight(in->weight).bias(in->bias)),
                        1e-6, 1e-6));
  // (C, L) unbatched
  EXPECT_EQ(in(x[0]).sizes().vec(), (std::vector<int64_t>{2, 5}));
}

TEST(UpsampleModule, OptionsReprAndForward) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Tensor x = rnd_f32({1, 2, 3, 4}, 4);
  nn::Upsample up(nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}));
  EXPECT_EQ(repr(*up), "Upsample(scale_factor=(2.0, 2.0), mode='nearest')");
  EXPECT_TRUE(all_close(up(x), upsample_nearest2d(x, {6, 8}, 2.0, 2.0), 0, 0));
  nn::Upsample bi(nn::UpsampleOptions().size(std::vector<int64_t>{5, 5}).mode(kBilinear).align_corners(true));
  EXPECT_EQ(repr(*bi), "Upsample(size=(5, 5), mode='bilinear')");
  EXPECT_TRUE(all_close(bi(x), upsample_bilinear2d(x, {5, 5}, true), 0, 0));
  EXPECT_TRUE(keys(*bi).empty());
}

TEST(PadModules, OptionsReprAndForward) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Tensor x = rnd_f32({1, 2, 3, 4}, 5);
  const Tensor x1 = x.view({2, 3, 4});
  nn::ReflectionPad2d rp(nn::ReflectionPad2dOptions({1, 2, 2, 0}));
  EXPECT_EQ(repr(*rp), "ReflectionPad2d((1, 2, 2, 0))");
  EXPECT_TRUE(all_close(rp(x), reflection_pad2d(x, {1, 2, 2, 0}), 0, 0));
  nn::ReflectionPad1d rp1(2);  // one value pads both sides
  EXPECT_EQ(repr(*rp1), "ReflectionPad1d((2, 2))");
  EXPECT_TRUE(all_close(rp1(x1), reflection_pad1d(x1, {2, 2}), 0, 0));
  nn::ReplicationPad2d rep(1);
  EXPECT_EQ(repr(*rep), "ReplicationPad2d((1, 1, 1, 1))");
  EXPECT_TRUE(all_close(rep(x), replication_pad2d(x, {1, 1, 1, 1}), 0, 0));
  nn::ReplicationPad1d rep1(nn::ReplicationPad1dOptions({3, 0}));
  EXPECT_TRUE(all_close(rep1(x1), replication_pad1d(x1, {3, 0}), 0, 0));
  nn::ConstantPad2d cp(nn::ConstantPad2dOptions({1, 0, 0, 1}, 3.5));
  EXPECT_EQ(repr(*cp), "ConstantPad2d(padding=(1, 0, 0, 1), value=3.5)");
  EXPECT_TRUE(all_close(cp(x), constant_pad_nd(x, {1, 0, 0, 1}, 3.5), 0, 0));
  nn::ConstantPad1d cp1(nn::ConstantPad1dOptions(2, -1.0));
  EXPECT_TRUE(all_close(cp1(x1), constant_pad_nd(x1, {2, 2}, -1.0), 0, 0));
  nn::ZeroPad2d zp(nn::ZeroPad2dOptions({1, 1, 2, 2}));
  EXPECT_EQ(repr(*zp), "ZeroPad2d((1, 1, 2, 2))");
  EXPECT_TRUE(all_close(zp(x), constant_pad_nd(x, {1, 1, 2, 2}, 0), 0, 0));
  EXPECT_TRUE(keys(*zp).empty());
}

TEST(PixelShuffleModules, RoundTrip) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Tensor x = rnd_f32({2, 8, 2, 3}, 6);
  nn::PixelShuffle ps(2);
  nn::PixelUnshuffle pu(nn::PixelUnshuffleOptions(2));
  EXPECT_EQ(repr(*ps), "PixelShuffle(upscale_factor=2)");
  EXPECT_EQ(repr(*pu), "PixelUnshuffle(downscale_factor=2)");
  const Tensor y = ps(x);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 2, 4, 6}));
  EXPECT_TRUE(all_close(pu(y), x, 0, 0));
}

}  // namespace
}  // namespace graft::test
