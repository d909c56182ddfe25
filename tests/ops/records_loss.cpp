// Op records: the losses of graft::nn::functional (cross_entropy, nll_loss, mse_loss, l1_loss,
// smooth_l1_loss, binary_cross_entropy, binary_cross_entropy_with_logits), every reduction.
// References are plain loops in double written here from the losses' definitions; PyTorch's own
// values are checked separately in test_loss_fixtures.cpp.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

Tensor idx(const std::vector<double>& v, IntArrayRef shape) { return make(v, shape, kInt64); }

// A scalar (0-dim) float64 tensor.
Tensor scalar64(double v) { return make({v}, {}); }

// Reduction of per-element losses `v` of shape `shape` (a plain loop).
Tensor ref_apply_reduction(const std::vector<double>& v, IntArrayRef shape, Reduction red) {
  if (red == kNone) return make(v, shape);
  double s = 0;
  for (double x : v) s += x;
  return scalar64(red == kSum ? s : s / static_cast<double>(v.size()));
}

// ---- class-index / class-probability references ----
// Geometry of an input (C), (N, C) or (N, C, d1, ...): element (n, c, s) at (n * C + c) * S + s.
struct ClassGeom {
  int64_t N = 1, C = 1, S = 1;
  std::vector<int64_t> out_shape;  // the shape without the class dim
};
ClassGeom geom(const Tensor& input) {
  ClassGeom g;
  if (input.dim() == 1) {
    g.C = input.size(0);
    return g;
  }
  g.N = input.size(0);
  g.C = input.size(1);
  g.out_shape.push_back(g.N);
  for (int64_t d = 2; d < input.dim(); ++d) {
    g.S *= input.size(d);
    g.out_shape.push_back(input.size(d));
  }
  return g;
}

// log_softmax over the class dim, plain loops.
std::vector<double> ref_log_softmax(const std::vector<double>& x, const ClassGeom& g) {
  std::vector<double> out(x.size());
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t s = 0; s < g.S; ++s) {
      auto at = [&](int64_t c) { return static_cast<size_t>((n * g.C + c) * g.S + s); };
      double m = -INFINITY;
      for (int64_t c = 0; c < g.C; ++c) m = std::max(m, x[at(c)]);
      double z = 0;
      for (int64_t c = 0; c < g.C; ++c) z += std::exp(x[at(c)] - m);
      for (int64_t c = 0; c < g.C; ++c) out[at(c)] = x[at(c)] - m - std::log(z);
    }
  return out;
}

// nll on log-probabilities with PyTorch's label smoothing (eps = 0: plain nll):
//   loss_i = (1 - eps) * (-w[t_i] logp[i, t_i]) + eps / C * (-sum_c w_c logp[i, c]), 0 if ignored;
//   mean divides both sums by sum of w[t_i] over the non-ignored i.
Tensor ref_class_index(const std::vector<double>& logp, const ClassGeom& g, const Tensor& target,
                       const Tensor& weight, int64_t ignore, Reduction red, double eps) {
  const auto t = values(target);
  std::vector<double> w(static_cast<size_t>(g.C), 1.0);
  if (weight.defined()) w = values(weight);
  std::vector<double> nll, smooth;
  double wsum = 0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t s = 0; s < g.S; ++s) {
      const auto ti = static_cast<int64_t>(t[static_cast<size_t>(n * g.S + s)]);
      if (ti == ignore) {
        nll.push_back(0);
        smooth.push_back(0);
        continue;
      }
      auto lp = [&](int64_t c) { return logp[static_cast<size_t>((n * g.C + c) * g.S + s)]; };
      nll.push_back(-w[static_cast<size_t>(ti)] * lp(ti));
      wsum += w[static_cast<size_t>(ti)];
      double sm = 0;
      for (int64_t c = 0; c < g.C; ++c) sm -= w[static_cast<size_t>(c)] * lp(c);
      smooth.push_back(sm);
    }
  const double k = eps / static_cast<double>(g.C);
  if (red == kNone) {
    std::vector<double> out;
    for (size_t i = 0; i < nll.size(); ++i) out.push_back((1 - eps) * nll[i] + k * smooth[i]);
    return make(out, g.out_shape);
  }
  double a = 0, b = 0;
  for (size_t i = 0; i < nll.size(); ++i) a += nll[i], b += smooth[i];
  if (red == kMean) a /= wsum, b /= wsum;
  return scalar64((1 - eps) * a + k * b);
}

// Class probabilities: loss_i = -sum_c w_c (target[i, c] (1 - eps) + eps / C) logp[i, c]; mean
// divides by the number of (n, s) positions.
Tensor ref_class_prob(const std::vector<double>& logp, const ClassGeom& g, const Tensor& target, const Tensor& weight,
                      Reduction red, double eps) {
  const auto t = values(target);
  std::vector<double> w(static_cast<size_t>(g.C), 1.0);
  if (weight.defined()) w = values(weight);
  std::vector<double> out;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t s = 0; s < g.S; ++s) {
      double l = 0;
      for (int64_t c = 0; c < g.C; ++c) {
        const auto i = static_cast<size_t>((n * g.C + c) * g.S + s);
        l -= w[static_cast<size_t>(c)] * (t[i] * (1 - eps) + eps / static_cast<double>(g.C)) * logp[i];
      }
      out.push_back(l);
    }
  return ref_apply_reduction(out, g.out_shape, red);
}

// ---- the elementwise losses: per-element reference over broadcast inputs, then the reduction ----
Tensor ref_elementwise(const TensorList& in, Reduction red, const std::function<double(const std::vector<double>&)>& f) {
  const Tensor per = ref_map(in, f);
  return ref_apply_reduction(values(per), per.sizes(), red);
}

double bce_term(double x, double t) {
  const double lx = std::max(std::log(x), -100.0), l1mx = std::max(std::log(1 - x), -100.0);
  return -(t * lx + (1 - t) * l1mx);
}
double bce_logits_term(double x, double t, double pw) {
  // -(pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), in the overflow-free form
  const double log_sig = x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x));
  const double log_1msig = log_sig - x;
  return -(pw * t * log_sig + (1 - t) * log_1msig);
}

// Inputs for l1 / smooth_l1 samples: target = input + an offset away from the kinks 0 and +-beta.
Tensor away_from_kinks(const Tensor& input, uint64_t seed) {
  const std::vector<double> offsets{-2.3, -1.4, -0.7, -0.3, 0.2, 0.6, 1.3, 2.1, -0.45, 0.8};
  auto v = values(input);
  Generator g(seed);
  auto pick = values(randint(0, static_cast<int64_t>(offsets.size()), input.sizes(), kInt64, &g));
  for (size_t i = 0; i < v.size(); ++i) v[i] += offsets[static_cast<size_t>(pick[i])];
  return make(v, input.sizes());
}

}  // namespace

GRAFT_OP_RECORDS(loss) {
  std::vector<OpRecord> recs;

  // ---------------- nll_loss ----------------
  const std::vector<ErrorCase> nll_errors{
      {[] { F::nll_loss(zeros({4, 3}), idx({0, 1}, {2})); }, {"nll_loss", "[4]", "[4, 3]", "[2]"}},
      {[] { F::nll_loss(zeros({4, 3}), idx({0, 1, 7, 2}, {4})); }, {"nll_loss", "target value 7", "C = 3"}},
      {[] { F::nll_loss(zeros({2, 3}), idx({0, -1}, {2})); }, {"nll_loss", "target value -1", "C = 3"}},
      {[] { F::nll_loss(zeros({2, 3}), zeros({2})); }, {"nll_loss", "int64", "float32"}},
      {[] { F::nll_loss(zeros({2, 3}), idx({0, 1}, {2}), F::NLLLossFuncOptions().weight(ones({5}))); },
       {"nll_loss", "weight", "[3]", "[5]"}},
      {[] { F::nll_loss(zeros({}), idx({0}, {})); }, {"nll_loss", "(N, C)", "[]"}},
      {[] { F::nll_loss(zeros({2, 3, 4}), idx({0, 1}, {2})); }, {"nll_loss", "[2, 4]", "[2, 3, 4]", "[2]"}},
  };
  for (Reduction red : kReductions) {
    for (bool weighted : {false, true}) {
      const int64_t ignore = weighted ? 1 : -100;
      auto opts = [red, ignore](const TensorList& a) {
        auto o = F::NLLLossFuncOptions().reduction(red).ignore_index(ignore);
        if (a.size() > 2) o.weight(a[2]);
        return o;
      };
      recs.push_back({.name = "nll_loss", .variant = rname(red) + (weighted ? "_weight_ignore1" : ""),
                      .fn = [opts](const TensorList& a) { return F::nll_loss(a[0], a[1], opts(a)); },
                      .reference = [red, ignore](const TensorList& a) {
                        const ClassGeom g = geom(a[0]);
                        return ref_class_index(values(a[0]), g, a[1], a.size() > 2 ? a[2] : Tensor(), ignore, red, 0);
                      },
                      .samples = [weighted, ignore] {
                        const auto ig = static_cast<double>(ignore);
                        std::vector<TensorList> s{
                            {r({5, 4}, 1), idx({0, 3, ig, 1, 2}, {5})},
                            {r({2, 3, 2, 2}, 2), idx({0, 2, 1, 1, 2, 0, 0, 1}, {2, 2, 2})},
                            {r({4}, 3), idx({2}, {})},
                            {r({3, 4, 2}, 4), idx({1, 1, 3, 0, 2, 1}, {3, 2})}};
                        if (weighted)
                          for (auto& t : s) t.push_back(r({t[0].dim() == 1 ? t[0].size(0) : t[0].size(1)}, 5, 0.2, 2));
                        return s;
                      },
                      .differentiable = {true, false, false},
                      .errors = nll_errors});
    }
  }

  // ---------------- cross_entropy ----------------
  const std::vector<ErrorCase> ce_errors{
      {[] { F::cross_entropy(zeros({4, 3}), idx({0, 1}, {2})); }, {"cross_entropy", "[4]", "[4, 3]", "[2]"}},
      {[] { F::cross_entropy(zeros({2, 3}), idx({0, 7}, {2})); }, {"cross_entropy", "target value 7", "C = 3"}},
      {[] { F::cross_entropy(zeros({2, 3}), zeros({2})); }, {"cross_entropy", "int64", "float32", "[2]"}},
      {[] { F::cross_entropy(zeros({3}), idx({0, 1, 2}, {3})); }, {"cross_entropy", "floating-point", "int64", "[3]"}},
      {[] { F::cross_entropy(zeros({2, 3}), idx({0, 1}, {2}), F::CrossEntropyFuncOptions().label_smoothing(1.5)); },
       {"cross_entropy", "label_smoothing", "1.5"}},
      {[] { F::cross_entropy(zeros({2, 3}), idx({0, 1}, {2}), F::CrossEntropyFuncOptions().weight(ones({4}))); },
       {"cross_entropy", "weight", "[3]", "[4]"}},
      {[] { F::cross_entropy(zeros({2, 3}), zeros({2, 3}), F::CrossEntropyFuncOptions().ignore_index(1)); },
       {"cross_entropy", "ignore_index", "1"}},
  };
  struct CeVariant {
    std::string name;
    bool weighted;
    int64_t ignore;
    double eps;
  };
  const std::vector<CeVariant> ce_variants{{"", false, -100, 0.0}, {"weight_ignore0", true, 0, 0.0},
                                           {"smooth", false, -100, 0.1}, {"smooth_weight_ignore2", true, 2, 0.25}};
  for (Reduction red : kReductions) {
    for (const auto& v : ce_variants) {
      auto opts = [red, v](const TensorList& a) {
        auto o = F::CrossEntropyFuncOptions().reduction(red).ignore_index(v.ignore).label_smoothing(v.eps);
        if (a.size() > 2) o.weight(a[2]);
        return o;
      };
      recs.push_back({.name = "cross_entropy", .variant = rname(red) + (v.name.empty() ? "" : "_" + v.name),
                      .fn = [opts](const TensorList& a) { return F::cross_entropy(a[0], a[1], opts(a)); },
                      .reference = [red, v](const TensorList& a) {
                        const ClassGeom g = geom(a[0]);
                        return ref_class_index(ref_log_softmax(values(a[0]), g), g, a[1], a.size() > 2 ? a[2] : Tensor(),
                                               v.ignore, red, v.eps);
                      },
                      .samples = [v] {
                        const auto ig = static_cast<double>(v.ignore);
                        std::vector<TensorList> s{
                            {r({5, 4}, 11, -3, 3), idx({0, 3, ig, 1, 2}, {5})},
                            {r({2, 3, 2, 2}, 12), idx({0, 2, 1, 1, 2, 0, 0, 1}, {2, 2, 2})},
                            {r({4}, 13), idx({3}, {})}};
                        if (v.weighted)
                          for (auto& t : s) t.push_back(r({t[0].dim() == 1 ? t[0].size(0) : t[0].size(1)}, 14, 0.2, 2));
                        return s;
                      },
                      .differentiable = {true, false, false},
                      .errors = ce_errors});
    }
    // Class-probability targets (the target has the input's shape; it gets a gradient too).
    for (bool smooth_weight : {false, true}) {
      const double eps = smooth_weight ? 0.2 : 0.0;
      recs.push_back({.name = "cross_entropy", .variant = rname(red) + (smooth_weight ? "_prob_smooth_weight" : "_prob"),
                      .fn = [red, eps](const TensorList& a) {
                        auto o = F::CrossEntropyFuncOptions().reduction(red).label_smoothing(eps);
                        if (a.size() > 2) o.weight(a[2]);
                        return F::cross_entropy(a[0], a[1], o);
                      },
                      .reference = [red, eps](const TensorList& a) {
                        const ClassGeom g = geom(a[0]);
                        return ref_class_prob(ref_log_softmax(values(a[0]), g), g, a[1], a.size() > 2 ? a[2] : Tensor(),
                                              red, eps);
                      },
                      .samples = [smooth_weight] {
                        std::vector<TensorList> s{{r({3, 4}, 21), r({3, 4}, 22, 0, 1)},
                                                  {r({2, 3, 2}, 23), r({2, 3, 2}, 24, 0, 1)},
                                                  {r({5}, 25), r({5}, 26, 0, 1)}};
                        if (smooth_weight)
                          for (auto& t : s) t.push_back(r({t[0].dim() == 1 ? t[0].size(0) : t[0].size(1)}, 27, 0.2, 2));
                        return s;
                      },
                      .differentiable = {true, true, false},
                      .errors = ce_errors});
    }
  }

  // ---------------- mse_loss, l1_loss, smooth_l1_loss ----------------
  auto shape_error = [](std::function<void(const Tensor&, const Tensor&)> f, const char* op) {
    return std::vector<ErrorCase>{
        {[f] { f(zeros({2, 3}), zeros({4})); }, {op, "[2, 3]", "[4]", "broadcast"}},
        {[f] { f(zeros({2}, kInt64), zeros({2})); }, {op, "floating-point", "int64"}},
    };
  };
  auto pair_samples = [](uint64_t seed) {
    Tensor a = r({3, 4}, seed), b = r({3, 1}, seed + 1), c = r({4}, seed + 2), d = r({}, seed + 3);
    return std::vector<TensorList>{{a, away_from_kinks(a, seed + 4)},
                                   {b, away_from_kinks(c, seed + 5)},
                                   {c, away_from_kinks(d, seed + 6)}};
  };
  for (Reduction red : kReductions) {
    recs.push_back({.name = "mse_loss", .variant = rname(red),
                    .fn = [red](const TensorList& a) { return F::mse_loss(a[0], a[1], F::MSELossFuncOptions().reduction(red)); },
                    .reference = [red](const TensorList& a) {
                      return ref_elementwise(a, red, [](auto& v) { return (v[0] - v[1]) * (v[0] - v[1]); });
                    },
                    .samples = [pair_samples] { return pair_samples(31); },
                    .errors = shape_error([](auto& x, auto& y) { F::mse_loss(x, y); }, "mse_loss")});
    recs.push_back({.name = "l1_loss", .variant = rname(red),
                    .fn = [red](const TensorList& a) { return F::l1_loss(a[0], a[1], F::L1LossFuncOptions().reduction(red)); },
                    .reference = [red](const TensorList& a) {
                      return ref_elementwise(a, red, [](auto& v) { return std::abs(v[0] - v[1]); });
                    },
                    .samples = [pair_samples] { return pair_samples(41); },
                    .errors = shape_error([](auto& x, auto& y) { F::l1_loss(x, y); }, "l1_loss")});
    for (double beta : {1.0, 0.5, 0.0}) {
      auto errors = shape_error([](auto& x, auto& y) { F::smooth_l1_loss(x, y); }, "smooth_l1_loss");
      errors.push_back({[] { F::smooth_l1_loss(zeros({2}), zeros({2}), F::SmoothL1LossFuncOptions().beta(-1)); },
                        {"smooth_l1_loss", "beta", "-1"}});
      recs.push_back({.name = "smooth_l1_loss", .variant = rname(red) + "_beta" + std::to_string(static_cast<int>(beta * 10)),
                      .fn = [red, beta](const TensorList& a) {
                        return F::smooth_l1_loss(a[0], a[1], F::SmoothL1LossFuncOptions().reduction(red).beta(beta));
                      },
                      .reference = [red, beta](const TensorList& a) {
                        return ref_elementwise(a, red, [beta](auto& v) {
                          const double z = std::abs(v[0] - v[1]);
                          return z < beta ? 0.5 * z * z / beta : z - 0.5 * beta;
                        });
                      },
                      .samples = [pair_samples] { return pair_samples(51); },
                      .errors = errors});
    }
  }

  // ---------------- binary_cross_entropy ----------------
  const std::vector<ErrorCase> bce_errors{
      {[] { F::binary_cross_entropy(tensor({0.5, 1.5}), tensor({1.0, 0.0})); },
       {"binary_cross_entropy", "between 0 and 1", "1.5"}},
      {[] { F::binary_cross_entropy(tensor({0.5, -0.25}), tensor({1.0, 0.0})); },
       {"binary_cross_entropy", "between 0 and 1", "-0.25"}},
      {[] { F::binary_cross_entropy(full({2, 3}, 0.5), full({3}, 0.5)); }, {"binary_cross_entropy", "[2, 3]", "[3]"}},
      {[] {
         F::binary_cross_entropy(full({2, 3}, 0.5), full({2, 3}, 0.5),
                                 F::BinaryCrossEntropyFuncOptions().weight(ones({2})));
       },
       {"binary_cross_entropy", "weight", "[2]", "[2, 3]"}},
  };
  for (Reduction red : kReductions) {
    for (bool weighted : {false, true}) {
      recs.push_back({.name = "binary_cross_entropy", .variant = rname(red) + (weighted ? "_weight" : ""),
                      .fn = [red](const TensorList& a) {
                        auto o = F::BinaryCrossEntropyFuncOptions().reduction(red);
                        if (a.size() > 2) o.weight(a[2]);
                        return F::binary_cross_entropy(a[0], a[1], o);
                      },
                      .reference = [red](const TensorList& a) {
                        TensorList in = a;
                        if (in.size() < 3) in.push_back(ones_like(a[0], kFloat64));
                        return ref_elementwise(in, red, [](auto& v) { return v[2] * bce_term(v[0], v[1]); });
                      },
                      .samples = [weighted] {
                        std::vector<TensorList> s{{r({2, 3}, 61, 0.1, 0.9), r({2, 3}, 62, 0, 1)},
                                                  {r({4}, 63, 0.1, 0.9), tensor({0.0, 1.0, 0.3, 1.0}, kFloat64)}};
                        if (weighted) s[0].push_back(r({3}, 64, 0.5, 2)), s[1].push_back(r({1}, 65, 0.5, 2));
                        return s;
                      },
                      .differentiable = {true, true, false},
                      .errors = bce_errors});
    }
  }

  // ---------------- binary_cross_entropy_with_logits ----------------
  const std::vector<ErrorCase> bcel_errors{
      {[] { F::binary_cross_entropy_with_logits(zeros({2, 3}), zeros({3})); },
       {"binary_cross_entropy_with_logits", "[2, 3]", "[3]"}},
      {[] {
         F::binary_cross_entropy_with_logits(zeros({2, 4}), zeros({2, 4}),
                                             F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(ones({3})));
       },
       {"binary_cross_entropy_with_logits", "pos_weight", "[3]", "[2, 4]"}},
      {[] {
         F::binary_cross_entropy_with_logits(zeros({2, 4}), zeros({2, 4}, kInt64));
       },
       {"binary_cross_entropy_with_logits", "target", "int64"}},
  };
  for (Reduction red : kReductions) {
    for (bool weighted : {false, true}) {
      recs.push_back({.name = "binary_cross_entropy_with_logits", .variant = rname(red) + (weighted ? "_weight_pos_weight" : ""),
                      .fn = [red](const TensorList& a) {
                        auto o = F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(red);
                        if (a.size() > 2) o.weight(a[2]).pos_weight(a[3]);
                        return F::binary_cross_entropy_with_logits(a[0], a[1], o);
                      },
                      .reference = [red](const TensorList& a) {
                        TensorList in = a;
                        if (in.size() < 3) in.push_back(ones_like(a[0], kFloat64)), in.push_back(ones_like(a[0], kFloat64));
                        return ref_elementwise(in, red,
                                               [](auto& v) { return v[2] * bce_logits_term(v[0], v[1], v[3]); });
                      },
                      .samples = [weighted] {
                        std::vector<TensorList> s{{r({2, 3}, 71, -4, 4), r({2, 3}, 72, 0, 1)},
                                                  {tensor({-30.0, -2.0, 0.0, 0.5, 30.0}, kFloat64), r({5}, 73, 0, 1)}};
                        if (weighted) {
                          s[0].push_back(r({2, 1}, 74, 0.5, 2)), s[0].push_back(r({3}, 75, 0.5, 3));
                          s[1].push_back(r({5}, 76, 0.5, 2)), s[1].push_back(r({1}, 77, 0.5, 3));
                        }
                        return s;
                      },
                      .differentiable = {true, true, false, false},
                      .errors = bcel_errors});
    }
  }
  return recs;
}

// A target with the input's number of elements but another shape pairs the elements in order, as
// ATen does (LibTorch 1.13: loss 1.11164 and these gradients for this case, measured): (4, 1, 1, 1)
// probabilities 0.25 against labels {1, 0, 1, 1}: mean(3 (-log 0.25), -log 0.75) and
// d/dx = -t / (4 x) + (1 - t) / (4 (1 - x)).
TEST(BinaryCrossEntropy, ATargetOfOtherShapeButEqualSizePairsElementsInOrder) {
  const Tensor x = full({4, 1, 1, 1}, 0.25, kFloat64).requires_grad_();
  const Tensor t = tensor({1.0, 0.0, 1.0, 1.0}, kFloat64);
  const Tensor loss = binary_cross_entropy(x, t);
  EXPECT_NEAR(loss.item<double>(), (3 * -std::log(0.25) - std::log(0.75)) / 4, 1e-12);
  loss.backward();
  const std::vector<double> g = values(x.grad());
  const std::vector<double> expected = {-1.0, 1.0 / 3.0, -1.0, -1.0};
  ASSERT_EQ(g.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(g[i], expected[i], 1e-12) << i;
  EXPECT_TRUE(throws_error([] { binary_cross_entropy(full({2, 3}, 0.5), full({4}, 0.5)); },
                           {"binary_cross_entropy", "[2, 3]", "[4]"}));
}

}  // namespace graft::test
