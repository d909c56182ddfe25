// float16 / bfloat16 storage: conversions against hand-worked bit patterns (Note [Half-precision
// conversions] in graft/core/half.h), round trips, strided inputs, copies, views, printing,
// safetensors, gradients through to(), and clear errors from ops without half kernels.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

// The bit patterns of a contiguous or strided half tensor, row-major.
std::vector<uint16_t> bits_of(const Tensor& t) {
  EXPECT_TRUE(t.dtype() == kFloat16 || t.dtype() == kBFloat16);
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const uint16_t*>(c.data_ptr());
  return std::vector<uint16_t>(p, p + c.numel());
}

Tensor from_bits(const std::vector<uint16_t>& bits, DType dt) {
  Tensor t = make_empty({static_cast<int64_t>(bits.size())}, dt);
  auto* p = static_cast<uint16_t*>(t.data_ptr());
  for (size_t i = 0; i < bits.size(); ++i) p[i] = bits[i];
  return t;
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- float16 ----
TEST(Half, Float16BitPatternsFromFloat32AndFloat64) {
  // value -> bits, worked by hand: sign | exponent (bias 15) << 10 | mantissa.
  const std::vector<std::pair<double, uint16_t>> cases = {
      {1.0, 0x3c00},                      // 2^0: exponent 15
      {-2.5, 0xc100},                     // -1.25 * 2^1: exponent 16, mantissa .25 = 0x100
      {65504.0, 0x7bff},                  // the largest finite: (2 - 2^-10) * 2^15
      {65519.0, 0x7bff},                  // below the tie: rounds down
      {65520.0, 0x7c00},                  // 65504 + ulp/2: the tie goes to even, inf
      {1e6, 0x7c00},                      // overflow
      {-kInf, 0xfc00},
      {std::ldexp(1.0, -14), 0x0400},     // smallest normal
      {std::ldexp(1.0, -24), 0x0001},     // smallest subnormal
      {std::ldexp(1023.0, -24), 0x03ff},  // largest subnormal
      {std::ldexp(1.0, -25), 0x0000},     // a tie between 0 and 2^-24: even is 0
      {std::ldexp(1.5, -25), 0x0001},     // above the tie
      {std::ldexp(3.0, -25), 0x0002},     // 1.5 * 2^-24: tie between 1 and 2 units, even is 2
      {-std::ldexp(1.0, -26), 0x8000},    // underflow keeps the sign
      {1.0 + std::ldexp(1.0, -11), 0x3c00},  // tie between 1 and 1 + 2^-10: even (1)
      {1.0 + std::ldexp(3.0, -11), 0x3c02},  // tie between 1 + 2^-10 and 1 + 2^-9: even (0x3c02)
      {0.1, 0x2e66},                      // 0.1 = 0x2e66.6...: rounds down
      {-0.0, 0x8000},
  };
  for (DType src : {kFloat32, kFloat64}) {
    for (const auto& [v, expect] : cases) {
      const Tensor x = full({1}, v, src);
      EXPECT_EQ(bits_of(x.to(kFloat16))[0], expect) << v << " from " << dtype_name(src);
    }
  }
}

TEST(Half, Float64RoundsOnceNotTwice) {
  // 1 + 2^-11 + 2^-40 is just above the float16 tie, so it rounds up to 1 + 2^-10 (0x3c01). Through
  // float32 it would first round to the tie 1 + 2^-11 and then to even, 1.0 (0x3c00).
  const double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(bits_of(full({1}, v, kFloat64).to(kFloat16))[0], 0x3c01);
  EXPECT_EQ(bits_of(full({1}, v, kFloat64).to(kFloat32).to(kFloat16))[0], 0x3c00);
  // The same for bfloat16: 1 + 2^-8 + 2^-40 rounds up to 1 + 2^-7 (0x3f81).
  const double w = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(bits_of(full({1}, w, kFloat64).to(kBFloat16))[0], 0x3f81);
}

TEST(Half, Float16ToFloatIsExact) {
  const Tensor h = from_bits({0x3c00, 0xc100, 0x7bff, 0x0001, 0x03ff, 0x0400, 0x8000, 0x7c00, 0xfc00, 0x3555}, kFloat16);
  const std::vector<double> expect = {1.0, -2.5, 65504.0, std::ldexp(1.0, -24), std::ldexp(1023.0, -24),
                                      std::ldexp(1.0, -14), -0.0, kInf, -kInf, std::ldexp(0x555 | 0x400, -12)};
  for (DType dst : {kFloat32, kFloat64}) {
    const auto got = values(h.to(dst));
    ASSERT_EQ(got.size(), expect.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expect[i]) << i;
    EXPECT_TRUE(std::signbit(got[6]));
  }
}

TEST(Half, NaNStaysNaN) {
  for (DType dt : {kFloat16, kBFloat16}) {
    for (DType src : {kFloat32, kFloat64}) {
      const Tensor x = make({kNaN, -kNaN, 1.0}, {3}, src);
      const Tensor h = x.to(dt);
      const auto b = bits_of(h);
      const uint16_t exp_mask = dt == kFloat16 ? 0x7c00 : 0x7f80, mant_mask = dt == kFloat16 ? 0x03ff : 0x007f;
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(b[static_cast<size_t>(i)] & exp_mask, exp_mask);
        EXPECT_NE(b[static_cast<size_t>(i)] & mant_mask, 0) << "NaN must not become inf";
      }
      const auto back = values(h.to(src));
      EXPECT_TRUE(std::isnan(back[0]));
      EXPECT_TRUE(std::isnan(back[1]));
      EXPECT_EQ(back[2], 1.0);
    }
  }
  // A signalling float32 NaN (quiet bit clear, payload only in the low bits) stays NaN too.
  const float snan = std::bit_cast<float>(0x7f800001u);
  EXPECT_TRUE(std::isnan(BFloat16(snan).to_float()));
  EXPECT_TRUE(std::isnan(Half(snan).to_float()));
}

// ---- bfloat16 ----
TEST(Half, BFloat16BitPatterns) {
  // bfloat16 is the top 16 bits of a float32, rounded to nearest even.
  const std::vector<std::pair<double, uint16_t>> cases = {
      {1.0, 0x3f80},
      {-2.5, 0xc020},
      {65504.0, 0x4780},                     // 65504 = 1.999 * 2^15 rounds to 2^16 (7 mantissa bits)
      {1.0 + std::ldexp(1.0, -8), 0x3f80},   // tie between 1 and 1 + 2^-7: even, 1
      {1.0 + std::ldexp(3.0, -8), 0x3f82},   // tie between 1 + 2^-7 and 1 + 2^-6: even, 0x3f82
      {1.0 + std::ldexp(1.0, -7), 0x3f81},   // exact
      {3.140625, 0x4049},
      {std::ldexp(1.0, 100), 0x7180},
      {3.4e38, 0x7f80},                      // above the largest finite (~3.3895e38) + ulp/2: inf
      {-kInf, 0xff80},
      {std::ldexp(1.0, -133), 0x0001},       // smallest bfloat16 subnormal (float32's 2^-149 * 2^16)
      {std::ldexp(1.0, -134), 0x0000},       // tie with 0: even
      {std::ldexp(1.0, -126), 0x0080},       // smallest normal
  };
  for (DType src : {kFloat32, kFloat64}) {
    for (const auto& [v, expect] : cases) {
      if (src == kFloat32 && std::fabs(v) < std::ldexp(1.0, -149)) continue;  // not a float32
      EXPECT_EQ(bits_of(full({1}, v, src).to(kBFloat16))[0], expect) << v << " from " << dtype_name(src);
    }
  }
  // float32 values right at the largest finite bfloat16 and just past its tie.
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x7f7f7fffu)).x, 0x7f7f);  // below the tie
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x7f7f8000u)).x, 0x7f80);  // the tie: odd 0x7f7f goes up, inf
  EXPECT_EQ(BFloat16(static_cast<double>(std::bit_cast<float>(0x7f7f8000u))).x, 0x7f80);
}

TEST(Half, BFloat16ToFloatIsExact) {
  const Tensor b = from_bits({0x3f80, 0xc020, 0x4049, 0x0001, 0x7f80, 0x7f7f}, kBFloat16);
  const auto got = values(b.to(kFloat64));
  EXPECT_EQ(got[0], 1.0);
  EXPECT_EQ(got[1], -2.5);
  EXPECT_EQ(got[2], 3.140625);
  EXPECT_EQ(got[3], std::ldexp(1.0, -133));
  EXPECT_EQ(got[4], kInf);
  EXPECT_EQ(got[5], static_cast<double>(std::bit_cast<float>(0x7f7f0000u)));
}

TEST(Half, ExhaustiveRoundTripsThroughFloat32AndFloat64) {
  // Every finite, non-NaN 16-bit pattern widens exactly and narrows back to itself.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float h = half_bits_to_float(bits);
    if (!std::isnan(h)) {
      ASSERT_EQ(float_to_half_bits(h), bits) << std::hex << b;
      ASSERT_EQ(double_to_half_bits(h), bits) << std::hex << b;
    }
    const float f = bfloat16_bits_to_float(bits);
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_bfloat16_bits(f), bits) << std::hex << b;
      ASSERT_EQ(double_to_bfloat16_bits(f), bits) << std::hex << b;
    }
  }
}

TEST(Half, Float32ToHalfAgreesWithNearestByMidpoints) {
  // Between two neighbouring float16 values a and b (a < b), values below the midpoint go to a, above
  // to b, and the midpoint to the one with an even mantissa: checked for every positive finite pair.
  for (uint32_t b = 0; b < 0x7bff; ++b) {
    const double lo = half_bits_to_float(static_cast<uint16_t>(b)), hi = half_bits_to_float(static_cast<uint16_t>(b + 1));
    const double mid = (lo + hi) / 2;  // exact in double
    const double below = std::nextafter(mid, lo), above = std::nextafter(mid, hi);
    ASSERT_EQ(double_to_half_bits(below), b);
    ASSERT_EQ(double_to_half_bits(above), b + 1);
    ASSERT_EQ(double_to_half_bits(mid), (b & 1) ? b + 1 : b);
    ASSERT_EQ(double_to_half_bits(-mid), 0x8000 | ((b & 1) ? b + 1 : b));
  }
}

TEST(Half, OtherDTypesConvert) {
  const Tensor i = make({-3, 0, 7}, {3}, kInt64);
  EXPECT_EQ(values(i.to(kBFloat16).to(kFloat32)), (std::vector<double>{-3, 0, 7}));
  EXPECT_EQ(values(i.to(kFloat16).to(kInt64)), (std::vector<double>{-3, 0, 7}));
  const Tensor b = make({1, 0}, {2}, kBool);
  EXPECT_EQ(values(b.to(kFloat16).to(kFloat64)), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(make({0.5, 0, kNaN}, {3}).to(kFloat16).to(kBool)), (std::vector<double>{1, 0, 1}));
  // float16 <-> bfloat16: 65504 is finite in both; 1e5 overflows float16 only.
  const Tensor x = make({65504, 1e5, 1.0 + std::ldexp(1.0, -9)}, {3});
  EXPECT_EQ(bits_of(x.to(kBFloat16).to(kFloat16)), (std::vector<uint16_t>{0x7c00, 0x7c00, 0x3c00}));
  EXPECT_EQ(bits_of(x.to(kFloat16).to(kBFloat16)), (std::vector<uint16_t>{0x4780, 0x7f80, 0x3f80}));
}

// ---- tensors: strided inputs, copies, views ----
TEST(Half, StridedInputsConvertElementByElement) {
  const Tensor x = arange(12, kFloat32).reshape({3, 4}).mul(0.5);
  for (DType dt : {kFloat16, kBFloat16}) {
    const Tensor t = x.t();  // (4, 3), non-contiguous
    ASSERT_FALSE(t.is_contiguous());
    const Tensor h = t.to(dt);
    EXPECT_TRUE(h.is_contiguous());
    EXPECT_EQ(values(h.to(kFloat64)), values(t));
    // a strided half tensor converts back through its strides
    const Tensor hn = x.to(dt).t();
    EXPECT_EQ(values(hn.to(kFloat32)), values(t));
    const Tensor stepped = x.to(dt).slice(1, 0, 4, 2);
    EXPECT_EQ(values(stepped.to(kFloat64)), values(x.slice(1, 0, 4, 2)));
  }
}

TEST(Half, CloneContiguousCopyAndViews) {
  for (DType dt : {kFloat16, kBFloat16}) {
    const Tensor h = make({1, -2, 3.5, 4, 0.25, -6}, {2, 3}).to(dt);
    EXPECT_EQ(h.dtype(), dt);
    EXPECT_EQ(h.element_size(), 2);
    const Tensor c = h.clone();
    EXPECT_EQ(bits_of(c), bits_of(h));
    EXPECT_NE(c.data_ptr(), h.data_ptr());
    const Tensor ht = h.t();
    const Tensor hc = ht.contiguous();
    EXPECT_TRUE(hc.is_contiguous());
    EXPECT_EQ(values(hc.to(kFloat64)), (std::vector<double>{1, 4, -2, 0.25, 3.5, -6}));
    EXPECT_EQ(values(h.view({3, 2}).select(0, 1).to(kFloat64)), (std::vector<double>{3.5, 4}));
    EXPECT_EQ(values(h.reshape({6}).narrow(0, 2, 3).to(kFloat64)), (std::vector<double>{3.5, 4, 0.25}));
    // copy_ converts into a half destination, also a strided one, and out of it
    Tensor dst = zeros({3, 2}, dt);
    dst.copy_(make({1, 2, 3, 4, 5, 6}, {2, 3}).t());
    EXPECT_EQ(values(dst.to(kFloat64)), (std::vector<double>{1, 4, 2, 5, 3, 6}));
    Tensor dst_t = zeros({2, 3}, dt).t();
    dst_t.copy_(h.t());
    EXPECT_EQ(values(dst_t.to(kFloat64)), values(h.t().to(kFloat64)));
    Tensor f = zeros({2, 3});
    f.copy_(h);
    EXPECT_EQ(values(f), (std::vector<double>{1, -2, 3.5, 4, 0.25, -6}));
    // broadcasting copy and fills
    Tensor b = empty({2, 2}, dt);
    b.copy_(make({7, 8}, {2}));
    EXPECT_EQ(values(b.to(kFloat64)), (std::vector<double>{7, 8, 7, 8}));
    b.fill_(0.1);
    EXPECT_EQ(bits_of(b)[0], dt == kFloat16 ? 0x2e66 : 0x3dcd);
    b.zero_();
    EXPECT_EQ(bits_of(b), (std::vector<uint16_t>{0, 0, 0, 0}));
    EXPECT_EQ(values(ones({2}, dt).to(kFloat64)), (std::vector<double>{1, 1}));
    EXPECT_EQ(values(full({2}, -1.5, dt).to(kFloat64)), (std::vector<double>{-1.5, -1.5}));
    EXPECT_DOUBLE_EQ(full({}, 2.5, dt).item<double>(), 2.5);
  }
}

TEST(Half, Printing) {
  EXPECT_EQ(make({1.5, -2}, {2}).to(kBFloat16).str(), "tensor([ 1.5000, -2.0000], dtype=graft.bfloat16)");
  EXPECT_EQ(make({1, 2, 3, 4}, {2, 2}).to(kFloat16).t().str(),
            "tensor([[1., 3.],\n        [2., 4.]], dtype=graft.float16)");
}

TEST(Half, SafetensorsRoundTripKeepsBits) {
  const std::string path = (std::filesystem::temp_directory_path() / "graft_test_half.safetensors").string();
  io::TensorDict d;
  const Tensor x = make({1, -2.5, 65504, 1e-7, 0.1, 3}, {2, 3});
  d.insert("h", x.to(kFloat16));
  d.insert("b", x.to(kBFloat16));
  d.insert("ht", x.to(kFloat16).t());  // strided: saved in row-major order of the view
  io::save_safetensors(path, d);
  const auto loaded = io::load_safetensors(path).tensors;
  EXPECT_EQ(loaded["h"].dtype(), kFloat16);
  EXPECT_EQ(loaded["b"].dtype(), kBFloat16);
  EXPECT_EQ(bits_of(loaded["h"]), bits_of(d["h"]));
  EXPECT_EQ(bits_of(loaded["b"]), bits_of(d["b"]));
  EXPECT_EQ(bits_of(loaded["ht"]), bits_of(d["ht"]));
  EXPECT_EQ(loaded["ht"].sizes().vec(), (std::vector<int64_t>{3, 2}));
  std::remove(path.c_str());
}

// ---- autograd ----
TEST(Half, GradientOfToCastsBack) {
  for (DType dt : {kFloat16, kBFloat16}) {
    for (DType src : {kFloat32, kFloat64}) {
      const Tensor x = make({0.5, -1.25, 3}, {3}, src).requires_grad_();
      const Tensor h = x.to(dt);
      EXPECT_EQ(h.dtype(), dt);
      ASSERT_TRUE(h.grad_fn());
      EXPECT_EQ(h.grad_fn()->name(), "ToCopyBackward0");
      // loss = sum(w * float(h)): d loss/dx = w, straight through the rounding
      const Tensor w = make({1, 2, -3}, {3}, src);
      (h.to(src) * w).sum().backward();
      ASSERT_TRUE(x.grad().defined());
      EXPECT_EQ(x.grad().dtype(), src);
      EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, -3}));
    }
  }
  // strided input: the gradient lands in the input's layout
  const Tensor m = make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32).requires_grad_();
  const Tensor mt = m.t();
  (mt.to(kBFloat16).to(kFloat32) * make({1, 2, 3, 4, 5, 6}, {3, 2}, kFloat32)).sum().backward();
  EXPECT_EQ(values(m.grad()), (std::vector<double>{1, 3, 5, 2, 4, 6}));
}

TEST(Half, GradientRoundedToHalfOnTheWayBack) {
  // y = float32(x.to(f16)) * 1e-8: the incoming float32 gradient 1e-8 is rounded to float16 at the
  // half tensor (as in PyTorch, a gradient has its tensor's dtype), and 1e-8 is below half of
  // float16's smallest subnormal (2^-25 ~ 2.98e-8): it becomes 0. This is what GradScaler is for.
  const Tensor x = make({1, 2}, {2}, kFloat32).requires_grad_();
  (x.to(kFloat16).to(kFloat32) * 1e-8).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0}));
  const Tensor z = make({1, 2}, {2}, kFloat32).requires_grad_();
  (z.to(kBFloat16).to(kFloat32) * 1e-8).sum().backward();  // bfloat16 has float32's range
  EXPECT_NEAR(values(z.grad())[0], 1e-8, 1e-10);
}

TEST(Half, OpsWithoutHalfKernelsThrowClearErrors) {
  const Tensor h = ones({2, 2}, kBFloat16);
  EXPECT_TRUE(throws_error([&] { pow(h, 3.0); }, {"pow", "bfloat16", "half-precision"}));
  EXPECT_TRUE(throws_error([&] { h.cumsum(0); }, {"bfloat16"}));
  // the arithmetic, reductions and activations compute halves through float32 (Note
  // [Half-precision compute]): 1 + 1 and a sum of four ones are exact in bfloat16
  EXPECT_EQ((h + h).dtype(), kBFloat16);
  EXPECT_EQ(values((h + h).to(kFloat64)), (std::vector<double>{2, 2, 2, 2}));
  EXPECT_EQ(h.sum().item<double>(), 4.0);
  // randn draws halves as PyTorch does (tests/core/test_random_streams.cpp); integers are not normal
  EXPECT_EQ(randn({2}, kFloat16).dtype(), kFloat16);
  EXPECT_TRUE(throws_error([&] { randn({2}, kInt32); }, {"randn", "int32", "floating-point"}));
  // a half tensor mixed with float32 promotes to float32 (PyTorch's rule) and works
  EXPECT_EQ((h + ones({2, 2})).dtype(), kFloat32);
  EXPECT_EQ(values(h * ones({2, 2}).mul(3)), (std::vector<double>{3, 3, 3, 3}));
}

}  // namespace
}  // namespace graft::test
