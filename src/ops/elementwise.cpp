// Elementwise math: pow, the unary functions (exp, log, ..., relu), clamp, maximum/minimum, their
// in-place forms, and the activations leaky_relu, gelu, silu, softplus, elu, selu, mish, hardswish,
// hardsigmoid, hardtanh, relu6 and glu. Floating functions
// of integer or bool tensors compute in float32, as PyTorch's do. Backward formulas are written
// with graft ops (so gradients of gradients work); the 0/1 masks they use are constants computed by
// const_map.
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include "../core/dispatch.h"
#include "../kernels/activation_math.h"
#include "../kernels/loops.h"
#include "../kernels/vec_f32_tensor.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;
using detail::as_dtype;

namespace {

// Integer and bool inputs of floating functions compute in float32 (PyTorch's default dtype).
DType float_type(DType t) { return t == kInt64 || t == kBool ? kFloat32 : t; }

// y = f(x) elementwise in a floating dtype; float16/bfloat16 are a graft::Error naming `op`.
// A function object with a static bulk(const float*, float*, n) computes contiguous float32 arrays
// with it (tanh: Note [Fast float32 tanh]).
template <class F>
Tensor float_map(const Tensor& x, const char* op, F&& f) {
  memory::OpScope op_scope(op);  // names the allocation in the memory report
  const DType dt = float_type(x.dtype());
  if constexpr (requires(const float* in, float* out) { std::decay_t<F>::bulk(in, out, int64_t{0}); }) {
    if (x.dtype() == kFloat32 && x.is_contiguous() && !x.is_meta()) {  // meta: kernels::map (Note [Meta device])
      Tensor y = make_empty(x.sizes(), kFloat32);
      kernels::apply_f32(std::decay_t<F>::bulk, x, y);
      return y;
    }
  }
  return kernels::dispatch_floating(dt, op, [&]<class T>() {
    const Tensor cx = as_dtype(x, dt);
    return kernels::map<T, T>(dt, x.sizes(), [&f](T v) { return static_cast<T>(f(v)); }, cx);
  });
}

// y = f(x) for float32/float64 x only (activations that PyTorch does not define on integers).
template <class F>
Tensor floating_only_map(const Tensor& x, const char* op, F&& f) {
  return kernels::dispatch_floating(x.dtype(), op, [&]<class T>() {
    return kernels::map<T, T>(x.dtype(), x.sizes(), [&f](T v) { return static_cast<T>(f(v)); }, x);
  });
}

// f(x) (or f(a, b), broadcast) elementwise in dtype `out`, computed in dtype `dt`, outside autograd:
// the constant masks and factors of backward formulas.
template <class F>
Tensor const_map(DType dt, DType out, const Tensor& x, F&& f) {
  const Tensor cx = as_dtype(x, dt);
  return kernels::dispatch_floating(dt, "backward", [&]<class T>() {
    return kernels::dispatch_all(out, "backward", [&]<class R>() {
      return kernels::map<R, T>(out, x.sizes(), [&f](T v) { return static_cast<R>(f(v)); }, cx);
    });
  });
}
template <class F>
Tensor const_map(DType dt, DType out, const Tensor& a, const Tensor& b, F&& f) {
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), "backward");
  const Tensor ca = as_dtype(a, dt), cb = as_dtype(b, dt);
  return kernels::dispatch_floating(dt, "backward", [&]<class T>() {
    return kernels::dispatch_all(out, "backward", [&]<class R>() {
      return kernels::map<R, T, T>(out, shape, [&f](T u, T v) { return static_cast<R>(f(u, v)); }, ca, cb);
    });
  });
}
// A 0/1 mask of pred(x) in x's (floating) dtype.
template <class P>
Tensor mask(const Tensor& x, P&& pred) {
  return const_map(x.dtype(), x.dtype(), x, [&pred](auto v) { return pred(v) ? 1.0 : 0.0; });
}

enum class Saved { Input, Output };

// out = k(g, v) by a float32 array kernel when g and v are contiguous float32 tensors of one shape
// (the fused backward passes of Note [Fused backward passes]); undefined otherwise.
template <class K>
Tensor fused_f32(const Tensor& g, const Tensor& v, K&& kernel) {
  if (g.dtype() != kFloat32 || v.dtype() != kFloat32 || !g.is_contiguous() || !v.is_contiguous() ||
      !g.sizes().equals(v.sizes()))
    return {};
  // On meta the same allocation and no kernel, so that a plan on shapes alone allocates what the CPU
  // does (Note [Planning on shapes alone]): the op path would count three temporaries more.
  Tensor out = make_empty(g.sizes(), kFloat32, g.device());
  if (!out.is_meta()) kernels::apply_f32(kernel, g, v, out);
  return out;
}

// Note [Fused backward passes]
// Composite backward formulas (g * (1 - y * y)) allocate a temporary per operator: three buffers the
// size of the activation for tanh, where the result alone is needed. When the backward is not itself
// recorded (no create_graph), the common activations compute their input gradient in one pass that
// allocates only the result; tests/nn/test_memory_accounting.cpp (EngineMemory) holds the engine to
// that minimum.

// A floating unary op: y = f(x) by float_map, recorded as `node_name` with x or y saved.
template <class F, class B>
Tensor unary_float_op(const Tensor& x, OpId id, const char* node_name, Saved what, F&& f, B&& backward) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return unary_float_op(f32, id, node_name, what, f, backward); });
  Tensor y = float_map(x, ops::op_name(id), std::forward<F>(f));
  if (auto node = make_node(node_name, id, {&x}, std::forward<B>(backward))) {
    set_history(y, node);  // before saving y: a saved output must carry its grad_fn (Note [Saved tensors])
    node->save(what == Saved::Output ? y : x, what == Saved::Output);
  }
  return y;
}

// Integer power by squaring; negative exponents follow PyTorch's integer semantics (1, +-1 or 0).
int64_t int_pow(int64_t b, int64_t e) {
  if (e < 0) {
    if (b == 1) return 1;
    if (b == -1) return (e % 2 == 0) ? 1 : -1;
    return 0;
  }
  uint64_t r = 1, p = static_cast<uint64_t>(b);  // unsigned: overflow wraps as in PyTorch, without UB
  for (uint64_t k = static_cast<uint64_t>(e); k; k >>= 1) {
    if (k & 1) r *= p;
    p *= p;
  }
  return static_cast<int64_t>(r);
}

template <class T>
T pow_fn(T x, T e) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(int_pow(x, e));
  else return std::pow(x, e);
}

// The activations' scalar formulas and derivatives (kernels/activation_math.h).
namespace math = kernels::activation;

template <class T> T relu_fn(T v) { return math::relu(v); }
template <class T> T sigmoid_fn(T v) { return math::sigmoid(v); }
// float32: the vectorisable formula (Note [Fast float32 sigmoid]), so that every path gives its bits.
template <> float sigmoid_fn(float v) { return kernels::sigmoid_f32(v); }

// Bounds of clamp as optional doubles (cast to the kernel type at use).
struct Bounds {
  bool has_lo = false, has_hi = false;
  double lo = 0, hi = 0;
};
Bounds make_bounds(const std::optional<Scalar>& mn, const std::optional<Scalar>& mx) {
  return {mn.has_value(), mx.has_value(), mn ? mn->to_double() : 0.0, mx ? mx->to_double() : 0.0};
}
template <class T>
T clamp_fn(T v, const Bounds& b, T lo, T hi) {
  if (b.has_lo) v = v < lo ? lo : v;  // NaN passes through both
  if (b.has_hi) v = v > hi ? hi : v;
  return v;
}

// clamp's result dtype: the tensor's, or float32 when an integer tensor meets a floating bound.
DType clamp_type(const Tensor& x, const std::optional<Scalar>& mn, const std::optional<Scalar>& mx, const char* op) {
  GRAFT_CHECK(mn.has_value() || mx.has_value(), op, "at least one of min and max", "neither",
              "pass a bound: graft::clamp(x, 0.0) or graft::clamp(x, std::nullopt, 1.0)");
  GRAFT_CHECK(x.dtype() != kBool, op, "a numeric tensor", "a bool tensor", "convert it with .to(graft::kInt64)");
  DType dt = x.dtype();
  if (mn) dt = detail::result_type(x, *mn);
  if (mx && !is_floating_point(dt)) dt = detail::result_type(x, *mx);
  return dt;
}

Tensor clamp_impl(const Tensor& x, const std::optional<Scalar>& mn, const std::optional<Scalar>& mx, OpId id,
                  const char* node_name) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return clamp_impl(f32, mn, mx, id, node_name); });
  const char* op = ops::op_name(id);
  const DType dt = clamp_type(x, mn, mx, op);
  const Bounds b = make_bounds(mn, mx);
  const Tensor cx = as_dtype(x, dt);
  Tensor y = kernels::dispatch_numeric(dt, op, [&]<class T>() {
    const T lo = mn ? mn->to<T>() : T(0), hi = mx ? mx->to<T>() : T(0);
    return kernels::map<T, T>(dt, x.sizes(), [&b, lo, hi](T v) { return clamp_fn(v, b, lo, hi); }, cx);
  });
  if (auto node = make_node(node_name, id, {&x}, [b](Node& n, const Tensor& g) -> TensorList {
        // d clamp(x)/dx = 1 where min <= x <= max (inclusive), else 0
        return {g * mask(n.saved(0), [b](auto v) {
                  using T = decltype(v);
                  return (!b.has_lo || v >= static_cast<T>(b.lo)) && (!b.has_hi || v <= static_cast<T>(b.hi));
                })};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

// maximum / minimum: NaN propagates; ties split the gradient equally (0.5 each).
template <bool IsMax>
Tensor max_min(const Tensor& a, const Tensor& b, OpId id, const char* node_name) {
  const char* op = ops::op_name(id);
  const DType dt = detail::result_type(a, b);
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  const Tensor ca = as_dtype(a, dt), cb = as_dtype(b, dt);
  Tensor y = kernels::dispatch_all(dt, op, [&]<class T>() {
    return kernels::map<T, T, T>(dt, shape, [](T x, T z) -> T {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x)) return x;
        if (std::isnan(z)) return z;
      }
      if constexpr (IsMax) return x < z ? z : x;
      else return z < x ? z : x;
    }, ca, cb);
  });
  if (auto node = make_node(node_name, id, {&a, &b}, [](Node& n, const Tensor& g) -> TensorList {
        // d/da = 1 where a wins, d/db = 1 where b wins, 0.5 each on ties
        const Tensor sa = n.saved(0), sb = n.saved(1);
        const DType dt = g.dtype();
        auto share = [&](bool first) {
          return const_map(dt, dt, sa, sb, [first](auto x, auto z) {
            const bool wins = IsMax ? (first ? x > z : z > x) : (first ? x < z : z < x);
            return wins ? 1.0 : (x == z ? 0.5 : 0.0);
          });
        };
        const bool need_a = n.needs_input_grad(0), need_b = n.needs_input_grad(1);
        return {need_a ? g * share(true) : Tensor(), need_b ? g * share(false) : Tensor()};
      })) {
    node->save(a);
    node->save(b);
    set_history(y, node);
  }
  return y;
}

}  // namespace

// ---- pow ----
Tensor pow(const Tensor& base, const Tensor& exponent) {
  const DType dt = detail::result_type(base, exponent);
  const Shape shape = broadcast_shapes(base.sizes(), exponent.sizes(), "pow");
  Tensor y = kernels::dispatch_numeric(dt, "pow", [&]<class T>() {
    const Tensor ca = as_dtype(base, dt), ce = as_dtype(exponent, dt);
    return kernels::map<T, T, T>(dt, shape, [](T x, T e) { return pow_fn(x, e); }, ca, ce);
  });
  if (auto node = make_node("PowBackward1", OpId::pow, {&base, &exponent}, [](Node& n, const Tensor& g) -> TensorList {
        // d/da = b * a^(b-1) (0 where b == 0); d/db = a^b * log(a) (0 where a == 0 and b >= 0)
        const Tensor a = n.saved(0), b = n.saved(1);
        const bool need_a = n.needs_input_grad(0), need_b = n.needs_input_grad(1);
        const DType dt = g.dtype();
        Tensor ga, gb;
        if (need_a) {
          const Tensor b_zero = const_map(dt, kBool, b, [](auto e) { return e == 0; });
          ga = where(b_zero, Scalar(0.0), g * (b * pow(a, b - 1.0)));
        }
        if (need_b) {
          const Tensor masked = const_map(dt, kBool, a, b, [](auto x, auto e) { return x == 0 && e >= 0; });
          gb = g * where(masked, Scalar(0.0), n.saved(2) * log(a));
        }
        return {ga, gb};
      })) {
    set_history(y, node);
    node->save(base);
    node->save(exponent);
    node->save(y, /*is_output=*/true);
  }
  return y;
}

Tensor pow(const Tensor& base, const Scalar& exponent) {
  const DType dt = detail::result_type(base, exponent);
  GRAFT_CHECK(is_floating_point(dt) || exponent.to_long() >= 0, "pow", "a non-negative exponent for an integer tensor",
              "exponent " + std::to_string(exponent.to_long()),
              "integers to negative integer powers are not allowed; convert the tensor with .to(graft::kFloat32)");
  const Tensor cx = as_dtype(base, dt);
  Tensor y = kernels::dispatch_numeric(dt, "pow", [&]<class T>() {
    const T e = exponent.to<T>();
    if constexpr (std::is_floating_point_v<T>) {
      if (e == T(2)) return kernels::map<T, T>(dt, base.sizes(), [](T x) { return x * x; }, cx);
    }
    return kernels::map<T, T>(dt, base.sizes(), [e](T x) { return pow_fn(x, e); }, cx);
  });
  if (auto node = make_node("PowBackward0", OpId::pow, {&base}, [exponent](Node& n, const Tensor& g) -> TensorList {
        // d x^e/dx = e * x^(e-1), and 0 for e == 0
        if (exponent.to_double() == 0.0) return {zeros_like(g)};
        const Scalar e1 = exponent.is_floating_point() ? Scalar(exponent.to_double() - 1.0) : Scalar(exponent.to_long() - 1);
        return {g * (pow(n.saved(0), e1) * exponent)};
      })) {
    node->save(base);
    set_history(y, node);
  }
  return y;
}

Tensor pow(const Scalar& base, const Tensor& exponent) {
  const DType dt = detail::result_type(exponent, base);
  const Tensor ce = as_dtype(exponent, dt);
  Tensor y = kernels::dispatch_numeric(dt, "pow", [&]<class T>() {
    const T b = base.to<T>();
    return kernels::map<T, T>(dt, exponent.sizes(), [b](T e) { return pow_fn(b, e); }, ce);
  });
  const double s = base.to_double();
  if (auto node = make_node("PowBackward2", OpId::pow, {&exponent}, [s](Node& n, const Tensor& g) -> TensorList {
        // d s^e/de = s^e * log(s) (0 where s == 0 and e >= 0)
        const Tensor out = n.saved(0);
        if (s != 0.0) return {g * out * std::log(s)};
        const Tensor masked = const_map(g.dtype(), kBool, n.saved(1), [](auto e) { return e >= 0; });
        return {g * where(masked, Scalar(0.0), out * -std::numeric_limits<double>::infinity())};
      })) {
    set_history(y, node);
    node->save(y, /*is_output=*/true);
    node->save(exponent);
  }
  return y;
}

Tensor square(const Tensor& a) { return pow(a, 2); }

Tensor reciprocal(const Tensor& a) {
  return unary_float_op(a, OpId::reciprocal, "ReciprocalBackward0", Saved::Output, [](auto v) { return 1 / v; },
                        [](Node& n, const Tensor& g) -> TensorList {
                          const Tensor y = n.saved(0);
                          return {-(g * (y * y))};  // d (1/x)/dx = -1/x^2 = -y^2
                        });
}

// ---- unary math ----
Tensor exp(const Tensor& x) {
  // float32: vectorised at the processor's width (Note [Fast float32 exp] in kernels/vec_f32.h).
  struct Exp {
    static void bulk(const float* in, float* out, int64_t n) { kernels::exp_f32(in, out, n); }
    float operator()(float v) const { return kernels::exp_f32(v); }
    double operator()(double v) const { return std::exp(v); }
  };
  return unary_float_op(x, OpId::exp, "ExpBackward0", Saved::Output, Exp{},
                        [](Node& n, const Tensor& g) -> TensorList {
                          return {g * n.saved(0)};  // d exp(x)/dx = exp(x)
                        });
}

Tensor log(const Tensor& x) {
  return unary_float_op(x, OpId::log, "LogBackward0", Saved::Input, [](auto v) { return std::log(v); },
                        [](Node& n, const Tensor& g) -> TensorList {
                          return {g / n.saved(0)};  // d log(x)/dx = 1/x
                        });
}

Tensor log1p(const Tensor& x) {
  return unary_float_op(x, OpId::log1p, "Log1PBackward0", Saved::Input, [](auto v) { return std::log1p(v); },
                        [](Node& n, const Tensor& g) -> TensorList {
                          return {g / (n.saved(0) + 1.0)};  // d log(1+x)/dx = 1/(1+x)
                        });
}

Tensor sqrt(const Tensor& x) {
  return unary_float_op(x, OpId::sqrt, "SqrtBackward0", Saved::Output, [](auto v) { return std::sqrt(v); },
                        [](Node& n, const Tensor& g) -> TensorList {
                          return {g / (n.saved(0) * 2.0)};  // d sqrt(x)/dx = 1/(2 sqrt(x))
                        });
}

Tensor rsqrt(const Tensor& x) {
  return unary_float_op(x, OpId::rsqrt, "RsqrtBackward0", Saved::Output, [](auto v) { return 1 / std::sqrt(v); },
                        [](Node& n, const Tensor& g) -> TensorList {
                          const Tensor y = n.saved(0);
                          return {g * (y * y * y) * -0.5};  // d x^(-1/2)/dx = -x^(-3/2)/2 = -y^3/2
                        });
}

Tensor abs(const Tensor& x) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return abs(f32); });
  Tensor y = kernels::dispatch_numeric(x.dtype(), "abs", [&]<class T>() {
    return kernels::map<T, T>(x.dtype(), x.sizes(), [](T v) { return v < T(0) ? static_cast<T>(-v) : v; }, x);
  });
  if (auto node = make_node("AbsBackward0", OpId::abs, {&x}, [](Node& n, const Tensor& g) -> TensorList {
        return {g * sign(n.saved(0))};  // d |x|/dx = sign(x)
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

Tensor sign(const Tensor& x) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return sign(f32); });
  Tensor y = kernels::dispatch_all(x.dtype(), "sign", [&]<class T>() {
    return kernels::map<T, T>(x.dtype(), x.sizes(), [](T v) -> T {
      if constexpr (std::is_same_v<T, bool>) return v;
      else return static_cast<T>((T(0) < v) - (v < T(0)));  // NaN gives 0, as PyTorch
    }, x);
  });
  if (auto node = make_node("SignBackward0", OpId::sign, {&x}, [](Node&, const Tensor& g) -> TensorList {
        return {zeros_like(g)};  // d sign(x)/dx = 0 (almost everywhere)
      }))
    set_history(y, node);
  return y;
}

Tensor sin(const Tensor& x) {
  return unary_float_op(x, OpId::sin, "SinBackward0", Saved::Input, [](auto v) { return std::sin(v); },
                        [](Node& n, const Tensor& g) -> TensorList {
                          return {g * cos(n.saved(0))};  // d sin(x)/dx = cos(x)
                        });
}

Tensor cos(const Tensor& x) {
  return unary_float_op(x, OpId::cos, "CosBackward0", Saved::Input, [](auto v) { return std::cos(v); },
                        [](Node& n, const Tensor& g) -> TensorList {
                          return {-(g * sin(n.saved(0)))};  // d cos(x)/dx = -sin(x)
                        });
}

Tensor erf(const Tensor& x) {
  return unary_float_op(x, OpId::erf, "ErfBackward0", Saved::Input, [](auto v) { return std::erf(v); },
                        [](Node& n, const Tensor& g) -> TensorList {
                          const Tensor s = n.saved(0);
                          // d erf(x)/dx = 2/sqrt(pi) exp(-x^2)
                          return {g * (exp(-(s * s)) * (2.0 * std::numbers::inv_sqrtpi))};
                        });
}

Tensor tanh(const Tensor& x) {
  // float32 without a libm call, vectorised at the processor's width (Note [Fast float32 tanh]).
  struct Tanh {
    static void bulk(const float* in, float* out, int64_t n) { kernels::tanh_f32(in, out, n); }
    float operator()(float v) const { return kernels::tanh_f32(v); }
    double operator()(double v) const { return std::tanh(v); }
  };
  return unary_float_op(x, OpId::tanh, "TanhBackward0", Saved::Output, Tanh{},
                        [](Node& n, const Tensor& g) -> TensorList {
                          return {detail::tanh_backward(g, n.saved(0))};
                        });
}

Tensor sigmoid(const Tensor& x) {
  // float32: vectorised at the processor's width (Note [Fast float32 sigmoid] in kernels/vec_f32.h).
  struct Sigmoid {
    static void bulk(const float* in, float* out, int64_t n) { kernels::sigmoid_f32(in, out, n); }
    float operator()(float v) const { return kernels::sigmoid_f32(v); }
    double operator()(double v) const { return sigmoid_fn(v); }
  };
  return unary_float_op(x, OpId::sigmoid, "SigmoidBackward0", Saved::Output, Sigmoid{},
                        [](Node& n, const Tensor& g) -> TensorList {
                          return {detail::sigmoid_backward(g, n.saved(0))};
                        });
}

namespace {
// relu of a float16/bfloat16 tensor (what autocast's products return, Note [Autocast]): exact in
// any precision, so computed on the 16-bit values, and the saved output takes 2 bytes per element.
Tensor relu_half(const Tensor& x) {
  Tensor y = kernels::dispatch_all_and_half(x.dtype(), "relu", [&]<class H>() -> Tensor {
    if constexpr (kernels::is_half_v<H>) {
      return kernels::map<H, H>(x.dtype(), x.sizes(), [](H v) { return v.to_float() < 0.0f ? H() : v; }, x);
    } else {
      GRAFT_ASSERT(false, "relu_half takes float16 or bfloat16");
      return Tensor();
    }
  });
  if (auto node = make_node("ReluBackward0", OpId::relu, {&x}, [](Node& n, const Tensor& g) -> TensorList {
        // g where y > 0, else 0; g has y's dtype (the engine casts it). With create_graph, in float32
        // with recorded ops (the engine rounds the result back to the half dtype).
        const Tensor y = n.saved(0);
        if (GradMode::is_enabled() && (g.requires_grad() || y.requires_grad()))
          return {g.to(kFloat32) * mask(y.to(kFloat32), [](auto v) { return v > 0; })};
        return {kernels::dispatch_all_and_half(y.dtype(), "relu", [&]<class H>() -> Tensor {
          if constexpr (kernels::is_half_v<H>) {
            return kernels::map<H, H, H>(y.dtype(), y.sizes(),
                                         [](H gv, H yv) { return yv.to_float() > 0.0f ? gv : H(); }, g.to(y.dtype()), y);
          } else {
            return Tensor();
          }
        })};
      })) {
    set_history(y, node);
    node->save(y, /*is_output=*/true);
  }
  return y;
}
}  // namespace

// ---- the activations' input gradients (declared in ops_common.h) ----
// Without create_graph: one fused pass that allocates only the result (Note [Fused backward
// passes]). With it: graft ops, so that the gradient is recorded and differentiable again.
namespace detail {
namespace {
bool recorded(const Tensor& g, const Tensor& s) {
  return GradMode::is_enabled() && (g.requires_grad() || s.requires_grad());
}
}  // namespace

Tensor relu_backward(const Tensor& g, const Tensor& y) {
  // d relu(x)/dx = 1 where y > 0: g where y > 0, else 0.
  if (!recorded(g, y)) {
    if (Tensor fast = fused_f32(g, y, [](const float* gp, const float* yp, float* out, int64_t cnt) {
          kernels::relu_backward_f32(gp, yp, out, cnt);
        });
        fast.defined())
      return fast;
    return const_map(g.dtype(), g.dtype(), g, y, [](auto gv, auto yv) { return math::relu_grad_times(gv, yv); });
  }
  return g * mask(y, [](auto v) { return v > 0; });
}

Tensor tanh_backward(const Tensor& g, const Tensor& y) {
  // d tanh(x)/dx = 1 - tanh(x)^2
  if (!recorded(g, y))
    return const_map(g.dtype(), g.dtype(), g, y, [](auto gv, auto yv) { return gv * math::tanh_grad(yv); });
  return g * math::tanh_grad(y);
}

Tensor sigmoid_backward(const Tensor& g, const Tensor& y) {
  // d sigmoid(x)/dx = y (1 - y)
  if (!recorded(g, y)) {
    if (Tensor fast = fused_f32(g, y, [](const float* gp, const float* yp, float* out, int64_t cnt) {
          kernels::sigmoid_backward_f32(gp, yp, out, cnt);
        });
        fast.defined())
      return fast;
    return const_map(g.dtype(), g.dtype(), g, y, [](auto gv, auto yv) { return gv * math::sigmoid_grad(yv); });
  }
  return g * math::sigmoid_grad(y);
}

Tensor gelu_backward(const Tensor& g, const Tensor& s, bool use_tanh) {
  if (!recorded(g, s)) {  // float32: the array kernel
    auto kernel = [use_tanh](const float* gp, const float* xp, float* out, int64_t cnt) {
      kernels::gelu_backward_f32(gp, xp, out, cnt, use_tanh);
    };
    if (Tensor fast = fused_f32(g, s, kernel); fast.defined()) return fast;
  }
  // With graft ops (recorded, or dtypes and layouts without an array kernel): the formulas of
  // activation_math.h evaluated on tensors.
  return g * (use_tanh ? math::gelu_tanh_grad(s) : math::gelu_grad(s));
}
}  // namespace detail

Tensor relu(const Tensor& x) {
  GRAFT_CHECK(x.dtype() != kBool, "relu", "a numeric tensor", "a bool tensor", "convert it with .to(graft::kFloat32)");
  if (x.dtype() == kFloat16 || x.dtype() == kBFloat16) return relu_half(x);
  Tensor y;
  if (x.dtype() == kFloat32 && x.is_contiguous() && !x.is_meta()) {  // the array kernel: the same bits as relu_fn
    y = make_empty(x.sizes(), kFloat32);
    kernels::relu_f32(x, y);
  } else {
    y = kernels::dispatch_numeric(x.dtype(), "relu", [&]<class T>() {
      return kernels::map<T, T>(x.dtype(), x.sizes(), [](T v) { return relu_fn(v); }, x);
    });
  }
  if (auto node = make_node("ReluBackward0", OpId::relu, {&x}, [](Node& n, const Tensor& g) -> TensorList {
        return {detail::relu_backward(g, n.saved(0))};
      })) {
    set_history(y, node);
    node->save(y, /*is_output=*/true);
  }
  return y;
}

// ---- clamp ----
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return clamp_impl(x, min, max, OpId::clamp, "ClampBackward1");
}
Tensor clamp_min(const Tensor& x, const Scalar& min) { return clamp_impl(x, min, std::nullopt, OpId::clamp_min, "ClampMinBackward0"); }
Tensor clamp_max(const Tensor& x, const Scalar& max) { return clamp_impl(x, std::nullopt, max, OpId::clamp_max, "ClampMaxBackward0"); }

// ---- maximum / minimum ----
Tensor maximum(const Tensor& a, const Tensor& b) { return max_min<true>(a, b, OpId::maximum, "MaximumBackward0"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return max_min<false>(a, b, OpId::minimum, "MinimumBackward0"); }

// ---- in-place forms (Note [In-place ops]) ----
Tensor& Tensor::relu_() const {
  Tensor& self = mut();
  GRAFT_CHECK(self.dtype() != kBool, "relu_", "a numeric tensor", "a bool tensor", "convert it with .to(graft::kFloat32)");
  return detail::inplace_op(
      self, "relu_", {},
      [&] {
        kernels::dispatch_numeric(self.dtype(), "relu_", [&]<class T>() {
          kernels::apply_inplace<T>(self, [](T v) { return relu_fn(v); });
        });
      },
      [](const Tensor& old) { return graft::relu(old); });
}

Tensor& Tensor::sigmoid_() const {
  Tensor& self = mut();
  detail::check_inplace_dtype(self, float_type(self.dtype()), "sigmoid_");
  return detail::inplace_op(
      self, "sigmoid_", {},
      [&] {
        kernels::dispatch_floating(self.dtype(), "sigmoid_", [&]<class T>() {
          kernels::apply_inplace<T>(self, [](T v) { return sigmoid_fn(v); });
        });
      },
      [](const Tensor& old) { return graft::sigmoid(old); });
}

Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  Tensor& self = mut();
  detail::check_inplace_dtype(self, clamp_type(self, min, max, "clamp_"), "clamp_");
  const Bounds b = make_bounds(min, max);
  return detail::inplace_op(
      self, "clamp_", {},
      [&] {
        kernels::dispatch_numeric(self.dtype(), "clamp_", [&]<class T>() {
          const T lo = min ? min->to<T>() : T(0), hi = max ? max->to<T>() : T(0);
          kernels::apply_inplace<T>(self, [&b, lo, hi](T v) { return clamp_fn(v, b, lo, hi); });
        });
      },
      [&](const Tensor& old) { return graft::clamp(old, min, max); });
}

// ---- activations ----
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return leaky_relu(f32, negative_slope); });
  const double slope = negative_slope;
  Tensor y = floating_only_map(x, "leaky_relu", [slope](auto v) {
    using T = decltype(v);
    return v > T(0) ? v : static_cast<T>(v * static_cast<T>(slope));
  });
  if (auto node = make_node("LeakyReluBackward0", OpId::leaky_relu, {&x}, [slope](Node& n, const Tensor& g) -> TensorList {
        // d/dx = 1 where x > 0, negative_slope elsewhere
        return {g * const_map(g.dtype(), g.dtype(), n.saved(0), [slope](auto v) { return v > 0 ? 1.0 : slope; })};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

Tensor gelu(const Tensor& x, std::string_view approximate) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return gelu(f32, approximate); });
  const std::string approx(approximate);
  GRAFT_CHECK(approx == "none" || approx == "tanh", "gelu", "approximate \"none\" or \"tanh\"",
              "approximate \"" + approx + "\"", "use GELUFuncOptions().approximate(\"tanh\") or leave the default");
  const bool use_tanh = approx == "tanh";
  // float32 (Note [Fast float32 gelu] in kernels/vec_f32.h): contiguous tensors by the array kernels,
  // others by the same scalar formulas.
  auto gelu_fn = [use_tanh](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float>) return use_tanh ? kernels::gelu_tanh_f32(v) : kernels::gelu_f32(v);
    return use_tanh ? math::gelu_tanh(v) : math::gelu(v);
  };
  Tensor y;
  if (x.dtype() == kFloat32 && x.is_contiguous() && !x.is_meta()) {  // meta: the map (Note [Meta device])
    y = make_empty(x.sizes(), kFloat32);
    if (use_tanh) kernels::gelu_tanh_f32(x, y);
    else kernels::gelu_f32(x, y);
  } else {
    y = floating_only_map(x, "gelu", gelu_fn);
  }
  if (auto node = make_node("GeluBackward0", OpId::gelu, {&x}, [use_tanh](Node& n, const Tensor& g) -> TensorList {
        return {detail::gelu_backward(g, n.saved(0), use_tanh)};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

Tensor silu(const Tensor& x) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return silu(f32); });
  Tensor y = floating_only_map(x, "silu", [](auto v) { return v * sigmoid_fn(v); });
  if (auto node = make_node("SiluBackward0", OpId::silu, {&x}, [](Node& n, const Tensor& g) -> TensorList {
        // d x sigmoid(x)/dx = s (1 + x (1 - s)), s = sigmoid(x)
        const Tensor s = n.saved(0);
        const Tensor sg = graft::sigmoid(s);
        return {g * (sg * (s * (1.0 - sg) + 1.0))};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return softplus(f32, beta, threshold); });
  Tensor y = floating_only_map(x, "softplus", [beta, threshold](auto v) {
    using T = decltype(v);
    const T bx = v * static_cast<T>(beta);
    return bx > static_cast<T>(threshold) ? v : static_cast<T>(std::log1p(std::exp(bx)) / static_cast<T>(beta));
  });
  if (auto node = make_node("SoftplusBackward0", OpId::softplus, {&x}, [beta, threshold](Node& n, const Tensor& g) -> TensorList {
        // dy/dx = sigmoid(beta x), and 1 where beta x > threshold (the linear part)
        const Tensor s = n.saved(0);
        const Tensor lin = const_map(g.dtype(), g.dtype(), s, [beta, threshold](auto v) {
          using T = decltype(v);
          return v * static_cast<T>(beta) > static_cast<T>(threshold) ? 1.0 : 0.0;
        });
        return {g * (graft::sigmoid(s * beta) * (1.0 - lin) + lin)};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

Tensor elu(const Tensor& x, double alpha) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return elu(f32, alpha); });
  Tensor y = floating_only_map(x, "elu", [alpha](auto v) {
    using T = decltype(v);
    return v > T(0) ? v : static_cast<T>(static_cast<T>(alpha) * std::expm1(v));
  });
  if (auto node = make_node("EluBackward0", OpId::elu, {&x}, [alpha](Node& n, const Tensor& g) -> TensorList {
        // dy/dx = 1 where x > 0, alpha exp(x) elsewhere (exp of min(x, 0) so large x cannot overflow)
        const Tensor s = n.saved(0);
        const Tensor pos = mask(s, [](auto v) { return v > 0; });
        return {g * (graft::exp(graft::clamp_max(s, 0.0)) * alpha * (1.0 - pos) + pos)};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

// ---- selu, mish, the hard activations, glu ----
// Formulas in kernels/activation_math.h; each backward is written with graft ops (the masks and
// piecewise slopes are constants of x), so that gradients of gradients work.
Tensor selu(const Tensor& x) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return selu(f32); });
  Tensor y = floating_only_map(x, "selu", [](auto v) { return math::selu(v); });
  if (auto node = make_node("EluBackward0", OpId::selu, {&x}, [](Node& n, const Tensor& g) -> TensorList {
        // dy/dx = scale where x > 0, scale alpha exp(x) elsewhere (exp of min(x, 0): no overflow)
        const Tensor s = n.saved(0);
        const Tensor pos = mask(s, [](auto v) { return v > 0; });
        const Tensor neg_part = graft::exp(graft::clamp_max(s, 0.0)) * (math::kSeluScale * math::kSeluAlpha);
        return {g * (neg_part * (1.0 - pos) + pos * math::kSeluScale)};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

Tensor mish(const Tensor& x) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return mish(f32); });
  Tensor y = floating_only_map(x, "mish", [](auto v) { return math::mish(v); });
  if (auto node = make_node("MishBackward0", OpId::mish, {&x}, [](Node& n, const Tensor& g) -> TensorList {
        // softplus with its linear part above 20: tanh of it is 1 there in float32 and float64 alike
        const Tensor s = n.saved(0);
        const Tensor sp = graft::softplus(s);
        return {g * math::mish_grad(s, sp, graft::sigmoid(s))};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

Tensor hardswish(const Tensor& x) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return hardswish(f32); });
  Tensor y = floating_only_map(x, "hardswish", [](auto v) { return math::hardswish(v); });
  if (auto node = make_node("HardswishBackward0", OpId::hardswish, {&x}, [](Node& n, const Tensor& g) -> TensorList {
        // dy/dx = slope * x + offset on x's piece (activation_math.h: hardswish_grad_piece)
        const Tensor s = n.saved(0);
        const DType dt = g.dtype();
        const Tensor slope = const_map(dt, dt, s, [](auto v) { return math::hardswish_grad_piece(v).slope; });
        const Tensor offset = const_map(dt, dt, s, [](auto v) { return math::hardswish_grad_piece(v).offset; });
        return {g * (s * slope + offset)};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

Tensor hardsigmoid(const Tensor& x) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return hardsigmoid(f32); });
  Tensor y = floating_only_map(x, "hardsigmoid", [](auto v) { return math::hardsigmoid(v); });
  if (auto node = make_node("HardsigmoidBackward0", OpId::hardsigmoid, {&x}, [](Node& n, const Tensor& g) -> TensorList {
        return {g * const_map(g.dtype(), g.dtype(), n.saved(0), [](auto v) { return math::hardsigmoid_grad(v); })};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}

namespace {
// hardtanh and relu6 (= hardtanh(x, 0, 6), as in PyTorch, so relu6's gradient is 0 at 0 and at 6).
// Numeric dtypes keep their dtype (PyTorch's hardtanh is a clamp); bool is an error.
Tensor hardtanh_impl(const Tensor& x, double lo, double hi, OpId id, const char* node_name) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return hardtanh_impl(f32, lo, hi, id, node_name); });
  const char* op = ops::op_name(id);
  GRAFT_CHECK(x.dtype() != kBool, op, "a numeric tensor", "a bool tensor", "convert it with .to(graft::kFloat32)");
  GRAFT_CHECK(!(lo > hi), op, "min_val <= max_val", "min_val " + std::to_string(lo) + " > max_val " + std::to_string(hi),
              "swap the bounds");
  Tensor y = kernels::dispatch_numeric(x.dtype(), op, [&]<class T>() {
    const T l = static_cast<T>(lo), h = static_cast<T>(hi);
    return kernels::map<T, T>(x.dtype(), x.sizes(), [l, h](T v) { return math::hardtanh(v, l, h); }, x);
  });
  if (auto node = make_node(node_name, id, {&x}, [lo, hi](Node& n, const Tensor& g) -> TensorList {
        return {g * const_map(g.dtype(), g.dtype(), n.saved(0), [lo, hi](auto v) {
                  return math::hardtanh_grad(static_cast<double>(v), lo, hi);
                })};
      })) {
    node->save(x);
    set_history(y, node);
  }
  return y;
}
}  // namespace

Tensor hardtanh(const Tensor& x, const Scalar& min_val, const Scalar& max_val) {
  return hardtanh_impl(x, min_val.to_double(), max_val.to_double(), OpId::hardtanh, "HardtanhBackward0");
}
Tensor relu6(const Tensor& x) { return hardtanh_impl(x, 0.0, 6.0, OpId::relu6, "HardtanhBackward0"); }

// glu: a composite of recorded ops (chunk, sigmoid, mul), so its backward and double backward are theirs.
Tensor glu(const Tensor& x, int64_t dim) {
  if (detail::is_half(x.dtype()))  // Note [Half-precision compute]
    return detail::through_float(x, [&](const Tensor& f32) { return glu(f32, dim); });
  GRAFT_CHECK(x.dim() > 0, "glu", "a tensor of at least 1 dim", "a 0-dim tensor", "glu halves a dimension");
  const int64_t d = wrap_dim(dim, x.dim(), "glu");
  GRAFT_CHECK(x.size(d) % 2 == 0, "glu", "an even size along dim " + std::to_string(dim),
              "size " + std::to_string(x.size(d)) + " in input of shape " + shape_str(x.sizes()),
              "glu splits the dim into two halves a, b and returns a * sigmoid(b)");
  GRAFT_CHECK(x.is_floating_point(), "glu", "a floating-point tensor", std::string("a tensor of dtype ") + dtype_name(x.dtype()),
              "convert it with .to(graft::kFloat32)");
  const int64_t h = x.size(d) / 2;
  return x.narrow(d, 0, h) * graft::sigmoid(x.narrow(d, h, h));
}

}  // namespace graft
