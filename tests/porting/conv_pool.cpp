// LibTorch-style source (tests/porting, docs/porting.md): 1-D and 3-D convolution, the 1-D
// transposed convolution, 1-D pooling and adaptive max pooling, in ATen's spelling (torch::conv1d),
// the functional one (F::conv1d with Conv1dFuncOptions) and as modules (torch::nn::Conv1d). Ported
// by tools/port-from-libtorch.sh and built against graft; where LibTorch is installed, also built
// unchanged against it and the outputs compared. Each value is checked against a hand-derived one.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "porting_checks.h"

namespace {

namespace F = torch::nn::functional;
using porting::check;
using porting::show;

torch::Tensor row(std::vector<double> v) {
  const auto n = static_cast<int64_t>(v.size());
  return torch::tensor(v, torch::kFloat64).reshape({1, 1, n});
}

void conv1d() {
  const auto x = row({1, 2, 3, 4, 5}).requires_grad_();
  const auto w = row({1, 0, -1}).requires_grad_();  // (out 1, in 1, k 3): x[i] - x[i + 2]
  const auto b = torch::tensor({0.5}, torch::kFloat64);
  show("conv1d", torch::conv1d(x, w, b), {1, 1, 3}, {-1.5, -1.5, -1.5});
  show("conv1d_padding", F::conv1d(x, w, F::Conv1dFuncOptions().bias(b).padding(1)), {1, 1, 5},
       {-1.5, -1.5, -1.5, -1.5, 4.5});
  // taps at 2 o - 2 + {0, 2, 4}: (0, x0, x2), (x0, x2, x4), (x2, x4, 0)
  show("conv1d_stride_dilation", F::conv1d(x, w, F::Conv1dFuncOptions().bias(b).stride(2).padding(2).dilation(2)),
       {1, 1, 3}, {-2.5, -3.5, 3.5});
  torch::conv1d(x, w).sum().backward();
  show("conv1d_grad_input", x.grad(), {1, 1, 5}, {1, 1, 0, -1, -1});  // the taps covering each x
  show("conv1d_grad_weight", w.grad(), {1, 1, 3}, {6, 9, 12});        // the x each tap reads
  // groups: two channels, each with its own one-tap kernel
  const auto x2 = torch::tensor({1.0, 2.0, 3.0, 4.0}, torch::kFloat64).reshape({1, 2, 2});
  const auto w2 = torch::tensor({10.0, -1.0}, torch::kFloat64).reshape({2, 1, 1});
  show("conv1d_groups", F::conv1d(x2, w2, F::Conv1dFuncOptions().groups(2)), {1, 2, 2}, {10, 20, -3, -4});
  const std::vector<int64_t> no_padding{0};  // (a bare 0 would also read as a padding string in LibTorch)
  show("conv1d_unbatched", torch::conv1d(x2[0], w2, {}, 1, no_padding, 1, 2), {2, 2}, {10, 20, -3, -4});
}

void conv3d() {
  const auto x = torch::arange(8, torch::kFloat64).reshape({1, 1, 2, 2, 2}).requires_grad_();
  const auto w = torch::ones({1, 1, 2, 2, 2}, torch::kFloat64).requires_grad_();
  show("conv3d_sum", torch::conv3d(x, w), {1, 1, 1, 1, 1}, {28});
  // stride 2, padding 1: each window holds exactly one input element, so the output is x
  show("conv3d_stride_padding", F::conv3d(x, w, F::Conv3dFuncOptions().stride(2).padding(1)), {1, 1, 2, 2, 2},
       {0, 1, 2, 3, 4, 5, 6, 7});
  torch::conv3d(x, w).sum().backward();
  show("conv3d_grad_input", x.grad(), {1, 1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  show("conv3d_grad_weight", w.grad(), {1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // dilation 2 on 3x3x3 reads the eight corners: 0 + 2 + 6 + 8 + 18 + 20 + 24 + 26
  const auto x27 = torch::arange(27, torch::kFloat64).reshape({1, 1, 3, 3, 3});
  show("conv3d_dilation", F::conv3d(x27, w.detach(), F::Conv3dFuncOptions().dilation(2)), {1, 1, 1, 1, 1}, {104});
  // per-dim settings and groups
  const auto xg = torch::tensor({1.0, 2.0}, torch::kFloat64).reshape({1, 2, 1, 1, 1});
  const auto wg = torch::tensor({3.0, 4.0}, torch::kFloat64).reshape({2, 1, 1, 1, 1});
  show("conv3d_groups", torch::conv3d(xg, wg, {}, {1, 1, 1}, {0, 1, 0}, 1, 2), {1, 2, 1, 3, 1}, {0, 3, 0, 0, 8, 0});
}

void conv_transpose1d() {
  const auto x = row({1, 2});
  const auto w = row({1, 1, 1});
  // x0 adds to outputs 0..2, x1 (stride 2) to 2..4
  show("conv_transpose1d", torch::conv_transpose1d(x, w, {}, 2), {1, 1, 5}, {1, 1, 3, 2, 2});
  show("conv_transpose1d_output_padding",
       F::conv_transpose1d(x, w, F::ConvTranspose1dFuncOptions().stride(2).output_padding(1)), {1, 1, 6},
       {1, 1, 3, 2, 2, 0});
  show("conv_transpose1d_padding", F::conv_transpose1d(x, w, F::ConvTranspose1dFuncOptions().stride(2).padding(1)),
       {1, 1, 3}, {1, 3, 2});
  const auto b = torch::tensor({10.0}, torch::kFloat64);
  show("conv_transpose1d_bias_dilation", F::conv_transpose1d(x, w, F::ConvTranspose1dFuncOptions().bias(b).dilation(2)),
       {1, 1, 6}, {11, 12, 11, 12, 11, 12});
  // conv_transpose1d is conv1d's input gradient
  const auto z = torch::zeros({1, 1, 6}, torch::kFloat64).requires_grad_();
  const auto wt = row({1, -2, 3});
  const auto g = row({1, 2, 3, 4});
  torch::conv1d(z, wt).backward(g);
  check(torch::allclose(z.grad(), torch::conv_transpose1d(g, wt)), "conv_transpose1d is conv1d's input gradient");
}

void pools() {
  const auto x = row({1, 3, 2, 5, 4, 0}).requires_grad_();
  show("max_pool1d", torch::max_pool1d(x, {2}), {1, 1, 3}, {3, 5, 4});
  show("max_pool1d_padding", F::max_pool1d(x, F::MaxPool1dFuncOptions(3).stride(1).padding(1)), {1, 1, 6},
       {3, 3, 5, 5, 5, 4});
  show("max_pool1d_dilation", F::max_pool1d(x, F::MaxPool1dFuncOptions(2).stride(1).dilation(2)), {1, 1, 4},
       {2, 5, 4, 5});
  show("max_pool1d_ceil_mode", F::max_pool1d(x, F::MaxPool1dFuncOptions(4).ceil_mode(true)), {1, 1, 2}, {5, 4});
  F::max_pool1d(x, F::MaxPool1dFuncOptions(2)).sum().backward();
  show("max_pool1d_grad", x.grad(), {1, 1, 6}, {0, 1, 0, 1, 1, 0});

  show("avg_pool1d", torch::avg_pool1d(x, {2}), {1, 1, 3}, {2, 3.5, 2});
  show("avg_pool1d_padding", F::avg_pool1d(x, F::AvgPool1dFuncOptions(3).stride(2).padding(1)), {1, 1, 3},
       {4.0 / 3, 10.0 / 3, 3});
  show("avg_pool1d_exclude_pad",
       F::avg_pool1d(x, F::AvgPool1dFuncOptions(3).stride(2).padding(1).count_include_pad(false)), {1, 1, 3},
       {2, 10.0 / 3, 3});

  // adaptive windows [floor(i * 6 / 4), ceil((i + 1) * 6 / 4)): [0, 2), [1, 3), [3, 5), [4, 6)
  show("adaptive_avg_pool1d", torch::adaptive_avg_pool1d(x, {4}), {1, 1, 4}, {2, 2.5, 4.5, 2});
  show("adaptive_avg_pool1d_global", F::adaptive_avg_pool1d(x, F::AdaptiveAvgPool1dFuncOptions(1)), {1, 1, 1}, {2.5});

  const auto img = torch::tensor({1.0, 9.0, 2.0, 4.0, 5.0, 6.0, 7.0, 3.0, 8.0}, torch::kFloat64)
                       .reshape({1, 1, 3, 3})
                       .requires_grad_();
  // 3 -> 2: windows [0, 2) and [1, 3) in each dim
  auto [y, idx] = torch::adaptive_max_pool2d(img, {2, 2});
  show("adaptive_max_pool2d", y, {1, 1, 2, 2}, {9, 9, 7, 8});
  show("adaptive_max_pool2d_indices", idx, {1, 1, 2, 2}, {1, 1, 6, 8});
  check(idx.scalar_type() == torch::kLong, "indices are int64");
  show("F_adaptive_max_pool2d", F::adaptive_max_pool2d(img, F::AdaptiveMaxPool2dFuncOptions(2)), {1, 1, 2, 2},
       {9, 9, 7, 8});
  auto [y2, idx2] = F::adaptive_max_pool2d_with_indices(img, F::AdaptiveMaxPool2dFuncOptions({1, 3}));
  show("adaptive_max_pool2d_1x3", y2, {1, 1, 1, 3}, {7, 9, 8});
  show("adaptive_max_pool2d_1x3_indices", idx2, {1, 1, 1, 3}, {6, 1, 8});
  y.sum().backward();
  show("adaptive_max_pool2d_grad", img.grad(), {1, 1, 3, 3}, {0, 2, 0, 0, 0, 0, 1, 0, 1});
}

void modules() {
  torch::manual_seed(0);
  torch::nn::Conv1d c1(torch::nn::Conv1dOptions(2, 4, 3).stride(1).padding(1).bias(true).padding_mode(torch::kZeros));
  check(c1->weight.sizes() == torch::IntArrayRef({4, 2, 3}), "Conv1d weight (out, in, k)");
  check(c1->bias.sizes() == torch::IntArrayRef({4}), "Conv1d bias (out)");
  const double bound1 = 1.0 / std::sqrt(6.0);  // fan_in = in_channels * k
  check(c1->weight.abs().max().item<double>() <= bound1 && c1->bias.abs().max().item<double>() <= bound1,
        "Conv1d init within 1/sqrt(fan_in)");
  {
    torch::NoGradGuard no_grad;
    c1->weight.fill_(0.5);
    c1->bias.fill_(-1);
  }
  // every output: -1 + 0.5 * (sum of the 2 x 3 window); an input of ones, padding 1 at the ends
  const auto ones = torch::ones({1, 2, 4});
  show("Conv1d", c1(ones), {1, 4, 4}, {1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1});
  auto named = c1->named_parameters();
  check(named.contains("weight") && named.contains("bias") && named.size() == 2, "Conv1d parameters weight, bias");

  torch::nn::Conv3d c3(torch::nn::Conv3dOptions(1, 2, {1, 2, 2}).stride({1, 2, 2}).bias(false));
  check(c3->weight.sizes() == torch::IntArrayRef({2, 1, 1, 2, 2}), "Conv3d weight (out, in, kD, kH, kW)");
  check(!c3->bias.defined(), "Conv3d without bias");
  {
    torch::NoGradGuard no_grad;
    c3->weight.fill_(1);
  }
  const auto vol = torch::arange(16, torch::kFloat32).reshape({1, 1, 1, 4, 4});
  // 2x2 blocks of 0..15: 0+1+4+5, 2+3+6+7, 8+9+12+13, 10+11+14+15, once per output channel
  show("Conv3d", c3(vol), {1, 2, 1, 2, 2}, {10, 18, 42, 50, 10, 18, 42, 50});

  torch::nn::ConvTranspose1d ct(torch::nn::ConvTranspose1dOptions(1, 1, 2).stride(2).bias(false));
  check(ct->weight.sizes() == torch::IntArrayRef({1, 1, 2}), "ConvTranspose1d weight (in, out, k)");
  {
    torch::NoGradGuard no_grad;
    ct->weight.fill_(1);
  }
  show("ConvTranspose1d", ct(torch::tensor({1.0f, 2.0f, 3.0f}).reshape({1, 1, 3})), {1, 1, 6}, {1, 1, 2, 2, 3, 3});

  const auto seq = torch::tensor({1.0f, 3.0f, 2.0f, 5.0f, 4.0f, 0.0f}).reshape({1, 1, 6});
  torch::nn::MaxPool1d mp(torch::nn::MaxPool1dOptions(2));
  show("MaxPool1d", mp(seq), {1, 1, 3}, {3, 5, 4});
  torch::nn::AvgPool1d ap(torch::nn::AvgPool1dOptions(3).stride(3));
  show("AvgPool1d", ap(seq), {1, 1, 2}, {2, 3});
  torch::nn::AdaptiveAvgPool1d aap(torch::nn::AdaptiveAvgPool1dOptions(2));
  show("AdaptiveAvgPool1d", aap(seq), {1, 1, 2}, {2, 3});
  torch::nn::AdaptiveMaxPool2d amp(torch::nn::AdaptiveMaxPool2dOptions({1, 2}));
  const auto plane = seq.reshape({1, 2, 3});                 // unbatched (C, H, W)
  show("AdaptiveMaxPool2d", amp(plane), {1, 1, 2}, {5, 4});  // windows [1 3 5 4] and [3 2 4 0]
  auto [v, i] = amp->forward_with_indices(plane);
  show("AdaptiveMaxPool2d_indices", i, {1, 1, 2}, {3, 4});
  check(torch::allclose(v, amp(plane)), "forward_with_indices gives forward's values");

  // A small 1-D network in a Sequential, trained one step.
  torch::nn::Sequential net(torch::nn::Conv1d(torch::nn::Conv1dOptions(1, 3, 3).padding(1)), torch::nn::ReLU(),
                            torch::nn::MaxPool1d(2),
                            torch::nn::AdaptiveAvgPool1d(torch::nn::AdaptiveAvgPool1dOptions(1)), torch::nn::Flatten(),
                            torch::nn::Linear(3, 2));
  const auto out = net->forward(torch::randn({4, 1, 8}));
  check(out.sizes() == torch::IntArrayRef({4, 2}), "Sequential of 1-D layers gives (4, 2)");
  torch::optim::SGD sgd(net->parameters(), 0.1);
  out.pow(2).sum().backward();
  sgd.step();
  bool all_grads = true;
  for (const auto& p : net->parameters()) all_grads = all_grads && p.grad().defined();
  check(all_grads, "every parameter has a gradient");
}

}  // namespace

int main() {
  conv1d();
  conv3d();
  conv_transpose1d();
  pools();
  modules();
  return porting::finish();
}
