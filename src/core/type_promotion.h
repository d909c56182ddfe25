// Type promotion: the dtype of a binary op's result, as PyTorch computes it (torch.result_type).
//
// Note [Type promotion]
// Categories: bool < integer < floating. Between two tensors of equal standing (both dimensioned or
// both 0-dim) the result is promote_types (graft/core/dtype.h: bool < uint8, int8 < int16 < int32
// < int64 < float16, bfloat16 < float32 < float64, with uint8 + int8 = int16).
// A dimensioned tensor outranks a 0-dim one of the same category (float32 x (3) + float64 0-dim ->
// float32); a 0-dim tensor, or a Python-style scalar, of a higher category wins (int64 x + 2.5 ->
// float32, the default float dtype).
#pragma once

#include "graft/core/scalar.h"
#include "graft/core/tensor.h"

namespace graft::detail {

// Two tensors.
DType result_type(const Tensor& a, const Tensor& b);
// A tensor with a scalar: the scalar only matters when its category is higher
// (int tensor * 2.5 -> float32; float32 tensor * 2.5 -> float32).
DType result_type(const Tensor& a, const Scalar& s);

}  // namespace graft::detail
