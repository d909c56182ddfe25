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
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "../core/dispatch.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

// Window geometry of a (max or avg) pool on (planes, H, W) images.
struct PoolGeom {
  int64_t planes, H, W, oH, oW;
  int64_t kH, kW, sH, sW, pH, pW, dH = 1, dW = 1;
};

struct AvgOpts {
  bool count_include_pad;
  int64_t divisor;  // 0: none
};

using Pair = std::array<int64_t, 2>;  // {height, width}

std::string pair_str(const Pair& a) { return "(" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ")"; }

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
  kernels::dispatch_floating(x.dtype(), "max_pool2d", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = y.data_ptr<T>();
    int64_t* pi = idx.data_ptr<int64_t>();
    if (g.kH == 2 && g.kW == 2 && g.sH == 2 && g.sW == 2 && g.pH == 0 && g.pW == 0 && g.dH == 1 && g.dW == 1 &&
        2 * g.oH <= g.H && 2 * g.oW <= g.W) {
      // The common 2x2 / stride 2 window, every window inside the image: two input rows per output
      // row, no bounds checks. Same scan order and NaN rule as the general loop below (the last
      // NaN of a window wins, else its first maximum). Written as selects over whole rows so that
      // the compiler vectorises it: the window's winner is first kept as its tap k (0..3), and the
      // flat input index, base + (k & 1) + (k >> 1) * W, is computed in a second pass.
      std::vector<int32_t> tap(static_cast<size_t>(g.oW));
      int32_t* kk = tap.data();
      for (int64_t p = 0; p < g.planes; ++p) {
        const T* in = px + p * g.H * g.W;
        T* out = py + p * g.oH * g.oW;
        int64_t* oi = pi + p * g.oH * g.oW;
        for (int64_t oh = 0; oh < g.oH; ++oh) {
          const T* r0 = in + 2 * oh * g.W;
          const T* r1 = r0 + g.W;
          T* orow = out + oh * g.oW;
#pragma omp simd
          for (int64_t ow = 0; ow < g.oW; ++ow) {
            const T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
            T best_v = a;
            int32_t k = 0;
            bool t = (b > best_v) | (b != b);  // b != b: NaN propagates
            best_v = t ? b : best_v;
            k = t ? 1 : k;
            t = (c > best_v) | (c != c);
            best_v = t ? c : best_v;
            k = t ? 2 : k;
            t = (d > best_v) | (d != d);
            best_v = t ? d : best_v;
            k = t ? 3 : k;
            orow[ow] = best_v;
            kk[ow] = k;
          }
          const int64_t base = 2 * oh * g.W;
          int64_t* irow = oi + oh * g.oW;
          for (int64_t ow = 0; ow < g.oW; ++ow) irow[ow] = base + 2 * ow + (kk[ow] & 1) + (kk[ow] >> 1) * g.W;
        }
      }
      return;
    }
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* in = px + p * g.H * g.W;
      for (int64_t oh = 0; oh < g.oH; ++oh) {
        int64_t h0 = oh * g.sH - g.pH;
        const int64_t h1 = std::min(h0 + (g.kH - 1) * g.dH + 1, g.H);
        while (h0 < 0) h0 += g.dH;
        for (int64_t ow = 0; ow < g.oW; ++ow) {
          int64_t w0 = ow * g.sW - g.pW;
          const int64_t w1 = std::min(w0 + (g.kW - 1) * g.dW + 1, g.W);
          while (w0 < 0) w0 += g.dW;
          int64_t best = h0 * g.W + w0;
          T best_v = -std::numeric_limits<T>::infinity();
          for (int64_t ih = h0; ih < h1; ih += g.dH)
            for (int64_t iw = w0; iw < w1; iw += g.dW) {
              const T v = in[ih * g.W + iw];
              if (v > best_v || std::isnan(v)) {
                best_v = v;
                best = ih * g.W + iw;
              }
            }
          const int64_t o = (p * g.oH + oh) * g.oW + ow;
          py[o] = best_v;
          pi[o] = best;
        }
      }
    }
  });
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
    const int64_t planes = g.size(0) * g.size(1), L = g.size(2) * g.size(3);
    kernels::dispatch_floating(g.dtype(), "max_pool2d", [&]<class T>() {
      if (gx.is_meta()) return;  // Note [Meta device]: no kernel on meta
      const T* pg = static_cast<const T*>(gc.data_ptr());
      const int64_t* pi = ic.data_ptr<int64_t>();
      T* px = gx.data_ptr<T>();
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t l = 0; l < L; ++l) {
          const int64_t i = pi[p * L + l];
          if (i >= 0 && i < H * W) px[p * H * W + i] += pg[p * L + l];
        }
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

// Calls f(out_index, h0, h1, w0, w1, divisor) for each window (clipped to the input).
template <class Fn>
void avg_windows(const PoolGeom& g, const AvgOpts& o, Fn&& f) {
  for (int64_t oh = 0; oh < g.oH; ++oh) {
    int64_t h0 = oh * g.sH - g.pH, h1 = std::min(h0 + g.kH, g.H + g.pH);
    for (int64_t ow = 0; ow < g.oW; ++ow) {
      int64_t w0 = ow * g.sW - g.pW, w1 = std::min(w0 + g.kW, g.W + g.pW);
      const int64_t pool_size = (h1 - h0) * (w1 - w0);
      const int64_t ch0 = std::max<int64_t>(h0, 0), ch1 = std::min(h1, g.H);
      const int64_t cw0 = std::max<int64_t>(w0, 0), cw1 = std::min(w1, g.W);
      const int64_t div = o.divisor != 0 ? o.divisor : o.count_include_pad ? pool_size : (ch1 - ch0) * (cw1 - cw0);
      f(oh * g.oW + ow, ch0, ch1, cw0, cw1, div);
    }
  }
}

Tensor avg_pool_op(const Tensor& x4, const PoolGeom& geom, const AvgOpts& o, OpId id = OpId::avg_pool2d);

Tensor avg_pool_backward(const Tensor& g, const PoolGeom& geom, const AvgOpts& o) {
  Tensor gx;
  {
    NoGradGuard ng;
    const Tensor gc = g.detach().contiguous();
    gx = zeros({g.size(0), g.size(1), geom.H, geom.W}, TensorOptions(g.dtype()).device(g.device()));
    kernels::dispatch_floating(g.dtype(), "avg_pool2d", [&]<class T>() {
      if (gx.is_meta()) return;  // Note [Meta device]: no kernel on meta
      const T* pg = static_cast<const T*>(gc.data_ptr());
      T* px = gx.data_ptr<T>();
      for (int64_t p = 0; p < geom.planes; ++p) {
        const T* gp = pg + p * geom.oH * geom.oW;
        T* xp = px + p * geom.H * geom.W;
        avg_windows(geom, o, [&](int64_t out, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t div) {
          if (h0 >= h1 || w0 >= w1) return;
          const T v = gp[out] / static_cast<T>(div);
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) xp[ih * geom.W + iw] += v;
        });
      }
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
      const T* px = static_cast<const T*>(x.data_ptr());
      T* py = y.data_ptr<T>();
      for (int64_t p = 0; p < geom.planes; ++p) {
        const T* xp = px + p * geom.H * geom.W;
        T* yp = py + p * geom.oH * geom.oW;
        avg_windows(geom, o, [&](int64_t out, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t div) {
          if (h0 >= h1 || w0 >= w1) {
            yp[out] = T(0);
            return;
          }
          T s = 0;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) s += xp[ih * geom.W + iw];
          yp[out] = s / static_cast<T>(div);
        });
      }
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

int64_t start_index(int64_t i, int64_t n, int64_t s) { return (i * s) / n; }
int64_t end_index(int64_t i, int64_t n, int64_t s) { return ((i + 1) * s + n - 1) / n; }

Tensor adaptive_avg_op(const Tensor& x4, int64_t oH, int64_t oW, OpId id = OpId::adaptive_avg_pool2d);

// Adds (backward) or averages (forward) over every window of every plane.
template <bool Backward, class T>
void adaptive_kernel(const T* src, T* dst, int64_t planes, int64_t H, int64_t W, int64_t oH, int64_t oW) {
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < oH; ++oh) {
      const int64_t h0 = start_index(oh, oH, H), h1 = end_index(oh, oH, H);
      for (int64_t ow = 0; ow < oW; ++ow) {
        const int64_t w0 = start_index(ow, oW, W), w1 = end_index(ow, oW, W);
        const T count = static_cast<T>((h1 - h0) * (w1 - w0));
        if constexpr (Backward) {
          const T v = src[(p * oH + oh) * oW + ow] / count;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) dst[(p * H + ih) * W + iw] += v;
        } else {
          T s = 0;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) s += src[(p * H + ih) * W + iw];
          dst[(p * oH + oh) * oW + ow] = s / count;
        }
      }
    }
  }
}

Tensor adaptive_avg_backward(const Tensor& g, int64_t H, int64_t W) {
  Tensor gx;
  {
    NoGradGuard ng;
    const Tensor gc = g.detach().contiguous();
    gx = zeros({g.size(0), g.size(1), H, W}, TensorOptions(g.dtype()).device(g.device()));
    kernels::dispatch_floating(g.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
      if (gx.is_meta()) return;  // Note [Meta device]: no kernel on meta
      adaptive_kernel<true, T>(static_cast<const T*>(gc.data_ptr()), gx.data_ptr<T>(), g.size(0) * g.size(1), H, W,
                               g.size(2), g.size(3));
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
      adaptive_kernel<false, T>(static_cast<const T*>(x.data_ptr()), y.data_ptr<T>(), x4.size(0) * x4.size(1), H, W,
                                oH, oW);
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
    const int64_t planes = x4.size(0) * x4.size(1);
    kernels::dispatch_floating(x.dtype(), "adaptive_max_pool2d", [&]<class T>() {
      if (x.is_meta()) return;  // Note [Meta device]: no kernel on meta
      const T* px = static_cast<const T*>(x.data_ptr());
      T* py = y.data_ptr<T>();
      int64_t* pi = idx.data_ptr<int64_t>();
      for (int64_t p = 0; p < planes; ++p) {
        const T* in = px + p * H * W;
        for (int64_t oh = 0; oh < oH; ++oh) {
          const int64_t h0 = start_index(oh, oH, H), h1 = end_index(oh, oH, H);
          for (int64_t ow = 0; ow < oW; ++ow) {
            const int64_t w0 = start_index(ow, oW, W), w1 = end_index(ow, oW, W);
            int64_t best = h0 * W + w0;
            T best_v = -std::numeric_limits<T>::infinity();
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) {
                const T v = in[ih * W + iw];
                if (v > best_v || std::isnan(v)) {
                  best_v = v;
                  best = ih * W + iw;
                }
              }
            const int64_t o = (p * oH + oh) * oW + ow;
            py[o] = best_v;
            pi[o] = best;
          }
        }
      }
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
