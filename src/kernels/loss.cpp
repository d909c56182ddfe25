// The loss kernels: src/kernels/loss.h; the formulas are Note [Fused cross-entropy] in
// src/ops/loss.cpp.
#include "loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../core/dispatch.h"
#include "graft/core/dtype.h"

namespace graft::kernels::loss {

int64_t cross_entropy_forward(const Tensor& x, const Tensor& t, int64_t ignore_index, Reduce red, Tensor& lse,
                              Tensor& out) {
  const int64_t N = x.size(0), C = x.size(1);
  int64_t counted = 0;
  dispatch_floating(x.dtype(), "cross_entropy", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    const int64_t* pt = t.data_ptr<int64_t>();
    T* pl = lse.data_ptr<T>();
    T* po = out.data_ptr<T>();
    double total = 0;
    for (int64_t i = 0; i < N; ++i) {
      const T* row = px + i * C;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t c = 0; c < C; ++c) m = std::isnan(row[c]) || row[c] > m ? row[c] : m;  // NaN wins
      T sum = 0;
      for (int64_t c = 0; c < C; ++c) sum += std::exp(row[c] - m);
      // A row of -inf (m = -inf) gives lse = -inf - nan = nan, as log_softmax does.
      pl[i] = std::isinf(m) && m < 0 ? std::numeric_limits<T>::quiet_NaN() : m + std::log(sum);
      const bool ignored = pt[i] == ignore_index;
      const T loss = ignored ? T(0) : pl[i] - row[pt[i]];
      counted += ignored ? 0 : 1;
      if (red == Reduce::None) po[i] = loss;
      else total += static_cast<double>(loss);
    }
    if (red == Reduce::Sum) po[0] = static_cast<T>(total);
    if (red == Reduce::Mean) po[0] = static_cast<T>(total / static_cast<double>(counted));  // 0 / 0 = nan
  });
  return counted;
}

void cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& g, int64_t ignore_index,
                            Reduce red, double denom, Tensor& dx) {
  const int64_t rows = x.size(0), cols = x.size(1);
  dispatch_floating(x.dtype(), "NllLossBackward0", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    const int64_t* pt = t.data_ptr<int64_t>();
    const T* pl = lse.data_ptr<T>();
    const T* pg = g.data_ptr<T>();
    T* pd = dx.data_ptr<T>();
    for (int64_t i = 0; i < rows; ++i) {
      T* drow = pd + i * cols;
      if (pt[i] == ignore_index) {
        std::fill(drow, drow + cols, T(0));
        continue;
      }
      const T gi = (red == Reduce::None ? pg[i] : pg[0]) / static_cast<T>(denom);
      const T* row = px + i * cols;
      for (int64_t c = 0; c < cols; ++c) drow[c] = gi * std::exp(row[c] - pl[i]);
      drow[pt[i]] -= gi;
    }
  });
}

}  // namespace graft::kernels::loss
