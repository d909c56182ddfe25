// Whole-tensor tests behind allclose and equal (src/ops/compare.cpp keeps the elementwise
// comparison itself, as kernels::map). Not installed.
#pragma once

#include "graft/core/tensor.h"

namespace graft::kernels::compare {

// Whether every element of t, a contiguous bool tensor, is true (an empty t: true).
bool all_true(const Tensor& t);

}  // namespace graft::kernels::compare
