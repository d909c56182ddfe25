// The activations' scalar math, written once: gelu's constants, the forward formulas of the
// strided and double paths, and the derivatives in terms of what the backward saves (y for relu,
// sigmoid and tanh; x for gelu). Used by the strided ops (src/ops/elementwise.cpp), the fast float32
// kernels (vec_f32.h), the fused epilogue (linear_epilogue.cpp) and the fused recurrent cells
// (src/ops/rnn.cpp and vec_f32.cpp's LSTM / GRU loops; their float32 forward uses vec_f32.h's
// sigmoid_f32 / tanh_f32, the float64 one the templates below).
//
// The float32 forward formulas and gelu's float32 derivatives are vectorisable rewrites
// (Note [Fast float32 gelu] in vec_f32.h: rational fits, exp by bit tricks) and cannot be the
// templates below; they share gelu's constants from here (kGeluSqrt2OverPiF, ...), exactly the float
// values they were measured with.
//
// The derivative templates accept graft::Tensor as T too (sigmoid_grad, tanh_grad, gelu_grad,
// gelu_tanh_grad): the recorded backward (create_graph) evaluates the same expression with graft
// ops, found by argument-dependent lookup (graft::exp, graft::tanh, ...), so this header includes
// nothing above the kernels layer. Literals are written as the tensor formulas had them (double
// scalars; one<T>() is T(1) for float and double), so every path keeps its rounding.
#pragma once

#include <cmath>
#include <numbers>
#include <type_traits>

namespace graft::kernels::activation {

// gelu's constants: sqrt(2/pi), 1/sqrt(2), 1/sqrt(2 pi), and the cubic coefficient of the tanh form.
inline constexpr double kSqrt2OverPi = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;
inline constexpr double kInvSqrt2 = 1.0 / std::numbers::sqrt2;
inline constexpr double kInvSqrt2Pi = kInvSqrt2 * std::numbers::inv_sqrtpi;
inline constexpr double kGeluC = 0.044715;
// The same in float32, for the vectorised formulas (d/du of the cubic: 3 kGeluC).
inline constexpr float kSqrt2OverPiF = static_cast<float>(kSqrt2OverPi);
inline constexpr float kInvSqrt2PiF = static_cast<float>(kInvSqrt2Pi);
inline constexpr float kGeluCF = static_cast<float>(kGeluC);
inline constexpr float kGeluC3F = static_cast<float>(3.0 * kGeluC);

// 1 in x's arithmetic: T(1) for float and double, the double scalar 1.0 for a Tensor.
template <class T>
constexpr auto one() {
  if constexpr (std::is_arithmetic_v<T>) return T(1);
  else return 1.0;
}

// ---- forward (scalars) ----
template <class T>
T relu(T v) {
  return v < T(0) ? T(0) : v;  // NaN passes through
}
template <class T>
T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}
// approximate = "none": x Phi(x) = x/2 (1 + erf(x / sqrt 2)).
template <class T>
T gelu(T v) {
  return T(0.5) * v * (T(1) + std::erf(v * static_cast<T>(kInvSqrt2)));
}
// approximate = "tanh": x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
template <class T>
T gelu_tanh(T v) {
  const T u = static_cast<T>(kSqrt2OverPi) * (v + static_cast<T>(kGeluC) * v * v * v);
  return T(0.5) * v * (T(1) + std::tanh(u));
}

// SELU's two constants (Klambauer et al. 2017): selu(x) = scale * elu(x, alpha).
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;
template <class T>
T selu(T v) {
  return static_cast<T>(kSeluScale) * (v > T(0) ? v : static_cast<T>(kSeluAlpha) * std::expm1(v));
}
// softplus without overflow: log(1 + e^x) = max(x, 0) + log1p(e^-|x|).
template <class T>
T softplus_stable(T v) {
  return (v > T(0) ? v : T(0)) + std::log1p(std::exp(-std::abs(v)));
}
// mish(x) = x tanh(softplus(x)).
template <class T>
T mish(T v) {
  return v * std::tanh(softplus_stable(v));
}
// hardtanh(x) = min(max(x, lo), hi); NaN passes through. relu6 is hardtanh(x, 0, 6).
template <class T>
T hardtanh(T v, T lo, T hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
// hardsigmoid(x) = relu6(x + 3) / 6; hardswish(x) = x relu6(x + 3) / 6.
template <class T>
T hardsigmoid(T v) {
  return hardtanh<T>(v + T(3), T(0), T(6)) / T(6);
}
template <class T>
T hardswish(T v) {
  return v * hardtanh<T>(v + T(3), T(0), T(6)) / T(6);
}

// ---- derivatives ----
// g * relu'(x) from y = relu(x): g where y > 0, else 0 (scalars; the recorded form is a 0/1 mask).
template <class T>
T relu_grad_times(T g, T y) {
  return y > T(0) ? g : T(0);
}
// sigmoid'(x) = y (1 - y).
template <class T>
T sigmoid_grad(const T& y) {
  return y * (one<T>() - y);
}
// g * sigmoid'(x) from y = sigmoid(x), multiplied as (g y)(1 - y): the order of the fused LSTM and
// GRU cells' backward (src/ops/rnn.cpp, vec_f32.cpp), whose gate gradients are rounded so.
template <class T>
T sigmoid_grad_times(T g, T y) {
  return g * y * (one<T>() - y);
}
// tanh'(x) = 1 - y^2.
template <class T>
T tanh_grad(const T& y) {
  return one<T>() - y * y;
}
// gelu'(x), approximate = "none": Phi(x) + x phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2,
// phi(x) = exp(-x^2 / 2) / sqrt(2 pi). double or Tensor.
template <class T>
T gelu_grad(const T& x) {
  using std::erf;
  using std::exp;
  const T cdf = (erf(x * kInvSqrt2) + 1.0) * 0.5;
  const T pdf = exp(x * x * -0.5) * kInvSqrt2Pi;
  return cdf + x * pdf;
}
// gelu'(x), approximate = "tanh": with u = k (x + c x^3), t = tanh(u):
// (1 + t) / 2 + x/2 (1 - t^2) k (1 + 3c x^2). double or Tensor.
template <class T>
T gelu_tanh_grad(const T& x) {
  using std::tanh;
  const T x2 = x * x;
  const T t = tanh((x + x2 * x * kGeluC) * kSqrt2OverPi);
  const T du = (x2 * (3.0 * kGeluC) + 1.0) * kSqrt2OverPi;
  return (t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * du;
}

// mish'(x) = t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x)); `sp` is softplus(x), `sg` sigmoid(x)
// (passed in, so that the Tensor form can take them from recorded ops). double or Tensor.
template <class T>
T mish_grad(const T& x, const T& sp, const T& sg) {
  using std::tanh;
  const T t = tanh(sp);
  return t + x * sg * (one<T>() - t * t);
}
// The piecewise-linear activations' derivatives, as PyTorch's backward kernels define them at the
// kinks: hardswish' = 0 for x < -3, x/3 + 1/2 for -3 <= x < 3, 1 from 3 on (so -1/2 at -3 and 1 at 3:
// PyTorch 1.13's vectorised kernel, which computes all but a tensor's last few elements; its scalar
// tail takes 3/2 at 3);
// hardsigmoid' = 1/6 strictly inside (-3, 3), else 0; hardtanh' = 1 strictly inside (lo, hi), else 0.
// Each is (slope, offset) of the piece containing x: derivative = slope * x + offset, so that the
// recorded backward is differentiable again (the second derivative is the slope).
struct Piece {
  double slope, offset;
};
inline Piece hardswish_grad_piece(double x) {
  if (x < -3.0) return {0.0, 0.0};
  if (x < 3.0) return {1.0 / 3.0, 0.5};
  return {0.0, 1.0};
}
inline double hardsigmoid_grad(double x) { return x > -3.0 && x < 3.0 ? 1.0 / 6.0 : 0.0; }
inline double hardtanh_grad(double x, double lo, double hi) { return x > lo && x < hi ? 1.0 : 0.0; }
}  // namespace graft::kernels::activation
