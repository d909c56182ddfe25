// The scan kernel: src/kernels/cumulative.h.
#include "cumulative.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "../core/dispatch.h"

namespace graft::kernels::cumulative {

namespace {

// Accumulator of T: double for floating types, uint64 for int64 (wrapping on overflow, without UB).
template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <bool Product, class T>
void scan_loop(const T* px, T* py, int64_t outer, int64_t n, int64_t inner, bool reverse) {
  std::vector<Acc<T>> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), Product ? Acc<T>(1) : Acc<T>(0));
    for (int64_t s = 0; s < n; ++s) {
      const int64_t k = reverse ? n - 1 - s : s;
      const int64_t base = (o * n + k) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        Acc<T>& a = acc[static_cast<size_t>(i)];
        const auto v = static_cast<Acc<T>>(px[base + i]);
        if constexpr (Product) a *= v;
        else a += v;
        py[base + i] = static_cast<T>(a);
      }
    }
  }
}

}  // namespace

void scan(const char* op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool product, bool reverse,
          Tensor& y) {
  dispatch_numeric(x.dtype(), op, [&]<class T>() {
    const T* px = x.data_ptr<T>();
    T* py = y.data_ptr<T>();
    if (product) scan_loop<true>(px, py, outer, n, inner, reverse);
    else scan_loop<false>(px, py, outer, n, inner, reverse);
  });
}

}  // namespace graft::kernels::cumulative
