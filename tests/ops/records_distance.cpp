// Op records: cosine_similarity and pairwise_distance, and the losses built on distances and
// margins (huber_loss, kl_div, cosine_embedding_loss, margin_ranking_loss, triplet_margin_loss),
// every reduction. References are plain loops in double over (N, D) rows; PyTorch's own values
// are checked in test_act_loss_fixtures.cpp.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

std::string p_name(double p) {
  std::string s = "p";
  s += std::isinf(p) ? std::string("inf") : std::to_string(static_cast<int>(p));
  return s;
}

Tensor reduce_ref(const std::vector<double>& v, IntArrayRef shape, Reduction red) {
  if (red == kNone) return make(v, shape);
  double s = 0;
  for (double x : v) s += x;
  return make({red == kSum ? s : s / static_cast<double>(v.size())}, {});
}

// Rows of a row-major (N, D) tensor (a 1-D tensor is one row).
std::vector<std::vector<double>> rows(const Tensor& t) {
  const auto v = values(t);
  const int64_t D = t.size(-1), N = t.dim() == 1 ? 1 : t.size(0);
  std::vector<std::vector<double>> out;
  for (int64_t i = 0; i < N; ++i)
    out.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(i * D), v.begin() + static_cast<std::ptrdiff_t>((i + 1) * D));
  return out;
}

double pnorm_ref(const std::vector<double>& a, const std::vector<double>& b, double p, double eps) {
  double s = 0, mx = 0;
  for (size_t j = 0; j < a.size(); ++j) {
    const double d = std::abs(a[j] - b[j] + eps);
    s += std::pow(d, p);
    mx = std::max(mx, d);
  }
  return std::isinf(p) ? mx : std::pow(s, 1.0 / p);
}

double cos_ref(const std::vector<double>& a, const std::vector<double>& b, double eps) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t j = 0; j < a.size(); ++j) ab += a[j] * b[j], aa += a[j] * a[j], bb += b[j] * b[j];
  return ab / (std::max(std::sqrt(aa), eps) * std::max(std::sqrt(bb), eps));
}

}  // namespace

GRAFT_OP_RECORDS(distance) {
  std::vector<OpRecord> recs;
  const auto pair_samples = [] {
    return std::vector<TensorList>{{r({3, 4}, 61), r({3, 4}, 62)}, {r({2, 5}, 63), r({2, 5}, 64)}};
  };
  recs.push_back({.name = "cosine_similarity", .variant = "dim1",
                  .fn = [](const TensorList& a) { return F::cosine_similarity(a[0], a[1]); },
                  .reference = [](const TensorList& a) {
                    const auto ra = rows(a[0]), rb = rows(a[1]);
                    std::vector<double> out;
                    for (size_t i = 0; i < ra.size(); ++i) out.push_back(cos_ref(ra[i], rb[i], 1e-8));
                    return make(out, {static_cast<int64_t>(out.size())});
                  },
                  .samples = pair_samples,
                  .errors = {{[] { cosine_similarity(zeros({2, 3}), zeros({4})); }, {"cosine_similarity", "[2, 3]", "[4]"}},
                             {[] { cosine_similarity(tensor({1, 2}), tensor({1, 2}), 0); },
                              {"cosine_similarity", "floating-point", "int64"}},
                             {[] { cosine_similarity(zeros({2, 3}), zeros({2, 3}), 2); }, {"cosine_similarity", "dim 2"}}}});
  recs.push_back({.name = "cosine_similarity", .variant = "dim0_broadcast",
                  .fn = [](const TensorList& a) { return cosine_similarity(a[0].t(), a[1].t(), 0); },
                  .reference = [](const TensorList& a) {
                    const auto ra = rows(a[0]), rb = rows(a[1].expand(a[0].sizes()).contiguous());
                    std::vector<double> out;
                    for (size_t i = 0; i < ra.size(); ++i) out.push_back(cos_ref(ra[i], rb[i], 1e-8));
                    return make(out, {static_cast<int64_t>(out.size())});
                  },
                  .samples = [] { return std::vector<TensorList>{{r({3, 4}, 65), r({1, 4}, 66)}}; }});
  for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    recs.push_back({.name = "pairwise_distance", .variant = p_name(p),
                    .fn = [p](const TensorList& a) {
                      return F::pairwise_distance(a[0], a[1], F::PairwiseDistanceFuncOptions().p(p));
                    },
                    .reference = [p](const TensorList& a) {
                      const auto ra = rows(a[0]), rb = rows(a[1]);
                      std::vector<double> out;
                      for (size_t i = 0; i < ra.size(); ++i) out.push_back(pnorm_ref(ra[i], rb[i], p, 1e-6));
                      return make(out, {static_cast<int64_t>(out.size())});
                    },
                    .samples = pair_samples,
                    .errors = {{[] { pairwise_distance(zeros({2, 3}), zeros({2, 3}), -1.0); }, {"pairwise_distance", "p >= 0"}},
                               {[] { pairwise_distance(zeros({2, 3}), zeros({4})); }, {"pairwise_distance", "[2, 3]", "[4]"}}}});
  }

  // ---- losses ----
  for (Reduction red : kReductions) {
    recs.push_back({.name = "huber_loss", .variant = rname(red),
                    .fn = [red](const TensorList& a) {
                      return F::huber_loss(a[0], a[1], F::HuberLossFuncOptions(red).delta(0.8));
                    },
                    .reference = [red](const TensorList& a) {
                      const Tensor e = ref_map(a, [](auto& v) {
                        const double d = v[0] - v[1], z = std::abs(d);
                        return z < 0.8 ? 0.5 * d * d : 0.8 * (z - 0.4);
                      });
                      return reduce_ref(values(e), e.sizes(), red);
                    },
                    .samples = [] { return std::vector<TensorList>{{r({2, 3}, 67), r({2, 3}, 68)}, {r({2, 3}, 69), r({3}, 70)}}; },
                    .errors = {{[] { huber_loss(zeros({2}), zeros({2}), kMean, 0.0); }, {"huber_loss", "delta > 0"}},
                               {[] { huber_loss(zeros({2, 3}), zeros({4})); }, {"huber_loss", "[2, 3]", "[4]"}}}});
    for (bool log_target : {false, true}) {
      recs.push_back({.name = "kl_div", .variant = rname(red) + (log_target ? "_log_target" : ""),
                      .fn = [red, log_target](const TensorList& a) { return kl_div(a[0], a[1], red, log_target); },
                      .reference = [red, log_target](const TensorList& a) {
                        const Tensor e = ref_map(a, [log_target](auto& v) {
                          if (log_target) return std::exp(v[1]) * (v[1] - v[0]);
                          return v[1] > 0 ? v[1] * (std::log(v[1]) - v[0]) : 0.0;
                        });
                        return reduce_ref(values(e), e.sizes(), red);
                      },
                      .samples = [log_target] {
                        return std::vector<TensorList>{{r({2, 3}, 71, -3, -0.1), r({2, 3}, 72, log_target ? -3 : 0.1, log_target ? 0 : 1)}};
                      },
                      .errors = {{[] { kl_div(zeros({2}), tensor({1, 2})); }, {"kl_div", "target", "int64"}}}});
    }
    recs.push_back({.name = "margin_ranking_loss", .variant = rname(red),
                    .fn = [red](const TensorList& a) {
                      return F::margin_ranking_loss(a[0], a[1], a[2], F::MarginRankingLossFuncOptions().margin(0.2).reduction(red));
                    },
                    .reference = [red](const TensorList& a) {
                      const Tensor e = ref_map(a, [](auto& v) { return std::max(0.0, -v[2] * (v[0] - v[1]) + 0.2); });
                      return reduce_ref(values(e), e.sizes(), red);
                    },
                    .samples = [] {
                      return std::vector<TensorList>{{make({0.9, -0.3, 1.4, 0.2, -1.1}, {5}), make({0.1, 0.6, -0.5, 1.5, -0.2}, {5}),
                                                      make({1, -1, -1, 1, 1}, {5})}};
                    },
                    .differentiable = {true, true, false},
                    .errors = {{[] { margin_ranking_loss(zeros({3}), zeros({4}), ones({3})); }, {"margin_ranking_loss", "[3]", "[4]"}}}});
    recs.push_back({.name = "cosine_embedding_loss", .variant = rname(red),
                    .fn = [red](const TensorList& a) {
                      return F::cosine_embedding_loss(a[0], a[1], a[2],
                                                      F::CosineEmbeddingLossFuncOptions().margin(-0.3).reduction(red));
                    },
                    .reference = [red](const TensorList& a) {
                      const auto ra = rows(a[0]), rb = rows(a[1]);
                      const auto t = values(a[2]);
                      std::vector<double> out;
                      for (size_t i = 0; i < ra.size(); ++i) {
                        double ab = 0, aa = 1e-12, bb = 1e-12;
                        for (size_t j = 0; j < ra[i].size(); ++j)
                          ab += ra[i][j] * rb[i][j], aa += ra[i][j] * ra[i][j], bb += rb[i][j] * rb[i][j];
                        const double c = ab / std::sqrt(aa * bb);
                        out.push_back(t[i] == 1 ? 1 - c : std::max(0.0, c + 0.3));
                      }
                      return reduce_ref(out, {static_cast<int64_t>(out.size())}, red);
                    },
                    .samples = [] { return std::vector<TensorList>{{r({4, 3}, 73), r({4, 3}, 74), make({1, -1, -1, 1}, {4})}}; },
                    .differentiable = {true, true, false},
                    .errors = {{[] { cosine_embedding_loss(zeros({2, 3}), zeros({2, 3}), ones({2, 1})); },
                                {"cosine_embedding_loss", "target", "[2, 1]"}},
                               {[] { cosine_embedding_loss(zeros({3}), zeros({3}), ones({3})); },
                                {"cosine_embedding_loss", "2-D inputs", "[3]"}}}});
    for (bool swap : {false, true}) {
      recs.push_back({.name = "triplet_margin_loss", .variant = rname(red) + (swap ? "_swap_p1" : ""),
                      .fn = [red, swap](const TensorList& a) {
                        return F::triplet_margin_loss(
                            a[0], a[1], a[2],
                            F::TripletMarginLossFuncOptions().margin(1.5).p(swap ? 1.0 : 2.0).swap(swap).reduction(red));
                      },
                      .reference = [red, swap](const TensorList& a) {
                        const auto ra = rows(a[0]), rp = rows(a[1]), rn = rows(a[2]);
                        const double p = swap ? 1.0 : 2.0;
                        std::vector<double> out;
                        for (size_t i = 0; i < ra.size(); ++i) {
                          double dn = pnorm_ref(ra[i], rn[i], p, 1e-6);
                          if (swap) dn = std::min(dn, pnorm_ref(rp[i], rn[i], p, 1e-6));
                          out.push_back(std::max(0.0, pnorm_ref(ra[i], rp[i], p, 1e-6) - dn + 1.5));
                        }
                        return reduce_ref(out, {static_cast<int64_t>(out.size())}, red);
                      },
                      .samples = [] { return std::vector<TensorList>{{r({4, 3}, 75), r({4, 3}, 76), r({4, 3}, 77)}}; },
                      .errors = {{[] { triplet_margin_loss(zeros({2, 3}), zeros({3}), zeros({2, 3})); },
                                  {"triplet_margin_loss", "same number of dims"}}}});
    }
  }
  return recs;
}

namespace {

TEST(Distance, GradientsAtZeroDistanceAreZeroNotNan) {
  const Tensor x = zeros({2, 3}, kFloat64).requires_grad_();
  pairwise_distance(x, zeros({2, 3}, kFloat64), 2.0, 0.0).sum().backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>(6, 0.0));
  const Tensor y = zeros({2, 3}, kFloat64).requires_grad_();
  F::normalize(y).sum().backward();
  for (double g : values(y.grad())) EXPECT_FALSE(std::isnan(g));
}

TEST(Distance, KlDivBatchMeanDividesTheSumByTheBatchSize) {
  const Tensor input = make({-1.0, -2.0, -0.5, -1.5, -0.2, -3.0}, {3, 2});
  const Tensor target = make({0.2, 0.8, 0.5, 0.5, 0.9, 0.1}, {3, 2});
  const double sum = kl_div(input, target, kSum).item<double>();
  EXPECT_NEAR(F::kl_div(input, target, F::KLDivFuncOptions(kBatchMean)).item<double>(), sum / 3, 1e-15);
  EXPECT_NEAR(F::kl_div(input, target).item<double>(), sum / 6, 1e-15);  // kMean: every element
}

}  // namespace
}  // namespace graft::test
