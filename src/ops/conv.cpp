// Convolution: conv2d and conv3d with stride, padding, dilation and groups, via im2col / vol2col
// and OpenBLAS gemm (float32 / float64), or oneDNN for float32 2-D convolutions with enough
// channels (Note [Convolution backends] in src/kernels/onednn_conv.cpp); conv_transpose2d; conv1d
// and conv_transpose1d on the 2-D path (Note [1-D convolution on the 2-D path]).
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
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/dispatch.h"
#include "../kernels/im2col.h"
#include "../kernels/onednn_conv.h"
#include "../kernels/vec_f32.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "graft/runtime/parallel.h"
#include "ops/autocast_internal.h"
#include "ops_common.h"
#include "runtime/blas.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

// The kernels below serve conv2d (D = 2, im2col) and conv3d (D = 3, vol2col); conv1d and
// conv_transpose1d run the D = 2 ones on a height of 1. The code is the same for both D: only the
// geometry and its column transform differ.
template <size_t D>
using Dims = std::array<int64_t, D>;

template <size_t D>
struct ConvParams {
  Dims<D> stride, padding, dilation;
  int64_t groups;
};

template <size_t D>
std::string dims_str(const Dims<D>& a) {
  std::string s = "(";
  for (size_t i = 0; i < D; ++i) s += (i ? ", " : "") + std::to_string(a[i]);
  return s + ")";
}

// ATen's size arguments: one value for every spatial dim, or one per dim.
template <size_t D>
Dims<D> expand(IntArrayRef v, const char* op, const char* name) {
  if constexpr (D == 2) {
    return detail::expand_pair(v, op, name);
  } else {
    GRAFT_CHECK(v.size() == 1 || v.size() == D, op,
                std::string(name) + (D == 1 ? " of 1 value" : " of 1 or 3 values (one for all dims, or one per dim)"),
                std::string(name) + " of " + std::to_string(v.size()) + " values",
                D == 1 ? "pass one value" : "pass one value for all dims or {depth, height, width}");
    Dims<D> a{};
    for (size_t i = 0; i < D; ++i) a[i] = v.size() == 1 ? v[0] : v[i];
    return a;
  }
}

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
// oneDNN's forward and input-gradient calls take the batch in pieces of this many samples (the last
// one shorter), fixed by the batch size alone: its blocked copies of the operands are then an
// eighth of a batch of 64, it runs as fast as on the whole batch (BENCHMARKS.md, "Convolution
// backends"), and whichever kernel oneDNN picks for a piece's size, every sample lands in the same
// piece at every thread count, so the bits do not depend on it.
constexpr int64_t kOneDnnSamples = 8;

// Samples per chunk for a per-sample cost of `work` multiply-adds.
int64_t sample_grain(int64_t work) { return std::max<int64_t>(1, kConvChunkWork / std::max<int64_t>(work, 1)); }

// Calls f(first sample, samples) for each piece, pieces split over graft's pool.
template <class F>
void for_onednn_pieces(int64_t N, int64_t per_sample_work, F&& f) {
  const int64_t pieces = (N + kOneDnnSamples - 1) / kOneDnnSamples;
  const int64_t grain = std::max<int64_t>(1, sample_grain(per_sample_work) / kOneDnnSamples);
  parallel_for(0, pieces, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t a = p * kOneDnnSamples;
      f(a, std::min(kOneDnnSamples, N - a));
    }
  });
}

int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

template <size_t D>
using Geometry = std::conditional_t<D == 2, kernels::Conv2dGeometry, kernels::Conv3dGeometry>;

// The geometry of one image / volume of C channels and spatial sizes `in`, kernel sizes `k`.
template <size_t D>
Geometry<D> geometry(int64_t C, const Dims<D>& in, const Dims<D>& k, const ConvParams<D>& p) {
  Dims<D> out{};
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

// Output positions L, kernel taps per channel, elements of one input image, output spatial sizes.
int64_t out_numel(const kernels::Conv2dGeometry& g) { return g.out_h * g.out_w; }
int64_t out_numel(const kernels::Conv3dGeometry& g) { return g.out_d * g.out_h * g.out_w; }
int64_t taps(const kernels::Conv2dGeometry& g) { return g.kernel_h * g.kernel_w; }
int64_t taps(const kernels::Conv3dGeometry& g) { return g.kernel_d * g.kernel_h * g.kernel_w; }
int64_t image_numel(const kernels::Conv2dGeometry& g) { return g.channels * g.height * g.width; }
int64_t image_numel(const kernels::Conv3dGeometry& g) { return g.channels * g.depth * g.height * g.width; }
Shape out_shape(int64_t N, int64_t O, const kernels::Conv2dGeometry& g) { return {N, O, g.out_h, g.out_w}; }
Shape out_shape(int64_t N, int64_t O, const kernels::Conv3dGeometry& g) { return {N, O, g.out_d, g.out_h, g.out_w}; }

// A 1x1 kernel with stride 1 and no padding reads the image itself as its column matrix.
bool cols_are_image(const kernels::Conv2dGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}
bool cols_are_image(const kernels::Conv3dGeometry& g) {
  return g.kernel_d == 1 && g.kernel_h == 1 && g.kernel_w == 1 && g.stride_d == 1 && g.stride_h == 1 &&
         g.stride_w == 1 && g.pad_d == 0 && g.pad_h == 0 && g.pad_w == 0;
}

// The column transform of Note [im2col layout] / Note [vol2col layout] and its adjoint.
template <class T>
void to_cols(const T* img, const kernels::Conv2dGeometry& g, T* cols) {
  kernels::im2col(img, g, cols);
}
template <class T>
void to_cols(const T* img, const kernels::Conv3dGeometry& g, T* cols) {
  kernels::vol2col(img, g, cols);
}
template <class T>
void from_cols(const T* cols, const kernels::Conv2dGeometry& g, T* img) {
  kernels::col2im(cols, g, img);
}
template <class T>
void from_cols(const T* cols, const kernels::Conv3dGeometry& g, T* img) {
  kernels::col2vol(cols, g, img);
}

// Sizes 2 .. 2 + D of t (the spatial sizes of a batched input, or a weight's kernel sizes).
template <size_t D>
Dims<D> spatial(const Tensor& t) {
  Dims<D> a{};
  for (size_t i = 0; i < D; ++i) a[i] = t.size(static_cast<int64_t>(2 + i));
  return a;
}

template <size_t D>
constexpr const char* kernel_name() { return D == 2 ? "conv2d" : "conv3d"; }

// Whether this convolution runs on oneDNN (float32, 2-D; Note [Convolution backends] in
// src/kernels/onednn_conv.cpp) rather than im2col + gemm.
template <class T, size_t D>
bool on_onednn(const Geometry<D>& g, int64_t O, int64_t groups) {
  if constexpr (D == 2 && std::is_same_v<T, float>) {
    return kernels::onednn::use_for({g, O, groups});
  } else {
    return false;
  }
}

// ---- raw kernels: contiguous, detached operands, no recording ----

// y (N, O, o...) = conv(x (N, C, in...), w (O, C/groups, k...)) + b (O) when defined.
template <size_t D>
Tensor conv_forward_kernel(const Tensor& x_, const Tensor& w_, const Tensor& b_, const ConvParams<D>& p) {
  NoGradGuard ng;
  const Tensor x = x_.detach().contiguous(), w = w_.detach().contiguous();
  const Tensor b = b_.defined() ? b_.detach().contiguous() : Tensor();
  const int64_t N = x.size(0), C = x.size(1), O = w.size(0), G = p.groups;
  const auto geo = geometry<D>(C, spatial<D>(x), spatial<D>(w), p);
  const int64_t L = out_numel(geo), K = (C / G) * taps(geo), Og = O / G;
  const int64_t image = image_numel(geo);
  Tensor y = make_empty(out_shape(N, O, geo), x.dtype(), x.device());
  if (y.is_meta()) return y;  // Note [Meta device]: no kernel on meta
  kernels::dispatch_floating(x.dtype(), kernel_name<D>(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pw = static_cast<const T*>(w.data_ptr());
    T* py = y.data_ptr<T>();
    if (on_onednn<T, D>(geo, O, G)) {
      if constexpr (D == 2 && std::is_same_v<T, float>) {
        const float* pb = b.defined() ? static_cast<const float*>(b.data_ptr()) : nullptr;
        for_onednn_pieces(N, O * K * L, [&](int64_t a, int64_t n) {
          kernels::onednn::conv2d_forward({geo, O, G}, n, px + a * image, pw, pb, py + a * O * L);
        });
      }
      return;
    }
    const bool direct = cols_are_image(geo);
    parallel_for(0, N, sample_grain(O * K * L), [&](int64_t n0, int64_t n1) {
      std::vector<T> buf(direct ? 0 : static_cast<size_t>(K * G * L));  // this chunk's columns
      for (int64_t n = n0; n < n1; ++n) {
        const T* cols = px + n * image;
        if (!direct) {
          to_cols(cols, geo, buf.data());
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

// Bx: grad_input (N, C, in...) of conv for grad_output g (N, O, o...) and weight w.
template <size_t D>
Tensor conv_input_backward_kernel(const Tensor& g_, const Tensor& w_, const ConvParams<D>& p, const Dims<D>& in) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), w = w_.detach().contiguous();
  const int64_t N = g.size(0), O = w.size(0), G = p.groups, C = w.size(1) * G;
  const auto geo = geometry<D>(C, in, spatial<D>(w), p);
  const int64_t L = out_numel(geo), K = (C / G) * taps(geo), Og = O / G;
  const int64_t image = image_numel(geo);
  Shape shape{N, C};
  for (int64_t v : in) shape.push_back(v);
  Tensor gx = make_empty(shape, g.dtype(), g.device());
  if (gx.is_meta()) return gx;  // Note [Meta device]: no kernel on meta
  kernels::dispatch_floating(g.dtype(), kernel_name<D>(), [&]<class T>() {
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = static_cast<const T*>(w.data_ptr());
    T* px = gx.data_ptr<T>();
    if (on_onednn<T, D>(geo, O, G)) {
      if constexpr (D == 2 && std::is_same_v<T, float>) {
        for_onednn_pieces(N, O * K * L, [&](int64_t a, int64_t n) {
          kernels::onednn::conv2d_backward_data({geo, O, G}, n, pg + a * O * L, pw, px + a * image);
        });
      }
      return;
    }
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
          from_cols(buf.data(), geo, xn);
        }
      }
    });
  });
  return gx;
}
Tensor conv_input_backward_kernel(const Tensor& g, const Tensor& w, const ConvParams<2>& p, int64_t H, int64_t W) {
  return conv_input_backward_kernel<2>(g, w, p, {H, W});
}

// Bw: grad_weight (O, C/groups, k...) of conv for grad_output g (N, O, o...) and input x.
template <size_t D>
Tensor conv_weight_backward_kernel(const Tensor& g_, const Tensor& x_, const ConvParams<D>& p, const Dims<D>& k) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous();
  const int64_t N = x.size(0), C = x.size(1), O = g.size(1), G = p.groups;
  const auto geo = geometry<D>(C, spatial<D>(x), k, p);
  const int64_t L = out_numel(geo), K = (C / G) * taps(geo), Og = O / G;
  const int64_t image = image_numel(geo);
  Shape shape{O, C / G};
  for (int64_t v : k) shape.push_back(v);
  Tensor gw = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
  if (N == 0 || gw.is_meta()) return gw;  // Note [Meta device]: no kernel on meta
  // Note [Convolution weight gradient in blocks]
  // The batch is cut into `blocks` runs of samples
  // that depend on the sizes only; block i sums its samples into partial i (in sample order, by
  // gemm with beta = 1), and gw = partial 0 + partial 1 + ... in block order. parallel_for hands
  // whole blocks to threads, so the bits of gw do not depend on the thread count.
  const int64_t blocks = std::clamp<int64_t>(N * O * K * L / kConvChunkWork, 1, std::min<int64_t>(N, kWeightBlocks));
  const int64_t wsize = O * K;
  kernels::dispatch_floating(g.dtype(), kernel_name<D>(), [&]<class T>() {
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* px = static_cast<const T*>(x.data_ptr());
    T* pw = gw.data_ptr<T>();
    const bool direct = cols_are_image(geo);
    // Partial 0 is gw itself; partials 1.. live here.
    std::vector<T> partials(static_cast<size_t>((blocks - 1) * wsize));
    if (on_onednn<T, D>(geo, O, G)) {
      if constexpr (D == 2 && std::is_same_v<T, float>) {
        parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
          for (int64_t bi = b0; bi < b1; ++bi) {
            const int64_t n0 = bi * N / blocks, n1 = (bi + 1) * N / blocks;
            kernels::onednn::conv2d_backward_weights({geo, O, G}, n1 - n0, pg + n0 * O * L, px + n0 * image,
                                                     bi == 0 ? pw : partials.data() + (bi - 1) * wsize);
          }
        });
      }
    } else {
      parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
        std::vector<T> buf(direct ? 0 : static_cast<size_t>(K * G * L));  // this chunk's columns
        for (int64_t bi = b0; bi < b1; ++bi) {
          T* acc = bi == 0 ? pw : partials.data() + (bi - 1) * wsize;
          for (int64_t n = bi * N / blocks; n < (bi + 1) * N / blocks; ++n) {
            const T* cols = px + n * image;
            if (!direct) {
              to_cols(cols, geo, buf.data());
              cols = buf.data();
            }
            const T* gn = pg + n * O * L;
            for (int64_t gi = 0; gi < G; ++gi)  // w_g (Og, K) += g_g (Og, L) @ cols_g^T (L, K)
              gemm<T>(false, true, Og, K, L, gn + gi * Og * L, L, cols + gi * K * L, L, T(1), acc + gi * Og * K, K);
          }
        }
      });
    }
    for (int64_t bi = 1; bi < blocks; ++bi) {
      const T* part = partials.data() + (bi - 1) * wsize;
      for (int64_t i = 0; i < wsize; ++i) pw[i] += part[i];
    }
  });
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
  int64_t L = 1;
  for (int64_t d = 2; d < gc.dim(); ++d) L *= gc.size(d);
  const int64_t N = gc.size(0), O = gc.size(1);
  Tensor gb = make_empty({O}, gc.dtype(), gc.device());
  if (gb.is_meta()) return gb;  // Note [Meta device]: no kernel on meta
  kernels::dispatch_floating(gc.dtype(), "conv2d", [&]<class T>() {
    const T* pg = gc.data_ptr<T>();
    T* pb = gb.data_ptr<T>();
    // Each plane summed in T (float32: kernels::sum_rows_f32, vectorised and split over threads in
    // a fixed order), the planes of a channel added in double.
    std::vector<T> plane(static_cast<size_t>(N * O));
    if constexpr (std::is_same_v<T, float>) {
      kernels::sum_rows_f32(pg, plane.data(), N * O, L);
    } else {
      for (int64_t r = 0; r < N * O; ++r) {
        T part = 0;
        for (int64_t l = 0; l < L; ++l) part += pg[r * L + l];
        plane[static_cast<size_t>(r)] = part;
      }
    }
    for (int64_t o = 0; o < O; ++o) {
      double acc = 0;
      for (int64_t n = 0; n < N; ++n) acc += static_cast<double>(plane[static_cast<size_t>(n * O + o)]);
      pb[o] = static_cast<T>(acc);
    }
  });
  return gb;
}

// ---- the three recorded ops of Note [Convolution backward as ops] ----
// `id`: the op the forward node is the backward of (conv2d, or conv1d running on a height of 1,
// or conv3d); the backward nodes are convolution_backward's for all of them.
template <size_t D>
Tensor conv_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams<D>& p, OpId id);
template <size_t D>
Tensor conv_input_backward(const Tensor& g, const Tensor& w, const ConvParams<D>& p, const Dims<D>& in);
template <size_t D>
Tensor conv_weight_backward(const Tensor& g, const Tensor& x, const ConvParams<D>& p, const Dims<D>& k);

template <size_t D>
Tensor conv_op(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams<D>& p, OpId id) {
  memory::OpScope op_scope(ops::op_name(id));  // names its allocations in the memory report
  detail::MetaOpScope meta_scope(ops::op_name(id), {&x, &w, &b});  // Note [Meta device]
  Tensor y = conv_forward_kernel<D>(x, w, b, p);
  const Dims<D> in = spatial<D>(x), k = spatial<D>(w);
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
Tensor conv_input_backward(const Tensor& g, const Tensor& w, const ConvParams<D>& p, const Dims<D>& in) {
  Tensor gx = conv_input_backward_kernel<D>(g, w, p, in);
  const Dims<D> k = spatial<D>(w);
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
Tensor conv_weight_backward(const Tensor& g, const Tensor& x, const ConvParams<D>& p, const Dims<D>& k) {
  Tensor gw = conv_weight_backward_kernel<D>(g, x, p, k);
  const Dims<D> in = spatial<D>(x);
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
  const Dims<2> k = spatial<2>(w);
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
  const Dims<2> in = spatial<2>(x), k = spatial<2>(w);
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
                               const ConvParams<D>& p, const Dims<D>& output_padding) {
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
                            const Dims<2>& op_pad, OpId id) {
  const Tensor x = input.dim() == 3 ? input.unsqueeze(0) : input;
  Dims<2> out{};
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
