// RMSprop, exactly PyTorch 1.13's torch.optim.RMSprop (single-tensor implementation):
//   g = grad (negated with maximize) + weight_decay * p
//   s = alpha * s + (1 - alpha) * g * g
//   centered: a = alpha * a + (1 - alpha) * g;  avg = sqrt(s - a * a) + eps;  else avg = sqrt(s) + eps
//   momentum > 0: buf = momentum * buf + g / avg;  p -= lr * buf      else p -= lr * g / avg
#pragma once

#include "graft/optim/optimizer.h"

namespace graft::optim {

class RMSpropOptions : public OptimizerCloneableOptions<RMSpropOptions> {
 public:
  RMSpropOptions(double lr = 1e-2) : OptimizerCloneableOptions(lr) {}
  GRAFT_OPTIM_ARG(double, alpha) = 0.99;
  GRAFT_OPTIM_ARG(double, eps) = 1e-8;
  GRAFT_OPTIM_ARG(double, weight_decay) = 0;
  GRAFT_OPTIM_ARG(double, momentum) = 0;
  GRAFT_OPTIM_ARG(bool, centered) = false;
  GRAFT_OPTIM_ARG(bool, maximize) = false;

 public:
  void visit(OptionsVisitor& v) override;
  void validate() const override;
  const char* optimizer_name() const override { return "RMSprop"; }
};

class RMSpropParamState : public OptimizerParamState {
  GRAFT_OPTIM_ARG(int64_t, step) = 0;
  GRAFT_OPTIM_ARG(Tensor, square_avg);
  GRAFT_OPTIM_ARG(Tensor, momentum_buffer);  // momentum > 0 only
  GRAFT_OPTIM_ARG(Tensor, grad_avg);         // centered only

 public:
  void visit(ParamStateVisitor& v) override {
    v("step", step_, true);
    v("square_avg", square_avg_, true);
    v("momentum_buffer", momentum_buffer_, false);
    v("grad_avg", grad_avg_, false);
  }
};

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<OptimizerParamGroup> param_groups, const RMSpropOptions& defaults = RMSpropOptions());
  explicit RMSprop(const std::vector<Tensor>& params, const RMSpropOptions& defaults = RMSpropOptions())
      : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

 protected:
  void step_group(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override {
    return std::make_unique<RMSpropParamState>();
  }
};

}  // namespace graft::optim
