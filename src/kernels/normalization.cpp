// The normalisation kernels: src/kernels/normalization.h; the formulas are Note [Normalisation
// kernels] in src/ops/normalization.cpp. Every sum is taken in double, whatever T.
#include "normalization.h"

#include <algorithm>
#include <cmath>

#include "../core/dispatch.h"
#include "graft/core/factory.h"

namespace graft::kernels::normalization {

namespace {

template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? t.detach().contiguous() : Tensor(); }

template <class T>
void group_stats_loop(const T* x, int64_t outer, int64_t groups, int64_t inner, double eps, Stats& st) {
  const double n = static_cast<double>(outer * inner);
  for (int64_t g = 0; g < groups; ++g) {
    const double K = static_cast<double>(x[g * inner]);
    double s = 0, sq = 0;
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = x + (o * groups + g) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const double d = static_cast<double>(row[i]) - K;
        s += d;
        sq += d * d;
      }
    }
    const auto k = static_cast<size_t>(g);
    st.mean[k] = K + s / n;
    st.var[k] = std::max(0.0, (sq - s * s / n) / n);
    st.invstd[k] = 1.0 / std::sqrt(st.var[k] + eps);
  }
}

}  // namespace

Stats group_stats(const char* op, const Tensor& x_, int64_t outer, int64_t groups, int64_t inner, double eps) {
  const auto n = static_cast<size_t>(groups);
  Stats st{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  if (outer * inner == 0 || x_.is_meta()) return st;  // no values: every statistic stays 0
  const Tensor x = x_.detach().contiguous();
  dispatch_floating(x.dtype(), op, [&]<class T>() {
    group_stats_loop<T>(static_cast<const T*>(x.data_ptr()), outer, groups, inner, eps, st);
  });
  return st;
}

void batch_norm_forward(const Tensor& x_, const Tensor& weight, const Tensor& bias, const Stats& st, Tensor& y) {
  if (x_.is_meta()) return;  // Note [Meta device]
  const Tensor x = x_.detach().contiguous(), wc = contiguous_or_undefined(weight), bc = contiguous_or_undefined(bias);
  const int64_t N = x.size(0), C = x.size(1), S = N * C == 0 ? 0 : x.numel() / (N * C);
  dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = y.data_ptr<T>();
    const T* pw = ptr_or_null<T>(wc);
    const T* pb = ptr_or_null<T>(bc);
    for (int64_t c = 0; c < C; ++c) {
      const double m = st.mean[static_cast<size_t>(c)];
      const double scale = st.invstd[static_cast<size_t>(c)] * (pw ? static_cast<double>(pw[c]) : 1.0);
      const double shift = pb ? static_cast<double>(pb[c]) : 0.0;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t off = (n * C + c) * S;
        for (int64_t s = 0; s < S; ++s)
          py[off + s] = static_cast<T>((static_cast<double>(px[off + s]) - m) * scale + shift);
      }
    }
  });
}

void layer_norm_forward(const Tensor& x_, const Tensor& weight, const Tensor& bias, const Stats& st, int64_t M,
                        Tensor& y) {
  if (x_.is_meta()) return;  // Note [Meta device]
  const Tensor x = x_.detach().contiguous(), wc = contiguous_or_undefined(weight), bc = contiguous_or_undefined(bias);
  const int64_t R = M == 0 ? 0 : x.numel() / M;
  dispatch_floating(x.dtype(), "layer_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = y.data_ptr<T>();
    const T* pw = ptr_or_null<T>(wc);
    const T* pb = ptr_or_null<T>(bc);
    for (int64_t r = 0; r < R; ++r) {
      const double m = st.mean[static_cast<size_t>(r)], inv = st.invstd[static_cast<size_t>(r)];
      for (int64_t i = 0; i < M; ++i) {
        double v = (static_cast<double>(px[r * M + i]) - m) * inv;
        if (pw) v *= static_cast<double>(pw[i]);
        if (pb) v += static_cast<double>(pb[i]);
        py[r * M + i] = static_cast<T>(v);
      }
    }
  });
}

void group_norm_forward(const Tensor& x_, const Tensor& weight, const Tensor& bias, const Stats& st, int64_t G,
                        Tensor& y) {
  if (x_.is_meta()) return;  // Note [Meta device]
  const Tensor x = x_.detach().contiguous(), wc = contiguous_or_undefined(weight), bc = contiguous_or_undefined(bias);
  const int64_t N = x.size(0), C = x.size(1), S = N * C == 0 ? 0 : x.numel() / (N * C), Cg = C / G;
  dispatch_floating(x.dtype(), "group_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = y.data_ptr<T>();
    const T* pw = ptr_or_null<T>(wc);
    const T* pb = ptr_or_null<T>(bc);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const auto k = static_cast<size_t>(n * G + c / Cg);
        const double scale = st.invstd[k] * (pw ? static_cast<double>(pw[c]) : 1.0),
                     shift = pb ? static_cast<double>(pb[c]) : 0.0;
        const int64_t off = (n * C + c) * S;
        for (int64_t s = 0; s < S; ++s)
          py[off + s] = static_cast<T>((static_cast<double>(px[off + s]) - st.mean[k]) * scale + shift);
      }
  });
}

Grads batch_norm_backward(const Tensor& g_, const Tensor& x_, const Tensor& w_, const Tensor& mean_,
                          const Tensor& invstd_, bool training, bool need_x) {
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous(), w = contiguous_or_undefined(w_);
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(1, N * C);
  const double n = static_cast<double>(N * S);
  const double* mean = mean_.data_ptr<double>();
  const double* invstd = invstd_.data_ptr<double>();
  Grads r{need_x ? make_empty(x.sizes(), x.dtype()) : Tensor(), std::vector<double>(static_cast<size_t>(C)),
          std::vector<double>(static_cast<size_t>(C))};
  dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = ptr_or_null<T>(w);
    for (int64_t c = 0; c < C; ++c) {
      const double m = mean[c], inv = invstd[c];
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t b = 0; b < N; ++b) {
        const int64_t off = (b * C + c) * S;
        for (int64_t s = 0; s < S; ++s) {
          const double dy = static_cast<double>(pg[off + s]);
          sum_dy += dy;
          sum_dy_xhat += dy * (static_cast<double>(px[off + s]) - m);
        }
      }
      sum_dy_xhat *= inv;
      r.dweight[static_cast<size_t>(c)] = sum_dy_xhat;
      r.dbias[static_cast<size_t>(c)] = sum_dy;
      if (!need_x) continue;
      T* pdx = r.dx.data_ptr<T>();
      const double scale = (pw ? static_cast<double>(pw[c]) : 1.0) * inv;
      // training: dx = scale * (dy - sum_dy / n - xhat * sum_dy_xhat / n)
      const double a = training ? sum_dy / n : 0.0, k = training ? sum_dy_xhat / n * inv : 0.0;
      for (int64_t b = 0; b < N; ++b) {
        const int64_t off = (b * C + c) * S;
        for (int64_t s = 0; s < S; ++s)
          pdx[off + s] = static_cast<T>(
              scale * (static_cast<double>(pg[off + s]) - a - (static_cast<double>(px[off + s]) - m) * k));
      }
    }
  });
  return r;
}

Grads layer_norm_backward(const Tensor& g_, const Tensor& x_, const Tensor& w_, const Tensor& mean_,
                          const Tensor& invstd_, int64_t M, bool need_x) {
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous(), w = contiguous_or_undefined(w_);
  const int64_t R = M == 0 ? 0 : x.numel() / M;
  const double* mean = mean_.data_ptr<double>();
  const double* invstd = invstd_.data_ptr<double>();
  Grads res{need_x ? make_empty(x.sizes(), x.dtype()) : Tensor(), std::vector<double>(static_cast<size_t>(M)),
            std::vector<double>(static_cast<size_t>(M))};
  std::vector<double> dxhat(static_cast<size_t>(M));
  dispatch_floating(x.dtype(), "layer_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = ptr_or_null<T>(w);
    for (int64_t r = 0; r < R; ++r) {
      const T* xr = px + r * M;
      const T* gr = pg + r * M;
      const double m = mean[r], inv = invstd[r];
      double sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int64_t i = 0; i < M; ++i) {
        const double dy = static_cast<double>(gr[i]), xhat = (static_cast<double>(xr[i]) - m) * inv;
        const double d = pw ? dy * static_cast<double>(pw[i]) : dy;
        dxhat[static_cast<size_t>(i)] = d;
        sum_dxhat += d;
        sum_dxhat_xhat += d * xhat;
        res.dweight[static_cast<size_t>(i)] += dy * xhat;
        res.dbias[static_cast<size_t>(i)] += dy;
      }
      if (!need_x) continue;
      T* dr = res.dx.data_ptr<T>() + r * M;
      const double nn = static_cast<double>(M);
      for (int64_t i = 0; i < M; ++i) {
        const double xhat = (static_cast<double>(xr[i]) - m) * inv;
        dr[i] = static_cast<T>(inv / nn * (nn * dxhat[static_cast<size_t>(i)] - sum_dxhat - xhat * sum_dxhat_xhat));
      }
    }
  });
  return res;
}

Grads group_norm_backward(const Tensor& g_, const Tensor& x_, const Tensor& w_, const Tensor& mean_,
                          const Tensor& invstd_, int64_t G, bool need_x) {
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous(), w = contiguous_or_undefined(w_);
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(1, N * C), Cg = C / G;
  const double M = static_cast<double>(Cg * S);
  const double* mean = mean_.data_ptr<double>();
  const double* invstd = invstd_.data_ptr<double>();
  Grads r{need_x ? make_empty(x.sizes(), x.dtype()) : Tensor(), std::vector<double>(static_cast<size_t>(C)),
          std::vector<double>(static_cast<size_t>(C))};
  dispatch_floating(x.dtype(), "group_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = ptr_or_null<T>(w);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t gr = 0; gr < G; ++gr) {
        const double m = mean[n * G + gr], inv = invstd[n * G + gr];
        const int64_t base = (n * C + gr * Cg) * S;
        double sum_dxhat = 0, sum_dxhat_xhat = 0;
        for (int64_t c = gr * Cg; c < (gr + 1) * Cg; ++c) {
          const double wc = pw ? static_cast<double>(pw[c]) : 1.0;
          const int64_t off = (n * C + c) * S;
          for (int64_t s = 0; s < S; ++s) {
            const double dy = static_cast<double>(pg[off + s]), xhat = (static_cast<double>(px[off + s]) - m) * inv;
            sum_dxhat += dy * wc;
            sum_dxhat_xhat += dy * wc * xhat;
            r.dweight[static_cast<size_t>(c)] += dy * xhat;
            r.dbias[static_cast<size_t>(c)] += dy;
          }
        }
        if (!need_x) continue;
        T* pdx = r.dx.data_ptr<T>() + base;
        for (int64_t j = 0; j < Cg * S; ++j) {
          const double wc = pw ? static_cast<double>(pw[gr * Cg + j / S]) : 1.0;
          const double xhat = (static_cast<double>(px[base + j]) - m) * inv;
          pdx[j] = static_cast<T>(inv / M *
                                  (M * static_cast<double>(pg[base + j]) * wc - sum_dxhat - xhat * sum_dxhat_xhat));
        }
      }
    }
  });
  return r;
}

}  // namespace graft::kernels::normalization
