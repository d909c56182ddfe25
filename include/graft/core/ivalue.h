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
#include <vector>

#include "graft/core/scalar.h"
#include "graft/core/tensor.h"

namespace graft {

class IValue {
 public:
  IValue() = default;  // None
  IValue(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT: implicit, as in LibTorch
  // Every arithmetic type: bool stays bool, integers become int64, floating types double.
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  IValue(T x) {  // NOLINT
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      bool_ = x;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      int_ = static_cast<int64_t>(x);
    } else {
      kind_ = Kind::Double;
      double_ = static_cast<double>(x);
    }
  }
  IValue(const Scalar& s);  // NOLINT
  IValue(std::string s) : kind_(Kind::String), string_(std::move(s)) {}  // NOLINT
  IValue(const char* s) : kind_(Kind::String), string_(s) {}  // NOLINT
  IValue(std::vector<int64_t> v) : kind_(Kind::IntList), ints_(std::move(v)) {}  // NOLINT
  IValue(std::vector<double> v) : kind_(Kind::DoubleList), doubles_(std::move(v)) {}  // NOLINT
  IValue(std::vector<Tensor> v) : kind_(Kind::TensorList), tensors_(std::move(v)) {}  // NOLINT

  bool isNone() const { return kind_ == Kind::None; }
  bool isTensor() const { return kind_ == Kind::Tensor; }
  bool isDouble() const { return kind_ == Kind::Double; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isString() const { return kind_ == Kind::String; }
  bool isIntList() const { return kind_ == Kind::IntList; }
  bool isDoubleList() const { return kind_ == Kind::DoubleList; }
  bool isTensorList() const { return kind_ == Kind::TensorList; }
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
  // One member per kind rather than a std::variant: GCC 12 reports a variant holding strings and
  // vectors as "maybe uninitialized" when it is moved at -O1 (the sanitizer build), a known false
  // positive; an IValue is small user data, so the few unused members cost nothing that matters.
  enum class Kind { None, Tensor, Double, Int, Bool, String, IntList, DoubleList, TensorList };
  Kind kind_ = Kind::None;
  Tensor tensor_;
  double double_ = 0;
  int64_t int_ = 0;
  bool bool_ = false;
  std::string string_;
  std::vector<int64_t> ints_;
  std::vector<double> doubles_;
  std::vector<Tensor> tensors_;
};

}  // namespace graft
