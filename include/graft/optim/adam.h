// Adam (optionally AMSGrad), exactly PyTorch 1.13's torch.optim.Adam (single-tensor implementation):
//   step += 1;  g = grad (negated with maximize) + weight_decay * p
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   v_hat = amsgrad ? (v_max = max(v_max, v)) : v
//   p -= lr / (1 - beta1^step) * m / (sqrt(v_hat) / sqrt(1 - beta2^step) + eps)
#pragma once

#include <tuple>

#include "graft/optim/optimizer.h"

namespace graft::optim {

using betas_t = std::tuple<double, double>;

class AdamOptions : public OptimizerCloneableOptions<AdamOptions> {
 public:
  AdamOptions(double lr = 1e-3) : OptimizerCloneableOptions(lr) {}
  GRAFT_OPTIM_ARG(betas_t, betas) = betas_t(0.9, 0.999);
  GRAFT_OPTIM_ARG(double, eps) = 1e-8;
  GRAFT_OPTIM_ARG(double, weight_decay) = 0;
  GRAFT_OPTIM_ARG(bool, amsgrad) = false;
  GRAFT_OPTIM_ARG(bool, maximize) = false;

 public:
  void visit(OptionsVisitor& v) override;
  void validate() const override;
  const char* optimizer_name() const override { return "Adam"; }
};

// Shared by Adam and AdamW.
class AdamParamState : public OptimizerParamState {
  GRAFT_OPTIM_ARG(int64_t, step) = 0;
  GRAFT_OPTIM_ARG(Tensor, exp_avg);
  GRAFT_OPTIM_ARG(Tensor, exp_avg_sq);
  GRAFT_OPTIM_ARG(Tensor, max_exp_avg_sq);  // amsgrad only

 public:
  void visit(ParamStateVisitor& v) override {
    v("step", step_, true);
    v("exp_avg", exp_avg_, true);
    v("exp_avg_sq", exp_avg_sq_, true);
    v("max_exp_avg_sq", max_exp_avg_sq_, false);
  }
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<OptimizerParamGroup> param_groups, const AdamOptions& defaults = AdamOptions());
  explicit Adam(const std::vector<Tensor>& params, const AdamOptions& defaults = AdamOptions())
      : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

 protected:
  void step_group(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override { return std::make_unique<AdamParamState>(); }
};

}  // namespace graft::optim
