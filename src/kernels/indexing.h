// The indexing kernels behind index_select, index_add, gather, scatter_add, embedding, one_hot and
// Tensor::index / index_put_ (src/ops/indexing.cpp, src/ops/tensor_indexing.cpp): plain loops over
// contiguous CPU tensors. The ops keep the checks, shape rules, allocation and autograd nodes; they
// hand these entries contiguous tensors of the kernel's dtype and indices already checked to be in
// range. Not installed.
//
// The entries that dispatch over dtypes do so as the ops did (dispatch_all, or dispatch_floating
// for padding_keep, under the op's name), and return without touching memory when their output is
// on the meta device (Note [Meta device]), after the dtype check, so a meta call still rejects a
// dtype the kernel lacks.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/core/scalar.h"
#include "graft/core/tensor.h"

namespace graft::kernels::indexing {

// A contiguous tensor seen as (outer, n, inner) around the indexed dim d: outer is the product of
// the sizes before d, n the size of d, inner the product of the sizes after d.
struct Slices {
  int64_t outer = 1, n = 1, inner = 1;
};

// The values of a contiguous CPU int64 tensor, in row-major order.
std::vector<int64_t> read_indices(const Tensor& index);

// out[i] = values[i] for i < values.size(); out is a contiguous CPU int64 tensor of that many
// elements.
void write_indices(const std::vector<int64_t>& values, const Tensor& out);

// The positions i (ascending) where mask[i] is true; mask is a contiguous CPU bool tensor, read in
// row-major order.
std::vector<int64_t> true_positions(const Tensor& mask);

// index_select along d: with src seen as (s.outer, s.n, s.inner) and out as (s.outer, m, s.inner),
// m = idx.size(), out[o, j, :] = src[o, idx[j], :]. float32, float64, int64, bool (dispatched as
// "index_select"); out must not be on meta (the op returns before). Every idx[j] in [0, s.n).
void index_select(const Tensor& src, const std::vector<int64_t>& idx, Slices s, const Tensor& out);

// index_add along d, in place: with out seen as (s.outer, s.n, s.inner) and source as
// (s.outer, m, s.inner), m = idx.size(), for o, then j, then i in increasing order:
//   out[o, idx[j], i] += alpha * source[o, j, i]   (bool: out = out || (alpha && source)).
// Duplicate indices accumulate in j's order. out and source share out's dtype: float32, float64,
// int64, bool (dispatched as "index_add").
void index_add(const Tensor& out, const Tensor& source, const std::vector<int64_t>& idx, Slices s, const Scalar& alpha);

// gather along d: for every position p of index (row-major, k its rank there),
//   out[k] = src[p with p[d] replaced by idx[k]];
// src and index have the same rank (>= 1), idx holds index's values, out has index's numel.
// float32, float64, int64, bool (dispatched on out's dtype as "gather").
void gather(const Tensor& src, int64_t d, const Tensor& index, const std::vector<int64_t>& idx, const Tensor& out);

// scatter_add along d, in place: for every position p of index in row-major order (k its rank),
//   out[p with p[d] replaced by idx[k]] += src[p]   (bool: ||).
// out, src and index have the same rank (>= 1); duplicate indices accumulate in k's order. out and
// src share out's dtype: float32, float64, int64, bool (dispatched as "scatter_add").
void scatter_add(const Tensor& out, int64_t d, const Tensor& index, const std::vector<int64_t>& idx, const Tensor& src);

// embedding's padding mask: keep[i] = 0 where ids[i] == padding_idx, else 1; keep is a contiguous
// float32 or float64 tensor of ids.size() elements (dispatched as "embedding").
void padding_keep(const std::vector<int64_t>& ids, int64_t padding_idx, const Tensor& keep);

// one_hot: out[i * num_classes + classes[i]] = 1 for every i; out is a contiguous CPU int64 tensor
// of classes.size() * num_classes elements, zero on entry, and every class in [0, num_classes).
void one_hot(const std::vector<int64_t>& classes, int64_t num_classes, const Tensor& out);

}  // namespace graft::kernels::indexing
