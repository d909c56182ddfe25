// float32 2-D convolution on oneDNN (Debian's libdnnl, the library LibTorch's CPU convolutions run
// on), for the shapes where it beats im2col + gemm (Note [Convolution backends] in
// src/kernels/onednn_conv.cpp). Not installed.
//
// Every function works on plain, contiguous NCHW / OIHW buffers (weights (O, C/groups, kH, kW))
// for a run of `n` samples and runs single-threaded on the calling thread: graft's conv kernels
// split the batch over graft's pool themselves, in pieces that do not depend on the thread count,
// so the bits do not either.
#pragma once

#include <cstdint>

#include "im2col.h"

namespace graft::kernels::onednn {

// A 2-D convolution: `geo` describes one input image (channels = C), plus the output channels and
// the groups.
struct ConvShape {
  Conv2dGeometry geo;
  int64_t out_channels;
  int64_t groups;
};

// Whether graft was built with oneDNN (CMake option GRAFT_WITH_ONEDNN) and the backend has not
// been switched off with GRAFT_CONV_BACKEND=im2col in the environment (read once).
bool enabled();

// Whether oneDNN is graft's float32 backend for this convolution (enabled() and a shape where it
// wins; Note [Convolution backends]).
bool use_for(const ConvShape& s);

// y (n, O, oH, oW) = conv(x (n, C, H, W), w) + b (O) when b is not null.
void conv2d_forward(const ConvShape& s, int64_t n, const float* x, const float* w, const float* b, float* y);

// gx (n, C, H, W): the input gradient for grad_output gy (n, O, oH, oW). Overwrites gx.
void conv2d_backward_data(const ConvShape& s, int64_t n, const float* gy, const float* w, float* gx);

// gw (O, C/groups, kH, kW) = the weight gradient summed over the n samples. Overwrites gw.
void conv2d_backward_weights(const ConvShape& s, int64_t n, const float* gy, const float* x, float* gw);

// The bytes one call of the pass on n samples takes from graft's allocator while it runs: the
// operands reordered into the primitive's own layouts and its scratchpad (Note [oneDNN's buffers on
// meta] in src/kernels/conv.cpp).
enum class ConvPass { forward, backward_data, backward_weights };
int64_t buffer_bytes(ConvPass pass, const ConvShape& s, int64_t n, bool bias);

}  // namespace graft::kernels::onednn
