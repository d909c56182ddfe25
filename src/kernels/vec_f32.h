// float32 fast paths for contiguous arrays: exp, sigmoid, tanh, gelu (both forms) and their
// backward, add/sub/mul/div, sum, softmax and log_softmax. The array forms (vec_f32.cpp) are compiled
// once per vector width and picked at load time (vector_clones.h).
//
// Note [Fast float32 kernels]
// graft's generic loops (kernels::map, kernels::reduce) are compiled for the x86-64 baseline (SSE2)
// and call libm per element. For contiguous float32 tensors the ops call the array functions below
// instead. Each is a loop around a branch-free scalar formula (selects are bit masks, vec_detail::select:
// GCC keeps ?: and std::min as branches under -ftrapping-math, which stops vectorisation),
// compiled per vector width (GRAFT_VEC_CLONES, vector_clones.h) and fp-contract=off, so every processor
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
// Measured against exp in double, rounded: at most 2 ulp over [-104, 89] (tests/kernels/test_vector_kernels.cpp);
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
// Note [Fast float32 tanh]
// glibc's tanhf is a scalar call of about ten nanoseconds; in a tanh MLP of width 256 the forward's
// tanh took six times as long as its matrix product, and checkpointing, which runs the forward
// twice, paid for it twice. This version is branch-free (both formulas are evaluated and one is
// selected by bit masks), so GCC vectorises loops around it:
//   |x| < 0.55:  tanh(a) = a + a^3 p(a^2), p a degree-4 Chebyshev fit of (tanh(s) - s) / s^3 on
//                s^2 in [0, 0.3025] (fitted with mpmath; relative error 4e-9 in exact arithmetic);
//   otherwise:   tanh(a) = 1 - 2 / (e^(2a) + 1), a clamped to 10 (the correctly rounded float32
//                tanh is 1 from 9.01 on). e^(2a) is exp_parts of Note [Fast float32 exp]: 2^n e^r,
//                e^r by its Taylor polynomial of degree 7; for 2a in [0, 20] both factors of 2^n and
//                the products by them are exact, so this is e^r 2^n rounded once.
// The cut at 0.55 keeps the cancellation in 1 - 2 / (e^(2a) + 1) to one bit. Against tanh in double,
// rounded, over 2 * 10^6 values in [-12, 12] and tiny ones: at most 2 ulp
// (tests/kernels/test_tanh_float32.cpp). NaN stays NaN (the rounding adds a magic number instead of
// converting to int), +-inf gives +-1, -0 gives -0.
// The array form tanh_f32(in, out, n) (vec_f32.cpp) is compiled three times, for the SSE2
// baseline, AVX2 and AVX-512, and picked at load time (GCC target_clones): 0.5 ms per million values
// on AVX-512, against 2.5 at SSE2 width and 19 for tanhf. Contraction into FMA is off there, so
// every variant returns the same bits as the scalar function at the baseline.
//
// Note [Fast float32 gelu]
// approximate = "tanh": y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written as
// y = x sigmoid(2u) (1 + tanh(u) = 2 sigmoid(2u)), which has no cancellation for x < 0, where
// 1 + tanh(u) loses every digit (PyTorch's float formula returns 0 for x < -5.5; this one keeps the
// tiny negative values). Relative error a few ulp (the sigmoid's, plus the rounding of u, whose effect
// grows like |u|; x^3 overflowing to inf still gives the right limit).
// approximate = "none": y = x Phi(x). With a = |x| and L = Phi(-a) = erfc(a / sqrt 2) / 2:
// y = -a L for x < 0 and x - a L for x >= 0, i.e. y = relu(x) - a L (no cancellation on either
// side; relu is x times a 0/1 step from the sign bit, so -inf gives -inf * 0 = NaN, as PyTorch).
// L = e^(-a^2/2) f(a) with f(a) = erfc(a/sqrt 2) e^(a^2/2) / 2 smooth and positive, and 1/f has a
// linear asymptote: 1/f(a) = K a + S(a) / Q(a), K = sqrt(2 pi), S of degree 3, Q monic of degree 4,
// S(0) = 2 Q(0) (f(0) = 1/2 exactly); minimax relative error 4.7e-8 on [0, 13.25] with the float
// coefficients (tools/fit_gelu.py). So f = Q / (K a Q + S): all coefficients positive (Horner
// without cancellation), and the errors of Q largely cancel between numerator and denominator.
// e^(-a^2/2) = 2^-m e^(-rho/2), rho = a^2 - 2 m ln 2. a^2 is conditioned like a, so it is split
// exactly: a = xh + xl, xh holding 12 bits, a^2 = xh^2 (exact) + xl (a + xh); m = round(xh^2 (1 +
// 2^-11) / (2 ln 2)) (centred, as a^2 lies in [xh^2, xh^2 (1 + 2^-10)]) and 2 ln 2 = hi + lo with
// hi of 15 bits, so m hi and xh^2 - m hi are exact and |rho| <= 0.81. e^(-rho/2) = P(rho) / P(-rho)
// (P = 1 - rho/4 + c2 rho^2 + c3 rho^3, from even and odd parts: 8 operations, minimax relative
// error 5.5e-10, tools/fit_gelu.py). Everything then shares one division:
// a L = (a Q P(rho) 2^(64 - m)) / (2^64 (K a Q + S) P(-rho)); the 2^64 (folded into S's
// coefficients and K) keeps the numerator normal down to a = 14.8 (m <= 158), so the quotient is the
// only rounding into the denormal range (results for x < -13.2 are correctly rounded from it).
// a = |x| is clamped to 14.8 (an unsigned min on the bit patterns), beyond which y rounds to -0
// (x < 0) or x; NaN and +-inf come out through relu_times_step(x). No FMA anywhere (same bits in
// every clone and in the scalar form). The AVX-512 loop is 53 instructions per 16 floats; the
// former formula (erfc = e^(-z^2) t g(t), t = 2 / (2 + z), g of degree 10, Taylor exp of degree 7
// with the two-factor 2^n) was 80: 20 in g, ~30 in the exp and the a^2 split, 1 division.
// Error, measured: at most 5 ulp from the double reference over every 7th float in [-16, 16] and
// around each step of m (the former formula: 6); results for x < -13.2 within a few denormal
// units; tests/kernels/test_vector_kernels.cpp allows 6 (Gelu, GeluBoundaries).
// Speed, measured (bench/graft_kernels --filter=gelu --reps=21, AMD EPYC Zen 5, AVX-512 clone, best
// of 21 repetitions, another build running on the second core): 1 thread, 64K 0.0237 ms (former
// 0.0533) against LibTorch 1.13's 0.0322 ms, 4M 1.55 ms (former 3.44) against 2.93 ms; 2 threads,
// 4M 0.83 ms (former 1.72). The backward loop alone (64K, 1 thread): 0.40 ns per element (former 0.72).
// The backward passes (without create_graph) use the same pieces: dy/dx = Phi(x) + x phi(x),
// phi(x) = e^(-x^2/2) / sqrt(2 pi), with 2^64 e^(-x^2/2) = P(rho) 2^(64-m) / P(-rho) and
// L = Q 2^64 e^(-x^2/2) / (2^64 (K a Q + S)) (two divisions); for "tanh", with s = sigmoid(2u):
// dy/dx = s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "activation_math.h"

namespace graft::kernels {

namespace vec_detail {
// c ? a : b by bit masks (vectorises; NaN in the unselected operand does not leak).
inline float select(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// e^y for y in [-250, 89] (Note [Fast float32 exp]).
inline float exp_parts(float y) {
  constexpr float kMagic = 0x1.8p23f;
  const float k = y * 1.44269504088896341f + kMagic;
  const float n = k - kMagic;
  const uint32_t ni = std::bit_cast<uint32_t>(k) - std::bit_cast<uint32_t>(kMagic);  // n, two's complement
  const float r = (y - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
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
  return vec_detail::exp_parts(c);
}

inline float sigmoid_f32(float x) {
  const float e = exp_f32(-std::fabs(x));
  return vec_detail::select(x < 0.0f, e, 1.0f) / (1.0f + e);
}

// tanh (Note [Fast float32 tanh]).
inline float tanh_f32(float x) {
  using vec_detail::select;
  const float a = std::fabs(x);
  // Small |x|: the odd polynomial (coefficients highest first in the Horner form below).
  const float t = a * a;
  const float p = -0.33333332008f +
                  t * (0.13333113729f + t * (-0.0539094288275f + t * (0.0213093886644f + t * -0.00661022783111f)));
  const float small = a + a * t * p;
  // Large |x|: through e^(2a), a clamped to 10 (NaN stays NaN).
  const float large = 1.0f - 2.0f / (vec_detail::exp_parts(2.0f * select(a > 10.0f, 10.0f, a)) + 1.0f);
  return std::copysign(select(a < 0.55f, small, large), x);
}

// gelu, approximate = "tanh" (Note [Fast float32 gelu]).
inline float gelu_tanh_f32(float x) {
  using namespace activation;  // kSqrt2OverPiF, kGeluCF
  const float u = kSqrt2OverPiF * (x + kGeluCF * x * x * x);
  return x * sigmoid_f32(2.0f * u);
}

namespace vec_detail {
// x for x > 0, -0 for x <= 0 and NaN for -inf and NaN: x * (0 or 1), the step from the sign bit.
inline float relu_times_step(float x) {
  const uint32_t neg = static_cast<uint32_t>(std::bit_cast<int32_t>(x) >> 31);
  return x * std::bit_cast<float>(0x3F800000u & ~neg);
}

// The pieces of gelu (approximate = "none") for a = min(|x|, 14.8) (Note [Fast float32 gelu]):
// Phi(-a) = e^(-a^2/2) f(a), f(a) = Q(a) / (K a Q(a) + S(a)), and e^(-a^2/2) = 2^-m P(rho) / P(-rho).
// With aq = a Q(a), eps = P(rho) 2^(64-m), base = 2^64 (K aq + S(a)), epm = P(-rho):
// a Phi(-a) = (aq eps) / (base epm) and e^(-a^2/2) = 2^-64 eps / epm.
struct GeluParts {
  float ac, q, aq, eps, base, epm;
};
inline GeluParts gelu_parts(float x) {
  // a = min(|x|, 14.8) on the bit patterns: non-negative floats are ordered as unsigned integers
  // (one vpminud at AVX2/AVX-512; 13% faster there than a compare and blend). A NaN becomes 14.8
  // here; the results are NaN through x itself (relu_times_step(x), x phi(x)).
  const uint32_t ab = std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
  const float ac = std::bit_cast<float>(ab < 0x416CCCCDu ? ab : 0x416CCCCDu);  // 0x416CCCCD = 14.8f
  // 1/f(a) = K a + S(a) / Q(a): tools/fit_gelu.py, S(0) = 2 Q(0) exactly; S carries the 2^64.
  constexpr float k64 = 0x1p64f;
  const float s = 177.181335f * k64 + ac * (87.5933075f * k64 + ac * (22.4824791f * k64 + ac * (2.50423956f * k64)));
  const float q = 88.5906677f + ac * (84.1433105f + ac * (37.4610672f + ac * (8.93499947f + ac)));
  const float aq = ac * q;
  const float base = aq * (2.50662827463100050f * k64) + s;
  // a^2 = xh^2 + xl (a + xh) exactly enough: xh holds 12 bits, so xh^2 is exact.
  const float xh = std::bit_cast<float>(std::bit_cast<uint32_t>(ac) & 0xFFFFF000u);
  const float xl = ac - xh;
  const float xx = xh * xh;
  // m = round(a^2 / (2 ln 2)), estimated from xh^2 (1 + 2^-11) (a^2 lies in [xh^2, xh^2 (1 + 2^-10)]).
  constexpr float kMagic = 0x1.8p23f;
  const float k = xx * (0.72134752044448170f * (1.0f + 0x1p-11f)) + kMagic;
  const float m = k - kMagic;
  // rho = a^2 - 2 m ln 2 in [-0.81, 0.81]; 2 ln 2 = hi + lo, hi with 15 bits, so m hi and xx - m hi are exact.
  const float rho = (xx - m * 1.38629150390625f) + (xl * (ac + xh) - m * 2.8572136405724535e-06f);
  // e^(-rho/2) = P(rho) / P(-rho), P = 1 - rho/4 + c2 rho^2 + c3 rho^3 (tools/fit_gelu.py).
  const float r2 = rho * rho;
  const float even = 1.0f + r2 * 0.0249927044f;
  const float odd = rho * (-0.25f + r2 * -0.00103985122f);
  // 2^(64 - m): exponent field 191 - m in [33, 191] (m <= 158 for a <= 14.8); bits(k) = bits(kMagic) + m.
  const uint32_t e = (191u + std::bit_cast<uint32_t>(kMagic) - std::bit_cast<uint32_t>(k)) << 23;
  return {ac, q, aq, (even + odd) * std::bit_cast<float>(e), base, even - odd};
}
}  // namespace vec_detail

// gelu, approximate = "none": x Phi(x) = relu(x) - |x| Phi(-|x|) (Note [Fast float32 gelu]).
inline float gelu_f32(float x) {
  const vec_detail::GeluParts p = vec_detail::gelu_parts(x);
  return vec_detail::relu_times_step(x) - (p.aq * p.eps) / (p.base * p.epm);
}

// d gelu(x)/dx, approximate = "none": Phi(x) + x phi(x).
inline float gelu_grad_f32(float x) {
  const vec_detail::GeluParts p = vec_detail::gelu_parts(x);
  const float gauss64 = p.eps / p.epm;           // 2^64 e^(-x^2/2)
  const float lower = (p.q * gauss64) / p.base;  // Phi(-|x|)
  const float cdf = vec_detail::select(x < 0.0f, lower, 1.0f - lower);
  return cdf + x * (gauss64 * (0x1p-64f * activation::kInvSqrt2PiF));
}

// d gelu(x)/dx, approximate = "tanh".
inline float gelu_tanh_grad_f32(float x) {
  using namespace activation;  // kSqrt2OverPiF, kGeluCF, kGeluC3F
  const float x2 = x * x;
  const float u = kSqrt2OverPiF * (x + kGeluCF * x2 * x);
  const float s = sigmoid_f32(2.0f * u);
  const float du = kSqrt2OverPiF * (1.0f + kGeluC3F * x2);
  return s + 2.0f * x * (s * (1.0f - s)) * du;
}

// ---- array forms (vec_f32.cpp), contiguous, any n >= 0 ----
void exp_f32(const float* in, float* out, int64_t n);
void sigmoid_f32(const float* in, float* out, int64_t n);
void tanh_f32(const float* in, float* out, int64_t n);
void gelu_f32(const float* in, float* out, int64_t n);
void gelu_tanh_f32(const float* in, float* out, int64_t n);
// relu: out = 0 where in < 0, else in (NaN and -0 pass through, as math::relu).
void relu_f32(const float* in, float* out, int64_t n);
// out = g where y > 0, else 0 (relu's backward from its output y; a NaN y gives 0).
void relu_backward_f32(const float* g, const float* y, float* out, int64_t n);
// out = g * y (1 - y), y = sigmoid(x) (the fused backward, Note [Fused backward passes]).
void sigmoid_backward_f32(const float* g, const float* y, float* out, int64_t n);
// out = g * gelu'(x).
void gelu_backward_f32(const float* g, const float* x, float* out, int64_t n, bool tanh_form);

// One LSTM step for one batch row (Note [Fused recurrent layers] in src/ops/rnn.cpp): with
// a = gx + gh, 4 H values in PyTorch's gate order (i, f, g, o), i = sigmoid(a_i), f = sigmoid(a_f),
// g = tanh(a_g), o = sigmoid(a_o), c = f c_prev + i g and h = o tanh(c); gates receives (i, f, g, o).
// Vectorised across j, with the bits of the scalar sigmoid_f32 / tanh_f32 formulas at every width.
void lstm_cell_f32(const float* gx, const float* gh, const float* c_prev, float* gates, float* c, float* h, int64_t H);
// Its backward for one row: from the gates (i, f, g, o), c, c_prev, the incoming dh (dh_next + the
// output's gradient gout) and dc, the pre-activation gradients dgates (4 H) and dc_prev (in dc);
// dh_prev is zeroed (the recurrence's product adds to it afterwards).
void lstm_cell_backward_f32(const float* gates, const float* c, const float* c_prev, const float* dh_next,
                            const float* gout, float* dc, float* dgates, float* dh_prev, int64_t H);

// One GRU step for one batch row, in PyTorch's gate order (r, z, n): r = sigmoid(gx_r + gh_r + bh_r),
// z = sigmoid(gx_z + gh_z + bh_z), ghn = gh_n + bh_n, n = tanh(gx_n + r ghn), h = (1 - z) n + z h_prev;
// gates receives (r, z, n) and ghn_out the ghn the backward needs. bh (3 H) must be given (zeros
// when the layer has no bias: adding 0 is what the scalar formula does).
void gru_cell_f32(const float* gx, const float* gh, const float* bh, const float* h_prev, float* gates, float* ghn_out,
                  float* h, int64_t H);
// Its backward for one row: dgx = (dr, dz, dn) and dgh = (dr, dz, dn r) at the pre-activations,
// dh_prev = dh z (the recurrence's product adds to it afterwards).
void gru_cell_backward_f32(const float* gates, const float* ghn, const float* h_prev, const float* dh_next,
                           const float* gout, float* dgx, float* dgh, float* dh_prev, int64_t H);

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
