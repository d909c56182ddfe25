// Helpers of the lower precision ops (Note [Autocast] in graft/ops/autocast.h), used by
// src/ops/linalg.cpp, src/ops/conv.cpp and src/ops/softmax.cpp.
#pragma once

#include <initializer_list>
#include <optional>

#include "graft/core/tensor.h"

namespace graft::detail {

inline bool is_half_dtype(DType t) { return t == kFloat16 || t == kBFloat16; }

// The dtype H a lower precision op computes in, or nullopt for the op's ordinary path:
//  - autocast on: the autocast dtype, when every defined operand is float32, float16 or bfloat16;
//  - autocast off: H, when every defined operand has the same half dtype H.
std::optional<DType> lowp_dtype(std::initializer_list<const Tensor*> operands);

// A float32 tensor holding x rounded to H (x float32) or widened (x already H): what the float32
// kernels multiply. Recorded with a straight-through gradient (passed on unchanged) when grad mode
// is on and x requires grad, so that backward formulas using it can be differentiated again.
Tensor rounded_float32(const Tensor& x, DType h);

// What a lower precision op saves for operand x: x itself when it is H or a leaf (no new memory;
// backward rounds it again), its H copy otherwise.
Tensor lowp_saved(const Tensor& x, DType h);

}  // namespace graft::detail
