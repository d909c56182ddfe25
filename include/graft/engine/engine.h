// The backward engine and the functional gradient API.
#pragma once

#include <functional>
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

// PyTorch's Variable._execution_engine.queue_callback: `callback` runs on this thread when the
// backward pass running now ends, after every .grad of it is written (the outermost pass, when
// checkpointing runs passes inside it). Only during a pass (from a hook); not run when the pass throws.
void queue_callback(std::function<void()> callback);

namespace detail {
// What the backward pass running on this thread was asked for; null outside the engine. A node
// that runs a backward pass of its own inside apply() (checkpointing, Note [Checkpointing] in
// src/utils/checkpoint.cpp) reads it to run the same kind of pass: accumulate into every leaf,
// only into backward(inputs=...)'s leaves, or into no .grad at all (grad()).
struct BackwardPassInfo {
  bool create_graph = false;
  bool accumulate = true;              // false for grad(): no .grad is written
  const TensorList* inputs = nullptr;  // backward(inputs=...) or grad()'s inputs; null: every leaf
};
const BackwardPassInfo* current_backward_pass();
}  // namespace detail

}  // namespace graft::autograd
