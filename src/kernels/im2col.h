// im2col / col2im for 2-D convolution, vol2col / col2vol for 3-D (not installed).
//
// Note [im2col layout]
// One image (C, H, W), contiguous, becomes a matrix `cols` of (C * kH * kW) rows and (oH * oW)
// columns: row (c * kH + i) * kW + j holds, for every output position (oh, ow), the input value
// under kernel tap (i, j) of channel c, i.e. img[c, oh * sH - pH + i * dH, ow * sW - pW + j * dW],
// or 0 where that falls into the padding. A convolution is then weight (O, C*kH*kW) @ cols, and
// the rows of one group of channels are one contiguous block of cols. col2im is the adjoint: it
// adds every entry of cols back onto the input position it was read from (overlapping windows
// accumulate), so grad_input = col2im(weight^T @ grad_output).
#pragma once

#include <algorithm>
#include <cstdint>

namespace graft::kernels {

struct Conv2dGeometry {
  int64_t channels, height, width;      // the image
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
  int64_t out_h, out_w;
};

// The range [lo, hi) of output positions o with 0 <= o * stride - pad + offset < size.
inline void valid_output_range(int64_t size, int64_t stride, int64_t pad, int64_t offset, int64_t out,
                               int64_t& lo, int64_t& hi) {
  // o * stride >= pad - offset  ->  o >= ceil((pad - offset) / stride)
  const int64_t a = pad - offset;
  lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  // o * stride < size + pad - offset  ->  o <= floor((size + pad - offset - 1) / stride)
  const int64_t b = size + pad - offset - 1;
  hi = b < 0 ? 0 : b / stride + 1;
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
}

template <class T>
void im2col(const T* img, const Conv2dGeometry& g, T* cols) {
  const int64_t L = g.out_h * g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    const T* plane = img + c * g.height * g.width;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      int64_t oh_lo, oh_hi;
      valid_output_range(g.height, g.stride_h, g.pad_h, i * g.dilation_h, g.out_h, oh_lo, oh_hi);
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        T* row = cols + ((c * g.kernel_h + i) * g.kernel_w + j) * L;
        int64_t ow_lo, ow_hi;
        valid_output_range(g.width, g.stride_w, g.pad_w, j * g.dilation_w, g.out_w, ow_lo, ow_hi);
        std::fill(row, row + oh_lo * g.out_w, T(0));
        for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
          T* out = row + oh * g.out_w;
          const T* in = plane + (oh * g.stride_h - g.pad_h + i * g.dilation_h) * g.width;
          std::fill(out, out + ow_lo, T(0));
          const int64_t iw0 = j * g.dilation_w - g.pad_w;
          if (g.stride_w == 1) {
            std::copy(in + ow_lo + iw0, in + ow_hi + iw0, out + ow_lo);
          } else {
            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) out[ow] = in[ow * g.stride_w + iw0];
          }
          std::fill(out + ow_hi, out + g.out_w, T(0));
        }
        std::fill(row + oh_hi * g.out_w, row + L, T(0));
      }
    }
  }
}

// img += col2im(cols): the caller zeroes img first.
template <class T>
void col2im(const T* cols, const Conv2dGeometry& g, T* img) {
  const int64_t L = g.out_h * g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    T* plane = img + c * g.height * g.width;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      int64_t oh_lo, oh_hi;
      valid_output_range(g.height, g.stride_h, g.pad_h, i * g.dilation_h, g.out_h, oh_lo, oh_hi);
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const T* row = cols + ((c * g.kernel_h + i) * g.kernel_w + j) * L;
        int64_t ow_lo, ow_hi;
        valid_output_range(g.width, g.stride_w, g.pad_w, j * g.dilation_w, g.out_w, ow_lo, ow_hi);
        const int64_t iw0 = j * g.dilation_w - g.pad_w;
        for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
          const T* in = row + oh * g.out_w;
          T* out = plane + (oh * g.stride_h - g.pad_h + i * g.dilation_h) * g.width;
          for (int64_t ow = ow_lo; ow < ow_hi; ++ow) out[ow * g.stride_w + iw0] += in[ow];
        }
      }
    }
  }
}

// Note [vol2col layout]
// The 3-D form of Note [im2col layout]: one volume (C, D, H, W), contiguous, becomes `cols` of
// (C * kD * kH * kW) rows and (oD * oH * oW) columns; row ((c * kD + a) * kH + i) * kW + j holds,
// for every output position (od, oh, ow), img[c, od * sD - pD + a * dD, oh * sH - pH + i * dH,
// ow * sW - pW + j * dW], or 0 in the padding. col2vol is its adjoint (adds back, the caller
// zeroes img first). Not a hot path: written for clarity, one row at a time.
struct Conv3dGeometry {
  int64_t channels, depth, height, width;  // the volume
  int64_t kernel_d, kernel_h, kernel_w;
  int64_t stride_d, stride_h, stride_w;
  int64_t pad_d, pad_h, pad_w;
  int64_t dilation_d, dilation_h, dilation_w;
  int64_t out_d, out_h, out_w;
};

// Calls f(row, line, ow_lo, ow_hi, in0) for every row of cols and every output line (od, oh) of it
// that the volume covers: cols[row * L + line + ow] reads img[in0 + ow * stride_w], ow in [ow_lo, ow_hi).
template <class Fn>
void vol_lines(const Conv3dGeometry& g, Fn&& f) {
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t a = 0; a < g.kernel_d; ++a) {
      int64_t od_lo, od_hi;
      valid_output_range(g.depth, g.stride_d, g.pad_d, a * g.dilation_d, g.out_d, od_lo, od_hi);
      for (int64_t i = 0; i < g.kernel_h; ++i) {
        int64_t oh_lo, oh_hi;
        valid_output_range(g.height, g.stride_h, g.pad_h, i * g.dilation_h, g.out_h, oh_lo, oh_hi);
        for (int64_t j = 0; j < g.kernel_w; ++j) {
          int64_t ow_lo, ow_hi;
          valid_output_range(g.width, g.stride_w, g.pad_w, j * g.dilation_w, g.out_w, ow_lo, ow_hi);
          const int64_t row = ((c * g.kernel_d + a) * g.kernel_h + i) * g.kernel_w + j;
          for (int64_t od = od_lo; od < od_hi; ++od)
            for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
              const int64_t id = od * g.stride_d - g.pad_d + a * g.dilation_d;
              const int64_t ih = oh * g.stride_h - g.pad_h + i * g.dilation_h;
              const int64_t in0 = ((c * g.depth + id) * g.height + ih) * g.width + j * g.dilation_w - g.pad_w;
              f(row, (od * g.out_h + oh) * g.out_w, ow_lo, ow_hi, in0);
            }
        }
      }
    }
}

template <class T>
void vol2col(const T* img, const Conv3dGeometry& g, T* cols) {
  const int64_t L = g.out_d * g.out_h * g.out_w;
  std::fill(cols, cols + g.channels * g.kernel_d * g.kernel_h * g.kernel_w * L, T(0));
  vol_lines(g, [&](int64_t row, int64_t line, int64_t ow_lo, int64_t ow_hi, int64_t in0) {
    T* out = cols + row * L + line;
    for (int64_t ow = ow_lo; ow < ow_hi; ++ow) out[ow] = img[in0 + ow * g.stride_w];
  });
}

// img += col2vol(cols): the caller zeroes img first.
template <class T>
void col2vol(const T* cols, const Conv3dGeometry& g, T* img) {
  const int64_t L = g.out_d * g.out_h * g.out_w;
  vol_lines(g, [&](int64_t row, int64_t line, int64_t ow_lo, int64_t ow_hi, int64_t in0) {
    const T* in = cols + row * L + line;
    for (int64_t ow = ow_lo; ow < ow_hi; ++ow) img[in0 + ow * g.stride_w] += in[ow];
  });
}

}  // namespace graft::kernels
