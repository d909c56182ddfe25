// The activations of issue 32 (graft/ops/activation2.h): prelu, rrelu, celu, threshold, hardshrink,
// softshrink, log_sigmoid, softsign, tanhshrink. Each op's forward kernel, backward and checks are
// here; as in elementwise.cpp, each backward is written with graft ops and constant masks of the
// saved input, so that gradients of gradients work. The formulas and edge conventions are ATen's
// (1.13): which side of a threshold an element exactly on it falls, noted at each op.
// Their records (tests/ops/records_activation2.cpp) check them against plain references;
// tests/nn/test_activation2.cpp against PyTorch's values. F::logsigmoid is LibTorch's name of the
// op log_sigmoid: both are listed (GRAFT_FORALL_OPS), the nodes carry log_sigmoid.
#include "graft/ops/activation2.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "../core/dispatch.h"
#include "../core/random_fill.h"
#include "../kernels/loops.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::Node;
using autograd::set_history;

namespace {

// y = f(x) for float32/float64 x (the activations ATen defines on floating types only).
template <class F>
Tensor floating_map(const Tensor& x, const char* op, F&& f) {
  return kernels::dispatch_floating(x.dtype(), op, [&]<class T>() {
    return kernels::map<T, T>(x.dtype(), x.sizes(), [&f](T v) { return static_cast<T>(f(v)); }, x);
  });
}

// f(x) in x's floating dtype, outside autograd: the masks and slopes of the backward formulas.
template <class F>
Tensor constant_map(const Tensor& x, F&& f) {
  return kernels::dispatch_floating(x.dtype(), "backward", [&]<class T>() {
    return kernels::map<T, T>(x.dtype(), x.sizes(), [&f](T v) { return static_cast<T>(f(v)); }, x);
  });
}

// A unary op of x recorded as `node_name`, saving x; backward(g, x) gives the input gradient.
template <class B>
Tensor record_unary(Tensor y, const Tensor& x, const char* node_name, OpId op, B&& backward) {
  if (auto node = make_node(node_name, op, {&x},
                                      [backward](Node& n, const Tensor& g) -> TensorList {
                                        return {backward(g, n.saved(0))};
                                      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

// The in-place forms: the op runs on a clone (so its backward saves no overwritten memory) and
// copy_ writes the result into self, recording the history there.
template <class F>
Tensor& inplace(Tensor& self, F&& op) {
  self.copy_(op(self.clone()));
  return self;
}

std::string fixed6(double v) { return std::to_string(v); }

}  // namespace

// ---- prelu ----
// A composite of recorded ops: where(x > 0, x, w * x), w viewed as (1, C, 1, ...) so that it
// broadcasts over dim 1. Its gradients are then PyTorch's: input g where x > 0 and w g elsewhere
// (x == 0 included), weight the sum of x g over x <= 0 per channel.
Tensor prelu(const Tensor& input, const Tensor& weight) {
  GRAFT_CHECK(input.defined() && weight.defined(), "prelu", "defined input and weight", "an undefined tensor",
              "PReLU's weight is its parameter: construct the module, or pass a tensor");
  GRAFT_CHECK(input.is_floating_point(), "prelu", "a floating-point input",
              std::string("a ") + dtype_name(input.dtype()) + " tensor", "convert it with .to(graft::kFloat32)");
  GRAFT_CHECK(weight.dtype() == input.dtype(), "prelu", "a weight of the input's dtype",
              std::string("input ") + dtype_name(input.dtype()) + ", weight " + dtype_name(weight.dtype()),
              "convert the weight with .to(input.dtype())");
  GRAFT_CHECK(weight.dim() <= 1, "prelu", "a 0-dim or 1-D weight",
              "a weight of " + std::to_string(weight.dim()) + " dims", "give one value per channel, or one value");
  const int64_t channels = input.dim() >= 2 ? input.size(1) : 1;
  const int64_t n = weight.numel();
  GRAFT_CHECK(n == 1 || n == channels, "prelu", "1 weight or one per input channel (dim 1: " +
              std::to_string(channels) + ")", std::to_string(n) + " weights",
              "set PReLUOptions().num_parameters() to the channel count, or to 1");
  std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
  if (n > 1) shape[1] = n;
  const Tensor w = weight.reshape(shape);
  return graft::where(graft::gt(input, 0), input, w * input);
}

// ---- rrelu ----
// Training: y = x * noise with noise (a constant) 1 where x > 0 and a slope drawn from [lower, upper]
// where x <= 0 (0 included, as ATen's rrelu_with_noise), so the gradient is g * noise.
Tensor rrelu(const Tensor& input, double lower, double upper, bool training, Generator* generator) {
  if (detail::is_half(input.dtype()))  // Note [Half-precision compute]
    return detail::through_float(input, [&](const Tensor& f32) { return rrelu(f32, lower, upper, training, generator); });
  GRAFT_CHECK(input.is_floating_point(), "rrelu", "a floating-point input",
              std::string("a ") + dtype_name(input.dtype()) + " tensor", "convert it with .to(graft::kFloat32)");
  GRAFT_CHECK(lower <= upper, "rrelu", "lower <= upper", "lower " + fixed6(lower) + ", upper " + fixed6(upper),
              "swap the bounds");
  if (!training) return graft::leaky_relu(input, (lower + upper) / 2);
  // As ATen: one uniform double in [lower, upper) per element <= 0, in element order (Note
  // [PyTorch's random streams]), rounded to the dtype; no draw for positive elements.
  const Tensor x = input.detach().contiguous();
  Tensor noise = graft::empty(x.sizes(), TensorOptions(x.dtype()).device(x.device()));
  if (!x.is_meta()) detail::rrelu_noise_fill(noise, x, lower, upper, generator ? *generator : default_generator());
  return input * noise;
}
Tensor& rrelu_(Tensor& self, double lower, double upper, bool training, Generator* generator) {
  return inplace(self, [&](const Tensor& x) { return rrelu(x, lower, upper, training, generator); });
}

// ---- celu ----
// ATen's elu with scale 1 and input_scale 1 / alpha: x > 0 ? x : alpha expm1(x * (1 / alpha));
// the gradient exp(x / alpha) where x <= 0 (1 at 0), 1 above.
Tensor celu(const Tensor& input, double alpha) {
  if (detail::is_half(input.dtype()))  // Note [Half-precision compute]
    return detail::through_float(input, [&](const Tensor& f32) { return celu(f32, alpha); });
  GRAFT_CHECK(alpha != 0, "celu", "alpha != 0", "alpha 0", "CELU divides by alpha: pass a nonzero alpha");
  const double inv = 1.0 / alpha;
  Tensor y = floating_map(input, "celu", [alpha, inv](auto v) {
    using T = decltype(v);
    return v <= T(0) ? static_cast<T>(std::expm1(v * static_cast<T>(inv)) * static_cast<T>(alpha)) : v;
  });
  return record_unary(std::move(y), input, "CeluBackward0", OpId::celu, [alpha, inv](const Tensor& g, const Tensor& x) {
    const Tensor pos = constant_map(x, [](auto v) { return v > 0 ? 1.0 : 0.0; });
    // exp of min(x, 0) / alpha, so that large x cannot overflow (the x > 0 side is masked out)
    const Tensor neg_slope = graft::exp(graft::clamp_max(x, 0.0) * inv) * (inv * alpha);
    return g * (neg_slope * (1.0 - pos) + pos);
  });
}
Tensor& celu_(Tensor& self, double alpha) {
  return inplace(self, [alpha](const Tensor& x) { return celu(x, alpha); });
}

// ---- threshold ----
// x <= threshold gives value (ATen's comparison: an element equal to threshold is replaced), and
// gradient 0 there; NaN passes through.
Tensor threshold(const Tensor& input, double threshold, double value) {
  if (detail::is_half(input.dtype()))  // Note [Half-precision compute]
    return detail::through_float(input, [&](const Tensor& f32) { return graft::threshold(f32, threshold, value); });
  GRAFT_CHECK(input.dtype() != kBool, "threshold", "a numeric tensor", "a bool tensor",
              "convert it with .to(graft::kFloat32)");
  Tensor y = kernels::dispatch_numeric(input.dtype(), "threshold", [&]<class T>() {
    const T t = static_cast<T>(threshold), val = static_cast<T>(value);
    return kernels::map<T, T>(input.dtype(), input.sizes(), [t, val](T v) { return v <= t ? val : v; }, input);
  });
  return record_unary(std::move(y), input, "ThresholdBackward0", OpId::threshold,
                      [threshold](const Tensor& g, const Tensor& x) {
                        return g * constant_map(x, [threshold](auto v) {
                                 return v <= static_cast<decltype(v)>(threshold) ? 0.0 : 1.0;
                               });
                      });
}
Tensor& threshold_(Tensor& self, double threshold_value, double value) {
  return inplace(self, [&](const Tensor& x) { return threshold(x, threshold_value, value); });
}

// ---- hardshrink, softshrink ----
// Both zero the band -lambd <= x <= lambd (its edges included) and pass the gradient outside it.
namespace {
template <class T> bool in_band(T v, double lambd) {
  return v >= static_cast<T>(-lambd) && v <= static_cast<T>(lambd);
}
Tensor shrink_backward(const Tensor& g, const Tensor& x, double lambd) {
  return g * constant_map(x, [lambd](auto v) { return in_band(v, lambd) ? 0.0 : 1.0; });
}
}  // namespace

Tensor hardshrink(const Tensor& input, double lambd) {
  if (detail::is_half(input.dtype()))  // Note [Half-precision compute]
    return detail::through_float(input, [&](const Tensor& f32) { return hardshrink(f32, lambd); });
  Tensor y = floating_map(input, "hardshrink", [lambd](auto v) {
    using T = decltype(v);
    return in_band(v, lambd) ? T(0) : v;
  });
  return record_unary(std::move(y), input, "HardshrinkBackward0", OpId::hardshrink,
                      [lambd](const Tensor& g, const Tensor& x) { return shrink_backward(g, x, lambd); });
}

Tensor softshrink(const Tensor& input, double lambd) {
  if (detail::is_half(input.dtype()))  // Note [Half-precision compute]
    return detail::through_float(input, [&](const Tensor& f32) { return softshrink(f32, lambd); });
  GRAFT_CHECK(lambd >= 0, "softshrink", "lambda >= 0", "lambda " + fixed6(lambd), "pass a non-negative lambda");
  Tensor y = floating_map(input, "softshrink", [lambd](auto v) {
    using T = decltype(v);
    const T l = static_cast<T>(lambd);
    return v > l ? v - l : (v < -l ? v + l : T(0));  // NaN gives 0, as PyTorch 1.13's kernels
  });
  return record_unary(std::move(y), input, "SoftshrinkBackward0", OpId::softshrink,
                      [lambd](const Tensor& g, const Tensor& x) { return shrink_backward(g, x, lambd); });
}

// ---- log_sigmoid ----
// min(x, 0) - log1p(exp(-|x|)): no overflow for large |x|. Gradient sigmoid(-x).
Tensor log_sigmoid(const Tensor& input) {
  if (detail::is_half(input.dtype()))  // Note [Half-precision compute]
    return detail::through_float(input, [&](const Tensor& f32) { return log_sigmoid(f32); });
  Tensor y = floating_map(input, "log_sigmoid", [](auto v) {
    using T = decltype(v);
    return std::min(v, T(0)) - std::log1p(std::exp(-std::abs(v)));
  });
  return record_unary(std::move(y), input, "LogSigmoidBackward0", OpId::log_sigmoid,
                      [](const Tensor& g, const Tensor& x) { return g * graft::sigmoid(-x); });
}

// ---- softsign, tanhshrink: PyTorch's own compositions ----
// A bool input is an error here, as in PyTorch (abs of bool; bool minus a tensor).
Tensor softsign(const Tensor& input) {
  if (detail::is_half(input.dtype()))  // Note [Half-precision compute]
    return detail::through_float(input, [&](const Tensor& f32) { return softsign(f32); });
  GRAFT_CHECK(input.dtype() != kBool, "softsign", "a numeric tensor", "a bool tensor", "convert it with .to(graft::kFloat32)");
  return input / (graft::abs(input) + 1.0);
}
Tensor tanhshrink(const Tensor& input) {
  if (detail::is_half(input.dtype()))  // Note [Half-precision compute]
    return detail::through_float(input, [&](const Tensor& f32) { return tanhshrink(f32); });
  GRAFT_CHECK(input.dtype() != kBool, "tanhshrink", "a numeric tensor", "a bool tensor",
              "convert it with .to(graft::kFloat32)");
  return input - graft::tanh(input);
}

}  // namespace graft
