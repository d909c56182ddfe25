// The indexing kernels (src/kernels/indexing.h): one templated loop per op, instantiated through
// the dtype dispatch of each entry.
#include "indexing.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "../core/dispatch.h"
#include "graft/core/error.h"
#include "graft/core/shape.h"

namespace graft::kernels::indexing {

namespace {

// Calls f(multi_index) for every position of `shape`, in row-major order.
template <class F>
void for_each_position(IntArrayRef shape, F&& f) {
  const int64_t n = numel_of(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

int64_t offset_of(const std::vector<int64_t>& idx, IntArrayRef strides) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
  return off;
}

template <class T>
void index_select_loop(const T* src, const std::vector<int64_t>& idx, Slices s, T* dst) {
  const int64_t m = static_cast<int64_t>(idx.size()), n = s.n, inner = s.inner;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      const T* sp = src + (o * n + idx[static_cast<size_t>(j)]) * inner;
      std::copy(sp, sp + inner, dst + (o * m + j) * inner);
    }
}

template <class T>
void index_add_loop(T* o, const T* s, const std::vector<int64_t>& idx, Slices sl, T al) {
  const int64_t m = static_cast<int64_t>(idx.size()), n = sl.n, inner = sl.inner;
  for (int64_t a = 0; a < sl.outer; ++a)
    for (int64_t j = 0; j < m; ++j) {
      const T* sp = s + (a * m + j) * inner;
      T* op = o + (a * n + idx[static_cast<size_t>(j)]) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if constexpr (std::is_same_v<T, bool>) op[i] = op[i] || (al && sp[i]);
        else op[i] = static_cast<T>(op[i] + al * sp[i]);
      }
    }
}

// xs: the (contiguous) strides of s; positions run over index_shape.
template <class T>
void gather_loop(const T* s, IntArrayRef xs, int64_t d, IntArrayRef index_shape, const std::vector<int64_t>& idx,
                 T* o) {
  int64_t k = 0;
  for_each_position(index_shape, [&](std::vector<int64_t>& p) {
    const int64_t keep = p[static_cast<size_t>(d)];
    p[static_cast<size_t>(d)] = idx[static_cast<size_t>(k)];
    o[k] = s[offset_of(p, xs)];
    p[static_cast<size_t>(d)] = keep;
    ++k;
  });
}

// ys, ss: the (contiguous) strides of o and s; positions run over index_shape.
template <class T>
void scatter_add_loop(T* o, IntArrayRef ys, int64_t d, IntArrayRef index_shape, const std::vector<int64_t>& idx,
                      const T* s, IntArrayRef ss) {
  int64_t k = 0;
  for_each_position(index_shape, [&](std::vector<int64_t>& p) {
    const T v = s[offset_of(p, ss)];
    const int64_t keep = p[static_cast<size_t>(d)];
    p[static_cast<size_t>(d)] = idx[static_cast<size_t>(k)];
    T& dst = o[offset_of(p, ys)];
    if constexpr (std::is_same_v<T, bool>) dst = dst || v;
    else dst = static_cast<T>(dst + v);
    p[static_cast<size_t>(d)] = keep;
    ++k;
  });
}

template <class T>
void padding_keep_loop(const std::vector<int64_t>& ids, int64_t padding_idx, T* k) {
  for (size_t i = 0; i < ids.size(); ++i) k[i] = ids[i] == padding_idx ? T(0) : T(1);
}

}  // namespace

std::vector<int64_t> read_indices(const Tensor& index) {
  // (An empty tensor reads as nothing whatever its strides: is_contiguous may say no for a 0 size.)
  const bool contiguous = index.numel() == 0 || index.is_contiguous();
  GRAFT_CHECK(index.dtype() == kInt64 && contiguous, "read_indices", "a contiguous int64 tensor",
              std::string("a ") + dtype_name(index.dtype()) + (contiguous ? "" : " non-contiguous") + " tensor",
              "convert it with .to(graft::kInt64).contiguous() first");
  const int64_t* p = index.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + index.numel());
}

void write_indices(const std::vector<int64_t>& values, const Tensor& out) {
  std::copy(values.begin(), values.end(), out.data_ptr<int64_t>());
}

std::vector<int64_t> true_positions(const Tensor& mask) {
  const bool* p = mask.data_ptr<bool>();
  const int64_t n = mask.numel();
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < n; ++i)
    if (p[i]) pos.push_back(i);
  return pos;
}

void index_select(const Tensor& src, const std::vector<int64_t>& idx, Slices s, const Tensor& out) {
  dispatch_all(src.dtype(), "index_select",
               [&]<class T>() { index_select_loop<T>(src.data_ptr<T>(), idx, s, out.data_ptr<T>()); });
}

void index_add(const Tensor& out, const Tensor& source, const std::vector<int64_t>& idx, Slices s,
               const Scalar& alpha) {
  dispatch_all(out.dtype(), "index_add", [&]<class T>() {
    if (out.is_meta()) return;  // Note [Meta device]: no kernel on meta
    index_add_loop<T>(out.data_ptr<T>(), source.data_ptr<T>(), idx, s, alpha.to<T>());
  });
}

void gather(const Tensor& src, int64_t d, const Tensor& index, const std::vector<int64_t>& idx, const Tensor& out) {
  const Shape xs = contiguous_strides(src.sizes());
  dispatch_all(out.dtype(), "gather", [&]<class T>() {
    if (out.is_meta()) return;  // Note [Meta device]: no kernel on meta
    gather_loop<T>(src.data_ptr<T>(), xs, d, index.sizes(), idx, out.data_ptr<T>());
  });
}

void scatter_add(const Tensor& out, int64_t d, const Tensor& index, const std::vector<int64_t>& idx,
                 const Tensor& src) {
  const Shape ys = contiguous_strides(out.sizes()), ss = contiguous_strides(src.sizes());
  dispatch_all(out.dtype(), "scatter_add", [&]<class T>() {
    if (out.is_meta()) return;  // Note [Meta device]: no kernel on meta
    scatter_add_loop<T>(out.data_ptr<T>(), ys, d, index.sizes(), idx, src.data_ptr<T>(), ss);
  });
}

void padding_keep(const std::vector<int64_t>& ids, int64_t padding_idx, const Tensor& keep) {
  dispatch_floating(keep.dtype(), "embedding", [&]<class T>() {
    if (keep.is_meta()) return;  // Note [Meta device]: no kernel on meta
    padding_keep_loop<T>(ids, padding_idx, keep.data_ptr<T>());
  });
}

void one_hot(const std::vector<int64_t>& classes, int64_t num_classes, const Tensor& out) {
  int64_t* o = out.data_ptr<int64_t>();
  const int64_t n = static_cast<int64_t>(classes.size());
  for (int64_t i = 0; i < n; ++i) o[i * num_classes + classes[static_cast<size_t>(i)]] = 1;
}

}  // namespace graft::kernels::indexing
