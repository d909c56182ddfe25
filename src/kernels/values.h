// A tensor's values read into, or written from, a std::vector: for the few ops that decide on
// values on the host (a loss's class indices, batch_norm's running statistics). Not installed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "graft/core/factory.h"
#include "graft/core/tensor.h"

namespace graft::kernels {

// t's values as doubles, in row-major order (any floating or integer dtype, any layout).
inline std::vector<double> to_doubles(const Tensor& t) {
  const Tensor c = t.detach().to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// An int64 tensor's values, in row-major order (any layout).
inline std::vector<int64_t> to_int64s(const Tensor& t) {
  const Tensor c = t.detach().contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// A float64 (n) tensor holding v.
inline Tensor from_doubles(const std::vector<double>& v) {
  Tensor t = make_empty({static_cast<int64_t>(v.size())}, kFloat64);
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}

}  // namespace graft::kernels
