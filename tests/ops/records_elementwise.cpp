// Op records: pow, square, reciprocal, the unary math functions, the activations, clamp,
// clamp_min/clamp_max, maximum/minimum and the
// in-place forms relu_, sigmoid_, clamp_. Plus plain tests of what the generic runner cannot see:
// tie splitting, pow's zero masking, integer dtypes, grad_fn names.
#include <cmath>
#include <limits>
#include <numbers>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// Broadcasting samples for binary ops: same shape, row vector, column vector, 0-dim.
std::vector<TensorList> ranged_binary_samples(double lo0, double hi0, double lo1, double hi1) {
  return {{r({2, 3}, 21, lo0, hi0), r({2, 3}, 22, lo1, hi1)},
          {r({2, 3}, 23, lo0, hi0), r({3}, 24, lo1, hi1)},
          {r({2, 1}, 25, lo0, hi0), r({1, 4}, 26, lo1, hi1)},
          {r({4}, 27, lo0, hi0), r({}, 28, lo1, hi1)}};
}

// One-input samples: a random block in [lo, hi] and a column, both away from the kinks the caller avoids
// by choosing lo/hi; `extra` adds hand-picked values.
std::vector<TensorList> unary_samples(double lo, double hi, std::vector<double> extra = {}) {
  std::vector<TensorList> s{{r({2, 3}, 31, lo, hi)}, {r({4, 1}, 32, lo, hi)}};
  if (!extra.empty()) {
    const int64_t n = static_cast<int64_t>(extra.size());
    s.push_back({make(extra, {n})});
  }
  return s;
}

// Values of [-2, 2] at least 0.1 from 0 (for abs, sign, relu, leaky_relu, elu: kinks at 0).
std::vector<TensorList> away_from_zero() {
  return {{make({-1.7, -0.4, 0.3, 1.1, -0.9, 1.9}, {2, 3})},
          {make({0.25, -1.3, 0.8, -0.15}, {4, 1})},
          {make({-2.5, 1.4}, {2})}};
}

using Fn1 = std::function<double(double)>;
std::function<Tensor(const TensorList&)> ref1(Fn1 f) {
  return [f](const TensorList& a) { return ref_map(a, [f](auto& v) { return f(v[0]); }); };
}

// A float16 input to an op without a half-precision path: the op must say so.
ErrorCase half_input(std::function<Tensor(const Tensor&)> f, const char* op) {
  return {[f] { f(zeros({2}, kFloat16)); }, {op, "float16"}};
}

// The floating functions take every dtype (integers and bool compute in float32, halves through
// float32: Note [Half-precision compute]) and every shape: there is no input to reject.
OpRecord any_input(OpRecord r) {
  r.no_misuse = "every dtype and shape is valid input";
  r.half = true;
  return r;
}

OpRecord unary(std::string name, std::string variant, std::function<Tensor(const Tensor&)> f, Fn1 ref,
               std::vector<TensorList> samples, std::vector<ErrorCase> errors) {
  return OpRecord{.name = std::move(name),
                  .variant = std::move(variant),
                  .fn = [f](const TensorList& a) { return f(a[0]); },
                  .reference = ref1(std::move(ref)),
                  .samples = [samples] { return samples; },
                  .errors = std::move(errors)};
}

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

}  // namespace

GRAFT_OP_RECORDS(elementwise) {
  std::vector<OpRecord> recs;

  // ---- pow ----
  recs.push_back(
      {.name = "pow",
       .variant = "tensor_tensor",
       .fn = [](const TensorList& a) { return pow(a[0], a[1]); },
       .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return std::pow(v[0], v[1]); }); },
       .samples = [] { return ranged_binary_samples(0.5, 2, -2, 2); },
       .errors = {shape_mismatch([](auto& a, auto& b) { return pow(a, b); }, "pow")}});
  recs.push_back({.name = "pow", .variant = "tensor_int_scalar",
                  .fn = [](const TensorList& a) { return a[0].pow(3); },
                  .reference = ref1([](double x) { return x * x * x; }),
                  .samples = [] { return unary_samples(-2, 2); },
                  .errors = {{[] { pow(tensor({1, 2}), -1); }, {"pow", "negative", "-1"}}}});
  recs.push_back({.name = "pow", .variant = "tensor_float_scalar",
                  .fn = [](const TensorList& a) { return pow(a[0], -1.5); },
                  .reference = ref1([](double x) { return 1.0 / (x * std::sqrt(x)); }),
                  .samples = [] { return unary_samples(0.5, 2); },
                  .errors = {half_input([](auto& x) { return pow(x, 2.0); }, "pow")}});
  recs.push_back({.name = "pow", .variant = "zero_exponent",
                  .fn = [](const TensorList& a) { return pow(a[0], 0); },
                  .reference = ref1([](double) { return 1.0; }),
                  .samples = [] { return unary_samples(-2, 2); }});
  recs.push_back({.name = "pow", .variant = "scalar_tensor",
                  .fn = [](const TensorList& a) { return pow(1.7, a[0]); },
                  .reference = ref1([](double x) { return std::exp(x * std::log(1.7)); }),
                  .samples = [] { return unary_samples(-2, 2); },
                  .errors = {{[] { pow(2.0, zeros({2}, kFloat16)); }, {"pow", "float16"}}}});
  recs.push_back(unary("square", "", [](auto& x) { return square(x); }, [](double x) { return x * x; },
                       unary_samples(-2, 2), {{[] { square(zeros({2}, kFloat16)); }, {"pow", "float16"}}}));
  recs.push_back(any_input(unary("reciprocal", "", [](auto& x) { return reciprocal(x); }, [](double x) { return 1.0 / x; },
                       unary_samples(0.5, 2, {-1.5, -0.6}), {})));

  // ---- unary math ----
  recs.push_back(any_input(unary("exp", "", [](auto& x) { return exp(x); }, [](double x) { return std::exp(x); },
                       unary_samples(-2, 2, {-30.0, 5.0}), {})));
  recs.push_back(any_input(unary("log", "", [](auto& x) { return log(x); }, [](double x) { return std::log(x); },
                       unary_samples(0.3, 3, {1e-3, 50.0}), {})));
  recs.push_back(any_input(unary("log1p", "", [](auto& x) { return x.log1p(); }, [](double x) { return std::log(1.0 + x); },
                       unary_samples(-0.5, 2), {})));
  recs.push_back(any_input(unary("sqrt", "", [](auto& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); },
                       unary_samples(0.2, 4, {0.01, 100.0}), {})));
  recs.push_back(any_input(unary("rsqrt", "", [](auto& x) { return rsqrt(x); }, [](double x) { return 1.0 / std::sqrt(x); },
                       unary_samples(0.2, 4), {})));
  recs.push_back(unary("abs", "", [](auto& x) { return abs(x); }, [](double x) { return x < 0 ? -x : x; },
                       away_from_zero(), {{[] { abs(tensor({true, false})); }, {"abs", "bool"}}}));
  recs.push_back(any_input(unary("sign", "", [](auto& x) { return sign(x); },
                       [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, away_from_zero(), {})));
  recs.push_back(any_input(unary("sin", "", [](auto& x) { return sin(x); }, [](double x) { return std::sin(x); },
                       unary_samples(-4, 4), {})));
  recs.push_back(any_input(unary("cos", "", [](auto& x) { return cos(x); }, [](double x) { return std::cos(x); },
                       unary_samples(-4, 4), {})));
  recs.push_back(any_input(unary("erf", "", [](auto& x) { return erf(x); }, [](double x) { return std::erf(x); },
                       unary_samples(-2.5, 2.5), {})));

  // ---- activations ----
  recs.push_back(any_input(unary("tanh", "", [](auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); },
                       unary_samples(-3, 3, {-20.0, 20.0}), {})));
  recs.push_back(unary("tanh", "functional", [](auto& x) { return F::tanh(x); }, [](double x) { return std::tanh(x); },
                       unary_samples(-3, 3), {}));
  recs.push_back(any_input(unary("sigmoid", "", [](auto& x) { return sigmoid(x); }, sigmoid_ref,
                       unary_samples(-4, 4, {-40.0, 40.0}), {})));
  recs.push_back(unary("sigmoid", "functional", [](auto& x) { return F::sigmoid(x); }, sigmoid_ref, unary_samples(-4, 4), {}));
  recs.push_back(unary("relu", "", [](auto& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0.0; },
                       away_from_zero(), {{[] { relu(tensor({true})); }, {"relu", "bool"}}}));
  recs.push_back(unary("relu", "functional", [](auto& x) { return F::relu(x); }, [](double x) { return x > 0 ? x : 0.0; },
                       away_from_zero(), {}));
  recs.push_back(unary("leaky_relu", "", [](auto& x) { return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)); },
                       [](double x) { return x > 0 ? x : 0.2 * x; }, away_from_zero(),
                       {int_input([](auto& x) { return F::leaky_relu(x); }, "leaky_relu")}));
  recs.push_back(unary("leaky_relu", "default_slope", [](auto& x) { return F::leaky_relu(x); },
                       [](double x) { return x > 0 ? x : 0.01 * x; }, away_from_zero(), {}));
  recs.push_back(unary("gelu", "none", [](auto& x) { return F::gelu(x); }, gelu_ref, unary_samples(-3, 3, {-8.0, 0.0, 6.0}),
                       {{[] { F::gelu(zeros({2}), F::GELUFuncOptions().approximate("bad")); }, {"gelu", "\"bad\"", "tanh"}},
                        int_input([](auto& x) { return F::gelu(x); }, "gelu")}));
  recs.push_back(unary("gelu", "tanh", [](auto& x) { return F::gelu(x, F::GELUFuncOptions().approximate("tanh")); },
                       gelu_tanh_ref, unary_samples(-3, 3, {-8.0, 0.0, 6.0}), {}));
  recs.push_back(unary("silu", "", [](auto& x) { return F::silu(x); }, [](double x) { return x * sigmoid_ref(x); },
                       unary_samples(-4, 4, {-30.0, 0.0, 30.0}), {int_input([](auto& x) { return F::silu(x); }, "silu")}));
  // softplus: log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (samples avoid the switch).
  recs.push_back(unary("softplus", "default", [](auto& x) { return F::softplus(x); },
                       [](double x) { return x > 20 ? x : std::log(1.0 + std::exp(x)); },
                       unary_samples(-3, 3, {-15.0, 19.0, 21.0, 25.0}),
                       {int_input([](auto& x) { return F::softplus(x); }, "softplus")}));
  recs.push_back(unary("softplus", "beta_threshold",
                       [](auto& x) { return F::softplus(x, F::SoftplusFuncOptions().beta(2.0).threshold(1.0)); },
                       [](double x) { return 2 * x > 1.0 ? x : std::log(1.0 + std::exp(2 * x)) / 2; },
                       {{make({-1.5, -0.3, 0.2, 0.8, 1.4, 2.0}, {2, 3})}, {make({0.35, 0.7, -2.0}, {3})}}, {}));
  recs.push_back(unary("elu", "", [](auto& x) { return F::elu(x, F::ELUFuncOptions().alpha(1.5)); },
                       [](double x) { return x > 0 ? x : 1.5 * (std::exp(x) - 1.0); },
                       [] {
                         auto s = away_from_zero();
                         s.push_back({make({-30.0, 800.0}, {2})});  // exp(800) overflows: the gradient must not
                         return s;
                       }(),
                       {int_input([](auto& x) { return F::elu(x); }, "elu")}));

  // ---- clamp (samples away from the bounds) ----
  const auto clamp_samples = [] {
    return std::vector<TensorList>{{make({-1.7, -0.4, 0.3, 1.1, -0.9, 1.9}, {2, 3})},
                                   {make({0.25, -1.3, 0.95, -0.15}, {4, 1})}};
  };
  recs.push_back(unary("clamp", "min_max", [](auto& x) { return clamp(x, -0.5, 0.8); },
                       [](double x) { return x < -0.5 ? -0.5 : (x > 0.8 ? 0.8 : x); }, clamp_samples(),
                       {{[] { clamp(zeros({2}), std::nullopt, std::nullopt); }, {"clamp", "min", "max"}},
                        {[] { clamp(tensor({true}), 0, 1); }, {"clamp", "bool"}}}));
  recs.push_back(unary("clamp", "max_only", [](auto& x) { return x.clamp(std::nullopt, 0.8); },
                       [](double x) { return x > 0.8 ? 0.8 : x; }, clamp_samples(), {}));
  recs.push_back(unary("clamp_min", "", [](auto& x) { return clamp_min(x, -0.5); },
                       [](double x) { return x < -0.5 ? -0.5 : x; }, clamp_samples(),
                       {{[] { clamp_min(tensor({true}), 0.0); }, {"clamp_min", "bool"}}}));
  recs.push_back(unary("clamp_max", "method", [](auto& x) { return x.clamp_max(0.8); },
                       [](double x) { return x > 0.8 ? 0.8 : x; }, clamp_samples(),
                       {{[] { clamp_max(tensor({true}), 0.0); }, {"clamp_max", "bool"}}}));

  // ---- maximum / minimum ----
  recs.push_back(
      {.name = "maximum",
       .fn = [](const TensorList& a) { return maximum(a[0], a[1]); },
       .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] > v[1] ? v[0] : v[1]; }); },
       .samples = [] { return ranged_binary_samples(-2, 2, -2, 2); },
       .errors = {shape_mismatch([](auto& a, auto& b) { return maximum(a, b); }, "maximum")}});
  recs.push_back(
      {.name = "minimum",
       .fn = [](const TensorList& a) { return a[0].minimum(a[1]); },
       .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] < v[1] ? v[0] : v[1]; }); },
       .samples = [] { return ranged_binary_samples(-2, 2, -2, 2); },
       .errors = {shape_mismatch([](auto& a, auto& b) { return minimum(a, b); }, "minimum")}});
  // Ties: not differentiable in the finite-difference sense (see the plain tests below for the 0.5 split).
  const auto tie_samples = [] {
    return std::vector<TensorList>{{make({1.0, -2.0, 0.5, 3.0}, {2, 2}), make({1.0, 1.0, 0.5, -1.0}, {2, 2})}};
  };
  recs.push_back({.name = "maximum", .variant = "ties",
                  .fn = [](const TensorList& a) { return maximum(a[0], a[1]); },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] > v[1] ? v[0] : v[1]; }); },
                  .samples = tie_samples,
                  .gradcheck = false});
  recs.push_back({.name = "minimum", .variant = "ties",
                  .fn = [](const TensorList& a) { return minimum(a[0], a[1]); },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] < v[1] ? v[0] : v[1]; }); },
                  .samples = tie_samples,
                  .gradcheck = false});

  // ---- in-place forms, on a non-leaf copy so the graph goes through the in-place node ----
  auto inplace = [](std::string name, std::function<void(Tensor&)> op, Fn1 f, std::vector<TensorList> samples,
                    std::vector<ErrorCase> more_errors) {
    std::vector<ErrorCase> errors{{[op] {
                                     Tensor leaf = zeros({2}, requires_grad());
                                     op(leaf);
                                   }, {name, "leaf", "NoGradGuard"}}};
    errors.insert(errors.end(), more_errors.begin(), more_errors.end());
    return OpRecord{.name = name,
                    .fn = [op](const TensorList& a) {
                      Tensor y = a[0] * 1.0;
                      op(y);
                      return y;
                    },
                    .reference = ref1(std::move(f)),
                    .samples = [samples] { return samples; },
                    .errors = std::move(errors)};
  };
  recs.push_back(inplace("relu_", [](Tensor& y) { y.relu_(); }, [](double x) { return x > 0 ? x : 0.0; }, away_from_zero(),
                         {{[] {
                            Tensor t = tensor({true, false});
                            t.relu_();
                          }, {"relu_", "bool"}}}));
  recs.push_back(inplace("sigmoid_", [](Tensor& y) { y.sigmoid_(); }, sigmoid_ref, unary_samples(-4, 4),
                         {{[] {
                            Tensor t = tensor({1, 2});
                            t.sigmoid_();
                          }, {"sigmoid_", "int64", "float32"}}}));
  recs.push_back(inplace("clamp_", [](Tensor& y) { y.clamp_(-0.5, 0.8); },
                         [](double x) { return x < -0.5 ? -0.5 : (x > 0.8 ? 0.8 : x); }, clamp_samples(),
                         {{[] {
                            Tensor t = tensor({1, 2});
                            t.clamp_(0.5);
                          }, {"clamp_", "int64", "float32"}},
                          {[] {
                            Tensor t = zeros({2});
                            t.clamp_(std::nullopt, std::nullopt);
                          }, {"clamp_", "min", "max"}}}));
  return recs;
}

// ---- plain tests ----
namespace {

std::vector<double> grad_of(const Tensor& t) { return values(t.grad()); }

TEST(Elementwise, MaximumMinimumTiesSplitGradient) {
  // Hand-computed: where a == b each side gets 0.5 of the gradient.
  for (bool is_max : {true, false}) {
    Tensor a = tensor({1.0, 2.0, 3.0, -1.0}, kFloat64).requires_grad_();
    Tensor b = tensor({1.0, 3.0, 3.0, -2.0}, kFloat64).requires_grad_();
    Tensor y = is_max ? maximum(a, b) : minimum(a, b);
    (y * tensor({1.0, 2.0, 4.0, 8.0}, kFloat64)).sum().backward();
    if (is_max) {
      EXPECT_EQ(grad_of(a), (std::vector<double>{0.5, 0.0, 2.0, 8.0}));
      EXPECT_EQ(grad_of(b), (std::vector<double>{0.5, 2.0, 2.0, 0.0}));
    } else {
      EXPECT_EQ(grad_of(a), (std::vector<double>{0.5, 2.0, 2.0, 0.0}));
      EXPECT_EQ(grad_of(b), (std::vector<double>{0.5, 0.0, 2.0, 8.0}));
    }
  }
}

TEST(Elementwise, MaximumBroadcastTieGradientSumsDown) {
  Tensor a = tensor({{1.0, 5.0}, {2.0, 0.0}}, kFloat64).requires_grad_();
  Tensor b = tensor({2.0}, kFloat64).requires_grad_();
  maximum(a, b).sum().backward();
  EXPECT_EQ(grad_of(a), (std::vector<double>{0.0, 1.0, 0.5, 0.0}));
  EXPECT_EQ(grad_of(b), (std::vector<double>{1.0 + 0.5 + 1.0}));
}

TEST(Elementwise, MaximumPropagatesNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor y = maximum(tensor({nan, 1.0}, kFloat64), tensor({0.0, nan}, kFloat64));
  auto v = values(y);
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
}

TEST(Elementwise, PowMasksZeroBase) {
  // a = 0 with b >= 0: d/db is 0 (not 0 * -inf = NaN); b = 0: d/da is 0 (not 0 * 0^-1).
  Tensor a = tensor({0.0, 0.0, 2.0}, kFloat64).requires_grad_();
  Tensor b = tensor({0.0, 2.0, 1.0}, kFloat64).requires_grad_();
  Tensor y = pow(a, b);
  EXPECT_EQ(y.grad_fn()->name(), "PowBackward1");
  y.sum().backward();
  EXPECT_EQ(grad_of(a), (std::vector<double>{0.0, 0.0, 1.0}));
  auto gb = grad_of(b);
  EXPECT_EQ(gb[0], 0.0);
  EXPECT_EQ(gb[1], 0.0);
  EXPECT_NEAR(gb[2], 2.0 * std::log(2.0), 1e-15);
}

TEST(Elementwise, PowScalarBaseZero) {
  Tensor e = tensor({0.0, 1.5}, kFloat64).requires_grad_();
  Tensor y = pow(0.0, e);
  EXPECT_EQ(y.grad_fn()->name(), "PowBackward2");
  EXPECT_EQ(values(y), (std::vector<double>{1.0, 0.0}));
  y.sum().backward();
  EXPECT_EQ(grad_of(e), (std::vector<double>{0.0, 0.0}));
}

TEST(Elementwise, PowZeroExponentGivesZeroGradient) {
  Tensor x = tensor({0.0, -1.5, 2.0}, kFloat64).requires_grad_();
  Tensor y = pow(x, 0.0);
  EXPECT_EQ(y.grad_fn()->name(), "PowBackward0");
  y.sum().backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{0.0, 0.0, 0.0}));
}

TEST(Elementwise, IntegerDtypes) {
  Tensor i = tensor({1, 2, 3});
  Tensor p = i.pow(2);
  EXPECT_EQ(p.dtype(), kInt64);
  EXPECT_EQ(values(p), (std::vector<double>{1, 4, 9}));
  EXPECT_EQ(pow(i, 2.5).dtype(), kFloat32);
  Tensor q = pow(2, i);
  EXPECT_EQ(q.dtype(), kInt64);
  EXPECT_EQ(values(q), (std::vector<double>{2, 4, 8}));
  EXPECT_EQ(values(pow(i, tensor({3, 0, 1}))), (std::vector<double>{1, 1, 3}));
  Tensor e = exp(i);
  EXPECT_EQ(e.dtype(), kFloat32);
  EXPECT_TRUE(all_close(e, {std::exp(1.0), std::exp(2.0), std::exp(3.0)}, {3}, 1e-5, 1e-6));
  EXPECT_EQ(sigmoid(i).dtype(), kFloat32);
  EXPECT_EQ(sqrt(tensor({true, false})).dtype(), kFloat32);
  Tensor ri = relu(tensor({-2, 0, 3}));
  EXPECT_EQ(ri.dtype(), kInt64);
  EXPECT_EQ(values(ri), (std::vector<double>{0, 0, 3}));
  Tensor ai = abs(tensor({-2, 3}));
  EXPECT_EQ(ai.dtype(), kInt64);
  EXPECT_EQ(values(ai), (std::vector<double>{2, 3}));
  EXPECT_EQ(values(sign(tensor({-2, 0, 3}))), (std::vector<double>{-1, 0, 1}));
  Tensor ci = clamp(tensor({-5, 0, 5}), -1, 2);
  EXPECT_EQ(ci.dtype(), kInt64);
  EXPECT_EQ(values(ci), (std::vector<double>{-1, 0, 2}));
  EXPECT_EQ(clamp(tensor({-5, 0, 5}), 0.5).dtype(), kFloat32);
  Tensor mi = maximum(tensor({1, 5}), tensor({3, 2}));
  EXPECT_EQ(mi.dtype(), kInt64);
  EXPECT_EQ(values(mi), (std::vector<double>{3, 5}));
  Tensor t = tensor({-3, 4});
  t.clamp_(-1, 1);
  EXPECT_EQ(values(t), (std::vector<double>{-1, 1}));
}

TEST(Elementwise, ClampGradientInclusiveAtBounds) {
  Tensor x = tensor({-2.0, -1.0, 0.5, 1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = clamp(x, -1.0, 1.0);
  EXPECT_EQ(y.grad_fn()->name(), "ClampBackward1");
  y.sum().backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{0, 1, 1, 1, 0}));
  EXPECT_EQ(values(y), (std::vector<double>{-1, -1, 0.5, 1, 1}));
}

TEST(Elementwise, ClampPropagatesNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(values(clamp(tensor({nan}, kFloat64), 0.0, 1.0))[0]));
  EXPECT_TRUE(std::isnan(values(relu(tensor({nan}, kFloat64)))[0]));
}

TEST(Elementwise, GradFnNames) {
  Tensor x = tensor({0.5, 1.5}, kFloat64).requires_grad_();
  const std::vector<std::pair<Tensor, const char*>> cases{
      {exp(x), "ExpBackward0"},          {log(x), "LogBackward0"},        {log1p(x), "Log1PBackward0"},
      {sqrt(x), "SqrtBackward0"},        {rsqrt(x), "RsqrtBackward0"},    {abs(x), "AbsBackward0"},
      {sign(x), "SignBackward0"},        {sin(x), "SinBackward0"},        {cos(x), "CosBackward0"},
      {erf(x), "ErfBackward0"},          {tanh(x), "TanhBackward0"},      {sigmoid(x), "SigmoidBackward0"},
      {relu(x), "ReluBackward0"},        {pow(x, 2.0), "PowBackward0"},   {pow(x, x), "PowBackward1"},
      {pow(2.0, x), "PowBackward2"},     {square(x), "PowBackward0"},     {reciprocal(x), "ReciprocalBackward0"},
      {clamp_min(x, 0.0), "ClampMinBackward0"}, {clamp_max(x, 1.0), "ClampMaxBackward0"},
      {maximum(x, x), "MaximumBackward0"}, {minimum(x, x), "MinimumBackward0"},
      {F::leaky_relu(x), "LeakyReluBackward0"}, {F::gelu(x), "GeluBackward0"}, {F::silu(x), "SiluBackward0"},
      {F::softplus(x), "SoftplusBackward0"}, {F::elu(x), "EluBackward0"}};
  for (const auto& [y, name] : cases) EXPECT_EQ(y.grad_fn()->name(), name);
}

TEST(Elementwise, InplaceWithoutGrad) {
  Tensor t = tensor({-1.0, 0.0, 2.0}, kFloat64);
  t.relu_();
  EXPECT_EQ(values(t), (std::vector<double>{0, 0, 2}));
  Tensor s = tensor({0.0, 1.0}, kFloat64);
  s.sigmoid_();
  EXPECT_TRUE(all_close(s, {0.5, 1.0 / (1.0 + std::exp(-1.0))}, {2}));
  // Through a non-contiguous view: only the viewed elements change.
  Tensor base = tensor({-1.0, -2.0, 3.0, -4.0}, kFloat64);
  Tensor v = base.slice(0, 0, 4, 2);
  v.clamp_(0.0, 1.0);
  EXPECT_EQ(values(base), (std::vector<double>{0.0, -2.0, 1.0, -4.0}));
}

TEST(Elementwise, SoftplusLargeInputsAndElu) {
  // Linear above threshold; exact formula below. ELU's gradient stays finite for huge x.
  Tensor x = tensor({30.0, -50.0}, kFloat64).requires_grad_();
  Tensor y = F::softplus(x);
  EXPECT_TRUE(all_close(y, {30.0, std::log1p(std::exp(-50.0))}, {2}, 0, 1e-12));
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {1.0, 1.0 / (1.0 + std::exp(50.0))}, {2}, 0, 1e-12));
  Tensor z = tensor({1000.0, -1000.0}, kFloat64).requires_grad_();
  F::elu(z).sum().backward();
  EXPECT_EQ(grad_of(z), (std::vector<double>{1.0, 0.0}));
}

}  // namespace
}  // namespace graft::test
