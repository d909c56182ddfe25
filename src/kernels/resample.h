// The separable index-map kernel behind the upsample ops (nearest, linear, bicubic; 1-D to 3-D)
// and the reflect / replicate / circular pads, and its adjoint (Note [Resampling as separable index maps] in
// src/ops/resample.cpp, which builds the maps and keeps the checks, the shape rules and the nodes).
// Not installed.
//
// Layouts (contiguous): x (planes, d.in, h.in, w.in) and y (planes, d.out, h.out, w.out), the leading
// dims of the op's tensors flattened into planes; a 2-D op has d, a 1-D op d and h, the identity
// map of size 1.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::kernels::resample {

// One spatial dim's map: output position o reads input positions idx[o * taps + t] with weight
// w[o * taps + t].
struct Axis {
  int64_t in = 1, out = 1, taps = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
};

// y[p, od, oh, ow] = sum_c wd[od][c] sum_a wh[oh][a] sum_b ww[ow][b] x[p, id[od][c], ih[oh][a], iw[ow][b]]
// (the weights cast to the tensors' dtype: float32, float64 or int64). y is allocated by the caller; `op` names the op in a
// dtype error and in the memory report. On a meta y nothing runs (Note [Meta device]).
void forward(const char* op, const Axis& d, const Axis& h, const Axis& w, const Tensor& x, Tensor& y,
             int64_t planes);

// The adjoint: gx[p, id, ih, iw] += wd wh ww g[p, od, oh, ow] over the same taps (float32, float64), gx zeroed
// by the caller. On a meta gx nothing runs.
void adjoint(const char* op, const Axis& d, const Axis& h, const Axis& w, const Tensor& g, Tensor& gx,
             int64_t planes);

// The 2-D forms (d the identity map of size 1).
void forward(const char* op, const Axis& h, const Axis& w, const Tensor& x, Tensor& y, int64_t planes);
void adjoint(const char* op, const Axis& h, const Axis& w, const Tensor& g, Tensor& gx, int64_t planes);

}  // namespace graft::kernels::resample
