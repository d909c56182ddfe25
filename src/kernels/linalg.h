// The matrix product behind mm, bmm, addmm, linear and fused_linear (src/ops/linalg.cpp, which keeps
// the checks, the shape rules, the allocation, the lower precision panels and the nodes): float32
// and float64 through runtime::gemm (OpenBLAS), int64 by a plain loop. Not installed.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"

namespace graft::kernels::linalg {

// out[b] = alpha * a[b] @ bm[b] + beta * out[b] for each of `batch` matrices, T = float, double or
// int64_t (the dtype of a, bm and out). a is (n, k) or (B, n, k) and bm (k, m) or (B, k, m), B being
// batch or 1 (a 2-D operand or a batch of one is used for every b); any strides, read without a copy
// where gemm can (Note [BLAS operands without copies] in src/kernels/linalg.cpp). Both are detached
// (no autograd here). out is a contiguous tensor of batch * n * m elements; with beta == 0 its old
// contents are ignored, and k == 0 gives out = beta * out. `op` names the op in a size error.
// int64: each row of out[b] is set to beta * row, then alpha * a[b][i, p] * bm[b][p, :] is added for
// p = 0, 1, ..., k - 1 in that order.
template <class T>
void gemm_into(int64_t batch, int64_t n, int64_t m, int64_t k, T alpha, const Tensor& a, const Tensor& bm, T beta,
               Tensor& out, const char* op);

}  // namespace graft::kernels::linalg
