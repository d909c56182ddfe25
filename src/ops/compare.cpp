// Comparisons and selection: gt, lt, ge, le, eq, ne (bool results, no gradient), logical_not/and/or,
// where, masked_fill (and masked_fill_), allclose, equal, isnan, isinf, isfinite.
//
// Comparisons promote their operands as arithmetic does (detail::result_type) and compare in the
// promoted dtype, as PyTorch does (an int64 tensor against 2.5 compares in float32). where's result
// has the promoted dtype of its two value operands; the condition must be a bool tensor.
#include <cmath>
#include <string>

#include "../core/dispatch.h"
#include "../kernels/compare.h"
#include "../kernels/loops.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;
using detail::as_dtype;
using kernels::compare::all_true;

namespace {

// out = f(a, b) as bool, a and b broadcast together and both converted to the promoted dtype.
template <class F>
Tensor compare_tensors(const Tensor& a, const Tensor& b, const char* op, F&& f) {
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  const DType dt = detail::compute_dtype(detail::result_type(a, b));  // Note [Narrow integer dtypes]
  const Tensor ca = as_dtype(a, dt), cb = as_dtype(b, dt);
  return kernels::dispatch_all(dt, op, [&]<class T>() {
    return kernels::map<bool, T, T>(kBool, shape, [&f](T x, T y) { return f(x, y); }, ca, cb);
  });
}

template <class F>
Tensor compare_scalar(const Tensor& a, const Scalar& s, const char* op, F&& f) {
  const DType dt = detail::compute_dtype(detail::result_type(a, s));
  const Tensor ca = as_dtype(a, dt);
  return kernels::dispatch_all(dt, op, [&]<class T>() {
    const T v = s.to<T>();
    return kernels::map<bool, T>(kBool, a.sizes(), [&f, v](T x) { return f(x, v); }, ca);
  });
}

// f(x) as bool for x of any supported dtype.
template <class F>
Tensor unary_predicate(const Tensor& x_, const char* op, F&& f) {
  const Tensor x = detail::widen(x_);
  return kernels::dispatch_all(x.dtype(), op, [&]<class T>() {
    return kernels::map<bool, T>(kBool, x.sizes(), [&f](T v) { return f(v); }, x);
  });
}

// Truth value of any element: nonzero (NaN included) is true.
template <class T>
bool truthy(T v) {
  return v != T(0);
}

template <class F>
Tensor logical_binary(const Tensor& a_, const Tensor& b_, const char* op, F&& f) {
  const Tensor a = detail::widen(a_), b = detail::widen(b_);
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  return kernels::dispatch_all(a.dtype(), op, [&]<class A>() {
    return kernels::dispatch_all(b.dtype(), op, [&]<class B>() {
      return kernels::map<bool, A, B>(kBool, shape, [&f](A x, B y) { return f(truthy(x), truthy(y)); }, a, b);
    });
  });
}

void check_bool_condition(const Tensor& cond, const char* op, const char* what) {
  GRAFT_CHECK(cond.dtype() == kBool, op, std::string("a bool ") + what,
              std::string("a ") + dtype_name(cond.dtype()) + " " + what + " of shape " + shape_str(cond.sizes()),
              std::string("build the ") + what + " with a comparison (x > 0) or convert it with .to(graft::kBool)");
}

}  // namespace

// ---- comparisons ----
#define GRAFT_DEFINE_COMPARISON(name, expr)                                                         \
  Tensor name(const Tensor& a, const Tensor& b) {                                                   \
    return compare_tensors(a, b, #name, [](auto x, auto y) { return expr; });                       \
  }                                                                                                 \
  Tensor name(const Tensor& a, const Scalar& b) {                                                   \
    return compare_scalar(a, b, #name, [](auto x, auto y) { return expr; });                        \
  }

GRAFT_DEFINE_COMPARISON(gt, x > y)
GRAFT_DEFINE_COMPARISON(lt, x < y)
GRAFT_DEFINE_COMPARISON(ge, x >= y)
GRAFT_DEFINE_COMPARISON(le, x <= y)
GRAFT_DEFINE_COMPARISON(eq, x == y)
GRAFT_DEFINE_COMPARISON(ne, x != y)
#undef GRAFT_DEFINE_COMPARISON

// ---- logical ops: any dtype, nonzero is true ----
Tensor logical_not(const Tensor& a) {
  return unary_predicate(a, "logical_not", [](auto v) { return !truthy(v); });
}
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return logical_binary(a, b, "logical_and", [](bool x, bool y) { return x && y; });
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return logical_binary(a, b, "logical_or", [](bool x, bool y) { return x || y; });
}

// ---- where(condition, a, b): condition ? a : b ----
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  check_bool_condition(condition, "where", "condition");
  const Shape shape = broadcast_shapes(broadcast_shapes(condition.sizes(), a.sizes(), "where"), b.sizes(), "where");
  const DType dt = detail::result_type(a, b);
  if (detail::is_reduced(dt)) return where(condition, detail::widen(a), detail::widen(b)).to(dt);
  const Tensor ca = as_dtype(a, dt), cb = as_dtype(b, dt);
  Tensor y = kernels::dispatch_all(dt, "where", [&]<class T>() {
    return kernels::map<T, bool, T, T>(dt, shape, [](bool c, T x, T z) { return c ? x : z; }, condition, ca, cb);
  });
  if (auto node = make_node("WhereBackward0", OpId::where, {&condition, &a, &b}, [](Node& n, const Tensor& g) -> TensorList {
        // d/da = [condition], d/db = [!condition]
        const Tensor c = n.saved(0);
        const bool need_a = n.needs_input_grad(1), need_b = n.needs_input_grad(2);
        return {Tensor(), need_a ? where(c, g, Scalar(0)) : Tensor(), need_b ? where(c, Scalar(0), g) : Tensor()};
      })) {
    node->save(condition);
    set_history(y, node);
  }
  return y;
}

Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b) {
  check_bool_condition(condition, "where", "condition");
  detail::MetaOpScope meta_scope("where", {&condition, &a});  // Note [Meta device]: b as a meta 0-dim tensor
  return where(condition, a, detail::scalar_to_tensor(b, detail::result_type(a, b)));
}

Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  check_bool_condition(condition, "where", "condition");
  detail::MetaOpScope meta_scope("where", {&condition, &b});  // Note [Meta device]: a as a meta 0-dim tensor
  return where(condition, detail::scalar_to_tensor(a, detail::result_type(b, a)), b);
}

// ---- masked_fill(x, mask, value): value where mask, else x ----
namespace {
void check_mask(const Tensor& x, const Tensor& mask, const char* op) {
  check_bool_condition(mask, op, "mask");
  bool ok = mask.dim() <= x.dim();
  for (int64_t i = 0; ok && i < mask.dim(); ++i) {
    const int64_t m = mask.size(i), d = x.size(i + x.dim() - mask.dim());
    ok = m == d || m == 1;
  }
  GRAFT_CHECK(ok, op, "a mask that broadcasts to the input's shape " + shape_str(x.sizes()),
              "a mask of shape " + shape_str(mask.sizes()),
              "the mask may have size 1 or the input's size in each trailing dimension, and may not broadcast "
              "the input to a larger shape");
}
}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  check_mask(x, mask, "masked_fill");
  if (detail::is_reduced(x.dtype())) return masked_fill(detail::widen(x), mask, value).to(x.dtype());
  Tensor y = kernels::dispatch_all(x.dtype(), "masked_fill", [&]<class T>() {
    const T v = value.to<T>();
    return kernels::map<T, T, bool>(x.dtype(), x.sizes(), [v](T e, bool m) { return m ? v : e; }, x, mask);
  });
  if (auto node = make_node("MaskedFillBackward0", OpId::masked_fill, {&x, &mask}, [](Node& n, const Tensor& g) -> TensorList {
        return {where(n.saved(0), Scalar(0), g), Tensor()};  // no gradient where the value was written
      })) {
    node->save(mask);
    set_history(y, node);
  }
  return y;
}

Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  check_mask(mut(), mask, "masked_fill_");
  if (detail::is_reduced(dtype())) return mut().copy_(graft::masked_fill(*this, mask, value));
  return detail::inplace_op(
      mut(), "masked_fill_", {&mask},
      [&] {
        Tensor m = mask.is_alias_of(mut()) ? mask.clone() : mask;
        kernels::dispatch_all(dtype(), "masked_fill_", [&]<class T>() {
          const T v = value.to<T>();
          kernels::apply_inplace<T, bool>(mut(), [v](T e, bool mm) { return mm ? v : e; }, m);
        });
      },
      [&](const Tensor& old) { return graft::masked_fill(old, mask, value); });
}

// ---- whole-tensor tests ----
namespace {
// |a - b| <= atol + rtol * |b| elementwise, computed as PyTorch's isclose computes it: in the
// tensors' floating dtype (float32 arithmetic for float32, so that 0.1f - 0 <= 0.1 + 1.1 * 0 holds
// there as in LibTorch), in the default dtype for integer tensors; float16/bfloat16 in float32.
// Equal values (infinities included) are close; a nan is close only to a nan with equal_nan; an
// infinite error is never within the tolerance.
template <class T>
bool close_in(double x, double y, double rtol, double atol, bool equal_nan) {
  if (x == y) return true;
  if (std::isnan(x) || std::isnan(y)) return equal_nan && std::isnan(x) && std::isnan(y);
  const T allowed = static_cast<T>(atol) + std::abs(static_cast<T>(rtol) * static_cast<T>(y));
  // The difference in double, exact for floats and integers up to 2^53, then rounded to T.
  const T actual = static_cast<T>(std::abs(x - y));
  return std::isfinite(actual) && actual <= allowed;
}

Tensor isclose_double(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan, const char* op) {
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  const DType common = promote_types(a.dtype(), b.dtype());
  const bool in_double = is_floating_point(common) ? common == kFloat64 : get_default_dtype() == kFloat64;
  const Tensor da = as_dtype(a, kFloat64), db = as_dtype(b, kFloat64);
  if (in_double) {
    return kernels::map<bool, double, double>(kBool, shape, [rtol, atol, equal_nan](double x, double y) {
      return close_in<double>(x, y, rtol, atol, equal_nan);
    }, da, db);
  }
  return kernels::map<bool, double, double>(kBool, shape, [rtol, atol, equal_nan](double x, double y) {
    return close_in<float>(x, y, rtol, atol, equal_nan);
  }, da, db);
}
}  // namespace

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  GRAFT_CHECK(rtol >= 0 && atol >= 0, "allclose", "non-negative rtol and atol",
              "rtol=" + std::to_string(rtol) + ", atol=" + std::to_string(atol), "tolerances are magnitudes");
  NoGradGuard ng;
  return all_true(isclose_double(a, b, rtol, atol, equal_nan, "allclose"));
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  GRAFT_CHECK(rtol >= 0 && atol >= 0, "isclose", "non-negative rtol and atol",
              "rtol=" + std::to_string(rtol) + ", atol=" + std::to_string(atol), "tolerances are magnitudes");
  NoGradGuard ng;
  return isclose_double(a, b, rtol, atol, equal_nan, "isclose");
}

bool equal(const Tensor& a, const Tensor& b) {
  GRAFT_CHECK(a.defined() && b.defined(), "equal", "two defined tensors", "an undefined tensor",
              "an undefined tensor holds no values to compare");
  if (!a.sizes().equals(b.sizes())) return false;
  NoGradGuard ng;
  const Tensor da = as_dtype(a, kFloat64), db = as_dtype(b, kFloat64);
  return all_true(kernels::map<bool, double, double>(kBool, a.sizes(), [](double x, double y) { return x == y; }, da, db));
}

Tensor isnan(const Tensor& x) {
  return unary_predicate(x, "isnan", []<class T>(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
    else return false;
  });
}
Tensor isinf(const Tensor& x) {
  return unary_predicate(x, "isinf", []<class T>(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::isinf(v);
    else return false;
  });
}
Tensor isfinite(const Tensor& x) {
  return unary_predicate(x, "isfinite", []<class T>(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::isfinite(v);
    else return true;
  });
}

// ---- all / any: counts of zero (nonzero) elements, compared with 0; no gradient ----
Tensor all(const Tensor& x) { return eq(sum(eq(x, 0), kInt64), 0); }
namespace {
void check_reduced_dim(const Tensor& x, int64_t dim, const char* op) {
  const int64_t n = std::max<int64_t>(x.dim(), 1);  // a 0-dim tensor takes dim 0 or -1
  GRAFT_CHECK(dim >= -n && dim < n, op, "dim in [" + std::to_string(-n) + ", " + std::to_string(n) + ")",
              "dim " + std::to_string(dim) + " for a tensor of shape " + shape_str(x.sizes()),
              "count dims from 0, or from -1 for the last");
}
}  // namespace

Tensor all(const Tensor& x, int64_t dim, bool keepdim) {
  check_reduced_dim(x, dim, "all");
  return eq(sum(eq(x, 0), dim, keepdim, kInt64), 0);
}
Tensor any(const Tensor& x) { return ne(sum(ne(x, 0), kInt64), 0); }
Tensor any(const Tensor& x, int64_t dim, bool keepdim) {
  check_reduced_dim(x, dim, "any");
  return ne(sum(ne(x, 0), dim, keepdim, kInt64), 0);
}

// ---- comparison operators: a op b is the op; a number on the left swaps the comparison ----
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<(const Scalar& a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator<=(const Scalar& a, const Tensor& b) { return ge(b, a); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>(const Scalar& a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator>=(const Scalar& a, const Tensor& b) { return le(b, a); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator==(const Scalar& a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator!=(const Scalar& a, const Tensor& b) { return ne(b, a); }

}  // namespace graft
