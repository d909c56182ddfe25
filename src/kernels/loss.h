// The loss kernels: the fused cross-entropy's forward and backward (float32, float64; Note [Fused
// cross-entropy] in src/ops/loss.cpp, which keeps the checks, the composite and the node) and the
// value readers of the losses' argument checks. Not installed.
//
// Layouts (every tensor contiguous): logits x (N, C), class indices t (N) int64, lse (N) and the
// gradient dx (N, C) in x's dtype. A row whose target is ignore_index has loss 0 and gradient 0.
// On meta tensors the caller runs nothing (Note [Meta device]).
#pragma once

#include <cstdint>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::kernels::loss {

// The loss reduction (graft::Reduction, which lives in the ops layer).
enum class Reduce { None, Mean, Sum };

// lse_i = m_i + log sum_c exp(x_ic - m_i) with m_i = max_c x_ic (a nan wins; a row of -inf gives
// nan), loss_i = lse_i - x_{i, t_i} (0 where t_i = ignore_index). out (N) holds the losses for
// None, else out () holds their sum (in double, rounded once), divided by the number of counted
// rows for Mean (0 / 0 = nan). Returns the number of counted rows.
int64_t cross_entropy_forward(const Tensor& x, const Tensor& t, int64_t ignore_index, Reduce red, Tensor& lse,
                              Tensor& out);

// dx_ic = g_i (exp(x_ic - lse_i) - [c = t_i]) / denom, 0 on ignored rows; g_i = g[i] for None,
// else g[0] (g contiguous, in x's dtype). denom: the counted rows for Mean, else 1.
void cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& g, int64_t ignore_index,
                            Reduce red, double denom, Tensor& dx);

}  // namespace graft::kernels::loss
