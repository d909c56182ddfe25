// The triangle kernels of triu / tril (src/ops/triangular_lerp.cpp): element (..., i, j) of each
// matrix (the last two dims) is kept when j - i >= diagonal (upper) or j - i <= diagonal (lower).
// Whole elements move as bytes and the rest become zero bytes, which is 0 (+0.0, false) in every
// dtype graft stores, so one loop serves them all. Not installed.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"

namespace graft::kernels::triangle {

// y (contiguous, x's sizes and dtype) = x's triangle, zeros elsewhere; x in any layout.
void copy(const Tensor& x, Tensor& y, int64_t diagonal, bool upper);

// Zeroes self's elements outside the triangle, in place (self's own strides).
void zero_outside(Tensor& self, int64_t diagonal, bool upper);

}  // namespace graft::kernels::triangle
