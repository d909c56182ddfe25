// tanh for float32 without a libm call per element, so that the loop around it vectorises.
//
// Note [Fast float32 tanh]
// glibc's tanhf is a scalar call of about ten nanoseconds; in a tanh MLP of width 256 the forward's
// tanh took six times as long as its matrix product, and checkpointing, which runs the forward
// twice, paid for it twice. This version is branch-free (both formulas are evaluated and one is
// selected by bit masks), so GCC vectorises loops around it:
//   |x| < 0.55:  tanh(a) = a + a^3 p(a^2), p a degree-4 Chebyshev fit of (tanh(s) - s) / s^3 on
//                s^2 in [0, 0.3025] (fitted with mpmath; relative error 4e-9 in exact arithmetic);
//   otherwise:   tanh(a) = 1 - 2 / (e^(2a) + 1), a clamped to 10 (the correctly rounded float32
//                tanh is 1 from 9.01 on). e^y = 2^n e^r with n = round(y / ln 2), r = y - n ln 2
//                (ln 2 split in two parts so that n ln 2 is exact), e^r by its Taylor polynomial of
//                degree 7 (|r| <= ln2 / 2: truncation 5e-9 relative), 2^n built in the exponent bits.
// The cut at 0.55 keeps the cancellation in 1 - 2 / (e^(2a) + 1) to one bit. Against tanh in double,
// rounded, over 2 * 10^6 values in [-12, 12] and tiny ones: at most 2 ulp
// (tests/kernels/test_tanh_float32.cpp). NaN stays NaN (the rounding adds a magic number instead of
// converting to int), +-inf gives +-1, -0 gives -0.
// The array form tanh_f32(in, out, n) (tanh_f32.cpp) is compiled three times, for the SSE2
// baseline, AVX2 and AVX-512, and picked at load time (GCC target_clones): 0.5 ms per million values
// on AVX-512, against 2.5 at SSE2 width and 19 for tanhf. Contraction into FMA is off there, so
// every variant returns the same bits as the scalar function at the baseline.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace graft::kernels {

inline float tanh_f32(float x) {
  const float a = std::fabs(x);
  // Small |x|: the odd polynomial (coefficients highest first in the Horner form below).
  const float t = a * a;
  const float p = -0.33333332008f +
                  t * (0.13333113729f + t * (-0.0539094288275f + t * (0.0213093886644f + t * -0.00661022783111f)));
  const float small = a + a * t * p;
  // Large |x|: through e^(2a).
  const uint32_t clamp = 0u - static_cast<uint32_t>(a > 10.0f);  // min(a, 10) as a mask: NaN stays NaN
  const float y =
      2.0f * std::bit_cast<float>((std::bit_cast<uint32_t>(10.0f) & clamp) | (std::bit_cast<uint32_t>(a) & ~clamp));
  constexpr float kMagic = 0x1.8p23f;  // adding it rounds to an integer held in the low mantissa bits
  const float k = y * 1.44269504088896341f + kMagic;
  const float n = k - kMagic;
  const uint32_t ni = std::bit_cast<uint32_t>(k) - std::bit_cast<uint32_t>(kMagic);  // unsigned: wraps, never UB
  const float r = (y - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;  // ln 2 = hi + lo
  const float r5 = 1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040));
  const float er = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * r5))));
  const float e = er * std::bit_cast<float>((ni + 127u) << 23);  // n in [0, 29]: a normal power of two
  const float large = 1.0f - 2.0f / (e + 1.0f);
  // Select by bit masks rather than ?: or std::min (GCC keeps those as branches under the default
  // -ftrapping-math, which stops vectorisation).
  const uint32_t use_small = 0u - static_cast<uint32_t>(a < 0.55f);
  const uint32_t bits = (std::bit_cast<uint32_t>(small) & use_small) | (std::bit_cast<uint32_t>(large) & ~use_small);
  return std::copysign(std::bit_cast<float>(bits), x);
}

// out[i] = tanh_f32(in[i]) for contiguous arrays, in the widest vectors the processor has.
void tanh_f32(const float* in, float* out, int64_t n);

}  // namespace graft::kernels
