// Adagrad, exactly PyTorch 1.13's torch.optim.Adagrad (single-tensor implementation):
//   step += 1;  g = grad (negated with maximize) + weight_decay * p
//   clr = lr / (1 + (step - 1) * lr_decay)
//   sum += g * g   (sum starts at initial_accumulator_value);  p -= clr * g / (sqrt(sum) + eps)
#pragma once

#include "graft/optim/optimizer.h"

namespace graft::optim {

class AdagradOptions : public OptimizerCloneableOptions<AdagradOptions> {
 public:
  AdagradOptions(double lr = 1e-2) : OptimizerCloneableOptions(lr) {}
  GRAFT_OPTIM_ARG(double, lr_decay) = 0;
  GRAFT_OPTIM_ARG(double, weight_decay) = 0;
  GRAFT_OPTIM_ARG(double, initial_accumulator_value) = 0;
  GRAFT_OPTIM_ARG(double, eps) = 1e-10;
  GRAFT_OPTIM_ARG(bool, maximize) = false;

 public:
  void visit(OptionsVisitor& v) override;
  void validate() const override;
  const char* optimizer_name() const override { return "Adagrad"; }
};

class AdagradParamState : public OptimizerParamState {
  GRAFT_OPTIM_ARG(int64_t, step) = 0;
  GRAFT_OPTIM_ARG(Tensor, sum);

 public:
  void visit(ParamStateVisitor& v) override {
    v("step", step_, true);
    v("sum", sum_, true);
  }
};

class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<OptimizerParamGroup> param_groups, const AdagradOptions& defaults = AdagradOptions());
  explicit Adagrad(const std::vector<Tensor>& params, const AdagradOptions& defaults = AdagradOptions())
      : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

 protected:
  void step_group(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override {
    return std::make_unique<AdagradParamState>();
  }
};

}  // namespace graft::optim
