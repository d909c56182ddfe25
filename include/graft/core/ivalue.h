// IValue: one value of a few kinds (none, tensor, double, int, bool, string, and lists of ints,
// doubles and tensors), as LibTorch's c10::IValue holds them. graft uses it where LibTorch does for
// user data: AutogradContext::saved_data of a custom autograd Function
// (graft/autograd/function.h). graft has no TorchScript, so there are no objects, tuples, dicts or
// futures here (docs/porting.md).
//
// As in LibTorch, the accessors are strict: toDouble() of an int is an error, not a conversion;
// toScalar() takes any number.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "graft/core/scalar.h"
#include "graft/core/tensor.h"

namespace graft {

class IValue {
 public:
  IValue() = default;  // None
  IValue(Tensor t) : v_(std::move(t)) {}  // NOLINT: implicit, as in LibTorch
  // Every arithmetic type: bool stays bool, integers become int64, floating types double.
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  IValue(T x) {  // NOLINT
    if constexpr (std::is_same_v<T, bool>) v_ = x;
    else if constexpr (std::is_integral_v<T>) v_ = static_cast<int64_t>(x);
    else v_ = static_cast<double>(x);
  }
  IValue(const Scalar& s);  // NOLINT
  IValue(std::string s) : v_(std::move(s)) {}  // NOLINT
  IValue(const char* s) : v_(std::string(s)) {}  // NOLINT
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  IValue(std::vector<double> v) : v_(std::move(v)) {}  // NOLINT
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}  // NOLINT

  bool isNone() const { return std::holds_alternative<std::monostate>(v_); }
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }
  bool isDouble() const { return std::holds_alternative<double>(v_); }
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }
  bool isBool() const { return std::holds_alternative<bool>(v_); }
  bool isString() const { return std::holds_alternative<std::string>(v_); }
  bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(v_); }
  bool isDoubleList() const { return std::holds_alternative<std::vector<double>>(v_); }
  bool isTensorList() const { return std::holds_alternative<std::vector<Tensor>>(v_); }
  bool isScalar() const { return isDouble() || isInt() || isBool(); }

  // Each throws graft::Error naming the kind it holds when it holds another.
  const Tensor& toTensor() const;
  double toDouble() const;
  int64_t toInt() const;
  bool toBool() const;
  const std::string& toStringRef() const;
  std::vector<int64_t> toIntVector() const;
  std::vector<double> toDoubleVector() const;
  std::vector<Tensor> toTensorVector() const;
  Scalar toScalar() const;

  // "None", "Tensor", "Double", "Int", "Bool", "String", "IntList", "DoubleList", "TensorList"
  // (LibTorch's tagKind()).
  std::string tagKind() const;

 private:
  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<Tensor>>
      v_;
};

}  // namespace graft
