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
//   optimizer step                      (none with step_in_backward: it ran during backward)
//   after_step()                        (the monitor's step figures: train only)
//   correct = (argmax(logits) == target).sum(), under no_grad
// The logits live to the end of the step (the accuracy reads them after the update, as it always
// has); the loss and the count come back as tensors, so that reading them (item()) is the caller's
// business and a meta run reads nothing.
//
// With fused_output (--chunked-loss, the text models) the model's last module is its output layer
// (a Linear's weight and bias) and never runs as such: the loss is F::linear_cross_entropy of the
// last hidden state, chunked over rows, whose backward recomputes each chunk's logits, so the step
// never holds the logits whole (Note [Linear cross-entropy in chunks]); the accuracy counts the
// hidden state's predictions a chunk of rows at a time, before backward.
//
// Note [Micro-batches]
// With micro_batches K > 1 (--micro-batches; one process), the batch's B examples are cut into
// min(K, B) micro-batches of consecutive examples, sizes differing by at most one. Each runs its
// forward (through the same path: checkpointed segments, the fused output layer), its loss and its
// backward in turn, through an optim::GradAccumulator weighted by each micro-batch's rows
// (Weighting::kBySampleCount): the accumulated gradient is the gradient of the mean loss over all
// of the batch's rows, the one-batch step's to rounding, and the accumulator steps once, after the
// last. Only one micro-batch's activations are live at a time; the gradients are whole throughout,
// so the optimizer step inside backward, which frees each as it completes, is refused with it, as is
// batch normalisation (its statistics would be each micro-batch's: a different result). The loss
// and the count are the batch's: the micro-batches' losses weighted by their rows, their counts
// summed.
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
  bool fused_output = false;        // the output layer and the loss as F::linear_cross_entropy (one process)
  bool step_in_backward = false;    // an optim::StepInBackward steps (and frees) each gradient during backward
  int64_t micro_batches = 1;        // > 1: Note [Micro-batches] (one process)
  // What checkpoint segments keep: nothing, or their linears' outputs (--selective-recompute)
  CheckpointPolicy checkpoint_policy = CheckpointPolicy::kRecomputeAll;

  // data: (B, ...) inputs; target: (B) labels or (B, T) next bytes (flattened here).
  StepResult operator()(const Tensor& data, const Tensor& target);

 private:
  // fused_output's forward: the loss (F::linear_cross_entropy of the last hidden state) and the
  // count of correct predictions; target flattened.
  std::pair<Tensor, Tensor> fused_forward(const Tensor& data, const Tensor& target) const;
};

// One held-out batch in evaluation mode, no gradient (the same ops as the step's forward and loss):
// the batch's mean loss and its correct predictions, as tensors.
StepResult eval_batch(nn::Sequential& model, const Tensor& data, const Tensor& target);

struct Evaluation {
  double loss = 0, accuracy = 0;
};
// Mean loss and accuracy over every prediction of the first `n` examples of `set` (one per image, or
// one per byte of each text window), `chunk` examples at a time, by eval_batch.
Evaluation evaluate(nn::Sequential& model, const data::Dataset& set, int64_t chunk, int64_t n);

}  // namespace graft::cli
