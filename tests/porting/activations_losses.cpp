// LibTorch-style source (tests/porting, docs/porting.md): the activations, cumulative ops,
// distances and losses beyond the four example programs. Ported by tools/port-from-libtorch.sh and
// built against graft; where LibTorch is installed, also built unchanged against it and the outputs
// compared. The expected values are PyTorch 1.13's (computed in float64).
// LibTorch 1.13 has no F::hardswish / F::hardsigmoid nor Hardswish / Hardsigmoid modules, so this
// program calls the ATen functions torch::hardswish / torch::hardsigmoid instead.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "porting_checks.h"

namespace {

namespace F = torch::nn::functional;
using porting::check;
using porting::show;

torch::Tensor f64(const torch::Tensor& t) { return t.to(torch::kFloat64); }

}  // namespace

int main() {
  // ---- activations: values at the kinks and their gradients (hardswish's gradient at 3 is left out:
  // LibTorch 1.13's vectorised and scalar kernels disagree there) ----
  auto x = f64(torch::tensor({-3.0, -1.0, 0.0, 0.5, 2.5, 6.0})).requires_grad_();
  show("selu", F::selu(x), {-1.67056873, -1.11133074, 0, 0.525350494, 2.62675247, 6.30420592});
  show("mish", F::mish(x), {-0.145647461, -0.303401461, 0, 0.375245211, 2.4713923, 5.99992663});
  show("hardswish", torch::hardswish(x), {-0, -0.333333333, 0, 0.291666667, 2.29166667, 6});
  show("hardsigmoid", torch::hardsigmoid(x), {0, 0.333333333, 0.5, 0.583333333, 0.916666667, 1});
  show("hardtanh", F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2.0).max_val(2.0)), {-2, -1, 0, 0.5, 2, 2});
  show("relu6", F::relu6(x), {0, 0, 0, 0.5, 2.5, 6});
  show("elu", F::elu(x, F::ELUFuncOptions().alpha(0.5)), {-0.475106466, -0.316060279, 0, 0.5, 2.5, 6});
  auto gx = torch::autograd::grad({torch::hardswish(x).sum()}, {x})[0];
  show("hardswish_grad", gx, {-0.5, 0.166666667, 0.5, 0.666666667, 1.33333333, 1});
  gx = torch::autograd::grad({F::relu6(x).sum()}, {x})[0];
  show("relu6_grad", gx, {0, 0, 0, 1, 1, 0});
  gx = torch::autograd::grad({F::selu(x).sum()}, {x})[0];
  show("selu_grad", gx, {0.0875306121, 0.646768603, 1.75809934, 1.05070099, 1.05070099, 1.05070099});
  gx = torch::autograd::grad({F::mish(x).sum()}, {x})[0];
  show("mish_grad", gx, {-0.0933931145, 0.0592167559, 0.6, 0.886424375, 1.04112953, 1.00013414});

  auto m = f64(torch::tensor({{1.0, -2.0, 0.5, 3.0}, {0.0, 1.5, -1.0, 2.0}}));
  show("glu", F::glu(m, F::GLUFuncOptions(1)), {0.622459331, -1.90514825, 0, 1.32119562});
  show("softmin", F::softmin(m, F::SoftminFuncOptions(1)),
       {0.0437261817, 0.878263837, 0.0720922859, 0.00591769519, 0.245293596, 0.0547323995, 0.666777126, 0.0331968783});

  // ---- activation modules ----
  torch::nn::SELU selu_m;
  torch::nn::Mish mish_m;
  torch::nn::Hardtanh hardtanh_m(torch::nn::HardtanhOptions().min_val(-0.5).max_val(0.5));
  torch::nn::ReLU6 relu6_m;
  torch::nn::GLU glu_m;
  torch::nn::Softmin softmin_m(0);
  torch::nn::ELU elu_m(torch::nn::ELUOptions().alpha(2.0));
  torch::nn::SiLU silu_m;
  auto v = f64(torch::tensor({-1.0, 0.25, 7.0}));
  show("SELU", selu_m(v), {-1.11133074, 0.262675247, 7.35490691});
  show("Mish", mish_m(v), {-0.303401461, 0.16957241, 6.99998838});
  show("Hardtanh", hardtanh_m(v), {-0.5, 0.25, 0.5});
  show("ReLU6", relu6_m(v), {0, 0.25, 6});
  show("GLU", glu_m(m), {0.622459331, -1.90514825, 0, 1.32119562});
  show("Softmin", softmin_m(v), {0.777097229, 0.222642084, 0.000260687079});
  show("ELU", elu_m(v), {-1.26424112, 0.25, 7});
  show("SiLU", silu_m(v), {-0.268941421, 0.140544125, 6.99362264});

  // ---- cumulative ops, a zero in cumprod ----
  auto c = f64(torch::tensor({2.0, 0.0, 3.0, 0.0, 5.0})).requires_grad_();
  show("cumsum", c.cumsum(0), {2, 2, 5, 5, 10});
  auto cp = torch::cumprod(c, 0);
  show("cumprod", cp, {2, 0, 0, 0, 0});
  show("cumprod_grad", torch::autograd::grad({cp.sum()}, {c})[0], {1, 8, 0, 0, 0});
  auto ints = torch::tensor({1, 2, 3, 4});
  check(ints.cumsum(0).dtype() == torch::kInt64, "int cumsum accumulates in int64");
  show("cumsum_double", ints.cumsum(0, torch::kFloat64), {1, 3, 6, 10});
  show("cumprod_2d", m.cumprod(1), {1, -2, -1, -3, 0, 0, -0, -0});

  // ---- distances ----
  auto a = f64(torch::tensor({{1.0, 2.0, 2.0}, {0.0, 3.0, 4.0}}));
  auto b = f64(torch::tensor({{2.0, 0.0, 1.0}, {0.0, -3.0, 4.0}}));
  show("cosine_similarity", F::cosine_similarity(a, b, F::CosineSimilarityFuncOptions().dim(1)), {0.596284794, 0.28});
  show("pairwise_distance", F::pairwise_distance(a, b), {2.44949056, 6.000001});
  show("pairwise_distance_p1", F::pairwise_distance(a, b, F::PairwiseDistanceFuncOptions().p(1).keepdim(true)),
       {4.000001, 6.000003});
  show("normalize", F::normalize(a, F::NormalizeFuncOptions().p(2).dim(1)),
       {0.333333333, 0.666666667, 0.666666667, 0, 0.6, 0.8});
  torch::nn::CosineSimilarity cos_m(torch::nn::CosineSimilarityOptions().dim(0));
  torch::nn::PairwiseDistance pdist_m(torch::nn::PairwiseDistanceOptions().p(3));
  show("CosineSimilarity", cos_m(a, b), {1, -0.832050294, 0.97618706});
  show("PairwiseDistance", pdist_m(a, b), {2.15443555, 6.000001});

  // ---- losses ----
  auto in = f64(torch::tensor({0.5, 2.0, -1.0, 0.1})).requires_grad_();
  auto tg = f64(torch::tensor({0.0, 0.0, 1.0, 0.2}));
  show("huber", F::huber_loss(in, tg, F::HuberLossFuncOptions().delta(0.5)), {0.47});
  show("huber_sum", F::huber_loss(in, tg, F::HuberLossFuncOptions().reduction(torch::kSum)), {3.13});
  show("huber_grad", torch::autograd::grad({F::huber_loss(in, tg)}, {in})[0], {0.125, 0.25, -0.25, -0.0250000004});
  torch::nn::HuberLoss huber_m(torch::nn::HuberLossOptions().reduction(torch::kNone));
  show("HuberLoss", huber_m(in, tg), {0.125, 1.5, 1.5, 0.00500000015});
  torch::nn::SmoothL1Loss smooth_m(torch::nn::SmoothL1LossOptions().beta(0.5));
  show("SmoothL1Loss", smooth_m(in, tg), {0.94});

  auto logp = torch::log_softmax(f64(torch::tensor({{1.0, 2.0, 0.5}, {0.0, -1.0, 1.0}})), 1).requires_grad_();
  auto p = f64(torch::tensor({{0.2, 0.5, 0.3}, {0.0, 0.4, 0.6}}));
  show("kl_div_batchmean", F::kl_div(logp, p, F::KLDivFuncOptions().reduction(torch::kBatchMean)), {0.309655064});
  show("kl_div_sum", F::kl_div(logp, p, F::KLDivFuncOptions().reduction(torch::kSum)), {0.619310127});
  show("kl_div_none_log_target",
       F::kl_div(logp, torch::log(p + 0.1), F::KLDivFuncOptions().reduction(torch::kNone).log_target(true)),
       {0.0781187977, -0.0278741038, 0.419231245, -0.0894979129, 0.857229408, 0.0356517394});
  show("kl_div_grad", torch::autograd::grad({F::kl_div(logp, p, F::KLDivFuncOptions().reduction(torch::kBatchMean))},
                                            {logp})[0],
       {-0.100000001, -0.25, -0.150000006, -0, -0.200000003, -0.300000012});
  auto kl_m = torch::nn::KLDivLoss(torch::nn::KLDivLossOptions(torch::kBatchMean));
  show("KLDivLoss", kl_m(logp, p), {0.309655064});

  auto e1 = f64(torch::tensor({{1.0, 0.0}, {0.5, 0.5}, {-1.0, 2.0}})).requires_grad_();
  auto e2 = f64(torch::tensor({{0.0, 1.0}, {1.0, 1.0}, {1.0, -1.5}}));
  auto et = f64(torch::tensor({1.0, -1.0, -1.0}));
  show("cosine_embedding", F::cosine_embedding_loss(e1, e2, et, F::CosineEmbeddingLossFuncOptions().margin(0.1)),
       {0.633333333});
  show("cosine_embedding_grad",
       torch::autograd::grad({F::cosine_embedding_loss(e1, e2, et, F::CosineEmbeddingLossFuncOptions().margin(0.1))},
                             {e1})[0],
       {0, -0.333333333, 6.66577904e-13, 6.66577904e-13, 0, 0});
  torch::nn::CosineEmbeddingLoss cel_m(torch::nn::CosineEmbeddingLossOptions().reduction(torch::kSum));
  show("CosineEmbeddingLoss", cel_m(e1, e2, et), {2});

  auto r1 = f64(torch::tensor({0.5, -1.0, 2.0})).requires_grad_();
  auto r2 = f64(torch::tensor({1.0, 0.0, 1.5}));
  auto rt = f64(torch::tensor({1.0, -1.0, 1.0}));
  show("margin_ranking", F::margin_ranking_loss(r1, r2, rt, F::MarginRankingLossFuncOptions().margin(0.2)), {0.233333333});
  show("margin_ranking_grad",
       torch::autograd::grad({F::margin_ranking_loss(r1, r2, rt, F::MarginRankingLossFuncOptions().margin(0.2))},
                             {r1})[0],
       {-0.333333333, 0, -0});
  torch::nn::MarginRankingLoss mr_m(torch::nn::MarginRankingLossOptions().margin(2.0).reduction(torch::kNone));
  show("MarginRankingLoss", mr_m(r1, r2, rt), {2.5, 1, 1.5});

  auto anc = f64(torch::tensor({{0.0, 0.0}, {1.0, 1.0}})).requires_grad_();
  auto pos = f64(torch::tensor({{1.0, 0.0}, {1.0, 2.0}}));
  auto neg = f64(torch::tensor({{0.0, 1.5}, {4.0, 5.0}}));
  show("triplet", F::triplet_margin_loss(anc, pos, neg), {0.25});
  show("triplet_swap", F::triplet_margin_loss(anc, pos, neg, F::TripletMarginLossFuncOptions().margin(3.0).swap(true).p(1)),
       {1.25});
  show("triplet_grad", torch::autograd::grad({F::triplet_margin_loss(anc, pos, neg)}, {anc})[0],
       {-0.500000333, 0.5000005, 0, 0});
  torch::nn::TripletMarginLoss tml_m(torch::nn::TripletMarginLossOptions().margin(4.5).reduction(torch::kNone));
  show("TripletMarginLoss", tml_m(anc, pos, neg), {4, 0.5000004});
  // With a user's distance, L1: d(a, p) = 1, 1; d(a, n) = 1.5, 7; d(p, n) = 2.5, 6. margin 1: 0.5 and 0,
  // mean 0.25; margin 6 with swap: 1 - min(1.5, 2.5) + 6 = 5.5 and 1 - min(7, 6) + 6 = 1.
  auto l1 = [](const torch::Tensor& x1, const torch::Tensor& x2) { return (x1 - x2).abs().sum(-1); };
  show("triplet_distance",
       F::triplet_margin_with_distance_loss(anc, pos, neg, F::TripletMarginWithDistanceLossFuncOptions().distance_function(l1)),
       {0.25});
  torch::nn::TripletMarginWithDistanceLoss tmd_m(
      torch::nn::TripletMarginWithDistanceLossOptions().distance_function(l1).margin(6.0).swap(true).reduction(torch::kNone));
  show("TripletMarginWithDistanceLoss", tmd_m(anc, pos, neg), {5.5, 1});

  // ---- class weights with label smoothing, ignore_index; BCE ----
  auto logits = f64(torch::tensor({{2.0, 0.5, -1.0}, {0.0, 1.0, 0.3}, {-0.5, 0.2, 1.5}})).requires_grad_();
  auto labels = torch::tensor({0, 2, 1}).to(torch::kLong);
  auto cw = f64(torch::tensor({0.5, 2.0, 1.0}));
  torch::nn::CrossEntropyLoss ce_m(torch::nn::CrossEntropyLossOptions().weight(cw).label_smoothing(0.2).ignore_index(2));
  auto ce = ce_m(logits, labels);
  show("CrossEntropyLoss_weight_smooth_ignore", ce, {1.39998781});
  show("CrossEntropyLoss_grad", torch::autograd::grad({ce}, {logits})[0],
       {0.0256845821, -0.00892643399, -0.0167581481, 0, 0, 0, 0.0571604484, -0.551376289, 0.494215841});
  torch::nn::NLLLoss nll_m(torch::nn::NLLLossOptions().weight(cw));
  show("NLLLoss_weight", nll_m(torch::log_softmax(logits, 1), labels), {1.35079467});
  torch::nn::BCELoss bce_m(torch::nn::BCELossOptions().weight(f64(torch::tensor({1.0, 2.0}))));
  show("BCELoss", bce_m(f64(torch::tensor({0.25, 0.9})), f64(torch::tensor({0.0, 1.0}))), {0.249201578});

  return porting::finish();
}
