// Tensor factories, spelled as in LibTorch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/core/generator.h"
#include "graft/core/half.h"
#include "graft/core/tensor.h"
#include "graft/core/util.h"

namespace graft {

namespace detail {

// LibTorch's TensorDataContainer: what graft::tensor takes. A scalar, a braced list of containers
// (nested to any depth: {{1, 2}, {3, 4}}), a std::vector of scalars or an IntArrayRef, each with
// its sizes and the scalar type its C++ type names (int: Int, int64_t: Long, double: Double,
// float: Float, bool: Bool, uint8_t: Byte, int8_t: Char, int16_t: Short, Half, BFloat16; other
// integer types: Long). A braced list's elements must share one scalar type and one shape.
// Elements are kept flat in row-major order, integers as int64 (exact past 2^53), the rest as double.
class TensorDataContainer {
 public:
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_same_v<T, Half> ||
                                          std::is_same_v<T, BFloat16>, int> = 0>
  TensorDataContainer(T value) : scalar_type_(scalar_type_of<T>()) {  // NOLINT: implicit, as LibTorch's
    push(value);
  }
  // tensor({}) (empty braces pick this, not the list constructor): float, shape [0], as LibTorch.
  TensorDataContainer() : sizes_{0} {}
  TensorDataContainer(std::initializer_list<TensorDataContainer> list);  // NOLINT: braced lists
  // A flat braced list of one type ({1, 2, 3}) takes this, without a container per element.
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_same_v<T, Half> ||
                                          std::is_same_v<T, BFloat16>, int> = 0>
  TensorDataContainer(std::initializer_list<T> values) : scalar_type_(scalar_type_of<T>()) {  // NOLINT
    sizes_.push_back(static_cast<int64_t>(values.size()));
    for (T v : values) push(v);
  }
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_same_v<T, Half> ||
                                          std::is_same_v<T, BFloat16>, int> = 0>
  TensorDataContainer(const std::vector<T>& values) : scalar_type_(scalar_type_of<T>()) {  // NOLINT
    sizes_.push_back(static_cast<int64_t>(values.size()));
    for (const auto& v : values) push(static_cast<T>(v));  // (a std::vector<bool>'s proxies too)
  }
  TensorDataContainer(IntArrayRef values);  // NOLINT: torch::tensor(t.sizes()) is an int64 vector
  // The elements of a list, checked as a braced list's are.
  static TensorDataContainer list(const TensorDataContainer* begin, const TensorDataContainer* end);

  const std::vector<int64_t>& sizes() const { return sizes_; }
  DType scalar_type() const { return scalar_type_; }
  bool is_scalar() const { return sizes_.empty(); }
  int64_t numel() const { return static_cast<int64_t>(is_integral() ? ints_.size() : floats_.size()); }
  // The i-th element, row-major.
  double element_as_double(int64_t i) const;
  int64_t element_as_int64(int64_t i) const;
  bool is_integral() const { return is_integral_type(scalar_type_); }
  // {1, 2} or 1.5, as LibTorch writes a container in its errors.
  std::string str() const;

 private:
  template <class T>
  static constexpr DType scalar_type_of() {
    if constexpr (std::is_same_v<T, bool>) return DType::Bool;
    else if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
    else if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
    else if constexpr (std::is_same_v<T, int16_t>) return DType::Int16;
    else if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
    else if constexpr (std::is_integral_v<T>) return DType::Int64;
    else if constexpr (std::is_same_v<T, Half>) return DType::Float16;
    else if constexpr (std::is_same_v<T, BFloat16>) return DType::BFloat16;
    else if constexpr (std::is_same_v<T, float>) return DType::Float32;
    else return DType::Float64;
  }
  static bool is_integral_type(DType t) { return !is_floating_point(t); }
  template <class T>
  void push(T v) {
    if constexpr (std::is_integral_v<T>) ints_.push_back(static_cast<int64_t>(v));
    else if constexpr (std::is_floating_point_v<T>) floats_.push_back(static_cast<double>(v));
    else floats_.push_back(static_cast<double>(static_cast<float>(v)));  // Half, BFloat16
  }

  std::vector<int64_t> sizes_;
  DType scalar_type_ = DType::Float32;
  std::vector<int64_t> ints_;     // integral and bool types
  std::vector<double> floats_;    // floating types
};

}  // namespace detail

// LibTorch's torch::tensor: graft::tensor(2.5), tensor({1, 2, 3}), tensor({{1., 2.}, {3., 4.}},
// kFloat64), tensor(std::vector<float>{...}). The dtype, unless the options name one: int and
// int64_t values give int64, float and double ones the default dtype (float32 unless
// set_default_dtype), other types their own (bool, uint8, int8, int16, float16, bfloat16).
Tensor tensor(detail::TensorDataContainer data, const TensorOptions& options = {});
// graft's explicit spellings, tensor<int64_t>({2, 0, 3}), tensor<float>({{1, 2}, {3, 4}}): the
// elements converted to T first.
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(std::initializer_list<T> values, const TensorOptions& options = {}) {
  return tensor(detail::TensorDataContainer(values), options);
}
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows, const TensorOptions& options = {}) {
  std::vector<detail::TensorDataContainer> r;
  for (const auto& row : rows) r.emplace_back(row);
  return tensor(detail::TensorDataContainer::list(r.data(), r.data() + r.size()), options);
}
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(const std::vector<T>& values, const TensorOptions& options = {}) {
  return tensor(detail::TensorDataContainer(values), options);
}
// c10::ArrayRef<T> of scalars (LibTorch: torch::tensor(at::ArrayRef<float>(v))): as a vector's.
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(ArrayRef<T> values, const TensorOptions& options = {}) {
  return tensor(std::vector<T>(values.begin(), values.end()), options);
}

// LibTorch's scalar_tensor: a 0-dim tensor of the options' dtype (the default dtype unless they
// name one, whatever the value's C++ type: scalar_tensor(1) is float32 1).
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor scalar_tensor(T v, const TensorOptions& options = {}) {
  return tensor(detail::TensorDataContainer(v), options.has_dtype() ? options : options.dtype(get_default_dtype()));
}

Tensor empty(IntArrayRef size, const TensorOptions& options = {});
Tensor zeros(IntArrayRef size, const TensorOptions& options = {});
Tensor ones(IntArrayRef size, const TensorOptions& options = {});
Tensor full(IntArrayRef size, const Scalar& value, const TensorOptions& options = {});
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, const TensorOptions& options = {});
// arange(start, end, options): step 1 (LibTorch's overload).
inline Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options) {
  return arange(start, end, 1, options);
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& options = {});
Tensor eye(int64_t n, const TensorOptions& options = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& options = {});
Tensor rand(IntArrayRef size, const TensorOptions& options = {}, Generator* gen = nullptr);
Tensor randn(IntArrayRef size, const TensorOptions& options = {}, Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& options = kInt64,
               Generator* gen = nullptr);
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& options = kInt64);
// A random permutation of 0..n-1 (int64 unless options name another dtype), drawn as PyTorch does.
Tensor randperm(int64_t n, const TensorOptions& options = kInt64, Generator* gen = nullptr);

// *_like: same shape and (unless options say otherwise) the same dtype; never requires grad.
Tensor empty_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<TensorOptions> options = std::nullopt);
Tensor rand_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor randn_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);

// Wraps memory the caller owns (no copy). `deleter`, when given, is called when the last view dies.
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 const TensorOptions& options = {});

// Internal building block: a fresh contiguous tensor of `dtype` (no autograd).
Tensor make_empty(IntArrayRef sizes, DType dtype);  // CPU, or meta in a detail::MetaOpScope on meta inputs
Tensor make_empty(IntArrayRef sizes, DType dtype, Device device);

}  // namespace graft
