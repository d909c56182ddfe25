// The softmax kernel: src/kernels/softmax.h.
#include "softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../core/dispatch.h"
#include "vec_f32.h"

namespace graft::kernels::softmax {

namespace {

// Views x (contiguous) as (outer, n, inner) with n the size of `dim`, and applies the fused kernel
// to each row of n values. Vectorises over `inner`.
template <class T, bool Log>
void softmax_kernel(const T* in, T* out, int64_t outer, int64_t n, int64_t inner) {
  std::vector<T> mx(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* x = in + o * n * inner;
    T* y = out + o * n * inner;
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<T>::infinity());
    std::fill(sum.begin(), sum.end(), T(0));
    // The row max; a nan anywhere makes it (and so the whole row) nan, as in PyTorch.
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        const T v = x[j * inner + i];
        T& m = mx[static_cast<size_t>(i)];
        m = (v > m || v != v) ? v : m;
      }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        const T shifted = x[j * inner + i] - mx[static_cast<size_t>(i)];
        const T e = std::exp(shifted);
        sum[static_cast<size_t>(i)] += e;
        y[j * inner + i] = Log ? shifted : e;
      }
    if constexpr (Log) {
      for (int64_t i = 0; i < inner; ++i) sum[static_cast<size_t>(i)] = std::log(sum[static_cast<size_t>(i)]);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) y[j * inner + i] -= sum[static_cast<size_t>(i)];
    } else {
      for (int64_t i = 0; i < inner; ++i) sum[static_cast<size_t>(i)] = T(1) / sum[static_cast<size_t>(i)];
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) y[j * inner + i] *= sum[static_cast<size_t>(i)];
    }
  }
}

}  // namespace

void forward(const char* op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool log, Tensor& y) {
  if (x.dtype() == kFloat32 && inner == 1) {  // rows of n values (Note [Fast float32 softmax])
    softmax_rows_f32(x.data_ptr<float>(), y.data_ptr<float>(), outer, n, log);
    return;
  }
  dispatch_floating(x.dtype(), op, [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    if (log) softmax_kernel<T, true>(px, y.data_ptr<T>(), outer, n, inner);
    else softmax_kernel<T, false>(px, y.data_ptr<T>(), outer, n, inner);
  });
}

}  // namespace graft::kernels::softmax
