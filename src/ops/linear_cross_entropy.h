// graft::linear_cross_entropy, the op behind nn::functional::linear_cross_entropy (Note [Linear
// cross-entropy in chunks] in src/ops/linear_cross_entropy.cpp). Not installed: its public spelling
// is the functional one (graft/nn/functional.h), which src/nn/functional.cpp unpacks into this call.
#pragma once

#include <cstdint>

#include "graft/core/tensor.h"
#include "graft/ops/ops.h"

namespace graft {

// cross_entropy(linear(input, weight, bias), target, {}, reduction, ignore_index, label_smoothing),
// computed chunk_size rows at a time (0: automatic). input (*, in), weight (V, in), bias (V) or
// undefined, target int64 of input's leading shape.
Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& target,
                            Reduction reduction = kMean, int64_t ignore_index = -100, double label_smoothing = 0.0,
                            int64_t chunk_size = 0);

}  // namespace graft
