// Conv1d, Conv3d, ConvTranspose1d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d and AdaptiveMaxPool2d
// modules: Options spelling and defaults, parameter names and shapes as PyTorch has them, forward
// equals the functional op with the module's tensors, PyTorch's initialisation bounds and repr.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "../support/nn_util.h"
#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace nn = graft::nn;
namespace F = graft::nn::functional;

// Every value within the bound 1/sqrt(fan_in), the largest near it: n uniform draws all stay below
// f * bound with probability f^n, so the floor f = 1e-6^(1/n) fails one seed in a million (0.89 for
// a weight of 120 values, 0.18 for a bias of 8).
void expect_pytorch_bound(const Tensor& t, int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  const double m = t.abs().max().item<double>();
  EXPECT_LE(m, bound);
  EXPECT_GT(m, std::pow(1e-6, 1.0 / static_cast<double>(t.numel())) * bound);
}

TEST(Conv1dModule, OptionsShapesForwardAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  manual_seed(1);
  const auto o = nn::Conv1dOptions(4, 6, 3);
  EXPECT_EQ(o.stride()[0], 1);
  EXPECT_EQ(o.padding()[0], 0);
  EXPECT_EQ(o.dilation()[0], 1);
  EXPECT_EQ(o.groups(), 1);
  EXPECT_TRUE(o.bias());
  EXPECT_EQ(o.padding_mode(), graft::kZeros);
  nn::Conv1d conv(nn::Conv1dOptions(4, 6, 3).stride(2).padding(1).dilation(2).groups(2).padding_mode(graft::kZeros));
  EXPECT_EQ(conv->weight.sizes().vec(), (std::vector<int64_t>{6, 2, 3}));
  EXPECT_EQ(conv->bias.sizes().vec(), (std::vector<int64_t>{6}));
  EXPECT_EQ(keys(*conv), (std::vector<std::string>{"weight", "bias"}));
  const Tensor x = rnd({2, 4, 9}, 2);
  EXPECT_TRUE(all_close(
      conv(x),
      F::conv1d(x, conv->weight, F::Conv1dFuncOptions().bias(conv->bias).stride(2).padding(1).dilation(2).groups(2)), 0,
      0));
  EXPECT_EQ(conv(x).sizes().vec(), (std::vector<int64_t>{2, 6, 4}));
  EXPECT_EQ(repr(*conv), "Conv1d(4, 6, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), groups=2)");
  nn::Conv1d plain(3, 8, 5);
  EXPECT_EQ(repr(*plain), "Conv1d(3, 8, kernel_size=(5,), stride=(1,))");
  expect_pytorch_bound(plain->weight, 3 * 5);
  expect_pytorch_bound(plain->bias, 3 * 5);
  nn::Conv1d nobias(nn::Conv1dOptions(3, 2, 1).bias(false));
  EXPECT_FALSE(nobias->bias.defined());
  EXPECT_EQ(keys(*nobias), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(repr(*nobias), "Conv1d(3, 2, kernel_size=(1,), stride=(1,), bias=False)");
  const Tensor xu = rnd({3, 7}, 3);  // unbatched
  EXPECT_TRUE(all_close(plain(xu), plain(xu.unsqueeze(0)).squeeze(0), 1e-6, 1e-6));
  EXPECT_TRUE(throws_error([] { nn::Conv1d(nn::Conv1dOptions(3, 4, 3).groups(2)); },
                           {"Conv1d", "in_channels divisible by groups"}));
  EXPECT_TRUE(throws_error([] { nn::Conv1d(3, 4, 0); }, {"Conv1d", "positive kernel_size", "(0,)"}));
}

TEST(Conv3dModule, OptionsShapesForwardAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  manual_seed(4);
  nn::Conv3d conv(nn::Conv3dOptions(4, 2, {3, 2, 1}).stride({1, 2, 1}).padding(1).groups(2));
  EXPECT_EQ(conv->weight.sizes().vec(), (std::vector<int64_t>{2, 2, 3, 2, 1}));
  EXPECT_EQ(keys(*conv), (std::vector<std::string>{"weight", "bias"}));
  const Tensor x = rnd({2, 4, 4, 5, 3}, 5);
  const Tensor y = conv(x);
  EXPECT_TRUE(all_close(
      y, F::conv3d(x, conv->weight, F::Conv3dFuncOptions().bias(conv->bias).stride({1, 2, 1}).padding(1).groups(2)), 0,
      0));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 2, 4, 3, 5}));
  EXPECT_EQ(repr(*conv), "Conv3d(4, 2, kernel_size=(3, 2, 1), stride=(1, 2, 1), padding=(1, 1, 1), groups=2)");
  nn::Conv3d plain(2, 16, 3);
  EXPECT_EQ(repr(*plain), "Conv3d(2, 16, kernel_size=(3, 3, 3), stride=(1, 1, 1))");
  expect_pytorch_bound(plain->weight, 2 * 27);
  expect_pytorch_bound(plain->bias, 2 * 27);
  EXPECT_EQ(plain(rnd({2, 3, 4, 5}, 6)).sizes().vec(), (std::vector<int64_t>{16, 1, 2, 3}));  // unbatched
  // gradients reach the parameters
  plain(rnd({1, 2, 3, 3, 3}, 7)).sum().backward();
  EXPECT_EQ(plain->weight.grad().sizes().vec(), (std::vector<int64_t>{16, 2, 3, 3, 3}));
  EXPECT_TRUE(all_close(plain->bias.grad(), std::vector<double>(16, 1.0), {16}));
}

TEST(ConvTranspose1dModule, OptionsShapesForwardAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  manual_seed(8);
  nn::ConvTranspose1d up(nn::ConvTranspose1dOptions(4, 6, 4).stride(2).padding(1).output_padding(1).groups(2));
  EXPECT_EQ(up->weight.sizes().vec(), (std::vector<int64_t>{4, 3, 4}));  // (in, out / groups, k)
  EXPECT_EQ(up->bias.sizes().vec(), (std::vector<int64_t>{6}));
  EXPECT_EQ(keys(*up), (std::vector<std::string>{"weight", "bias"}));
  const Tensor x = rnd({2, 4, 5}, 9);
  const Tensor y = up(x);
  // (5 - 1) * 2 - 2 + 3 + 1 + 1 = 11
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6, 11}));
  EXPECT_TRUE(
      all_close(y,
                F::conv_transpose1d(
                    x, up->weight,
                    F::ConvTranspose1dFuncOptions().bias(up->bias).stride(2).padding(1).output_padding(1).groups(2)),
                0, 0));
  EXPECT_EQ(repr(*up),
            "ConvTranspose1d(4, 6, kernel_size=(4,), stride=(2,), padding=(1,), output_padding=(1,), groups=2)");
  nn::ConvTranspose1d plain(nn::ConvTranspose1dOptions(5, 8, 3).bias(false));
  EXPECT_EQ(repr(*plain), "ConvTranspose1d(5, 8, kernel_size=(3,), stride=(1,), bias=False)");
  expect_pytorch_bound(plain->weight, 8 * 3);  // fan_in = weight.size(1) * k, as PyTorch computes it
  EXPECT_EQ(plain(rnd({5, 4}, 10)).sizes().vec(), (std::vector<int64_t>{8, 6}));
}

TEST(Pool1dModules, ForwardAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Tensor x = rnd({2, 3, 9}, 11);
  nn::MaxPool1d mp(nn::MaxPool1dOptions(3).stride(2).padding(1));
  EXPECT_TRUE(all_close(mp(x), F::max_pool1d(x, F::MaxPool1dFuncOptions(3).stride(2).padding(1)), 0, 0));
  EXPECT_EQ(repr(*mp), "MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)");
  EXPECT_EQ(repr(*nn::MaxPool1d(2)), "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  nn::AvgPool1d ap(nn::AvgPool1dOptions(3).stride(2).count_include_pad(false).padding(1));
  EXPECT_TRUE(all_close(
      ap(x), F::avg_pool1d(x, F::AvgPool1dFuncOptions(3).stride(2).padding(1).count_include_pad(false)), 0, 0));
  EXPECT_EQ(repr(*ap), "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))");
  nn::AdaptiveAvgPool1d aap(4);
  EXPECT_EQ(aap(x).sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(repr(*aap), "AdaptiveAvgPool1d(output_size=4)");
  EXPECT_TRUE(keys(*mp).empty() && keys(*ap).empty() && keys(*aap).empty());
}

TEST(AdaptiveMaxPool2dModule, ForwardIndicesAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Tensor x = rnd({2, 3, 7, 5}, 12);
  nn::AdaptiveMaxPool2d pool(nn::AdaptiveMaxPool2dOptions({3, 2}));
  auto [y, idx] = pool->forward_with_indices(x);
  EXPECT_TRUE(all_close(pool(x), y, 0, 0));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 3, 2}));
  EXPECT_EQ(idx.dtype(), kInt64);
  // The values are the input at the indices (within each plane).
  EXPECT_TRUE(all_close(x.reshape({2, 3, 35}).gather(2, idx.reshape({2, 3, 6})).reshape({2, 3, 3, 2}), y, 0, 0));
  EXPECT_EQ(repr(*pool), "AdaptiveMaxPool2d(output_size=(3, 2))");
  EXPECT_EQ(repr(*nn::AdaptiveMaxPool2d(1)), "AdaptiveMaxPool2d(output_size=1)");
}

TEST(ConvPoolNdModules, InASequential) {
  manual_seed(13);
  // A small 1-D network: conv, pool, conv, adaptive pool, flatten, linear.
  nn::Sequential net(nn::Conv1d(nn::Conv1dOptions(2, 4, 3).padding(1)), nn::ReLU(), nn::MaxPool1d(2),
                     nn::Conv1d(4, 4, 3), nn::AdaptiveAvgPool1d(1), nn::Flatten(), nn::Linear(4, 3));
  const Tensor y = net->forward(rnd({5, 2, 16}, 14));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{5, 3}));
  y.sum().backward();
  for (const auto& p : net->parameters()) EXPECT_TRUE(p.grad().defined());
  EXPECT_EQ(net->named_parameters().size(), 6u);
}

// LibTorch's class shape: every convolution is a ConvNdImpl<D, Derived> (the transposed ones through
// ConvTransposeNdImpl), holding ConvNdOptions<D> with `transposed` set by the options it was made from.
TEST(ConvNdImpl, OneBaseForEveryConvolution) {
  nn::Conv2d conv(nn::Conv2dOptions(4, 6, {3, 2}).groups(2));
  nn::ConvNdImpl<2, nn::Conv2dImpl>& base = *conv;
  EXPECT_FALSE(base.options.transposed());
  EXPECT_EQ(base.weight.sizes().vec(), (std::vector<int64_t>{6, 2, 3, 2}));  // (out, in / groups, kH, kW)
  nn::ConvTranspose1d up(nn::ConvTranspose1dOptions(4, 6, 3).groups(2).output_padding(1).stride(2));
  nn::ConvTransposeNdImpl<1, nn::ConvTranspose1dImpl>& tbase = *up;
  EXPECT_TRUE(tbase.options.transposed());
  EXPECT_EQ(tbase.options.output_padding()[0], 1);
  EXPECT_EQ(up->weight.sizes().vec(), (std::vector<int64_t>{4, 3, 3}));  // (in, out / groups, kL)
  // reset_parameters redraws in place: PyTorch's bound 1 / sqrt(fan_in), fan_in = 3 * 3 here.
  NoGradGuard ng;
  up->weight.fill_(7.0);
  up->reset_parameters();
  EXPECT_LE(up->weight.abs().max().item<double>(), 1.0 / 3.0);
  // ConvTranspose2d checks as the others do, naming itself.
  EXPECT_TRUE(throws_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 3).groups(2)); },
                           {"ConvTranspose2d", "in_channels divisible by groups", "groups = 2"}));
  EXPECT_TRUE(throws_error(
      [] {
        nn::ConvTranspose2d(nn::ConvTranspose2dOptions(2, 4, {3, 0}));
      },
      {"ConvTranspose2d", "positive kernel_size", "(3, 0)"}));
  const nn::ConvNdOptions<3> made = nn::Conv3dOptions(2, 4, 3).padding(1);
  EXPECT_EQ(made.padding()[2], 1);
  EXPECT_FALSE(made.transposed());
}

}  // namespace
}  // namespace graft::test
