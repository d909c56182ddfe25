// Scalar: a number passed to an op (t * 2, full({2}, 1.5)), integral or floating.
#pragma once

#include <cstdint>
#include <type_traits>

namespace graft {

class Scalar {
 public:
  Scalar() = default;
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T v) {  // NOLINT: implicit, as in LibTorch
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v;
      d_ = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
      d_ = static_cast<double>(v);
    } else {
      kind_ = Kind::Float;
      d_ = static_cast<double>(v);
      i_ = static_cast<int64_t>(v == v && v < 9.2e18 && v > -9.2e18 ? v : 0);
    }
  }
  double to_double() const { return d_; }
  // LibTorch's spellings.
  double toDouble() const { return to<double>(); }
  float toFloat() const { return to<float>(); }
  int64_t toLong() const { return to<int64_t>(); }
  int toInt() const { return to<int>(); }
  bool toBool() const { return to_bool(); }
  bool isFloatingPoint() const { return is_floating_point(); }
  bool isIntegral(bool include_bool) const { return is_integral() || (include_bool && is_bool()); }
  bool isBoolean() const { return is_bool(); }
  int64_t to_long() const { return i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0 : i_ != 0; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_);
    else return static_cast<T>(d_);
  }

 private:
  enum class Kind : uint8_t { Int, Float, Bool };
  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double d_ = 0;
};

}  // namespace graft
