// The linear cross-entropy kernels: src/kernels/linear_cross_entropy.h; the formulas are Note [Linear
// cross-entropy in chunks] in src/ops/linear_cross_entropy.cpp.
#include "linear_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../core/dispatch.h"
#include "../runtime/blas.h"
#include "graft/core/dtype.h"
#include "graft/runtime/parallel.h"

namespace graft::kernels::loss {

namespace {

// Rows per task of the per-row passes: about 64K logits, a few cycles each (exp).
int64_t row_grain(int64_t vocab) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, vocab)); }

// logits[0 .. c) = x[r0 .. r0 + c) w^T, rows of V, without the bias.
template <class T>
void chunk_logits(const LinearCrossEntropyShape& s, const T* px, const T* pw, int64_t r0, int64_t c, T* pl,
                  const char* op) {
  runtime::gemm<T>(op, false, true, c, s.vocab, s.in, T(1), px + r0 * s.in, s.in, pw, s.in, T(0), pl, s.vocab);
}

}  // namespace

int64_t linear_cross_entropy_forward(const LinearCrossEntropyShape& s, const Tensor& x, const Tensor& w,
                                     const Tensor& b, const Tensor& t, Tensor& logits, Tensor& lse, Tensor& out) {
  const int64_t N = s.rows, V = s.vocab;
  const double eps = s.label_smoothing;
  int64_t counted = 0;
  runtime::ensure_blas_ready();
  dispatch_floating(x.dtype(), "linear_cross_entropy", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    const T* pw = w.data_ptr<T>();
    const T* pb = b.defined() ? b.data_ptr<T>() : nullptr;
    const int64_t* pt = t.data_ptr<int64_t>();
    T* pl = logits.data_ptr<T>();
    T* plse = lse.data_ptr<T>();
    T* po = out.data_ptr<T>();
    std::vector<double> row_loss(static_cast<size_t>(std::min(s.chunk, N)));
    double total = 0;
    for (int64_t r0 = 0; r0 < N; r0 += s.chunk) {
      const int64_t c = std::min(s.chunk, N - r0);
      chunk_logits<T>(s, px, pw, r0, c, pl, "linear_cross_entropy");
      graft::parallel_for(0, c, row_grain(V), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          T* row = pl + i * V;
          if (pb)
            for (int64_t v = 0; v < V; ++v) row[v] += pb[v];
          T m = -std::numeric_limits<T>::infinity();
          for (int64_t v = 0; v < V; ++v) m = std::isnan(row[v]) || row[v] > m ? row[v] : m;  // NaN wins
          double sum = 0, sum_logits = 0;
          for (int64_t v = 0; v < V; ++v) {
            sum += static_cast<double>(std::exp(row[v] - m));
            sum_logits += static_cast<double>(row[v]);
          }
          // A row of -inf (m = -inf) gives lse = nan, as log_softmax does.
          const T l = std::isinf(m) && m < 0 ? std::numeric_limits<T>::quiet_NaN() : m + static_cast<T>(std::log(sum));
          plse[r0 + i] = l;
          const int64_t ti = pt[r0 + i];
          double loss = 0;
          if (ti != s.ignore_index) {
            loss = static_cast<double>(l) - static_cast<double>(row[ti]);
            if (eps != 0.0)
              loss = static_cast<double>(l) - (1.0 - eps) * static_cast<double>(row[ti]) -
                     eps / static_cast<double>(V) * sum_logits;
          }
          row_loss[static_cast<size_t>(i)] = loss;
        }
      });
      for (int64_t i = 0; i < c; ++i) {
        const bool ignored = pt[r0 + i] == s.ignore_index;
        counted += ignored ? 0 : 1;
        const double loss = row_loss[static_cast<size_t>(i)];
        if (s.red == Reduce::None) po[r0 + i] = static_cast<T>(loss);
        else total += static_cast<double>(static_cast<T>(loss));  // each loss rounded to T, as the composite's
      }
    }
    if (s.red == Reduce::Sum) po[0] = static_cast<T>(total);
    if (s.red == Reduce::Mean) po[0] = static_cast<T>(total / static_cast<double>(counted));  // 0 / 0 = nan
  });
  return counted;
}

void linear_cross_entropy_backward(const LinearCrossEntropyShape& s, const Tensor& x, const Tensor& w, const Tensor& b,
                                   const Tensor& t, const Tensor& lse, const Tensor& g, double denom, Tensor& logits,
                                   Tensor& gx, Tensor& gw, Tensor& gb) {
  const int64_t N = s.rows, V = s.vocab, in = s.in;
  const double eps = s.label_smoothing;
  runtime::ensure_blas_ready();
  dispatch_floating(x.dtype(), "LinearCrossEntropyBackward0", [&]<class T>() {
    const char* op = "LinearCrossEntropyBackward0";
    const T* px = x.data_ptr<T>();
    const T* pw = w.data_ptr<T>();
    const T* pb = b.defined() ? b.data_ptr<T>() : nullptr;
    const int64_t* pt = t.data_ptr<int64_t>();
    const T* plse = lse.data_ptr<T>();
    const T* pg = g.data_ptr<T>();
    T* pl = logits.data_ptr<T>();
    T* pgx = gx.defined() ? gx.data_ptr<T>() : nullptr;
    T* pgw = gw.defined() ? gw.data_ptr<T>() : nullptr;
    T* pgb = gb.defined() ? gb.data_ptr<T>() : nullptr;
    std::vector<double> bias_sum(pgb ? static_cast<size_t>(V) : 0, 0.0);
    if (pgw && N == 0) std::fill(pgw, pgw + V * in, T(0));
    for (int64_t r0 = 0; r0 < N; r0 += s.chunk) {
      const int64_t c = std::min(s.chunk, N - r0);
      chunk_logits<T>(s, px, pw, r0, c, pl, op);
      graft::parallel_for(0, c, row_grain(V), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          T* row = pl + i * V;
          const int64_t ti = pt[r0 + i];
          if (ti == s.ignore_index) {
            std::fill(row, row + V, T(0));
            continue;
          }
          const T gi = (s.red == Reduce::None ? pg[r0 + i] : pg[0]) / static_cast<T>(denom);
          const T l = plse[r0 + i];
          if (pb)
            for (int64_t v = 0; v < V; ++v) row[v] += pb[v];
          for (int64_t v = 0; v < V; ++v) row[v] = gi * std::exp(row[v] - l);
          if (eps != 0.0) {
            const T off = gi * static_cast<T>(eps / static_cast<double>(V));
            for (int64_t v = 0; v < V; ++v) row[v] -= off;
            row[ti] -= gi * static_cast<T>(1.0 - eps);
          } else {
            row[ti] -= gi;
          }
        }
      });
      // gx_c = G_c w;  gw (+)= G_c^T x_c (the first chunk overwrites).
      if (pgx) runtime::gemm<T>(op, false, false, c, in, V, T(1), pl, V, pw, in, T(0), pgx + r0 * in, in);
      if (pgw)
        runtime::gemm<T>(op, true, false, V, in, c, T(1), pl, V, px + r0 * in, in, r0 == 0 ? T(0) : T(1), pgw, in);
      if (pgb) {
        graft::parallel_for(0, V, std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, c)),
                            [&](int64_t v0, int64_t v1) {
                              for (int64_t i = 0; i < c; ++i) {
                                const T* row = pl + i * V;
                                for (int64_t v = v0; v < v1; ++v) bias_sum[static_cast<size_t>(v)] += row[v];
                              }
                            });
      }
    }
    if (pgb)
      for (int64_t v = 0; v < V; ++v) pgb[v] = static_cast<T>(bias_sum[static_cast<size_t>(v)]);
  });
}

}  // namespace graft::kernels::loss
