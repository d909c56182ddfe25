// Shape: sizes or strides of up to kMaxDims dimensions, stored inline (no heap allocation).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "graft/core/error.h"

namespace graft {

inline constexpr int64_t kMaxDims = 8;

// A read-only view of a list of int64 (sizes, strides, dims), like LibTorch's IntArrayRef.
class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const int64_t* data, size_t n) : data_(data), size_(n) {}
  // Like LibTorch's IntArrayRef, this points into the braced list, which lives until the end of the
  // full expression: pass {2, 3} straight to a call, never store the IntArrayRef.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntArrayRef(std::initializer_list<int64_t> il) : data_(il.begin()), size_(il.size()) {}  // NOLINT
#pragma GCC diagnostic pop
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  constexpr IntArrayRef(std::span<const int64_t> s) : data_(s.data()), size_(s.size()) {}  // NOLINT
  template <size_t N>
  constexpr IntArrayRef(const std::array<int64_t, N>& a) : data_(a.data()), size_(N) {}  // NOLINT
  // A single int converts to a one-element list, as in LibTorch (t.sum(1)).
  IntArrayRef(const int64_t& one) : data_(&one), size_(1) {}  // NOLINT

  constexpr const int64_t* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const int64_t* begin() const { return data_; }
  constexpr const int64_t* end() const { return data_ + size_; }
  constexpr int64_t operator[](size_t i) const { return data_[i]; }
  int64_t back() const { return data_[size_ - 1]; }
  int64_t front() const { return data_[0]; }
  size_t size_bytes() const { return size_ * sizeof(int64_t); }
  // c10::ArrayRef's slice: m elements from the n-th; slice(n) drops the first n. Out of range is an
  // error (LibTorch checks it too).
  IntArrayRef slice(size_t n, size_t m) const;
  IntArrayRef slice(size_t n) const;
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  operator std::span<const int64_t>() const { return {data_, size_}; }  // NOLINT
  bool equals(IntArrayRef o) const { return std::equal(begin(), end(), o.begin(), o.end()); }
  friend bool operator==(IntArrayRef a, IntArrayRef b) { return a.equals(b); }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

class Shape {
 public:
  Shape() = default;
  Shape(IntArrayRef s) { assign(s); }  // NOLINT
  Shape(std::initializer_list<int64_t> s) { assign(IntArrayRef(s)); }

  void assign(IntArrayRef s) {
    GRAFT_CHECK(s.size() <= static_cast<size_t>(kMaxDims), "tensor",
                "at most " + std::to_string(kMaxDims) + " dimensions",
                std::to_string(s.size()) + " dimensions", "reshape to fewer dimensions");
    n_ = static_cast<uint8_t>(s.size());
    std::copy(s.begin(), s.end(), d_.begin());
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t& operator[](size_t i) { return d_[i]; }
  int64_t operator[](size_t i) const { return d_[i]; }
  int64_t* data() { return d_.data(); }
  const int64_t* data() const { return d_.data(); }
  int64_t* begin() { return d_.data(); }
  int64_t* end() { return d_.data() + n_; }
  const int64_t* begin() const { return d_.data(); }
  const int64_t* end() const { return d_.data() + n_; }
  int64_t back() const { return d_[n_ - 1]; }
  void push_back(int64_t v) {
    GRAFT_CHECK(n_ < kMaxDims, "tensor", "at most 8 dimensions", "9 dimensions", "reshape to fewer dimensions");
    d_[n_++] = v;
  }
  void insert(size_t pos, int64_t v) {
    push_back(0);
    for (size_t i = n_ - 1; i > pos; --i) d_[i] = d_[i - 1];
    d_[pos] = v;
  }
  void erase(size_t pos) {
    for (size_t i = pos; i + 1 < n_; ++i) d_[i] = d_[i + 1];
    --n_;
  }
  void resize(size_t n, int64_t fill = 0) {
    for (size_t i = n_; i < n; ++i) d_[i] = fill;
    n_ = static_cast<uint8_t>(n);
  }
  operator IntArrayRef() const { return {d_.data(), n_}; }  // NOLINT
  IntArrayRef ref() const { return {d_.data(), n_}; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  bool operator==(const Shape& o) const { return ref().equals(o.ref()); }

 private:
  std::array<int64_t, kMaxDims> d_{};
  uint8_t n_ = 0;
};

// "[2, 3]", the way every graft error message prints a shape.
std::string shape_str(IntArrayRef shape);
// `std::cout << t.sizes()` writes shape_str's form, as LibTorch's ArrayRef does: "[2, 3]", "[]".
std::ostream& operator<<(std::ostream& os, IntArrayRef shape);
int64_t numel_of(IntArrayRef sizes);
Shape contiguous_strides(IntArrayRef sizes);
// Wraps a possibly negative dim into [0, ndim); throws a graft::Error naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// NumPy broadcasting of two shapes; throws naming `op` when they are incompatible.
Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

}  // namespace graft
