// float16 and bfloat16 tensors through the ops that compute them in float32 (Note [Half-precision
// compute] in src/ops/ops_common.h), forward and backward, against what PyTorch 1.13 computes:
// tests/fixtures/half_fixtures.txt, written by tests/fixtures/gen_half_fixtures.py (format there).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft {
namespace {

namespace F = nn::functional;

const std::vector<double> kX = {-3.0, -1.25, -0.5, -0.0078125, 0.0, 0.375, 1.0, 2.5, 7.0};
const std::vector<double> kY = {0.5, 2.0, -1.5, 3.0, 1.25, -0.75, 4.0, 0.25, -2.0};
const std::vector<double> kW = {1.0, -2.0, 0.5, 3.0, 1.5, -1.0, 0.25, 2.0, -0.5};

struct Row {
  std::string kind, op, dtype;
  std::vector<double> values;
};

std::vector<Row> fixture_rows() {
  std::ifstream in(std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "half_fixtures.txt");
  EXPECT_TRUE(in);
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    Row r;
    ss >> r.kind >> r.op >> r.dtype;
    for (double v; ss >> v;) r.values.push_back(v);
    rows.push_back(r);
  }
  return rows;
}

const std::map<std::string, std::function<Tensor(const Tensor&)>>& unary_ops() {
  static const std::map<std::string, std::function<Tensor(const Tensor&)>> ops = {
      {"exp", [](const Tensor& x) { return graft::exp(x); }},
      {"tanh", [](const Tensor& x) { return graft::tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return graft::sigmoid(x); }},
      {"log1p_abs", [](const Tensor& x) { return graft::log1p(graft::abs(x)); }},
      {"elu", [](const Tensor& x) { return F::elu(x, F::ELUFuncOptions().alpha(0.42)); }},
      {"celu", [](const Tensor& x) { return F::celu(x, F::CELUFuncOptions().alpha(4.2)); }},
      {"selu", [](const Tensor& x) { return F::selu(x); }},
      {"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.1)); }},
      {"gelu", [](const Tensor& x) { return F::gelu(x); }},
      {"silu", [](const Tensor& x) { return F::silu(x); }},
      {"softplus", [](const Tensor& x) { return F::softplus(x); }},
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }},
      {"hardtanh", [](const Tensor& x) { return F::hardtanh(x); }},
      {"clamp", [](const Tensor& x) { return x.clamp(-1.0, 2.0); }},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x, F::SoftshrinkFuncOptions(0.5)); }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); }},
      {"scale_shift", [](const Tensor& x) { return x * 0.3 + 1.0; }},
      {"sum", [](const Tensor& x) { return x.sum().reshape({1}); }},
      {"mean", [](const Tensor& x) { return x.mean().reshape({1}); }},
      {"max", [](const Tensor& x) { return x.max().reshape({1}); }},
  };
  return ops;
}

Tensor values(const std::vector<double>& v, DType dt) { return tensor(v, kFloat64).to(dt); }

// Within `ulps` units in the last place of the half dtype (8 significant bits for bfloat16, 11 for
// float16) of PyTorch's value: PyTorch's kernels may round an intermediate where graft does not.
void expect_close(const Tensor& got, const std::vector<double>& expected, DType dt, double ulps, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(expected.size())) << what;
  const double rel = std::ldexp(1.0, dt == kBFloat16 ? -7 : -10) * ulps;
  const Tensor g = got.to(kFloat64).reshape({-1});
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = expected[i], v = g[static_cast<int64_t>(i)].item<double>();
    EXPECT_LE(std::abs(v - e), rel * std::abs(e) + 1e-6) << what << " element " << i << ": " << v << " vs " << e;
  }
}

// Ops whose half-precision results differ from PyTorch 1.13's by more than a rounding: PyTorch's
// bfloat16 kernels for gelu and silu evaluate their formulas in bfloat16 steps (gelu(-3) is
// -0.00586 there, -0.00405 exactly), and its tanh and sigmoid backward read the output rounded to
// the half dtype (Note [Half-precision compute]). graft computes them in float32 and is held to
// the exact values, in float64, of the same inputs; PyTorch's values to those loosely.
struct Exact {
  double (*f)(double);
  double (*df)(double);
};
double sigmoid64(double x) { return 1.0 / (1.0 + std::exp(-x)); }
const std::map<std::string, Exact>& exact_ops() {
  static const std::map<std::string, Exact> ops = {
      {"tanh", {[](double x) { return std::tanh(x); }, [](double x) { return 1.0 - std::tanh(x) * std::tanh(x); }}},
      {"sigmoid", {sigmoid64, [](double x) { return sigmoid64(x) * (1.0 - sigmoid64(x)); }}},
      {"gelu",
       {[](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); },
        [](double x) {
          return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
        }}},
      {"silu",
       {[](double x) { return x * sigmoid64(x); },
        [](double x) { return sigmoid64(x) * (1.0 + x * (1.0 - sigmoid64(x))); }}},
  };
  return ops;
}
void expect_exact(const Tensor& got, const Row& r, bool grad, DType dt, const std::string& what) {
  const Exact& e = exact_ops().at(r.op);
  std::vector<double> exact;
  for (size_t i = 0; i < kX.size(); ++i) {
    const double x = values({kX[i]}, dt).to(kFloat64).item<double>();  // the input as the half dtype holds it
    exact.push_back(grad ? kW[i] * e.df(x) : e.f(x));
  }
  expect_close(got, exact, dt, grad ? 2 : 1, what + " (graft against the exact values)");
  for (size_t i = 0; i < kX.size(); ++i)
    EXPECT_LE(std::abs(r.values[i] - exact[i]), 0.004 + 0.2 * std::abs(exact[i])) << what << " (PyTorch) element " << i;
}

TEST(HalfCompute, ForwardAndBackwardMatchPyTorch) {
  const auto rows = fixture_rows();
  ASSERT_GT(rows.size(), 50u);
  int checked = 0;
  for (const Row& r : rows) {
    const DType dt = r.dtype == "bfloat16" ? kBFloat16 : kFloat16;
    const std::string what = r.kind + " " + r.op + " " + r.dtype;
    const Tensor x = values(kX, dt), y = values(kY, dt);
    if (r.kind == "fwd" && (r.op == "add" || r.op == "sub" || r.op == "mul" || r.op == "div")) {
      const Tensor got = r.op == "add" ? x + y : r.op == "sub" ? x - y : r.op == "mul" ? x * y : x / y;
      EXPECT_EQ(got.dtype(), dt) << what;
      expect_close(got, r.values, dt, 1, what);
      ++checked;
      continue;
    }
    auto it = unary_ops().find(r.op);
    ASSERT_NE(it, unary_ops().end()) << what;
    if (r.kind == "fwd") {
      const Tensor got = it->second(x);
      EXPECT_EQ(got.dtype(), dt) << what;
      if (exact_ops().count(r.op)) expect_exact(got, r, false, dt, what);
      else expect_close(got, r.values, dt, 1, what);
    } else {
      const Tensor xg = x.clone().requires_grad_(true);
      const Tensor out = it->second(xg);
      (out * values(kW, dt).narrow(0, 0, out.numel())).sum().backward();
      ASSERT_TRUE(xg.grad().defined()) << what;
      EXPECT_EQ(xg.grad().dtype(), dt) << what;
      if (exact_ops().count(r.op)) {
        expect_exact(xg.grad(), r, true, dt, what);
      } else {
        expect_close(xg.grad(), r.values, dt, 4, what);
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(rows.size()));
}

// In-place forms keep the tensor's dtype and write the rounded float32 result.
TEST(HalfCompute, InPlaceFormsKeepTheDtype) {
  Tensor x = values({-2.0, 0.5, 3.0}, kBFloat16);
  x.mul_(values({2.0, 2.0, 2.0}, kBFloat16));
  x.add_(1.0);
  EXPECT_EQ(x.dtype(), kBFloat16);
  expect_close(x, {-3.0, 2.0, 7.0}, kBFloat16, 0, "mul_ then add_");
  F::elu(x, F::ELUFuncOptions().inplace(true));
  EXPECT_EQ(x.dtype(), kBFloat16);
  // elu(-3) = expm1(-3) = -0.950212..., which bfloat16 holds as -0.94921875 (nearest)
  expect_close(x, {-0.94921875, 2.0, 7.0}, kBFloat16, 0, "elu_");
}

// bool + bool is bool, true where either is (PyTorch's cast of a + b to bool).
TEST(HalfCompute, BoolPlusBoolIsLogicalOr) {
  const Tensor a = tensor({true, true, false, false}), b = tensor({true, false, true, false});
  const Tensor c = a + b;
  EXPECT_EQ(c.dtype(), kBool);
  EXPECT_TRUE(c.equal(tensor({true, true, true, false})));
}

}  // namespace
}  // namespace graft
