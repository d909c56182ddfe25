// Op records: prelu, rrelu (evaluation), celu, threshold, hardshrink, softshrink, log_sigmoid /
// logsigmoid, softsign and tanhshrink (issue 32). References are plain loops in double written from
// the definitions; samples are uniform, so no element sits on a kink (the values there, against
// PyTorch's own: tests/nn/test_activation2.cpp).
#include <cmath>
#include <functional>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

using Fn1 = std::function<double(double)>;

OpRecord unary_record2(std::string name, std::string variant, std::function<Tensor(const Tensor&)> f, Fn1 ref,
                       std::vector<ErrorCase> errors) {
  return OpRecord{.name = std::move(name),
                  .variant = std::move(variant),
                  .fn = [f](const TensorList& a) { return f(a[0]); },
                  .reference = [ref](const TensorList& a) { return ref_map(a, [ref](auto& v) { return ref(v[0]); }); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({3, 4}, 71, -3, 3)}, {r({5}, 72, -2, 2)}, {r({2, 1, 3}, 73, -4, 4)}};
                  },
                  .errors = std::move(errors)};
}

// prelu's reference: x (N, C) row-major, weight 1 or C values.
Tensor prelu_ref(const Tensor& x, const Tensor& w) {
  const auto xv = values(x), wv = values(w);
  const int64_t c = x.size(1);
  std::vector<double> out(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    const double slope = wv.size() == 1 ? wv[0] : wv[i % static_cast<size_t>(c)];
    out[i] = xv[i] > 0 ? xv[i] : slope * xv[i];
  }
  return make(out, {x.size(0), c});
}

}  // namespace

GRAFT_OP_RECORDS(activation2) {
  std::vector<OpRecord> recs;
  recs.push_back({.name = "prelu",
                  .variant = "",
                  .fn = [](const TensorList& a) { return F::prelu(a[0], a[1]); },
                  .reference = [](const TensorList& a) { return prelu_ref(a[0], a[1]); },
                  .samples =
                      [] {
                        return std::vector<TensorList>{{r({4, 3}, 81), r({3}, 82, -1, 1)},
                                                       {r({2, 5}, 83), r({1}, 84, 0, 1)}};
                      },
                  .errors = {{[] { prelu(zeros({2, 3}), zeros({2})); }, {"prelu", "one per input channel", "2 weights"}},
                             {[] { prelu(zeros({2, 3}), zeros({3, 1})); }, {"prelu", "0-dim or 1-D"}},
                             {[] { prelu(tensor({1, 2}), tensor({1})); }, {"prelu", "floating-point", "int64"}}}});
  recs.push_back(unary_record2(
      "rrelu", "eval", [](auto& x) { return F::rrelu(x, F::RReLUFuncOptions().lower(0.1).upper(0.5)); },
      [](double x) { return x > 0 ? x : 0.3 * x; },
      {{[] { rrelu(zeros({2}), 0.5, 0.1); }, {"rrelu", "lower <= upper"}},
       int_input([](auto& x) { return rrelu(x); }, "rrelu")}));
  recs.push_back(unary_record2(
      "celu", "default", [](auto& x) { return F::celu(x); }, [](double x) { return x > 0 ? x : std::exp(x) - 1; },
      {{[] { celu(zeros({2}), 0.0); }, {"celu", "alpha != 0"}}, int_input([](auto& x) { return celu(x); }, "celu")}));
  recs.push_back(unary_record2(
      "celu", "alpha", [](auto& x) { return F::celu(x, F::CELUFuncOptions().alpha(0.7)); },
      [](double x) { return x > 0 ? x : 0.7 * (std::exp(x / 0.7) - 1); }, {}));
  recs.push_back(unary_record2(
      "threshold", "", [](auto& x) { return F::threshold(x, F::ThresholdFuncOptions(0.5, -2.0)); },
      [](double x) { return x > 0.5 ? x : -2.0; }, {{[] { threshold(tensor({true}), 0, 0); }, {"threshold", "bool"}}}));
  recs.push_back(unary_record2(
      "hardshrink", "", [](auto& x) { return F::hardshrink(x, F::HardshrinkFuncOptions(1.0)); },
      [](double x) { return std::abs(x) <= 1.0 ? 0.0 : x; },
      {int_input([](auto& x) { return hardshrink(x); }, "hardshrink")}));
  recs.push_back(unary_record2(
      "softshrink", "", [](auto& x) { return F::softshrink(x, 0.75); },
      [](double x) { return x > 0.75 ? x - 0.75 : (x < -0.75 ? x + 0.75 : 0.0); },
      {{[] { softshrink(zeros({2}), -0.5); }, {"softshrink", "lambda >= 0"}},
       int_input([](auto& x) { return softshrink(x); }, "softshrink")}));
  const Fn1 log_sigmoid_ref = [](double x) { return -std::log1p(std::exp(-x)); };
  recs.push_back(unary_record2("log_sigmoid", "", [](auto& x) { return log_sigmoid(x); }, log_sigmoid_ref,
                               {int_input([](auto& x) { return log_sigmoid(x); }, "log_sigmoid")}));
  recs.push_back(unary_record2("logsigmoid", "", [](auto& x) { return F::logsigmoid(x); }, log_sigmoid_ref,
                               {int_input([](auto& x) { return F::logsigmoid(x); }, "log_sigmoid")}));
  recs.push_back(unary_record2("softsign", "", [](auto& x) { return F::softsign(x); },
                               [](double x) { return x / (1 + std::abs(x)); },
                               {{[] { F::softsign(tensor({true})); }, {"softsign", "bool"}}}));
  recs.push_back(unary_record2("tanhshrink", "", [](auto& x) { return F::tanhshrink(x); },
                               [](double x) { return x - std::tanh(x); },
                               {{[] { F::tanhshrink(tensor({true})); }, {"tanhshrink", "bool"}}}));
  return recs;
}

namespace {

TEST(Activation2Ops, GradFnNames) {
  const Tensor x = tensor({0.5}, kFloat64).requires_grad_();
  EXPECT_EQ(celu(x).grad_fn()->name(), "CeluBackward0");
  EXPECT_EQ(threshold(x, 0.0, 0.0).grad_fn()->name(), "ThresholdBackward0");
  EXPECT_EQ(hardshrink(x).grad_fn()->name(), "HardshrinkBackward0");
  EXPECT_EQ(softshrink(x).grad_fn()->name(), "SoftshrinkBackward0");
  EXPECT_EQ(log_sigmoid(x).grad_fn()->name(), "LogSigmoidBackward0");
}

}  // namespace
}  // namespace graft::test
