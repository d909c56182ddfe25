// Tensor-level entries of the float32 array kernels (vec_f32.h) for the ops' fast paths
// (src/ops/arithmetic.cpp, src/ops/elementwise.cpp): the op checks that its tensors are contiguous
// float32 and not meta, and allocates the result; these pass their memory to the array function,
// which gives the bits of the scalar formulas (Note [Fast float32 kernels]). Not installed.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"
#include "vec_f32.h"

namespace graft::kernels {

// y = f(x) by an array kernel f(const float* in, float* out, int64_t n); x and y of x.numel() values.
template <class F>
void apply_f32(F&& f, const Tensor& x, Tensor& y) {
  f(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
}

// out = f(a, b) by an array kernel f(const float* a, const float* b, float* out, int64_t n) (the fused
// backward passes: a = g, b = the saved tensor); a, b and out of a.numel() values.
template <class F>
void apply_f32(F&& f, const Tensor& a, const Tensor& b, Tensor& out) {
  f(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), a.numel());
}

// y = relu(x), gelu(x), gelu_tanh(x) of x's x.numel() values (the array forms in vec_f32.h).
inline void relu_f32(const Tensor& x, Tensor& y) { relu_f32(x.data_ptr<float>(), y.data_ptr<float>(), x.numel()); }
inline void gelu_f32(const Tensor& x, Tensor& y) { gelu_f32(x.data_ptr<float>(), y.data_ptr<float>(), x.numel()); }
inline void gelu_tanh_f32(const Tensor& x, Tensor& y) {
  gelu_tanh_f32(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
}

// out = a op b elementwise, a and b of one shape (Add/Sub: a +- alpha * b).
inline void binary_f32(BinaryOp op, const Tensor& a, const Tensor& b, float alpha, Tensor& out) {
  binary_f32(op, a.data_ptr<float>(), b.data_ptr<float>(), alpha, out.data_ptr<float>(), a.numel());
}

// out = a op s.
inline void binary_scalar_f32(BinaryOp op, const Tensor& a, float s, Tensor& out) {
  binary_scalar_f32(op, a.data_ptr<float>(), s, out.data_ptr<float>(), a.numel());
}

// out = a op v for a 0-dim b: v = alpha * b for Add/Sub (one float product, rounded as the generic
// loop rounds it), v = b for Mul/Div.
inline void binary_0dim_f32(BinaryOp op, const Tensor& a, const Tensor& b, float alpha, Tensor& out) {
  const float* pb = b.data_ptr<float>();
  const bool scaled = op == BinaryOp::Add || op == BinaryOp::Sub;
  const float v = scaled ? alpha * pb[0] : pb[0];
  binary_scalar_f32(op, a.data_ptr<float>(), v, out.data_ptr<float>(), a.numel());
}

// a is [rows, cols] and b holds cols values broadcast over the rows: out = a op (alpha *) b.
inline void binary_row_f32(BinaryOp op, const Tensor& a, const Tensor& b, float alpha, Tensor& out, int64_t rows,
                           int64_t cols) {
  binary_row_f32(op, a.data_ptr<float>(), b.data_ptr<float>(), alpha, out.data_ptr<float>(), rows, cols);
}

}  // namespace graft::kernels
