// The convolution kernels (src/kernels/conv.h): im2col / vol2col and OpenBLAS gemm (float32 /
// float64), or oneDNN for the float32 2-D convolutions the op hands it (Note [Convolution
// backends] in src/kernels/onednn_conv.cpp). The same code serves conv2d (Conv2dGeometry, im2col;
// conv1d runs on a height of 1) and conv3d (Conv3dGeometry, vol2col): only the geometry and its
// column transform differ.
#include "conv.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "../core/dispatch.h"
#include "../runtime/blas.h"
#include "graft/core/error.h"
#include "graft/core/storage.h"
#include "graft/runtime/parallel.h"
#include "onednn_conv.h"
#include "vec_f32.h"

namespace graft::kernels::conv {

namespace {

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

// Output positions L, kernel taps per channel, elements of one input image.
int64_t out_numel(const Conv2dGeometry& g) { return g.out_h * g.out_w; }
int64_t out_numel(const Conv3dGeometry& g) { return g.out_d * g.out_h * g.out_w; }
int64_t taps(const Conv2dGeometry& g) { return g.kernel_h * g.kernel_w; }
int64_t taps(const Conv3dGeometry& g) { return g.kernel_d * g.kernel_h * g.kernel_w; }
int64_t image_numel(const Conv2dGeometry& g) { return g.channels * g.height * g.width; }
int64_t image_numel(const Conv3dGeometry& g) { return g.channels * g.depth * g.height * g.width; }

// A 1x1 kernel with stride 1 and no padding reads the image itself as its column matrix.
bool cols_are_image(const Conv2dGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}
bool cols_are_image(const Conv3dGeometry& g) {
  return g.kernel_d == 1 && g.kernel_h == 1 && g.kernel_w == 1 && g.stride_d == 1 && g.stride_h == 1 &&
         g.stride_w == 1 && g.pad_d == 0 && g.pad_h == 0 && g.pad_w == 0;
}

// The column transform of Note [im2col layout] / Note [vol2col layout] and its adjoint.
template <class T>
void to_cols(const T* img, const Conv2dGeometry& g, T* cols) {
  im2col(img, g, cols);
}
template <class T>
void to_cols(const T* img, const Conv3dGeometry& g, T* cols) {
  vol2col(img, g, cols);
}
template <class T>
void from_cols(const T* cols, const Conv2dGeometry& g, T* img) {
  col2im(cols, g, img);
}
template <class T>
void from_cols(const T* cols, const Conv3dGeometry& g, T* img) {
  col2vol(cols, g, img);
}

// The op named in a dtype error and in the memory report.
template <class Geo>
constexpr const char* kernel_name() { return std::is_same_v<Geo, Conv2dGeometry> ? "conv2d" : "conv3d"; }

// oneDNN serves float32 2-D convolutions only; the op picks it only for those.
template <class T, class Geo>
constexpr bool onednn_serves() { return std::is_same_v<Geo, Conv2dGeometry> && std::is_same_v<T, float>; }

template <class Geo>
void forward_impl(const Tensor& x, const Tensor& w, const Tensor& b, const Geo& geo, int64_t G, Backend backend,
                  Tensor& y) {
  const int64_t N = x.size(0), C = geo.channels, O = w.size(0);
  const int64_t L = out_numel(geo), K = (C / G) * taps(geo), Og = O / G;
  const int64_t image = image_numel(geo);
  dispatch_floating(x.dtype(), kernel_name<Geo>(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pw = static_cast<const T*>(w.data_ptr());
    T* py = y.data_ptr<T>();
    if (backend == Backend::onednn) {
      if constexpr (onednn_serves<T, Geo>()) {
        const float* pb = b.defined() ? static_cast<const float*>(b.data_ptr()) : nullptr;
        for_onednn_pieces(N, O * K * L, [&](int64_t a, int64_t n) {
          onednn::conv2d_forward({geo, O, G}, n, px + a * image, pw, pb, py + a * O * L);
        });
      } else {
        GRAFT_ASSERT(false, "oneDNN runs float32 2-D convolutions only");
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
}

}  // namespace

// Note [oneDNN's buffers on meta]
// The oneDNN backend takes buffers from graft's allocator while a convolution runs (the operands
// reordered into the primitive's own layouts, its scratchpad: onednn::buffer_bytes), counted as
// temporaries of the op like any other. The meta device runs no kernel, so a plan on shapes alone
// did not see them, and where a step's peak falls inside a convolution (its backward, with the
// optimizer step inside backward) the CPU's peak passed the plan: 84 KiB over a 531 KiB step of a
// 12 x 12-image CNN. On meta the op now takes, as one meta storage given back at once, what the
// pieces that run at once take: the forward and the input gradient run pieces of kOneDnnSamples
// samples, the weight gradient its blocks, min(threads, chunks) of them at a time, each as large as
// the first (the largest).
void meta_buffers(Pass pass, const Conv2dGeometry& geo, int64_t O, int64_t G, int64_t N, bool bias, Backend backend) {
  if (backend != Backend::onednn || N == 0) return;
  const int64_t L = out_numel(geo), K = (geo.channels / G) * taps(geo);
  int64_t chunks = 0, samples = 0;
  if (pass == Pass::weight_backward) {
    chunks = std::clamp<int64_t>(N * O * K * L / kConvChunkWork, 1, std::min<int64_t>(N, kWeightBlocks));  // the blocks
    samples = (N + chunks - 1) / chunks;
  } else {
    const int64_t pieces = (N + kOneDnnSamples - 1) / kOneDnnSamples;
    const int64_t grain = std::max<int64_t>(1, sample_grain(O * K * L) / kOneDnnSamples);
    chunks = (pieces + grain - 1) / grain;
    samples = std::min(kOneDnnSamples, N);
  }
  const onednn::ConvPass p = pass == Pass::forward          ? onednn::ConvPass::forward
                             : pass == Pass::input_backward ? onednn::ConvPass::backward_data
                                                            : onednn::ConvPass::backward_weights;
  const int64_t at_once = std::min<int64_t>(chunks, std::max(1, get_num_threads()));
  const int64_t bytes = at_once * onednn::buffer_bytes(p, {geo, O, G}, samples, bias && pass == Pass::forward);
  if (bytes > 0) Storage taken(static_cast<size_t>(bytes), Device(DeviceType::Meta));
}

namespace {

template <class Geo>
void input_backward_impl(const Tensor& g, const Tensor& w, const Geo& geo, int64_t G, Backend backend, Tensor& gx) {
  const int64_t N = g.size(0), C = geo.channels, O = w.size(0);
  const int64_t L = out_numel(geo), K = (C / G) * taps(geo), Og = O / G;
  const int64_t image = image_numel(geo);
  dispatch_floating(g.dtype(), kernel_name<Geo>(), [&]<class T>() {
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = static_cast<const T*>(w.data_ptr());
    T* px = gx.data_ptr<T>();
    if (backend == Backend::onednn) {
      if constexpr (onednn_serves<T, Geo>()) {
        for_onednn_pieces(N, O * K * L, [&](int64_t a, int64_t n) {
          onednn::conv2d_backward_data({geo, O, G}, n, pg + a * O * L, pw, px + a * image);
        });
      } else {
        GRAFT_ASSERT(false, "oneDNN runs float32 2-D convolutions only");
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
}

template <class Geo>
void weight_backward_impl(const Tensor& g, const Tensor& x, const Geo& geo, int64_t G, Backend backend, Tensor& gw) {
  const int64_t N = x.size(0), C = geo.channels, O = g.size(1);
  const int64_t L = out_numel(geo), K = (C / G) * taps(geo), Og = O / G;
  const int64_t image = image_numel(geo);
  if (N == 0) return;  // no samples: gw stays as the caller left it (zeros)
  // Note [Convolution weight gradient in blocks]
  // The batch is cut into `blocks` runs of samples
  // that depend on the sizes only; block i sums its samples into partial i (in sample order, by
  // gemm with beta = 1), and gw = partial 0 + partial 1 + ... in block order. parallel_for hands
  // whole blocks to threads, so the bits of gw do not depend on the thread count.
  const int64_t blocks = std::clamp<int64_t>(N * O * K * L / kConvChunkWork, 1, std::min<int64_t>(N, kWeightBlocks));
  const int64_t wsize = O * K;
  dispatch_floating(g.dtype(), kernel_name<Geo>(), [&]<class T>() {
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* px = static_cast<const T*>(x.data_ptr());
    T* pw = gw.data_ptr<T>();
    const bool direct = cols_are_image(geo);
    // Partial 0 is gw itself; partials 1.. live here.
    std::vector<T> partials(static_cast<size_t>((blocks - 1) * wsize));
    if (backend == Backend::onednn) {
      if constexpr (onednn_serves<T, Geo>()) {
        parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
          for (int64_t bi = b0; bi < b1; ++bi) {
            const int64_t n0 = bi * N / blocks, n1 = (bi + 1) * N / blocks;
            onednn::conv2d_backward_weights({geo, O, G}, n1 - n0, pg + n0 * O * L, px + n0 * image,
                                            bi == 0 ? pw : partials.data() + (bi - 1) * wsize);
          }
        });
      } else {
        GRAFT_ASSERT(false, "oneDNN runs float32 2-D convolutions only");
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
}

}  // namespace

void forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& geo, int64_t groups,
             Backend backend, Tensor& y) {
  forward_impl(x, w, b, geo, groups, backend, y);
}
void forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv3dGeometry& geo, int64_t groups,
             Backend backend, Tensor& y) {
  forward_impl(x, w, b, geo, groups, backend, y);
}

void input_backward(const Tensor& g, const Tensor& w, const Conv2dGeometry& geo, int64_t groups, Backend backend,
                    Tensor& gx) {
  input_backward_impl(g, w, geo, groups, backend, gx);
}
void input_backward(const Tensor& g, const Tensor& w, const Conv3dGeometry& geo, int64_t groups, Backend backend,
                    Tensor& gx) {
  input_backward_impl(g, w, geo, groups, backend, gx);
}

void weight_backward(const Tensor& g, const Tensor& x, const Conv2dGeometry& geo, int64_t groups, Backend backend,
                     Tensor& gw) {
  weight_backward_impl(g, x, geo, groups, backend, gw);
}
void weight_backward(const Tensor& g, const Tensor& x, const Conv3dGeometry& geo, int64_t groups, Backend backend,
                     Tensor& gw) {
  weight_backward_impl(g, x, geo, groups, backend, gw);
}

void bias_backward(const Tensor& g, Tensor& gb) {
  int64_t L = 1;
  for (int64_t d = 2; d < g.dim(); ++d) L *= g.size(d);
  const int64_t N = g.size(0), O = g.size(1);
  dispatch_floating(g.dtype(), "conv2d", [&]<class T>() {
    const T* pg = g.data_ptr<T>();
    T* pb = gb.data_ptr<T>();
    // Each plane summed in T (float32: kernels::sum_rows_f32, vectorised and split over threads in
    // a fixed order), the planes of a channel added in double.
    std::vector<T> plane(static_cast<size_t>(N * O));
    if constexpr (std::is_same_v<T, float>) {
      sum_rows_f32(pg, plane.data(), N * O, L);
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
}

}  // namespace graft::kernels::conv
