// Shape: sizes or strides of up to kMaxDims (64, PyTorch's limit) dimensions. Up to
// kInlineDims of them are stored inline (no heap allocation, the common case); a shape with more
// moves to a heap buffer of kMaxDims entries, allocated once per Shape object.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graft/core/error.h"

namespace graft {

inline constexpr int64_t kMaxDims = 64;
inline constexpr size_t kInlineDims = 8;

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
  Shape(const Shape& o) { assign(o.ref()); }
  Shape(Shape&& o) noexcept : inline_(o.inline_), heap_(std::move(o.heap_)), n_(o.n_) { o.n_ = 0; }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.ref());
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      inline_ = o.inline_;
      heap_ = std::move(o.heap_);
      n_ = o.n_;
      o.n_ = 0;
    }
    return *this;
  }
  ~Shape() = default;

  // s may point into this shape's own entries.
  void assign(IntArrayRef s) {
    check_dims(s.size());
    if (s.size() > kInlineDims) ensure_heap();
    int64_t* dst = s.size() > kInlineDims ? heap_.get() : inline_.data();
    if (s.size() > 0) std::memmove(dst, s.data(), s.size() * sizeof(int64_t));
    n_ = static_cast<uint8_t>(s.size());
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t* data() { return n_ > kInlineDims ? heap_.get() : inline_.data(); }
  const int64_t* data() const { return n_ > kInlineDims ? heap_.get() : inline_.data(); }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + n_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + n_; }
  int64_t back() const { return data()[n_ - 1]; }
  void push_back(int64_t v) {
    const size_t n = n_;
    resize(n + 1);
    data()[n] = v;
  }
  void insert(size_t pos, int64_t v) {
    push_back(0);
    int64_t* d = data();
    for (size_t i = n_ - 1; i > pos; --i) d[i] = d[i - 1];
    d[pos] = v;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    for (size_t i = pos; i + 1 < n_; ++i) d[i] = d[i + 1];
    resize(n_ - 1u);
  }
  // Keeps the first min(size(), n) entries; new ones are `fill`.
  void resize(size_t n, int64_t fill = 0) {
    check_dims(n);
    const size_t old = n_;
    if (n > kInlineDims && old <= kInlineDims) {  // inline -> heap
      ensure_heap();
      std::copy(inline_.begin(), inline_.begin() + static_cast<std::ptrdiff_t>(old), heap_.get());
    } else if (n <= kInlineDims && old > kInlineDims) {  // heap -> inline
      std::copy(heap_.get(), heap_.get() + n, inline_.begin());
    }
    n_ = static_cast<uint8_t>(n);
    int64_t* d = data();
    for (size_t i = old; i < n; ++i) d[i] = fill;
  }
  operator IntArrayRef() const { return {data(), n_}; }  // NOLINT
  IntArrayRef ref() const { return {data(), n_}; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  bool operator==(const Shape& o) const { return ref().equals(o.ref()); }

 private:
  static void check_dims(size_t n) {
    GRAFT_CHECK(n <= static_cast<size_t>(kMaxDims), "tensor", "at most " + std::to_string(kMaxDims) + " dimensions",
                std::to_string(n) + " dimensions", "reshape to fewer dimensions");
  }
  void ensure_heap() {
    if (!heap_) heap_ = std::make_unique<int64_t[]>(static_cast<size_t>(kMaxDims));
  }

  // The entries are inline_[0, n_) when n_ <= kInlineDims, else heap_[0, n_). Slots past n_ (up
  // to kInlineDims inline, kMaxDims on the heap) are scratch that strided loops may write.
  std::array<int64_t, kInlineDims> inline_{};
  std::unique_ptr<int64_t[]> heap_;
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
