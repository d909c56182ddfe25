// SGD with momentum, dampening, Nesterov momentum, weight decay and maximize, exactly PyTorch 1.13's
// torch.optim.SGD (its single-tensor implementation):
//   g = grad (negated with maximize) + weight_decay * p
//   buf = g on the first step, else momentum * buf + (1 - dampening) * g
//   g = nesterov ? g + momentum * buf : buf          (when momentum != 0)
//   p -= lr * g
// state_precision(StatePrecision::BFloat16 or Int8) keeps the momentum buffer compactly, the update
// computed in float32 (Note [Compact optimizer state] in graft/optim/state_precision.h).
#pragma once

#include "graft/optim/optimizer.h"
#include "graft/optim/state_precision.h"

namespace graft::optim {

class SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
 public:
  SGDOptions(double lr) : OptimizerCloneableOptions(lr) {}
  GRAFT_OPTIM_ARG(double, momentum) = 0;
  GRAFT_OPTIM_ARG(double, dampening) = 0;
  GRAFT_OPTIM_ARG(double, weight_decay) = 0;
  GRAFT_OPTIM_ARG(bool, nesterov) = false;
  GRAFT_OPTIM_ARG(bool, maximize) = false;
  // How the momentum buffer is held (Note [Compact optimizer state]); not a state-dict option.
  GRAFT_OPTIM_ARG(StatePrecision, state_precision) = StatePrecision::Full;

 public:
  void visit(OptionsVisitor& v) override;
  void validate() const override;
  const char* optimizer_name() const override { return "SGD"; }
};

// The momentum buffer in the parameter's dtype, or compact (Note [Compact optimizer state]):
// bfloat16, or uint8 codes with the float32 scale of each block of 2048 in momentum_buffer_absmax.
class SGDParamState : public OptimizerParamState {
  GRAFT_OPTIM_ARG(Tensor, momentum_buffer);  // undefined until the first step with momentum
  GRAFT_OPTIM_ARG(Tensor, momentum_buffer_absmax);

 public:
  void visit(ParamStateVisitor& v) override {
    detail::visit_compact(v, "momentum_buffer", momentum_buffer_, false);
    detail::visit_compact(v, "momentum_buffer_absmax", momentum_buffer_absmax_, false, /*param_shaped=*/false);
  }
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<OptimizerParamGroup> param_groups, const SGDOptions& defaults);
  SGD(const std::vector<Tensor>& params, const SGDOptions& defaults)
      : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

  bool supports_update_stats() const override { return true; }  // Note [Update statistics]

 protected:
  void step_group(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override { return std::make_unique<SGDParamState>(); }
};

}  // namespace graft::optim
