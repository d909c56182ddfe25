// The memory-efficient attention kernel behind scaled_dot_product_attention (float32, float64):
// Note [Memory-efficient attention] in src/kernels/attention.cpp. Not installed.
//
// Shapes (contiguous, row-major; B counts batch x heads, flattened by the op):
//   q (B, L, E), k (B, S, E), v (B, S, Ev), out (B, L, Ev), lse (B, L)
// The mask is additive (0 or -inf for a boolean mask, any value for a float mask), read through
// strides so that a broadcast (L, S) or (B, 1, S) mask is never expanded in memory.
//
// The Tensor-level entries at the end take the op's tensors and Options, bind the mask's strides
// and extract the pointers; the pointer-level ones (Args) are the kernel itself.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"

namespace graft::kernels::attention {

template <class T>
struct Args {
  int64_t batch = 0, q_len = 0, kv_len = 0, head_dim = 0, v_dim = 0;
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  // Additive mask: element (b, i, j) at mask[(b / mask_inner) * mask_sb_outer + (b % mask_inner) *
  // mask_sb_inner + i * mask_sl + j * mask_ss] (b = batch * heads + head, so a key-padding mask
  // (N, 1, 1, S) has mask_inner = heads and mask_sb_inner = 0); null: none.
  const T* mask = nullptr;
  int64_t mask_inner = 1, mask_sb_outer = 0, mask_sb_inner = 0, mask_sl = 0, mask_ss = 0;
  bool causal = false;  // key j takes part in query i's row only when j <= i (top-left aligned)
  T scale = 1;          // multiplies q k^T before the mask is added
  // Dropout on the probabilities, p in [0, 1): element (b, i, j) is kept when keep(seed, index, p)
  // with index = (b * q_len + i) * kv_len + j, and kept values are scaled by 1 / (1 - p).
  double dropout_p = 0;
  uint64_t seed = 0;
  // Tile sizes (query rows, key rows); 0 picks the defaults. The result's bits depend on them, never
  // on the thread count.
  int64_t q_tile = 0, kv_tile = 0;
};

// out = softmax(scale q k^T + mask) v (fully masked rows give 0) and lse = the log-sum-exp of each
// query row of scale q k^T + mask (+inf for a fully masked row, so that exp(s - lse) is 0 there).
template <class T>
void forward(const Args<T>& a, T* out, T* lse);

// The gradients of forward's out with respect to q, k and v, given grad_out (B, L, Ev) and
// forward's out and lse; recomputes the probabilities tile by tile.
template <class T>
void backward(const Args<T>& a, const T* out, const T* lse, const T* grad_out, T* grad_q, T* grad_k, T* grad_v);

// Whether dropout keeps element `index` of the call with this seed and probability p: a hash of
// (seed, index), so the backward (and the plain path, for its mask) regenerate it without storing.
bool keep(uint64_t seed, uint64_t index, double p);

// mask[i] = keep(seed, i, p) for i < n: the dropout mask the kernel uses, for the plain path.
void keep_mask(uint64_t seed, double p, int64_t n, bool* mask);

// ---- Tensor-level entries ----

// A call's mask and options, as the op checked and normalised them (Args' fields besides the sizes
// and the pointers).
struct Options {
  // Additive mask in q's dtype, broadcastable to (batch..., L, S); undefined: none. Read through
  // its strides when its non-trivial leading dims, all but the last, collapse into one stride
  // (broadcast or contiguous masks always do); any other layout is copied once for the call.
  Tensor mask;
  Shape batch;  // the leading dims that B flattens (batch..., heads)
  bool causal = false;
  double scale = 1, dropout_p = 0;
  uint64_t seed = 0;
  int64_t q_tile = 0, kv_tile = 0;
};

// forward and backward above on tensors: q (B, L, E), k (B, S, E), v (B, S, Ev) contiguous, float32
// or float64 (one dtype); out (B, L, Ev), lse (B, L), grad_out like out, and grad_q, grad_k, grad_v
// like q, k, v contiguous of that dtype; out, lse (forward) and grad_q, grad_k, grad_v (backward)
// are allocated by the caller and overwritten.
void forward(const Tensor& q, const Tensor& k, const Tensor& v, const Options& o, Tensor& out, Tensor& lse);
void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Options& o, const Tensor& out,
              const Tensor& lse, const Tensor& grad_out, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v);

// keep_mask above into a contiguous bool tensor: keep[i] = keep(seed, i, p) for i < keep.numel().
void keep_mask(uint64_t seed, double p, Tensor& keep);

// Default tile sizes (query rows, key rows).
inline constexpr int64_t kDefaultQTile = 64;
inline constexpr int64_t kDefaultKvTile = 128;

}  // namespace graft::kernels::attention
