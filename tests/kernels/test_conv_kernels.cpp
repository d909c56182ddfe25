// The convolution kernels (src/kernels/conv.h) called directly on 2-D geometries, float32 and
// float64, against a plain convolution loop written here in double: the forward (with and without
// a bias), the input gradient, the weight gradient and the bias gradient, over strides, padding,
// dilation and groups (depthwise included), the 1x1 kernel that reads the image as its column
// matrix, a height of 1 (conv1d's path), a batch large enough for several weight-gradient blocks
// and forward chunks, and an empty batch. im2col + gemm for both dtypes; oneDNN too for float32
// when graft is built with it.
//
// The kernels add in T in gemm's order, the reference in double in its own order: sums are compared
// with a tolerance (tight for float64).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/kernels/conv.h"
#include "../../src/kernels/onednn_conv.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace conv_kernels_ref {

using kernels::Conv2dGeometry;
using kernels::conv::Backend;

template <class T>
DType dtype_of() {
  return std::is_same_v<T, float> ? kFloat32 : kFloat64;
}

struct ConvCase {
  int64_t N, C, H, W, O, kH, kW, sH, sW, pH, pW, dH, dW, G;
  bool bias;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

Conv2dGeometry geometry_of(const ConvCase& c) {
  return {.channels = c.C, .height = c.H, .width = c.W, .kernel_h = c.kH, .kernel_w = c.kW,
          .stride_h = c.sH, .stride_w = c.sW, .pad_h = c.pH, .pad_w = c.pW, .dilation_h = c.dH, .dilation_w = c.dW,
          .out_h = out_size(c.H, c.kH, c.sH, c.pH, c.dH), .out_w = out_size(c.W, c.kW, c.sW, c.pW, c.dW)};
}

// The reference: for every output (n, o, oh, ow) and every tap (c, i, j) of o's group that falls
// inside the image, input (n, g Cg + c, oh sH - pH + i dH, ow sW - pW + j dW) meets weight
// (o, c, i, j). forward: y += x w (plus b); input gradient: gx += gy w; weight gradient: gw += gy x.
struct Reference {
  std::vector<double> y, gx, gw, gb;
};

Reference reference(const ConvCase& c, const Conv2dGeometry& g, const std::vector<double>& x,
                    const std::vector<double>& w, const std::vector<double>& b, const std::vector<double>& gy) {
  const int64_t Cg = c.C / c.G, Og = c.O / c.G, oH = g.out_h, oW = g.out_w;
  Reference r;
  r.y.assign(static_cast<size_t>(c.N * c.O * oH * oW), 0.0);
  r.gx.assign(static_cast<size_t>(c.N * c.C * c.H * c.W), 0.0);
  r.gw.assign(static_cast<size_t>(c.O * Cg * c.kH * c.kW), 0.0);
  r.gb.assign(static_cast<size_t>(c.O), 0.0);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t o = 0; o < c.O; ++o)
      for (int64_t oh = 0; oh < oH; ++oh)
        for (int64_t ow = 0; ow < oW; ++ow) {
          const size_t yi = static_cast<size_t>(((n * c.O + o) * oH + oh) * oW + ow);
          double s = c.bias ? b[static_cast<size_t>(o)] : 0.0;
          const double go = gy[yi];
          r.gb[static_cast<size_t>(o)] += go;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t i = 0; i < c.kH; ++i)
              for (int64_t j = 0; j < c.kW; ++j) {
                const int64_t ih = oh * c.sH - c.pH + i * c.dH, iw = ow * c.sW - c.pW + j * c.dW;
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                const int64_t ch = (o / Og) * Cg + ci;
                const size_t xi = static_cast<size_t>(((n * c.C + ch) * c.H + ih) * c.W + iw);
                const size_t wi = static_cast<size_t>(((o * Cg + ci) * c.kH + i) * c.kW + j);
                s += x[xi] * w[wi];
                r.gx[xi] += go * w[wi];
                r.gw[wi] += go * x[xi];
              }
          r.y[yi] = s;
        }
  return r;
}

const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> all = {
      // N, C, H, W, O, kH, kW, sH, sW, pH, pW, dH, dW, G, bias
      {2, 3, 7, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},    // padded 3x3
      {2, 4, 9, 7, 6, 3, 2, 2, 3, 1, 0, 1, 1, 2, true},    // strides, two groups
      {1, 4, 10, 9, 4, 3, 3, 1, 2, 2, 1, 2, 3, 4, false},  // dilation, depthwise (groups = C), no bias
      {3, 4, 5, 6, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2, true},    // 1x1: the image is its own column matrix
      {2, 2, 1, 11, 3, 1, 4, 1, 2, 0, 2, 1, 1, 1, true},   // a height of 1 (conv1d's path)
      {8, 8, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, true}, // several weight-gradient blocks and chunks
      {0, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},    // empty batch: gw and gb stay 0
  };
  return all;
}

template <class T>
double tol() {
  return std::is_same_v<T, float> ? 2e-4 : 1e-11;
}

template <class T>
void check_conv(Backend backend) {
  const DType dt = dtype_of<T>();
  uint64_t seed = 7;
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE("case N " + std::to_string(c.N) + " C " + std::to_string(c.C) + " " + std::to_string(c.H) + "x" +
                 std::to_string(c.W) + " k " + std::to_string(c.kH) + "x" + std::to_string(c.kW) + " groups " +
                 std::to_string(c.G) + " dtype " + dtype_name(dt) +
                 (backend == Backend::onednn ? " oneDNN" : " im2col"));
    const Conv2dGeometry g = geometry_of(c);
    const Shape xs{c.N, c.C, c.H, c.W}, ws{c.O, c.C / c.G, c.kH, c.kW}, ys{c.N, c.O, g.out_h, g.out_w};
    const std::vector<double> xv = uniform_values(numel_of(xs), seed++), wv = uniform_values(numel_of(ws), seed++);
    const std::vector<double> bv = uniform_values(c.O, seed++), gyv = uniform_values(numel_of(ys), seed++);
    // The operands rounded to T, so that the reference sees the kernel's inputs.
    const Tensor x = make(xv, xs, dt), w = make(wv, ws, dt), gy = make(gyv, ys, dt);
    const Tensor b = c.bias ? make(bv, {c.O}, dt) : Tensor();
    const Reference r = reference(c, g, values(x), values(w), c.bias ? values(b) : bv, values(gy));

    Tensor y = empty(ys, TensorOptions(dt));
    kernels::conv::forward(x, w, b, g, c.G, backend, y);
    EXPECT_TRUE(all_close(y, r.y, ys, tol<T>(), tol<T>())) << "forward";

    Tensor gx = full(xs, 7.0, TensorOptions(dt));  // overwritten
    kernels::conv::input_backward(gy, w, g, c.G, backend, gx);
    EXPECT_TRUE(all_close(gx, r.gx, xs, tol<T>(), tol<T>())) << "input gradient";

    Tensor gw = zeros(ws, TensorOptions(dt));
    kernels::conv::weight_backward(gy, x, g, c.G, backend, gw);
    EXPECT_TRUE(all_close(gw, r.gw, ws, tol<T>(), tol<T>())) << "weight gradient";

    Tensor gb = full({c.O}, 7.0, TensorOptions(dt));  // overwritten
    kernels::conv::bias_backward(gy, gb);
    EXPECT_TRUE(all_close(gb, r.gb, {c.O}, tol<T>(), tol<T>())) << "bias gradient";
  }
}

}  // namespace conv_kernels_ref

TEST(ConvKernels, Im2colFloat64) { conv_kernels_ref::check_conv<double>(kernels::conv::Backend::im2col); }

TEST(ConvKernels, Im2colFloat32) { conv_kernels_ref::check_conv<float>(kernels::conv::Backend::im2col); }

TEST(ConvKernels, OneDnnFloat32) {
  if (!kernels::onednn::enabled()) GTEST_SKIP() << "graft built without oneDNN, or GRAFT_CONV_BACKEND=im2col";
  conv_kernels_ref::check_conv<float>(kernels::conv::Backend::onednn);
}

}  // namespace graft::test
