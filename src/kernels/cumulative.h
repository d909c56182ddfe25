// The scan kernel behind cumsum and cumprod (float32, float64, int64; src/ops/cumulative.cpp keeps
// the dtype rule, the allocation and the nodes). Not installed.
//
// Layout: x and y contiguous, of one dtype, viewed as (outer, n, inner) with n the size of the
// scanned dim. Each of the outer * inner lines of n values (stride inner) is scanned from its
// start, or from its end when `reverse`: y_k = x_0 + ... + x_k (or x_0 ... x_k for a product),
// accumulated in double for floating types and in uint64 for int64 (wrapping on overflow, without
// UB), each partial result rounded to T once.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"

namespace graft::kernels::cumulative {

// y = the running sum (product = false) or product of x along its n-sized dim, from the end when
// `reverse`. `op` names the op in a dtype error and in the memory report.
void scan(const char* op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool product, bool reverse,
          Tensor& y);

}  // namespace graft::kernels::cumulative
