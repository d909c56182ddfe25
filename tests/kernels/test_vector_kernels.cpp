// The float32 fast paths (Note [Fast float32 kernels] in src/kernels/vec_f32.h) against plain loops
// written here in double: exp, sigmoid, gelu (both forms) and their backward, add/sub/mul/div (same
// shape, scalar, row broadcast), sum/mean (all, last dim), softmax/log_softmax (last dim). Sizes
// cover empty arrays, vector tails (7, 15, 16, 17, 31, 33, ...) and multi-chunk arrays; strided and
// other broadcast inputs must take the generic path and agree.
//
// Tolerances: the transcendental kernels are compared in ulps of the correctly rounded float32
// value (the distance on the ordered integer line, so a denormal's ulp is 2^-149): exp 2 ulp (the
// float Horner evaluation, Note [Fast float32 exp]), sigmoid 4, gelu 6 (its error terms add up:
// the rational fits, the Horner roundings, the products and the division; measured 5), backward 8. Arithmetic must be bit-exact (it is one
// IEEE operation, and a double computation of it rounded to float is the same value). Sums use a
// relative tolerance against the exact sum, chosen so that a naive sequential float loop fails it
// (checked below).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../support/test_util.h"

namespace graft::test {

namespace {

namespace F = graft::nn::functional;

const std::vector<int64_t> kSizes = {0, 1, 7, 15, 16, 17, 31, 33, 1023, 100003};
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Ordered position of a float on the integer line (-0 and +0 both at 0).
int64_t ordered(float f) {
  const uint32_t b = std::bit_cast<uint32_t>(f);
  const int64_t mag = static_cast<int64_t>(b & 0x7fffffffu);
  return (b >> 31) ? -mag : mag;
}
// ulps between two floats; NaN against NaN is 0, NaN against a number is "infinite".
int64_t ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  if (std::isinf(a) || std::isinf(b)) return a == b ? 0 : std::numeric_limits<int64_t>::max();
  return std::abs(ordered(a) - ordered(b));
}

// Deterministic pseudo-random floats in [lo, hi) (a 64-bit LCG, independent of graft's generator).
std::vector<float> randoms(int64_t n, float lo, float hi, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) * 0x1p-53;
    x = static_cast<float>(lo + (hi - lo) * u);
  }
  return v;
}

Tensor f32(const std::vector<float>& v, IntArrayRef shape) {
  Tensor t = make_empty(shape, kFloat32);
  float* p = t.data_ptr<float>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return t;
}
Tensor f32(const std::vector<float>& v) { return f32(v, {static_cast<int64_t>(v.size())}); }

std::vector<float> floats(const Tensor& t) {
  const Tensor c = t.contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

// Checks every element of `got` within `tol` ulps of ref(x) rounded to float.
// `extra(x)` adds ulps where the function is ill-conditioned (gelu tanh: see its test).
double no_extra(double) { return 0; }
template <class Ref>
void expect_ulps(const std::vector<float>& xs, const std::vector<float>& got, Ref&& ref, int64_t tol, const char* what,
                 double (*extra)(double) = no_extra) {
  ASSERT_EQ(xs.size(), got.size());
  int64_t worst = 0;
  float worst_at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = static_cast<float>(ref(static_cast<double>(xs[i])));
    // The allowance is capped before the cast (a double past int64's range would be UB to convert;
    // an infinite allowance means any value passes there), and an unbounded distance stays unbounded.
    const double allowance = std::min(extra(static_cast<double>(xs[i])), 1e15);
    const int64_t u = ulps(got[i], want);
    const int64_t d = u == std::numeric_limits<int64_t>::max() ? u : u - static_cast<int64_t>(allowance);
    if (d > worst) worst = d, worst_at = xs[i];
  }
  EXPECT_LE(worst, tol) << what << ": worst at x = " << worst_at;
}

// A dense sweep of [lo, hi] plus the special values.
std::vector<float> sweep(float lo, float hi, int n) {
  std::vector<float> xs;
  for (int i = 0; i <= n; ++i) xs.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n));
  for (float v : {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, -1e-40f, 1e-30f, -1e-30f, 1e-7f, -1e-7f, 1e30f, -1e30f,
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), kInf, -kInf, kNaN})
    xs.push_back(v);
  return xs;
}

double ref_exp(double x) { return std::exp(x); }
double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double ref_gelu(double x) { return std::isinf(x) && x < 0 ? std::nan("") : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double ref_gelu_tanh(double x) {  // x sigmoid(2u): 1 + tanh(u) cancels in double too for x < -5
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  if (std::isinf(x)) return x > 0 ? x : std::nan("");
  return x / (1.0 + std::exp(-2.0 * u));
}

// Runs op on each size (contiguous, fast path) and on a strided copy (generic path): both within
// tol of the reference, and the same bits.
template <class Op, class Ref>
void check_unary(Op&& op, Ref&& ref, float lo, float hi, int64_t tol, const char* what,
                 double (*extra)(double) = no_extra) {
  const std::vector<float> xs = sweep(lo, hi, 400000);
  const Tensor x = f32(xs);
  const Tensor y = op(x);
  ASSERT_EQ(y.dtype(), kFloat32);
  expect_ulps(xs, floats(y), ref, tol, what, extra);
  const Tensor strided = non_contiguous(x);
  ASSERT_FALSE(strided.is_contiguous());
  const std::vector<float> a = floats(y), b = floats(op(strided));
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_TRUE(std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i]) || (std::isnan(a[i]) && std::isnan(b[i])))
        << what << " strided differs at x = " << xs[i];
  for (int64_t n : kSizes) {
    const std::vector<float> v = randoms(n, lo, hi, static_cast<uint64_t>(n));
    expect_ulps(v, floats(op(f32(v))), ref, tol, what, extra);
  }
}

}  // namespace

TEST(VectorKernels, Exp) {
  check_unary([](const Tensor& x) { return graft::exp(x); }, ref_exp, -105.0f, 90.0f, 2, "exp");
  // The boundaries: overflow past ln(FLT_MAX) = 88.7228, the denormal range, rounding to 0 near -103.97.
  std::vector<float> xs;
  for (float v = 88.5f; v < 89.0f; v = std::nextafter(v, 100.0f)) xs.push_back(v);
  for (float v = -104.5f; v < -87.0f; v += 1e-4f) xs.push_back(v);
  expect_ulps(xs, floats(graft::exp(f32(xs))), ref_exp, 2, "exp boundaries");
  const std::vector<float> sp = floats(graft::exp(f32({kNaN, kInf, -kInf, 0.0f, -0.0f, 89.0f, -104.0f})));
  EXPECT_TRUE(std::isnan(sp[0]));
  EXPECT_EQ(sp[1], kInf);
  EXPECT_EQ(sp[2], 0.0f);
  EXPECT_EQ(sp[3], 1.0f);
  EXPECT_EQ(sp[4], 1.0f);
  EXPECT_EQ(sp[5], kInf);
  EXPECT_EQ(sp[6], 0.0f);
}

TEST(VectorKernels, Sigmoid) {
  check_unary([](const Tensor& x) { return graft::sigmoid(x); }, ref_sigmoid, -110.0f, 30.0f, 4, "sigmoid");
  const std::vector<float> sp = floats(graft::sigmoid(f32({kNaN, kInf, -kInf, -0.0f, -100.0f})));
  EXPECT_TRUE(std::isnan(sp[0]));
  EXPECT_EQ(sp[1], 1.0f);
  EXPECT_EQ(sp[2], 0.0f);
  EXPECT_EQ(sp[3], 0.5f);
  EXPECT_GT(sp[4], 0.0f);  // e^-100, a denormal, not flushed
}

TEST(VectorKernels, Gelu) {
  check_unary([](const Tensor& x) { return F::gelu(x); }, ref_gelu, -16.0f, 16.0f, 6, "gelu");
  // gelu tanh for x < 0 is x e^(2u) / (1 + e^(2u)): the float rounding of u = k (x + c x^3) (three
  // operations, relative 2^-24 each) moves e^(2u) by about 3 |2u| ulps (76 at x = -7.5, 200 at -9.8),
  // the function's own conditioning, which any float32 evaluation has (PyTorch's float formula
  // returns 0 there). So: 6 ulps beyond 3 |2u|.
  check_unary([](const Tensor& x) { return F::gelu(x, F::GELUFuncOptions().approximate("tanh")); }, ref_gelu_tanh,
              -16.0f, 16.0f, 6, "gelu tanh", [](double x) {
                const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
                return std::isfinite(u) && x < 0 ? 3.0 * std::abs(2.0 * u) : 0.0;
              });
}

// The exact gelu's own region boundaries (Note [Fast float32 gelu]): every float around each point
// where the exp's reduction step m = round(a^2 / (2 ln 2)) changes (|rho| is largest there), the
// end of the rational fit (a = 13.25, results turning denormal near -13.2), the clamp at 14.8 and
// the small |x| where y ~ x/2 (the largest errors of the sweep), on both signs.
TEST(VectorKernels, GeluBoundaries) {
  std::vector<float> xs;
  auto around = [&](double c, int n) {
    float v = static_cast<float>(c);
    for (int i = 0; i < n; ++i) v = std::nextafter(v, -kInf);
    for (int i = 0; i < 2 * n; ++i, v = std::nextafter(v, kInf)) xs.push_back(v), xs.push_back(-v);
  };
  for (int m = 1; m <= 160; ++m) around(std::sqrt((m - 0.5) * 2.0 * std::log(2.0)), 2000);
  for (double c : {13.25, 13.2, 14.8}) around(c, 20000);
  for (float v = 1e-4f; v < 2e-3f; v *= 1.0001f) xs.push_back(v), xs.push_back(-v);
  expect_ulps(xs, floats(F::gelu(f32(xs))), ref_gelu, 6, "gelu boundaries");
  for (float v : floats(F::gelu(f32({-14.8f, -14.81f, -20.0f, -1e30f}))))
    EXPECT_EQ(std::bit_cast<uint32_t>(v), 0x80000000u);  // -0
  const std::vector<float> sp = floats(F::gelu(f32({kInf, -kInf, kNaN, 14.8f, 20.0f, 0.0f})));
  EXPECT_EQ(sp[0], kInf);
  EXPECT_TRUE(std::isnan(sp[1]));
  EXPECT_TRUE(std::isnan(sp[2]));
  EXPECT_EQ(sp[3], 14.8f);
  EXPECT_EQ(sp[4], 20.0f);
  EXPECT_EQ(sp[5], 0.0f);
}

TEST(VectorKernels, FusedBackward) {
  // Without create_graph the float32 backward of sigmoid and gelu runs the fused array kernels.
  const std::vector<float> xs = randoms(100003, -12.0f, 12.0f, 7);
  const std::vector<float> gs = randoms(100003, -2.0f, 2.0f, 8);
  auto grad_of = [&](auto&& op) {
    Tensor x = f32(xs).requires_grad_();
    op(x).backward(f32(gs));
    return floats(x.grad());
  };
  struct Case {
    const char* name;
    std::vector<float> got;
    double (*dref)(double);
  };
  const std::vector<Case> cases = {
      {"sigmoid", grad_of([](const Tensor& x) { return graft::sigmoid(x); }),
       [](double x) { const double s = 1.0 / (1.0 + std::exp(-x)); return s * (1.0 - s); }},
      {"gelu", grad_of([](const Tensor& x) { return F::gelu(x); }),
       [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI); }},
      {"gelu tanh", grad_of([](const Tensor& x) { return F::gelu(x, F::GELUFuncOptions().approximate("tanh")); }),
       [](double x) {
         const double k = std::sqrt(2.0 / M_PI), u = k * (x + 0.044715 * x * x * x);
         const double s = 1.0 / (1.0 + std::exp(-2.0 * u));
         return s + 2.0 * x * s * (1.0 - s) * k * (1.0 + 3.0 * 0.044715 * x * x);
       }},
  };
  for (const Case& c : cases) {
    // Relative to the largest term of the derivative: sigmoid's y (1 - y) is computed from the
    // rounded y, whose error is relative to y, not to 1 - y.
    double worst = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = static_cast<double>(gs[i]) * c.dref(static_cast<double>(xs[i]));
      const double scale = std::abs(static_cast<double>(gs[i])) * (1.0 + std::abs(static_cast<double>(xs[i]))) + 1e-30;
      worst = std::max(worst, std::abs(static_cast<double>(c.got[i]) - want) / scale);
    }
    EXPECT_LT(worst, 1e-6) << c.name;
  }
}

TEST(VectorKernels, Relu) {
  // Forward and the fused backward against the definitions, on values that include the edges:
  // -0 and NaN pass through relu; the gradient is g where y > 0 and 0 elsewhere (NaN y included).
  std::vector<float> xs = randoms(100003, -3.0f, 3.0f, 11);
  const float edges[] = {0.0f, -0.0f, kNaN, kInf, -kInf, 1e-45f, -1e-45f, std::numeric_limits<float>::min()};
  for (size_t i = 0; i < std::size(edges); ++i) xs[i * 997] = edges[i];
  const std::vector<float> gs = randoms(100003, -2.0f, 2.0f, 12);
  Tensor x = f32(xs).requires_grad_();
  const Tensor y = graft::relu(x);
  y.backward(f32(gs));
  const std::vector<float> got = floats(y), grad = floats(x.grad());
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = xs[i] < 0.0f ? 0.0f : xs[i];
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want)) << "relu(" << xs[i] << ")";
    const float want_g = want > 0.0f ? gs[i] : 0.0f;
    ASSERT_EQ(std::bit_cast<uint32_t>(grad[i]), std::bit_cast<uint32_t>(want_g)) << "relu'(" << xs[i] << ")";
  }
}

TEST(VectorKernels, Arithmetic) {
  struct Op {
    const char* name;
    Tensor (*run)(const Tensor&, const Tensor&);
    double (*ref)(double, double);
  };
  const std::vector<Op> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return graft::add(a, b); }, [](double a, double b) { return a + b; }},
      {"add alpha", [](const Tensor& a, const Tensor& b) { return graft::add(a, b, 0.3); },
       [](double a, double b) { return a + static_cast<double>(0.3f * static_cast<float>(b)); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return graft::sub(a, b); }, [](double a, double b) { return a - b; }},
      {"sub alpha", [](const Tensor& a, const Tensor& b) { return graft::sub(a, b, 2.5); },
       [](double a, double b) { return a - static_cast<double>(2.5f * static_cast<float>(b)); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return graft::mul(a, b); }, [](double a, double b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return graft::div(a, b); }, [](double a, double b) { return a / b; }},
  };
  // Bit-exact against the double computation rounded to float (one IEEE operation; NaN matches NaN).
  auto expect_exact = [](const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(ulps(got[i], static_cast<float>(want[i])), 0) << what << " at " << i;
  };
  for (const Op& op : ops) {
    for (int64_t n : kSizes) {
      const std::vector<float> a = randoms(n, -10.0f, 10.0f, 1), b = randoms(n, 0.5f, 3.0f, 2);
      std::vector<double> want(a.size());
      for (size_t i = 0; i < a.size(); ++i) want[i] = op.ref(a[i], b[i]);
      expect_exact(floats(op.run(f32(a), f32(b))), want, std::string(op.name) + " n=" + std::to_string(n));
      // a 0-dim b: the scalar loop
      std::vector<double> ws(a.size());
      for (size_t i = 0; i < a.size(); ++i) ws[i] = op.ref(a[i], b.empty() ? 1.5 : b[0]);
      expect_exact(floats(op.run(f32(a), f32({b.empty() ? 1.5f : b[0]}, {}))), ws, std::string(op.name) + " 0-dim");
    }
    // [N, C] op [C] and [N, C] op [1, C] (a bias), C over the sizes; [N, 1] op [C] and [C] op [N, C]
    // broadcast otherwise (the generic path), as does a transposed a.
    for (int64_t c : {int64_t{1}, int64_t{7}, int64_t{17}, int64_t{1023}}) {
      const int64_t rows = 33;
      const std::vector<float> a = randoms(rows * c, -10.0f, 10.0f, 3), b = randoms(c, 0.5f, 3.0f, 4);
      std::vector<double> want(a.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < c; ++j)
          want[static_cast<size_t>(r * c + j)] = op.ref(a[static_cast<size_t>(r * c + j)], b[static_cast<size_t>(j)]);
      const std::string tag = std::string(op.name) + " C=" + std::to_string(c);
      expect_exact(floats(op.run(f32(a, {rows, c}), f32(b, {c}))), want, tag + " [N,C] op [C]");
      expect_exact(floats(op.run(f32(a, {rows, c}), f32(b, {1, c}))), want, tag + " [N,C] op [1,C]");
      // [C] op [N, C]: b first
      std::vector<double> flipped(a.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < c; ++j)
          flipped[static_cast<size_t>(r * c + j)] = op.ref(b[static_cast<size_t>(j)], a[static_cast<size_t>(r * c + j)]);
      expect_exact(floats(op.run(f32(b, {c}), f32(a, {rows, c}))), flipped, tag + " [C] op [N,C]");
      // [N, 1] op [1, C]: an outer broadcast
      const std::vector<float> col = randoms(rows, -10.0f, 10.0f, 5);
      std::vector<double> outer(static_cast<size_t>(rows * c));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < c; ++j)
          outer[static_cast<size_t>(r * c + j)] = op.ref(col[static_cast<size_t>(r)], b[static_cast<size_t>(j)]);
      expect_exact(floats(op.run(f32(col, {rows, 1}), f32(b, {1, c}))), outer, tag + " [N,1] op [1,C]");
      // transposed a: [C, N] viewed as [N, C]
      const Tensor at = f32(a, {c, rows}).t();
      ASSERT_TRUE(c == 1 || !at.is_contiguous());
      std::vector<double> tw(a.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < c; ++j)
          tw[static_cast<size_t>(r * c + j)] = op.ref(a[static_cast<size_t>(j * rows + r)], b[static_cast<size_t>(j)]);
      expect_exact(floats(op.run(at, f32(b, {c}))), tw, tag + " transposed");
    }
  }
  // Special values pass through IEEE arithmetic.
  const std::vector<float> s = {0.0f, -0.0f, kInf, -kInf, kNaN, 1e-40f, -1e-45f, 3e38f};
  for (const Op& op : ops) {
    std::vector<float> a, b;
    for (float u : s)
      for (float v : s) a.push_back(u), b.push_back(v);
    std::vector<double> want(a.size());
    for (size_t i = 0; i < a.size(); ++i) want[i] = op.ref(a[i], b[i]);
    expect_exact(floats(op.run(f32(a), f32(b))), want, std::string(op.name) + " specials");
  }
  // Scalar overloads.
  const std::vector<float> a = randoms(100003, -10.0f, 10.0f, 9);
  const std::vector<float> add_s = floats(graft::add(f32(a), 0.7)), mul_s = floats(graft::mul(f32(a), 0.7)),
                           div_s = floats(graft::div(f32(a), 0.7));
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(add_s[i], a[i] + 0.7f);
    ASSERT_EQ(mul_s[i], a[i] * 0.7f);
    ASSERT_EQ(div_s[i], a[i] / 0.7f);
  }
}

namespace {
double exact_sum(const std::vector<float>& v, size_t begin, size_t end) {
  long double s = 0;
  for (size_t i = begin; i < end; ++i) s += static_cast<long double>(v[i]);
  return static_cast<double>(s);
}
}  // namespace

TEST(VectorKernels, Sum) {
  // Relative tolerance 2e-6 on sums of positive values (no cancellation): the blocked sum stays
  // near 1e-7; a naive float loop over 4M values is off by far more (checked here, so this test
  // can catch a naive accumulation).
  const double rtol = 2e-6;
  std::vector<int64_t> sizes = kSizes;
  sizes.push_back((int64_t{1} << 20) + 3);
  sizes.push_back(int64_t{1} << 22);
  for (int64_t n : sizes) {
    const std::vector<float> v = randoms(n, 0.0f, 1.0f, static_cast<uint64_t>(n) + 11);
    const double want = exact_sum(v, 0, v.size());
    const float got = graft::sum(f32(v)).item<float>();
    EXPECT_LE(std::abs(got - want), rtol * want) << "n=" << n;
    const float m = graft::mean(f32(v)).item<float>();
    if (n > 0) EXPECT_LE(std::abs(m - want / static_cast<double>(n)), rtol * want / static_cast<double>(n)) << "mean n=" << n;
    else EXPECT_TRUE(std::isnan(m));
    if (n == (int64_t{1} << 22)) {
      float naive = 0;
      for (float x : v) naive += x;
      EXPECT_GT(std::abs(naive - want), rtol * want) << "the tolerance must reject a naive float sum";
    }
  }
  // Over the last dim and the trailing dims, rows of every size.
  for (int64_t cols : kSizes) {
    const int64_t rows = cols > 2000 ? 3 : 37;
    const std::vector<float> v = randoms(rows * cols, 0.0f, 1.0f, static_cast<uint64_t>(cols));
    const std::vector<float> got = floats(graft::sum(f32(v, {rows, cols}), {1}));
    const std::vector<float> got_mean = floats(graft::mean(f32(v, {rows, cols}), {-1}, /*keepdim=*/true));
    const std::vector<float> got3 = floats(graft::sum(f32(v, {rows, 1, cols}), {1, 2}));
    ASSERT_EQ(got.size(), static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const double want = exact_sum(v, static_cast<size_t>(r * cols), static_cast<size_t>((r + 1) * cols));
      EXPECT_LE(std::abs(got[static_cast<size_t>(r)] - want), rtol * want + 1e-30) << "cols=" << cols;
      EXPECT_EQ(got3[static_cast<size_t>(r)], got[static_cast<size_t>(r)]);
      if (cols > 0) {
        const double wm = want / static_cast<double>(cols);
        EXPECT_LE(std::abs(got_mean[static_cast<size_t>(r)] - wm), rtol * wm + 1e-30);
      }
    }
  }
  // Non-contiguous (a transpose: the generic reducer) and sum over a leading dim agree with the reference.
  const std::vector<float> v = randoms(33 * 1023, 0.0f, 1.0f, 5);
  const Tensor t = f32(v, {33, 1023}).t();  // [1023, 33], strided
  const std::vector<float> cols_sum = floats(graft::sum(t, {1}));
  for (int64_t j = 0; j < 1023; ++j) {
    double want = 0;
    for (int64_t r = 0; r < 33; ++r) want += v[static_cast<size_t>(r * 1023 + j)];
    EXPECT_LE(std::abs(cols_sum[static_cast<size_t>(j)] - want), 1e-5 * want);
  }
  // Special values: inf and NaN propagate.
  EXPECT_EQ(graft::sum(f32({1.0f, kInf, 2.0f})).item<float>(), kInf);
  EXPECT_TRUE(std::isnan(graft::sum(f32({1.0f, kInf, -kInf})).item<float>()));
}

TEST(VectorKernels, SumDoesNotDependOnThreads) {
  const int64_t rows = 838862;  // 5 * rows = 2^22 + 6 values: many blocks and a tail
  const std::vector<float> v = randoms(5 * rows, -1.0f, 1.0f, 3);
  const int before = get_num_threads();
  set_num_threads(1);
  const float one = graft::sum(f32(v)).item<float>();
  const std::vector<float> rows_one = floats(graft::sum(f32(v, {rows, 5}), {1}));
  set_num_threads(2);
  const float two = graft::sum(f32(v)).item<float>();
  const std::vector<float> rows_two = floats(graft::sum(f32(v, {rows, 5}), {1}));
  set_num_threads(before);
  EXPECT_EQ(std::bit_cast<uint32_t>(one), std::bit_cast<uint32_t>(two));
  EXPECT_EQ(rows_one, rows_two);
}

TEST(VectorKernels, Softmax) {
  for (bool log : {false, true}) {
    for (int64_t cols : kSizes) {
      const int64_t rows = cols > 2000 ? 3 : 19;
      const std::vector<float> v = randoms(rows * cols, -20.0f, 20.0f, static_cast<uint64_t>(cols) + 1);
      const Tensor x = f32(v, {rows, cols});
      const Tensor y = log ? graft::log_softmax(x, 1) : graft::softmax(x, -1);
      const std::vector<float> got = floats(y);
      ASSERT_EQ(got.size(), v.size());
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = v.data() + r * cols;
        double mx = -INFINITY, s = 0;
        for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, static_cast<double>(row[j]));
        for (int64_t j = 0; j < cols; ++j) s += std::exp(row[j] - mx);
        for (int64_t j = 0; j < cols; ++j) {
          const double want = log ? (row[j] - mx) - std::log(s) : std::exp(row[j] - mx) / s;
          const double g = got[static_cast<size_t>(r * cols + j)];
          // softmax: relative 1e-6 (exp's 2 ulp, the sum's rounding, the reciprocal) plus the
          // rounding of x - max in float (relative 2^-24 |x - max| in e^(x - max), as in any float32
          // softmax); log_softmax: absolute 2e-6 (log(sum) is within an ulp of values up to ~12) and
          // relative 1e-7 (the rounding of x - max).
          if (log) ASSERT_LE(std::abs(g - want), 2e-6 + 1e-7 * std::abs(want)) << "cols=" << cols;
          else ASSERT_LE(std::abs(g - want), (1e-6 + 1.2e-7 * std::abs(row[j] - mx)) * want + 1e-45) << "cols=" << cols;
        }
      }
      // The same through the generic kernel: softmax over dim 0 of the transpose (it sums in one
      // float accumulator per column: 1e-4 relative on the longest rows).
      if (cols > 0) {
        const Tensor yt = log ? graft::log_softmax(x.t(), 0) : graft::softmax(x.t(), 0);
        const std::vector<float> back = floats(yt.t());
        for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(back[i], got[i], 2e-6 + 1e-4 * std::abs(got[i]));
      }
    }
  }
  // Special rows: large magnitudes, -inf entries, an all -inf row (NaN, as PyTorch), a NaN entry.
  const Tensor x = f32({1e30f, 0.0f, -1e30f, 5.0f,  //
                        -kInf, 1.0f, 1.0f, -kInf,    //
                        -kInf, -kInf, -kInf, -kInf,  //
                        1.0f, kNaN, 2.0f, 3.0f,      //
                        -90.0f, 0.0f, -50.0f, -120.0f},
                       {5, 4});
  const std::vector<float> y = floats(graft::softmax(x, 1)), ly = floats(graft::log_softmax(x, 1));
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(ly[0], 0.0f);
  EXPECT_EQ(ly[1], -1e30f);
  EXPECT_EQ(y[4], 0.0f);
  EXPECT_EQ(y[5], 0.5f);
  EXPECT_EQ(ly[4], -kInf);
  for (int j = 8; j < 16; ++j) EXPECT_TRUE(std::isnan(y[static_cast<size_t>(j)]) && std::isnan(ly[static_cast<size_t>(j)])) << j;
  EXPECT_GT(y[16], 0.0f);  // e^-90: a denormal, kept
  EXPECT_EQ(ly[16], -90.0f);
  EXPECT_EQ(y[19], 0.0f);
}

}  // namespace graft::test
