// The activation, loss and distance modules added for issue 15 ("beyond the four programs"):
// LibTorch's Options spellings and defaults, names, printing, and forward equal to the functional.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "../support/nn_util.h"
#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

Tensor sample() { return make({-4.0, -3.0, -1.0, 0.0, 0.5, 3.0, 6.0, 7.5}, {2, 4}); }

TEST(ActivationModules, OptionsDefaultsAndSpellings) {
  EXPECT_FALSE(nn::SELUOptions().inplace());
  EXPECT_TRUE(nn::SELUOptions(true).inplace());
  EXPECT_EQ(nn::HardtanhOptions().min_val(), -1.0);
  EXPECT_EQ(nn::HardtanhOptions().max_val(), 1.0);
  EXPECT_FALSE(nn::HardtanhOptions().inplace());
  EXPECT_FALSE(nn::ReLU6Options().inplace());
  EXPECT_EQ(nn::GLUOptions().dim(), -1);
  EXPECT_EQ(nn::GLUOptions(0).dim(), 0);
  EXPECT_EQ(nn::SoftminOptions(2).dim(), 2);
  EXPECT_EQ(F::SoftminFuncOptions(1).dtype(), std::nullopt);
  EXPECT_EQ(nn::ELUOptions().alpha(), 1.0);
}

TEST(ActivationModules, ForwardEqualsTheFunctionals) {
  const Tensor x = sample();
  EXPECT_TRUE(all_close(nn::SELU()(x), F::selu(x)));
  EXPECT_TRUE(all_close(nn::Mish()(x), F::mish(x)));
  EXPECT_TRUE(all_close(nn::Hardswish()(x), F::hardswish(x)));
  EXPECT_TRUE(all_close(nn::Hardsigmoid()(x), F::hardsigmoid(x)));
  EXPECT_TRUE(all_close(nn::Hardtanh(nn::HardtanhOptions().min_val(-2).max_val(2))(x),
                        F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2).max_val(2))));
  EXPECT_TRUE(all_close(nn::ReLU6()(x), F::relu6(x)));
  EXPECT_TRUE(all_close(nn::GLU()(x), F::glu(x)));
  EXPECT_TRUE(all_close(nn::GLU(0)(x), F::glu(x, 0)));
  EXPECT_TRUE(all_close(nn::Softmin(1)(x), F::softmax(-x, 1)));
  EXPECT_TRUE(all_close(nn::ELU(nn::ELUOptions().alpha(0.5))(x), F::elu(x, F::ELUFuncOptions().alpha(0.5))));
  EXPECT_TRUE(all_close(nn::SiLU()(x), F::silu(x)));
  // hardswish at -3 and 3, hardsigmoid and relu6 at the edges
  EXPECT_TRUE(all_close(nn::Hardswish()(x), {-0.0, -0.0, -1.0 / 3, 0.0, 0.5 * 3.5 / 6, 3.0, 6.0, 7.5}, {2, 4}));
  EXPECT_TRUE(all_close(nn::ReLU6()(x), {0, 0, 0, 0, 0.5, 3, 6, 6}, {2, 4}));
}

TEST(ActivationModules, NamesAndPrinting) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  EXPECT_EQ(nn::SELU()->name(), "SELU");
  EXPECT_EQ(nn::Hardswish()->name(), "Hardswish");
  EXPECT_EQ(repr(*nn::Hardtanh()), "Hardtanh(min_val=-1.0, max_val=1.0)");
  EXPECT_EQ(repr(*nn::GLU()), "GLU(dim=-1)");
  EXPECT_EQ(repr(*nn::Softmin(1)), "Softmin(dim=1)");
  EXPECT_EQ(repr(*nn::ReLU6(true)), "ReLU6(inplace=True)");
  EXPECT_EQ(repr(*nn::Mish()), "Mish()");
  EXPECT_TRUE(throws_error([] { nn::Hardtanh(nn::HardtanhOptions().min_val(1).max_val(0)); },
                           {"Hardtanh", "max_val > min_val"}));
}

TEST(ActivationModules, InplaceModulesOverwriteTheirInput) {
  Tensor x = make({-2.0, 8.0}, {2});
  nn::ReLU6 relu6(nn::ReLU6Options(true));
  const Tensor y = relu6(x);
  EXPECT_EQ(values(x), (std::vector<double>{0.0, 6.0}));
  EXPECT_EQ(y.data_ptr<double>(), x.data_ptr<double>());
}

TEST(LossModules, OptionsDefaultsAndSpellings) {
  EXPECT_EQ(nn::HuberLossOptions().delta(), 1.0);
  EXPECT_EQ(nn::HuberLossOptions().reduction(), kMean);
  EXPECT_EQ(nn::HuberLossOptions(kSum).reduction(), kSum);
  EXPECT_EQ(nn::KLDivLossOptions().reduction().reduction(), kMean);
  EXPECT_FALSE(nn::KLDivLossOptions().reduction().batch_mean());
  EXPECT_TRUE(nn::KLDivLossOptions(kBatchMean).reduction().batch_mean());
  EXPECT_TRUE(nn::KLDivLossOptions().reduction(kBatchMean).reduction().batch_mean());
  EXPECT_FALSE(nn::KLDivLossOptions().log_target());
  EXPECT_EQ(nn::CosineEmbeddingLossOptions().margin(), 0.0);
  EXPECT_EQ(nn::MarginRankingLossOptions().margin(), 0.0);
  EXPECT_EQ(nn::TripletMarginLossOptions().margin(), 1.0);
  EXPECT_EQ(nn::TripletMarginLossOptions().p(), 2.0);
  EXPECT_EQ(nn::TripletMarginLossOptions().eps(), 1e-6);
  EXPECT_FALSE(nn::TripletMarginLossOptions().swap());
  EXPECT_EQ(nn::CrossEntropyLossOptions().label_smoothing(), 0.0);
  EXPECT_FALSE(nn::CrossEntropyLossOptions().weight().defined());
  EXPECT_FALSE(nn::NLLLossOptions().weight().defined());
  EXPECT_EQ(nn::SmoothL1LossOptions().beta(), 1.0);
  EXPECT_FALSE(nn::BCELossOptions().weight().defined());
  EXPECT_EQ(nn::CosineSimilarityOptions().dim(), 1);
  EXPECT_EQ(nn::CosineSimilarityOptions().eps(), 1e-8);
  EXPECT_EQ(nn::PairwiseDistanceOptions().p(), 2.0);
  EXPECT_EQ(nn::PairwiseDistanceOptions().eps(), 1e-6);
  EXPECT_FALSE(nn::PairwiseDistanceOptions().keepdim());
  EXPECT_EQ(F::NormalizeFuncOptions().p(), 2.0);
  EXPECT_EQ(F::NormalizeFuncOptions().dim(), 1);
  EXPECT_EQ(F::NormalizeFuncOptions().eps(), 1e-12);
}

TEST(LossModules, ForwardEqualsTheFunctionals) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Tensor a = make({0.5, 2.0, -1.0, 0.1, 1.2, -0.3}, {2, 3});
  const Tensor b = make({0.0, 0.4, 1.0, 0.2, -0.7, 0.9}, {2, 3});
  const Tensor c = make({1.0, -0.2, 0.3, 0.8, 0.1, -1.5}, {2, 3});
  const Tensor t = make({1.0, -1.0}, {2});
  EXPECT_TRUE(all_close(nn::HuberLoss(nn::HuberLossOptions().delta(0.5))(a, b),
                        F::huber_loss(a, b, F::HuberLossFuncOptions().delta(0.5))));
  const Tensor logp = log_softmax(a, 1), p = softmax(b, 1);
  EXPECT_TRUE(all_close(nn::KLDivLoss(nn::KLDivLossOptions(kBatchMean))(logp, p),
                        F::kl_div(logp, p, F::KLDivFuncOptions().reduction(kBatchMean))));
  EXPECT_TRUE(all_close(nn::CosineEmbeddingLoss(nn::CosineEmbeddingLossOptions().margin(0.1))(a, b, t),
                        F::cosine_embedding_loss(a, b, t, F::CosineEmbeddingLossFuncOptions().margin(0.1))));
  EXPECT_TRUE(all_close(nn::MarginRankingLoss(nn::MarginRankingLossOptions().margin(0.3))(a.select(1, 0), b.select(1, 0), t),
                        F::margin_ranking_loss(a.select(1, 0), b.select(1, 0), t,
                                               F::MarginRankingLossFuncOptions().margin(0.3))));
  EXPECT_TRUE(all_close(nn::TripletMarginLoss(nn::TripletMarginLossOptions().swap(true))(a, b, c),
                        F::triplet_margin_loss(a, b, c, F::TripletMarginLossFuncOptions().swap(true))));
  EXPECT_TRUE(all_close(nn::CosineSimilarity()(a, b), F::cosine_similarity(a, b)));
  EXPECT_TRUE(all_close(nn::PairwiseDistance(nn::PairwiseDistanceOptions().p(1))(a, b),
                        F::pairwise_distance(a, b, F::PairwiseDistanceFuncOptions().p(1))));
  EXPECT_EQ(repr(*nn::PairwiseDistance()), "PairwiseDistance(p=2.0, eps=1e-06)");
  EXPECT_EQ(repr(*nn::CosineSimilarity()), "CosineSimilarity(dim=1, eps=1e-08)");
  // CrossEntropyLoss with class weights and label smoothing together, as a buffer
  const Tensor w = make({0.5, 2.0, 1.0}, {3});
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(w).label_smoothing(0.1));
  const Tensor y = tensor({2, 0});
  EXPECT_TRUE(all_close(ce(a, y), F::cross_entropy(a, y, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.1))));
}

}  // namespace
}  // namespace graft::test
