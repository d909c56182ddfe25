// StepInBackward: see include/graft/optim/step_in_backward.h and Note [Optimizer step in backward].
#include "graft/optim/step_in_backward.h"

#include <string>
#include <unordered_set>
#include <utility>

#include "../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/engine/engine.h"
#include "graft/nn/utils.h"

namespace graft::optim {

namespace {

constexpr const char* kStepInBackwardOp = "StepInBackward";

}  // namespace

// The parameters updated so far in one backward pass.
struct StepInBackward::Pass {
  std::unordered_set<const TensorImpl*> updated;
};

StepInBackward::StepInBackward(Optimizer& optimizer, StepInBackwardOptions options)
    : optimizer_(optimizer), options_(std::move(options)) {
  using graft::detail::shortest;
  const std::string name = optimizer_.name();
  GRAFT_CHECK(optimizer_.step_in_backward_ == nullptr, kStepInBackwardOp, "an optimiser without a StepInBackward",
              name + " with one attached already", "each parameter would be updated twice per backward; keep one");
  GRAFT_CHECK(!options_.clip_grad_value() || *options_.clip_grad_value() >= 0, kStepInBackwardOp, "clip_grad_value >= 0",
              "clip_grad_value = " + shortest(options_.clip_grad_value().value_or(0)),
              "gradients are clamped to [-clip_grad_value, clip_grad_value]; leave it unset for no clipping");
  GRAFT_CHECK(!options_.max_grad_norm() || *options_.max_grad_norm() >= 0, kStepInBackwardOp, "max_grad_norm >= 0",
              "max_grad_norm = " + shortest(options_.max_grad_norm().value_or(0)),
              "leave max_grad_norm unset for no clipping");
  GRAFT_CHECK(options_.norm_type() > 0, kStepInBackwardOp, "norm_type > 0 or infinity",
              "norm_type = " + shortest(options_.norm_type()), "2 is the Euclidean norm");
  // An optimiser that updates in step() itself (ZeroRedundancyOptimizer) cannot update one
  // parameter: the base step_group() throws, on a group with no parameters as on any other.
  for (auto& group : optimizer_.param_groups_) {
    std::vector<Tensor> saved;
    std::swap(saved, group.params());
    struct Restore {
      OptimizerParamGroup& g;
      std::vector<Tensor>& saved;
      ~Restore() { std::swap(saved, g.params()); }
    } restore{group, saved};
    try {
      NoGradGuard no_grad;
      optimizer_.step_group(group);
    } catch (const Error&) {
      GRAFT_CHECK(false, kStepInBackwardOp, "an optimiser that updates its parameters in step_group()",
                  name + ", which updates in step() only",
                  "step-in-backward updates one parameter at a time through step_group(); use the plain loop "
                  "(zero_grad, backward, step) with this optimiser");
    }
  }
  // Every check before any change: a failed construction leaves nothing attached.
  std::vector<Tensor> params;
  size_t index = 0;
  for (const Tensor& p : optimizer_.parameters()) {
    const std::string which = "parameter " + std::to_string(index++) + " of " + name;
    if (!p.requires_grad()) continue;  // frozen: it never gets a gradient
    GRAFT_CHECK(p.impl().autograd_meta().post_accumulate_hooks.empty(), kStepInBackwardOp,
                "parameters without post-accumulate-grad hooks", which + ", which has one",
                "a hook registered before (DistributedDataParallel's all-reduce) may still change the gradient "
                "after the update; step-in-backward is not supported with it");
    GRAFT_CHECK(!nn::utils::detail::grad_consumed_in_backward(p), kStepInBackwardOp,
                "parameters no other StepInBackward updates", which + ", which another one updates",
                "a parameter can be updated in backward by one optimiser only");
    params.push_back(p);
  }
  params_ = std::move(params);
  hooks_.reserve(params_.size());
  try {
    for (size_t i = 0; i < params_.size(); ++i) {
      hooks_.push_back(params_[i].register_post_accumulate_grad_hook([this, i](const Tensor&) { on_gradient(i); }));
      nn::utils::detail::set_grad_consumed_in_backward(params_[i], true);
    }
  } catch (...) {
    for (size_t i = 0; i < hooks_.size(); ++i) {
      hooks_[i].remove();
      nn::utils::detail::set_grad_consumed_in_backward(params_[i], false);
    }
    throw;
  }
  optimizer_.step_in_backward_ = this;
}

StepInBackward::~StepInBackward() {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    hooks_[i].remove();
    nn::utils::detail::set_grad_consumed_in_backward(params_[i], false);
  }
  optimizer_.step_in_backward_ = nullptr;
}

void StepInBackward::on_gradient(size_t index) {
  Tensor& p = params_[index];
  if (!p.grad().defined()) return;
  std::shared_ptr<Pass> pass = pass_.lock();
  if (!pass) {
    // The first update of this backward pass: the callback owns the pass, so pass_ expires when the
    // engine runs the callbacks at the pass's end, or drops them when it throws.
    pass = std::make_shared<Pass>();
    autograd::queue_callback([pass] {});
    pass_ = pass;
    ++optimizer_.steps_taken_;
  }
  if (!pass->updated.insert(p.unsafe_impl()).second) {
    p.mutable_grad() = Tensor();  // the rest of the gradient must not leak into the next pass
    GRAFT_CHECK(false, kStepInBackwardOp, "each parameter's gradient written once per backward pass",
                "a second gradient for parameter " + std::to_string(index) + " of parameters() (shape " +
                    shape_str(p.sizes()) + ") in the same pass, after its update",
                "the parameter is used inside and outside a checkpointed segment, or in two segments (each "
                "recomputation writes .grad on its own); step-in-backward needs each gradient whole: do not "
                "checkpoint around shared parameters, or train with the plain loop");
  }
  if (options_.clip_grad_value()) nn::utils::clip_grad_value_(p, *options_.clip_grad_value());
  if (options_.max_grad_norm()) nn::utils::clip_grad_norm_(p, *options_.max_grad_norm(), options_.norm_type());
  optimizer_.step_parameter(p);
  // Note [Optimizer step in backward]: the gradient's memory goes back as soon as it is used.
  p.mutable_grad() = Tensor();
}

}  // namespace graft::optim
