// The pooling loops (shapes and semantics in pooling.h). Each loop keeps its arithmetic and
// iteration order: the results' bits are part of the ops' contract.
#include "pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace graft::kernels::pooling {

namespace {

// Calls f(out_index, h0, h1, w0, w1, divisor) for each window of an avg pool (clipped to the input).
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

// Adaptive window bounds: [floor(i s / n), ceil((i + 1) s / n)).
int64_t start_index(int64_t i, int64_t n, int64_t s) { return (i * s) / n; }
int64_t end_index(int64_t i, int64_t n, int64_t s) { return ((i + 1) * s + n - 1) / n; }

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

}  // namespace

template <class T>
void max_pool2d_forward(const Tensor& x, Tensor& y, Tensor& idx, const PoolGeom& g) {
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
}

template <class T>
void max_pool2d_backward(const Tensor& grad_out, const Tensor& idx, Tensor& grad_in) {
  const int64_t H = grad_in.size(2), W = grad_in.size(3);
  const int64_t planes = grad_out.size(0) * grad_out.size(1), L = grad_out.size(2) * grad_out.size(3);
  const T* pg = static_cast<const T*>(grad_out.data_ptr());
  const int64_t* pi = idx.data_ptr<int64_t>();
  T* px = grad_in.data_ptr<T>();
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t l = 0; l < L; ++l) {
      const int64_t i = pi[p * L + l];
      if (i >= 0 && i < H * W) px[p * H * W + i] += pg[p * L + l];
    }
}

template <class T>
void avg_pool2d_forward(const Tensor& x, Tensor& y, const PoolGeom& g, const AvgOpts& o) {
  const T* px = static_cast<const T*>(x.data_ptr());
  T* py = y.data_ptr<T>();
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* xp = px + p * g.H * g.W;
    T* yp = py + p * g.oH * g.oW;
    avg_windows(g, o, [&](int64_t out, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t div) {
      if (h0 >= h1 || w0 >= w1) {
        yp[out] = T(0);
        return;
      }
      T s = 0;
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = w0; iw < w1; ++iw) s += xp[ih * g.W + iw];
      yp[out] = s / static_cast<T>(div);
    });
  }
}

template <class T>
void avg_pool2d_backward(const Tensor& grad_out, Tensor& grad_in, const PoolGeom& g, const AvgOpts& o) {
  const T* pg = static_cast<const T*>(grad_out.data_ptr());
  T* px = grad_in.data_ptr<T>();
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* gp = pg + p * g.oH * g.oW;
    T* xp = px + p * g.H * g.W;
    avg_windows(g, o, [&](int64_t out, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t div) {
      if (h0 >= h1 || w0 >= w1) return;
      const T v = gp[out] / static_cast<T>(div);
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = w0; iw < w1; ++iw) xp[ih * g.W + iw] += v;
    });
  }
}

template <class T>
void adaptive_avg_pool2d_forward(const Tensor& x, Tensor& y) {
  adaptive_kernel<false, T>(static_cast<const T*>(x.data_ptr()), y.data_ptr<T>(), x.size(0) * x.size(1), x.size(2),
                            x.size(3), y.size(2), y.size(3));
}

template <class T>
void adaptive_avg_pool2d_backward(const Tensor& grad_out, Tensor& grad_in) {
  adaptive_kernel<true, T>(static_cast<const T*>(grad_out.data_ptr()), grad_in.data_ptr<T>(),
                           grad_out.size(0) * grad_out.size(1), grad_in.size(2), grad_in.size(3), grad_out.size(2),
                           grad_out.size(3));
}

template <class T>
void adaptive_max_pool2d_forward(const Tensor& x, Tensor& y, Tensor& idx) {
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), oH = y.size(2), oW = y.size(3);
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
}

#define GRAFT_POOLING_INSTANTIATE(T)                                                                      \
  template void max_pool2d_forward<T>(const Tensor&, Tensor&, Tensor&, const PoolGeom&);                  \
  template void max_pool2d_backward<T>(const Tensor&, const Tensor&, Tensor&);                            \
  template void avg_pool2d_forward<T>(const Tensor&, Tensor&, const PoolGeom&, const AvgOpts&);           \
  template void avg_pool2d_backward<T>(const Tensor&, Tensor&, const PoolGeom&, const AvgOpts&);          \
  template void adaptive_avg_pool2d_forward<T>(const Tensor&, Tensor&);                                   \
  template void adaptive_avg_pool2d_backward<T>(const Tensor&, Tensor&);                                  \
  template void adaptive_max_pool2d_forward<T>(const Tensor&, Tensor&, Tensor&);
GRAFT_POOLING_INSTANTIATE(float)
GRAFT_POOLING_INSTANTIATE(double)
#undef GRAFT_POOLING_INSTANTIATE

}  // namespace graft::kernels::pooling
