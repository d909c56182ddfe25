// The 2-D pooling kernels behind max_pool2d, avg_pool2d, adaptive_avg_pool2d and
// adaptive_max_pool2d (and the 1-D pools, run on a height of 1), forward and backward, float32 and
// float64. The ops (src/ops/pooling.cpp) check the arguments, compute the geometry, allocate the
// outputs, make the inputs contiguous and dispatch on the dtype; these loops read and write the
// elements. Not installed.
//
// Shapes (contiguous, row-major): an input x (N, C, H, W) is N C planes of H x W; an output
// (N, C, oH, oW) holds one value per window. Argmax indices (int64) are flat within each input
// plane: ih * W + iw. The backward entries add into grad_in, which the caller zero-fills.
// Window order is row by row; a max pool keeps the first maximum, and a nan counts as a maximum (a
// later nan takes over), as in PyTorch.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"

namespace graft::kernels::pooling {

// Window geometry of a (max or avg) pool on (planes, H, W) images: kernel (kH, kW), stride
// (sH, sW), padding (pH, pW), dilation (dH, dW); window (oh, ow) starts at input row
// oh sH - pH and column ow sW - pW.
struct PoolGeom {
  int64_t planes, H, W, oH, oW;
  int64_t kH, kW, sH, sW, pH, pW, dH = 1, dW = 1;
};

// avg_pool2d's divisor options.
struct AvgOpts {
  bool count_include_pad;
  int64_t divisor;  // 0: none
};

// y = the maximum of each window (padding never wins), idx = its flat index in the plane.
// x (planes, H, W), y and idx (planes, oH, oW).
template <class T>
void max_pool2d_forward(const Tensor& x, Tensor& y, Tensor& idx, const PoolGeom& g);

// grad_in (N, C, H, W) += grad_out (N, C, oH, oW) scattered to idx (N, C, oH, oW); an index outside
// [0, H W) is skipped. Also adaptive_max_pool2d's backward.
template <class T>
void max_pool2d_backward(const Tensor& grad_out, const Tensor& idx, Tensor& grad_in);

// y = the sum of each window clipped to the input, over its divisor: o.divisor if non-zero, else
// the window's size clipped to the padded input (count_include_pad) or to the input itself.
// x (planes, H, W), y (planes, oH, oW).
template <class T>
void avg_pool2d_forward(const Tensor& x, Tensor& y, const PoolGeom& g, const AvgOpts& o);

// grad_in (planes, H, W) += grad_out / divisor spread over each window: the adjoint of forward.
template <class T>
void avg_pool2d_backward(const Tensor& grad_out, Tensor& grad_in, const PoolGeom& g, const AvgOpts& o);

// Adaptive windows: window i of n over a size-s dim is [floor(i s / n), ceil((i + 1) s / n)).
// y (N, C, oH, oW) = the mean of each window of x (N, C, H, W).
template <class T>
void adaptive_avg_pool2d_forward(const Tensor& x, Tensor& y);

// grad_in (N, C, H, W) += grad_out (N, C, oH, oW) / window size, spread over each window.
template <class T>
void adaptive_avg_pool2d_backward(const Tensor& grad_out, Tensor& grad_in);

// y, idx (N, C, oH, oW): the maximum of each adaptive window of x (N, C, H, W) and its flat index
// in the plane (ties and nan as max_pool2d_forward).
template <class T>
void adaptive_max_pool2d_forward(const Tensor& x, Tensor& y, Tensor& idx);

}  // namespace graft::kernels::pooling
