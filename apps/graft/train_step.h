// graft train's training step, the one function both `graft train` runs and `graft plan` plans on
// the meta device (Note [What graft plan counts] in plan.cpp), so that the plan sees the step's
// allocations in the run's order.
//
// Note [graft train's step]
//   logits = model(data)                (through DDP under mpirun; through checkpoint_sequential
//                                        with --checkpoint-segments)
//   loss   = cross_entropy(logits, target)
//   zero_grad; loss.backward()
//   after_backward()                    (the gradient monitor: train only)
//   optimizer step
//   after_step()                        (the monitor's step figures: train only)
//   correct = (argmax(logits) == target).sum(), under no_grad
// The logits live to the end of the step (the accuracy reads them after the update, as it always
// has); the loss and the count come back as tensors, so that reading them (item()) is the caller's
// business and a meta run reads nothing.
#pragma once

#include <graft/graft.h>

#include <functional>

namespace graft::cli {

struct StepResult {
  Tensor loss;     // 0-dim float: the batch's mean cross-entropy
  Tensor correct;  // 0-dim int64: predictions equal to their target
};

struct TrainStep {
  nn::Sequential model;
  nn::parallel::DistributedDataParallel<nn::Sequential>* ddp = nullptr;  // under mpirun
  optim::Optimizer* optimizer = nullptr;
  std::function<void()> after_backward, after_step;  // optional
  int64_t checkpoint_segments = 0;  // > 0: the forward through checkpoint_sequential (one process)

  // data: (B, ...) inputs; target: (B) labels or (B, T) next bytes (flattened here).
  StepResult operator()(const Tensor& data, const Tensor& target);
};

}  // namespace graft::cli
