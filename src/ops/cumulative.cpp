// Cumulative ops: cumsum and cumprod along one dim. Integer and bool inputs accumulate in int64
// unless `dtype` says otherwise (PyTorch's rule); float32 accumulates in double, as ATen's CPU
// kernel does. Backward formulas are recorded graft ops, so gradients of gradients work.
//
// Note [cumprod backward with zeros]
// Along one slice, y_j = x_0 ... x_j, so dL/dx_i = sum_{j >= i} g_j y_j / x_i, which divides by zero
// where x_i = 0. With k the first zero of the slice (PyTorch's case split):
//   i < k:  sum_{j >= i} g_j y_j / x_i           (x_i != 0; the y_j for j >= k are 0)
//   i = k:  (x_0 ... x_{k-1}) * sum_{j >= k} g_j (x_{k+1} ... x_j)
//   i > k:  0                                    (every y_j, j >= i, keeps the factor x_k = 0 besides x_i)
//           in value; recorded for double backward as x_k * (the same gradient with x_k set to 1)
// The second line is cumprod(x'')_k * rcumsum(g * cumprod(x'))_k with x'' = x before k and 1 from k on,
// x' = 1 up to k and x after it; rcumsum is the cumulative sum from the end. All of it is recorded
// ops (the masks are constants of x), so double backward works with zeros too; without zeros only
// the first line runs.
#include <cstdint>
#include <optional>

#include "../kernels/cumulative.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

DType cumulative_type(const Tensor& x, std::optional<DType> dtype) {
  return dtype.value_or(is_floating_point(x.dtype()) ? x.dtype() : kInt64);
}

// The running sum (Product = false) or product of xc (already in its result dtype) along dim d,
// from the end when `reverse`. Not recorded.
template <bool Product>
Tensor scan(const Tensor& x, int64_t d, bool reverse, const char* op) {
  const Tensor xc = x.contiguous();
  Tensor y = make_empty(xc.sizes(), xc.dtype(), xc.device());
  if (y.is_meta()) return y;  // Note [Meta device]: no kernel on meta
  const int64_t n = xc.dim() == 0 ? 1 : xc.size(d);
  int64_t inner = 1;
  for (int64_t k = d + 1; k < xc.dim(); ++k) inner *= xc.size(k);
  const int64_t outer = n * inner == 0 ? 0 : xc.numel() / (n * inner);
  kernels::cumulative::scan(op, xc, outer, n, inner, Product, reverse, y);
  return y;
}

int64_t scan_dim(const Tensor& x, int64_t dim, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined tensor", "an undefined tensor", "pass a tensor");
  return wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), op);
}

// cumsum from the start or (reverse) from the end; each is the other's backward.
Tensor cumsum_impl(const Tensor& x, int64_t dim, std::optional<DType> dtype, bool reverse) {
  const int64_t d = scan_dim(x, dim, "cumsum");
  const DType out_dt = cumulative_type(x, dtype);
  Tensor y = scan<false>(detail::as_dtype(x, out_dt), d, reverse, "cumsum");
  if (!is_floating_point(out_dt)) return y;
  if (auto node = make_node("CumsumBackward0", OpId::cumsum, {&x}, [d, reverse](Node&, const Tensor& g) -> TensorList {
        // d y_j / d x_i = 1 for i <= j: the gradient is the cumulative sum of g the other way
        return {cumsum_impl(g, d, std::nullopt, !reverse)};
      }))
    set_history(y, node);
  return y;
}

Tensor rcumsum(const Tensor& t, int64_t d) { return cumsum_impl(t, d, std::nullopt, true); }

// Its formula: see Note [cumprod backward with zeros] at the top of this file.
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  const Tensor is_zero = eq(x, Scalar(0.0));
  bool any_zero = false;
  if (!is_zero.is_meta()) {  // Note [Meta device]: no values; meta takes the zero-free formula (same shapes)
    NoGradGuard ng;
    any_zero = is_zero.any().item<bool>();
  }
  if (!any_zero) return rcumsum(g * y, d) / x;
  Tensor zeros_so_far;
  {
    NoGradGuard ng;
    zeros_so_far = scan<false>(is_zero.to(kInt64), d, false, "cumprod");
  }
  const Tensor before = eq(zeros_so_far, Scalar(int64_t{0}));                              // i < k
  const Tensor at_first = logical_and(is_zero, eq(zeros_so_far, Scalar(int64_t{1})));     // i = k
  const Tensor first_part = where(before, rcumsum(g * y, d) / where(before, x, Scalar(1.0)), Scalar(0.0));
  const Tensor x_before = where(before, x, Scalar(1.0));                        // x'' of the Note
  const Tensor x_after = where(logical_or(before, at_first), Scalar(1.0), x);   // x'
  const Tensor at_k = cumprod(x_before, d) * rcumsum(g * cumprod(x_after, d), d);
  Tensor grad = first_part + where(at_first, at_k, Scalar(0.0));
  if (GradMode::is_enabled()) {
    // Recorded (create_graph): the i > k part is 0 in value but not in derivative. It is x_k times
    // the gradient of the slice with x_k set to 1, which has one zero fewer (the recursion ends).
    const Tensor after = logical_not(logical_or(before, at_first));
    const Tensor x_k = where(at_first, x, Scalar(0.0)).sum({d}, true);
    const Tensor x_one = where(at_first, Scalar(1.0), x);
    grad = grad + where(after, x_k * cumprod_backward(g, x_one, cumprod(x_one, d), d), Scalar(0.0));
  }
  return grad;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) { return cumsum_impl(x, dim, dtype, false); }

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  const int64_t d = scan_dim(x, dim, "cumprod");
  const DType out_dt = cumulative_type(x, dtype);
  Tensor y = scan<true>(detail::as_dtype(x, out_dt), d, false, "cumprod");
  if (!is_floating_point(out_dt)) return y;
  if (auto node = make_node("CumprodBackward0", OpId::cumprod, {&x}, [d, out_dt](Node& n, const Tensor& g) -> TensorList {
        return {cumprod_backward(g, detail::cast(n.saved(0), out_dt), n.saved(1), d)};
      })) {
    set_history(y, node);  // before saving y (Note [Saved tensors])
    node->save(x);
    node->save(y, /*is_output=*/true);
  }
  return y;
}

}  // namespace graft
