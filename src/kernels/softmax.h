// The softmax and log_softmax kernel (float32, float64) behind graft::softmax and
// graft::log_softmax (src/ops/softmax.cpp keeps the dtype rule, the allocation and the nodes).
// Not installed.
//
// Layout: x and y contiguous, viewed as (outer, n, inner) with n the size of the softmax dim; each
// of the outer * inner rows of n values (stride inner) is normalised: the row max m (a nan anywhere
// makes it, and so the row, nan) is subtracted, then y = exp(x - m) / sum exp(x - m), or
// y = (x - m) - log(sum exp(x - m)) for log_softmax. A row of all -inf gives nan.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"

namespace graft::kernels::softmax {

// y = softmax (log_softmax when `log`) of x over its n-sized dim; y is allocated like x. float32
// rows with inner = 1 take the vectorised kernel (Note [Fast float32 softmax] in
// src/kernels/vec_f32.h); the rest a loop in T that vectorises over inner. `op` names the op in a
// dtype error and in the memory report.
void forward(const char* op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool log, Tensor& y);

}  // namespace graft::kernels::softmax
