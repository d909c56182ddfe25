// The activations, cumulative ops, distances and losses added for issue 15 ("beyond the four
// programs") against values and input gradients computed by PyTorch itself.
// tests/fixtures/act_loss_fixtures.txt is written by tests/fixtures/gen_act_loss_fixtures.py (format
// in its docstring); this test only reads it, so it needs no PyTorch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../support/fixture_file.h"
#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

const std::vector<FixtureCase>& act_loss_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("act_loss_fixtures.txt");
  return cases;
}

// The graft call a case names, with its options rebuilt from the params.
Tensor act_loss_call(const FixtureCase& c, const TensorList& a) {
  auto num = [&](const char* k, double dflt) { return c.number(k, dflt); };
  auto flag = [&](const char* k) { return num(k, 0) != 0; };
  auto dim = [&](int64_t dflt) { return static_cast<int64_t>(num("dim", static_cast<double>(dflt))); };
  const std::string red_name = c.params.count("reduction") ? c.params.at("reduction") : "mean";
  const Reduction red = red_name == "none" ? kNone : red_name == "sum" ? kSum : kMean;
  const std::string& fn = c.kind;
  if (fn == "selu") return F::selu(a[0]);
  if (fn == "mish") return F::mish(a[0]);
  if (fn == "hardswish") return F::hardswish(a[0]);
  if (fn == "hardsigmoid") return F::hardsigmoid(a[0]);
  if (fn == "relu6") return F::relu6(a[0]);
  if (fn == "hardtanh")
    return F::hardtanh(a[0], F::HardtanhFuncOptions().min_val(num("min_val", -1)).max_val(num("max_val", 1)));
  if (fn == "glu") return F::glu(a[0], F::GLUFuncOptions(dim(-1)));
  if (fn == "softmin") return F::softmin(a[0], F::SoftminFuncOptions(dim(1)));
  if (fn == "cumsum") return a[0].cumsum(dim(0));
  if (fn == "cumprod") return cumprod(a[0], dim(0));
  if (fn == "cosine_similarity")
    return F::cosine_similarity(a[0], a[1], F::CosineSimilarityFuncOptions().dim(dim(1)).eps(num("eps", 1e-8)));
  if (fn == "pairwise_distance")
    return F::pairwise_distance(
        a[0], a[1], F::PairwiseDistanceFuncOptions().p(num("p", 2)).eps(num("eps", 1e-6)).keepdim(flag("keepdim")));
  if (fn == "normalize")
    return F::normalize(a[0], F::NormalizeFuncOptions().p(num("p", 2)).dim(dim(1)).eps(num("eps", 1e-12)));
  if (fn == "huber_loss") return F::huber_loss(a[0], a[1], F::HuberLossFuncOptions(red).delta(num("delta", 1)));
  if (fn == "kl_div") {
    const F::KLDivReduction r = red_name == "batchmean" ? F::KLDivReduction(kBatchMean) : F::KLDivReduction(red);
    return F::kl_div(a[0], a[1], F::KLDivFuncOptions(r).log_target(flag("log_target")));
  }
  if (fn == "cosine_embedding_loss")
    return F::cosine_embedding_loss(a[0], a[1], a[2],
                                    F::CosineEmbeddingLossFuncOptions().margin(num("margin", 0)).reduction(red));
  if (fn == "margin_ranking_loss")
    return F::margin_ranking_loss(a[0], a[1], a[2],
                                  F::MarginRankingLossFuncOptions().margin(num("margin", 0)).reduction(red));
  if (fn == "triplet_margin_loss")
    return F::triplet_margin_loss(a[0], a[1], a[2],
                                  F::TripletMarginLossFuncOptions()
                                      .margin(num("margin", 1))
                                      .p(num("p", 2))
                                      .swap(flag("swap"))
                                      .reduction(red));
  if (fn == "cross_entropy")
    return F::cross_entropy(a[0], a[1],
                            F::CrossEntropyFuncOptions()
                                .weight(a[2])
                                .ignore_index(static_cast<int64_t>(num("ignore_index", -100)))
                                .reduction(red)
                                .label_smoothing(num("label_smoothing", 0)));
  if (fn == "nll_loss")
    return F::nll_loss(a[0], a[1],
                       F::NLLLossFuncOptions().weight(a[2]).ignore_index(static_cast<int64_t>(num("ignore_index", -100)))
                           .reduction(red));
  throw std::runtime_error("unknown function " + fn);
}

TEST(ActLossFixtures, FileLoads) {
  ASSERT_NO_THROW(act_loss_fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : act_loss_fixtures()) ++per_fn[c.kind];
  for (const char* fn : {"selu", "mish", "hardswish", "hardsigmoid", "hardtanh", "relu6", "glu", "softmin", "cumsum",
                         "cumprod", "cosine_similarity", "pairwise_distance", "normalize", "huber_loss", "kl_div",
                         "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "cross_entropy",
                         "nll_loss"})
    EXPECT_GT(per_fn[fn], 0) << "no fixture for " << fn;
}

class ActLossFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(ActLossFixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = act_loss_fixtures()[GetParam()];
  // PyTorch's hardsigmoid backward uses 1/6 rounded to float32 even for float64 (about 3e-9 off);
  // graft uses 1/6.
  const double tol = 1e-10, grad_tol = c.kind == "hardsigmoid" ? 1e-7 : 1e-10;
  TensorList args;
  for (int i = 0; c.tensors.count("arg" + std::to_string(i)); ++i) {
    Tensor t = c.tensor("arg" + std::to_string(i)).clone();
    if (c.tensors.count("grad" + std::to_string(i))) t.requires_grad_();
    args.push_back(t);
  }
  Tensor out;
  try {
    out = act_loss_call(c, args);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_TRUE(all_close(out, c.tensor("out"), tol, tol)) << "value";
  if (!c.has("grad_output")) return;
  out.backward(c.tensor("grad_output"));
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string role = "grad" + std::to_string(i);
    if (!c.tensors.count(role)) continue;
    ASSERT_TRUE(args[i].grad().defined()) << "no gradient for arg " << i;
    EXPECT_TRUE(all_close(args[i].grad(), c.tensor(role), grad_tol, grad_tol)) << "gradient of arg " << i;
  }
}

size_t act_loss_fixture_count() {
  try {
    return act_loss_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, ActLossFixture, ::testing::Range<size_t>(0, act_loss_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return act_loss_fixtures()[info.param].name;
                         });

}  // namespace
}  // namespace graft::test
