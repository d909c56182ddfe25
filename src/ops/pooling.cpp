// 2-D pooling: max_pool2d(_with_indices), avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d, on
// (N, C, H, W) or unbatched (C, H, W) inputs, float32 / float64. Output sizes, window clipping and
// divisors follow PyTorch (1.13). The 1-D pools run these on a height of 1 (Note [1-D pooling on
// the 2-D path]).
//
// Note [Pooling backward as ops]
// Each pool's backward is a hand-written kernel wrapped as a recorded op, and the backward of that
// op is a pooling op again, so derivatives of any order work:
//   max_pool2d: grad_input scatters g to the saved argmax indices; its derivative gathers gg at
//     the same indices (graft::gather, itself differentiable). Ties pick the first maximum in
//     window order (row by row), and nan counts as a maximum, as in PyTorch.
//   avg_pool2d / adaptive_avg_pool2d are linear in the input; grad_input spreads g / divisor over
//     each window, and the adjoint of that is the forward pool itself.
#include <algorithm>
#include <array>
#include <string>
#include <tuple>

#include "../core/dispatch.h"
#include "../kernels/pooling.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

// The loops are src/kernels/pooling.cpp's; this file fills their geometry.
using kernels::pooling::AvgOpts;
using kernels::pooling::PoolGeom;

using Pair = std::array<int64_t, 2>;  // {height, width}

using detail::pair_str;

// PyTorch's pooling_output_shape (with division rounding towards -inf).
int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  // In ceil mode the last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void check_pool_input(const Tensor& x, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined input", "an undefined tensor", "");
  GRAFT_CHECK(x.dim() == 3 || x.dim() == 4, op, "a 3-D (C, H, W) or 4-D (N, C, H, W) input",
              "input of shape " + shape_str(x.sizes()) + " (" + std::to_string(x.dim()) + "-D)",
              x.dim() == 2 ? "add a channel dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  for (int64_t d = x.dim() == 4 ? 1 : 0; d < x.dim(); ++d) {
    GRAFT_CHECK(x.size(d) > 0, op, "non-zero sizes in all but the batch dim", "input of shape " + shape_str(x.sizes()),
                "pooling needs at least one element in every channel and spatial dim");
  }
}

PoolGeom make_geom(const Tensor& x, IntArrayRef kernel_arg, IntArrayRef stride_arg, IntArrayRef padding_arg,
                   IntArrayRef dilation_arg, bool ceil_mode, const char* op) {
  check_pool_input(x, op);
  // ATen's pooling sizes: one value or {height, width}; an empty stride is the kernel size.
  const Pair kernel = detail::expand_pair(kernel_arg, op, "kernel_size");
  const Pair stride = stride_arg.empty() ? kernel : detail::expand_pair(stride_arg, op, "stride");
  const Pair padding = detail::expand_pair(padding_arg, op, "padding");
  const Pair dilation = detail::expand_pair(dilation_arg, op, "dilation");
  for (size_t i = 0; i < 2; ++i) {
    GRAFT_CHECK(kernel[i] > 0, op, "a positive kernel_size", "kernel_size " + pair_str(kernel),
                "pass kernel_size >= 1");
    GRAFT_CHECK(stride[i] > 0, op, "a positive stride", "stride " + pair_str(stride), "pass strides >= 1");
    GRAFT_CHECK(dilation[i] > 0, op, "a positive dilation", "dilation " + pair_str(dilation),
                "pass dilation >= 1 (1 is ordinary pooling)");
    GRAFT_CHECK(padding[i] >= 0, op, "a non-negative padding", "padding " + pair_str(padding),
                "pass padding >= 0 on each side");
    GRAFT_CHECK(padding[i] <= kernel[i] / 2, op, "padding at most half of kernel_size",
                "padding " + pair_str(padding) + " with kernel_size " + pair_str(kernel),
                "lower the padding or enlarge the kernel");
  }
  const int64_t d = x.dim();
  const int64_t H = x.size(d - 2), W = x.size(d - 1);
  PoolGeom g{};
  g.planes = x.numel() / std::max<int64_t>(1, H * W);
  if (x.numel() == 0) g.planes = 0;
  g.H = H;
  g.W = W;
  g.kH = kernel[0];
  g.kW = kernel[1];
  g.sH = stride[0];
  g.sW = stride[1];
  g.pH = padding[0];
  g.pW = padding[1];
  g.dH = dilation[0];
  g.dW = dilation[1];
  g.oH = pool_out_size(H, g.kH, g.pH, g.sH, g.dH, ceil_mode);
  g.oW = pool_out_size(W, g.kW, g.pW, g.sW, g.dW, ceil_mode);
  GRAFT_CHECK(g.oH >= 1 && g.oW >= 1, op, "an input large enough for at least one window (output size >= 1)",
              "input of shape " + shape_str(x.sizes()) + " giving output size " + std::to_string(g.oH) + "x" +
                  std::to_string(g.oW) + " (kernel_size " + pair_str(kernel) + ", stride " + pair_str(stride) +
                  ", padding " + pair_str(padding) + ", dilation " + pair_str(dilation) + ")",
              "Output size is too small: use a smaller kernel or more padding");
  return g;
}

Shape out_shape(const Tensor& x4, int64_t oH, int64_t oW) { return {x4.size(0), x4.size(1), oH, oW}; }

// ---- max pool ----

std::tuple<Tensor, Tensor> max_pool_kernel(const Tensor& x4, const PoolGeom& g) {
  NoGradGuard ng;
  const Tensor x = x4.detach().contiguous();
  Tensor y = make_empty(out_shape(x4, g.oH, g.oW), x.dtype(), x.device());
  Tensor idx = make_empty(out_shape(x4, g.oH, g.oW), kInt64, x.device());
  if (x.is_meta()) return {y, idx};  // Note [Meta device]: no kernel on meta
  kernels::dispatch_floating(x.dtype(), "max_pool2d",
                             [&]<class T>() { kernels::pooling::max_pool2d_forward<T>(x, y, idx, g); });
  return {y, idx};
}

// grad_input (N, C, H, W): g added at the argmax of each window.
// `name` / `op`: the node's name and forward op (adaptive_max_pool2d's backward is this one too).
Tensor max_pool_backward(const Tensor& g, const Tensor& idx, int64_t H, int64_t W,
                         const char* name = "MaxPool2DWithIndicesBackwardBackward0",
                         const char* op = "max_pool2d_with_indices_backward") {
  Tensor gx;
  {
    NoGradGuard ng;
    const Tensor gc = g.detach().contiguous(), ic = idx.contiguous();
    gx = zeros({g.size(0), g.size(1), H, W}, TensorOptions(g.dtype()).device(g.device()));
    kernels::dispatch_floating(g.dtype(), "max_pool2d", [&]<class T>() {
      if (gx.is_meta()) return;  // Note [Meta device]: no kernel on meta
      kernels::pooling::max_pool2d_backward<T>(gc, ic, gx);
    });
  }
  if (auto node = autograd::make_node(name, autograd::ForwardOp::unlisted(op), {&g},
                                      [](Node& n, const Tensor& gg) -> TensorList {
                                        // d g = gg at the argmax positions
                                        const Tensor ix = n.saved(0);
                                        const int64_t N = ix.size(0), C = ix.size(1);
                                        return {gg.reshape({N, C, gg.size(2) * gg.size(3)})
                                                    .gather(2, ix.reshape({N, C, ix.size(2) * ix.size(3)}))
                                                    .reshape(ix.sizes())};
                                      })) {
    node->save(idx);
    set_history(gx, node);
  }
  return gx;
}

// id: max_pool2d_with_indices, or max_pool1d on a height of 1.
std::tuple<Tensor, Tensor> max_pool_op(const Tensor& x4, const PoolGeom& geom,
                                       OpId id = OpId::max_pool2d_with_indices) {
  auto [y, idx] = max_pool_kernel(x4, geom);
  const int64_t H = geom.H, W = geom.W;
  if (auto node = make_node("MaxPool2DWithIndicesBackward0", id, {&x4}, [H, W](Node& n, const Tensor& g) -> TensorList {
        return {max_pool_backward(g, n.saved(0), H, W)};
      })) {
    node->save(idx);
    set_history(y, node);
  }
  return {y, idx};
}

// ---- avg pool ----

Tensor avg_pool_op(const Tensor& x4, const PoolGeom& geom, const AvgOpts& o, OpId id = OpId::avg_pool2d);

Tensor avg_pool_backward(const Tensor& g, const PoolGeom& geom, const AvgOpts& o) {
  Tensor gx;
  {
    NoGradGuard ng;
    const Tensor gc = g.detach().contiguous();
    gx = zeros({g.size(0), g.size(1), geom.H, geom.W}, TensorOptions(g.dtype()).device(g.device()));
    kernels::dispatch_floating(g.dtype(), "avg_pool2d", [&]<class T>() {
      if (gx.is_meta()) return;  // Note [Meta device]: no kernel on meta
      kernels::pooling::avg_pool2d_backward<T>(gc, gx, geom, o);
    });
  }
  if (auto node = autograd::make_node("AvgPool2DBackwardBackward0", autograd::ForwardOp::unlisted("avg_pool2d_backward"), {&g}, [geom, o](Node&, const Tensor& gg) -> TensorList {
        return {avg_pool_op(gg, geom, o)};  // the adjoint of spreading is averaging
      })) {
    set_history(gx, node);
  }
  return gx;
}

// id: avg_pool2d, or avg_pool1d on a height of 1.
Tensor avg_pool_op(const Tensor& x4, const PoolGeom& geom, const AvgOpts& o, OpId id) {
  Tensor y;
  {
    NoGradGuard ng;
    const Tensor x = x4.detach().contiguous();
    y = make_empty(out_shape(x4, geom.oH, geom.oW), x.dtype(), x.device());
    kernels::dispatch_floating(x.dtype(), "avg_pool2d", [&]<class T>() {
      if (x.is_meta()) return;  // Note [Meta device]: no kernel on meta
      kernels::pooling::avg_pool2d_forward<T>(x, y, geom, o);
    });
  }
  if (auto node = make_node("AvgPool2DBackward0", id, {&x4}, [geom, o](Node&, const Tensor& g) -> TensorList {
        return {avg_pool_backward(g, geom, o)};
      })) {
    set_history(y, node);
  }
  return y;
}

// ---- adaptive avg pool: window i of n over a size-s dim is [floor(i s / n), ceil((i + 1) s / n)) ----

Tensor adaptive_avg_op(const Tensor& x4, int64_t oH, int64_t oW, OpId id = OpId::adaptive_avg_pool2d);

Tensor adaptive_avg_backward(const Tensor& g, int64_t H, int64_t W) {
  Tensor gx;
  {
    NoGradGuard ng;
    const Tensor gc = g.detach().contiguous();
    gx = zeros({g.size(0), g.size(1), H, W}, TensorOptions(g.dtype()).device(g.device()));
    kernels::dispatch_floating(g.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
      if (gx.is_meta()) return;  // Note [Meta device]: no kernel on meta
      kernels::pooling::adaptive_avg_pool2d_backward<T>(gc, gx);
    });
  }
  const int64_t oH = g.size(2), oW = g.size(3);
  if (auto node = autograd::make_node("AdaptiveAvgPool2DBackwardBackward0", autograd::ForwardOp::unlisted("adaptive_avg_pool2d_backward"), {&g}, [oH, oW](Node&, const Tensor& gg) -> TensorList {
        return {adaptive_avg_op(gg, oH, oW)};
      })) {
    set_history(gx, node);
  }
  return gx;
}

// id: adaptive_avg_pool2d, or adaptive_avg_pool1d on a height of 1.
Tensor adaptive_avg_op(const Tensor& x4, int64_t oH, int64_t oW, OpId id) {
  Tensor y;
  const int64_t H = x4.size(2), W = x4.size(3);
  {
    NoGradGuard ng;
    const Tensor x = x4.detach().contiguous();
    y = make_empty({x4.size(0), x4.size(1), oH, oW}, x.dtype(), x.device());
    kernels::dispatch_floating(x.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
      if (x.is_meta()) return;  // Note [Meta device]: no kernel on meta
      kernels::pooling::adaptive_avg_pool2d_forward<T>(x, y);
    });
  }
  if (auto node = make_node("AdaptiveAvgPool2DBackward0", id, {&x4}, [H, W](Node&, const Tensor& g) -> TensorList {
        return {adaptive_avg_backward(g, H, W)};
      })) {
    set_history(y, node);
  }
  return y;
}

// ---- adaptive max pool: the windows of adaptive avg pool, the maximum of each ----
// Ties pick the first maximum in row order and nan counts as a maximum (a later nan takes over), as
// in max_pool2d;
// indices within each input plane (h * W + w). The backward is max_pool2d's scatter (and its
// gather for double backward, Note [Pooling backward as ops]).
std::tuple<Tensor, Tensor> adaptive_max_op(const Tensor& x4, int64_t oH, int64_t oW) {
  const int64_t H = x4.size(2), W = x4.size(3);
  Tensor y, idx;
  {
    NoGradGuard ng;
    const Tensor x = x4.detach().contiguous();
    y = make_empty({x4.size(0), x4.size(1), oH, oW}, x.dtype(), x.device());
    idx = make_empty({x4.size(0), x4.size(1), oH, oW}, kInt64, x.device());
    kernels::dispatch_floating(x.dtype(), "adaptive_max_pool2d", [&]<class T>() {
      if (x.is_meta()) return;  // Note [Meta device]: no kernel on meta
      kernels::pooling::adaptive_max_pool2d_forward<T>(x, y, idx);
    });
  }
  if (auto node = make_node("AdaptiveMaxPool2DBackward0", OpId::adaptive_max_pool2d, {&x4},
                            [H, W](Node& n, const Tensor& g) -> TensorList {
                              return {max_pool_backward(g, n.saved(0), H, W, "AdaptiveMaxPool2DBackwardBackward0",
                                                        "adaptive_max_pool2d_backward")};
                            })) {
    node->save(idx);
    set_history(y, node);
  }
  return {y, idx};
}

// ---- 1-D pools: the 2-D ones on a height of 1 ----
// Note [1-D pooling on the 2-D path]
// max_pool1d, avg_pool1d and adaptive_avg_pool1d view (N, C, L) as (N, C, 1, L) and run the 2-D
// kernels with a window height of 1, as PyTorch does; their arguments are checked here, on the
// 1-D shapes, so the messages name the 1-D op and its sizes. The graph shows the 2-D pool's node
// (forward op max_pool1d / avg_pool1d / adaptive_avg_pool1d) between an unsqueeze and a squeeze.

int64_t single(IntArrayRef v, const char* op, const char* name) {
  GRAFT_CHECK(v.size() == 1, op, std::string(name) + " of 1 value",
              std::string(name) + " of " + std::to_string(v.size()) + " values", "a 1-D pool takes one value per size");
  return v[0];
}

void check_pool1d_input(const Tensor& x, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined input", "an undefined tensor", "");
  GRAFT_CHECK(x.dim() == 2 || x.dim() == 3, op, "a 2-D (C, L) or 3-D (N, C, L) input",
              "input of shape " + shape_str(x.sizes()) + " (" + std::to_string(x.dim()) + "-D)",
              x.dim() == 1 ? "add a channel dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  for (int64_t d = x.dim() == 3 ? 1 : 0; d < x.dim(); ++d) {
    GRAFT_CHECK(x.size(d) > 0, op, "non-zero sizes in all but the batch dim", "input of shape " + shape_str(x.sizes()),
                "pooling needs at least one element in every channel and the length dim");
  }
}

// The 2-D geometry of a 1-D pool (window height 1), its arguments checked on the 1-D shapes.
PoolGeom make_geom1d(const Tensor& x, IntArrayRef kernel_arg, IntArrayRef stride_arg, IntArrayRef padding_arg,
                     IntArrayRef dilation_arg, bool ceil_mode, const char* op) {
  check_pool1d_input(x, op);
  const int64_t k = single(kernel_arg, op, "kernel_size");
  const int64_t s = stride_arg.empty() ? k : single(stride_arg, op, "stride");
  const int64_t p = single(padding_arg, op, "padding"), d = single(dilation_arg, op, "dilation");
  const std::string args = "kernel_size " + std::to_string(k) + ", stride " + std::to_string(s) + ", padding " +
                           std::to_string(p) + ", dilation " + std::to_string(d);
  GRAFT_CHECK(k > 0, op, "a positive kernel_size", args, "pass kernel_size >= 1");
  GRAFT_CHECK(s > 0, op, "a positive stride", args, "pass stride >= 1");
  GRAFT_CHECK(d > 0, op, "a positive dilation", args, "pass dilation >= 1 (1 is ordinary pooling)");
  GRAFT_CHECK(p >= 0, op, "a non-negative padding", args, "pass padding >= 0");
  GRAFT_CHECK(p <= k / 2, op, "padding at most half of kernel_size", args, "lower the padding or enlarge the kernel");
  const int64_t out = pool_out_size(x.size(-1), k, p, s, d, ceil_mode);
  GRAFT_CHECK(
      out >= 1, op, "an input large enough for at least one window (output size >= 1)",
      "input of shape " + shape_str(x.sizes()) + " giving output size " + std::to_string(out) + " (" + args + ")",
      "Output size is too small: use a smaller kernel or more padding");
  return make_geom(x.unsqueeze(-2), {1, k}, {1, s}, {0, p}, {1, d}, ceil_mode, op);
}

void check_adaptive_output(const Tensor& input, int64_t o, const char* op) {
  GRAFT_CHECK(o > 0, op, "a positive output_size",
              "output_size " + std::to_string(o) + " for input of shape " + shape_str(input.sizes()),
              "pass output_size >= 1");
}

Tensor batched(const Tensor& x) { return x.dim() == 3 ? x.unsqueeze(0) : x; }
Tensor unbatched_like(const Tensor& y, const Tensor& x) { return x.dim() == 3 ? y.squeeze(0) : y; }

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  detail::MetaOpScope meta_scope("max_pool2d", {&input});  // Note [Meta device]
  const PoolGeom geom = make_geom(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d");
  auto [y, idx] = max_pool_op(batched(input), geom);
  return {unbatched_like(y, input), unbatched_like(idx, input)};
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  detail::MetaOpScope meta_scope("max_pool2d", {&input});  // Note [Meta device]
  // A half input (autocast's conv2d output): max is exact in any precision, so pool in float32 and
  // round back, exactly; the float32 copy is not saved (max pooling saves only its indices).
  if (input.dtype() == kFloat16 || input.dtype() == kBFloat16)
    return max_pool2d(input.to(kFloat32), kernel_size, stride, padding, dilation, ceil_mode).to(input.dtype());
  memory::OpScope op_scope("max_pool2d");  // names its allocations in the memory report
  return std::get<0>(max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  detail::MetaOpScope meta_scope("avg_pool2d", {&input});  // Note [Meta device]
  const PoolGeom geom = make_geom(input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d");
  const int64_t div = divisor_override.value_or(0);
  GRAFT_CHECK(!divisor_override || div != 0, "avg_pool2d", "a non-zero divisor_override",
              "divisor_override = 0", "leave it unset to divide by the window size");
  return unbatched_like(avg_pool_op(batched(input), geom, {count_include_pad, div}), input);
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  detail::MetaOpScope meta_scope("adaptive_avg_pool2d", {&input});  // Note [Meta device]
  const char* op = "adaptive_avg_pool2d";
  check_pool_input(input, op);
  const Pair os = detail::expand_pair(output_size, op, "output_size");
  GRAFT_CHECK(os[0] > 0 && os[1] > 0, op, "a positive output_size",
              "output_size " + pair_str(os) + " for input of shape " + shape_str(input.sizes()),
              "pass output_size >= 1 in both dims");
  return unbatched_like(adaptive_avg_op(batched(input), os[0], os[1]), input);
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  detail::MetaOpScope meta_scope("adaptive_max_pool2d", {&input});  // Note [Meta device]
  const char* op = "adaptive_max_pool2d";
  check_pool_input(input, op);
  const Pair os = detail::expand_pair(output_size, op, "output_size");
  GRAFT_CHECK(os[0] > 0 && os[1] > 0, op, "a positive output_size",
              "output_size " + pair_str(os) + " for input of shape " + shape_str(input.sizes()),
              "pass output_size >= 1 in both dims");
  memory::OpScope op_scope(op);
  auto [y, idx] = adaptive_max_op(batched(input), os[0], os[1]);
  return {unbatched_like(y, input), unbatched_like(idx, input)};
}

// Note [1-D pooling on the 2-D path]: (N, C, L) -> (N, C, 1, L) -> the 2-D op -> squeeze.
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  detail::MetaOpScope meta_scope("max_pool1d", {&input});  // Note [Meta device]
  const char* op = "max_pool1d";
  const PoolGeom geom = make_geom1d(input, kernel_size, stride, padding, dilation, ceil_mode, op);
  memory::OpScope op_scope(op);
  const Tensor x = input.unsqueeze(-2);
  const Tensor y = std::get<0>(max_pool_op(batched(x), geom, OpId::max_pool1d));
  return unbatched_like(y, x).squeeze(-2);
}

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad) {
  detail::MetaOpScope meta_scope("avg_pool1d", {&input});  // Note [Meta device]
  const char* op = "avg_pool1d";
  const PoolGeom geom = make_geom1d(input, kernel_size, stride, padding, 1, ceil_mode, op);
  const Tensor x = input.unsqueeze(-2);
  return unbatched_like(avg_pool_op(batched(x), geom, {count_include_pad, 0}, OpId::avg_pool1d), x).squeeze(-2);
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  detail::MetaOpScope meta_scope("adaptive_avg_pool1d", {&input});  // Note [Meta device]
  const char* op = "adaptive_avg_pool1d";
  check_pool1d_input(input, op);
  const int64_t o = single(output_size, op, "output_size");
  check_adaptive_output(input, o, op);
  const Tensor x = input.unsqueeze(-2);
  return unbatched_like(adaptive_avg_op(batched(x), 1, o, OpId::adaptive_avg_pool1d), x).squeeze(-2);
}

}  // namespace graft
