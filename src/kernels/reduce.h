// Reductions over any set of dims.
//
// reduce<T, R>(x, dims, keepdim, out_dtype, init, step, finish): the reduced dims are moved last
// and made contiguous (a copy only when the layout needs one), so each output element reduces one
// contiguous run of `n` values: acc = init; acc = step(acc, value, k) for k in [0, n); out = finish(acc, n).
// `k` is the row-major index over the reduced dims (the index along the dim for one-dim reductions).
#pragma once

#include <vector>

#include "graft/core/factory.h"
#include "graft/core/tensor.h"

namespace graft::kernels {

template <class T, class R, class Init, class Step, class Finish>
Tensor reduce(const Tensor& x, const std::vector<int64_t>& dims, const Shape& out_shape, DType out_dtype, Init&& init,
              Step&& step, Finish&& finish) {
  if (x.is_meta()) return make_empty(out_shape, out_dtype, Device(DeviceType::Meta));  // Note [Meta device]
  std::vector<int64_t> perm;
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;
  int64_t n = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!reduced[static_cast<size_t>(d)]) perm.push_back(d);
  for (int64_t d : dims) {
    perm.push_back(d);
    n *= x.size(d);
  }
  Tensor xp = x.detach();
  if (x.dim() > 0) xp = xp.permute(perm);
  xp = xp.contiguous();
  Tensor out = make_empty(out_shape, out_dtype);
  const T* px = static_cast<const T*>(xp.data_ptr());
  R* po = static_cast<R*>(out.data_ptr());
  const int64_t m = out.numel();
  for (int64_t i = 0; i < m; ++i) {
    auto acc = init();
    const T* row = px + i * n;
    for (int64_t k = 0; k < n; ++k) acc = step(acc, row[k], k);
    po[i] = static_cast<R>(finish(acc, n));
  }
  return out;
}

}  // namespace graft::kernels
