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
// there at most a step or two (the map's values are >= 0.8% apart, the prefixes' ranges 0.8% wide)
// finds the largest code <= x, which the binary search of nearest_code finds: the same code.
struct IndexedMap {
  const float* map;
  std::array<uint8_t, 65536> start{};
  explicit IndexedMap(const float* m) : map(m) {
    for (uint32_t h = 0; h < 65536; ++h) {
      const float a = std::bit_cast<float>(h << 16), b = std::bit_cast<float>((h << 16) | 0xffffu);
      const float lowest = a < b ? a : b;  // NaN prefixes: both comparisons false, start 0
      int lo = 0;
      while (lo < kQuantLevels - 1 && map[lo + 1] <= lowest) ++lo;
      start[h] = static_cast<uint8_t>(lo);
    }
  }
};

const IndexedMap& indexed_map(const float* map) {
  static const IndexedMap signed_map(dynamic_map(true)), unsigned_map(dynamic_map(false));
  return map == signed_map.map ? signed_map : unsigned_map;
}

// nearest_code(map, x), from the prefix's start.
inline uint8_t nearest_code_indexed(const IndexedMap& im, float x) {
  const float* map = im.map;
  int lo = im.start[std::bit_cast<uint32_t>(x) >> 16];
  while (lo < kQuantLevels - 1 && map[lo + 1] <= x) ++lo;
  if (lo == kQuantLevels - 1 || !(map[lo] <= x)) return static_cast<uint8_t>(lo);
  return static_cast<uint8_t>(map[lo + 1] - x < x - map[lo] ? lo + 1 : lo);
}

// The blocks' loops, compiled per processor (vector_clones.h): the division and the bfloat16
// conversions round the same in every variant.
GRAFT_VEC_CLONES float quantize_block_impl(const float* x, int64_t n, const IndexedMap& im, uint8_t* codes,
                                           uint8_t zero_code) {
  float absmax = 0;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    nan |= a != a;
    absmax = a > absmax ? a : absmax;
  }
  if (nan) absmax = std::numeric_limits<float>::quiet_NaN();
  if (absmax == 0) {
    for (int64_t i = 0; i < n; ++i) codes[i] = zero_code;
    return absmax;
  }
  for (int64_t i = 0; i < n; ++i) codes[i] = nearest_code_indexed(im, x[i] / absmax);
  return absmax;
}

GRAFT_VEC_CLONES void dequantize_block_impl(const uint8_t* codes, float absmax, int64_t n, const float* map,
                                            float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = map[codes[i]] * absmax;
}

GRAFT_VEC_CLONES void bfloat16_to_float_impl(const BFloat16* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = bfloat16_bits_to_float(x[i].x);
}

GRAFT_VEC_CLONES void float_to_bfloat16_impl(const float* x, int64_t n, BFloat16* out) {
  for (int64_t i = 0; i < n; ++i) out[i].x = float_to_bfloat16_bits(x[i]);
}

int64_t num_blocks(int64_t n) { return (n + kQuantBlock - 1) / kQuantBlock; }

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
  const int64_t n = x.numel(), nb = num_blocks(n);
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
  const int64_t n = codes.numel(), nb = num_blocks(n);
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
