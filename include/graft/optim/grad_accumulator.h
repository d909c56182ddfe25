// graft::optim::GradAccumulator: gradient accumulation that is correct by construction. It runs the
// backward of K micro-batch losses, weights them so that the accumulated gradient is the gradient of
// the mean loss over the effective batch, clips once, steps and zeroes. See docs/gradients.md.
//
//   graft::optim::SGD opt(model->parameters(), graft::optim::SGDOptions(0.1).momentum(0.9));
//   graft::optim::GradAccumulator acc(opt, model, {.steps = 4, .max_grad_norm = 1.0});
//   for (auto& batch : loader) acc.backward(loss_of(batch), batch.size);  // steps every 4th call
//   acc.flush();                                                           // a short last group
//
// Note [Gradient accumulation]
// Micro-batch i of a group has a mean-reduced loss L_i over n_i samples (count = n_i). The
// accumulator runs backward on w_i * L_i and, when the group ends, divides every gradient by
// W = sum_i w_i before clipping and stepping:
//   Weighting::kMean           w_i = 1:   the gradient of (1/k) sum_i L_i (k micro-batches in the
//                                         group) -- the effective-batch mean when sizes are equal
//   Weighting::kBySampleCount  w_i = n_i: the gradient of sum_i n_i L_i / sum_i n_i, the mean over
//                                         every sample (or token) of the group, whatever the sizes
// Because W is applied at the end, a group that ends early (flush() at the end of an epoch) is
// weighted exactly too: its k < K micro-batches give the mean over its own samples. Then, once per
// group: clip_grad_norm_ over all the optimiser's parameters (when max_grad_norm is set),
// optimizer.step(), optimizer.zero_grad(). The accumulator owns the gradients of the optimiser's
// parameters: it also zeroes them before the first backward of a group, so stale gradients never
// leak into a step. The mistake it replaces -- zero_grad() before every micro-batch's backward (only
// the last micro-batch reaches the step), or summing unscaled losses (a gradient K times too big,
// which also shifts clipping) -- is shown in docs/gradients.md.
//
// BatchNorm: a BatchNorm layer in train mode normalises each micro-batch with that micro-batch's
// statistics (and updates its running averages per micro-batch), so accumulation over K > 1
// micro-batches is not the same as one big batch. Given the model, the accumulator warns once
// (through options.on_warning, stderr by default) when it finds one in train mode.
//
// If clipping throws (error_if_nonfinite with a nan/inf norm), the group is dropped: the gradients
// are zeroed and the next backward starts a new group; the optimiser has not stepped. The same holds
// when a micro-batch's backward throws (memory::OutOfMemoryError, or any other error): it may have
// written the gradients of some parameters and not of others, so the accumulator zeroes the
// gradients of all the optimiser's parameters, drops the micro-batches accumulated so far
// (pending() is 0 again) and rethrows. The partial gradients never join a step; the caller goes on
// (with a smaller micro-batch, say) and the next backward starts a new group.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "graft/core/tensor.h"
#include "graft/optim/optimizer.h"

namespace graft::nn {
class Module;
}  // namespace graft::nn

namespace graft::optim {

// How the micro-batches of a group are weighted (Note [Gradient accumulation]).
enum class Weighting {
  kMean,           // each micro-batch equally: the mean of the micro-batch losses
  kBySampleCount,  // each micro-batch by its count: the mean over all samples (tokens) of the group
};

// A gradient synchroniser (nn::parallel::DistributedDataParallel's reducer): given one, the
// accumulator turns its communication off for every micro-batch of a group but the last, so that a
// group communicates once (PyTorch's no_sync), and has it synchronise a group that ends early.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual void set_sync_enabled(bool enabled) = 0;  // off: backward only accumulates into .grad
  virtual bool sync_enabled() const = 0;
  virtual void sync_now() = 0;  // averages the accumulated gradients over the ranks now
};

// Every member has a default, so designated initializers may name any subset (in this order):
// {.steps = 4, .weighting = Weighting::kBySampleCount, .max_grad_norm = 1.0}.
struct GradAccumulatorOptions {
  int64_t steps = 1;                    // micro-batches per optimiser step (K >= 1)
  Weighting weighting = Weighting::kMean;
  std::optional<double> max_grad_norm = std::nullopt;  // clip_grad_norm_ once per step when set
  double norm_type = 2.0;               // for clipping
  bool error_if_nonfinite = false;      // for clipping
  // Receives warnings (BatchNorm in train mode); null: written to std::cerr.
  std::function<void(const std::string&)> on_warning = nullptr;
  // Distributed data parallel: ddp.reducer() (not owned; it must outlive the accumulator).
  GradientSync* sync = nullptr;
};

class GradAccumulator {
 public:
  explicit GradAccumulator(Optimizer& optimizer, GradAccumulatorOptions options = {});
  // With the model, so that BatchNorm layers in train mode can be found and warned about.
  GradAccumulator(Optimizer& optimizer, std::shared_ptr<nn::Module> model, GradAccumulatorOptions options = {});

  // The backward of one micro-batch: `loss` is its one-element, mean-reduced loss over `count`
  // samples (or tokens; used by Weighting::kBySampleCount, checked >= 1 always). When this completes
  // a group of options().steps micro-batches it also rescales, clips, steps and zeroes, and returns
  // true; otherwise false.
  bool backward(const Tensor& loss, int64_t count = 1);
  // Ends the current group early (the end of an epoch): steps when micro-batches are pending.
  // Returns whether it stepped.
  bool flush();

  // Micro-batches accumulated since the last step.
  int64_t pending() const noexcept { return pending_; }
  // Optimiser steps taken through this accumulator.
  int64_t steps_taken() const noexcept { return steps_taken_; }
  // The total gradient norm before clipping at the last step (none without max_grad_norm).
  std::optional<double> last_grad_norm() const noexcept { return last_grad_norm_; }
  const GradAccumulatorOptions& options() const noexcept { return options_; }
  Optimizer& optimizer() noexcept { return optimizer_; }

 private:
  void check_batch_norm();
  void finish_group();
  void reset_group();

  Optimizer& optimizer_;
  std::shared_ptr<nn::Module> model_;
  GradAccumulatorOptions options_;
  int64_t pending_ = 0;
  int64_t weight_ = 0;  // sum of the group's weights w_i
  int64_t steps_taken_ = 0;
  bool warned_ = false;
  std::optional<double> last_grad_norm_;
  bool synced_last_ = true;  // whether the last micro-batch's backward communicated
};

}  // namespace graft::optim
