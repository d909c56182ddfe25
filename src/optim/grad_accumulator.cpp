// GradAccumulator: see include/graft/optim/grad_accumulator.h and Note [Gradient accumulation].
#include "graft/optim/grad_accumulator.h"

#include <string>
#include <utility>
#include <vector>

#include "../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/warning.h"
#include "graft/nn/module.h"
#include "graft/nn/utils.h"

namespace graft::optim {

namespace {

constexpr const char* kGradAccumulatorOp = "GradAccumulator";

// Note [Optimizer step in backward]: with a StepInBackward attached every backward updates, so
// micro-batches cannot be accumulated into one step.
void check_no_step_in_backward(const Optimizer& optimizer, const char* op) {
  GRAFT_CHECK(!optimizer.steps_in_backward(), op, "an optimiser without a StepInBackward",
              std::string(optimizer.name()) + " with an optim::StepInBackward attached",
              "step-in-backward updates the parameters in every backward, so gradients cannot accumulate over "
              "micro-batches; use one of the two: GradAccumulator with the plain optimiser, or StepInBackward "
              "with one backward per step");
}

}  // namespace

GradAccumulator::GradAccumulator(Optimizer& optimizer, GradAccumulatorOptions options)
    : GradAccumulator(optimizer, nullptr, std::move(options)) {}

GradAccumulator::GradAccumulator(Optimizer& optimizer, std::shared_ptr<nn::Module> model,
                                 GradAccumulatorOptions options)
    : optimizer_(optimizer), model_(std::move(model)), options_(std::move(options)) {
  check_no_step_in_backward(optimizer_, kGradAccumulatorOp);
  GRAFT_CHECK(options_.steps >= 1, kGradAccumulatorOp, "steps >= 1 (micro-batches per optimiser step)",
              "steps = " + std::to_string(options_.steps), "use steps = 1 for no accumulation");
  GRAFT_CHECK(!options_.max_grad_norm || *options_.max_grad_norm >= 0, kGradAccumulatorOp, "max_grad_norm >= 0",
              "max_grad_norm = " + graft::detail::shortest(options_.max_grad_norm.value_or(0)),
              "leave max_grad_norm unset for no clipping");
  GRAFT_CHECK(options_.norm_type > 0, kGradAccumulatorOp, "norm_type > 0 or infinity",
              "norm_type = " + graft::detail::shortest(options_.norm_type), "2 is the Euclidean norm");
}

void GradAccumulator::check_batch_norm() {
  if (warned_ || !model_ || options_.steps == 1) return;
  std::string found;
  for (const auto& item : model_->named_modules()) {
    const std::string& name = item.key();
    if (item.value()->uses_batch_statistics()) {
      found += (found.empty() ? "" : ", ") + (name.empty() ? std::string("<the model itself>") : name);
    }
  }
  if (found.empty()) return;
  warned_ = true;
  const std::string msg =
      "GradAccumulator: the model has BatchNorm layers in train mode (" + found + "); with " +
      std::to_string(options_.steps) +
      " micro-batches per step they normalise with each micro-batch's statistics and update their running "
      "averages per micro-batch, so the result is not that of one big batch (use larger micro-batches, or a "
      "normalisation that does not depend on the batch such as LayerNorm)";
  if (options_.on_warning) options_.on_warning(msg);
  else GRAFT_WARN(msg);
}

bool GradAccumulator::backward(const Tensor& loss, int64_t count) {
  check_no_step_in_backward(optimizer_, "GradAccumulator.backward");
  GRAFT_CHECK(loss.defined() && loss.numel() == 1, "GradAccumulator.backward", "a one-element loss",
              loss.defined() ? "a loss of shape " + shape_str(loss.sizes()) : std::string("an undefined tensor"),
              "reduce the micro-batch loss to its mean (reduction 'mean')");
  GRAFT_CHECK(count >= 1, "GradAccumulator.backward", "a sample count >= 1", "count = " + std::to_string(count),
              "pass the number of samples (or tokens) the micro-batch's mean loss averages over");
  if (pending_ == 0) {
    optimizer_.zero_grad();  // the group starts from no gradient, whatever happened before
    check_batch_norm();
  }
  const int64_t w = options_.weighting == Weighting::kBySampleCount ? count : 1;
  // Only the group's last micro-batch communicates (GradientSync); flush() synchronises a short group.
  const bool last = pending_ + 1 >= options_.steps;
  struct SyncScope {
    GradientSync* sync;
    SyncScope(GradientSync* s, bool on) : sync(s) {
      if (sync) sync->set_sync_enabled(on);
    }
    ~SyncScope() {
      if (sync) sync->set_sync_enabled(true);
    }
  };
  try {
    SyncScope scope(options_.sync, last);
    if (w == 1) loss.backward();
    else (loss * static_cast<double>(w)).backward();
    synced_last_ = last;
  } catch (...) {
    // A backward that threw (out of memory, an in-place error, ...) may have written some of the
    // gradients and not others: the group is dropped, so that they never join a step.
    reset_group();
    throw;
  }
  ++pending_;
  weight_ += w;
  if (pending_ < options_.steps) return false;
  finish_group();
  return true;
}

bool GradAccumulator::flush() {
  if (pending_ == 0) return false;
  if (options_.sync && !synced_last_) options_.sync->sync_now();
  finish_group();
  return true;
}

void GradAccumulator::reset_group() {
  optimizer_.zero_grad();
  pending_ = 0;
  weight_ = 0;
}

void GradAccumulator::finish_group() {
  const std::vector<Tensor> params = optimizer_.parameters();
  try {
    NoGradGuard no_grad;
    if (weight_ != 1) {
      const double total = static_cast<double>(weight_);
      for (const Tensor& p : params) {
        if (!p.grad().defined()) continue;
        Tensor g = p.grad();
        g.div_(total);
      }
    }
    if (options_.max_grad_norm) {
      last_grad_norm_ = optimizer_.clip_grad_norm_(*options_.max_grad_norm, options_.norm_type, options_.error_if_nonfinite);
    }
  } catch (...) {
    reset_group();
    throw;
  }
  optimizer_.step();
  ++steps_taken_;
  reset_group();
}

}  // namespace graft::optim
