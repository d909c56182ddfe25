// The 8-bit quantizer's code search (Note [Nearest code by threshold] in src/kernels/quantize.cpp)
// against a linear scan of the map over the floats where a search can go wrong: around every map
// value, every midpoint between neighbours and every prefix boundary of the float's bits, plus
// random values of every magnitude, on both maps; and blocks holding an inf or a NaN.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "../../src/kernels/quantize.h"

namespace graft::test::quantize_codes {
namespace {

// The first map value at the least distance from t (the map is ascending: ties to the lower
// code); NaN compares false everywhere, so 0.
uint8_t scan_code(const float* map, float t) {
  int best = 0;
  for (int k = 1; k < kernels::kQuantLevels; ++k)
    if (std::fabs(t - map[k]) < std::fabs(t - map[best])) best = k;
  return static_cast<uint8_t>(best);
}

// Values of [-1, 1] near the places a table-driven search could misplace.
std::vector<float> probe_values(const float* map) {
  std::vector<float> out;
  const auto around = [&](float c, int ulps) {
    float lo = c, hi = c;
    for (int i = 0; i < ulps; ++i) {
      lo = std::nextafter(lo, -2.0f);
      hi = std::nextafter(hi, 2.0f);
      out.push_back(lo);
      out.push_back(hi);
    }
    out.push_back(c);
  };
  for (int k = 0; k < kernels::kQuantLevels; ++k) {
    around(map[k], 40);
    if (k + 1 < kernels::kQuantLevels) around(static_cast<float>((static_cast<double>(map[k]) + map[k + 1]) / 2), 40);
  }
  // Every 2^15-float boundary of |x| in [2^-30, 1], both signs (the search's prefixes are 2^15 floats).
  for (uint32_t bits = 0x30800000u; bits <= 0x3f800000u; bits += 0x8000u) {
    for (const uint32_t b : {bits - 1, bits, bits + 1}) {
      out.push_back(std::bit_cast<float>(b));
      out.push_back(-std::bit_cast<float>(b));
    }
  }
  out.push_back(0.0f);
  out.push_back(-0.0f);
  out.push_back(std::numeric_limits<float>::denorm_min());
  out.push_back(-std::numeric_limits<float>::denorm_min());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-40, 0);
  for (int i = 0; i < 200000; ++i) out.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  for (float& v : out) v = std::fmin(1.0f, std::fmax(-1.0f, v));
  return out;
}

TEST(QuantizeCodes, EveryProbedValueGetsTheLinearScansCode) {
  for (bool is_signed : {true, false}) {
    const float* map = kernels::dynamic_map(is_signed);
    const std::vector<float> values = probe_values(map);
    // Blocks of a 1 (absmax 1, so x / absmax = x exactly) and 2047 probes.
    std::vector<float> block(kernels::kQuantBlock);
    std::vector<uint8_t> codes(kernels::kQuantBlock);
    size_t wrong = 0;
    for (size_t s = 0; s < values.size(); s += kernels::kQuantBlock - 1) {
      const size_t len = std::min<size_t>(kernels::kQuantBlock - 1, values.size() - s);
      block[0] = 1.0f;
      std::copy(values.begin() + static_cast<std::ptrdiff_t>(s), values.begin() + static_cast<std::ptrdiff_t>(s + len),
                block.begin() + 1);
      ASSERT_EQ(kernels::quantize_block(block.data(), static_cast<int64_t>(len + 1), map, codes.data()), 1.0f);
      for (size_t i = 1; i <= len; ++i) {
        const uint8_t want = scan_code(map, block[i]);
        if (codes[i] != want && ++wrong <= 10)
          ADD_FAILURE() << (is_signed ? "signed" : "unsigned") << " map, x = " << block[i] << " (bits 0x" << std::hex
                        << std::bit_cast<uint32_t>(block[i]) << std::dec << "): code " << int(codes[i]) << ", want "
                        << int(want);
      }
      EXPECT_EQ(codes[0], 255);
    }
    EXPECT_EQ(wrong, 0u) << (is_signed ? "signed" : "unsigned") << " map, of " << values.size() << " values";
  }
}

TEST(QuantizeCodes, BlocksWithAnInfOrANanTakeTheScansCodesOfTheirQuotients) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (bool is_signed : {true, false}) {
    const float* map = kernels::dynamic_map(is_signed);
    // absmax inf: inf / inf is NaN (code 0), finite / inf is +-0 (the code of 0).
    std::vector<float> x = {0.5f, -inf, 3.0f, -0.25f, inf, 0.0f};
    std::vector<uint8_t> codes(x.size());
    EXPECT_EQ(kernels::quantize_block(x.data(), static_cast<int64_t>(x.size()), map, codes.data()), inf);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(codes[i], scan_code(map, x[i] / inf)) << "x = " << x[i];
    EXPECT_EQ(codes[1], 0);
    EXPECT_EQ(codes[0], kernels::dynamic_map_zero_code(is_signed));
    // absmax NaN: every quotient NaN, every code 0.
    x = {0.5f, nan, -2.0f, 1.0f};
    codes.assign(x.size(), 99);
    EXPECT_TRUE(std::isnan(kernels::quantize_block(x.data(), static_cast<int64_t>(x.size()), map, codes.data())));
    for (const uint8_t c : codes) EXPECT_EQ(c, 0);
  }
}

}  // namespace
}  // namespace graft::test::quantize_codes
