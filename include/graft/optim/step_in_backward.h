// graft::optim::StepInBackward: the optimiser step inside backward (PyTorch's "optimizer in
// backward" recipe, on post-accumulate-grad hooks), for every optimiser that implements step_group()
// (SGD, Adam, AdamW, RMSprop, Adagrad, and any derived one).
//
//   graft::optim::Adam opt(model->parameters(), graft::optim::AdamOptions(1e-3));
//   graft::optim::StepInBackward sib(opt);            // or StepInBackward(opt, StepInBackwardOptions()
//                                                     //                   .clip_grad_value(1.0))
//   for (auto& batch : loader) loss_of(batch).backward();  // no zero_grad(), no opt.step()
//
// Note [Optimizer step in backward]
// A plain training step holds every parameter's gradient at once: backward writes them all, then
// step() reads them all, so gradient memory is the sum of all parameters' sizes (the size of the
// model again). StepInBackward registers one post-accumulate-grad hook per parameter
// (Tensor::register_post_accumulate_grad_hook): as soon as backward has written a parameter's
// whole gradient for the pass, the hook runs the optimiser's update of that one parameter
// (Optimizer::step_parameter: the group's options, the parameter's state and step count, exactly
// as step() would update it) and frees the gradient (.grad becomes undefined). Backward computes
// the gradients of the last layers first, so at most about one gradient is alive at a time: the
// gradient memory of a step falls to about the largest parameter's. The parameters end each step
// equal to those of zero_grad(); backward(); step() (the same update on the same gradient).
//
// What changes, and the rules (each one an error that says why, never a silently different result):
//  - step() while attached is an error (it would update twice); the loop is just loss.backward().
//    zero_grad() finds no gradient and does nothing. Learning-rate schedulers work as before (the
//    options live in the groups, read by each hook); sched.step() after backward.
//  - steps_taken() counts backward passes that updated a parameter (one per pass, counted at the
//    first update of the pass), so update statistics (Note [Update statistics]) keep their numbers.
//  - Global-norm clipping needs every gradient before any update: nn::utils::clip_grad_norm_ (and
//    clip_grad_value_, and Optimizer::clip_grad_norm_) over a list holding an attached parameter
//    without a gradient is an error. StepInBackwardOptions offers per-parameter clipping instead,
//    applied in the hook before the update: clip_grad_value(v) clamps each element to [-v, v]
//    (exactly nn::utils::clip_grad_value_; the same as global value clipping, which is
//    elementwise), then max_grad_norm(m) scales each parameter's gradient to a norm of at most m on
//    its own (nn::utils::clip_grad_norm_ over that one parameter). Per-parameter norm clipping is
//    a different method from global clipping: every gradient that exceeds m is scaled, each by its
//    own factor, so the update direction changes where global clipping only shortens it.
//  - Gradient accumulation (several backward passes per update) cannot work: every pass updates.
//    GradAccumulator over an attached optimiser is an error (at construction and at each backward);
//    without step-in-backward it is the way to accumulate.
//  - A parameter's gradient must arrive once per pass. A parameter whose gradient the engine
//    writes twice in one user backward (it is used inside and outside a checkpointed segment, or in
//    two segments: each recomputation runs a pass of its own) would be updated with part of its
//    gradient; the second write is an error. Tied weights without checkpointing are fine: the
//    engine sums every use before it writes .grad.
//  - Every pass that writes .grad updates: backward(retain_graph=true) twice updates twice, and
//    the second pass through the same graph usually fails anyway, as a graph that saved a weight
//    sees it modified in place (the version counter error). backward(create_graph=true) updates
//    with the first-order gradient and frees it, so a later pass cannot use .grad; compute
//    higher-order terms (a gradient penalty) with autograd::grad, which writes no .grad and runs no
//    hook, and put them in the loss. backward(inputs=...) updates only those parameters.
//  - Parameters that do not require grad at construction are skipped (frozen layers); a parameter
//    added to the optimiser later is not covered, so add_param_group and add_parameters are errors
//    while attached. A parameter that already has a post-accumulate-grad hook is refused: such a
//    hook (DistributedDataParallel's all-reduce) may still change the gradient after ours ran.
//  - An optimiser that overrides step() instead of step_group() (ZeroRedundancyOptimizer) is
//    refused at construction.
//  - A backward that throws part-way leaves the parameters it updated so far updated (the plain
//    loop updates nothing then); the rest have no gradient, so the next pass starts clean.
//  - Anything that reads .grad after backward (a gradient monitor, gradient logging) finds none:
//    read it in a post-accumulate-grad hook registered before the StepInBackward.
//
// Costs. The updates run inside backward, one parameter at a time, so they cannot be fused across
// parameters; each hook looks its parameter's group up (linear in the number of parameters).
// Saved activations are untouched: the peak is weights + optimizer state + activations + about
// one gradient, instead of weights + optimizer state + max(activations, all gradients).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/optim/optimizer.h"

namespace graft::optim {

class StepInBackwardOptions {
 public:
  // Per-parameter elementwise clipping of each gradient to [-v, v] before its update (v >= 0).
  GRAFT_OPTIM_ARG(std::optional<double>, clip_grad_value) = std::nullopt;
  // Per-parameter norm clipping: each gradient on its own to a norm of at most m (m >= 0) before
  // its update (after clip_grad_value when both are set). Not global-norm clipping.
  GRAFT_OPTIM_ARG(std::optional<double>, max_grad_norm) = std::nullopt;
  GRAFT_OPTIM_ARG(double, norm_type) = 2.0;  // of max_grad_norm
};

// Attaches to `optimizer` for its lifetime (RAII; non-copyable, non-movable): one
// post-accumulate-grad hook per parameter of its groups, removed by the destructor. At most one per
// optimiser. The optimiser must outlive it. See Note [Optimizer step in backward].
class StepInBackward {
 public:
  explicit StepInBackward(Optimizer& optimizer, StepInBackwardOptions options = {});
  ~StepInBackward();
  StepInBackward(const StepInBackward&) = delete;
  StepInBackward& operator=(const StepInBackward&) = delete;

  Optimizer& optimizer() noexcept { return optimizer_; }
  const StepInBackwardOptions& options() const noexcept { return options_; }
  // The parameters that have a hook (those that required grad at construction).
  const std::vector<Tensor>& parameters() const noexcept { return params_; }

 private:
  struct Pass;
  void on_gradient(size_t index);

  Optimizer& optimizer_;
  StepInBackwardOptions options_;
  std::vector<Tensor> params_;
  std::vector<HookHandle> hooks_;
  // The backward pass running now: owned by a callback queued on the engine, so it expires when
  // the pass ends, normally or by an exception.
  std::weak_ptr<Pass> pass_;
};

}  // namespace graft::optim
