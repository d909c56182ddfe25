// Elementwise loops over strided, broadcast operands.
//
// map<R, In...>(out_dtype, out_shape, f, inputs...) allocates a contiguous output of out_shape and
// sets out[i] = f(in_0[i], ..., in_k[i]), each input broadcast to out_shape. Inputs must already
// have the C++ types In... (callers cast first). When every input is contiguous and of the output's
// size the loop is a flat one the compiler vectorises; otherwise dimensions are coalesced and the
// innermost dimension runs as a tight strided loop.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "graft/core/tensor.h"

namespace graft::kernels {

// The device of an elementwise result (Note [Meta device]): meta for meta operands (or inside an
// op's MetaOpScope), where the loop then does nothing.
inline Device loop_device(std::initializer_list<const Tensor*> operands) {
  const char* op = memory::current_op();
  const Device d = graft::detail::op_device(op ? op : "elementwise op", operands);
  return d.is_meta() || graft::detail::in_meta_op() ? Device(DeviceType::Meta) : d;
}

// Strides (in elements) of `t` seen as broadcast to `out_shape`: 0 on broadcast dimensions.
inline Shape broadcast_strides(const Tensor& t, IntArrayRef out_shape) {
  Shape st;
  st.resize(out_shape.size());
  const size_t off = out_shape.size() - static_cast<size_t>(t.dim());
  for (size_t i = 0; i < out_shape.size(); ++i) {
    if (i < off) st[i] = 0;
    else st[i] = t.size(static_cast<int64_t>(i - off)) == 1 ? 0 : t.stride(static_cast<int64_t>(i - off));
  }
  return st;
}

// Calls f(offsets, n, inner_strides) for each run of the innermost (coalesced) dimension, where
// offsets[k] is the element offset of operand k at the start of the run.
template <size_t N, class F>
void strided_loop(IntArrayRef shape_in, std::array<Shape, N> strides, F&& f) {
  Shape shape(shape_in);
  // Drop size-1 dims, then merge dim d into d+1 where every operand is contiguous across them.
  size_t nd = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    shape[nd] = shape[d];
    for (auto& s : strides) s[nd] = s[d];
    ++nd;
  }
  if (nd == 0) {
    shape[0] = 1;
    for (auto& s : strides) s[0] = 0;
    nd = 1;
  }
  size_t w = 0;
  for (size_t d = 1; d < nd; ++d) {
    bool merge = true;
    for (auto& s : strides) merge = merge && s[w] == s[d] * shape[d];
    if (merge) {
      shape[w] *= shape[d];
      for (auto& s : strides) s[w] = s[d];
    } else {
      ++w;
      shape[w] = shape[d];
      for (auto& s : strides) s[w] = s[d];
    }
  }
  nd = w + 1;
  for (int64_t s : IntArrayRef(shape.data(), nd))
    if (s == 0) return;
  const int64_t inner = shape[nd - 1];
  std::array<int64_t, N> inner_st{};
  for (size_t k = 0; k < N; ++k) inner_st[k] = strides[k][nd - 1];
  std::array<int64_t, kMaxDims> idx{};  // the outer counters (dims 0 .. nd - 2)
  std::array<int64_t, N> off{};
  while (true) {
    f(off, inner, inner_st);
    // advance the outer counter
    int64_t d = static_cast<int64_t>(nd) - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

template <class R, class... In, class F, class... Ts>
Tensor map(DType out_dtype, IntArrayRef out_shape, F&& f, const Ts&... inputs) {
  static_assert(sizeof...(In) == sizeof...(Ts), "one C++ type per input");
  const Device device = loop_device({&inputs...});
  Tensor out = make_empty(out_shape, out_dtype, device);
  if (device.is_meta()) return out;
  const int64_t n = out.numel();
  R* o = out.data_ptr<R>();
  if (((inputs.is_contiguous() && inputs.numel() == n) && ...)) {
    std::tuple<const In*...> p{static_cast<const In*>(inputs.data_ptr())...};
    std::apply([&](const In*... ptrs) {
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<R>(f(ptrs[i]...));
    }, p);
    return out;
  }
  constexpr size_t N = sizeof...(Ts) + 1;
  std::array<Shape, N> st{contiguous_strides(out_shape), broadcast_strides(inputs, out_shape)...};
  std::tuple<const In*...> base{static_cast<const In*>(inputs.data_ptr())...};
  strided_loop<N>(out_shape, st, [&](const std::array<int64_t, N>& off, int64_t cnt,
                                     const std::array<int64_t, N>& ist) {
    std::apply([&](const In*... ptrs) {
      [&]<size_t... K>(std::index_sequence<K...>) {
        R* po = o + off[0];
        for (int64_t i = 0; i < cnt; ++i) po[i * ist[0]] = static_cast<R>(f(ptrs[off[K + 1] + i * ist[K + 1]]...));
      }(std::index_sequence_for<In...>{});
    }, base);
  });
  return out;
}

// Writes into dst (which may be strided): dst[i] = f(dst[i], in_0[i], ...) when ReadDst (in-place
// ops), dst[i] = f(in_0[i], ...) otherwise (copies and fills, where dst may be uninitialised memory
// that must not be read: an uninitialised byte is not a valid bool).
template <bool ReadDst, class R, class... In, class F, class... Ts>
void write_into(Tensor& dst, F&& f, const Ts&... inputs) {
  if (loop_device({&dst, &inputs...}).is_meta()) return;
  const int64_t n = dst.numel();
  R* o = static_cast<R*>(dst.data_ptr());
  auto value = [&f](R* po, auto... v) -> R {
    if constexpr (ReadDst) return static_cast<R>(f(*po, v...));
    else return static_cast<R>(f(v...));
  };
  if (dst.is_contiguous() && ((inputs.is_contiguous() && inputs.numel() == n) && ...)) {
    std::tuple<const In*...> p{static_cast<const In*>(inputs.data_ptr())...};
    std::apply([&](const In*... ptrs) {
      for (int64_t i = 0; i < n; ++i) o[i] = value(o + i, ptrs[i]...);
    }, p);
    return;
  }
  constexpr size_t N = sizeof...(Ts) + 1;
  std::array<Shape, N> st{Shape(dst.strides()), broadcast_strides(inputs, dst.sizes())...};
  std::tuple<const In*...> base{static_cast<const In*>(inputs.data_ptr())...};
  strided_loop<N>(dst.sizes(), st, [&](const std::array<int64_t, N>& off, int64_t cnt,
                                       const std::array<int64_t, N>& ist) {
    std::apply([&](const In*... ptrs) {
      [&]<size_t... K>(std::index_sequence<K...>) {
        R* po = o + off[0];
        for (int64_t i = 0; i < cnt; ++i) po[i * ist[0]] = value(po + i * ist[0], ptrs[off[K + 1] + i * ist[K + 1]]...);
      }(std::index_sequence_for<In...>{});
    }, base);
  });
}

// In-place: dst[i] = f(dst[i], in_0[i], ...), inputs broadcast to dst's shape; dst may be strided.
template <class R, class... In, class F, class... Ts>
void apply_inplace(Tensor& dst, F&& f, const Ts&... inputs) {
  write_into<true, R, In...>(dst, std::forward<F>(f), inputs...);
}

// Assignment: dst[i] = f(in_0[i], ...), never reading dst.
template <class R, class... In, class F, class... Ts>
void assign(Tensor& dst, F&& f, const Ts&... inputs) {
  write_into<false, R, In...>(dst, std::forward<F>(f), inputs...);
}

// dst's bytes = src's bytes, for two contiguous tensors of one dtype and size (copy_'s fast path);
// memmove, since the two may overlap.
inline void copy_bytes(Tensor& dst, const Tensor& src) {
  if (dst.numel()) std::memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes());
}

}  // namespace graft::kernels
