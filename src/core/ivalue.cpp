// IValue (graft/core/ivalue.h).
#include "graft/core/ivalue.h"

#include "graft/core/error.h"

namespace graft {

namespace {
[[noreturn]] void wrong_kind(const char* accessor, const char* expected, const IValue& v) {
  throw Error(std::string("IValue::") + accessor, expected, "an IValue holding " + v.tagKind(),
              "read it with the accessor of the kind that was stored (isDouble(), isInt(), ... tell which)");
}
}  // namespace

IValue::IValue(const Scalar& s) {
  if (s.is_bool()) {
    kind_ = Kind::Bool;
    bool_ = s.to_bool();
  } else if (s.is_integral()) {
    kind_ = Kind::Int;
    int_ = s.to_long();
  } else {
    kind_ = Kind::Double;
    double_ = s.to_double();
  }
}

const Tensor& IValue::toTensor() const {
  if (!isTensor()) wrong_kind("toTensor", "a Tensor", *this);
  return tensor_;
}
double IValue::toDouble() const {
  if (!isDouble()) wrong_kind("toDouble", "a Double", *this);
  return double_;
}
int64_t IValue::toInt() const {
  if (!isInt()) wrong_kind("toInt", "an Int", *this);
  return int_;
}
bool IValue::toBool() const {
  if (!isBool()) wrong_kind("toBool", "a Bool", *this);
  return bool_;
}
const std::string& IValue::toStringRef() const {
  if (!isString()) wrong_kind("toStringRef", "a String", *this);
  return string_;
}
std::vector<int64_t> IValue::toIntVector() const {
  if (!isIntList()) wrong_kind("toIntVector", "an IntList", *this);
  return ints_;
}
std::vector<double> IValue::toDoubleVector() const {
  if (!isDoubleList()) wrong_kind("toDoubleVector", "a DoubleList", *this);
  return doubles_;
}
std::vector<Tensor> IValue::toTensorVector() const {
  if (!isTensorList()) wrong_kind("toTensorVector", "a TensorList", *this);
  return tensors_;
}
Scalar IValue::toScalar() const {
  if (isDouble()) return double_;
  if (isInt()) return int_;
  if (isBool()) return bool_;
  wrong_kind("toScalar", "a number (Double, Int or Bool)", *this);
}

std::string IValue::tagKind() const {
  static const char* const kinds[] = {"None", "Tensor", "Double", "Int", "Bool", "String", "IntList", "DoubleList",
                                      "TensorList"};
  return kinds[static_cast<int>(kind_)];
}

}  // namespace graft
