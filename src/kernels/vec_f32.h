// float32 fast paths for contiguous arrays: exp, sigmoid, gelu (both forms) and their backward,
// add/sub/mul/div, sum, softmax and log_softmax. The array forms (vec_f32.cpp) are compiled once per
// vector width and picked at load time, like tanh_f32 (Note [Fast float32 tanh]).
//
// Note [Fast float32 kernels]
// graft's generic loops (kernels::map, kernels::reduce) are compiled for the x86-64 baseline (SSE2)
// and call libm per element. For contiguous float32 tensors the ops call the array functions below
// instead. Each is a loop around a branch-free scalar formula (selects are bit masks, as in
// tanh_f32: GCC keeps ?: and std::min as branches under -ftrapping-math, which stops vectorisation),
// compiled with target_clones("default", "avx2", "avx512f") and fp-contract=off, so every processor
// gets the same bits, and the scalar formulas here (used by the ops for strided tensors) give the
// same bits as the arrays. Large arrays are split with graft::parallel_for.
//
// Note [Fast float32 exp]
// e^x = 2^n e^r, n = round(x / ln 2) (adding 1.5 * 2^23 rounds to an integer in the low mantissa
// bits, so NaN stays NaN), r = (x - n ln2_hi) - n ln2_lo with ln2_hi holding 16 bits so n ln2_hi and
// the first subtraction are exact; |r| <= ln2 / 2 and e^r is its Taylor polynomial of degree 7
// (truncation 5e-9 relative). 2^n is applied as two factors 2^(n/2) 2^(n - n/2), each a normal float
// for n in [-150, 128]: the first product is exact, the second rounds once, so results in the
// denormal range are correctly rounded from e^r and not flushed. x is clamped (by masks) to
// [-104, 89] first: e^-104 rounds to 0 and e^89 overflows to inf, so -inf -> 0 and +inf -> inf.
// Measured against exp in double, rounded: at most 2 ulp over [-104, 89] (tests/ops/test_vector_kernels.cpp);
// denormal results within 1 unit of the smallest denormal.
// Traps: the float Horner evaluation (no FMA, by design) dominates the error; the magic-number trick
// needs |x / ln 2| < 2^22, which the clamp guarantees.
//
// Note [Fast float32 sigmoid]
// sigmoid(x) = 1 / (1 + e^-|x|) for x >= 0 and e^-|x| / (1 + e^-|x|) for x < 0: one exp of a
// non-positive argument, no overflow, and for x < -87 the result is the (denormal) e^x rather than
// 0 as in 1 / (1 + e^-x). Error: exp's 2 ulp, plus one rounding in 1 + e and in the division: at most
// 4 ulp (measured: see the test). NaN -> NaN, +-inf -> 1 / 0, -0 -> 0.5.
//
// Note [Fast float32 gelu]
// approximate = "tanh": y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written as
// y = x sigmoid(2u) (1 + tanh(u) = 2 sigmoid(2u)), which has no cancellation for x < 0, where
// 1 + tanh(u) loses every digit (PyTorch's float formula returns 0 for x < -5.5; this one keeps the
// tiny negative values). Relative error a few ulp (the sigmoid's, plus the rounding of u, whose effect
// grows like |u|; x^3 overflowing to inf still gives the right limit).
// approximate = "none": y = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2, so only erfc(z), z = |x|/sqrt 2
// >= 0, is needed: Phi = erfc(z)/2 for x < 0 and 1 - erfc(z)/2 for x >= 0 (no cancellation on
// either side). erfc(z) = e^(-z^2) t g(t - 0.58), t = 2 / (2 + z) in (0.16, 1] for z in [0, 10.5]:
// erfc(z) e^(z^2) / t is smooth and lies in [0.28, 1] there; g is a degree-10 polynomial fitted with
// mpmath.chebyfit (40 digits) on t - 0.58 and rounded to float (relative error 2e-7 in float
// arithmetic, measured on 4000 points). e^(-z^2) = e^(-x^2/2) is conditioned like x^2, so x^2 is
// split exactly: x = xh + xl with xh holding 12 bits, x^2 = xh^2 (exact) + xl (x + xh), and the low
// part enters the exp's reduced argument (exp_parts). |x| is clamped to 14.8, beyond which y rounds
// to -0 (x < 0) or x. Error: a few ulp; denormal results (x < -13.2) within a few denormal units.
// The backward passes (without create_graph) use the same pieces: dy/dx = Phi(x) + x phi(x),
// phi(x) = e^(-x^2/2) / sqrt(2 pi); for "tanh", with s = sigmoid(2u):
// dy/dx = s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace graft::kernels {

namespace vec_detail {
// c ? a : b by bit masks (vectorises; NaN in the unselected operand does not leak).
inline float select(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// e^(yh + yl) for yh in [-250, 89] and |yl| small against ln 2 (Note [Fast float32 exp]).
template <bool Low>
inline float exp_parts(float yh, float yl) {
  constexpr float kMagic = 0x1.8p23f;
  const float k = yh * 1.44269504088896341f + kMagic;
  const float n = k - kMagic;
  const uint32_t ni = std::bit_cast<uint32_t>(k) - std::bit_cast<uint32_t>(kMagic);  // n, two's complement
  float r = (yh - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
  if constexpr (Low) r = r + yl;
  const float r5 = 1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040));
  const float er = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * r5))));
  // 2^n as 2^n1 2^n2, n1 = floor(n / 2): both normal for n in [-252, 254]. Unsigned arithmetic
  // (the shift of the signed value is arithmetic in C++20): garbage for NaN, never UB.
  const uint32_t n1 = static_cast<uint32_t>(static_cast<int32_t>(ni) >> 1);
  const uint32_t n2 = ni - n1;
  const float s1 = std::bit_cast<float>((n1 + 127u) << 23);
  const float s2 = std::bit_cast<float>((n2 + 127u) << 23);
  return (er * s1) * s2;
}
}  // namespace vec_detail

inline float exp_f32(float x) {
  using vec_detail::select;
  const float c = select(x < -104.0f, -104.0f, select(x > 89.0f, 89.0f, x));  // NaN stays NaN
  return vec_detail::exp_parts<false>(c, 0.0f);
}

inline float sigmoid_f32(float x) {
  const float e = exp_f32(-std::fabs(x));
  return vec_detail::select(x < 0.0f, e, 1.0f) / (1.0f + e);
}

// gelu, approximate = "tanh" (Note [Fast float32 gelu]).
inline float gelu_tanh_f32(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x * sigmoid_f32(2.0f * u);
}

namespace vec_detail {
// For gelu (approximate = "none"): erfc(|x| / sqrt 2) and e^(-x^2/2) (Note [Fast float32 gelu]).
struct GeluParts {
  float erfc, gauss;
};
inline GeluParts gelu_parts(float x) {
  const float a = std::fabs(x);
  const float ac = select(a > 14.8f, 14.8f, a);  // NaN stays NaN
  const float z = ac * 0.70710678118654752f;
  const float t = 2.0f / (2.0f + z);
  const float s = t - 0.58f;
  const float g =
      0.5694087147712708f +
      s * (0.7790188193321228f +
           s * (0.5868536829948425f +
                s * (0.08514788001775742f +
                     s * (-0.2033398449420929f +
                          s * (-0.05164145678281784f +
                               s * (0.11387404799461365f +
                                    s * (0.0042737508192658424f +
                                         s * (-0.07331410050392151f +
                                              s * (0.016056803986430168f + s * 0.033485040068626404f)))))))));
  const float xh = std::bit_cast<float>(std::bit_cast<uint32_t>(ac) & 0xFFFFF000u);  // 12 significant bits
  const float xl = ac - xh;
  const float gauss = exp_parts<true>(-(xh * xh) * 0.5f, -(xl * (ac + xh)) * 0.5f);
  return {gauss * (t * g), gauss};
}
}  // namespace vec_detail

// gelu, approximate = "none": x Phi(x) (Note [Fast float32 gelu]).
inline float gelu_f32(float x) {
  const vec_detail::GeluParts p = vec_detail::gelu_parts(x);
  const float neg = (x * 0.5f) * p.erfc;
  const float pos = x * (1.0f - 0.5f * p.erfc);
  return vec_detail::select(x < 0.0f, neg, pos);
}

// d gelu(x)/dx, approximate = "none": Phi(x) + x phi(x).
inline float gelu_grad_f32(float x) {
  const vec_detail::GeluParts p = vec_detail::gelu_parts(x);
  const float half = 0.5f * p.erfc;
  const float cdf = vec_detail::select(x < 0.0f, half, 1.0f - half);
  return cdf + x * (p.gauss * 0.3989422804014327f);
}

// d gelu(x)/dx, approximate = "tanh".
inline float gelu_tanh_grad_f32(float x) {
  const float x2 = x * x;
  const float u = 0.7978845608028654f * (x + 0.044715f * x2 * x);
  const float s = sigmoid_f32(2.0f * u);
  const float du = 0.7978845608028654f * (1.0f + 0.134145f * x2);
  return s + 2.0f * x * (s * (1.0f - s)) * du;
}

// ---- array forms (vec_f32.cpp), contiguous, any n >= 0 ----
void exp_f32(const float* in, float* out, int64_t n);
void sigmoid_f32(const float* in, float* out, int64_t n);
void gelu_f32(const float* in, float* out, int64_t n);
void gelu_tanh_f32(const float* in, float* out, int64_t n);
// out = g * y (1 - y), y = sigmoid(x) (the fused backward, Note [Fused backward passes]).
void sigmoid_backward_f32(const float* g, const float* y, float* out, int64_t n);
// out = g * gelu'(x).
void gelu_backward_f32(const float* g, const float* x, float* out, int64_t n, bool tanh_form);

enum class BinaryOp { Add, Sub, Mul, Div };
// out = a op b elementwise; Add/Sub compute a +- alpha * b (alpha ignored for Mul/Div).
void binary_f32(BinaryOp op, const float* a, const float* b, float alpha, float* out, int64_t n);
// out = a op s (Add: a + s).
void binary_scalar_f32(BinaryOp op, const float* a, float s, float* out, int64_t n);
// a is [rows, cols], b is [cols] broadcast over the rows: out = a op (alpha *) b.
void binary_row_f32(BinaryOp op, const float* a, const float* b, float alpha, float* out, int64_t rows, int64_t cols);

// Note [Fast float32 sum]
// The sum of n floats: fixed blocks of kSumBlock = 4096 values, each summed in 64 float lanes
// (lane j takes elements j, j + 64, ...: 64 sequential additions per lane, vectorised at any width
// with the same bits) whose totals are then added pairwise (6 levels); the block sums are added in
// double in block order. The blocks are fixed by n alone, so the result does not depend on the
// number of threads (blocks are summed in parallel, combined in order). Error: about
// (64 + 6) u per element in the worst case (u = 2^-24), typically sqrt of that, plus the block
// combination in double; a naive float loop over 4M values drifts by ~1e-4 relative.
// sum_rows_f32 sums each row of [rows, cols] with the same function (same bits as sum_f32 of a row).
inline constexpr int64_t kSumBlock = 4096;
float sum_f32(const float* x, int64_t n);
void sum_rows_f32(const float* x, float* out, int64_t rows, int64_t cols);

// Note [Fast float32 softmax]
// Each row of [rows, cols]: max in 16 lanes (a NaN is skipped there, but reaches the sum and so
// makes the whole row NaN, as in PyTorch; an all -inf row gives NaN from -inf - -inf), then
// e = exp_f32(x - max) stored, summed as sum_f32 sums (Note [Fast float32 sum]), then one pass:
// y = e * (1 / sum), or y = (x - max) - log(sum) for log_softmax (std::log once per row). Four flat
// passes over a row that normally sits in L1, each vectorised on its own. Rows run in parallel.
void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t cols, bool log);

}  // namespace graft::kernels
