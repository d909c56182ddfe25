// The reduction kernels behind sum's fast paths (src/ops/reduction.cpp) and the statistical
// reductions var, std, prod, max/min, amax/amin, argmax/argmin and logsumexp
// (src/ops/reduction_stats.cpp); the ops keep the checks, the shape rules, the allocation and the
// nodes. The general sum and mean are kernels::reduce (src/kernels/reduce.h). Not installed.
//
// Row reductions (the *_rows entries): x, of any layout, is read as rows: its reduced `dims`
// (sorted, as detail::reduction_dims gives them) are moved last (reduce_last_perm) and made
// contiguous, so row i, for output element i (row-major over the kept dims), is a contiguous run of
// the n = prod_{d in dims} x.size(d) values it reduces. out is contiguous, one element per row.
// Floating rows accumulate in double, rounded to the output type once. Each entry first dispatches
// on x's dtype (an unsupported dtype is a graft::Error naming `op`, on meta tensors too), then does
// nothing on meta (Note [Meta device]).
#pragma once

#include <cstdint>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::kernels::reduction {

// ---- sum's fast paths (x contiguous) ----

// y[j] = sum_{r < outer} x[r inner + j] (float32, float64): x (outer, inner) summed over its rows,
// one streaming pass into a float64 accumulator row (in row order), y (inner) rounded once.
void sum_leading(const Tensor& x, int64_t outer, int64_t inner, Tensor& y);
// float32: y[0] = the sum of all of x; or y[r] = the sum of row r of x (y.numel() rows of `cols`
// values). Note [Fast float32 sum] in src/kernels/vec_f32.h.
void sum_all_f32(const Tensor& x, Tensor& y);
void sum_each_row_f32(const Tensor& x, int64_t cols, Tensor& y);

// ---- row reductions ----

// The permutation of x's `ndim` dims that moves the reduced `dims` (sorted) last, keeping the
// order of the others.
std::vector<int64_t> reduce_last_perm(int64_t ndim, const std::vector<int64_t>& dims);

// var (sqrt of it, std, when take_sqrt) of each row, float32 and float64: two passes in double,
// the mean first, then sum (d^2) - (sum d)^2 / n over d = x - mean (the second term cancels the
// mean's rounding error), divided by n - correction; nan when n - correction <= 0.
void var_rows(const char* op, const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool take_sqrt,
              Tensor& out);

// The product of each row (op "prod"): in double for float32 and float64, in uint64 for int64
// (wrapping around on overflow, as in PyTorch).
void prod_rows(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out);

// The max (greater) or min of each row (float32, float64, int64, bool): the first extreme on ties;
// a nan wins (the first one).
void extreme_rows(const char* op, const Tensor& x, const std::vector<int64_t>& dims, bool greater, Tensor& out);
// Its index in the row (out int64; float32, float64, int64).
void arg_extreme_rows(const char* op, const Tensor& x, const std::vector<int64_t>& dims, bool greater, Tensor& out);
// Both: values (x's dtype) and indices (int64) (float32, float64, int64, bool).
void extreme_index_rows(const char* op, const Tensor& x, const std::vector<int64_t>& dims, bool greater, Tensor& values,
                        Tensor& indices);

// log sum exp of each row (op "logsumexp"; float32, float64), in double: m + log(sum exp(x - m))
// with m the row max, replaced by 0 when infinite (an all -inf or empty row gives -inf, a +inf
// element +inf, never inf - inf = nan).
void logsumexp_rows(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out);

// prod_{j != k} x_j for every element k of every row (op "prod"; float32, float64), in double:
// with no zero in the row, prod / x_k; with one, the product of the others at the zero and 0
// elsewhere; with two or more, 0. out (rows, n) contiguous: x's shape permuted by reduce_last_perm.
void prod_of_others_rows(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out);

// Whether some element of x is 0 (op "prod"; float32, float64).
bool has_zero(const Tensor& x);

}  // namespace graft::kernels::reduction
