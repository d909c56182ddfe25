// The normalisation kernels behind batch_norm, layer_norm and group_norm (float32, float64): the
// statistics, the normalised output and the fused backward (Note [Normalisation kernels] in
// src/ops/normalization.cpp, which keeps the checks, the shape rules, the composites and the nodes).
// Not installed.
//
// Layouts (every tensor contiguous; statistics in float64, one per normalised group):
//   batch_norm  x (N, C, S): channel c is normalised over n < N, s < S; weight, bias (C)
//   layer_norm  x (R, M):    row r is normalised over its M values; weight, bias (M)
//   group_norm  x (N, C, S): group g of sample n, channels [g C/G, (g + 1) C/G), is normalised over
//                            its C/G S values; statistic n G + g; weight, bias (C)
// An undefined weight or bias is 1 or 0. On meta tensors nothing runs (Note [Meta device]).
#pragma once

#include <cstdint>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::kernels::normalization {

// mean, var (biased) and invstd = 1 / sqrt(var + eps) of each group.
struct Stats {
  std::vector<double> mean, var, invstd;
};

// The statistics of `groups` groups of outer * inner values each, the values of group g being
// x[(o * groups + g) * inner + i] for o < outer, i < inner (the shifted-data algorithm). `op`
// names the op in a dtype error and in the memory report.
Stats group_stats(const char* op, const Tensor& x, int64_t outer, int64_t groups, int64_t inner, double eps);

// y = (x - mean) * invstd * weight + bias, in the layouts above; y is allocated like x.
void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Stats& s, Tensor& y);
void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Stats& s, int64_t M,
                        Tensor& y);
void group_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Stats& s, int64_t G,
                        Tensor& y);

// The gradients of the forward above given g (like x) and the saved mean and invstd (float64):
// dx (allocated like x when need_x, else left undefined), and dweight = sum(g xhat), dbias = sum(g)
// in float64 (C, or M for layer_norm). batch_norm's dx uses the batch statistics' derivative when
// `training`, else dx = g weight invstd (running statistics). Formulas: Note [Normalisation kernels].
struct Grads {
  Tensor dx;
  std::vector<double> dweight, dbias;
};
Grads batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight, const Tensor& mean,
                          const Tensor& invstd, bool training, bool need_x);
Grads layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight, const Tensor& mean,
                          const Tensor& invstd, int64_t M, bool need_x);
Grads group_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight, const Tensor& mean,
                          const Tensor& invstd, int64_t G, bool need_x);

}  // namespace graft::kernels::normalization
