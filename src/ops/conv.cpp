// Convolution: conv2d and conv3d with stride, padding, dilation and groups, via im2col / vol2col
// and OpenBLAS gemm (float32 / float64), or oneDNN for float32 2-D convolutions with enough
// channels (Note [Convolution backends] in src/kernels/onednn_conv.cpp); conv_transpose2d; conv1d
// and conv_transpose1d on the 2-D path (Note [1-D convolution on the 2-D path]). This file keeps
// the checks, the shapes, the backend choice and the recorded nodes; the loops are in
// src/kernels/conv.cpp.
//
// Note [Convolution backward as ops]
// conv(x, w) is bilinear, and so are its two backward maps
//   Bx(g, w) = d<g, conv(x, w)>/dx   (col2im of w^T @ g),
//   Bw(g, x) = d<g, conv(x, w)>/dw   (g @ cols(x)^T, summed over the batch).
// Each of the three is a recorded op whose backward is written with the other two:
//   conv:  dx = Bx(g, w),         dw = Bw(g, x),          db = sum(g over N, H, W)
//   Bx:    dg = conv(gg, w),      dw = Bw(g, gg)          (gg: the gradient of Bx's output)
//   Bw:    dg = conv(x, gg),      dx = Bx(g, gg)
// (from <Bx(g, w), h> = <g, conv(h, w)> and <Bw(g, x), k> = <g, conv(x, k)>), so derivatives of
// any order come from the same three kernels.

#include <array>
#include <climits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../kernels/conv.h"
#include "../kernels/im2col.h"
#include "../kernels/onednn_conv.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops/autocast_internal.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

// The ops below serve conv2d (D = 2, im2col) and conv3d (D = 3, vol2col); conv1d and
// conv_transpose1d run the D = 2 ones on a height of 1. The code is the same for both D: only the
// geometry and its column transform (in the kernels, src/kernels/conv.h) differ.
template <size_t D>
using ConvDims = std::array<int64_t, D>;

template <size_t D>
struct ConvParams {
  ConvDims<D> stride, padding, dilation;
  int64_t groups;
};

template <size_t D>
std::string dims_str(const ConvDims<D>& a) {
  std::string s = "(";
  for (size_t i = 0; i < D; ++i) s += (i ? ", " : "") + std::to_string(a[i]);
  return s + ")";
}

// ATen's size arguments: one value for every spatial dim, or one per dim.
template <size_t D>
ConvDims<D> expand(IntArrayRef v, const char* op, const char* name) {
  if constexpr (D == 2) {
    return detail::expand_pair(v, op, name);
  } else {
    GRAFT_CHECK(v.size() == 1 || v.size() == D, op,
                std::string(name) + (D == 1 ? " of 1 value" : " of 1 or 3 values (one for all dims, or one per dim)"),
                std::string(name) + " of " + std::to_string(v.size()) + " values",
                D == 1 ? "pass one value" : "pass one value for all dims or {depth, height, width}");
    ConvDims<D> a{};
    for (size_t i = 0; i < D; ++i) a[i] = v.size() == 1 ? v[0] : v[i];
    return a;
  }
}

int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

template <size_t D>
using Geometry = std::conditional_t<D == 2, kernels::Conv2dGeometry, kernels::Conv3dGeometry>;

// The geometry of one image / volume of C channels and spatial sizes `in`, kernel sizes `k`.
template <size_t D>
Geometry<D> geometry(int64_t C, const ConvDims<D>& in, const ConvDims<D>& k, const ConvParams<D>& p) {
  ConvDims<D> out{};
  for (size_t i = 0; i < D; ++i) out[i] = conv_out_size(in[i], k[i], p.stride[i], p.padding[i], p.dilation[i]);
  if constexpr (D == 2) {
    return {.channels = C, .height = in[0], .width = in[1], .kernel_h = k[0], .kernel_w = k[1],
            .stride_h = p.stride[0], .stride_w = p.stride[1], .pad_h = p.padding[0], .pad_w = p.padding[1],
            .dilation_h = p.dilation[0], .dilation_w = p.dilation[1], .out_h = out[0], .out_w = out[1]};
  } else {
    return {.channels = C, .depth = in[0], .height = in[1], .width = in[2],
            .kernel_d = k[0], .kernel_h = k[1], .kernel_w = k[2],
            .stride_d = p.stride[0], .stride_h = p.stride[1], .stride_w = p.stride[2],
            .pad_d = p.padding[0], .pad_h = p.padding[1], .pad_w = p.padding[2],
            .dilation_d = p.dilation[0], .dilation_h = p.dilation[1], .dilation_w = p.dilation[2],
            .out_d = out[0], .out_h = out[1], .out_w = out[2]};
  }
}

kernels::Conv2dGeometry geometry(int64_t C, int64_t H, int64_t W, int64_t kH, int64_t kW, const ConvParams<2>& p) {
  return geometry<2>(C, {H, W}, {kH, kW}, p);
}

// The output shape (N, O, out...) for O output channels.
Shape out_shape(int64_t N, int64_t O, const kernels::Conv2dGeometry& g) { return {N, O, g.out_h, g.out_w}; }
Shape out_shape(int64_t N, int64_t O, const kernels::Conv3dGeometry& g) { return {N, O, g.out_d, g.out_h, g.out_w}; }

// Sizes 2 .. 2 + D of t (the spatial sizes of a batched input, or a weight's kernel sizes).
template <size_t D>
ConvDims<D> spatial(const Tensor& t) {
  ConvDims<D> a{};
  for (size_t i = 0; i < D; ++i) a[i] = t.size(static_cast<int64_t>(2 + i));
  return a;
}

// The backend of this convolution: oneDNN for the float32 2-D shapes where it wins (Note
// [Convolution backends] in src/kernels/onednn_conv.cpp), else im2col + gemm.
template <size_t D>
kernels::conv::Backend backend(DType dtype, const Geometry<D>& g, int64_t O, int64_t groups) {
  if constexpr (D == 2) {
    if (dtype == kFloat32 && kernels::onednn::use_for({g, O, groups})) return kernels::conv::Backend::onednn;
  }
  return kernels::conv::Backend::im2col;
}

// ---- raw kernels: contiguous, detached operands, no recording (the loops: src/kernels/conv.cpp) ----

// y (N, O, o...) = conv(x (N, C, in...), w (O, C/groups, k...)) + b (O) when defined.
template <size_t D>
Tensor conv_forward_kernel(const Tensor& x_, const Tensor& w_, const Tensor& b_, const ConvParams<D>& p) {
  NoGradGuard ng;
  const Tensor x = x_.detach().contiguous(), w = w_.detach().contiguous();
  const Tensor b = b_.defined() ? b_.detach().contiguous() : Tensor();
  const int64_t N = x.size(0), C = x.size(1), O = w.size(0);
  const auto geo = geometry<D>(C, spatial<D>(x), spatial<D>(w), p);
  Tensor y = make_empty(out_shape(N, O, geo), x.dtype(), x.device());
  if (y.is_meta()) {  // Note [Meta device]: no kernel on meta, its buffers alone (Note [oneDNN's buffers on meta])
    if constexpr (D == 2)
      kernels::conv::meta_buffers(kernels::conv::Pass::forward, geo, O, p.groups, N, b.defined(),
                                  backend<D>(x.dtype(), geo, O, p.groups));
    return y;
  }
  kernels::conv::forward(x, w, b, geo, p.groups, backend<D>(x.dtype(), geo, O, p.groups), y);
  return y;
}

// Bx: grad_input (N, C, in...) of conv for grad_output g (N, O, o...) and weight w.
template <size_t D>
Tensor conv_input_backward_kernel(const Tensor& g_, const Tensor& w_, const ConvParams<D>& p, const ConvDims<D>& in) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), w = w_.detach().contiguous();
  const int64_t N = g.size(0), O = w.size(0), C = w.size(1) * p.groups;
  const auto geo = geometry<D>(C, in, spatial<D>(w), p);
  Shape shape{N, C};
  for (int64_t v : in) shape.push_back(v);
  Tensor gx = make_empty(shape, g.dtype(), g.device());
  if (gx.is_meta()) {  // Note [Meta device]: no kernel on meta, its buffers alone (Note [oneDNN's buffers on meta])
    if constexpr (D == 2)
      kernels::conv::meta_buffers(kernels::conv::Pass::input_backward, geo, O, p.groups, N, false,
                                  backend<D>(g.dtype(), geo, O, p.groups));
    return gx;
  }
  kernels::conv::input_backward(g, w, geo, p.groups, backend<D>(g.dtype(), geo, O, p.groups), gx);
  return gx;
}
Tensor conv_input_backward_kernel(const Tensor& g, const Tensor& w, const ConvParams<2>& p, int64_t H, int64_t W) {
  return conv_input_backward_kernel<2>(g, w, p, {H, W});
}

// Bw: grad_weight (O, C/groups, k...) of conv for grad_output g (N, O, o...) and input x, summed over
// the batch in fixed blocks (Note [Convolution weight gradient in blocks] in src/kernels/conv.cpp).
template <size_t D>
Tensor conv_weight_backward_kernel(const Tensor& g_, const Tensor& x_, const ConvParams<D>& p, const ConvDims<D>& k) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous();
  const int64_t N = x.size(0), C = x.size(1), O = g.size(1), G = p.groups;
  const auto geo = geometry<D>(C, spatial<D>(x), k, p);
  Shape shape{O, C / G};
  for (int64_t v : k) shape.push_back(v);
  Tensor gw = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
  if (N == 0) return gw;
  if (gw.is_meta()) {  // Note [Meta device]: no kernel on meta, its buffers alone (Note [oneDNN's buffers on meta])
    if constexpr (D == 2)
      kernels::conv::meta_buffers(kernels::conv::Pass::weight_backward, geo, O, G, N, false, backend<D>(g.dtype(), geo, O, G));
    return gw;
  }
  kernels::conv::weight_backward(g, x, geo, G, backend<D>(g.dtype(), geo, O, G), gw);
  return gw;
}

// grad_bias (O) = g (N, O, o...) summed over N and the spatial dims. Without create_graph, one pass
// over a contiguous g with a float64 accumulator per channel; with it, the recorded sum.
Tensor conv_bias_backward(const Tensor& g) {
  if (GradMode::is_enabled() && g.requires_grad()) {
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < g.dim(); ++d) dims.push_back(d);
    return g.sum(dims);
  }
  NoGradGuard ng;
  const Tensor gc = g.contiguous();
  Tensor gb = make_empty({gc.size(1)}, gc.dtype(), gc.device());
  if (gb.is_meta()) return gb;  // Note [Meta device]: no kernel on meta
  kernels::conv::bias_backward(gc, gb);
  return gb;
}

// ---- the three recorded ops of Note [Convolution backward as ops] ----
// `id`: the op the forward node is the backward of (conv2d, or conv1d running on a height of 1,
// or conv3d); the backward nodes are convolution_backward's for all of them.
template <size_t D>
Tensor conv_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams<D>& p, OpId id);
template <size_t D>
Tensor conv_input_backward(const Tensor& g, const Tensor& w, const ConvParams<D>& p, const ConvDims<D>& in);
template <size_t D>
Tensor conv_weight_backward(const Tensor& g, const Tensor& x, const ConvParams<D>& p, const ConvDims<D>& k);

template <size_t D>
Tensor conv_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams<D>& p, OpId id) {
  memory::OpScope op_scope(ops::op_name(id));  // names its allocations in the memory report
  detail::MetaOpScope meta_scope(ops::op_name(id), {&x, &w, &b});  // Note [Meta device]
  Tensor y = conv_forward_kernel<D>(x, w, b, p);
  const ConvDims<D> in = spatial<D>(x), k = spatial<D>(w);
  if (auto node =
          make_node("ConvolutionBackward0", id, {&x, &w, &b}, [p, in, k](Node& n, const Tensor& g) -> TensorList {
            const bool need_x = n.needs_input_grad(0), need_w = n.needs_input_grad(1), need_b = n.needs_input_grad(2);
            return {need_x ? conv_input_backward<D>(g, n.saved(1), p, in) : Tensor(),
                    need_w ? conv_weight_backward<D>(g, n.saved(0), p, k) : Tensor(),
                    need_b ? conv_bias_backward(g) : Tensor()};
          })) {
    node->save(x);
    node->save(w);
    set_history(y, node);
  }
  return y;
}

template <size_t D>
Tensor conv_input_backward(const Tensor& g, const Tensor& w, const ConvParams<D>& p, const ConvDims<D>& in) {
  Tensor gx = conv_input_backward_kernel<D>(g, w, p, in);
  const ConvDims<D> k = spatial<D>(w);
  constexpr OpId id = D == 2 ? OpId::conv2d : OpId::conv3d;  // a constant: the lambdas need no capture
  if (auto node =
          autograd::make_node("ConvolutionBackwardBackward0", autograd::ForwardOp::unlisted("convolution_backward"),
                              {&g, &w}, [p, k](Node& n, const Tensor& gg) -> TensorList {
                                const bool need_g = n.needs_input_grad(0), need_w = n.needs_input_grad(1);
                                return {need_g ? conv_op<D>(gg, n.saved(1), Tensor(), p, id) : Tensor(),
                                        need_w ? conv_weight_backward<D>(n.saved(0), gg, p, k) : Tensor()};
                              })) {
    node->save(g);
    node->save(w);
    set_history(gx, node);
  }
  return gx;
}

template <size_t D>
Tensor conv_weight_backward(const Tensor& g, const Tensor& x, const ConvParams<D>& p, const ConvDims<D>& k) {
  Tensor gw = conv_weight_backward_kernel<D>(g, x, p, k);
  const ConvDims<D> in = spatial<D>(x);
  constexpr OpId id = D == 2 ? OpId::conv2d : OpId::conv3d;  // a constant: the lambdas need no capture
  if (auto node =
          autograd::make_node("ConvolutionBackwardBackward0", autograd::ForwardOp::unlisted("convolution_backward"),
                              {&g, &x}, [p, in](Node& n, const Tensor& gg) -> TensorList {
                                const bool need_g = n.needs_input_grad(0), need_x = n.needs_input_grad(1);
                                return {need_g ? conv_op<D>(n.saved(1), gg, Tensor(), p, id) : Tensor(),
                                        need_x ? conv_input_backward<D>(n.saved(0), gg, p, in) : Tensor()};
                              })) {
    node->save(g);
    node->save(x);
    set_history(gw, node);
  }
  return gw;
}

// ---- transposed convolution ----
// Note [Transposed convolution]
// conv_transpose2d(x, w) is the adjoint of conv2d(., w) as a linear map of its input: with the
// conv A_w: z (N, C, H, W) -> (N, O, oH, oW), conv_transpose2d(x) = A_w^T x, which is exactly
// conv2d's input gradient for "grad_output" x. Its weight has conv's layout with the roles of the
// channels swapped, (in_channels = O, out_channels / groups = C / groups, kH, kW), and the output
// size is (H_in - 1) s - 2 p + d (k - 1) + output_padding + 1, the input size that conv2d maps to
// H_in (output_padding picks among the sizes that stride s folds together). Gradients, from
// <g, A^T x> = <A g, x>: d x = conv2d(g, w) (A g), d w = conv2d's weight gradient for input g and
// grad_output x, d b = g summed over N, H and W. Each is one of the recorded ops of
// Note [Convolution backward as ops], so double backward works as for conv2d. conv_transpose1d
// is conv_transpose2d on a height of 1.
Tensor conv_transpose_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams<2>& p, int64_t oH,
                         int64_t oW, OpId id) {
  memory::OpScope op_scope(ops::op_name(id));  // names its allocations in the memory report
  detail::MetaOpScope meta_scope(ops::op_name(id), {&x, &w, &b});  // Note [Meta device]
  Tensor y = conv_input_backward_kernel(x, w, p, oH, oW);
  if (b.defined()) {
    NoGradGuard ng;
    y.add_(b.detach().reshape({1, -1, 1, 1}));
  }
  const ConvDims<2> k = spatial<2>(w);
  if (auto node = make_node("ConvolutionBackward0", id, {&x, &w, &b}, [p, k](Node& n, const Tensor& g) -> TensorList {
        const bool need_x = n.needs_input_grad(0), need_w = n.needs_input_grad(1), need_b = n.needs_input_grad(2);
        return {need_x ? conv_op<2>(g, n.saved(1), Tensor(), p, OpId::conv2d) : Tensor(),
                need_w ? conv_weight_backward<2>(n.saved(0), g, p, k) : Tensor(),
                need_b ? conv_bias_backward(g) : Tensor()};
      })) {
    node->save(x);
    node->save(w);
    set_history(y, node);
  }
  return y;
}

// ---- lower precision convolution (Note [Autocast] in graft/ops/autocast.h) ----
// conv(x, w) + b in dtype h: every operand rounded to h, the float32 kernel on the rounded values,
// the result rounded to h. Backward: the float32 ops of Note [Convolution backward as ops] on the
// rounded operands (re-rounded from what was saved), returning float32 gradients.
Tensor lowp_conv_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams<2>& p, DType h, OpId id) {
  detail::MetaOpScope meta_scope(ops::op_name(id), {&x, &w, &b});  // Note [Meta device]
  Tensor y;
  {
    NoGradGuard ng;
    y = conv_forward_kernel<2>(detail::rounded_float32(x, h), detail::rounded_float32(w, h),
                               b.defined() ? detail::rounded_float32(b, h) : Tensor(), p)
            .to(h);
  }
  const ConvDims<2> in = spatial<2>(x), k = spatial<2>(w);
  if (auto node =
          make_node("ConvolutionBackward0", id, {&x, &w, &b}, [p, in, k, h](Node& n, const Tensor& g) -> TensorList {
            const bool need_x = n.needs_input_grad(0), need_w = n.needs_input_grad(1), need_b = n.needs_input_grad(2);
            const Tensor g32 = g.to(kFloat32);
            return {need_x ? conv_input_backward<2>(g32, detail::rounded_float32(n.saved(1), h), p, in) : Tensor(),
                    need_w ? conv_weight_backward<2>(g32, detail::rounded_float32(n.saved(0), h), p, k) : Tensor(),
                    need_b ? conv_bias_backward(g32) : Tensor()};
          })) {
    node->save(detail::lowp_saved(x, h));
    node->save(detail::lowp_saved(w, h));
    set_history(y, node);
  }
  return y;
}

// ---- argument checks, for D spatial dims (conv1d: 1, conv2d: 2, conv3d: 3) ----
template <size_t D>
const char* dim_name(size_t i) {
  if constexpr (D == 1) return "length";
  if constexpr (D == 2) return i == 0 ? "height" : "width";
  return i == 0 ? "depth" : i == 1 ? "height" : "width";
}
// The input layouts "(C, H, W)" / "(N, C, H, W)" and the kernel dims "kH, kW".
template <size_t D>
std::string input_layout(bool batched) {
  const char* dims = D == 1 ? "L" : D == 2 ? "H, W" : "D, H, W";
  return std::string(batched ? "(N, C, " : "(C, ") + dims + ")";
}
template <size_t D>
const char* kernel_dims() { return D == 1 ? "kL" : D == 2 ? "kH, kW" : "kD, kH, kW"; }
std::string rank_str(int64_t r) { return std::to_string(r) + "-D"; }

// lowp: the operands may mix float32 and a half dtype (autocast), so their dtypes are not compared.
template <size_t D>
void check_conv_args(const char* op, const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams<D>& p,
                     bool lowp) {
  constexpr auto R = static_cast<int64_t>(D);
  GRAFT_CHECK(x.defined() && w.defined(), op, "defined input and weight tensors", "an undefined tensor", "");
  GRAFT_CHECK(
      w.dim() == R + 2, op,
      "weight to be a " + rank_str(R + 2) + " tensor (out_channels, in_channels / groups, " + kernel_dims<D>() + ")",
      "weight of shape " + shape_str(w.sizes()),
      "for a 1x1 or single-channel kernel keep all " + std::to_string(R + 2) + " dims");
  GRAFT_CHECK(x.dim() == R + 1 || x.dim() == R + 2, op,
              "a " + rank_str(R + 1) + " " + input_layout<D>(false) + " or " + rank_str(R + 2) + " " +
                  input_layout<D>(true) + " input",
              "input of shape " + shape_str(x.sizes()) + " (" + rank_str(x.dim()) + ")",
              x.dim() == R ? "add a channel dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  GRAFT_CHECK(lowp || (w.dtype() == x.dtype() && (!b.defined() || b.dtype() == x.dtype())), op,
              "input, weight and bias of the same dtype",
              std::string(dtype_name(x.dtype())) + " input, " + dtype_name(w.dtype()) + " weight" +
                  (b.defined() ? std::string(", ") + dtype_name(b.dtype()) + " bias" : std::string()),
              "convert the weight, e.g. weight.to(input.dtype())");
  GRAFT_CHECK(p.groups > 0, op, "groups > 0", "groups = " + std::to_string(p.groups),
              "pass groups >= 1 (1 is an ordinary convolution)");
  for (size_t i = 0; i < D; ++i) {
    GRAFT_CHECK(p.stride[i] > 0, op, "a positive stride", "stride " + dims_str<D>(p.stride), "pass strides >= 1");
    GRAFT_CHECK(p.padding[i] >= 0, op, "a non-negative padding", "padding " + dims_str<D>(p.padding),
                "pass padding >= 0 on each side");
    GRAFT_CHECK(p.dilation[i] > 0, op, "a positive dilation", "dilation " + dims_str<D>(p.dilation),
                "pass dilation >= 1 (1 is an ordinary convolution)");
  }
  const int64_t C = x.size(x.dim() - R - 1), O = w.size(0);
  GRAFT_CHECK(O % p.groups == 0, op, "out_channels (weight.size(0)) divisible by groups",
              "weight of shape " + shape_str(w.sizes()) + " with groups = " + std::to_string(p.groups),
              "choose groups that divide out_channels, or change out_channels");
  GRAFT_CHECK(C % p.groups == 0, op,
              "in_channels (input.size(" + std::to_string(x.dim() - R - 1) + ")) divisible by groups",
              "input of shape " + shape_str(x.sizes()) + " with groups = " + std::to_string(p.groups),
              "the input's channel dim is the one before the spatial dims; choose groups that divide it");
  GRAFT_CHECK(C == w.size(1) * p.groups, op,
              "input with " + std::to_string(w.size(1) * p.groups) + " channels (weight.size(1) * groups = " +
                  std::to_string(w.size(1)) + " * " + std::to_string(p.groups) + ")",
              "input of shape " + shape_str(x.sizes()) + " with " + std::to_string(C) +
                  " channels for weight of shape " + shape_str(w.sizes()),
              std::string("weight is (out_channels, in_channels / groups, ") + kernel_dims<D>() + ")");
  if (b.defined()) {
    GRAFT_CHECK(b.dim() == 1 && b.size(0) == O, op, "bias of shape [" + std::to_string(O) + "] (out_channels)",
                "bias of shape " + shape_str(b.sizes()) + " for weight of shape " + shape_str(w.sizes()),
                "pass one bias value per output channel, or leave bias undefined");
  }
  for (size_t i = 0; i < D; ++i) {
    const int64_t in = x.size(x.dim() - R + static_cast<int64_t>(i)), padded = in + 2 * p.padding[i];
    const int64_t k = w.size(2 + static_cast<int64_t>(i)), span = p.dilation[i] * (k - 1) + 1;
    GRAFT_CHECK(span <= padded, op, "a kernel no larger than the padded input",
                std::string(dim_name<D>(i)) + ": padded input size " + std::to_string(padded) + " (input " +
                    shape_str(x.sizes()) + ", padding " + dims_str<D>(p.padding) + ") and kernel size " +
                    std::to_string(span) + " (weight " + shape_str(w.sizes()) + ", dilation " +
                    dims_str<D>(p.dilation) + ")",
                "use a smaller kernel or dilation, or more padding");
  }
}

template <size_t D>
void check_conv_transpose_args(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
                               const ConvParams<D>& p, const ConvDims<D>& output_padding) {
  constexpr auto R = static_cast<int64_t>(D);
  GRAFT_CHECK(x.defined() && w.defined(), op, "defined input and weight tensors", "an undefined tensor", "");
  GRAFT_CHECK(
      w.dim() == R + 2, op,
      "weight to be a " + rank_str(R + 2) + " tensor (in_channels, out_channels / groups, " + kernel_dims<D>() + ")",
      "weight of shape " + shape_str(w.sizes()), "keep all " + std::to_string(R + 2) + " dims");
  GRAFT_CHECK(x.dim() == R + 1 || x.dim() == R + 2, op,
              "a " + rank_str(R + 1) + " " + input_layout<D>(false) + " or " + rank_str(R + 2) + " " +
                  input_layout<D>(true) + " input",
              "input of shape " + shape_str(x.sizes()),
              x.dim() == R ? "add a channel dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point() && w.dtype() == x.dtype() && (!b.defined() || b.dtype() == x.dtype()), op,
              "floating-point input, weight and bias of one dtype",
              std::string(dtype_name(x.dtype())) + " input, " + dtype_name(w.dtype()) + " weight" +
                  (b.defined() ? std::string(", ") + dtype_name(b.dtype()) + " bias" : std::string()),
              "convert them, e.g. weight.to(input.dtype())");
  GRAFT_CHECK(p.groups > 0, op, "groups > 0", "groups = " + std::to_string(p.groups), "pass groups >= 1");
  const int64_t C = x.size(x.dim() - R - 1);
  GRAFT_CHECK(C == w.size(0) && C % p.groups == 0, op,
              "input with weight.size(0) = " + std::to_string(w.size(0)) +
                  " channels, divisible by groups = " + std::to_string(p.groups),
              "input of shape " + shape_str(x.sizes()) + " for weight of shape " + shape_str(w.sizes()),
              std::string("weight is (in_channels, out_channels / groups, ") + kernel_dims<D>() + ")");
  const int64_t out_channels = w.size(1) * p.groups;
  if (b.defined()) {
    GRAFT_CHECK(b.dim() == 1 && b.size(0) == out_channels, op,
                "bias of shape [" + std::to_string(out_channels) + "] (out_channels)",
                "bias of shape " + shape_str(b.sizes()), "pass one bias value per output channel");
  }
  for (size_t i = 0; i < D; ++i) {
    GRAFT_CHECK(p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0, op,
                "positive stride and dilation and non-negative padding",
                "stride " + dims_str<D>(p.stride) + ", padding " + dims_str<D>(p.padding) + ", dilation " +
                    dims_str<D>(p.dilation),
                "");
    // PyTorch also takes output_padding < dilation; graft keeps the output sizes that conv2d maps
    // back onto the input's (docs/porting.md).
    GRAFT_CHECK(output_padding[i] >= 0 && output_padding[i] < p.stride[i], op, "output_padding smaller than stride",
                "output_padding " + dims_str<D>(output_padding) + " with stride " + dims_str<D>(p.stride),
                "output_padding only picks among the output sizes that the stride folds together");
  }
  for (size_t i = 0; i < D; ++i) {
    const int64_t in = x.size(x.dim() - R + static_cast<int64_t>(i)), k = w.size(2 + static_cast<int64_t>(i));
    const int64_t out = (in - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (k - 1) + output_padding[i] + 1;
    GRAFT_CHECK(out > 0, op, "a positive output size",
                std::string(dim_name<D>(i)) + " " + std::to_string(out) + " for input " + shape_str(x.sizes()) +
                    ", weight " + shape_str(w.sizes()) + ", padding " + dims_str<D>(p.padding),
                "use less padding");
  }
}

// conv_transpose2d after its checks (input 3-D or 4-D); conv_transpose1d calls it on a height of 1.
Tensor run_conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams<2>& p,
                            const ConvDims<2>& op_pad, OpId id) {
  const Tensor x = input.dim() == 3 ? input.unsqueeze(0) : input;
  ConvDims<2> out{};
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = x.size(2 + static_cast<int64_t>(i)), k = weight.size(2 + static_cast<int64_t>(i));
    out[i] = (in - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (k - 1) + op_pad[i] + 1;
  }
  // conv2d maps the output size back onto the input's: the kernel reads x as that conv's output
  // (always so for output_padding < stride, which the checks ensure).
  const auto geo = geometry(weight.size(1) * p.groups, out[0], out[1], weight.size(2), weight.size(3), p);
  GRAFT_CHECK(
      geo.out_h == x.size(2) && geo.out_w == x.size(3), ops::op_name(id),
      "an output size conv2d maps back to the input's",
      "output " + std::to_string(out[0]) + " x " + std::to_string(out[1]) + " for input " + shape_str(x.sizes()),
      "check stride, padding and output_padding");
  const Tensor y = conv_transpose_op(x, weight, bias, p, out[0], out[1], id);
  return input.dim() == 3 ? y.squeeze(0) : y;
}

// conv2d after its checks (input 3-D or 4-D, h: autocast's half dtype); conv1d calls it on a height of 1.
Tensor run_conv2d(const Tensor& input, const Tensor& weight, const Tensor& b, const ConvParams<2>& p,
                  std::optional<DType> h, OpId id) {
  const Tensor x = input.dim() == 3 ? input.unsqueeze(0) : input;
  const Tensor y = h ? lowp_conv_op(x, weight, b, p, *h, id) : conv_op<2>(x, weight, b, p, id);
  return input.dim() == 3 ? y.squeeze(0) : y;
}

// The 1-D parameters as the 2-D ones of a height of 1 (kernel 1, stride 1, no padding).
ConvParams<2> as_2d(const ConvParams<1>& p) {
  return {{1, p.stride[0]}, {0, p.padding[0]}, {1, p.dilation[0]}, p.groups};
}

}  // namespace

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose2d";
  const ConvParams<2> p{expand<2>(stride, op, "stride"), expand<2>(padding, op, "padding"),
                        expand<2>(dilation, op, "dilation"), groups};
  const auto op_pad = expand<2>(output_padding, op, "output_padding");
  check_conv_transpose_args<2>(op, input, weight, bias, p, op_pad);
  return run_conv_transpose2d(input, weight, bias, p, op_pad, OpId::conv_transpose2d);
}

// Note [1-D convolution on the 2-D path]
// conv1d / conv_transpose1d view (N, C, L) as (N, C, 1, L) and the weight (O, C / groups, kL) as
// (O, C / groups, 1, kL), and run the 2-D ops with a kernel height of 1: one set of kernels, and the
// double backward of Note [Convolution backward as ops]. The forward node is ConvolutionBackward0
// with forward op conv1d / conv_transpose1d (as in PyTorch); its inputs are the unsqueezed views,
// so the graph shows UnsqueezeBackward nodes between it and the 3-D tensors.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose1d";
  const ConvParams<1> p{expand<1>(stride, op, "stride"), expand<1>(padding, op, "padding"),
                        expand<1>(dilation, op, "dilation"), groups};
  const auto op_pad = expand<1>(output_padding, op, "output_padding");
  check_conv_transpose_args<1>(op, input, weight, bias, p, op_pad);
  return run_conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, as_2d(p), {0, op_pad[0]},
                              OpId::conv_transpose1d)
      .squeeze(-2);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  const char* op = "conv2d";
  const ConvParams<2> p{expand<2>(stride, op, "stride"), expand<2>(padding, op, "padding"),
                        expand<2>(dilation, op, "dilation"), groups};
  const auto h = detail::lowp_dtype({&input, &weight, &bias});
  check_conv_args<2>(op, input, weight, bias, p, h.has_value());
  return run_conv2d(input, weight, bias, p, h, OpId::conv2d);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  const char* op = "conv1d";
  const ConvParams<1> p{expand<1>(stride, op, "stride"), expand<1>(padding, op, "padding"),
                        expand<1>(dilation, op, "dilation"), groups};
  const auto h = detail::lowp_dtype({&input, &weight, &bias});
  check_conv_args<1>(op, input, weight, bias, p, h.has_value());
  return run_conv2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, as_2d(p), h, OpId::conv1d).squeeze(-2);
}

// conv3d: the kernels above with D = 3 (vol2col, Note [vol2col layout] in src/kernels/im2col.h),
// float32 / float64.
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  const char* op = "conv3d";
  const ConvParams<3> p{expand<3>(stride, op, "stride"), expand<3>(padding, op, "padding"),
                        expand<3>(dilation, op, "dilation"), groups};
  check_conv_args<3>(op, input, weight, bias, p, /*lowp=*/false);
  GRAFT_CHECK(input.dtype() == kFloat32 || input.dtype() == kFloat64, op, "a float32 or float64 input",
              std::string("a ") + dtype_name(input.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  const Tensor x = input.dim() == 4 ? input.unsqueeze(0) : input;
  const Tensor y = conv_op<3>(x, weight, bias, p, OpId::conv3d);
  return input.dim() == 4 ? y.squeeze(0) : y;
}

}  // namespace graft
