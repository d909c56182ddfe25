// Reductions: sum, mean and sum_to (the reverse of broadcasting, used by every broadcasting backward).
// Each reduces over any set of dims with keepdim; dim = {} means all dims.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "../core/dispatch.h"
#include "../kernels/reduce.h"
#include "../kernels/reduction.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace detail {
std::vector<int64_t> reduction_dims(const Tensor& x, IntArrayRef dims, const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) out.push_back(d);
    return out;
  }
  std::vector<int64_t> seen;  // also for a 0-dim tensor, whose dims 0 and -1 reduce nothing
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), op);
    GRAFT_CHECK(std::find(seen.begin(), seen.end(), w) == seen.end(), op, "each dim at most once",
                "dims " + shape_str(dims), "remove the repeated dim");
    seen.push_back(w);
    if (x.dim() > 0) out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape reduced_shape(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  Shape s;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool r = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!r) s.push_back(x.size(d));
    else if (keepdim) s.push_back(1);
  }
  return s;
}

Tensor unsqueeze_reduced(const Tensor& g, const std::vector<int64_t>& dims, int64_t input_dim, bool keepdim) {
  if (keepdim || input_dim == 0) return g;
  Tensor r = g;
  for (int64_t d : dims) r = r.unsqueeze(d);  // dims are sorted ascending
  return r;
}
}  // namespace detail

namespace {
// Sums are accumulated in double for float32 inputs would be slower; PyTorch accumulates float32 in
// float32 with pairwise/vectorised order. graft accumulates in the input type with 4 partial sums.
template <class T>
struct SumAcc {
  T s[4] = {0, 0, 0, 0};
};
}  // namespace

// ---- sum ----
// Fast path of sum: a contiguous tensor (outer, inner) summed over its leading dims (the bias
// gradient of a linear layer, the engine's unbroadcast of a batch). Rows are added into a float64
// accumulator row, one streaming pass; the general reducer walks columns with a stride instead.
// Returns an undefined tensor when the pattern does not apply.
static Tensor sum_leading_dims(const Tensor& xc, const std::vector<int64_t>& dims, const Shape& out_shape) {
  const int64_t k = static_cast<int64_t>(dims.size());
  if (k == 0 || k >= xc.dim() || !xc.is_contiguous() || xc.is_meta()) return {};
  for (int64_t i = 0; i < k; ++i)
    if (dims[static_cast<size_t>(i)] != i) return {};
  int64_t outer = 1;
  for (int64_t i = 0; i < k; ++i) outer *= xc.size(i);
  const int64_t inner = xc.numel() / std::max<int64_t>(outer, 1);
  if (outer < 2 || inner < 8) return {};
  Tensor y = make_empty(out_shape, xc.dtype());
  kernels::reduction::sum_leading(xc, outer, inner, y);
  return y;
}

// Fast path of sum for float32: a contiguous tensor summed over all its dims or over trailing dims
// (rows of `cols` values; Note [Fast float32 sum] in kernels/vec_f32.h). Undefined otherwise.
static Tensor sum_trailing_f32(const Tensor& xc, const std::vector<int64_t>& dims, const Shape& out_shape) {
  if (xc.dtype() != kFloat32 || !xc.is_contiguous() || xc.is_meta()) return {};
  const int64_t k = static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < k; ++i)
    if (dims[static_cast<size_t>(i)] != xc.dim() - k + i) return {};
  int64_t cols = 1;
  for (int64_t d : dims) cols *= xc.size(d);
  Tensor y = make_empty(out_shape, kFloat32);
  if (k == xc.dim()) {
    kernels::reduction::sum_all_f32(xc, y);
  } else if (y.numel() > 0) {
    kernels::reduction::sum_each_row_f32(xc, cols, y);
  }
  return y;
}

Tensor sum(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  const auto dims = detail::reduction_dims(x, dim, "sum");
  const DType out_dt = dtype.value_or(is_floating_point(x.dtype()) ? x.dtype() : kInt64);
  if (detail::is_half(out_dt))  // Note [Half-precision compute]: accumulated in float32, rounded once
    return sum(detail::widen(x), dim, keepdim, kFloat32).to(out_dt);
  const Shape out_shape = detail::reduced_shape(x, dims, keepdim);
  const Tensor xc = detail::as_dtype(x, out_dt);
  Tensor y = kernels::dispatch_numeric(out_dt, "sum", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      if (Tensor fast = sum_leading_dims(xc, dims, out_shape); fast.defined()) return fast;
      if (Tensor fast = sum_trailing_f32(xc, dims, out_shape); fast.defined()) return fast;
    }
    return kernels::reduce<T, T>(
        xc, dims, out_shape, out_dt, [] { return SumAcc<T>{}; },
        [](SumAcc<T> a, T v, int64_t k) {
          a.s[k & 3] += v;
          return a;
        },
        [](const SumAcc<T>& a, int64_t) { return (a.s[0] + a.s[1]) + (a.s[2] + a.s[3]); });
  });
  // PyTorch's names: SumBackward0 for the sum of every element, SumBackward1 over given dims.
  if (auto node = make_node(dim.empty() ? "SumBackward0" : "SumBackward1", OpId::sum, {&x}, [dims, keepdim, in = Shape(x.sizes())](Node&, const Tensor& g) -> TensorList {
        // d sum = 1: broadcast g back over the reduced dims
        return {detail::unsqueeze_reduced(g, dims, static_cast<int64_t>(in.size()), keepdim).expand(in)};
      }))
    set_history(y, node);
  return y;
}

Tensor sum(const Tensor& x, std::optional<DType> dtype) { return sum(x, IntArrayRef{}, false, dtype); }

// ---- mean ----
Tensor mean(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  const DType dt = dtype.value_or(x.dtype());
  GRAFT_CHECK(is_floating_point(dt), "mean", "a floating-point input or dtype", std::string("a ") + dtype_name(dt) + " input",
              "pass dtype=graft::kFloat32 or convert the input with .to(graft::kFloat32)");
  if (detail::is_half(dt))  // Note [Half-precision compute]
    return mean(detail::widen(x), dim, keepdim, kFloat32).to(dt);
  const auto dims = detail::reduction_dims(x, dim, "mean");
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  Tensor s;
  {
    NoGradGuard ng;
    s = sum(x.detach(), dim, keepdim, dt);
    s = s.div_(static_cast<double>(n));
  }
  if (auto node = make_node(dim.empty() ? "MeanBackward0" : "MeanBackward1", OpId::mean, {&x}, [dims, keepdim, n, in = Shape(x.sizes())](Node&, const Tensor& g) -> TensorList {
        // d mean = 1/n
        return {detail::unsqueeze_reduced(g, dims, static_cast<int64_t>(in.size()), keepdim).expand(in) / static_cast<double>(n)};
      }))
    set_history(s, node);
  return s;
}

Tensor mean(const Tensor& x, std::optional<DType> dtype) { return mean(x, IntArrayRef{}, false, dtype); }

// ---- sum_to ----
Tensor sum_to(const Tensor& x, IntArrayRef shape) {
  if (x.sizes().equals(shape)) return x;
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  GRAFT_CHECK(lead >= 0, "sum_to", "a target shape with at most " + std::to_string(x.dim()) + " dims",
              shape_str(shape), "the target shape may not have more dims than the tensor; squeeze it");
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < lead) dims.push_back(d);
    else if (shape[static_cast<size_t>(d - lead)] == 1 && x.size(d) != 1) dims.push_back(d);
    else
      GRAFT_CHECK(shape[static_cast<size_t>(d - lead)] == x.size(d) || shape[static_cast<size_t>(d - lead)] == 1,
                  "sum_to", "a shape " + shape_str(x.sizes()) + " can be summed down to", shape_str(shape),
                  "each target size must equal the tensor's or be 1 (aligned from the right)");
  }
  Tensor r = dims.empty() ? x : sum(x, dims, /*keepdim=*/true);
  return r.reshape(shape);
}

}  // namespace graft
