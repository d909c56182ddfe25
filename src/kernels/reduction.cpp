// The reduction kernels: src/kernels/reduction.h.
#include "reduction.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "../core/dispatch.h"
#include "vec_f32.h"

namespace graft::kernels::reduction {

namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// Calls f(i, row, n) for every output element i < m (row-major over the kept dims), where row
// points to the n values of x over the reduced dims, contiguous. x must have the C++ type T.
template <class T, class F>
void for_each_row(const Tensor& x, const std::vector<int64_t>& dims, int64_t m, F&& f) {
  Tensor xp = x.detach();
  if (x.dim() > 0) xp = xp.permute(reduce_last_perm(x.dim(), dims));
  xp = xp.contiguous();
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  const T* px = static_cast<const T*>(xp.data_ptr());
  for (int64_t i = 0; i < m; ++i) f(i, n == 0 ? px : px + i * n, n);
}

// out[i] = row_fn(row i, n) rounded to R, one per element of out.
template <class T, class R, class F>
void reduce_rows(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out, F&& row_fn) {
  R* po = static_cast<R*>(out.data_ptr());
  for_each_row<T>(x, dims, out.numel(),
                  [&](int64_t i, const T* row, int64_t n) { po[i] = static_cast<R>(row_fn(row, n)); });
}

// Two-pass over the row in double: the mean first, then the squared deviations with the
// compensation term sum(d)^2 / n (which cancels the rounding error of the mean).
template <class T>
double row_var(const T* row, int64_t n, int64_t correction) {
  const double dof = static_cast<double>(n - correction);
  if (dof <= 0) return std::numeric_limits<double>::quiet_NaN();
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += static_cast<double>(row[k]);
  const double mean = s / static_cast<double>(n);
  double s1 = 0, s2 = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double d = static_cast<double>(row[k]) - mean;
    s1 += d;
    s2 += d * d;
  }
  return (s2 - s1 * s1 / static_cast<double>(n)) / dof;
}

// The index of the max (Greater) or min in a row: the first occurrence on ties; a NaN wins (the first).
template <bool Greater, class T>
int64_t row_arg_extreme(const T* row, int64_t n) {
  int64_t best = 0;
  for (int64_t k = 1; k < n; ++k) {
    if (is_nan(row[best])) break;
    const T v = row[k];
    if (is_nan(v) || (Greater ? v > row[best] : v < row[best])) best = k;
  }
  return best;
}

}  // namespace

void sum_leading(const Tensor& x, int64_t outer, int64_t inner, Tensor& y) {
  dispatch_floating(x.dtype(), "sum", [&]<class T>() {
    std::vector<double> acc(static_cast<size_t>(inner), 0.0);
    const T* px = x.data_ptr<T>();
    for (int64_t r = 0; r < outer; ++r) {
      const T* row = px + r * inner;
      for (int64_t j = 0; j < inner; ++j) acc[static_cast<size_t>(j)] += static_cast<double>(row[j]);
    }
    T* py = y.data_ptr<T>();
    for (int64_t j = 0; j < inner; ++j) py[j] = static_cast<T>(acc[static_cast<size_t>(j)]);
  });
}

void sum_all_f32(const Tensor& x, Tensor& y) { y.data_ptr<float>()[0] = sum_f32(x.data_ptr<float>(), x.numel()); }

void sum_each_row_f32(const Tensor& x, int64_t cols, Tensor& y) {
  sum_rows_f32(x.data_ptr<float>(), y.data_ptr<float>(), y.numel(), cols);
}

std::vector<int64_t> reduce_last_perm(int64_t ndim, const std::vector<int64_t>& dims) {
  std::vector<int64_t> perm;
  std::vector<bool> reduced(static_cast<size_t>(ndim), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;
  for (int64_t d = 0; d < ndim; ++d)
    if (!reduced[static_cast<size_t>(d)]) perm.push_back(d);
  for (int64_t d : dims) perm.push_back(d);
  return perm;
}

void var_rows(const char* op, const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool take_sqrt,
              Tensor& out) {
  dispatch_floating(x.dtype(), op, [&]<class T>() {
    if (x.is_meta()) return;  // Note [Meta device]: no kernel
    reduce_rows<T, T>(x, dims, out, [&](const T* row, int64_t cnt) {
      const double v = row_var(row, cnt, correction);
      return take_sqrt ? std::sqrt(v) : v;
    });
  });
}

void prod_rows(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out) {
  dispatch_numeric(x.dtype(), "prod", [&]<class T>() {
    if (x.is_meta()) return;  // Note [Meta device]: no kernel
    if constexpr (std::is_floating_point_v<T>) {
      reduce_rows<T, T>(x, dims, out, [](const T* row, int64_t n) {
        double p = 1;
        for (int64_t k = 0; k < n; ++k) p *= static_cast<double>(row[k]);
        return p;
      });
    } else {  // int64 wraps around on overflow, as in PyTorch (unsigned arithmetic: no UB)
      reduce_rows<T, T>(x, dims, out, [](const T* row, int64_t n) {
        uint64_t p = 1;
        for (int64_t k = 0; k < n; ++k) p *= static_cast<uint64_t>(row[k]);
        return static_cast<int64_t>(p);
      });
    }
  });
}

void extreme_rows(const char* op, const Tensor& x, const std::vector<int64_t>& dims, bool greater, Tensor& out) {
  dispatch_all(x.dtype(), op, [&]<class T>() {
    if (x.is_meta()) return;  // Note [Meta device]: no kernel
    reduce_rows<T, T>(x, dims, out, [greater](const T* row, int64_t n) {
      return row[greater ? row_arg_extreme<true>(row, n) : row_arg_extreme<false>(row, n)];
    });
  });
}

void arg_extreme_rows(const char* op, const Tensor& x, const std::vector<int64_t>& dims, bool greater, Tensor& out) {
  dispatch_numeric(x.dtype(), op, [&]<class T>() {
    if (x.is_meta()) return;  // Note [Meta device]: no kernel
    reduce_rows<T, int64_t>(x, dims, out, [greater](const T* row, int64_t n) {
      return greater ? row_arg_extreme<true>(row, n) : row_arg_extreme<false>(row, n);
    });
  });
}

void extreme_index_rows(const char* op, const Tensor& x, const std::vector<int64_t>& dims, bool greater, Tensor& values,
                        Tensor& indices) {
  dispatch_all(x.dtype(), op, [&]<class T>() {
    if (x.is_meta()) return;  // Note [Meta device]: no kernel
    T* pv = static_cast<T*>(values.data_ptr());
    int64_t* pi = indices.data_ptr<int64_t>();
    for_each_row<T>(x, dims, values.numel(), [&](int64_t i, const T* row, int64_t n) {
      const int64_t k = greater ? row_arg_extreme<true>(row, n) : row_arg_extreme<false>(row, n);
      pv[i] = row[k];
      pi[i] = k;
    });
  });
}

void logsumexp_rows(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out) {
  dispatch_floating(x.dtype(), "logsumexp", [&]<class T>() {
    if (x.is_meta()) return;  // Note [Meta device]: no kernel
    reduce_rows<T, T>(x, dims, out, [](const T* row, int64_t n) {
      // m + log(sum exp(x - m)) with m the max; an infinite m is replaced by 0 so that an all -inf
      // slice (or an empty one) gives -inf and a +inf element gives +inf, never inf - inf = nan.
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < n; ++k)
        if (static_cast<double>(row[k]) > m) m = static_cast<double>(row[k]);
      if (std::isinf(m)) m = 0;
      double s = 0;
      for (int64_t k = 0; k < n; ++k) s += std::exp(static_cast<double>(row[k]) - m);
      return m + std::log(s);
    });
  });
}

void prod_of_others_rows(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out) {
  dispatch_floating(x.dtype(), "prod", [&]<class T>() {
    if (x.is_meta()) return;  // Note [Meta device]: no kernel
    int64_t row_len = 1;
    for (int64_t d : dims) row_len *= x.size(d);
    T* po = static_cast<T*>(out.data_ptr());
    for_each_row<T>(x, dims, row_len == 0 ? 0 : x.numel() / row_len, [&](int64_t i, const T* row, int64_t n) {
      int64_t zeros = 0;
      double p = 1;
      for (int64_t k = 0; k < n; ++k) {
        if (row[k] == T(0)) ++zeros;
        else p *= static_cast<double>(row[k]);
      }
      for (int64_t k = 0; k < n; ++k) {
        double v = 0;
        if (zeros == 0) v = p / static_cast<double>(row[k]);
        else if (zeros == 1 && row[k] == T(0)) v = p;
        po[i * n + k] = static_cast<T>(v);
      }
    });
  });
}

bool has_zero(const Tensor& x) {
  return dispatch_floating(x.dtype(), "prod", [&]<class T>() {
    bool found = false;
    const Tensor xc = x.detach().contiguous();
    const T* p = static_cast<const T*>(xc.data_ptr());
    for (int64_t i = 0; i < xc.numel() && !found; ++i) found = p[i] == T(0);
    return found;
  });
}

}  // namespace graft::kernels::reduction
