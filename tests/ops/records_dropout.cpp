// Op records: dropout, feature_dropout, dropout2d. fn reseeds the default generator before each call,
// so the mask is fixed and gradcheck sees a deterministic function; the reference draws the same
// uniforms from its own Generator(seed) (as manual_seed(seed) does) and applies the mask in a plain
// loop: element (n, c, s) is kept when u[n, c] >= p (per channel) or u[n, c, s] >= p (per element),
// and a kept element is scaled by 1 / (1 - p).
#include <string>
#include <tuple>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

constexpr uint64_t kSeed = 11;

// x (N, C, S...) viewed as (outer, inner): one uniform per outer row (per_channel: outer = N * C,
// or C for an unbatched image) or per element.
Tensor ref_dropout(const Tensor& x, double p, bool train, int64_t channel_dims) {
  std::vector<double> v = values(x);
  if (!train || p == 0.0) return make(v, x.sizes());
  int64_t outer = x.numel();
  if (channel_dims > 0) {
    outer = 1;
    for (int64_t d = 0; d < channel_dims; ++d) outer *= x.size(d);
  }
  const int64_t inner = outer == 0 ? 0 : x.numel() / outer;
  Generator g(kSeed);
  for (int64_t o = 0; o < outer; ++o) {
    const bool keep = g.next_double() < 1.0 - p;  // keep ~ bernoulli(1 - p), as PyTorch draws it
    for (int64_t i = 0; i < inner; ++i) {
      double& e = v[static_cast<size_t>(o * inner + i)];
      e = keep ? e / (1.0 - p) : 0.0;
    }
  }
  return make(v, x.sizes());
}

std::vector<ErrorCase> dropout_errors(const std::string& op, std::function<Tensor(const Tensor&, double)> f) {
  return {{[f] { f(zeros({2, 3, 2, 2}), 1.5); }, {op, "probability p in [0, 1]", "1.5"}},
          {[f] { f(zeros({2, 3, 2, 2}), -0.1); }, {op, "probability p in [0, 1]"}},
          {[f] { f(make({1, 2, 3, 4}, {1, 1, 2, 2}, kInt64), 0.5); }, {op, "floating-point", "int64"}}};
}

}  // namespace

GRAFT_OP_RECORDS(dropout) {
  std::vector<OpRecord> recs;
  const SampleSpecs images = {{{{2, 3, 2, 2}, 1, -2, 2}}, {{{4, 5, 3, 1}, 2, -2, 2}}};
  for (double p : {0.0, 0.5}) {
    for (bool train : {true, false}) {
      std::string variant = p == 0.0 ? "p0" : "p0.5";
      variant += train ? "_train" : "_eval";
      recs.push_back(
          {.name = "dropout",
           .variant = variant,
           .fn =
               [p, train](const TensorList& a) {
                 manual_seed(kSeed);
                 return dropout(a[0], p, train);
               },
           .reference = [p, train](const TensorList& a) { return ref_dropout(a[0], p, train, 0); },
           .samples = lazy_samples(images),
           .errors = dropout_errors("dropout", [](const Tensor& x, double q) { return dropout(x, q, true); })});
      recs.push_back({.name = "feature_dropout",
                      .variant = variant,
                      .fn =
                          [p, train](const TensorList& a) {
                            manual_seed(kSeed);
                            return feature_dropout(a[0], p, train);
                          },
                      .reference = [p, train](const TensorList& a) { return ref_dropout(a[0], p, train, 2); },
                      .samples = lazy_samples(images),
                      .errors = dropout_errors("feature_dropout",
                                               [](const Tensor& x, double q) { return feature_dropout(x, q, true); })});
      recs.push_back({.name = "dropout2d",
                      .variant = variant,
                      .fn =
                          [p, train](const TensorList& a) {
                            manual_seed(kSeed);
                            return F::dropout2d(a[0], F::Dropout2dFuncOptions().p(p).training(train));
                          },
                      .reference = [p, train](const TensorList& a) { return ref_dropout(a[0], p, train, 2); },
                      .samples = lazy_samples(images),
                      .errors = dropout_errors("dropout2d", [](const Tensor& x, double q) {
                        return F::dropout2d(x, F::Dropout2dFuncOptions().p(q));
                      })});
    }
  }
  // The in-place forms on a non-leaf copy (in place on a leaf that requires grad is an error), with
  // the same masks as the out-of-place ones.
  using InPlace = Tensor& (*)(Tensor&, double, bool);
  const std::vector<std::tuple<const char*, InPlace, int64_t>> in_place = {
      {"dropout_", &dropout_, 0}, {"feature_dropout_", &feature_dropout_, 2}, {"dropout2d_", &dropout2d_, 2}};
  for (const auto& [name, fn, channel_dims] : in_place) {
    recs.push_back({.name = name,
                    .variant = "p0.5_train",
                    .fn =
                        [fn = fn](const TensorList& a) {
                          Tensor y = a[0] * 1.0;
                          manual_seed(kSeed);
                          fn(y, 0.5, true);
                          return y;
                        },
                    .reference = [cd = channel_dims](const TensorList& a) { return ref_dropout(a[0], 0.5, true, cd); },
                    .samples = lazy_samples(images),
                    .errors = dropout_errors(name, [fn = fn](const Tensor& x, double q) {
                      Tensor y = x.clone();
                      return fn(y, q, true);
                    })});
  }
  // An unbatched image (C, H, W): one uniform per channel.
  recs.push_back({.name = "dropout2d", .variant = "unbatched",
                  .fn = [](const TensorList& a) { manual_seed(kSeed); return dropout2d(a[0], 0.5, true); },
                  .reference = [](const TensorList& a) { return ref_dropout(a[0], 0.5, true, 1); },
                  .samples = lazy_samples({{{{6, 2, 2}, 3, -2, 2}}}),
                  .errors = {{[] { dropout2d(zeros({2, 3}), 0.5, true); }, {"dropout2d", "(N, C, H, W)", "[2, 3]"}},
                             {[] { feature_dropout(zeros({3}), 0.5, true); },
                              {"feature_dropout", "(N, C, *)", "[3]"}}}});
  // p = 1 zeroes everything (the gradient is zero too).
  recs.push_back({.name = "dropout", .variant = "p1",
                  .fn = [](const TensorList& a) { return F::dropout(a[0], F::DropoutFuncOptions().p(1.0)); },
                  .reference = [](const TensorList& a) {
                    return make(std::vector<double>(static_cast<size_t>(a[0].numel()), 0.0), a[0].sizes());
                  },
                  .samples = lazy_samples({{{{3, 4}, 4, -2, 2}}}),
                  .errors = {}});
  return recs;
}

}  // namespace graft::test
