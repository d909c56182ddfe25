// Arithmetic: add, sub, mul, div, neg (tensor-tensor with broadcasting, and tensor-scalar), their
// in-place forms, and the C++ operators. Gradients come back in the broadcast shape; the engine
// sums them down (Note [The engine validates gradients]).
#include <type_traits>

#include "../core/dispatch.h"
#include "../kernels/loops.h"
#include "../kernels/vec_f32_tensor.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;
using detail::as_dtype;

namespace {
// y = f(a, b) elementwise in dtype `dt`, a and b broadcast together.
template <class F>
Tensor binary_kernel(const Tensor& a, const Tensor& b, DType dt, const char* op, F&& f) {
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  const Tensor ca = as_dtype(a, dt), cb = as_dtype(b, dt);
  return kernels::dispatch_numeric(dt, op, [&]<class T>() {
    return kernels::map<T, T, T>(dt, shape, [&f](T x, T y) { return f(x, y); }, ca, cb);
  });
}
template <class F>
Tensor scalar_kernel(const Tensor& a, DType dt, const char* op, F&& f) {
  const Tensor ca = as_dtype(a, dt);
  return kernels::dispatch_numeric(dt, op, [&]<class T>() {
    return kernels::map<T, T>(dt, a.sizes(), [&f](T x) { return f(x); }, ca);
  });
}
DType true_div_type(DType t) { return is_floating_point(t) ? t : kFloat32; }

// float32 fast paths (Note [Fast float32 kernels] in kernels/vec_f32.h), the same bits as the
// generic loops: contiguous a and b of one shape, b a 0-dim tensor, or b a row [C] (or [1, C], ...)
// broadcast over a [..., C] (a bias). An undefined tensor when the case is not one of these.
using kernels::BinaryOp;
Tensor binary_f32(const Tensor& a, const Tensor& b, BinaryOp op, float alpha) {
  if (a.dtype() != kFloat32 || b.dtype() != kFloat32 || !a.is_contiguous() || !b.is_contiguous()) return {};
  if (a.is_meta() || b.is_meta()) return {};  // the generic loop makes the meta result (Note [Meta device])
  if (a.sizes().equals(b.sizes())) {
    Tensor y = make_empty(a.sizes(), kFloat32);
    kernels::binary_f32(op, a, b, alpha, y);
    return y;
  }
  if (b.dim() == 0) {  // x op alpha * v, rounded as the generic loop rounds it
    Tensor y = make_empty(a.sizes(), kFloat32);
    kernels::binary_0dim_f32(op, a, b, alpha, y);
    return y;
  }
  if (a.dim() >= 1 && b.dim() <= a.dim() && b.size(b.dim() - 1) == a.size(a.dim() - 1) &&
      b.numel() == b.size(b.dim() - 1)) {
    const int64_t cols = a.size(a.dim() - 1);
    Tensor y = make_empty(a.sizes(), kFloat32);
    kernels::binary_row_f32(op, a, b, alpha, y, cols == 0 ? 0 : a.numel() / cols, cols);
    return y;
  }
  return {};
}
// a op s for a contiguous float32 a (undefined otherwise).
Tensor scalar_f32(const Tensor& a, DType dt, BinaryOp op, float s) {
  if (dt != kFloat32 || a.dtype() != kFloat32 || !a.is_contiguous() || a.is_meta()) return {};  // meta: generic loop
  Tensor y = make_empty(a.sizes(), kFloat32);
  kernels::binary_scalar_f32(op, a, s, y);
  return y;
}
}  // namespace

// ---- add: y = a + alpha * b ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  const DType dt = detail::result_type(a, b);
  // Notes [Narrow integer dtypes] and [Half-precision compute] (ops_common.h)
  if (detail::is_reduced(dt)) return add(detail::widen(a), detail::widen(b), alpha).to(dt);
  // bool + bool is bool, true where either is (PyTorch computes a + alpha b and casts it to bool)
  if (dt == kBool && alpha.to_double() == 1.0) return logical_or(a, b);
  Tensor y = binary_f32(a, b, BinaryOp::Add, alpha.to<float>());
  if (!y.defined()) y = kernels::dispatch_numeric(dt, "add", [&]<class T>() {
    const T al = alpha.to<T>();
    return binary_kernel(a, b, dt, "add", [al](T x, T z) { return static_cast<T>(x + al * z); });
  });
  if (auto node = make_node("AddBackward0", OpId::add, {&a, &b}, [alpha](Node&, const Tensor& g) -> TensorList {
        return {g, alpha.to_double() == 1.0 ? g : g * alpha};  // d/da = 1, d/db = alpha
      }))
    set_history(y, node);
  return y;
}

Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  const DType dt = detail::result_type(a, b);
  if (detail::is_reduced(dt)) return add(detail::widen(a), detail::half_scalar(b, dt), alpha).to(dt);
  Tensor y = scalar_f32(a, dt, BinaryOp::Add, b.to<float>() * alpha.to<float>());
  if (!y.defined()) y = kernels::dispatch_numeric(dt, "add", [&]<class T>() {
    const T v = static_cast<T>(b.to<T>() * alpha.to<T>());
    return scalar_kernel(a, dt, "add", [v](T x) { return static_cast<T>(x + v); });
  });
  if (auto node = make_node("AddBackward1", OpId::add, {&a}, [](Node&, const Tensor& g) -> TensorList { return {g}; }))
    set_history(y, node);
  return y;
}

// ---- sub: y = a - alpha * b ----
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  GRAFT_CHECK(a.dtype() != kBool || b.dtype() != kBool, "sub", "numeric tensors", "two bool tensors",
              "use graft::logical_xor-style ops (a != b) for bools");
  const DType dt = detail::result_type(a, b);
  if (detail::is_reduced(dt)) return sub(detail::widen(a), detail::widen(b), alpha).to(dt);
  Tensor y = binary_f32(a, b, BinaryOp::Sub, alpha.to<float>());
  if (!y.defined()) y = kernels::dispatch_numeric(dt, "sub", [&]<class T>() {
    const T al = alpha.to<T>();
    return binary_kernel(a, b, dt, "sub", [al](T x, T z) { return static_cast<T>(x - al * z); });
  });
  if (auto node = make_node("SubBackward0", OpId::sub, {&a, &b}, [alpha](Node&, const Tensor& g) -> TensorList {
        return {g, g * (-alpha.to_double())};  // d/da = 1, d/db = -alpha
      }))
    set_history(y, node);
  return y;
}

// a - alpha * b with a Python-style scalar: the dtype is promoted as for add (an int64 tensor minus
// 1 stays int64, as in PyTorch), and the node is SubBackward1. Floating dtypes add the negated
// product, rounded once from double, which is what sub computed before it had its own kernel.
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  DType dt = detail::result_type(a, b);
  if (!is_floating_point(dt) && alpha.is_floating_point()) dt = detail::result_type(a, alpha);
  if (detail::is_reduced(dt)) return sub(detail::widen(a), detail::half_scalar(b, dt), alpha).to(dt);
  const double neg = -(b.to_double() * alpha.to_double());
  Tensor y = scalar_f32(a, dt, BinaryOp::Add, static_cast<float>(neg));
  if (!y.defined()) y = kernels::dispatch_numeric(dt, "sub", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T v = static_cast<T>(neg);
      return scalar_kernel(a, dt, "sub", [v](T x) { return static_cast<T>(x + v); });
    } else {
      const T v = static_cast<T>(b.to<T>() * alpha.to<T>());
      return scalar_kernel(a, dt, "sub", [v](T x) { return static_cast<T>(x - v); });
    }
  });
  if (auto node = make_node("SubBackward1", OpId::sub, {&a}, [](Node&, const Tensor& g) -> TensorList { return {g}; }))
    set_history(y, node);
  return y;
}

Tensor rsub(const Tensor& a, const Scalar& b) {  // b - a
  const DType dt = detail::result_type(a, b);
  if (detail::is_reduced(dt)) return rsub(detail::widen(a), detail::half_scalar(b, dt)).to(dt);
  Tensor y = kernels::dispatch_numeric(dt, "rsub", [&]<class T>() {
    const T v = b.to<T>();
    return scalar_kernel(a, dt, "rsub", [v](T x) { return static_cast<T>(v - x); });
  });
  if (auto node = make_node("RsubBackward1", OpId::rsub, {&a}, [](Node&, const Tensor& g) -> TensorList { return {-g}; }))
    set_history(y, node);
  return y;
}

// ---- mul: y = a * b ----
Tensor mul(const Tensor& a, const Tensor& b) {
  const DType dt = detail::result_type(a, b);
  if (detail::is_reduced(dt)) return mul(detail::widen(a), detail::widen(b)).to(dt);
  Tensor y = binary_f32(a, b, BinaryOp::Mul, 1.0f);
  if (!y.defined())
    y = dt == kBool ? logical_and(a, b)
                         : kernels::dispatch_numeric(dt, "mul", [&]<class T>() {
                             return binary_kernel(a, b, dt, "mul", [](T x, T z) { return static_cast<T>(x * z); });
                           });
  if (auto node = make_node("MulBackward0", OpId::mul, {&a, &b}, [](Node& n, const Tensor& g) -> TensorList {
        // d/da = b, d/db = a
        const bool need_a = n.needs_input_grad(0), need_b = n.needs_input_grad(1);
        return {need_a ? g * n.saved(1) : Tensor(), need_b ? g * n.saved(0) : Tensor()};
      })) {
    // Save only what a needed gradient reads: a for d/db, b for d/da.
    node->save(node->needs_input_grad(1) ? a : Tensor());
    node->save(node->needs_input_grad(0) ? b : Tensor());
    set_history(y, node);
  }
  return y;
}

Tensor mul(const Tensor& a, const Scalar& b) {
  const DType dt = detail::result_type(a, b);
  if (detail::is_reduced(dt)) return mul(detail::widen(a), detail::half_scalar(b, dt)).to(dt);
  Tensor y = scalar_f32(a, dt, BinaryOp::Mul, b.to<float>());
  if (!y.defined()) y = kernels::dispatch_numeric(dt, "mul", [&]<class T>() {
    const T v = b.to<T>();
    return scalar_kernel(a, dt, "mul", [v](T x) { return static_cast<T>(x * v); });
  });
  if (auto node = make_node("MulBackward1", OpId::mul, {&a}, [b](Node&, const Tensor& g) -> TensorList { return {g * b}; }))
    set_history(y, node);
  return y;
}

// ---- div: y = a / b (true division: integers give float32) ----
Tensor div(const Tensor& a, const Tensor& b) {
  const DType dt = true_div_type(detail::result_type(a, b));
  if (detail::is_half(dt)) return div(detail::widen(a), detail::widen(b)).to(dt);  // Note [Half-precision compute]
  Tensor y = binary_f32(a, b, BinaryOp::Div, 1.0f);
  if (!y.defined()) y = kernels::dispatch_floating(dt, "div", [&]<class T>() {
    return binary_kernel(a, b, dt, "div", [](T x, T z) { return x / z; });
  });
  if (auto node = make_node("DivBackward0", OpId::div, {&a, &b}, [](Node& n, const Tensor& g) -> TensorList {
        // d/da = 1/b, d/db = -a/b^2
        const Tensor bb = n.saved(1);
        const bool need_b = n.needs_input_grad(1);
        return {g / bb, need_b ? -g * n.saved(0) / (bb * bb) : Tensor()};
      })) {
    node->save(node->needs_input_grad(1) ? a : Tensor());  // a is read only for d/db
    node->save(b);
    set_history(y, node);
  }
  return y;
}

Tensor div(const Tensor& a, const Scalar& b) {
  const DType dt = true_div_type(detail::result_type(a, b));
  if (detail::is_half(dt)) return div(detail::widen(a), detail::half_scalar(b, dt)).to(dt);
  Tensor y = scalar_f32(a, dt, BinaryOp::Div, b.to<float>());
  if (!y.defined()) y = kernels::dispatch_floating(dt, "div", [&]<class T>() {
    const T v = b.to<T>();
    return scalar_kernel(a, dt, "div", [v](T x) { return x / v; });
  });
  if (auto node = make_node("DivBackward1", OpId::div, {&a}, [b](Node&, const Tensor& g) -> TensorList {
        return {g / b};
      }))
    set_history(y, node);
  return y;
}

Tensor rdiv(const Tensor& a, const Scalar& b) {  // b / a
  const DType dt = true_div_type(detail::result_type(a, b));
  if (detail::is_half(dt)) return rdiv(detail::widen(a), detail::half_scalar(b, dt)).to(dt);
  Tensor y = kernels::dispatch_floating(dt, "rdiv", [&]<class T>() {
    const T v = b.to<T>();
    return scalar_kernel(a, dt, "rdiv", [v](T x) { return v / x; });
  });
  if (auto node = make_node("RdivBackward0", OpId::rdiv, {&a}, [b](Node& n, const Tensor& g) -> TensorList {
        const Tensor x = n.saved(0);
        return {-g * b / (x * x)};  // d (b/a)/da = -b/a^2
      })) {
    node->save(a);
    set_history(y, node);
  }
  return y;
}

// ---- neg ----
Tensor neg(const Tensor& a) {
  GRAFT_CHECK(a.dtype() != kBool, "neg", "a numeric tensor", "a bool tensor", "use graft::logical_not for bools");
  if (detail::is_reduced(a.dtype())) return neg(detail::widen(a)).to(a.dtype());
  Tensor y = kernels::dispatch_numeric(a.dtype(), "neg", [&]<class T>() {
    return kernels::map<T, T>(a.dtype(), a.sizes(), [](T x) { return static_cast<T>(-x); }, a);
  });
  if (auto node = make_node("NegBackward0", OpId::neg, {&a}, [](Node&, const Tensor& g) -> TensorList { return {-g}; }))
    set_history(y, node);
  return y;
}

// ---- in-place forms (Note [In-place ops]) ----
namespace detail {
Scalar half_scalar(const Scalar& s, DType dt) {
  if (dt == kBFloat16) return Scalar(static_cast<double>(kernels::convert<BFloat16>(s.to_double()).to_float()));
  if (dt == kFloat16) return Scalar(static_cast<double>(kernels::convert<Half>(s.to_double()).to_float()));
  return s;  // a narrow integer: int64 arithmetic wraps as the narrow type's would
}

void check_inplace_dtype(const Tensor& self, DType result, const char* op) {
  auto category = [](DType t) { return t == kBool ? 0 : (is_integral(t, false) ? 1 : 2); };
  GRAFT_CHECK(category(result) <= category(self.dtype()), op,
              std::string("a result that can be stored in the ") + dtype_name(self.dtype()) + " tensor",
              std::string("a ") + dtype_name(result) + " result",
              "convert the tensor first (x = x.to(graft::kFloat32)) or use the out-of-place op");
}
}  // namespace detail

namespace {
template <class F>
Tensor& binary_inplace(Tensor& self, const Tensor& other, const char* op, F&& f) {
  detail::check_inplace_dtype(self, detail::result_type(self, other), op);
  broadcast_shapes(self.sizes(), other.sizes(), op);
  GRAFT_CHECK(broadcast_shapes(self.sizes(), other.sizes(), op) == Shape(self.sizes()), op,
              "an operand that broadcasts to the tensor's shape " + shape_str(self.sizes()),
              shape_str(other.sizes()), "an in-place op cannot change the shape of the tensor it writes to");
  if (detail::is_reduced(self.dtype())) return self.copy_(f(self, other));  // Note [Narrow integer dtypes]
  return detail::inplace_op(
      self, op, {&other},
      [&] {
        Tensor o = as_dtype(other, self.dtype());
        if (o.is_alias_of(self)) o = o.clone();
        kernels::dispatch_numeric(self.dtype(), op, [&]<class T>() {
          kernels::apply_inplace<T, T>(self, [&f](T x, T z) { return static_cast<T>(f(x, z)); }, o);
        });
      },
      [&](const Tensor& old) { return f(old, other); });
}
}  // namespace

Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) const {
  const double al = alpha.to_double();
  return binary_inplace(mut(), other, "add_", [al, alpha](const auto& x, const auto& z) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) return graft::add(x, z, alpha);
    else return x + static_cast<std::decay_t<decltype(x)>>(al) * z;
  });
}
Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) const {
  const double al = alpha.to_double();
  return binary_inplace(mut(), other, "sub_", [al, alpha](const auto& x, const auto& z) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) return graft::sub(x, z, alpha);
    else return x - static_cast<std::decay_t<decltype(x)>>(al) * z;
  });
}
Tensor& Tensor::mul_(const Tensor& other) const {
  return binary_inplace(mut(), other, "mul_", [](const auto& x, const auto& z) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) return graft::mul(x, z);
    else return x * z;
  });
}
Tensor& Tensor::div_(const Tensor& other) const {
  detail::check_inplace_dtype(mut(), true_div_type(detail::result_type(mut(), other)), "div_");
  return binary_inplace(mut(), other, "div_", [](const auto& x, const auto& z) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) return graft::div(x, z);
    else return x / z;
  });
}

namespace {
template <class F>
Tensor& scalar_inplace(Tensor& self, const Scalar& s, const char* op, F&& f) {
  detail::check_inplace_dtype(self, detail::result_type(self, s), op);
  if (detail::is_reduced(self.dtype())) return self.copy_(f(self, s));  // Note [Narrow integer dtypes]
  return detail::inplace_op(
      self, op, {},
      [&] {
        kernels::dispatch_numeric(self.dtype(), op, [&]<class T>() {
          const T v = s.to<T>();
          kernels::apply_inplace<T>(self, [&f, v](T x) { return static_cast<T>(f(x, v)); });
        });
      },
      [&](const Tensor& old) { return f(old, s); });
}
}  // namespace

Tensor& Tensor::add_(const Scalar& other, const Scalar& alpha) const {
  const Scalar v(other.to_double() * alpha.to_double());
  return scalar_inplace(mut(), other.is_floating_point() || alpha.is_floating_point() ? v : Scalar(other.to_long() * alpha.to_long()),
                        "add_", [](const auto& x, const auto& z) {
                          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) return graft::add(x, z);
                          else return x + z;
                        });
}
Tensor& Tensor::sub_(const Scalar& other, const Scalar& alpha) const {
  return add_(Scalar(-other.to_double()), alpha);
}
Tensor& Tensor::mul_(const Scalar& other) const {
  return scalar_inplace(mut(), other, "mul_", [](const auto& x, const auto& z) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) return graft::mul(x, z);
    else return x * z;
  });
}
Tensor& Tensor::div_(const Scalar& other) const {
  detail::check_inplace_dtype(mut(), true_div_type(detail::result_type(mut(), other)), "div_");
  return scalar_inplace(mut(), other, "div_", [](const auto& x, const auto& z) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) return graft::div(x, z);
    else return x / z;
  });
}

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return rdiv(b, a); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }

}  // namespace graft
