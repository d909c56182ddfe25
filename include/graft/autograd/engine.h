// The backward engine and the functional gradient API.
#pragma once

#include <optional>

#include "graft/core/tensor.h"

namespace graft::autograd {

// Runs backward from `outputs`, seeded with `grad_outputs` (undefined entries mean ones for a
// scalar output). Accumulates into the .grad of leaves (all of them, or only `inputs` when given).
void backward(const TensorList& outputs, const TensorList& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const TensorList& inputs = {});

// Returns d(outputs)/d(inputs) without touching any .grad (PyTorch's torch.autograd.grad).
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs = {},
                std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                bool allow_unused = false);

}  // namespace graft::autograd
