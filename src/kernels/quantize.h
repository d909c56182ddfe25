// Block-wise 8-bit dynamic quantization and bfloat16 rounding of float32 values: the loops behind
// compact optimiser state (Note [Compact optimizer state] in graft/optim/state_precision.h, which
// defines the maps, the blocks and the rounding). Not installed.
#pragma once

#include <cstdint>

#include "graft/core/half.h"
#include "graft/core/tensor.h"

namespace graft::kernels {

inline constexpr int64_t kQuantBlock = 2048;  // values per block, one absmax each
inline constexpr int kQuantLevels = 256;

// The 256 values of the dynamic map, ascending: signed (values in [-0.993, 1]) or unsigned ([0, 1]).
const float* dynamic_map(bool is_signed);
// The index of 0.0 in the map (127 signed, 0 unsigned): the code of every value of an all-zero block.
uint8_t dynamic_map_zero_code(bool is_signed);

// The index of the map value nearest to x (|x| <= 1 after scaling), ties to the lower index; x below
// the map's first value gives 0, above its last 255.
inline uint8_t nearest_code(const float* map, float x) {
  int lo = 0;
  for (int step = kQuantLevels / 2; step > 0; step >>= 1) lo += map[lo + step] <= x ? step : 0;
  if (lo == kQuantLevels - 1 || !(map[lo] <= x)) return static_cast<uint8_t>(lo);
  return static_cast<uint8_t>(map[lo + 1] - x < x - map[lo] ? lo + 1 : lo);
}

// One block (n <= kQuantBlock values): writes the codes of x / absmax and returns absmax, the
// largest |x| (NaN when x holds a NaN; 0 for an all-zero block, whose codes are the code of 0).
float quantize_block(const float* x, int64_t n, const float* map, uint8_t* codes);
// One block back: out[i] = map[codes[i]] * absmax.
void dequantize_block(const uint8_t* codes, float absmax, int64_t n, const float* map, float* out);

// bfloat16 <-> float32 over n values (widening is exact; narrowing rounds to nearest, ties to even).
void bfloat16_to_float(const BFloat16* x, int64_t n, float* out);
void float_to_bfloat16(const float* x, int64_t n, BFloat16* out);

// Whole tensors, block by block over graft's threads. quantize_blockwise: x is float32 (any shape);
// returns its codes (uint8, x's shape) and sets absmax (float32 [ceil(numel / kQuantBlock)]). Meta
// in, meta out (no values). dequantize_blockwise: the float32 tensor of codes' shape.
Tensor quantize_blockwise(const Tensor& x, bool is_signed, Tensor& absmax);
Tensor dequantize_blockwise(const Tensor& codes, const Tensor& absmax, bool is_signed);

}  // namespace graft::kernels
