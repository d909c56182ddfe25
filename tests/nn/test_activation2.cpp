// The activations of issue 32 (PReLU, RReLU, CELU, Softsign, Tanhshrink, Threshold, Softshrink,
// Hardshrink, LogSigmoid): values and gradients against PyTorch 1.13
// (tests/fixtures/activation2_fixtures.txt, written by gen_activation2_fixtures.py: this test only
// reads it), gradcheck / gradgradcheck in float64, RReLU's sampled slopes, the in-place forms, the
// argument errors, the options, and both print styles (Python's repr and LibTorch's pretty_print,
// the expected strings as PyTorch 1.13 and LibTorch 1.13 print them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "../support/fixture_file.h"
#include "../support/test_util.h"
#include "graft/engine/gradcheck.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

const std::vector<FixtureCase>& fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("activation2_fixtures.txt");
  return cases;
}

// The graft call a case names, with its options rebuilt from the params.
Tensor call(const FixtureCase& c, const TensorList& a) {
  auto num = [&](const char* k, double dflt) { return c.number(k, dflt); };
  const std::string& fn = c.kind;
  if (fn == "prelu") return F::prelu(a[0], a[1]);
  if (fn == "rrelu")
    return F::rrelu(a[0], F::RReLUFuncOptions().lower(num("lower", 1.0 / 8)).upper(num("upper", 1.0 / 3)));
  if (fn == "celu") return F::celu(a[0], F::CELUFuncOptions().alpha(num("alpha", 1)));
  if (fn == "softsign") return F::softsign(a[0]);
  if (fn == "tanhshrink") return F::tanhshrink(a[0]);
  if (fn == "threshold") return F::threshold(a[0], F::ThresholdFuncOptions(num("threshold", 0), num("value", 0)));
  if (fn == "softshrink") return F::softshrink(a[0], num("lambda", 0.5));
  if (fn == "hardshrink") return F::hardshrink(a[0], F::HardshrinkFuncOptions().lambda(num("lambda", 0.5)));
  if (fn == "logsigmoid") return F::logsigmoid(a[0]);
  throw std::runtime_error("unknown function " + fn);
}

TEST(Activation2Fixtures, FileLoads) {
  ASSERT_NO_THROW(fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : fixtures()) ++per_fn[c.kind];
  for (const char* fn : {"prelu", "rrelu", "celu", "softsign", "tanhshrink", "threshold", "softshrink", "hardshrink",
                         "logsigmoid"})
    EXPECT_GT(per_fn[fn], 0) << "no fixture for " << fn;
}

class Activation2Fixture : public ::testing::TestWithParam<size_t> {};

TEST_P(Activation2Fixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = fixtures()[GetParam()];
  TensorList args;
  for (int i = 0; c.has("arg" + std::to_string(i)); ++i)
    args.push_back(c.tensor("arg" + std::to_string(i)).clone().requires_grad_());
  Tensor out;
  try {
    out = call(c, args);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_TRUE(all_close(out, c.tensor("out"))) << "value";
  // PyTorch's celu backward scales by 1 / alpha with alpha rounded to float32 (derivatives.yaml:
  // 1.0 / alpha.toFloat()), even in float64: about 1e-8 relative off for an alpha such as 0.3; graft
  // uses the double 1 / alpha, as the forward does.
  const double grad_tol = c.kind == "celu" ? 1e-7 : 1e-10;
  out.backward(c.tensor("grad_output"));
  for (size_t i = 0; i < args.size(); ++i) {
    ASSERT_TRUE(args[i].grad().defined()) << "no gradient for arg " << i;
    EXPECT_TRUE(all_close(args[i].grad(), c.tensor("grad" + std::to_string(i)), grad_tol, grad_tol))
        << "gradient of arg " << i;
  }
}

size_t fixture_count() {
  try {
    return fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Activation2Fixture, ::testing::Range<size_t>(0, fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return fixtures()[info.param].name; });

// ---- gradcheck (float64, the points kept away from the kinks) ----
Tensor away_from_kinks(IntArrayRef shape) {
  // values in [-3, 3) without any within 0.05 of 0, +-0.5, +-1, +-2 (the kinks below)
  Tensor u = uniform_sample(shape, 7, -3.0, 3.0);
  Tensor v = u.detach().clone();
  for (int64_t i = 0; i < v.numel(); ++i) {
    double x = v.data_ptr<double>()[i];
    for (double k : {0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0})
      if (std::abs(x - k) < 0.05) x = k + 0.1;
    v.data_ptr<double>()[i] = x;
  }
  return v;
}

TEST(Activation2Gradcheck, EachActivation) {
  const Tensor x = away_from_kinks({3, 4}).requires_grad_();
  const Tensor w = tensor<double>({0.1, -0.4, 0.7, 1.3}, kFloat64).requires_grad_();
  const Tensor w1 = tensor<double>({0.3}, kFloat64).requires_grad_();
  using Fn = autograd::TestFunction;
  const std::vector<std::pair<std::string, Fn>> fns = {
      {"celu", [](const TensorList& in) { return F::celu(in[0], F::CELUFuncOptions().alpha(1.7)); }},
      {"softsign", [](const TensorList& in) { return F::softsign(in[0]); }},
      {"tanhshrink", [](const TensorList& in) { return F::tanhshrink(in[0]); }},
      {"threshold", [](const TensorList& in) { return F::threshold(in[0], F::ThresholdFuncOptions(0.5, -3)); }},
      {"softshrink", [](const TensorList& in) { return F::softshrink(in[0], 1.0); }},
      {"hardshrink", [](const TensorList& in) { return F::hardshrink(in[0], 2.0); }},
      {"logsigmoid", [](const TensorList& in) { return F::logsigmoid(in[0]); }},
      {"rrelu_eval", [](const TensorList& in) { return F::rrelu(in[0]); }},
  };
  for (const auto& [name, fn] : fns) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(autograd::gradcheck(fn, {x}));
    EXPECT_TRUE(autograd::gradgradcheck(fn, {x}));
  }
  auto prelu = [](const TensorList& in) { return F::prelu(in[0], in[1]); };
  EXPECT_TRUE(autograd::gradcheck(prelu, {x, w}));
  EXPECT_TRUE(autograd::gradgradcheck(prelu, {x, w}));
  EXPECT_TRUE(autograd::gradcheck(prelu, {x, w1}));
}

// ---- RReLU ----
TEST(RReLU, TrainingSamplesSlopesInTheBoundsAndBackpropagatesThem) {
  manual_seed(11);
  Tensor x = cat({-uniform_sample({200}, 3, 0.1, 4.0), uniform_sample({50}, 4, 0.1, 4.0), zeros({1}, kFloat64)})
                 .requires_grad_();
  Tensor y = F::rrelu(x, F::RReLUFuncOptions().lower(0.2).upper(0.5).training(true));
  y.sum().backward();
  const Tensor xd = x.detach(), yd = y.detach(), g = x.grad();
  double lo = 1, hi = 0;
  for (int64_t i = 0; i < 200; ++i) {
    const double xi = xd[i].item<double>(), slope = yd[i].item<double>() / xi;
    EXPECT_GE(slope, 0.2);
    EXPECT_LE(slope, 0.5);
    EXPECT_NEAR(g[i].item<double>(), slope, 1e-12);  // the gradient is the sampled slope
    lo = std::min(lo, slope);
    hi = std::max(hi, slope);
  }
  EXPECT_LT(lo, 0.25);  // 200 draws spread over the interval
  EXPECT_GT(hi, 0.45);
  for (int64_t i = 200; i < 250; ++i) {
    EXPECT_EQ(yd[i].item<double>(), xd[i].item<double>());
    EXPECT_EQ(g[i].item<double>(), 1.0);
  }
  // x = 0 draws a slope too (ATen's x <= 0): output 0, gradient in the bounds
  EXPECT_EQ(yd[250].item<double>(), 0.0);
  EXPECT_GE(g[250].item<double>(), 0.2);
  EXPECT_LE(g[250].item<double>(), 0.5);
}

TEST(RReLU, GeneratorMakesDrawsRepeatableAndModuleFollowsTrainingMode) {
  Tensor x = -uniform_sample({20}, 5, 0.5, 2.0);
  Generator g1(99), g2(99);
  EXPECT_TRUE(equal(rrelu(x, 0.1, 0.3, true, &g1), rrelu(x, 0.1, 0.3, true, &g2)));
  nn::RReLU m(nn::RReLUOptions().lower(0.1).upper(0.3));
  manual_seed(1);
  const Tensor a = m(x);
  manual_seed(1);
  EXPECT_TRUE(equal(m(x), a));
  manual_seed(2);
  EXPECT_FALSE(equal(m(x), a));
  m->eval();
  EXPECT_TRUE(all_close(m(x), x * 0.2, 1e-15, 1e-15));  // leaky_relu with (0.1 + 0.3) / 2
}

// ---- in-place forms ----
TEST(Activation2Inplace, InputTakesTheResult) {
  const Tensor x = tensor<double>({-2.0, -0.5, 0.0, 0.5, 3.0}, kFloat64);
  Tensor a = x.clone();
  Tensor r = F::celu(a, F::CELUFuncOptions().alpha(2.0).inplace(true));
  EXPECT_TRUE(equal(a, F::celu(x, F::CELUFuncOptions().alpha(2.0))));
  EXPECT_EQ(r.data_ptr(), a.data_ptr());
  Tensor b = x.clone();
  F::threshold(b, F::ThresholdFuncOptions(0.5, 9.0).inplace(true));
  EXPECT_TRUE(all_close(b, {9, 9, 9, 9, 3}, {5}));
  Tensor c = x.clone();
  nn::Threshold(nn::ThresholdOptions(0.0, -1.0).inplace(true))(c);
  EXPECT_TRUE(all_close(c, {-1, -1, -1, 0.5, 3}, {5}));
  Tensor d = x.clone();
  F::rrelu(d, F::RReLUFuncOptions().lower(0.5).upper(0.5).inplace(true));
  EXPECT_TRUE(all_close(d, {-1, -0.25, 0, 0.5, 3}, {5}));
  Tensor e = x.clone();
  graft::celu_(e, 1.0);
  graft::threshold_(e, 0.4, 0.0);
  EXPECT_TRUE(all_close(e, {0, 0, 0, 0.5, 3}, {5}));
  Tensor f = x.clone();
  graft::rrelu_(f);  // evaluation: slope (1/8 + 1/3) / 2
  EXPECT_TRUE(all_close(f, {-2 * (11.0 / 48), -0.5 * (11.0 / 48), 0, 0.5, 3}, {5}));

  // In-place on a non-leaf keeps the graph: d/dx threshold_(2x) = 2 above the threshold.
  Tensor leaf = x.clone().requires_grad_();
  Tensor t = leaf * 2.0;
  F::threshold(t, F::ThresholdFuncOptions(0.5, 0).inplace(true)).sum().backward();
  EXPECT_TRUE(all_close(leaf.grad(), {0, 0, 0, 2, 2}, {5}));
}

// ---- float32, integers ----
TEST(Activation2Dtypes, Float32AndInt64) {
  const Tensor x = tensor<float>({-1.5f, -0.5f, 0.0f, 0.5f, 1.5f});
  EXPECT_EQ(F::softshrink(x).dtype(), kFloat32);
  EXPECT_TRUE(all_close(F::softshrink(x), {-1, 0, 0, 0, 1}, {5}));
  EXPECT_TRUE(all_close(F::hardshrink(x), {-1.5, 0, 0, 0, 1.5}, {5}));
  // PyTorch 1.13 gives +0 inside softshrink's band (-0.5 included) and for NaN; hardshrink and
  // threshold pass NaN through.
  const float nan = std::nanf("");
  const Tensor e = tensor<float>({-0.5f, nan});
  EXPECT_FALSE(std::signbit(F::softshrink(e)[0].item<float>()));
  EXPECT_EQ(F::softshrink(e)[1].item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(F::hardshrink(e)[1].item<float>()));
  EXPECT_TRUE(std::isnan(F::threshold(e, F::ThresholdFuncOptions(0, 5))[1].item<float>()));
  // threshold keeps integer dtypes, as ATen's
  const Tensor i = tensor<int64_t>({-3, 0, 2, 5});
  const Tensor ti = F::threshold(i, F::ThresholdFuncOptions(2, -7));
  EXPECT_EQ(ti.dtype(), kInt64);
  EXPECT_TRUE(all_close(ti, {-7, -7, -7, 5}, {4}));
  EXPECT_TRUE(throws_error([&] { F::celu(i); }, {"celu"}));
}

// ---- argument errors (PyTorch rejects the same) ----
TEST(Activation2Errors, BadArguments) {
  const Tensor x = zeros({2, 3}, kFloat64);
  EXPECT_TRUE(throws_error([&] { F::celu(x, F::CELUFuncOptions().alpha(0)); }, {"celu", "alpha != 0"}));
  EXPECT_TRUE(throws_error([&] { F::softshrink(x, -1.0); }, {"softshrink", "lambda >= 0"}));
  EXPECT_TRUE(throws_error([&] { F::rrelu(x, F::RReLUFuncOptions().lower(0.5).upper(0.1)); }, {"rrelu", "lower <= upper"}));
  EXPECT_TRUE(throws_error([&] { F::prelu(x, ones({2}, kFloat64)); }, {"prelu", "one per input channel", "2 weights"}));
  EXPECT_TRUE(throws_error([&] { F::prelu(x, ones({3, 1}, kFloat64)); }, {"prelu", "0-dim or 1-D weight"}));
  EXPECT_TRUE(throws_error([&] { F::prelu(x, ones({1}, kFloat32)); }, {"prelu", "dtype"}));
  EXPECT_TRUE(throws_error([&] { F::threshold(x.to(kBool), F::ThresholdFuncOptions(0, 0)); }, {"threshold", "bool"}));
  // Like LibTorch's, the modules construct and the op checks on forward.
  nn::Softshrink s(-1.0);
  EXPECT_TRUE(throws_error([&] { s(x); }, {"softshrink"}));
  nn::PReLU p(nn::PReLUOptions().num_parameters(4));
  EXPECT_TRUE(throws_error([&] { p(x.to(kFloat32)); }, {"prelu", "4 weights"}));
}

// ---- PReLU module ----
TEST(PReLU, WeightInitResetAndGradient) {
  nn::PReLU p(nn::PReLUOptions().num_parameters(3).init(0.1));
  EXPECT_EQ(p->options.num_parameters(), 3);
  EXPECT_EQ(p->options.init(), 0.1);
  ASSERT_EQ(p->named_parameters().size(), 1u);
  EXPECT_EQ(p->named_parameters().begin()->key(), "weight");
  EXPECT_TRUE(p->weight.requires_grad());
  EXPECT_TRUE(all_close(p->weight, {0.1f, 0.1f, 0.1f}, {3}, 0, 0));
  {
    NoGradGuard ng;
    p->weight.fill_(5.0);
  }
  p->reset_parameters();
  EXPECT_TRUE(all_close(p->weight, {0.1f, 0.1f, 0.1f}, {3}, 0, 0));
  p = nn::PReLU(nn::PReLUOptions().num_parameters(2).init(-0.5));
  EXPECT_TRUE(all_close(p->weight, {-0.5, -0.5}, {2}, 0, 0));
  EXPECT_EQ(nn::PReLU()->weight.numel(), 1);
  EXPECT_TRUE(all_close(nn::PReLU()->weight, {0.25}, {1}, 0, 0));

  // y = x (x > 0), w_c x; dL/dw_c = sum of x over x <= 0 in channel c (L = sum y)
  const Tensor x = tensor<float>({{-1.0f, 2.0f}, {-3.0f, -4.0f}, {5.0f, 0.0f}});
  Tensor y = p(x);
  EXPECT_TRUE(all_close(y, {0.5, 2, 1.5, 2, 5, 0}, {3, 2}));
  y.sum().backward();
  EXPECT_TRUE(all_close(p->weight.grad(), {-4, -4}, {2}));
  // A clone has its own weight.
  auto q = std::dynamic_pointer_cast<nn::PReLUImpl>(p->clone());
  ASSERT_TRUE(q);
  EXPECT_NE(q->weight.data_ptr(), p->weight.data_ptr());
  EXPECT_TRUE(equal(q->weight, p->weight));
}

// ---- options ----
TEST(Activation2Options, DefaultsAndSetters) {
  EXPECT_EQ(nn::RReLUOptions().lower(), 1.0 / 8.0);
  EXPECT_EQ(nn::RReLUOptions().upper(), 1.0 / 3.0);
  EXPECT_FALSE(nn::RReLUOptions().inplace());
  EXPECT_FALSE(F::RReLUFuncOptions().training());
  EXPECT_EQ(nn::CELUOptions().alpha(), 1.0);
  EXPECT_TRUE(nn::CELUOptions().alpha(2).inplace(true).inplace());
  const nn::ThresholdOptions t(1.5, -2);
  EXPECT_EQ(t.threshold(), 1.5);
  EXPECT_EQ(t.value(), -2);
  EXPECT_FALSE(t.inplace());
  EXPECT_EQ(nn::SoftshrinkOptions().lambda(), 0.5);
  EXPECT_EQ(nn::SoftshrinkOptions(2).lambda(), 2);
  EXPECT_EQ(nn::HardshrinkOptions().lambda(3).lambda(), 3);
  nn::Threshold th(0.25, 4.0);
  EXPECT_EQ(th->options.threshold(), 0.25);
  EXPECT_EQ(th->options.value(), 4.0);
  // The module forwards equal the functionals.
  const Tensor x = uniform_sample({10}, 9, -3, 3);
  EXPECT_TRUE(equal(nn::CELU(nn::CELUOptions().alpha(0.7))(x), F::celu(x, F::CELUFuncOptions().alpha(0.7))));
  EXPECT_TRUE(equal(nn::Softsign()(x), F::softsign(x)));
  EXPECT_TRUE(equal(nn::Tanhshrink()(x), F::tanhshrink(x)));
  EXPECT_TRUE(equal(nn::Softshrink(1.1)(x), F::softshrink(x, 1.1)));
  EXPECT_TRUE(equal(nn::Hardshrink(1.1)(x), F::hardshrink(x, 1.1)));
  EXPECT_TRUE(equal(nn::LogSigmoid()(x), F::logsigmoid(x)));
  EXPECT_TRUE(equal(th(x), F::threshold(x, F::ThresholdFuncOptions(0.25, 4.0))));
  // the namespace-level ops are the same
  EXPECT_TRUE(equal(graft::log_sigmoid(x), F::logsigmoid(x)));
  EXPECT_TRUE(equal(graft::softshrink(x, 1.1), F::softshrink(x, 1.1)));
}

// ---- printing ----
template <class T> std::string printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

// The strings PyTorch 1.13 prints: repr(torch.nn.PReLU()), ...
TEST(Activation2Print, PythonForms) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  EXPECT_EQ(printed(nn::PReLU()), "PReLU(num_parameters=1)");
  EXPECT_EQ(printed(nn::PReLU(nn::PReLUOptions().num_parameters(3).init(0.1))), "PReLU(num_parameters=3)");
  EXPECT_EQ(printed(nn::RReLU()), "RReLU(lower=0.125, upper=0.3333333333333333)");
  EXPECT_EQ(printed(nn::RReLU(nn::RReLUOptions().lower(0.2).upper(0.4).inplace(true))),
            "RReLU(lower=0.2, upper=0.4, inplace=True)");
  EXPECT_EQ(printed(nn::CELU()), "CELU(alpha=1.0)");
  EXPECT_EQ(printed(nn::CELU(nn::CELUOptions().alpha(2.5).inplace(true))), "CELU(alpha=2.5, inplace=True)");
  EXPECT_EQ(printed(nn::Softsign()), "Softsign()");
  EXPECT_EQ(printed(nn::Tanhshrink()), "Tanhshrink()");
  EXPECT_EQ(printed(nn::LogSigmoid()), "LogSigmoid()");
  EXPECT_EQ(printed(nn::Threshold(0.5, 0.0)), "Threshold(threshold=0.5, value=0.0)");
  EXPECT_EQ(printed(nn::Threshold(nn::ThresholdOptions(1.25, -2.0).inplace(true))),
            "Threshold(threshold=1.25, value=-2.0, inplace=True)");
  EXPECT_EQ(printed(nn::Softshrink()), "Softshrink(0.5)");
  EXPECT_EQ(printed(nn::Softshrink(1.5)), "Softshrink(1.5)");
  EXPECT_EQ(printed(nn::Hardshrink()), "Hardshrink(0.5)");
  EXPECT_EQ(printed(nn::Hardshrink(nn::HardshrinkOptions().lambda(2))), "Hardshrink(2.0)");
}

// The strings LibTorch 1.13 prints (std::cout << torch::nn::PReLU(), ...), torch:: renamed graft::.
TEST(Activation2Print, LibTorchForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::PReLU(nn::PReLUOptions().num_parameters(3).init(0.1))), "graft::nn::PReLU(num_parameters=3)");
  EXPECT_EQ(printed(nn::PReLU()), "graft::nn::PReLU(num_parameters=1)");
  EXPECT_EQ(printed(nn::RReLU()), "graft::nn::RReLU(lower=0.125, upper=0.333333)");
  EXPECT_EQ(printed(nn::RReLU(nn::RReLUOptions().lower(0.2).upper(0.4).inplace(true))),
            "graft::nn::RReLU(lower=0.2, upper=0.4, inplace=true)");
  EXPECT_EQ(printed(nn::CELU()), "graft::nn::CELU(alpha=1)");
  EXPECT_EQ(printed(nn::CELU(nn::CELUOptions().alpha(2.5).inplace(true))), "graft::nn::CELU(alpha=2.5, inplace=true)");
  EXPECT_EQ(printed(nn::Softsign()), "graft::nn::Softsign()");
  EXPECT_EQ(printed(nn::Tanhshrink()), "graft::nn::Tanhshrink()");
  EXPECT_EQ(printed(nn::LogSigmoid()), "graft::nn::LogSigmoid()");
  EXPECT_EQ(printed(nn::Threshold(0.5, 0)), "graft::nn::Threshold(threshold=0.5, value=0)");
  EXPECT_EQ(printed(nn::Threshold(nn::ThresholdOptions(1.25, -2).inplace(true))),
            "graft::nn::Threshold(threshold=1.25, value=-2, inplace=true)");
  EXPECT_EQ(printed(nn::Softshrink()), "graft::nn::Softshrink(0.5)");
  EXPECT_EQ(printed(nn::Softshrink(1.5)), "graft::nn::Softshrink(1.5)");
  EXPECT_EQ(printed(nn::Hardshrink()), "graft::nn::Hardshrink(0.5)");
  EXPECT_EQ(printed(nn::Hardshrink(nn::HardshrinkOptions().lambda(2))), "graft::nn::Hardshrink(2)");
}

}  // namespace
}  // namespace graft::test
