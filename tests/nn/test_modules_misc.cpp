// LibTorch 1.13 module surface of issue 32 (gaps found building LibTorch's test_api module tests):
// the inplace option of ELU / LeakyReLU, Dropout3d, AlphaDropout, FeatureAlphaDropout, Softmax2d,
// Functional's argument binding, TripletMarginWithDistanceLossOptions::reduction_t, Embedding's
// max_norm / scale_grad_by_freq / from_pretrained, Unflatten, Unfold's braced kernel sizes. Every
// expected value is worked out here from the formula (std::exp, SELU's constants, norms) or from a
// seeded Generator's draws, which are the uniforms the masks use (kept where U >= p).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <type_traits>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

// -10 .. 10 in 27 steps, shaped (3, 3, 3), as LibTorch's ELU / LeakyReLU tests use (float64 here).
std::vector<double> misc_linspace27() {
  std::vector<double> v(27);
  for (size_t i = 0; i < v.size(); ++i) v[i] = -10.0 + 20.0 * static_cast<double>(i) / 26.0;
  return v;
}

TEST(ModulesMiscInplace, ELUWritesIntoItsInputWhenInplace) {
  for (const double alpha : {0.0, 0.42, 1.0, 4.2}) {
    std::vector<double> expect;
    for (const double x : misc_linspace27()) expect.push_back(x > 0 ? x : alpha * (std::exp(x) - 1.0));
    // Not in place: the input is untouched, the gradient flows.
    const Tensor x = make(misc_linspace27(), {3, 3, 3}).requires_grad_();
    nn::ELU model(nn::ELUOptions().alpha(alpha));
    Tensor y = model(x);
    EXPECT_TRUE(all_close(y, expect, {3, 3, 3}, 1e-12, 1e-12));
    EXPECT_EQ(values(x), misc_linspace27());
    y.sum().backward();
    std::vector<double> grad;
    for (const double v : misc_linspace27()) grad.push_back(v > 0 ? 1.0 : alpha * std::exp(v));
    EXPECT_TRUE(all_close(x.grad(), grad, {3, 3, 3}, 1e-12, 1e-12));
    // In place: the module returns its input, which now holds the result.
    Tensor z = make(misc_linspace27(), {3, 3, 3});
    nn::ELU inplace(nn::ELUOptions().alpha(alpha).inplace(true));
    const Tensor out = inplace(z);
    EXPECT_EQ(out.data_ptr<double>(), z.data_ptr<double>());
    EXPECT_TRUE(all_close(z, expect, {3, 3, 3}, 1e-12, 1e-12));
  }
  EXPECT_EQ(nn::ELU(nn::ELUOptions().alpha(0.5).inplace(true))->extra_repr(), "alpha=0.5, inplace=True");
  EXPECT_EQ(nn::ELU()->extra_repr(), "alpha=1.0");
}

TEST(ModulesMiscInplace, LeakyReLUWritesIntoItsInputWhenInplace) {
  for (const double slope : {0.0, 0.42, 1.0}) {
    std::vector<double> expect;
    for (const double x : misc_linspace27()) expect.push_back(x < 0 ? x * slope : x);
    const Tensor x = make(misc_linspace27(), {3, 3, 3}).requires_grad_();
    Tensor y = nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(slope))(x);
    EXPECT_TRUE(all_close(y, expect, {3, 3, 3}, 1e-12, 1e-12));
    y.sum().backward();
    std::vector<double> grad;
    // PyTorch's backward takes the slope at 0 (x > 0 ? 1 : slope); the linspace holds an exact 0.
    for (const double v : misc_linspace27()) grad.push_back(v > 0 ? 1.0 : slope);
    EXPECT_TRUE(all_close(x.grad(), grad, {3, 3, 3}, 1e-12, 1e-12));

    Tensor z = make(misc_linspace27(), {3, 3, 3});
    const Tensor out = nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(slope).inplace(true))(z);
    EXPECT_EQ(out.data_ptr<double>(), z.data_ptr<double>());
    EXPECT_TRUE(all_close(z, expect, {3, 3, 3}, 1e-12, 1e-12));
  }
  // The functionals take the option too.
  Tensor w = make({-2.0, 3.0}, {2});
  F::leaky_relu(w, F::LeakyReLUFuncOptions().negative_slope(0.25).inplace(true));
  EXPECT_EQ(values(w), (std::vector<double>{-0.5, 3.0}));
  Tensor e = make({-1.0, 3.0}, {2});
  F::elu(e, F::ELUFuncOptions().alpha(2.0).inplace(true));
  EXPECT_TRUE(all_close(e, {2.0 * (std::exp(-1.0) - 1.0), 3.0}, {2}, 1e-12, 1e-12));
  EXPECT_EQ(nn::LeakyReLU(nn::LeakyReLUOptions().inplace(true))->extra_repr(), "negative_slope=0.01, inplace=True");
}

TEST(ModulesMiscSoftmax2d, NormalisesOverTheChannels) {
  // LibTorch's case: arange(24) as (1, 2, 3, 4); out[0, c, h, w] = exp(x[c, h, w]) / sum_c' exp(x[c', h, w]).
  std::vector<double> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  const Tensor x = make(v, {1, 2, 3, 4});
  std::vector<double> expect(24);
  for (size_t s = 0; s < 12; ++s) {
    const double denom = std::exp(v[s]) + std::exp(v[12 + s]);
    expect[s] = std::exp(v[s]) / denom;
    expect[12 + s] = std::exp(v[12 + s]) / denom;
  }
  nn::Softmax2d m;
  EXPECT_TRUE(all_close(m(x), expect, {1, 2, 3, 4}, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(m(x.view({2, 3, 4})), expect, {2, 3, 4}, 1e-12, 1e-12));  // one image (C, H, W)
  EXPECT_TRUE(throws_error([&] { m(x.view({24})); }, {"Softmax2d", "(N, C, H, W)", "[24]"}));
  std::ostringstream printed;
  {
    nn::PrintStyleGuard guard(nn::PrintStyle::Python);
    printed << *m;
  }
  EXPECT_EQ(printed.str(), "Softmax2d()");
}

// x (2, 3, 2, 2, 2), float64, x[i] = i + 1.
Tensor misc_volumes() {
  std::vector<double> v(48);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1);
  return make(v, {2, 3, 2, 2, 2});
}

TEST(ModulesMiscDropout3d, ZeroesWholeChannelsOfVolumes) {
  const double p = 0.5;
  nn::Dropout3d drop{nn::Dropout3dOptions(p)};
  manual_seed(21);
  const Tensor x = misc_volumes().requires_grad_();
  Tensor y = drop(x);
  Generator g(21);  // one uniform per (n, c), 8 elements each
  std::vector<double> expect(48), grad(48);
  int kept = 0;
  for (size_t nc = 0; nc < 6; ++nc) {
    const bool keep = g.next_double() < 1.0 - p;  // keep ~ bernoulli(1 - p), as PyTorch draws it
    kept += keep;
    for (size_t s = 0; s < 8; ++s) {
      expect[nc * 8 + s] = keep ? static_cast<double>(nc * 8 + s + 1) * 2.0 : 0.0;
      grad[nc * 8 + s] = keep ? 2.0 : 0.0;
    }
  }
  ASSERT_GT(kept, 0);
  ASSERT_LT(kept, 6);
  EXPECT_EQ(values(y), expect);
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), grad);

  // One volume (C, D, H, W), in place: one uniform per channel; the input is the output.
  Tensor z = misc_volumes().view({6, 2, 2, 2}).clone();
  manual_seed(5);
  const Tensor out = nn::Dropout3d(nn::Dropout3dOptions(0.25).inplace(true))(z);
  EXPECT_EQ(out.data_ptr<double>(), z.data_ptr<double>());
  Generator g5(5);
  for (size_t c = 0; c < 6; ++c) {
    const bool keep = g5.next_double() < 1.0 - 0.25;  // keep ~ bernoulli(1 - p), as PyTorch draws it
    for (size_t s = 0; s < 8; ++s)
      EXPECT_DOUBLE_EQ(values(z)[c * 8 + s], keep ? static_cast<double>(c * 8 + s + 1) / 0.75 : 0.0) << c;
  }

  drop->eval();
  EXPECT_EQ(values(drop(misc_volumes())), values(misc_volumes()));
  EXPECT_EQ(drop->extra_repr(), "p=0.5, inplace=False");
  EXPECT_TRUE(throws_error([] { nn::Dropout3d(1.5); }, {"Dropout3d", "[0, 1]", "1.5"}));
  EXPECT_TRUE(throws_error([] { nn::Dropout3d()(zeros({4, 5, 6})); }, {"dropout3d", "(N, C, D, H, W)", "[4, 5, 6]"}));
  EXPECT_EQ(values(F::dropout3d(misc_volumes(), F::Dropout3dFuncOptions().p(1.0))), std::vector<double>(48, 0.0));
}

// PyTorch's alpha dropout constants for p: a = 1 / sqrt((alpha'^2 p + 1)(1 - p)) with SELU's
// alpha' = alpha * scale = 1.6732632423543772 * 1.0507009873554805.
struct MiscAlphaAffine {
  double a, kept_shift, dropped;
};
MiscAlphaAffine misc_alpha_affine(double p) {
  const double alpha = 1.6732632423543772848170429916717 * 1.0507009873554804934193349852946;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1.0) * (1.0 - p));
  return {a, alpha * a * p, -alpha * a * (1.0 - p)};
}

TEST(ModulesMiscAlphaDropout, KeptElementsAreAffineDroppedOnesSaturate) {
  const double p = 0.3;
  const auto c = misc_alpha_affine(p);
  nn::AlphaDropout drop{nn::AlphaDropoutOptions(p)};
  manual_seed(3);
  const Tensor x = misc_volumes().requires_grad_();
  Tensor y = drop(x);
  Generator g(3);
  std::vector<double> expect(48), grad(48);
  int kept = 0;
  for (size_t i = 0; i < 48; ++i) {
    const bool keep = g.next_double() < 1.0 - p;  // keep ~ bernoulli(1 - p), as PyTorch draws it
    kept += keep;
    expect[i] = keep ? c.a * static_cast<double>(i + 1) + c.kept_shift : c.dropped;
    grad[i] = keep ? c.a : 0.0;
  }
  ASSERT_GT(kept, 0);
  ASSERT_LT(kept, 48);
  EXPECT_TRUE(all_close(y, expect, {2, 3, 2, 2, 2}, 1e-12, 1e-12));
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), grad, {2, 3, 2, 2, 2}, 1e-12, 1e-12));

  // In place, same draws.
  Tensor z = misc_volumes();
  manual_seed(3);
  const Tensor out = nn::AlphaDropout(nn::AlphaDropoutOptions(p).inplace(true))(z);
  EXPECT_EQ(out.data_ptr<double>(), z.data_ptr<double>());
  EXPECT_TRUE(all_close(z, expect, {2, 3, 2, 2, 2}, 1e-12, 1e-12));

  // Eval (and the functional's default training = false, LibTorch's) is the identity; p = 1 zeroes.
  drop->eval();
  EXPECT_EQ(values(drop(misc_volumes())), values(misc_volumes()));
  EXPECT_EQ(values(F::alpha_dropout(misc_volumes(), F::AlphaDropoutFuncOptions().p(0.9))), values(misc_volumes()));
  EXPECT_EQ(values(F::alpha_dropout(misc_volumes(), F::AlphaDropoutFuncOptions().p(1.0).training(true))),
            std::vector<double>(48, 0.0));
  EXPECT_EQ(nn::AlphaDropout(nn::AlphaDropoutOptions(0.2).inplace(true))->extra_repr(), "p=0.2, inplace=True");
  EXPECT_TRUE(throws_error([] { nn::AlphaDropout(-0.1); }, {"AlphaDropout", "[0, 1]", "-0.1"}));
  EXPECT_TRUE(throws_error([] { F::alpha_dropout(ones({3}), F::AlphaDropoutFuncOptions().p(2.0)); },
                           {"alpha_dropout", "[0, 1]", "2.0"}));
  EXPECT_TRUE(throws_error([] { nn::AlphaDropout()(ones({3}, kInt64)); }, {"alpha_dropout", "floating-point"}));
}

TEST(ModulesMiscAlphaDropout, FeatureAlphaDropoutDrawsPerChannel) {
  const double p = 0.5;
  const auto c = misc_alpha_affine(p);
  nn::FeatureAlphaDropout drop{nn::FeatureAlphaDropoutOptions(p)};
  manual_seed(21);
  const Tensor y = drop(misc_volumes());
  Generator g(21);
  std::vector<double> expect(48);
  for (size_t nc = 0; nc < 6; ++nc) {
    const bool keep = g.next_double() < 1.0 - p;  // keep ~ bernoulli(1 - p), as PyTorch draws it
    for (size_t s = 0; s < 8; ++s)
      expect[nc * 8 + s] = keep ? c.a * static_cast<double>(nc * 8 + s + 1) + c.kept_shift : c.dropped;
  }
  EXPECT_TRUE(all_close(y, expect, {2, 3, 2, 2, 2}, 1e-12, 1e-12));
  drop->eval();
  EXPECT_EQ(values(drop(misc_volumes())), values(misc_volumes()));
  EXPECT_EQ(drop->extra_repr(), "p=0.5, inplace=False");
  EXPECT_TRUE(throws_error([] { nn::FeatureAlphaDropout()(ones({3})); }, {"feature_alpha_dropout", "at least 2 dims"}));
}

TEST(ModulesMiscPrint, LibTorchLinesOfTheNewModules) {
  const auto line = [](const nn::Module& m) {
    std::ostringstream s;
    nn::PrintStyleGuard guard(nn::PrintStyle::LibTorch);
    s << m;
    return s.str();
  };
  EXPECT_EQ(line(*nn::Dropout3d()), "graft::nn::Dropout3d(p=0.5, inplace=false)");
  EXPECT_EQ(line(*nn::Dropout3d(nn::Dropout3dOptions().p(0.42).inplace(true))),
            "graft::nn::Dropout3d(p=0.42, inplace=true)");
  EXPECT_EQ(line(*nn::AlphaDropout(nn::AlphaDropoutOptions(0.2))), "graft::nn::AlphaDropout(p=0.2, inplace=false)");
  EXPECT_EQ(line(*nn::FeatureAlphaDropout(nn::FeatureAlphaDropoutOptions(0.2).inplace(true))),
            "graft::nn::FeatureAlphaDropout(p=0.2, inplace=true)");
  EXPECT_EQ(line(*nn::Softmax2d()), "graft::nn::Softmax2d()");
  EXPECT_EQ(line(*nn::ELU()), "graft::nn::ELU(alpha=1)");
  EXPECT_EQ(line(*nn::ELU(nn::ELUOptions().alpha(42.42).inplace(true))), "graft::nn::ELU(alpha=42.42, inplace=true)");
  EXPECT_EQ(line(*nn::LeakyReLU()), "graft::nn::LeakyReLU(negative_slope=0.01)");
  EXPECT_EQ(line(*nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.42).inplace(true))),
            "graft::nn::LeakyReLU(negative_slope=0.42, inplace=true)");
}

TEST(ModulesMiscFunctional, BindsArgumentsAfterTheInput) {
  // Functional(fn, args...) calls fn(input, args...): leaky_relu with slope 0.25, elu with alpha 2.
  nn::Functional leaky(graft::leaky_relu, 0.25);
  EXPECT_EQ(values(leaky(make({-4.0, 2.0}, {2}))), (std::vector<double>{-1.0, 2.0}));
  nn::Functional elu(graft::elu, /*alpha=*/2);
  EXPECT_TRUE(all_close(elu(make({-1.0, 0.5}, {2})), {2.0 * (std::exp(-1.0) - 1.0), 0.5}, {2}, 1e-12, 1e-12));
  nn::Functional with_options(F::elu, F::ELUFuncOptions().alpha(0.5));
  EXPECT_TRUE(all_close(with_options(make({-2.0}, {1})), {0.5 * (std::exp(-2.0) - 1.0)}, {1}, 1e-12, 1e-12));
}

TEST(ModulesMiscLoss, TripletMarginWithDistanceReductionType) {
  static_assert(std::is_same_v<nn::TripletMarginWithDistanceLossOptions::reduction_t, Reduction>);
  const std::vector<nn::TripletMarginWithDistanceLossOptions::reduction_t> reductions = {kSum, kMean, kNone};
  EXPECT_EQ(reductions.size(), 3u);
  // d(a, p) = 1, d(a, n) = 3 (pairwise_distance, eps 1e-6 on the difference), margin 1: loss 0.
  const Tensor a = make({0.0, 0.0}, {1, 2}), pos = make({1.0, 0.0}, {1, 2}), neg = make({3.0, 0.0}, {1, 2});
  nn::TripletMarginWithDistanceLoss loss(nn::TripletMarginWithDistanceLossOptions().reduction(reductions[0]));
  EXPECT_TRUE(all_close(loss(a, pos, neg), {0.0}, {}, 1e-12, 0.0));
}

TEST(ModulesMiscEmbedding, MaxNormRenormalisesTheLookedUpRowsInPlace) {
  // Rows: [3, 4] (norm 5), [0.6, 0.8] (norm 1), [6, 8] (norm 10); max_norm 2 looks up rows 0 and 1 only.
  const Tensor table = make({3.0, 4.0, 0.6, 0.8, 6.0, 8.0}, {3, 2});
  nn::Embedding emb = nn::Embedding::from_pretrained(table, nn::EmbeddingFromPretrainedOptions().max_norm(2.0));
  EXPECT_FALSE(emb->weight.requires_grad());  // frozen by default
  const Tensor out = emb(make({0, 1, 0}, {3}, kInt64));
  const double s0 = 2.0 / (5.0 + 1e-7);  // PyTorch's embedding_renorm_: max_norm / (norm + 1e-7)
  EXPECT_TRUE(all_close(out, {3.0 * s0, 4.0 * s0, 0.6, 0.8, 3.0 * s0, 4.0 * s0}, {3, 2}, 1e-12, 1e-12));
  // The weight itself was scaled; the row not looked up (norm 10) is untouched.
  EXPECT_TRUE(all_close(emb->weight, {3.0 * s0, 4.0 * s0, 0.6, 0.8, 6.0, 8.0}, {3, 2}, 1e-12, 1e-12));
  // norm_type 1: |3| + |4| = 7 > 2.
  nn::Embedding l1(nn::EmbeddingOptions(3, 2)._weight(table).max_norm(2.0).norm_type(1.0));
  const double s1 = 2.0 / (7.0 + 1e-7);
  EXPECT_TRUE(all_close(l1(make({0}, {1}, kInt64)), {3.0 * s1, 4.0 * s1}, {1, 2}, 1e-12, 1e-12));
}

TEST(ModulesMiscEmbedding, ScaleGradByFreqDividesByTheIndexCount) {
  const Tensor table = make({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {3, 2});
  nn::Embedding emb = nn::Embedding::from_pretrained(
      table, nn::EmbeddingFromPretrainedOptions().freeze(false).scale_grad_by_freq(true).padding_idx(2));
  const Tensor idx = make({0, 1, 0, 2}, {2, 2}, kInt64);
  const Tensor out = emb(idx);
  EXPECT_TRUE(all_close(out, {1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 5.0, 6.0}, {2, 2, 2}, 0.0, 0.0));  // values unchanged
  const Tensor c = make({1.0, 10.0, 100.0, 1000.0, 2.0, 20.0, 7.0, 70.0}, {2, 2, 2});
  (out * c).sum().backward();
  // Row 0 is looked up twice: (c[0] + c[2]) / 2; row 1 once; row 2 is the padding row (no gradient).
  EXPECT_TRUE(all_close(emb->weight.grad(), {1.5, 15.0, 100.0, 1000.0, 0.0, 0.0}, {3, 2}, 1e-12, 1e-12));
  EXPECT_EQ(emb->extra_repr(), "3, 2, padding_idx=2, scale_grad_by_freq=True");
}

TEST(ModulesMiscEmbedding, OptionsPrintAndSparseIsRefused) {
  nn::PrintStyleGuard guard(nn::PrintStyle::LibTorch);
  const auto line = [](const nn::Module& m) {
    std::ostringstream s;
    s << m;
    return s.str();
  };
  EXPECT_EQ(line(*nn::Embedding(nn::EmbeddingOptions(10, 2))),
            "graft::nn::Embedding(num_embeddings=10, embedding_dim=2)");
  nn::Embedding all(
      nn::EmbeddingOptions(10, 2).padding_idx(3).max_norm(2).norm_type(2.5).scale_grad_by_freq(true).sparse(true));
  EXPECT_EQ(line(*all),
            "graft::nn::Embedding(num_embeddings=10, embedding_dim=2, padding_idx=3, max_norm=2, norm_type=2.5, "
            "scale_grad_by_freq=true, sparse=true)");
  EXPECT_EQ(all->extra_repr(),
            "10, 2, padding_idx=3, max_norm=2.0, norm_type=2.5, scale_grad_by_freq=True, sparse=True");
  EXPECT_TRUE(throws_error([&] { all(make({0}, {1}, kInt64)); }, {"embedding", "sparse"}));
  EXPECT_TRUE(throws_error([] { nn::Embedding::from_pretrained(zeros({3})); }, {"Embedding::from_pretrained", "[3]"}));
}

TEST(ModulesMiscUnflatten, SplitsOneDimIntoSeveral) {
  nn::Unflatten unflatten(nn::UnflattenOptions(0, {2, 2}));
  const Tensor out = unflatten(make({1, 2, 3, 4}, {4}, kInt64));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(out), (std::vector<double>{1, 2, 3, 4}));
  // (2, 6, 5) with dim -2 split into (-1, 3): (2, 2, 3, 5), the same elements in order.
  std::vector<double> v(60);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  const Tensor y = nn::Unflatten(-2, std::vector<int64_t>{-1, 3})(make(v, {2, 6, 5}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 2, 3, 5}));
  EXPECT_EQ(values(y), v);
  EXPECT_EQ(unflatten->extra_repr(), "dim=0, unflattened_size=(2, 2)");
  {
    nn::PrintStyleGuard guard(nn::PrintStyle::LibTorch);
    std::ostringstream printed;
    printed << *unflatten;
    EXPECT_EQ(printed.str(), "graft::nn::Unflatten(dim=0, unflattened_size={2, 2})");
  }
  EXPECT_TRUE(throws_error([&] { unflatten(zeros({5})); }, {"Unflatten", "product", "{2, 2}", "[5]"}));
  EXPECT_TRUE(throws_error([&] { unflatten(zeros({1, 4})); }, {"Unflatten", "product", "[1, 4]"}));  // dim 0 has 1
  EXPECT_TRUE(throws_error([] { nn::Unflatten(0, std::vector<int64_t>{-1, -1}); }, {"Unflatten", "-1"}));
  EXPECT_TRUE(throws_error([] { nn::Unflatten(3, std::vector<int64_t>{2, 2})(zeros({4})); }, {"Unflatten", "dim 3"}));
}

TEST(ModulesMiscUnfold, BracedKernelSizes) {
  // arange(2, 14) as (1, 2, 2, 3), 2x2 blocks, padding 1, stride 2: padded rows 2 oh - 1 .. 2 oh,
  // cols 2 ow - 1 .. 2 ow of each channel, worked out by hand.
  std::vector<double> v(12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 2.0 + static_cast<double>(i);
  nn::Unfold model(nn::UnfoldOptions({2, 2}).padding(1).stride(2));
  EXPECT_TRUE(all_close(model(make(v, {1, 2, 2, 3})), {0, 0, 0, 6,  0, 0, 5,  7,  0, 3, 0, 0, 2, 4,  0, 0,  //
                                                       0, 0, 0, 12, 0, 0, 11, 13, 0, 9, 0, 0, 8, 10, 0, 0},
                        {1, 8, 4}, 0.0, 0.0));
  nn::PrintStyleGuard guard(nn::PrintStyle::LibTorch);
  std::ostringstream printed;
  printed << *nn::Unfold(IntArrayRef({2, 4}));
  EXPECT_EQ(printed.str(), "graft::nn::Unfold(kernel_size=[2, 4], dilation=[1, 1], padding=[0, 0], stride=[1, 1])");
}

}  // namespace
}  // namespace graft::test
