// LibTorch-style source (tests/porting, docs/porting.md): group and instance normalisation,
// interpolation, padding and pixel shuffling, as functions (torch::, F::) and as modules. Ported
// by tools/port-from-libtorch.sh and built against graft; where LibTorch is installed, also built
// unchanged against it and the outputs compared. Each value is checked against a hand-derived one.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "porting_checks.h"

namespace F = torch::nn::functional;

namespace {

using porting::check;
using porting::show;

// [[0, 1], [2, 3]] as (1, 1, 2, 2).
torch::Tensor square() { return torch::tensor({0.0, 1.0, 2.0, 3.0}).reshape({1, 1, 2, 2}); }
// [1, 2, 3, 4] as (1, 1, 4).
torch::Tensor row() { return torch::tensor({1.0, 2.0, 3.0, 4.0}).reshape({1, 1, 4}); }

}  // namespace

int main() {
  // ---- interpolate / Upsample ----
  auto x = square().requires_grad_();
  auto near = F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).mode(torch::kNearest));
  show("nearest_4x4", near, std::vector<int64_t>{1, 1, 4, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3});
  near.sum().backward();
  show("nearest_grad", x.grad(), {4, 4, 4, 4});  // each input feeds 4 outputs
  // scale_factor 1.5: output floor(2 * 1.5) = 3, source floor(o / 1.5)
  show("nearest_scale", F::interpolate(square(), F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.5, 1.5})),
       {0, 0, 1, 0, 0, 1, 2, 2, 3});
  // align_corners: the corners stay, the rest is evenly spaced
  show("bilinear_align_corners",
       F::interpolate(square(), F::InterpolateFuncOptions()
                                    .size(std::vector<int64_t>{3, 3})
                                    .mode(torch::kBilinear)
                                    .align_corners(true)),
       {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
  // half-pixel centres: source (o + 0.5) / 2 - 0.5 clamped at 0 -> weights 0, 0.25, 0.75, 1 per dim
  auto bi = F::interpolate(
      square(), F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).mode(torch::kBilinear).align_corners(false));
  show("bilinear", bi, {0, 0.25, 0.75, 1, 0.5, 0.75, 1.25, 1.5, 1.5, 1.75, 2.25, 2.5, 2, 2.25, 2.75, 3});
  show("upsample_bilinear2d", torch::upsample_bilinear2d(square(), {3, 3}, true, c10::nullopt, c10::nullopt),
       {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
  show("upsample_nearest2d", torch::upsample_nearest2d(square(), {2, 4}, c10::nullopt, c10::nullopt),
       {0, 0, 1, 1, 2, 2, 3, 3});
  torch::nn::Upsample up(torch::nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest));
  show("Upsample", up(square()), {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3});
  torch::nn::Upsample up_bi(
      torch::nn::UpsampleOptions().size(std::vector<int64_t>{3, 3}).mode(torch::kBilinear).align_corners(true));
  show("Upsample_bilinear", up_bi(square()), {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});

  // ---- padding ----
  auto v = row().requires_grad_();
  auto refl = F::pad(v, F::PadFuncOptions({2, 1}).mode(torch::kReflect));
  show("pad_reflect", refl, {3, 2, 1, 2, 3, 4, 3});
  refl.sum().backward();
  show("pad_reflect_grad", v.grad(), {1, 2, 3, 1});  // how often each input appears
  show("pad_replicate", F::pad(row(), F::PadFuncOptions({1, 2}).mode(torch::kReplicate)), {1, 1, 2, 3, 4, 4, 4});
  show("pad_circular", F::pad(row(), F::PadFuncOptions({1, 2}).mode(torch::kCircular)), {4, 1, 2, 3, 4, 1, 2});
  show("pad_constant", F::pad(row(), F::PadFuncOptions({1, 1}).mode(torch::kConstant).value(9)), {9, 1, 2, 3, 4, 9});
  show("pad_default_zero", F::pad(row(), F::PadFuncOptions({0, 1})), {1, 2, 3, 4, 0});
  show("torch_pad", torch::pad(row(), {1, 0}, "replicate"), {1, 1, 2, 3, 4});
  show("constant_pad_nd_crop", torch::constant_pad_nd(row(), {-1, 0}), {2, 3, 4});
  show("constant_pad_nd", torch::constant_pad_nd(row(), {0, 2}, 7), {1, 2, 3, 4, 7, 7});
  show("reflection_pad1d", torch::reflection_pad1d(row(), {1, 1}), {2, 1, 2, 3, 4, 3});
  show("replication_pad1d", torch::replication_pad1d(row(), {0, 1}), {1, 2, 3, 4, 4});
  show("reflection_pad2d", torch::reflection_pad2d(square(), {1, 1, 1, 1}),
       {3, 2, 3, 2, 1, 0, 1, 0, 3, 2, 3, 2, 1, 0, 1, 0});
  show("replication_pad2d", torch::replication_pad2d(square(), {1, 0, 0, 1}), {0, 0, 1, 2, 2, 3, 2, 2, 3});
  torch::nn::ReflectionPad1d rp1(torch::nn::ReflectionPad1dOptions({2, 1}));
  show("ReflectionPad1d", rp1(row()), {3, 2, 1, 2, 3, 4, 3});
  torch::nn::ReflectionPad2d rp2(1);
  show("ReflectionPad2d", rp2(square()), {3, 2, 3, 2, 1, 0, 1, 0, 3, 2, 3, 2, 1, 0, 1, 0});
  torch::nn::ReplicationPad1d rep1(torch::nn::ReplicationPad1dOptions({1, 0}));
  show("ReplicationPad1d", rep1(row()), {1, 1, 2, 3, 4});
  torch::nn::ReplicationPad2d rep2(1);
  show("ReplicationPad2d", rep2(square()), {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3});
  torch::nn::ZeroPad2d zp(torch::nn::ZeroPad2dOptions({1, 0, 0, 0}));
  show("ZeroPad2d", zp(square()), {0, 0, 1, 0, 2, 3});
  torch::nn::ConstantPad2d cp2(torch::nn::ConstantPad2dOptions({0, 1, 1, 0}, 5));
  show("ConstantPad2d", cp2(square()), {5, 5, 5, 0, 1, 5, 2, 3, 5});
  torch::nn::ConstantPad1d cp1(torch::nn::ConstantPad1dOptions({1, 0}, -1));
  show("ConstantPad1d", cp1(row()), {-1, 1, 2, 3, 4});

  // ---- pixel shuffle ----
  auto channels = torch::tensor({0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0}).reshape({1, 4, 1, 2});
  torch::nn::PixelShuffle ps(torch::nn::PixelShuffleOptions(2));
  auto shuffled = ps(channels);
  show("PixelShuffle", shuffled, std::vector<int64_t>{1, 1, 2, 4}, {0, 2, 1, 3, 4, 6, 5, 7});
  torch::nn::PixelUnshuffle pu(torch::nn::PixelUnshuffleOptions(2));
  show("PixelUnshuffle", pu(shuffled), std::vector<int64_t>{1, 4, 1, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  show("F_pixel_shuffle", F::pixel_shuffle(channels, F::PixelShuffleFuncOptions(2)), {0, 2, 1, 3, 4, 6, 5, 7});
  show("F_pixel_unshuffle", F::pixel_unshuffle(shuffled, F::PixelUnshuffleFuncOptions(2)), {0, 1, 2, 3, 4, 5, 6, 7});
  show("torch_pixel_shuffle", torch::pixel_shuffle(channels, 2), {0, 2, 1, 3, 4, 6, 5, 7});
  show("torch_pixel_unshuffle", torch::pixel_unshuffle(shuffled, 2), {0, 1, 2, 3, 4, 5, 6, 7});

  // ---- GroupNorm ----
  // one group of [1, 3, 5, 7]: mean 4, variance 5 (eps 0)
  const double r5 = 1 / std::sqrt(5.0);
  torch::nn::GroupNorm gn(torch::nn::GroupNormOptions(1, 2).eps(0));
  check(gn->weight.sizes().vec() == std::vector<int64_t>{2} && gn->bias.sizes().vec() == std::vector<int64_t>{2},
        "GroupNorm weight and bias of shape (C)");
  auto g = torch::tensor({1.0, 3.0, 5.0, 7.0}).reshape({1, 2, 2}).requires_grad_();
  auto gy = gn(g);
  show("GroupNorm", gy, {-3 * r5, -r5, r5, 3 * r5});
  // d/dx of y[0]: (1 / sigma) (e0 - mean(e0) - xhat mean(e0 xhat))
  gy.reshape({-1})[0].backward();
  show("GroupNorm_grad", g.grad(), {0.3 * r5, -0.4 * r5, -0.1 * r5, 0.2 * r5});
  show("GroupNorm_weight_grad", gn->weight.grad(), {-3 * r5, 0});  // sum(dy * xhat) per channel
  torch::nn::GroupNorm per_channel(torch::nn::GroupNormOptions(2, 2).eps(0));
  show("GroupNorm_2_groups", per_channel(g.detach()), {-1, 1, -1, 1});
  show("F_group_norm",
       F::group_norm(g.detach(), F::GroupNormFuncOptions(2).weight(torch::tensor({2.0, 1.0})).bias(torch::tensor({0.0, 1.0})).eps(0)),
       {-2, 2, 0, 2});
  show("torch_group_norm", torch::group_norm(g.detach(), 2, {}, {}, 0.0), {-1, 1, -1, 1});

  // ---- InstanceNorm ----
  // (N=2, C=1, L=2): samples [1, 3] and [5, 9]; eps 0
  torch::nn::InstanceNorm1d in1(torch::nn::InstanceNorm1dOptions(1).track_running_stats(true).momentum(0.5).eps(0));
  check(in1->named_buffers().size() == 3, "InstanceNorm1d with running stats has running_mean, running_var, num_batches_tracked");
  check(in1->named_parameters().size() == 0, "InstanceNorm1d is not affine by default");
  auto s = torch::tensor({1.0, 3.0, 5.0, 9.0}).reshape({2, 1, 2});
  show("InstanceNorm1d_train", in1(s), {-1, 1, -1, 1});
  // per sample: 0.5 * 0 + 0.5 * mean (2, 7); 0.5 * 1 + 0.5 * unbiased var (2, 8); then the batch mean
  show("InstanceNorm1d_running_mean", in1->running_mean, {2.25});
  show("InstanceNorm1d_running_var", in1->running_var, {3});
  in1->eval();
  show("InstanceNorm1d_eval", in1(torch::tensor({0.25, 5.25}).reshape({1, 1, 2})), {-2 / std::sqrt(3.0), std::sqrt(3.0)});
  torch::nn::InstanceNorm2d in2(1);
  show("InstanceNorm2d", in2(square()), {-1.3416354199689269, -0.447211806656309, 0.447211806656309, 1.3416354199689269});
  torch::nn::InstanceNorm2d in2_affine(torch::nn::InstanceNorm2dOptions(1).affine(true));
  check(in2_affine->weight.defined() && in2_affine->bias.defined(), "InstanceNorm2d(affine) has weight and bias");
  show("F_instance_norm", F::instance_norm(s, F::InstanceNormFuncOptions().eps(0)), {-1, 1, -1, 1});
  auto rm = torch::zeros({1}), rv = torch::ones({1});
  F::instance_norm(s, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).momentum(0.5).eps(0));
  show("F_instance_norm_running_mean", rm, {2.25});
  show("torch_instance_norm", torch::instance_norm(s, {}, {}, {}, {}, true, 0.1, 0.0, false), {-1, 1, -1, 1});

  return porting::finish();
}
