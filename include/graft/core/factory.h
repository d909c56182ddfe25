// Tensor factories, spelled as in LibTorch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "graft/core/generator.h"
#include "graft/core/tensor.h"

namespace graft {

// Nested initializer lists up to 4 levels: graft::tensor({{1., 2.}, {3., 4.}}).
// Floating values give float32 by default, integers int64, bools bool (as PyTorch).
namespace detail {
struct NestedData {
  std::vector<double> values;
  std::vector<int64_t> sizes;
  DType natural = DType::Float32;
};
Tensor tensor_from_nested(NestedData data, const TensorOptions& options);
template <class T> constexpr DType natural_dtype() {
  if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else if constexpr (std::is_integral_v<T>) return DType::Int64;
  else return DType::Float32;
}
}  // namespace detail

template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(std::initializer_list<T> v, const TensorOptions& options = {}) {
  detail::NestedData d{{v.begin(), v.end()}, {static_cast<int64_t>(v.size())}, detail::natural_dtype<T>()};
  return detail::tensor_from_nested(std::move(d), options);
}
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(std::initializer_list<std::initializer_list<T>> v, const TensorOptions& options = {}) {
  detail::NestedData d;
  d.natural = detail::natural_dtype<T>();
  d.sizes = {static_cast<int64_t>(v.size()), v.size() ? static_cast<int64_t>(v.begin()->size()) : 0};
  for (auto& row : v) {
    GRAFT_CHECK(static_cast<int64_t>(row.size()) == d.sizes[1], "tensor", "rows of equal length",
                "a row of length " + std::to_string(row.size()) + " after rows of " + std::to_string(d.sizes[1]),
                "nested lists must be rectangular");
    d.values.insert(d.values.end(), row.begin(), row.end());
  }
  return detail::tensor_from_nested(std::move(d), options);
}
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v,
              const TensorOptions& options = {}) {
  detail::NestedData d;
  d.natural = detail::natural_dtype<T>();
  int64_t a = static_cast<int64_t>(v.size()), b = -1, c = -1;
  for (auto& m : v) {
    if (b < 0) b = static_cast<int64_t>(m.size());
    GRAFT_CHECK(static_cast<int64_t>(m.size()) == b, "tensor", "a rectangular nested list", "ragged rows", "");
    for (auto& row : m) {
      if (c < 0) c = static_cast<int64_t>(row.size());
      GRAFT_CHECK(static_cast<int64_t>(row.size()) == c, "tensor", "a rectangular nested list", "ragged rows", "");
      d.values.insert(d.values.end(), row.begin(), row.end());
    }
  }
  d.sizes = {a, b < 0 ? 0 : b, c < 0 ? 0 : c};
  return detail::tensor_from_nested(std::move(d), options);
}
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(const std::vector<T>& v, const TensorOptions& options = {}) {
  detail::NestedData d{{v.begin(), v.end()}, {static_cast<int64_t>(v.size())}, detail::natural_dtype<T>()};
  return detail::tensor_from_nested(std::move(d), options);
}
// A 0-dim tensor: tensor(2.0) is float32, tensor(1) int64, tensor(true) bool (as LibTorch).
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(T v, const TensorOptions& options = {}) {
  detail::NestedData d{{static_cast<double>(v)}, {}, detail::natural_dtype<T>()};
  return detail::tensor_from_nested(std::move(d), options);
}
// A 0-dim tensor.
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor scalar_tensor(T v, const TensorOptions& options = {}) {
  detail::NestedData d{{static_cast<double>(v)}, {}, detail::natural_dtype<T>()};
  return detail::tensor_from_nested(std::move(d), options);
}

Tensor empty(IntArrayRef size, const TensorOptions& options = {});
Tensor zeros(IntArrayRef size, const TensorOptions& options = {});
Tensor ones(IntArrayRef size, const TensorOptions& options = {});
Tensor full(IntArrayRef size, const Scalar& value, const TensorOptions& options = {});
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, const TensorOptions& options = {});
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& options = {});
Tensor eye(int64_t n, const TensorOptions& options = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& options = {});
Tensor rand(IntArrayRef size, const TensorOptions& options = {}, Generator* gen = nullptr);
Tensor randn(IntArrayRef size, const TensorOptions& options = {}, Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& options = kInt64,
               Generator* gen = nullptr);
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& options = kInt64);

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
