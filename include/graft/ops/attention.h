// Choosing how scaled_dot_product_attention (graft/ops/ops.h) runs, as torch.nn.attention's
// sdpa_kernel context manager does in PyTorch 2.x:
//
//   {
//     graft::SDPBackendGuard math(graft::SDPBackend::kMath);  // the plain formula, for reference
//     y = graft::scaled_dot_product_attention(q, k, v);
//   }
//
// The two backends (Note [Memory-efficient attention] in src/kernels/attention.cpp):
//   kEfficientAttention  walks the keys tile by tile with an online softmax; saves the output and
//                        one log-sum-exp per query row, O(L E) per head; its backward recomputes
//                        the probabilities tile by tile. float32 and float64 (bfloat16/float16
//                        through float32, as a lower precision op under autocast). Its backward
//                        with create_graph = true is the plain formula's, so double backward works.
//                        It gives no gradient to attn_mask.
//   kMath                the formula as graft ops: materialises the (L, S) scores and
//                        probabilities and saves them, O(L S) per head. Gives attn_mask a gradient.
// kDefault picks the memory-efficient kernel unless a float attn_mask requires grad.
// Both treat a fully masked row alike (output 0, no gradient) and draw dropout from the same
// hash of (seed, position), so with one seed they agree to float rounding.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"

namespace graft {

enum class SDPBackend { kDefault, kMath, kEfficientAttention };

// Sets the backend on this thread until destroyed, then restores the previous one. q_tile and
// kv_tile set the kernel's tile sizes (query rows, key rows; 0 keeps the defaults, 64 and 128):
// for tests and tuning, since the bits of the result depend on them.
class SDPBackendGuard {
 public:
  explicit SDPBackendGuard(SDPBackend backend, int64_t q_tile = 0, int64_t kv_tile = 0);
  ~SDPBackendGuard();
  SDPBackendGuard(const SDPBackendGuard&) = delete;
  SDPBackendGuard& operator=(const SDPBackendGuard&) = delete;

 private:
  SDPBackend previous_;
  int64_t previous_q_tile_, previous_kv_tile_;
};

// The backend set on this thread (kDefault unless a guard says otherwise).
SDPBackend current_sdp_backend();

// The plain formula's pieces, shared with nn::MultiheadAttention so that its weights
// (need_weights = true) and masks are the op's own (src/ops/attention.cpp). Compositions of graft
// ops with no node of their own, not ops of the op list.
namespace detail {
// A bool mask in scaled_dot_product_attention's convention (true = may attend) as the additive
// scores 0 / -inf of `dtype`.
Tensor attention_additive_mask(const Tensor& keep, DType dtype);
// p = softmax(q k^T scale + mask) over the keys, shape (..., L, S): mask undefined, bool (true =
// may attend) or additive, broadcastable to the scores; is_causal masks key j > query i. A row
// whose scores are all -inf gives 0 (the "safe softmax"), as the op does.
Tensor attention_probs(const Tensor& q, const Tensor& k, const Tensor& mask, bool is_causal, double scale);
}  // namespace detail

}  // namespace graft
