// The neural-network ops in their two spellings: graft::gelu(x, "tanh") (ops.h, ATen's positional
// arguments) and F::gelu(x, F::GELUFuncOptions().approximate("tanh")) (nn/functional.h, LibTorch's
// option structs) are one op: the same values, the same graph node, the same errors. The op table
// (records_*.cpp) covers each op's values and gradients through F::; this file covers the
// positional spelling and ATen's size arguments (one value for both dims, or {height, width}).
#include <gtest/gtest.h>

#include <string>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// The error message thrown by f (empty when nothing is thrown).
template <class Fn>
std::string error_of(Fn&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NnOpSpellings, ActivationsGiveTheSameValuesAndNodes) {
  const Tensor x = uniform_sample({3, 4}, 1, -3, 3).requires_grad_();
  EXPECT_TRUE(equal(graft::gelu(x, "tanh"), F::gelu(x, F::GELUFuncOptions().approximate("tanh"))));
  EXPECT_TRUE(equal(graft::gelu(x), F::gelu(x)));
  EXPECT_TRUE(equal(graft::leaky_relu(x, 0.2), F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2))));
  EXPECT_TRUE(equal(graft::softplus(x, 2.0, 1.0), F::softplus(x, F::SoftplusFuncOptions().beta(2.0).threshold(1.0))));
  EXPECT_TRUE(equal(graft::elu(x, 0.5), F::elu(x, F::ELUFuncOptions().alpha(0.5))));
  EXPECT_TRUE(equal(graft::silu(x), F::silu(x)));
  EXPECT_EQ(graft::gelu(x, "tanh").grad_fn()->name(), F::gelu(x).grad_fn()->name());
  const std::string err = error_of([&] { (void)graft::gelu(x, "exact"); });
  EXPECT_NE(err.find("gelu"), std::string::npos) << err;
  EXPECT_EQ(err, error_of([&] { (void)F::gelu(x, F::GELUFuncOptions().approximate("exact")); }));
}

TEST(NnOpSpellings, LinearEmbeddingAndOneHot) {
  const Tensor x = uniform_sample({2, 3}, 2, -1, 1), w = uniform_sample({4, 3}, 3, -1, 1);
  const Tensor b = uniform_sample({4}, 4, -1, 1);
  EXPECT_TRUE(equal(graft::linear(x, w, b), F::linear(x, w, b)));
  EXPECT_TRUE(equal(graft::fused_linear(x, w, b, graft::FusedActivation::GELUTanh),
                    F::fused_linear(x, w, b, F::FusedActivation::GELUTanh)));
  // ATen's order (weight, indices) for the op, LibTorch's (input, weight) for nn::functional.
  const Tensor ids = tensor<int64_t>({2, 0, 3});
  EXPECT_TRUE(equal(graft::embedding(w, ids, 0), F::embedding(ids, w, F::EmbeddingFuncOptions().padding_idx(0))));
  EXPECT_TRUE(equal(graft::one_hot(ids, 5), F::one_hot(ids, 5)));
}

TEST(NnOpSpellings, ConvolutionAndPoolingTakeOneValueOrAPair) {
  const Tensor x = uniform_sample({1, 2, 7, 6}, 5, -1, 1), w = uniform_sample({3, 2, 3, 3}, 6, -1, 1);
  const Tensor b = uniform_sample({3}, 7, -1, 1);
  const Tensor ref = F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding({1, 0}));
  EXPECT_TRUE(equal(graft::conv2d(x, w, b, 2, {1, 0}), ref));
  EXPECT_TRUE(equal(graft::conv2d(x, w, b, {2, 2}, {1, 0}, {1, 1}, 1), ref));
  EXPECT_TRUE(throws_error([&] { (void)graft::conv2d(x, w, b, {1, 2, 3}); }, {"conv2d", "stride of 1 or 2 values"}));

  // stride {} is the kernel size, as in ATen and as MaxPool2dFuncOptions defaults it.
  EXPECT_TRUE(equal(graft::max_pool2d(x, 2), F::max_pool2d(x, F::MaxPool2dFuncOptions(2))));
  EXPECT_TRUE(equal(graft::max_pool2d(x, {3, 2}, 1, {1, 0}, 1, true),
                    F::max_pool2d(x, F::MaxPool2dFuncOptions({3, 2}).stride(1).padding({1, 0}).ceil_mode(true))));
  const auto [v, i] = graft::max_pool2d_with_indices(x, 2);
  const auto [fv, fi] = F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(2));
  EXPECT_TRUE(equal(v, fv));
  EXPECT_TRUE(equal(i, fi));
  EXPECT_TRUE(equal(graft::avg_pool2d(x, 3, 2, 1, false, false, 4),
                    F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(2).padding(1).count_include_pad(false)
                                         .divisor_override(4))));
  EXPECT_TRUE(equal(graft::adaptive_avg_pool2d(x, {3, 2}), F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({3, 2}))));
  EXPECT_TRUE(throws_error([&] { (void)graft::max_pool2d(x, {2, 2, 2}); }, {"max_pool2d", "kernel_size of 1 or 2 values"}));
}

TEST(NnOpSpellings, Normalisation) {
  const Tensor x = uniform_sample({4, 3, 2}, 8, -2, 2), w = uniform_sample({3}, 9, 0.5, 1.5);
  const Tensor b = uniform_sample({3}, 10, -1, 1);
  Tensor rm = zeros({3}, kFloat64), rv = ones({3}, kFloat64), rm2 = zeros({3}, kFloat64), rv2 = ones({3}, kFloat64);
  EXPECT_TRUE(equal(graft::batch_norm(x, w, b, rm, rv, true, 0.3, 1e-3),
                    F::batch_norm(x, rm2, rv2, F::BatchNormFuncOptions().weight(w).bias(b).training(true).momentum(0.3)
                                                   .eps(1e-3))));
  EXPECT_TRUE(equal(rm, rm2));
  EXPECT_TRUE(equal(rv, rv2));
  const Tensor lw = uniform_sample({3, 2}, 11, 0.5, 1.5);
  EXPECT_TRUE(equal(graft::layer_norm(x, {3, 2}, lw, Tensor(), 1e-4),
                    F::layer_norm(x, F::LayerNormFuncOptions({3, 2}).weight(lw).eps(1e-4))));
}

TEST(NnOpSpellings, Losses) {
  const Tensor x = uniform_sample({5, 4}, 12, -2, 2), t = tensor<int64_t>({0, 3, 1, 3, 2});
  const Tensor cw = uniform_sample({4}, 13, 0.5, 1.5);
  EXPECT_TRUE(equal(graft::cross_entropy(x, t, cw, graft::kSum, 3, 0.1),
                    F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(cw).reduction(graft::kSum)
                                               .ignore_index(3).label_smoothing(0.1))));
  EXPECT_TRUE(equal(graft::cross_entropy(x, t), F::cross_entropy(x, t)));  // the fused route
  const Tensor logp = graft::log_softmax(x, 1);
  EXPECT_TRUE(equal(graft::nll_loss(logp, t, {}, graft::kNone, 1),
                    F::nll_loss(logp, t, F::NLLLossFuncOptions().reduction(graft::kNone).ignore_index(1))));
  const Tensor y = uniform_sample({5, 4}, 14, -2, 2), p = uniform_sample({5, 4}, 15, 0.05, 0.95);
  EXPECT_TRUE(equal(graft::mse_loss(x, y, graft::kSum), F::mse_loss(x, y, F::MSELossFuncOptions().reduction(graft::kSum))));
  EXPECT_TRUE(equal(graft::l1_loss(x, y), F::l1_loss(x, y)));
  EXPECT_TRUE(equal(graft::smooth_l1_loss(x, y, graft::kMean, 0.5),
                    F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(0.5))));
  EXPECT_TRUE(equal(graft::binary_cross_entropy(p, p.detach() * 0.5, cw),
                    F::binary_cross_entropy(p, p.detach() * 0.5, F::BinaryCrossEntropyFuncOptions().weight(cw))));
  EXPECT_TRUE(equal(graft::binary_cross_entropy_with_logits(x, p, {}, cw, graft::kNone),
                    F::binary_cross_entropy_with_logits(
                        x, p, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(cw).reduction(graft::kNone))));
  EXPECT_STREQ(graft::reduction_name(graft::kSum), "sum");
}

}  // namespace
}  // namespace graft::test
