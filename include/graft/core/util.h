// Small utilities in c10's spelling, so that LibTorch code using them ports by renaming
// (docs/porting.md): graft::optional / nullopt (c10::optional is std::optional in LibTorch 2.x),
// graft::ArrayRef<T>, graft::irange and graft::str.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/optional.h"  // graft::optional, nullopt
#include "graft/core/shape.h"

namespace graft {

// A read-only view of a contiguous list of T: a pointer and a length, as c10::ArrayRef. Like
// IntArrayRef (which is ArrayRef<int64_t>'s spelling in graft), it never owns: a braced list
// lives until the end of the full expression.
template <class T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;

  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T* data, size_t n) : data_(data), size_(n) {}
  constexpr ArrayRef(const T* begin, const T* end) : data_(begin), size_(static_cast<size_t>(end - begin)) {}
  ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT: implicit, as in c10
  template <class A>
  ArrayRef(const std::vector<T, A>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  template <size_t N>
  constexpr ArrayRef(const T (&a)[N]) : data_(a), size_(N) {}  // NOLINT
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr ArrayRef(std::initializer_list<T> il) : data_(il.begin()), size_(il.size()) {}  // NOLINT
#pragma GCC diagnostic pop

  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  const T& front() const { return at(0); }
  const T& back() const { return at(size_ - 1); }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  // Bounds-checked (graft::Error), as c10's at().
  const T& at(size_t i) const {
    GRAFT_CHECK(i < size_, "ArrayRef::at", "an index below " + std::to_string(size_), std::to_string(i),
                "the list has " + std::to_string(size_) + " elements");
    return data_[i];
  }
  ArrayRef slice(size_t start, size_t n) const {
    GRAFT_CHECK(start <= size_ && n <= size_ - start, "ArrayRef::slice",
                "a range within " + std::to_string(size_) + " elements",
                "[" + std::to_string(start) + ", " + std::to_string(start) + " + " + std::to_string(n) + ")", "");
    return ArrayRef(data_ + start, n);
  }
  ArrayRef slice(size_t start) const { return slice(start, size_ - std::min(start, size_)); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool equals(ArrayRef o) const { return size_ == o.size_ && std::equal(begin(), end(), o.begin()); }
  // ArrayRef<int64_t> passes where graft takes sizes.
  operator IntArrayRef() const  // NOLINT
    requires std::is_same_v<T, int64_t>
  {
    return IntArrayRef(data_, size_);
  }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

// for (auto i : irange(n)) ...: 0, 1, ..., n - 1; irange(a, b): a, ..., b - 1 (empty when b <= a).
template <class I>
class IntegerRange {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = I;
    using difference_type = std::ptrdiff_t;
    using pointer = const I*;
    using reference = I;
    constexpr explicit iterator(I v) : v_(v) {}
    constexpr I operator*() const { return v_; }
    constexpr iterator& operator++() {
      ++v_;
      return *this;
    }
    constexpr iterator operator++(int) {
      iterator old = *this;
      ++v_;
      return old;
    }
    constexpr bool operator==(const iterator& o) const { return v_ == o.v_; }

   private:
    I v_;
  };
  constexpr IntegerRange(I begin, I end) : begin_(begin), end_(end < begin ? begin : end) {}
  constexpr iterator begin() const { return iterator(begin_); }
  constexpr iterator end() const { return iterator(end_); }

 private:
  I begin_, end_;
};

template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
constexpr IntegerRange<I> irange(I end) {
  return IntegerRange<I>(I{0}, end);
}
template <class I1, class I2, std::enable_if_t<std::is_integral_v<I1> && std::is_integral_v<I2>, int> = 0>
constexpr IntegerRange<std::common_type_t<I1, I2>> irange(I1 begin, I2 end) {
  using I = std::common_type_t<I1, I2>;
  return IntegerRange<I>(static_cast<I>(begin), static_cast<I>(end));
}

// str(a, b, ...): the arguments written one after the other to a string, as with operator<<.
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

// c10::to_string: the value as operator<< writes it (std::to_string's result for numbers differs
// for floating point: "0.5" here, "0.500000" there).
template <class T>
std::string to_string(const T& value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

// Join(delimiter, v): v's elements written with the delimiter between them (c10::Join).
template <class Container>
std::string Join(const std::string& delimiter, const Container& v) {
  std::ostringstream s;
  bool first = true;
  for (const auto& x : v) {
    if (!first) s << delimiter;
    s << x;
    first = false;
  }
  return s.str();
}

}  // namespace graft
