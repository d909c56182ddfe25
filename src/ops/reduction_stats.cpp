// Statistical reductions: var, std, prod, max/min (full and along a dim), amax/amin, argmax/argmin
// and logsumexp. Like sum and mean (reduction.cpp) they reduce over any set of dims with keepdim;
// dim = {} means all dims.
//
// The kernels (src/kernels/reduction.h) work row by row: the reduced dims are moved last and made
// contiguous, so each output element sees its `n` input values as one contiguous run. That lets var
// make two passes over its row and lets max/argmax track an index. Floating rows accumulate in double.
//
// Backward formulas are written with graft ops so that double backward works. Where a backward needs
// a selection mask (which elements were the max, which position an index names), the mask is a
// constant computed by a kernel: it is piecewise constant in x, so its derivative is zero anyway.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/dispatch.h"
#include "../kernels/loops.h"
#include "../kernels/reduction.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

namespace kr = kernels::reduction;

// A new tensor of `out_shape` whose elements the row kernel `fill(out)` (a kernels::reduction entry:
// it dispatches on the dtype, then does nothing on meta) writes. The allocation is named for `op`
// in the memory report.
template <class F>
Tensor reduce_rows(const char* op, const Tensor& x, const Shape& out_shape, DType out_dtype, F&& fill) {
  memory::OpScope op_scope(op);
  Tensor out = make_empty(out_shape, out_dtype, x.device());
  fill(out);
  return out;
}

void check_floating_input(const Tensor& x, const char* op) {
  GRAFT_CHECK(is_floating_point(x.dtype()), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " tensor",
              "convert the input first: x.to(graft::kFloat32)");
}

// max/min/amax/amin/argmax/argmin have no identity element: an empty reduction is an error.
void check_nonempty_reduction(const Tensor& x, const std::vector<int64_t>& dims, bool dims_given, const char* op) {
  if (!dims_given) {
    GRAFT_CHECK(x.numel() > 0, op, "a non-empty input when reducing over all elements",
                "an empty tensor of shape " + shape_str(x.sizes()),
                "Expected reduction dim to be specified for input.numel() == 0: pass a dim whose size is not 0");
    return;
  }
  for (int64_t d : dims)
    GRAFT_CHECK(x.size(d) > 0, op, "reduced dims of non-zero size",
                "dim " + std::to_string(d) + " of size 0 in a tensor of shape " + shape_str(x.sizes()),
                "Expected reduction dim " + std::to_string(d) +
                    " to have non-zero size: the max/min of no values is undefined");
}

// g of a reduction broadcast back to the input's rank (the reduced dims as size 1).
Tensor restore_dims(const Tensor& g, const std::vector<int64_t>& dims, int64_t input_dim, bool keepdim) {
  return detail::unsqueeze_reduced(g, dims, input_dim, keepdim);
}

// ---- var / std ----
// Two passes over each row in double (kernels::reduction::var_rows).
Tensor var_std_impl(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim, bool take_sqrt) {
  const char* op = take_sqrt ? "std" : "var";
  check_floating_input(x, op);
  const auto dims = detail::reduction_dims(x, dim, op);
  const Shape out_shape = detail::reduced_shape(x, dims, keepdim);
  const int64_t correction = unbiased ? 1 : 0;
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  Tensor y = reduce_rows(op, x, out_shape, x.dtype(),
                         [&](Tensor& out) { kr::var_rows(op, x, dims, correction, take_sqrt, out); });
  // N - correction <= 0 gives inf or a negative factor, as in PyTorch (the forward is nan there).
  const double scale = 1.0 / static_cast<double>(n - correction);
  const int64_t in_dim = x.dim();
  if (!take_sqrt) {
    if (auto node = make_node("VarBackward0", OpId::var, {&x}, [dims, keepdim, in_dim, scale](Node& nd, const Tensor& g) -> TensorList {
          // d var / dx_i = 2 (x_i - mean) / (N - correction)
          const Tensor xs = nd.saved(0);
          const Tensor centred = xs - mean(xs, dims, /*keepdim=*/true);
          return {restore_dims(g, dims, in_dim, keepdim) * centred * (2.0 * scale)};
        })) {
      node->save(x);
      set_history(y, node);
    }
  } else {
    if (auto node = make_node("StdBackward0", OpId::std, {&x}, [dims, keepdim, in_dim, scale](Node& nd, const Tensor& g) -> TensorList {
          // d std / dx_i = (x_i - mean) / ((N - correction) std); 0 where std == 0 (as PyTorch)
          const Tensor xs = nd.saved(0), s = restore_dims(nd.saved(1), dims, in_dim, keepdim);
          Tensor is_zero;
          kernels::dispatch_floating(s.dtype(), "std", [&]<class T>() {
            is_zero = kernels::map<T, T>(s.dtype(), s.sizes(), [](T v) { return v == T(0) ? T(1) : T(0); }, s);
          });
          const Tensor safe = s + is_zero;  // divides by 1 where std == 0; the term is masked below
          const Tensor centred = xs - mean(xs, dims, /*keepdim=*/true);
          return {restore_dims(g, dims, in_dim, keepdim) * (1.0 - is_zero) / safe * centred * scale};
        })) {
      set_history(y, node);  // before saving y: a saved output must carry its grad_fn (Note [Saved tensors])
      node->save(x);
      node->save(y, /*is_output=*/true);
    }
  }
  return y;
}

// ---- prod ----
// prod_{j != i} x_j over the reduced dims for every i, with graft ops (differentiable at any order,
// zeros included): row i of an n x n matrix holds the slice with x_i replaced by 1. O(n^2) memory:
// used only when x has zeros and the gradient itself must be differentiable.
Tensor prod_of_others(const Tensor& x, const std::vector<int64_t>& dims) {
  const auto perm = kr::reduce_last_perm(x.dim(), dims);
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  const Tensor xp = x.dim() > 0 ? x.permute(perm) : x;
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  const int64_t m = n == 0 ? 0 : x.numel() / n;
  const Tensor flat = xp.reshape({m, n});
  const Tensor id = eye(n, x.dtype());
  const Tensor rows = flat.unsqueeze(1) * (1.0 - id) + id;  // [m, n, n]
  const Tensor others = prod(rows, {2});                    // [m, n]
  const Tensor back = others.reshape(xp.sizes());
  return x.dim() > 0 ? back.permute(inv) : back;
}

// The same values by a kernel (no graph): zeros are counted per row; with none, prod / x_i; with one,
// the product of the others at the zero and 0 elsewhere; with two or more, 0 everywhere.
Tensor prod_of_others_kernel(const Tensor& x, const std::vector<int64_t>& dims) {
  const auto perm = kr::reduce_last_perm(x.dim(), dims);
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  Shape permuted;
  for (int64_t d : perm) permuted.push_back(x.size(d));
  Tensor out = make_empty(permuted, x.dtype(), x.device());
  if (!x.is_meta()) kr::prod_of_others_rows(x, dims, out);
  return x.dim() > 0 ? out.permute(inv) : out;
}

bool has_zero(const Tensor& x) {
  if (!is_floating_point(x.dtype()) || x.is_meta()) return false;  // on meta either formula has the shape
  return kr::has_zero(x);
}

Tensor prod_impl(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype, bool full) {
  const DType out_dt = dtype.value_or(is_floating_point(x.dtype()) ? x.dtype() : kInt64);
  // A floating -> floating dtype goes through a recorded conversion, so the gradient flows back.
  if (out_dt != x.dtype() && is_floating_point(out_dt) && is_floating_point(x.dtype()))
    return prod_impl(detail::cast(x, out_dt), dim, keepdim, std::nullopt, full);
  const auto dims = detail::reduction_dims(x, dim, "prod");
  const Shape out_shape = detail::reduced_shape(x, dims, keepdim);
  const Tensor xc = detail::as_dtype(x, out_dt);
  Tensor y = reduce_rows("prod", xc, out_shape, out_dt, [&](Tensor& out) { kr::prod_rows(xc, dims, out); });
  const int64_t in_dim = x.dim();
  if (!is_floating_point(out_dt)) return y;  // an integer product carries no gradient
  if (auto node = make_node(full ? "ProdBackward0" : "ProdBackward1", OpId::prod, {&x},
                            [dims, keepdim, in_dim](Node& nd, const Tensor& g) -> TensorList {
        // d prod / dx_i = prod_{j != i} x_j: prod / x_i when the slice has no zero; otherwise the
        // product of the others computed directly (non-zero only at a slice's single zero).
        const Tensor xs = nd.saved(0);
        const Tensor gk = restore_dims(g, dims, in_dim, keepdim);
        if (!has_zero(xs)) return {gk * restore_dims(nd.saved(1), dims, in_dim, keepdim) / xs};
        if (GradMode::is_enabled()) return {gk * prod_of_others(xs, dims)};
        return {gk * prod_of_others_kernel(xs, dims)};
      })) {
    set_history(y, node);  // before saving y: a saved output must carry its grad_fn (Note [Saved tensors])
    node->save(x);
    node->save(y, /*is_output=*/true);
  }
  return y;
}

// ---- max / min / amax / amin ----
// mask / mask.sum(dims): the gradient share of every element, where mask marks the elements equal to
// their slice's result (its NaNs when the result is NaN). `r` has x's rank (reduced dims of size 1).
Tensor even_split_weights(const Tensor& x, const Tensor& r, const std::vector<int64_t>& dims) {
  const Tensor xd = x.detach(), rd = r.detach();
  const Tensor mask = kernels::dispatch_floating(x.dtype(), "max", [&]<class T>() {
    return kernels::map<T, T, T>(x.dtype(), x.sizes(), [](T v, T m) {
      return (v == m || (is_nan(v) && is_nan(m))) ? T(1) : T(0);
    }, xd, rd);
  });
  NoGradGuard ng;
  return mask / sum(mask, dims, /*keepdim=*/true);
}

Tensor extreme_all_dims(const Tensor& x, IntArrayRef dim, bool keepdim, bool greater, OpId id,
                        const char* node_name, bool dims_given) {
  if (detail::is_reduced(x.dtype()))  // Note [Narrow integer dtypes]
    return extreme_all_dims(detail::widen(x), dim, keepdim, greater, id, node_name, dims_given).to(x.dtype());
  const char* op = ops::op_name(id);
  const auto dims = detail::reduction_dims(x, dim, op);
  check_nonempty_reduction(x, dims, dims_given, op);
  const Shape out_shape = detail::reduced_shape(x, dims, keepdim);
  Tensor y =
      reduce_rows(op, x, out_shape, x.dtype(), [&](Tensor& out) { kr::extreme_rows(op, x, dims, greater, out); });
  const int64_t in_dim = x.dim();
  if (auto node = make_node(node_name, id, {&x}, [dims, keepdim, in_dim](Node& nd, const Tensor& g) -> TensorList {
        // d max / dx_i = 1 / (number of ties) at the elements equal to the max, 0 elsewhere
        const Tensor xs = nd.saved(0);
        const Tensor w = even_split_weights(xs, restore_dims(nd.saved(1), dims, in_dim, keepdim), dims);
        return {restore_dims(g, dims, in_dim, keepdim) * w};
      })) {
    set_history(y, node);  // before saving y: a saved output must carry its grad_fn (Note [Saved tensors])
    node->save(x);
    node->save(y, /*is_output=*/true);
  }
  return y;
}

// (values, indices) along one dim.
std::tuple<Tensor, Tensor> extreme_dim(const Tensor& x, int64_t dim, bool keepdim, bool greater, OpId id,
                                       const char* node_name) {
  if (detail::is_reduced(x.dtype())) {  // Note [Narrow integer dtypes]
    auto [v, i] = extreme_dim(detail::widen(x), dim, keepdim, greater, id, node_name);
    return {v.to(x.dtype()), i};
  }
  const char* op = ops::op_name(id);
  const auto dims = detail::reduction_dims(x, {dim}, op);
  check_nonempty_reduction(x, dims, true, op);
  const Shape out_shape = detail::reduced_shape(x, dims, keepdim);
  Tensor values = make_empty(out_shape, x.dtype(), x.device());
  Tensor indices = make_empty(out_shape, kInt64, x.device());
  if (!x.is_meta()) kr::extreme_index_rows(op, x, dims, greater, values, indices);
  const int64_t in_dim = x.dim();
  if (auto node = make_node(node_name, id, {&x}, [dims, keepdim, in_dim, in = Shape(x.sizes())](Node& nd, const Tensor& g) -> TensorList {
        // d values / dx = 1 at the selected index of each slice, 0 elsewhere
        if (in_dim == 0) return {g};
        const int64_t d = dims[0];
        const Tensor idx = restore_dims(nd.saved(0), dims, in_dim, keepdim);
        Shape pos_shape;
        for (int64_t k = 0; k < in_dim; ++k) pos_shape.push_back(k == d ? in[static_cast<size_t>(d)] : 1);
        const Tensor pos = arange(in[static_cast<size_t>(d)], kInt64).reshape(pos_shape);
        const Tensor onehot = kernels::dispatch_floating(g.dtype(), "max", [&]<class T>() {
          return kernels::map<T, int64_t, int64_t>(g.dtype(), in, [](int64_t p, int64_t k) { return p == k ? T(1) : T(0); },
                                                   pos, idx);
        });
        return {restore_dims(g, dims, in_dim, keepdim) * onehot};
      })) {
    node->save(indices);
    set_history(values, node);
  }
  return {values, indices};
}

Tensor arg_extreme(const Tensor& x, std::optional<int64_t> dim, bool keepdim, bool greater, const char* op) {
  if (detail::is_reduced(x.dtype())) return arg_extreme(detail::widen(x), dim, keepdim, greater, op);
  if (!dim) {
    GRAFT_CHECK(x.numel() > 0, op, "a non-empty input when no dim is given",
                "an empty tensor of shape " + shape_str(x.sizes()),
                "Expected reduction dim to be specified for input.numel() == 0: pass a dim whose size is not 0");
    Tensor r = arg_extreme(x.detach().reshape({-1}), 0, false, greater, op);
    if (keepdim) r = r.reshape(std::vector<int64_t>(static_cast<size_t>(x.dim()), 1));
    return r;
  }
  const auto dims = detail::reduction_dims(x, {*dim}, op);
  check_nonempty_reduction(x, dims, true, op);
  const Shape out_shape = detail::reduced_shape(x, dims, keepdim);
  return reduce_rows(op, x, out_shape, kInt64, [&](Tensor& out) { kr::arg_extreme_rows(op, x, dims, greater, out); });
}

}  // namespace

// ---- var / std ----
Tensor var_all(const Tensor& x, bool unbiased) { return var_std_impl(x, {}, unbiased, false, false); }
Tensor var(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim) {
  return var_std_impl(x, dim, unbiased, keepdim, false);
}
Tensor std_all(const Tensor& x, bool unbiased) { return var_std_impl(x, {}, unbiased, false, true); }
Tensor std(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim) {
  return var_std_impl(x, dim, unbiased, keepdim, true);
}

// ---- prod ----
Tensor prod(const Tensor& x, std::optional<DType> dtype) { return prod_impl(x, {}, false, dtype, true); }
Tensor prod(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return prod_impl(x, dim, keepdim, dtype, false);
}

// ---- max / min ----
Tensor max(const Tensor& x) { return extreme_all_dims(x, {}, false, true, OpId::max, "MaxBackward1", false); }
Tensor min(const Tensor& x) { return extreme_all_dims(x, {}, false, false, OpId::min, "MinBackward1", false); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_dim(x, dim, keepdim, true, OpId::max, "MaxBackward0");
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_dim(x, dim, keepdim, false, OpId::min, "MinBackward0");
}

// ---- amax / amin ----
Tensor amax(const Tensor& x, IntArrayRef dim, bool keepdim) {
  return extreme_all_dims(x, dim, keepdim, true, OpId::amax, "AmaxBackward0", !dim.empty());
}
Tensor amin(const Tensor& x, IntArrayRef dim, bool keepdim) {
  return extreme_all_dims(x, dim, keepdim, false, OpId::amin, "AminBackward0", !dim.empty());
}

// ---- argmax / argmin ----
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_extreme(x, dim, keepdim, true, "argmax"); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_extreme(x, dim, keepdim, false, "argmin"); }

// ---- logsumexp ----
Tensor logsumexp(const Tensor& x, IntArrayRef dim, bool keepdim) {
  check_floating_input(x, "logsumexp");
  const auto dims = detail::reduction_dims(x, dim, "logsumexp");
  const Shape out_shape = detail::reduced_shape(x, dims, keepdim);
  // m + log(sum exp(x - m)) in double with m the slice's max (kernels::reduction::logsumexp_rows).
  Tensor y = reduce_rows("logsumexp", x, out_shape, x.dtype(), [&](Tensor& out) { kr::logsumexp_rows(x, dims, out); });
  const int64_t in_dim = x.dim();
  if (auto node = make_node("LogsumexpBackward0", OpId::logsumexp, {&x}, [dims, keepdim, in_dim](Node& nd, const Tensor& g) -> TensorList {
        // d lse / dx_i = exp(x_i - lse) (the softmax of the slice)
        const Tensor lse = restore_dims(nd.saved(1), dims, in_dim, keepdim);
        return {restore_dims(g, dims, in_dim, keepdim) * exp(nd.saved(0) - lse)};
      })) {
    set_history(y, node);  // before saving y: a saved output must carry its grad_fn (Note [Saved tensors])
    node->save(x);
    node->save(y, /*is_output=*/true);
  }
  return y;
}

}  // namespace graft
