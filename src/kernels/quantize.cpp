// Block-wise 8-bit dynamic quantization and bfloat16 rounding: see quantize.h.
#include "quantize.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "graft/core/factory.h"
#include "graft/runtime/parallel.h"
#include "vector_clones.h"

namespace graft::kernels {

namespace {

// bitsandbytes' create_dynamic_map(signed, max_exponent_bits = 7, total_bits = 8): for exponent
// i = 0..6 the midpoints of linspace(0.1, 1, k) scaled by 10^(i - 6), where k = 2^i + 1 (signed,
// each midpoint with both signs) or 2^(i+1) + 1 (unsigned); then 0 and 1; sorted. 127 * 2 or 254
// values, plus 2: 256. Each value in double, rounded once to float32.
std::array<float, kQuantLevels> make_dynamic_map(bool is_signed) {
  std::array<float, kQuantLevels> map{};
  int n = 0;
  for (int i = 0; i < 7; ++i) {
    const int k = is_signed ? (1 << i) + 1 : (1 << (i + 1)) + 1;
    const double scale = std::pow(10.0, i - 6);
    for (int j = 0; j + 1 < k; ++j) {
      const double lo = 0.1 + 0.9 * j / (k - 1), hi = 0.1 + 0.9 * (j + 1) / (k - 1);
      const double mean = (lo + hi) / 2;
      map[n++] = static_cast<float>(scale * mean);
      if (is_signed) map[n++] = static_cast<float>(-scale * mean);
    }
  }
  map[n++] = 0.0f;
  map[n++] = 1.0f;
  GRAFT_ASSERT(n == kQuantLevels, "the dynamic map has 256 values");
  std::sort(map.begin(), map.end());
  return map;
}

// A map with a start index for nearest_code's search per 16-bit prefix of the float's bits (sign,
// exponent, 7 mantissa bits): the largest code whose value is <= every float of that prefix. From
// there at most a step or two (the map's values are >= 0.7% apart, the prefixes' ranges 0.8% wide)
// finds the largest code <= x, which the binary search of nearest_code finds: the same code. This
// serves any x (NaN, inf, |x| > 1): blocks holding a NaN or an inf.
//
// Note [Nearest code by threshold]
// For x in [-1, 1] (what the values of a block with a finite nonzero absmax divide into) the
// quantizer reads the code from one small table instead, without branches, so that the loop
// vectorises. nearest_code is a non-decreasing step function of x: between two map values a and b,
// "b - x < x - a" turns from false to true once as x grows (b - x falls, x - a rises, each rounded
// monotonically), and at b the code is b's. So code k >= 1 begins at a threshold, the smallest float
// whose code is >= k, and nearest_code(x) = the number of thresholds <= x. The thresholds are >= 0.7%
// apart, so a prefix of x's bits 0.4% wide (sign, exponent, 8 mantissa bits) holds at most one:
// nearest_code(x) = base + (x >= the prefix's threshold), base the code of the prefix's lowest
// float. Within a prefix the order of the floats is that of their low 15 bits (reversed for negative
// floats), so the table holds per prefix base | key << 8, key the threshold's low 15 bits in that
// order (0x8000, above every key, when the prefix has none), and the test is an integer compare.
// The prefixes run over |x| in [2^-23, 1] (no threshold lies below 2^-23: the smallest is near
// 1.6e-7), smaller magnitudes sharing the first prefix of their sign: 2 x 5889 of them, 46 KiB. The
// constructor finds the thresholds with nearest_code itself (a binary search over the floats'
// order) and checks the one-per-prefix rule; tests compare the result with a linear scan of the map.
constexpr int kPrefixShift = 15;                    // keeps sign, exponent, 8 mantissa bits
constexpr uint32_t kLowPrefix = (127u - 23u) << 8;  // |x| = 2^-23
constexpr uint32_t kHighPrefix = 127u << 8;         // |x| = 1
constexpr uint32_t kPrefixesPerSign = kHighPrefix - kLowPrefix + 1;
constexpr uint32_t kLowMask = (1u << kPrefixShift) - 1;

// The table index of x's prefix (|x| <= 1, or the index leaves the table).
[[gnu::always_inline]] inline uint32_t prefix_index(uint32_t bits) {
  const uint32_t mag = (bits & 0x7fffffffu) >> kPrefixShift;
  return (mag > kLowPrefix ? mag - kLowPrefix : 0u) + (bits >> 31) * kPrefixesPerSign;
}
// x's place within its prefix, ascending with x.
[[gnu::always_inline]] inline uint32_t prefix_key(uint32_t bits) {
  return (bits & kLowMask) ^ ((bits >> 31) * kLowMask);
}

struct IndexedMap {
  const float* map;
  std::array<uint8_t, 65536> start{};
  std::array<uint32_t, 2 * kPrefixesPerSign> by_prefix{};  // Note [Nearest code by threshold]
  explicit IndexedMap(const float* m) : map(m) {
    for (uint32_t h = 0; h < 65536; ++h) {
      const float a = std::bit_cast<float>(h << 16), b = std::bit_cast<float>((h << 16) | 0xffffu);
      const float lowest = a < b ? a : b;  // NaN prefixes: both comparisons false, start 0
      int lo = 0;
      while (lo < kQuantLevels - 1 && map[lo + 1] <= lowest) ++lo;
      start[h] = static_cast<uint8_t>(lo);
    }
    // Thresholds: the floats of [-1, 1] in order are the keys 0x407fffff (-1) .. 0xbf800000 (1),
    // key = ~bits for a float with the sign bit set (-0.0 is 0x7fffffff), bits + 0x80000000 else.
    const auto from_key = [](uint32_t key) {
      return std::bit_cast<float>(key >= 0x80000000u ? key - 0x80000000u : ~key);
    };
    std::array<float, kQuantLevels + 1> threshold{};
    for (int k = 1; k < kQuantLevels; ++k) {
      uint32_t lo = 0x407fffffu, hi = 0xbf800000u;  // the first key whose code is >= k is in (lo, hi]
      GRAFT_ASSERT(nearest_code(map, from_key(lo)) < k && nearest_code(map, from_key(hi)) >= k,
                   "-1 and 1 bracket every threshold");
      while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        (nearest_code(map, from_key(mid)) >= k ? hi : lo) = mid;
      }
      threshold[k] = from_key(hi);
    }
    threshold[kQuantLevels] = std::numeric_limits<float>::infinity();
    for (uint32_t sign = 0; sign < 2; ++sign) {
      for (uint32_t p = 0; p < kPrefixesPerSign; ++p) {
        // The prefix's magnitudes: [first, last] (the first prefix from 0), within [0, 1].
        const uint32_t first = p == 0 ? 0u : (p + kLowPrefix) << kPrefixShift;
        const uint32_t last = std::min(((p + kLowPrefix) << kPrefixShift) | kLowMask, 0x3f800000u);
        const float lowest = std::bit_cast<float>(sign ? last | 0x80000000u : first);
        const float highest = std::bit_cast<float>(sign ? first | 0x80000000u : last);
        const uint32_t index = p + sign * kPrefixesPerSign;
        GRAFT_ASSERT(prefix_index(std::bit_cast<uint32_t>(lowest)) == index &&
                         prefix_index(std::bit_cast<uint32_t>(highest)) == index,
                     "the prefix index of a prefix's floats");
        const int base = nearest_code(map, lowest);
        const int top = nearest_code(map, highest);
        GRAFT_ASSERT(top <= base + 1, "one threshold at most per prefix");
        uint32_t key = 1u << kPrefixShift;
        if (top == base + 1) {
          const uint32_t t = std::bit_cast<uint32_t>(threshold[base + 1]);
          GRAFT_ASSERT(p != 0 && prefix_index(t) == index, "the threshold lies in its prefix");
          key = prefix_key(t);
        }
        by_prefix[index] = static_cast<uint32_t>(base) | key << 8;
      }
    }
  }
};

const IndexedMap& indexed_map(const float* map) {
  static const IndexedMap signed_map(dynamic_map(true)), unsigned_map(dynamic_map(false));
  return map == signed_map.map ? signed_map : unsigned_map;
}

// nearest_code(map, x), from the prefix's start: for any x.
inline uint8_t nearest_code_indexed(const IndexedMap& im, float x) {
  const float* map = im.map;
  int lo = im.start[std::bit_cast<uint32_t>(x) >> 16];
  while (lo < kQuantLevels - 1 && map[lo + 1] <= x) ++lo;
  if (lo == kQuantLevels - 1 || !(map[lo] <= x)) return static_cast<uint8_t>(lo);
  return static_cast<uint8_t>(map[lo + 1] - x < x - map[lo] ? lo + 1 : lo);
}

// The blocks' loops, compiled per processor (vector_clones.h): the division and the bfloat16
// conversions round the same in every variant.
GRAFT_VEC_CLONES float quantize_block_impl(const float* __restrict x, int64_t n, const IndexedMap& im,
                                           uint8_t* __restrict codes, uint8_t zero_code) {
  // absmax as an OpenMP max reduction, so that it vectorises (max is exact: any order gives the same
  // value), and a NaN noted on the side (what max makes of one is unspecified; the block's absmax is
  // then the quiet NaN).
  float absmax = 0;
  int nan = 0;
#pragma omp simd reduction(max : absmax) reduction(| : nan)
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    nan |= a != a;
    absmax = a > absmax ? a : absmax;
  }
  if (nan) absmax = std::numeric_limits<float>::quiet_NaN();
  if (absmax == 0) {
    for (int64_t j = 0; j < n; ++j) codes[j] = zero_code;
    return absmax;
  }
  if (!std::isfinite(absmax)) {  // a NaN or an inf in the block: NaN quotients, the general search
    for (int64_t j = 0; j < n; ++j) codes[j] = nearest_code_indexed(im, x[j] / absmax);
    return absmax;
  }
  // Note [Nearest code by threshold]: x[j] / absmax is in [-1, 1] (|x[j]| <= absmax, and the
  // division rounds monotonically).
  const uint32_t* __restrict by_prefix = im.by_prefix.data();
  for (int64_t j = 0; j < n; ++j) {
    const uint32_t bits = std::bit_cast<uint32_t>(x[j] / absmax);
    const uint32_t e = by_prefix[prefix_index(bits)];
    codes[j] = static_cast<uint8_t>((e & 0xffu) + (prefix_key(bits) >= (e >> 8) ? 1u : 0u));
  }
  return absmax;
}

GRAFT_VEC_CLONES void dequantize_block_impl(const uint8_t* __restrict codes, float absmax, int64_t n,
                                            const float* __restrict map, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = map[codes[i]] * absmax;
}

GRAFT_VEC_CLONES void bfloat16_to_float_impl(const BFloat16* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = bfloat16_bits_to_float(x[i].x);
}

GRAFT_VEC_CLONES void float_to_bfloat16_impl(const float* x, int64_t n, BFloat16* out) {
  for (int64_t i = 0; i < n; ++i) out[i].x = float_to_bfloat16_bits(x[i]);
}

int64_t num_quant_blocks(int64_t n) { return (n + kQuantBlock - 1) / kQuantBlock; }

}  // namespace

const float* dynamic_map(bool is_signed) {
  static const std::array<float, kQuantLevels> signed_map = make_dynamic_map(true);
  static const std::array<float, kQuantLevels> unsigned_map = make_dynamic_map(false);
  return is_signed ? signed_map.data() : unsigned_map.data();
}

uint8_t dynamic_map_zero_code(bool is_signed) { return nearest_code(dynamic_map(is_signed), 0.0f); }

float quantize_block(const float* x, int64_t n, const float* map, uint8_t* codes) {
  return quantize_block_impl(x, n, indexed_map(map), codes, nearest_code(map, 0.0f));
}

void dequantize_block(const uint8_t* codes, float absmax, int64_t n, const float* map, float* out) {
  dequantize_block_impl(codes, absmax, n, map, out);
}

void bfloat16_to_float(const BFloat16* x, int64_t n, float* out) { bfloat16_to_float_impl(x, n, out); }
void float_to_bfloat16(const float* x, int64_t n, BFloat16* out) { float_to_bfloat16_impl(x, n, out); }

Tensor quantize_blockwise(const Tensor& x, bool is_signed, Tensor& absmax) {
  GRAFT_CHECK(x.dtype() == DType::Float32, "quantize_blockwise", "a float32 tensor",
              std::string("a ") + dtype_name(x.dtype()) + " tensor", "convert it with .to(graft::kFloat32)");
  const int64_t n = x.numel(), nb = num_quant_blocks(n);
  Tensor codes = make_empty(x.sizes(), kUInt8, x.device());
  absmax = make_empty({nb}, kFloat32, x.device());
  if (x.is_meta()) return codes;
  const Tensor xc = x.is_contiguous() ? x : x.contiguous();
  const float* xp = xc.data_ptr<float>();
  uint8_t* cp = codes.data_ptr<uint8_t>();
  float* ap = absmax.data_ptr<float>();
  const float* map = dynamic_map(is_signed);
  parallel_for(0, nb, 16, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t s = k * kQuantBlock;
      ap[k] = quantize_block(xp + s, std::min(kQuantBlock, n - s), map, cp + s);
    }
  });
  return codes;
}

Tensor dequantize_blockwise(const Tensor& codes, const Tensor& absmax, bool is_signed) {
  const int64_t n = codes.numel(), nb = num_quant_blocks(n);
  GRAFT_CHECK(codes.dtype() == DType::UInt8 && absmax.dtype() == DType::Float32 && absmax.numel() == nb,
              "dequantize_blockwise", "uint8 codes and float32 scales, one per block of 2048 (" + std::to_string(nb) + ")",
              std::string(dtype_name(codes.dtype())) + " codes and " + std::to_string(absmax.numel()) + " " +
                  dtype_name(absmax.dtype()) + " scales",
              "pass the codes and scales quantize_blockwise made together");
  Tensor out = make_empty(codes.sizes(), kFloat32, codes.device());
  if (codes.is_meta()) return out;
  const Tensor cc = codes.is_contiguous() ? codes : codes.contiguous();
  const Tensor ac = absmax.is_contiguous() ? absmax : absmax.contiguous();
  const uint8_t* cp = cc.data_ptr<uint8_t>();
  const float* ap = ac.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const float* map = dynamic_map(is_signed);
  parallel_for(0, nb, 16, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t s = k * kQuantBlock;
      dequantize_block(cp + s, ap[k], std::min(kQuantBlock, n - s), map, op + s);
    }
  });
  return out;
}

}  // namespace graft::kernels
