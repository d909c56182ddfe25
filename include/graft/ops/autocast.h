// Autocast: a scope in which the matrix products run in bfloat16 (or float16) with float32
// accumulation, modelled on torch.autocast(device_type="cpu", dtype=torch.bfloat16).
//
//   {
//     graft::AutocastGuard autocast(graft::kBFloat16);  // or graft::autocast::Guard
//     graft::Tensor loss = F::cross_entropy(model(x), y);
//   }
//   loss.backward();                                     // outside the scope, as in PyTorch
//
// Note [Autocast]
// Which ops. Under the guard, mm, addmm, bmm, matmul, linear and conv2d ("lower
// precision ops") accept operands that are any mix of float32 and the autocast dtype H and
//   1. round every operand (activations, weights, bias) to H, once, to nearest even;
//   2. multiply the rounded values in float32 (OpenBLAS sgemm on widened copies: a product of two
//      bfloat16 values is exact in float32, so this is float32 accumulation of exact products);
//   3. return the result rounded to H.
// An op with a float64 (or integer) operand is not autocast and runs as it would outside the guard.
// Outside autocast these ops also take operands that are all H (the same kernel), as PyTorch does.
// log_softmax, softmax and so cross_entropy are "float32 ops": under the guard an H input is
// converted to float32 first (their output is float32). relu has an H kernel, and max_pool2d pools
// H inputs exactly (through float32), so a ReLU CNN runs under the guard. Every other op has no
// H kernel and throws graft::Error naming the op; mixing an H tensor with a float32 one promotes to
// float32 (PyTorch's rule), so `h + bias_f32` works and `h + h` needs a .to(graft::kFloat32).
//
// The output dtype is H, deliberately, as in PyTorch: it is what halves the activation memory.
// The next layer would round its input to H anyway and relu is exact in H, so the H
// activations lose nothing that the following product would not lose, while relu saves a 2-byte
// output for backward instead of a 4-byte one.
//
// What is saved for backward. A lower precision op saves each operand as
//   - the operand itself when it is already H, or when it is a leaf (a parameter, an input batch):
//     a leaf is alive anyway, so saving it costs no memory, and backward rounds it to H again
//     (rounding is deterministic, so backward sees exactly the values forward used; the version
//     counter still catches a leaf changed in place in between);
//   - otherwise (a float32 activation produced by an earlier op) its H copy, half the bytes.
// Weights are never copied: the master weights stay float32, their gradients are float32, and
// nothing of 2 bytes per parameter is added to the graph. (PyTorch saves the H copy of the weight.)
//
// Backward. The incoming gradient g has the output's dtype H (the engine casts it there). With
// ar, br the rounded operands (widened to float32) the node computes, in float32,
//   mm / addmm:  d a = g @ br^T,   d b = ar^T @ g,   d bias = beta * g (summed to bias's shape)
//   conv2d:      the float32 convolution backward ops of Note [Convolution backward as ops] on ar, br
// and returns float32 gradients: a float32 input (a weight) gets its gradient without an extra
// rounding to H (PyTorch rounds it to bfloat16 and casts back), an H input gets it rounded once by
// the engine. This is the exact derivative of the computed bilinear map in the rounded operands
// (the rounding itself is treated as the identity, "straight through", as in PyTorch). The backward
// is written with recorded ops, so create_graph works.
//
// Gradients in H are exposed to underflow (float16's smallest subnormal is 6e-8): that is what
// amp::GradScaler is for. bfloat16 has float32's range and rarely needs it.
//
// The state is per thread (like PyTorch's); backward may run outside the guard.
#pragma once

#include "graft/core/dtype.h"

namespace graft {

// Enables autocast in `dtype` (kBFloat16 or kHalf) on this thread until destroyed, then restores
// the previous state; enabled = false disables it in a nested scope.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype = kBFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool prev_enabled_;
  DType prev_dtype_;
};

// torch.is_autocast_enabled() / torch.get_autocast_dtype("cpu") for this thread.
bool is_autocast_enabled();
DType get_autocast_dtype();
// The low-level switches the guard uses (torch.set_autocast_enabled / set_autocast_dtype).
void set_autocast_enabled(bool enabled);
void set_autocast_dtype(DType dtype);

namespace autocast {
using Guard = AutocastGuard;
}  // namespace autocast

}  // namespace graft
