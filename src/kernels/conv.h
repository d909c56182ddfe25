// The convolution kernels behind conv1d, conv2d, conv3d and conv_transpose{1,2}d (float32,
// float64): the forward, the input gradient (Bx), the weight gradient (Bw) and the bias gradient of
// Note [Convolution backward as ops] in src/ops/conv.cpp, which keeps the checks, the shape rules,
// the allocation, the choice of backend and the recorded nodes. Not installed.
//
// Layouts (every tensor contiguous, one floating dtype; `geo` describes one sample, channels = C):
//   x (N, C, in...), w (O, C/groups, k...), b (O) or undefined, y / g (N, O, out...)
// with in... / k... / out... the geometry's spatial, kernel and output sizes (2-D: Conv2dGeometry,
// Note [im2col layout]; 3-D: Conv3dGeometry, Note [vol2col layout], both in src/kernels/im2col.h).
// Each entry runs im2col (vol2col) + gemm, or oneDNN when the op picks it (float32 2-D only: Note
// [Convolution backends] in src/kernels/onednn_conv.cpp); the bits never depend on the thread
// count (Note [Convolution over threads] in src/kernels/conv.cpp). Nothing runs on meta tensors:
// the op returns before calling.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"
#include "im2col.h"

namespace graft::kernels::conv {

// im2col / vol2col + gemm (every dtype and dimension), or oneDNN (float32, Conv2dGeometry only).
enum class Backend { im2col, onednn };

// y (N, O, out...) = conv(x, w) + b (b undefined: no bias). Overwrites y (allocated by the caller).
void forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& geo, int64_t groups,
             Backend backend, Tensor& y);
void forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv3dGeometry& geo, int64_t groups,
             Backend backend, Tensor& y);

// gx (N, C, in...) = Bx(g, w), the input gradient for grad_output g (N, O, out...). Overwrites gx.
void input_backward(const Tensor& g, const Tensor& w, const Conv2dGeometry& geo, int64_t groups, Backend backend,
                    Tensor& gx);
void input_backward(const Tensor& g, const Tensor& w, const Conv3dGeometry& geo, int64_t groups, Backend backend,
                    Tensor& gx);

// gw (O, C/groups, k...) += Bw(g, x), the weight gradient for grad_output g (N, O, out...) and input
// x (N, C, in...), summed over the batch in fixed blocks (Note [Convolution weight gradient in
// blocks] in src/kernels/conv.cpp). The caller zeroes gw; N = 0 leaves it as it is.
void weight_backward(const Tensor& g, const Tensor& x, const Conv2dGeometry& geo, int64_t groups, Backend backend,
                     Tensor& gw);
void weight_backward(const Tensor& g, const Tensor& x, const Conv3dGeometry& geo, int64_t groups, Backend backend,
                     Tensor& gw);

// On the meta device: the buffers the backend takes from graft's allocator while this pass of the
// convolution runs on the CPU on N samples, taken as one meta storage and given back, so that the
// meta device's accounting sees the CPU's peak (Note [oneDNN's buffers on meta] in conv.cpp).
// Nothing for im2col (its column buffers are not graft's memory).
enum class Pass { forward, input_backward, weight_backward };
void meta_buffers(Pass pass, const Conv2dGeometry& geo, int64_t out_channels, int64_t groups, int64_t N, bool bias,
                  Backend backend);

// gb (O) = g (N, O, out...) summed over N and the spatial dims: each (n, o) plane summed in the
// dtype (float32: sum_rows_f32 of src/kernels/vec_f32.h), the planes of a channel added in double
// in sample order. Overwrites gb.
void bias_backward(const Tensor& g, Tensor& gb);

}  // namespace graft::kernels::conv
