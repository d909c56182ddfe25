// 2-D convolution: conv2d with stride, padding, dilation and groups, via im2col and
// OpenBLAS gemm (float32 / float64).
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

#include <algorithm>
#include <array>
#include <climits>
#include <string>
#include <vector>

#include "../core/dispatch.h"
#include "../kernels/im2col.h"
#include "ops/autocast_internal.h"
#include "graft/core/memory.h"
#include "graft/runtime/parallel.h"
#include "graft/ops/ops.h"
#include "ops_common.h"
#include "runtime/blas.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

struct ConvParams {
  std::array<int64_t, 2> stride, padding, dilation;
  int64_t groups;
};

std::string pair_str(const std::array<int64_t, 2>& a) { return "(" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ")"; }

// C (m, n) = op(A) @ op(B) + beta * C, row-major, op(A) (m, k), op(B) (k, n).
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  runtime::gemm<T>("conv2d", trans_a, trans_b, m, n, k, T(1), a, lda, b, ldb, beta, c, ldc);
}

// Note [Convolution over threads]
// The forward kernel and the input gradient run their samples independently: parallel_for over the
// batch, each chunk with its own im2col buffer, so a sample's bits never depend on the thread
// count. The weight gradient sums over the batch, in blocks (Note [Convolution weight gradient in
// blocks]). Each gemm inside a chunk is a nested call, so it runs single-threaded on its thread.
// A chunk holds at least kConvChunkWork multiply-adds (a few tens of microseconds), so a small
// convolution stays on the calling thread.
constexpr int64_t kConvChunkWork = int64_t{1} << 19;
constexpr int64_t kWeightBlocks = 8;  // at most this many weight-gradient partials

// Samples per chunk for a per-sample cost of `work` multiply-adds.
int64_t sample_grain(int64_t work) { return std::max<int64_t>(1, kConvChunkWork / std::max<int64_t>(work, 1)); }

int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

kernels::Conv2dGeometry geometry(int64_t C, int64_t H, int64_t W, int64_t kH, int64_t kW, const ConvParams& p) {
  return {C, H, W, kH, kW, p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0], p.dilation[1],
          conv_out_size(H, kH, p.stride[0], p.padding[0], p.dilation[0]),
          conv_out_size(W, kW, p.stride[1], p.padding[1], p.dilation[1])};
}

// A 1x1 kernel with stride 1 and no padding reads the image itself as its column matrix.
bool cols_are_image(const kernels::Conv2dGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}

// ---- raw kernels: contiguous, detached operands, no recording ----

// y (N, O, oH, oW) = conv(x (N, C, H, W), w (O, C/groups, kH, kW)) + b (O) when defined.
Tensor conv_forward_kernel(const Tensor& x_, const Tensor& w_, const Tensor& b_, const ConvParams& p) {
  NoGradGuard ng;
  const Tensor x = x_.detach().contiguous(), w = w_.detach().contiguous();
  const Tensor b = b_.defined() ? b_.detach().contiguous() : Tensor();
  const int64_t N = x.size(0), C = x.size(1), O = w.size(0), G = p.groups;
  const auto geo = geometry(C, x.size(2), x.size(3), w.size(2), w.size(3), p);
  const int64_t L = geo.out_h * geo.out_w, K = (C / G) * geo.kernel_h * geo.kernel_w, Og = O / G;
  const int64_t image = C * geo.height * geo.width;
  Tensor y = make_empty({N, O, geo.out_h, geo.out_w}, x.dtype());
  kernels::dispatch_floating(x.dtype(), "conv2d", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pw = static_cast<const T*>(w.data_ptr());
    T* py = y.data_ptr<T>();
    const bool direct = cols_are_image(geo);
    parallel_for(0, N, sample_grain(O * K * L), [&](int64_t n0, int64_t n1) {
      std::vector<T> buf(direct ? 0 : static_cast<size_t>(K * G * L));  // this chunk's columns
      for (int64_t n = n0; n < n1; ++n) {
        const T* cols = px + n * image;
        if (!direct) {
          kernels::im2col(cols, geo, buf.data());
          cols = buf.data();
        }
        T* yn = py + n * O * L;
        for (int64_t gi = 0; gi < G; ++gi)
          gemm<T>(false, false, Og, L, K, pw + gi * Og * K, K, cols + gi * K * L, L, T(0), yn + gi * Og * L, L);
        if (b.defined()) {
          const T* pb = static_cast<const T*>(b.data_ptr());
          for (int64_t o = 0; o < O; ++o)
            for (int64_t l = 0; l < L; ++l) yn[o * L + l] += pb[o];
        }
      }
    });
  });
  return y;
}

// Bx: grad_input (N, C, H, W) of conv for grad_output g (N, O, oH, oW) and weight w.
Tensor conv_input_backward_kernel(const Tensor& g_, const Tensor& w_, const ConvParams& p, int64_t H, int64_t W) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), w = w_.detach().contiguous();
  const int64_t N = g.size(0), O = w.size(0), G = p.groups, C = w.size(1) * G;
  const auto geo = geometry(C, H, W, w.size(2), w.size(3), p);
  const int64_t L = geo.out_h * geo.out_w, K = (C / G) * geo.kernel_h * geo.kernel_w, Og = O / G;
  const int64_t image = C * H * W;
  Tensor gx = make_empty({N, C, H, W}, g.dtype());
  kernels::dispatch_floating(g.dtype(), "conv2d", [&]<class T>() {
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = static_cast<const T*>(w.data_ptr());
    T* px = gx.data_ptr<T>();
    const bool direct = cols_are_image(geo);
    parallel_for(0, N, sample_grain(O * K * L), [&](int64_t n0, int64_t n1) {
      std::vector<T> buf(direct ? 0 : static_cast<size_t>(K * G * L));  // this chunk's columns
      for (int64_t n = n0; n < n1; ++n) {
        T* xn = px + n * image;
        T* cols = direct ? xn : buf.data();
        const T* gn = pg + n * O * L;
        for (int64_t gi = 0; gi < G; ++gi)  // cols_g (K, L) = w_g^T (K, Og) @ g_g (Og, L)
          gemm<T>(true, false, K, L, Og, pw + gi * Og * K, K, gn + gi * Og * L, L, T(0), cols + gi * K * L, L);
        if (!direct) {
          std::fill(xn, xn + image, T(0));
          kernels::col2im(buf.data(), geo, xn);
        }
      }
    });
  });
  return gx;
}

// Bw: grad_weight (O, C/groups, kH, kW) of conv for grad_output g (N, O, oH, oW) and input x.
Tensor conv_weight_backward_kernel(const Tensor& g_, const Tensor& x_, const ConvParams& p, int64_t kH, int64_t kW) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous();
  const int64_t N = x.size(0), C = x.size(1), O = g.size(1), G = p.groups;
  const auto geo = geometry(C, x.size(2), x.size(3), kH, kW, p);
  const int64_t L = geo.out_h * geo.out_w, K = (C / G) * kH * kW, Og = O / G;
  const int64_t image = C * geo.height * geo.width;
  Tensor gw = zeros({O, C / G, kH, kW}, g.dtype());
  if (N == 0) return gw;
  // Note [Convolution weight gradient in blocks]
  // The batch is cut into `blocks` runs of samples
  // that depend on the sizes only; block i sums its samples into partial i (in sample order, by
  // gemm with beta = 1), and gw = partial 0 + partial 1 + ... in block order. parallel_for hands
  // whole blocks to threads, so the bits of gw do not depend on the thread count.
  const int64_t blocks = std::clamp<int64_t>(N * O * K * L / kConvChunkWork, 1, std::min<int64_t>(N, kWeightBlocks));
  const int64_t wsize = O * K;
  kernels::dispatch_floating(g.dtype(), "conv2d", [&]<class T>() {
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* px = static_cast<const T*>(x.data_ptr());
    T* pw = gw.data_ptr<T>();
    const bool direct = cols_are_image(geo);
    // Partial 0 is gw itself; partials 1.. live here.
    std::vector<T> partials(static_cast<size_t>((blocks - 1) * wsize));
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      std::vector<T> buf(direct ? 0 : static_cast<size_t>(K * G * L));  // this chunk's columns
      for (int64_t bi = b0; bi < b1; ++bi) {
        T* acc = bi == 0 ? pw : partials.data() + (bi - 1) * wsize;
        for (int64_t n = bi * N / blocks; n < (bi + 1) * N / blocks; ++n) {
          const T* cols = px + n * image;
          if (!direct) {
            kernels::im2col(cols, geo, buf.data());
            cols = buf.data();
          }
          const T* gn = pg + n * O * L;
          for (int64_t gi = 0; gi < G; ++gi)  // w_g (Og, K) += g_g (Og, L) @ cols_g^T (L, K)
            gemm<T>(false, true, Og, K, L, gn + gi * Og * L, L, cols + gi * K * L, L, T(1), acc + gi * Og * K, K);
        }
      }
    });
    for (int64_t bi = 1; bi < blocks; ++bi) {
      const T* part = partials.data() + (bi - 1) * wsize;
      for (int64_t i = 0; i < wsize; ++i) pw[i] += part[i];
    }
  });
  return gw;
}

// grad_bias (O) = g (N, O, oH, oW) summed over N, oH and oW. Without create_graph, one pass over a
// contiguous g with a float64 accumulator per channel; with it, the recorded sum.
Tensor conv_bias_backward(const Tensor& g) {
  if (GradMode::is_enabled() && g.requires_grad()) return g.sum({0, 2, 3});
  NoGradGuard ng;
  const Tensor gc = g.contiguous();
  const int64_t N = gc.size(0), O = gc.size(1), L = gc.size(2) * gc.size(3);
  Tensor gb = make_empty({O}, gc.dtype());
  kernels::dispatch_floating(gc.dtype(), "conv2d", [&]<class T>() {
    const T* pg = gc.data_ptr<T>();
    T* pb = gb.data_ptr<T>();
    for (int64_t o = 0; o < O; ++o) {
      double acc = 0;
      for (int64_t n = 0; n < N; ++n) {
        const T* row = pg + (n * O + o) * L;
        T part = 0;  // one plane in T (vectorisable), accumulated in double across planes
        for (int64_t l = 0; l < L; ++l) part += row[l];
        acc += static_cast<double>(part);
      }
      pb[o] = static_cast<T>(acc);
    }
  });
  return gb;
}

// ---- the three recorded ops of Note [Convolution backward as ops] ----
Tensor conv_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& p);
Tensor conv_input_backward(const Tensor& g, const Tensor& w, const ConvParams& p, int64_t H, int64_t W);
Tensor conv_weight_backward(const Tensor& g, const Tensor& x, const ConvParams& p, int64_t kH, int64_t kW);

Tensor conv_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& p) {
  memory::OpScope op_scope("conv2d");  // names its allocations in the memory report
  Tensor y = conv_forward_kernel(x, w, b, p);
  const int64_t H = x.size(2), W = x.size(3), kH = w.size(2), kW = w.size(3);
  if (auto node = make_node("ConvolutionBackward0", OpId::conv2d, {&x, &w, &b}, [p, H, W, kH, kW](Node& n, const Tensor& g) -> TensorList {
        const bool need_x = n.needs_input_grad(0), need_w = n.needs_input_grad(1),
                   need_b = n.needs_input_grad(2);
        return {need_x ? conv_input_backward(g, n.saved(1), p, H, W) : Tensor(),
                need_w ? conv_weight_backward(g, n.saved(0), p, kH, kW) : Tensor(),
                need_b ? conv_bias_backward(g) : Tensor()};
      })) {
    node->save(x);
    node->save(w);
    set_history(y, node);
  }
  return y;
}

Tensor conv_input_backward(const Tensor& g, const Tensor& w, const ConvParams& p, int64_t H, int64_t W) {
  Tensor gx = conv_input_backward_kernel(g, w, p, H, W);
  const int64_t kH = w.size(2), kW = w.size(3);
  if (auto node = autograd::make_node("ConvolutionBackwardBackward0", autograd::ForwardOp::unlisted("convolution_backward"), {&g, &w}, [p, kH, kW](Node& n, const Tensor& gg) -> TensorList {
        const bool need_g = n.needs_input_grad(0), need_w = n.needs_input_grad(1);
        return {need_g ? conv_op(gg, n.saved(1), Tensor(), p) : Tensor(),
                need_w ? conv_weight_backward(n.saved(0), gg, p, kH, kW) : Tensor()};
      })) {
    node->save(g);
    node->save(w);
    set_history(gx, node);
  }
  return gx;
}

Tensor conv_weight_backward(const Tensor& g, const Tensor& x, const ConvParams& p, int64_t kH, int64_t kW) {
  Tensor gw = conv_weight_backward_kernel(g, x, p, kH, kW);
  const int64_t H = x.size(2), W = x.size(3);
  if (auto node = autograd::make_node("ConvolutionBackwardBackward0", autograd::ForwardOp::unlisted("convolution_backward"), {&g, &x}, [p, H, W](Node& n, const Tensor& gg) -> TensorList {
        const bool need_g = n.needs_input_grad(0), need_x = n.needs_input_grad(1);
        return {need_g ? conv_op(n.saved(1), gg, Tensor(), p) : Tensor(),
                need_x ? conv_input_backward(n.saved(0), gg, p, H, W) : Tensor()};
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
// Note [Convolution backward as ops], so double backward works as for conv2d.
Tensor conv_transpose_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& p, int64_t oH,
                         int64_t oW) {
  memory::OpScope op_scope("conv_transpose2d");  // names its allocations in the memory report
  Tensor y = conv_input_backward_kernel(x, w, p, oH, oW);
  if (b.defined()) {
    NoGradGuard ng;
    y.add_(b.detach().reshape({1, -1, 1, 1}));
  }
  const int64_t kH = w.size(2), kW = w.size(3);
  if (auto node = make_node("ConvolutionBackward0", OpId::conv_transpose2d, {&x, &w, &b},
                            [p, kH, kW](Node& n, const Tensor& g) -> TensorList {
                              const bool need_x = n.needs_input_grad(0), need_w = n.needs_input_grad(1),
                                         need_b = n.needs_input_grad(2);
                              return {need_x ? conv_op(g, n.saved(1), Tensor(), p) : Tensor(),
                                      need_w ? conv_weight_backward(n.saved(0), g, p, kH, kW) : Tensor(),
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
Tensor lowp_conv_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& p, DType h) {
  Tensor y;
  {
    NoGradGuard ng;
    y = conv_forward_kernel(detail::rounded_float32(x, h), detail::rounded_float32(w, h),
                            b.defined() ? detail::rounded_float32(b, h) : Tensor(), p)
            .to(h);
  }
  const int64_t H = x.size(2), W = x.size(3), kH = w.size(2), kW = w.size(3);
  if (auto node = make_node("ConvolutionBackward0", OpId::conv2d, {&x, &w, &b}, [p, H, W, kH, kW, h](Node& n, const Tensor& g) -> TensorList {
        const bool need_x = n.needs_input_grad(0), need_w = n.needs_input_grad(1),
                   need_b = n.needs_input_grad(2);
        const Tensor g32 = g.to(kFloat32);
        return {need_x ? conv_input_backward(g32, detail::rounded_float32(n.saved(1), h), p, H, W) : Tensor(),
                need_w ? conv_weight_backward(g32, detail::rounded_float32(n.saved(0), h), p, kH, kW) : Tensor(),
                need_b ? conv_bias_backward(g32) : Tensor()};
      })) {
    node->save(detail::lowp_saved(x, h));
    node->save(detail::lowp_saved(w, h));
    set_history(y, node);
  }
  return y;
}

// ---- argument checks ----
// lowp: the operands may mix float32 and a half dtype (autocast), so their dtypes are not compared.
void check_conv_args(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& p, bool lowp) {
  const char* op = "conv2d";
  GRAFT_CHECK(x.defined() && w.defined(), op, "defined input and weight tensors", "an undefined tensor", "");
  GRAFT_CHECK(w.dim() == 4, op, "weight to be a 4-D tensor (out_channels, in_channels / groups, kH, kW)",
              "weight of shape " + shape_str(w.sizes()),
              "for a 1x1 or single-channel kernel keep all four dims, e.g. weight.reshape({out, in, 1, 1})");
  GRAFT_CHECK(x.dim() == 3 || x.dim() == 4, op, "a 3-D (C, H, W) or 4-D (N, C, H, W) input",
              "input of shape " + shape_str(x.sizes()) + " (" + std::to_string(x.dim()) + "-D)",
              x.dim() == 2 ? "add a channel dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  GRAFT_CHECK(lowp || (w.dtype() == x.dtype() && (!b.defined() || b.dtype() == x.dtype())), op,
              "input, weight and bias of the same dtype",
              std::string(dtype_name(x.dtype())) + " input, " + dtype_name(w.dtype()) + " weight" +
                  (b.defined() ? std::string(", ") + dtype_name(b.dtype()) + " bias" : std::string()),
              "convert the weight, e.g. weight.to(input.dtype())");
  GRAFT_CHECK(p.groups > 0, op, "groups > 0", "groups = " + std::to_string(p.groups),
              "pass groups >= 1 (1 is an ordinary convolution)");
  for (int i = 0; i < 2; ++i) {
    GRAFT_CHECK(p.stride[static_cast<size_t>(i)] > 0, op, "a positive stride", "stride " + pair_str(p.stride),
                "pass strides >= 1");
    GRAFT_CHECK(p.padding[static_cast<size_t>(i)] >= 0, op, "a non-negative padding", "padding " + pair_str(p.padding),
                "pass padding >= 0 on each side");
    GRAFT_CHECK(p.dilation[static_cast<size_t>(i)] > 0, op, "a positive dilation", "dilation " + pair_str(p.dilation),
                "pass dilation >= 1 (1 is an ordinary convolution)");
  }
  const int64_t C = x.size(x.dim() - 3), O = w.size(0);
  GRAFT_CHECK(O % p.groups == 0, op, "out_channels (weight.size(0)) divisible by groups",
              "weight of shape " + shape_str(w.sizes()) + " with groups = " + std::to_string(p.groups),
              "choose groups that divide out_channels, or change out_channels");
  GRAFT_CHECK(C % p.groups == 0, op, "in_channels (input.size(" + std::to_string(x.dim() - 3) + ")) divisible by groups",
              "input of shape " + shape_str(x.sizes()) + " with groups = " + std::to_string(p.groups),
              "the input's channel dim is the one before height and width; choose groups that divide it");
  GRAFT_CHECK(C == w.size(1) * p.groups, op,
              "input with " + std::to_string(w.size(1) * p.groups) + " channels (weight.size(1) * groups = " +
                  std::to_string(w.size(1)) + " * " + std::to_string(p.groups) + ")",
              "input of shape " + shape_str(x.sizes()) + " with " + std::to_string(C) +
                  " channels for weight of shape " + shape_str(w.sizes()),
              "weight is (out_channels, in_channels / groups, kH, kW)");
  if (b.defined()) {
    GRAFT_CHECK(b.dim() == 1 && b.size(0) == O, op, "bias of shape [" + std::to_string(O) + "] (out_channels)",
                "bias of shape " + shape_str(b.sizes()) + " for weight of shape " + shape_str(w.sizes()),
                "pass one bias value per output channel, or leave bias undefined");
  }
  for (int i = 0; i < 2; ++i) {
    const auto s = static_cast<size_t>(i);
    const int64_t in = x.size(x.dim() - 2 + i), padded = in + 2 * p.padding[s];
    const int64_t k = w.size(2 + i), span = p.dilation[s] * (k - 1) + 1;
    GRAFT_CHECK(span <= padded, op, "a kernel no larger than the padded input",
                std::string(i == 0 ? "height" : "width") + ": padded input size " + std::to_string(padded) +
                    " (input " + shape_str(x.sizes()) + ", padding " + pair_str(p.padding) + ") and kernel size " +
                    std::to_string(span) + " (weight " + shape_str(w.sizes()) + ", dilation " + pair_str(p.dilation) + ")",
                "use a smaller kernel or dilation, or more padding");
  }
}

void check_conv_transpose_args(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& p,
                               const std::array<int64_t, 2>& output_padding) {
  const char* op = "conv_transpose2d";
  GRAFT_CHECK(x.defined() && w.defined(), op, "defined input and weight tensors", "an undefined tensor", "");
  GRAFT_CHECK(w.dim() == 4, op, "weight to be a 4-D tensor (in_channels, out_channels / groups, kH, kW)",
              "weight of shape " + shape_str(w.sizes()), "keep all four dims, e.g. weight.reshape({in, out, 1, 1})");
  GRAFT_CHECK(x.dim() == 3 || x.dim() == 4, op, "a 3-D (C, H, W) or 4-D (N, C, H, W) input",
              "input of shape " + shape_str(x.sizes()), x.dim() == 2 ? "add a channel dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point() && w.dtype() == x.dtype() && (!b.defined() || b.dtype() == x.dtype()), op,
              "floating-point input, weight and bias of one dtype",
              std::string(dtype_name(x.dtype())) + " input, " + dtype_name(w.dtype()) + " weight" +
                  (b.defined() ? std::string(", ") + dtype_name(b.dtype()) + " bias" : std::string()),
              "convert them, e.g. weight.to(input.dtype())");
  GRAFT_CHECK(p.groups > 0, op, "groups > 0", "groups = " + std::to_string(p.groups), "pass groups >= 1");
  const int64_t C = x.size(x.dim() - 3);
  GRAFT_CHECK(C == w.size(0) && C % p.groups == 0, op,
              "input with weight.size(0) = " + std::to_string(w.size(0)) + " channels, divisible by groups = " +
                  std::to_string(p.groups),
              "input of shape " + shape_str(x.sizes()) + " for weight of shape " + shape_str(w.sizes()),
              "weight is (in_channels, out_channels / groups, kH, kW)");
  const int64_t out_channels = w.size(1) * p.groups;
  if (b.defined()) {
    GRAFT_CHECK(b.dim() == 1 && b.size(0) == out_channels, op,
                "bias of shape [" + std::to_string(out_channels) + "] (out_channels)",
                "bias of shape " + shape_str(b.sizes()), "pass one bias value per output channel");
  }
  for (size_t i = 0; i < 2; ++i) {
    GRAFT_CHECK(p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0, op,
                "positive stride and dilation and non-negative padding",
                "stride " + pair_str(p.stride) + ", padding " + pair_str(p.padding) + ", dilation " + pair_str(p.dilation),
                "");
    // PyTorch also takes output_padding < dilation; graft keeps the output sizes that conv2d maps
    // back onto the input's (docs/porting.md).
    GRAFT_CHECK(output_padding[i] >= 0 && output_padding[i] < p.stride[i], op, "output_padding smaller than stride",
                "output_padding " + pair_str(output_padding) + " with stride " + pair_str(p.stride),
                "output_padding only picks among the output sizes that the stride folds together");
  }
}

}  // namespace

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose2d";
  const ConvParams p{detail::expand_pair(stride, op, "stride"), detail::expand_pair(padding, op, "padding"),
                     detail::expand_pair(dilation, op, "dilation"), groups};
  const auto op_pad = detail::expand_pair(output_padding, op, "output_padding");
  check_conv_transpose_args(input, weight, bias, p, op_pad);
  const Tensor x = input.dim() == 3 ? input.unsqueeze(0) : input;
  int64_t out[2];
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = x.size(2 + static_cast<int64_t>(i)), k = weight.size(2 + static_cast<int64_t>(i));
    out[i] = (in - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (k - 1) + op_pad[i] + 1;
    GRAFT_CHECK(out[i] > 0, op, "a positive output size", std::string(i == 0 ? "height " : "width ") +
                std::to_string(out[i]) + " for input " + shape_str(input.sizes()) + ", weight " +
                shape_str(weight.sizes()) + ", padding " + pair_str(p.padding),
                "use less padding");
  }
  // conv2d maps the output size back onto the input's: the kernel reads x as that conv's output.
  const auto geo = geometry(weight.size(1) * groups, out[0], out[1], weight.size(2), weight.size(3), p);
  GRAFT_CHECK(geo.out_h == x.size(2) && geo.out_w == x.size(3), op, "an output size conv2d maps back to the input's",
              "output " + std::to_string(out[0]) + " x " + std::to_string(out[1]) + " for input " + shape_str(x.sizes()),
              "check stride, padding and output_padding");
  const Tensor y = conv_transpose_op(x, weight, bias, p, out[0], out[1]);
  return input.dim() == 3 ? y.squeeze(0) : y;
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  const Tensor& b = bias;
  const ConvParams p{detail::expand_pair(stride, "conv2d", "stride"), detail::expand_pair(padding, "conv2d", "padding"),
                     detail::expand_pair(dilation, "conv2d", "dilation"), groups};
  const auto h = detail::lowp_dtype({&input, &weight, &b});
  check_conv_args(input, weight, b, p, h.has_value());
  if (h) {
    if (input.dim() == 3) return lowp_conv_op(input.unsqueeze(0), weight, b, p, *h).squeeze(0);
    return lowp_conv_op(input, weight, b, p, *h);
  }
  if (input.dim() == 3) return conv_op(input.unsqueeze(0), weight, b, p).squeeze(0);
  return conv_op(input, weight, b, p);
}

}  // namespace graft
