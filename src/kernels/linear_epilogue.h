// The element-wise halves of graft::fused_linear (Note [Fused linear + activation] in
// src/ops/linalg.cpp): after the matrix product, bias + activation in one pass over its output;
// in the backward, the activation's derivative and the bias gradient in one pass over the incoming
// gradient. float32 loops are compiled per vector width (vector_clones.h) and use the same scalar
// formulas as the activation ops (vec_f32.h), so a fused layer returns the bits of the
// unfused one. double loops use the double formulas of the activation ops.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"

namespace graft::kernels {

enum class EpilogueActivation : uint8_t { ReLU, Sigmoid, Tanh, Gelu, GeluTanh };

// True when the backward needs the pre-activation z (gelu), false when the output y suffices.
constexpr bool epilogue_saves_preactivation(EpilogueActivation act) {
  return act == EpilogueActivation::Gelu || act == EpilogueActivation::GeluTanh;
}

// y is a contiguous (rows, cols) matrix holding x W^T. For every element:
//   z = y[r, c] + bias[c]   (bias null: z = y[r, c]);   y[r, c] = act(z);   z_out[r, c] = z if z_out.
// Split over graft's threads by rows; the result does not depend on the thread count.
template <class T>
void bias_activation(EpilogueActivation act, T* y, const T* bias, T* z_out, int64_t rows, int64_t cols);

// gz[r, c] = g[r, c] * act'(s[r, c]), where s is the output y (ReLU, Sigmoid, Tanh) or the
// pre-activation z (gelu), all contiguous (rows, cols); and, if bias_grad is not null,
// bias_grad[c] = sum over r of gz[r, c], accumulated in double in row order. Split over threads by
// columns, so every column's sum has one order and the result does not depend on the thread count.
template <class T>
void activation_backward(EpilogueActivation act, const T* g, const T* s, T* gz, T* bias_grad, int64_t rows,
                         int64_t cols);

// The two passes on tensors of dtype T (float or double), for src/ops/linalg.cpp: y, z_out, g, s and gz
// contiguous (rows, cols), bias and bias_grad contiguous (cols). An undefined bias, z_out or bias_grad
// is the null pointer above.
template <class T>
void bias_activation(EpilogueActivation act, Tensor& y, const Tensor& bias, Tensor& z_out, int64_t rows,
                     int64_t cols) {
  bias_activation<T>(act, y.data_ptr<T>(), bias.defined() ? bias.data_ptr<T>() : nullptr,
                     z_out.defined() ? z_out.data_ptr<T>() : nullptr, rows, cols);
}
template <class T>
void activation_backward(EpilogueActivation act, const Tensor& g, const Tensor& s, Tensor& gz, Tensor& bias_grad,
                         int64_t rows, int64_t cols) {
  activation_backward<T>(act, g.data_ptr<T>(), s.data_ptr<T>(), gz.data_ptr<T>(),
                         bias_grad.defined() ? bias_grad.data_ptr<T>() : nullptr, rows, cols);
}

}  // namespace graft::kernels
