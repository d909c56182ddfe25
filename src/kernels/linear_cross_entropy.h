// The kernels of graft::linear_cross_entropy (Note [Linear cross-entropy in chunks] in
// src/ops/linear_cross_entropy.cpp, which keeps the checks, the composite, the allocations and the
// node): float32 and float64. Not installed.
//
// Layouts (every tensor contiguous, one dtype T): input x (N, in), weight w (V, in), bias b (V) or
// undefined, class indices t (N) int64, lse (N), and `logits`, the scratch the op allocated for one
// chunk: at least (min(chunk, N), V). A row whose target is ignore_index has loss 0 and gradient 0.
// The products go through runtime::gemm (OpenBLAS), the per-row passes over graft's threads; the
// results do not depend on the thread count. On meta tensors the caller runs nothing (Note [Meta
// device]).
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"
#include "loss.h"

namespace graft::kernels::loss {

struct LinearCrossEntropyShape {
  int64_t rows = 0;   // N
  int64_t in = 0;     // in_features
  int64_t vocab = 0;  // V, the classes
  int64_t chunk = 1;  // rows per chunk (>= 1)
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // eps in [0, 1]
  Reduce red = Reduce::Mean;
};

// Per chunk of rows [r0, r0 + c): logits = x_c w^T (+ b) into `logits`, then per row
//   lse_i  = m_i + log sum_v exp(l_iv - m_i), m_i = max_v l_iv (a nan wins; a row of -inf gives nan),
//   loss_i = lse_i - (1 - eps) l_{i, t_i} - eps / V sum_v l_iv  (0 where t_i = ignore_index).
// out (N) holds the losses for None, else out () their sum (in double, rounded once), divided by
// the counted rows for Mean (0 / 0 = nan). Returns the number of counted rows.
int64_t linear_cross_entropy_forward(const LinearCrossEntropyShape& s, const Tensor& x, const Tensor& w,
                                     const Tensor& b, const Tensor& t, Tensor& logits, Tensor& lse, Tensor& out);

// Per chunk: the logits again (as forward), then in place
//   G_iv = g_i / denom (exp(l_iv - lse_i) - (1 - eps) [v = t_i] - eps / V), 0 on ignored rows,
// (g_i = g[i] for None, else g[0]; denom: the counted rows for Mean, else 1), and
//   gx_c = G_c w (N, in),   gw += G_c^T x_c (V, in),   gb += sum_i G_i (V, summed in double).
// gx, gw, gb: the outputs, each undefined when that gradient is not wanted; their old contents are
// ignored. N == 0 gives zero gw and gb.
void linear_cross_entropy_backward(const LinearCrossEntropyShape& s, const Tensor& x, const Tensor& w, const Tensor& b,
                                   const Tensor& t, const Tensor& lse, const Tensor& g, double denom, Tensor& logits,
                                   Tensor& gx, Tensor& gw, Tensor& gb);

}  // namespace graft::kernels::loss
