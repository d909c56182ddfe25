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
  if (s.is_bool()) v_ = s.to_bool();
  else if (s.is_integral()) v_ = s.to_long();
  else v_ = s.to_double();
}

const Tensor& IValue::toTensor() const {
  if (!isTensor()) wrong_kind("toTensor", "a Tensor", *this);
  return std::get<Tensor>(v_);
}
double IValue::toDouble() const {
  if (!isDouble()) wrong_kind("toDouble", "a Double", *this);
  return std::get<double>(v_);
}
int64_t IValue::toInt() const {
  if (!isInt()) wrong_kind("toInt", "an Int", *this);
  return std::get<int64_t>(v_);
}
bool IValue::toBool() const {
  if (!isBool()) wrong_kind("toBool", "a Bool", *this);
  return std::get<bool>(v_);
}
const std::string& IValue::toStringRef() const {
  if (!isString()) wrong_kind("toStringRef", "a String", *this);
  return std::get<std::string>(v_);
}
std::vector<int64_t> IValue::toIntVector() const {
  if (!isIntList()) wrong_kind("toIntVector", "an IntList", *this);
  return std::get<std::vector<int64_t>>(v_);
}
std::vector<double> IValue::toDoubleVector() const {
  if (!isDoubleList()) wrong_kind("toDoubleVector", "a DoubleList", *this);
  return std::get<std::vector<double>>(v_);
}
std::vector<Tensor> IValue::toTensorVector() const {
  if (!isTensorList()) wrong_kind("toTensorVector", "a TensorList", *this);
  return std::get<std::vector<Tensor>>(v_);
}
Scalar IValue::toScalar() const {
  if (isDouble()) return std::get<double>(v_);
  if (isInt()) return std::get<int64_t>(v_);
  if (isBool()) return std::get<bool>(v_);
  wrong_kind("toScalar", "a number (Double, Int or Bool)", *this);
}

std::string IValue::tagKind() const {
  static const char* const kinds[] = {"None", "Tensor", "Double", "Int", "Bool", "String", "IntList", "DoubleList",
                                      "TensorList"};
  return kinds[v_.index()];
}

}  // namespace graft
