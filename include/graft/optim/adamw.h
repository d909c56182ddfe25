// AdamW: Adam with decoupled weight decay, exactly PyTorch 1.13's torch.optim.AdamW: the parameter
// is first scaled by (1 - lr * weight_decay), then updated as by Adam without weight decay in the
// gradient. weight_decay defaults to 1e-2. state_precision as for Adam (Note [Compact optimizer state]).
#pragma once

#include "graft/optim/adam.h"

namespace graft::optim {

class AdamWOptions : public OptimizerCloneableOptions<AdamWOptions> {
 public:
  AdamWOptions(double lr = 1e-3) : OptimizerCloneableOptions(lr) {}
  GRAFT_OPTIM_ARG(betas_t, betas) = betas_t(0.9, 0.999);
  GRAFT_OPTIM_ARG(double, eps) = 1e-8;
  GRAFT_OPTIM_ARG(double, weight_decay) = 1e-2;
  GRAFT_OPTIM_ARG(bool, amsgrad) = false;
  GRAFT_OPTIM_ARG(bool, maximize) = false;
  // How m, v and v_max are held (Note [Compact optimizer state]); not a state-dict option.
  GRAFT_OPTIM_ARG(StatePrecision, state_precision) = StatePrecision::Full;

 public:
  void visit(OptionsVisitor& v) override;
  void validate() const override;
  const char* optimizer_name() const override { return "AdamW"; }
};

using AdamWParamState = AdamParamState;

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<OptimizerParamGroup> param_groups, const AdamWOptions& defaults = AdamWOptions());
  explicit AdamW(const std::vector<Tensor>& params, const AdamWOptions& defaults = AdamWOptions())
      : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

 protected:
  void step_group(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override { return std::make_unique<AdamParamState>(); }
};

}  // namespace graft::optim
