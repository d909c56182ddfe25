// Op records: selu, mish, hardswish, hardsigmoid, hardtanh, relu6 and glu. References are plain
// loops in double written from the definitions; samples stay away from the kinks (+-3 for the hard
// ones, the bounds for hardtanh / relu6), where PyTorch's one-sided choices are checked against its
// own values instead (test_act_loss_fixtures.cpp). Plus plain tests of the kinks' gradients and the
// in-place options.
#include <cmath>
#include <functional>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

using Fn1 = std::function<double(double)>;

OpRecord unary_record(std::string name, std::string variant, std::function<Tensor(const Tensor&)> f, Fn1 ref,
                      std::function<std::vector<TensorList>()> samples, std::vector<ErrorCase> errors) {
  return OpRecord{.name = std::move(name),
                  .variant = std::move(variant),
                  .fn = [f](const TensorList& a) { return f(a[0]); },
                  .reference = [ref](const TensorList& a) { return ref_map(a, [ref](auto& v) { return ref(v[0]); }); },
                  .samples = std::move(samples),
                  .errors = std::move(errors)};
}

// Values in [-5, 5] at least 0.1 away from -3, 0, 3 and 6 (the kinks of the hard activations).
std::vector<TensorList> off_kinks() {
  return {{make({-4.6, -2.4, -0.7, 0.4, 2.2, 4.1}, {2, 3})},
          {make({-3.4, 2.8, 1.3, -1.9}, {4, 1})},
          {make({-0.25, 6.5, 5.2, -8.0}, {4})}};
}

double selu_ref(double x) {
  const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  return x > 0 ? scale * x : scale * alpha * (std::exp(x) - 1.0);
}
double relu6_ref(double x) { return std::min(std::max(x, 0.0), 6.0); }

// glu's reference: a * sigmoid(b) for the halves along `dim` of a row-major (d0, d1) input.
Tensor glu_ref(const Tensor& x, int64_t dim) {
  const auto v = values(x);
  const int64_t d0 = x.size(0), d1 = x.size(1);
  std::vector<double> out;
  if (dim == 1) {
    for (int64_t i = 0; i < d0; ++i)
      for (int64_t j = 0; j < d1 / 2; ++j) {
        const double a = v[static_cast<size_t>(i * d1 + j)], b = v[static_cast<size_t>(i * d1 + j + d1 / 2)];
        out.push_back(a / (1.0 + std::exp(-b)));
      }
    return make(out, {d0, d1 / 2});
  }
  for (int64_t i = 0; i < d0 / 2; ++i)
    for (int64_t j = 0; j < d1; ++j) {
      const double a = v[static_cast<size_t>(i * d1 + j)], b = v[static_cast<size_t>((i + d0 / 2) * d1 + j)];
      out.push_back(a / (1.0 + std::exp(-b)));
    }
  return make(out, {d0 / 2, d1});
}

}  // namespace

GRAFT_OP_RECORDS(activations) {
  std::vector<OpRecord> recs;
  recs.push_back(unary_record(
      "selu", "", [](auto& x) { return F::selu(x); }, selu_ref,
      [] {
        auto s = off_kinks();
        s.push_back({make({-30.0, 800.0}, {2})});  // exp(800) overflows: the gradient must not
        return s;
      },
      {int_input([](auto& x) { return selu(x); }, "selu")}));
  recs.push_back(unary_record(
      "mish", "", [](auto& x) { return F::mish(x); }, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); },
      [] {
        auto s = off_kinks();
        s.push_back({make({-40.0, 30.0}, {2})});
        return s;
      },
      {int_input([](auto& x) { return mish(x); }, "mish")}));
  recs.push_back(unary_record(
      "hardswish", "", [](auto& x) { return F::hardswish(x); }, [](double x) { return x * relu6_ref(x + 3.0) / 6.0; },
      off_kinks, {int_input([](auto& x) { return hardswish(x); }, "hardswish")}));
  recs.push_back(unary_record(
      "hardsigmoid", "", [](auto& x) { return F::hardsigmoid(x); }, [](double x) { return relu6_ref(x + 3.0) / 6.0; },
      off_kinks, {int_input([](auto& x) { return hardsigmoid(x); }, "hardsigmoid")}));
  recs.push_back(unary_record(
      "hardtanh", "default", [](auto& x) { return F::hardtanh(x); },
      [](double x) { return std::min(std::max(x, -1.0), 1.0); }, off_kinks,
      {{[] { hardtanh(tensor({true})); }, {"hardtanh", "bool"}},
       {[] { hardtanh(zeros({2}), 2.0, 1.0); }, {"hardtanh", "min_val <= max_val"}}}));
  recs.push_back(unary_record(
      "hardtanh", "bounds", [](auto& x) { return F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2.0).max_val(0.5)); },
      [](double x) { return std::min(std::max(x, -2.0), 0.5); }, off_kinks, {}));
  recs.push_back(unary_record("relu6", "", [](auto& x) { return F::relu6(x); }, relu6_ref, off_kinks,
                              {{[] { relu6(tensor({true})); }, {"relu6", "bool"}}}));
  for (int64_t dim : {1, 0}) {
    recs.push_back({.name = "glu", .variant = "dim" + std::to_string(dim),
                    .fn = [dim](const TensorList& a) { return F::glu(a[0], F::GLUFuncOptions(dim)); },
                    .reference = [dim](const TensorList& a) { return glu_ref(a[0], dim); },
                    .samples = [] { return std::vector<TensorList>{{r({4, 6}, 41)}, {r({2, 4}, 42, -4, 4)}}; },
                    .errors = {{[] { glu(zeros({2, 3})); }, {"glu", "even", "[2, 3]"}},
                               {[] { glu(zeros({2, 4}), 2); }, {"glu", "dim 2"}},
                               {[] { glu(tensor({1, 2})); }, {"glu", "floating-point", "int64"}}}});
  }
  return recs;
}

namespace {

// Gradients at the kinks, as PyTorch's backward kernels choose them (values measured with PyTorch 1.13;
// hardswish at 3: its vectorised kernel's 1, not its scalar tail's 3/2).
TEST(HardActivations, GradientsAtTheKinks) {
  Tensor x = tensor({-3.0, 3.0, 0.0, 6.0}, kFloat64).requires_grad_();
  auto grad_of = [&](const std::function<Tensor(const Tensor&)>& f) {
    x.mutable_grad() = Tensor();
    f(x).sum().backward();
    return values(x.grad());
  };
  EXPECT_EQ(grad_of([](auto& t) { return hardswish(t); }), (std::vector<double>{-0.5, 1.0, 0.5, 1.0}));
  EXPECT_EQ(grad_of([](auto& t) { return hardsigmoid(t); }), (std::vector<double>{0.0, 0.0, 1.0 / 6.0, 0.0}));
  EXPECT_EQ(grad_of([](auto& t) { return relu6(t); }), (std::vector<double>{0.0, 1.0, 0.0, 0.0}));
  EXPECT_EQ(grad_of([](auto& t) { return hardtanh(t, -3.0, 3.0); }), (std::vector<double>{0.0, 0.0, 1.0, 0.0}));
  const auto selu_grad = grad_of([](auto& t) { return selu(t); });
  EXPECT_NEAR(selu_grad[2], 1.6732632423543772 * 1.0507009873554805, 1e-15);  // x = 0 takes the exp side
}

TEST(HardActivations, IntegerHardtanhKeepsItsDtype) {
  const Tensor y = relu6(tensor({-3, 0, 9}));
  EXPECT_EQ(y.dtype(), kInt64);
  EXPECT_EQ(values(y), (std::vector<double>{0, 0, 6}));
  EXPECT_EQ(values(hardtanh(tensor({-3, 0, 2}))), (std::vector<double>{-1, 0, 1}));
}

TEST(HardActivations, InplaceOptionsOverwriteTheInputAndKeepTheGradient) {
  const Tensor leaf = tensor({-2.0, 0.5, 7.0}, kFloat64).requires_grad_();
  Tensor x = leaf * 1.0;
  const Tensor y = F::relu6(x, F::ReLU6FuncOptions(true));
  EXPECT_EQ(values(x), (std::vector<double>{0.0, 0.5, 6.0}));
  EXPECT_EQ(y.data_ptr<double>(), x.data_ptr<double>());
  y.sum().backward();
  EXPECT_EQ(values(leaf.grad()), (std::vector<double>{0.0, 1.0, 0.0}));
  Tensor z = tensor({-1.0, 2.0}, kFloat64);
  F::selu(z, F::SELUFuncOptions().inplace(true));
  EXPECT_NEAR(values(z)[1], 2.0 * 1.0507009873554805, 1e-15);
  Tensor h = tensor({-4.0, 0.25}, kFloat64);
  F::hardtanh(h, F::HardtanhFuncOptions().inplace(true));
  EXPECT_EQ(values(h), (std::vector<double>{-1.0, 0.25}));
}

TEST(HardActivations, GradFnNames) {
  const Tensor x = tensor({0.5}, kFloat64).requires_grad_();
  EXPECT_EQ(selu(x).grad_fn()->name(), "EluBackward0");  // PyTorch's name: selu is a scaled elu
  EXPECT_EQ(mish(x).grad_fn()->name(), "MishBackward0");
  EXPECT_EQ(hardswish(x).grad_fn()->name(), "HardswishBackward0");
  EXPECT_EQ(hardsigmoid(x).grad_fn()->name(), "HardsigmoidBackward0");
  EXPECT_EQ(relu6(x).grad_fn()->name(), "HardtanhBackward0");
}

}  // namespace
}  // namespace graft::test
