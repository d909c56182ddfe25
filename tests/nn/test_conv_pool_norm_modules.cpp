// Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, BatchNorm1d/2d and LayerNorm modules: forward
// equals the functional op with the module's tensors, PyTorch's state_dict keys, initialisation
// and repr, BatchNorm's train/eval behaviour and running statistics (momentum and cumulative).
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

// Per-channel mean and unbiased variance of x (N, C, *), in double.
void channel_stats(const Tensor& x, std::vector<double>& mean, std::vector<double>& uvar) {
  const auto v = values(x);
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C), M = N * S;
  mean.assign(static_cast<size_t>(C), 0);
  uvar.assign(static_cast<size_t>(C), 0);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) s += v[static_cast<size_t>((n * C + c) * S + i)];
    const double m = s / static_cast<double>(M);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) q += std::pow(v[static_cast<size_t>((n * C + c) * S + i)] - m, 2);
    mean[static_cast<size_t>(c)] = m;
    uvar[static_cast<size_t>(c)] = q / static_cast<double>(M - 1);
  }
}

// ---- Conv2d ----

TEST(Conv2dModule, ForwardStateDictAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  manual_seed(1);
  nn::Conv2d conv(nn::Conv2dOptions(4, 6, {3, 2}).stride(2).padding(1).dilation({2, 1}).groups(2));
  EXPECT_EQ(conv->weight.sizes().vec(), (std::vector<int64_t>{6, 2, 3, 2}));
  EXPECT_EQ(conv->bias.sizes().vec(), (std::vector<int64_t>{6}));
  EXPECT_TRUE(conv->weight.requires_grad());
  EXPECT_EQ(keys(*conv), (std::vector<std::string>{"weight", "bias"}));
  const Tensor x = rnd({2, 4, 7, 6}, 2);
  const Tensor expected = F::conv2d(x, conv->weight, conv->bias,
                                    F::Conv2dFuncOptions().stride(2).padding(1).dilation({2, 1}).groups(2));
  EXPECT_TRUE(all_close(conv(x), expected, 0, 0));
  EXPECT_EQ(repr(*conv), "Conv2d(4, 6, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), dilation=(2, 1), groups=2)");
  nn::Conv2d plain(3, 8, 3);
  EXPECT_EQ(repr(*plain), "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))");
  nn::Conv2d nobias(nn::Conv2dOptions(3, 2, 1).bias(false));
  EXPECT_FALSE(nobias->bias.defined());
  EXPECT_EQ(keys(*nobias), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(repr(*nobias), "Conv2d(3, 2, kernel_size=(1, 1), stride=(1, 1), bias=False)");
  // unbatched input
  const Tensor xu = rnd({3, 4, 4}, 3);
  EXPECT_TRUE(all_close(plain(xu), plain(xu.unsqueeze(0)).squeeze(0), 1e-6, 1e-6));
}

TEST(Conv2dModule, DefaultInitIsPyTorchs) {
  // kaiming_uniform_(a = sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias the same bound.
  manual_seed(5);
  nn::Conv2d conv(nn::Conv2dOptions(8, 64, 3).groups(2));
  const double bound = 1.0 / std::sqrt(4.0 * 9.0);  // fan_in = in_channels / groups * kH * kW
  const auto w = values(conv->weight), b = values(conv->bias);
  double lo = 1, hi = -1, mean = 0;
  for (double v : w) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    mean += v / static_cast<double>(w.size());
  }
  EXPECT_GE(lo, -bound);
  EXPECT_LE(hi, bound);
  EXPECT_LT(lo, -0.95 * bound);  // 2304 draws fill the interval
  EXPECT_GT(hi, 0.95 * bound);
  EXPECT_NEAR(mean, 0.0, 0.02);
  double var = 0;
  for (double v : w) var += (v - mean) * (v - mean) / static_cast<double>(w.size());
  EXPECT_NEAR(var, bound * bound / 3, 0.1 * bound * bound / 3);  // variance of U(-a, a) is a^2 / 3
  for (double v : b) {
    EXPECT_LE(std::abs(v), bound);
  }
}

TEST(Conv2dModule, GradcheckAndErrors) {
  manual_seed(6);
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 2).padding(1));
  conv->to(kFloat64);
  const Tensor x = rnd({1, 2, 3, 3}, 7, kFloat64).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck([&](const TensorList& in) { return conv(in[0]); }, {x, conv->weight, conv->bias}));
  EXPECT_TRUE(throws_error([] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)); }, {"Conv2d", "in_channels", "groups"}));
  EXPECT_TRUE(throws_error([] { nn::Conv2d(nn::Conv2dOptions(4, 3, 3).groups(2)); }, {"Conv2d", "out_channels", "groups"}));
  EXPECT_TRUE(throws_error([] { nn::Conv2d(0, 3, 3); }, {"Conv2d", "positive in_channels"}));
  EXPECT_TRUE(throws_error([&] { conv(zeros({1, 3, 4, 4}, kFloat64)); }, {"conv2d", "[1, 3, 4, 4]", "2 channels"}));
}

TEST(Conv2dModule, CloneIsDeep) {
  manual_seed(8);
  nn::Conv2d conv(2, 2, 2);
  auto copy = std::dynamic_pointer_cast<nn::Conv2dImpl>(conv->clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(all_close(copy->weight, conv->weight, 0, 0));
  {
    NoGradGuard g;
    copy->weight.fill_(0.5);
  }
  EXPECT_FALSE(all_close(copy->weight, conv->weight, 0, 0));
}

// ---- pools ----

TEST(PoolingModules, ForwardAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Tensor x = rnd({2, 3, 7, 6}, 11);
  nn::MaxPool2d mp(nn::MaxPool2dOptions(3).stride(2).padding(1));
  EXPECT_TRUE(all_close(mp(x), F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1)), 0, 0));
  auto [y, idx] = mp->forward_with_indices(x);
  EXPECT_EQ(idx.dtype(), kInt64);
  EXPECT_TRUE(all_close(y, mp(x), 0, 0));
  EXPECT_EQ(repr(*mp), "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)");
  EXPECT_TRUE(keys(*mp).empty());

  nn::AvgPool2d ap(nn::AvgPool2dOptions({3, 2}).stride(1).count_include_pad(false).padding(1));
  EXPECT_TRUE(all_close(ap(x), F::avg_pool2d(x, F::AvgPool2dFuncOptions({3, 2}).stride(1).padding(1).count_include_pad(false)), 0, 0));
  EXPECT_EQ(repr(*nn::AvgPool2d(2)), "AvgPool2d(kernel_size=2, stride=2, padding=0)");

  nn::AdaptiveAvgPool2d gap(1);
  EXPECT_TRUE(all_close(gap(x), x.mean({2, 3}, true), 1e-6, 1e-6));
  EXPECT_EQ(repr(*gap), "AdaptiveAvgPool2d(output_size=1)");
  EXPECT_EQ(repr(*nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({2, 3}))), "AdaptiveAvgPool2d(output_size=(2, 3))");
  EXPECT_EQ(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({2, 3}))(x).sizes().vec(), (std::vector<int64_t>{2, 3, 2, 3}));
}

TEST(PoolingModules, InASequential) {
  manual_seed(12);
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::BatchNorm2d(4), nn::ReLU(),
                     nn::MaxPool2d(2), nn::AdaptiveAvgPool2d(1), nn::Flatten(), nn::Linear(4, 2));
  const Tensor out = net->forward(rnd({3, 1, 8, 8}, 13));
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{3, 2}));
  out.sum().backward();
  for (const auto& p : net->parameters()) {
    EXPECT_TRUE(p.grad().defined());
  }
  EXPECT_EQ(keys(*net), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                                  "1.running_var", "1.num_batches_tracked", "6.weight", "6.bias"}));
}

// ---- BatchNorm ----

TEST(BatchNormModule, StateDictReprAndInit) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  nn::BatchNorm2d bn(3);
  EXPECT_EQ(keys(*bn), (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_TRUE(all_close(bn->weight, {1, 1, 1}, {3}, 0, 0));
  EXPECT_TRUE(all_close(bn->bias, {0, 0, 0}, {3}, 0, 0));
  EXPECT_TRUE(all_close(bn->running_mean, {0, 0, 0}, {3}, 0, 0));
  EXPECT_TRUE(all_close(bn->running_var, {1, 1, 1}, {3}, 0, 0));
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn->num_batches_tracked.dim(), 0);
  EXPECT_FALSE(bn->running_mean.requires_grad());
  EXPECT_EQ(bn->parameters().size(), 2u);
  EXPECT_EQ(bn->buffers().size(), 3u);
  EXPECT_EQ(repr(*bn), "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  nn::BatchNorm1d plain(nn::BatchNormOptions(4).momentum(std::nullopt).affine(false).track_running_stats(false));
  EXPECT_TRUE(keys(*plain).empty());
  EXPECT_EQ(repr(*plain), "BatchNorm1d(4, eps=1e-05, momentum=None, affine=False, track_running_stats=False)");
}

TEST(BatchNormModule, TrainUpdatesRunningStatsEvalUsesThem) {
  nn::BatchNorm2d bn(nn::BatchNormOptions(2).momentum(0.25));
  {
    NoGradGuard g;
    bn->weight.copy_(tensor({2.0f, -1.0f}));
    bn->bias.copy_(tensor({0.5f, 1.0f}));
  }
  const Tensor x = rnd({4, 2, 3, 3}, 21);
  std::vector<double> mean, uvar;
  channel_stats(x, mean, uvar);
  // training: the functional op with batch statistics
  const Tensor y = bn(x);
  Tensor rm = zeros({2}), rv = ones({2});
  EXPECT_TRUE(all_close(y, F::batch_norm(x, rm, rv, F::BatchNormFuncOptions().weight(bn->weight).bias(bn->bias).training(true).momentum(0.25)),
                        0, 0));
  EXPECT_TRUE(all_close(bn->running_mean, {0.25 * mean[0], 0.25 * mean[1]}, {2}, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(bn->running_var, {0.75 + 0.25 * uvar[0], 0.75 + 0.25 * uvar[1]}, {2}, 1e-6, 1e-6));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  // eval: the running statistics, nothing updated
  bn->eval();
  const Tensor rm_before = bn->running_mean.clone();
  const Tensor ye = bn(x);
  EXPECT_TRUE(all_close(bn->running_mean, rm_before, 0, 0));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  const auto vx = values(x), vrm = values(bn->running_mean), vrv = values(bn->running_var);
  std::vector<double> expected(vx.size());
  const double w[2] = {2.0, -1.0}, b[2] = {0.5, 1.0};
  for (size_t i = 0; i < vx.size(); ++i) {
    const size_t c = (i / 9) % 2;
    expected[i] = (vx[i] - vrm[c]) / std::sqrt(vrv[c] + 1e-5) * w[c] + b[c];
  }
  EXPECT_TRUE(all_close(ye, expected, {4, 2, 3, 3}, 1e-5, 1e-5));
  // back to training
  bn->train();
  bn(x);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
}

TEST(BatchNormModule, CumulativeAverageWithoutMomentum) {
  nn::BatchNorm1d bn(nn::BatchNormOptions(3).momentum(std::nullopt));
  const Tensor x1 = rnd({5, 3}, 31), x2 = rnd({4, 3, 2}, 32);
  std::vector<double> m1, v1, m2, v2;
  channel_stats(x1, m1, v1);
  channel_stats(x2, m2, v2);
  bn(x1);  // factor 1/1: the first batch's statistics
  EXPECT_TRUE(all_close(bn->running_mean, m1, {3}, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(bn->running_var, v1, {3}, 1e-6, 1e-6));
  bn(x2);  // factor 1/2: the average of both
  std::vector<double> am, av;
  for (size_t c = 0; c < 3; ++c) {
    am.push_back((m1[c] + m2[c]) / 2);
    av.push_back((v1[c] + v2[c]) / 2);
  }
  EXPECT_TRUE(all_close(bn->running_mean, am, {3}, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(bn->running_var, av, {3}, 1e-6, 1e-6));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
}

TEST(BatchNormModule, WithoutRunningStatsEvalUsesBatchStatistics) {
  nn::BatchNorm2d bn(nn::BatchNormOptions(2).track_running_stats(false).affine(false));
  bn->eval();
  const Tensor x = rnd({3, 2, 2, 2}, 41);
  EXPECT_TRUE(all_close(bn(x), F::batch_norm(x, Tensor(), Tensor(), F::BatchNormFuncOptions().training(true)), 0, 0));
  EXPECT_FALSE(bn->running_mean.defined());
}

TEST(BatchNormModule, GradcheckErrorsAndStateDictRoundTrip) {
  nn::BatchNorm1d bn(3);
  bn->to(kFloat64);
  const Tensor x = rnd({4, 3}, 51, kFloat64).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck([&](const TensorList& in) { return bn(in[0]); }, {x, bn->weight, bn->bias}));
  EXPECT_EQ(bn->running_mean.dtype(), kFloat64);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_TRUE(throws_error([&] { bn(zeros({2, 3, 2, 2}, kFloat64)); }, {"BatchNorm1d", "[2, 3, 2, 2]", "BatchNorm2d"}));
  EXPECT_TRUE(throws_error([&] { nn::BatchNorm2d(3)(zeros({2, 3})); }, {"BatchNorm2d", "4-D", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { bn(zeros({1, 3}, kFloat64)); }, {"batch_norm", "more than 1 value per channel"}));
  EXPECT_TRUE(throws_error([&] { bn(zeros({2, 4}, kFloat64)); }, {"batch_norm", "[4]", "[3]"}));
  // load_state_dict into a fresh module copies the running statistics and the counter
  nn::BatchNorm1d other(3);
  other->to(kFloat64);
  other->load_state_dict(bn->state_dict());
  EXPECT_TRUE(all_close(other->running_var, bn->running_var, 0, 0));
  EXPECT_EQ(other->num_batches_tracked.item<int64_t>(), bn->num_batches_tracked.item<int64_t>());
}

// ---- LayerNorm ----

TEST(LayerNormModule, ForwardStateDictAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  nn::LayerNorm ln(nn::LayerNormOptions({3, 4}).eps(1e-3));
  EXPECT_EQ(keys(*ln), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(ln->weight.sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(all_close(ln->weight, std::vector<double>(12, 1.0), {3, 4}, 0, 0));
  {
    NoGradGuard g;
    ln->weight.copy_(rnd({3, 4}, 61));
    ln->bias.copy_(rnd({3, 4}, 62));
  }
  const Tensor x = rnd({2, 3, 4}, 63);
  EXPECT_TRUE(all_close(ln(x), F::layer_norm(x, F::LayerNormFuncOptions({3, 4}).weight(ln->weight).bias(ln->bias).eps(1e-3)), 0, 0));
  EXPECT_EQ(repr(*ln), "LayerNorm((3, 4), eps=0.001, elementwise_affine=True)");
  nn::LayerNorm plain(nn::LayerNormOptions({5}).elementwise_affine(false));
  EXPECT_TRUE(keys(*plain).empty());
  EXPECT_EQ(repr(*plain), "LayerNorm((5,), eps=1e-05, elementwise_affine=False)");
  EXPECT_TRUE(throws_error([&] { plain(zeros({2, 4})); }, {"layer_norm", "[2, 4]", "[*, 5]"}));
  // train and eval behave the same
  plain->eval();
  const Tensor z = rnd({2, 5}, 64);
  const Tensor ye = plain(z);
  plain->train();
  EXPECT_TRUE(all_close(plain(z), ye, 0, 0));
}

}  // namespace
}  // namespace graft::test
