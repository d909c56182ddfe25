// The activations of issue 32 as ATen-style ops, spelt as LibTorch's torch::prelu, torch::celu,
// torch::threshold, ... (src/ops/activation2.cpp): prelu, rrelu, celu, threshold, hardshrink,
// softshrink, log_sigmoid, and softsign / tanhshrink (which ATen lacks: Python composes them, and
// graft::nn::functional's F::softsign / F::tanhshrink are these). graft::nn::functional's
// F::prelu, F::rrelu, ... and the nn modules PReLU, RReLU, ... call them.
// The in-place forms (celu_, threshold_, rrelu_) overwrite `self` with the result and return it.
#pragma once

#include "graft/core/generator.h"
#include "graft/core/tensor.h"

namespace graft {

// x where x > 0, weight * x elsewhere. weight holds 1 value (shared by every channel) or one per
// channel, the channels being dim 1 of input (dim 0 has none: a 1-D input is one channel, as
// PyTorch's); weight is 0-dim or 1-D. Differentiable in input and weight.
Tensor prelu(const Tensor& input, const Tensor& weight);

// Randomized leaky ReLU. training: each element x <= 0 is multiplied by its own slope drawn
// uniformly from [lower, upper] with `generator` (graft's default generator when null), and the
// gradient there is that slope; evaluation: leaky_relu with slope (lower + upper) / 2.
Tensor rrelu(const Tensor& input, double lower = 1.0 / 8.0, double upper = 1.0 / 3.0, bool training = false,
             Generator* generator = nullptr);
Tensor& rrelu_(Tensor& self, double lower = 1.0 / 8.0, double upper = 1.0 / 3.0, bool training = false,
               Generator* generator = nullptr);

// max(0, x) + min(0, alpha (exp(x / alpha) - 1)); alpha must not be 0.
Tensor celu(const Tensor& input, double alpha = 1.0);
Tensor& celu_(Tensor& self, double alpha = 1.0);

// x where x > threshold, value elsewhere (float32, float64 or int64; the gradient is 0 below).
Tensor threshold(const Tensor& input, double threshold, double value);
Tensor& threshold_(Tensor& self, double threshold, double value);

// 0 where -lambd <= x <= lambd, x elsewhere.
Tensor hardshrink(const Tensor& input, double lambd = 0.5);
// x - lambd above lambd, x + lambd below -lambd, +0 between (and for NaN, as PyTorch 1.13's);
// lambd must be >= 0.
Tensor softshrink(const Tensor& input, double lambd = 0.5);
// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), computed without overflow.
Tensor log_sigmoid(const Tensor& input);
// x / (1 + |x|) and x - tanh(x), composed of recorded ops as PyTorch's Python does.
Tensor softsign(const Tensor& input);
Tensor tanhshrink(const Tensor& input);

}  // namespace graft
