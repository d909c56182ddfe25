// float16 (IEEE 754 binary16) and bfloat16 storage types and their conversions, the one set that
// Tensor::to, printing and safetensors share.
//
// Note [Half-precision conversions]
//   float16:  1 sign, 5 exponent (bias 15), 10 mantissa bits. Largest finite 65504 = 0x7bff;
//             smallest normal 2^-14 = 0x0400; smallest subnormal 2^-24 = 0x0001.
//   bfloat16: 1 sign, 8 exponent (bias 127), 7 mantissa bits: the top half of a float32, so it has
//             float32's range (largest finite 0x7f7f ~ 3.39e38) with 3 significant decimal digits.
// Widening (to float32 or float64) is exact. Narrowing rounds to nearest, ties to even, from the
// source value itself: float64 -> float16 is rounded once (going through float32 would round twice
// and can land on the wrong side of a tie). Consequences worth knowing:
//   - float16 overflows to +-inf from 65520 = 65504 + half an ulp up (the tie goes to inf, whose
//     "mantissa" 0 is even); 65519.99 still rounds to 65504;
//   - float16 underflows through the subnormals: 2^-25 (a tie between 0 and 2^-24) rounds to 0,
//     anything above it to at least 2^-24;
//   - bfloat16 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and rounds to 1.0 (even mantissa);
//   - NaN stays NaN (made quiet, sign and top payload bits kept); +-inf stay +-inf.
#pragma once

#include <bit>
#include <cstdint>

#include "graft/core/dtype.h"

namespace graft {

namespace half_detail {

// Rounds a float64 to the binary format with kExp exponent bits and kMant mantissa bits (at most
// 16 bits in all), ties to even, and returns its bit pattern.
template <int kExp, int kMant>
constexpr uint16_t round_to_bits(double d) {
  static_assert(1 + kExp + kMant == 16, "a 16-bit format");
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr uint64_t kInf = ((uint64_t{1} << kExp) - 1) << kMant;  // the bits of +inf
  const uint64_t x = std::bit_cast<uint64_t>(d);
  const auto sign = static_cast<uint16_t>((x >> 63) << (kExp + kMant));
  const uint64_t ax = x & 0x7fff'ffff'ffff'ffffULL;
  if (ax >= 0x7ff0'0000'0000'0000ULL) {
    if (ax == 0x7ff0'0000'0000'0000ULL) return static_cast<uint16_t>(sign | kInf);
    // NaN: the quiet bit set (so the mantissa is never 0, which would read as inf), payload's top
    // bits kept.
    const uint64_t payload = (ax >> (52 - kMant)) & ((uint64_t{1} << kMant) - 1);
    return static_cast<uint16_t>(sign | kInf | (uint64_t{1} << (kMant - 1)) | payload);
  }
  // |d| = m * 2^(e - 52) with m < 2^53 (the implicit bit included for normal doubles; double
  // subnormals are far below every target's range and round to 0 below).
  const int biased = static_cast<int>(ax >> 52);
  const int e = biased - 1023;
  uint64_t m = ax & ((uint64_t{1} << 52) - 1);
  if (biased != 0) m |= uint64_t{1} << 52;
  // Normal targets keep kMant bits after the leading one; subnormal targets count in units of the
  // smallest subnormal 2^(1 - kBias - kMant).
  const bool normal = e >= 1 - kBias;
  const int shift = normal ? 52 - kMant : 52 - kMant + (1 - kBias - e);
  if (shift >= 54) return sign;  // m < 2^53 <= half a unit: rounds to (signed) zero
  uint64_t n = m >> shift;
  const uint64_t rem = m & ((uint64_t{1} << shift) - 1), halfway = uint64_t{1} << (shift - 1);
  if (rem > halfway || (rem == halfway && (n & 1))) ++n;
  if (!normal) return static_cast<uint16_t>(sign | n);  // n == 2^kMant encodes the smallest normal
  // n holds the leading one at bit kMant; adding it onto (biased exponent - 1) lets a rounding carry
  // (n == 2^(kMant+1)) step the exponent up by itself.
  const uint64_t bits = (static_cast<uint64_t>(e + kBias - 1) << kMant) + n;
  return static_cast<uint16_t>(sign | (bits >= kInf ? kInf : bits));
}

}  // namespace half_detail

// ---- float16 ----
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf, or NaN with its payload
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal mant * 2^-24: shift the leading one up to the implicit position
    uint32_t e = 113;  // the float32 biased exponent of 2^-14
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}
inline uint16_t double_to_half_bits(double d) { return half_detail::round_to_bits<5, 10>(d); }
inline uint16_t float_to_half_bits(float f) { return double_to_half_bits(static_cast<double>(f)); }

// ---- bfloat16 ----
inline float bfloat16_bits_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
inline uint16_t float_to_bfloat16_bits(float f) {
  // float32 and bfloat16 share the exponent, so rounding is integer arithmetic on the bits: add
  // just under half of the dropped 16 bits' range, plus one when the kept part is odd (ties to
  // even); a carry steps the exponent, and the largest finite values round up to inf correctly.
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline uint16_t double_to_bfloat16_bits(double d) { return half_detail::round_to_bits<8, 7>(d); }

// The element types of kHalf and kBFloat16 tensors: 16 bits, converted explicitly (no arithmetic;
// kernels compute in float32). Half(x) and BFloat16(x) round to nearest even.
struct Half {
  uint16_t x = 0;
  Half() = default;
  explicit Half(float f) : x(float_to_half_bits(f)) {}
  explicit Half(double d) : x(double_to_half_bits(d)) {}
  static Half from_bits(uint16_t bits) {
    Half h;
    h.x = bits;
    return h;
  }
  float to_float() const { return half_bits_to_float(x); }
  explicit operator float() const { return to_float(); }
};

struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : x(float_to_bfloat16_bits(f)) {}
  explicit BFloat16(double d) : x(double_to_bfloat16_bits(d)) {}
  static BFloat16 from_bits(uint16_t bits) {
    BFloat16 b;
    b.x = bits;
    return b;
  }
  float to_float() const { return bfloat16_bits_to_float(x); }
  explicit operator float() const { return to_float(); }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

template <> constexpr DType dtype_of<Half>() { return DType::Float16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::BFloat16; }

}  // namespace graft
