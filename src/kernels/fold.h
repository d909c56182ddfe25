// The loops of unfold / fold (src/ops/fold.cpp): PyTorch's F::unfold (ATen's im2col) and F::fold
// (ATen's col2im) on a batch, one sample at a time through the single-image im2col / col2im of
// src/kernels/im2col.h (Note [im2col layout]). float32 and float64; the op checks the arguments,
// computes the geometry, allocates, makes the inputs contiguous and dispatches on the dtype, and
// calls nothing on meta tensors. Not installed.
//
// Shapes (contiguous): img (N, C, H, W), cols (N, C * kH * kW, L) with L = oH * oW, the geometry's
// channels / height / width / out_h / out_w being C / H / W / oH / oW of one sample.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"
#include "im2col.h"

namespace graft::kernels::fold {

// cols = im2col of each sample of img (overwrites cols; padding reads as 0).
template <class T>
void unfold(const Tensor& img, Tensor& cols, const Conv2dGeometry& g);

// img += col2im of each sample of cols: every column entry is added back onto the input position
// it would have been read from (overlapping blocks sum). The caller zeroes img first.
template <class T>
void fold(const Tensor& cols, Tensor& img, const Conv2dGeometry& g);

}  // namespace graft::kernels::fold
