// Adam (optionally AMSGrad), exactly PyTorch 1.13's torch.optim.Adam (single-tensor implementation):
//   step += 1;  g = grad (negated with maximize) + weight_decay * p
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   v_hat = amsgrad ? (v_max = max(v_max, v)) : v
//   p -= lr / (1 - beta1^step) * m / (sqrt(v_hat) / sqrt(1 - beta2^step) + eps)
// state_precision(StatePrecision::BFloat16 or Int8) keeps m, v (and v_max) compactly, the update
// computed in float32 (Note [Compact optimizer state] in graft/optim/state_precision.h):
//   graft::optim::AdamOptions(1e-3).state_precision(graft::optim::StatePrecision::Int8)
#pragma once

#include <tuple>

#include "graft/optim/optimizer.h"
#include "graft/optim/state_precision.h"

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
  // How m, v and v_max are held (Note [Compact optimizer state]); not a state-dict option.
  GRAFT_OPTIM_ARG(StatePrecision, state_precision) = StatePrecision::Full;

 public:
  void visit(OptionsVisitor& v) override;
  void validate() const override;
  const char* optimizer_name() const override { return "Adam"; }
};

// Shared by Adam and AdamW. The moments are in the parameter's dtype, or compact (Note [Compact
// optimizer state]): bfloat16, or uint8 codes of the parameter's shape with the float32 scale of
// each block of 2048 in <name>_absmax (defined only then).
class AdamParamState : public OptimizerParamState {
  GRAFT_OPTIM_ARG(int64_t, step) = 0;
  GRAFT_OPTIM_ARG(Tensor, exp_avg);
  GRAFT_OPTIM_ARG(Tensor, exp_avg_sq);
  GRAFT_OPTIM_ARG(Tensor, max_exp_avg_sq);  // amsgrad only
  GRAFT_OPTIM_ARG(Tensor, exp_avg_absmax);
  GRAFT_OPTIM_ARG(Tensor, exp_avg_sq_absmax);
  GRAFT_OPTIM_ARG(Tensor, max_exp_avg_sq_absmax);

 public:
  void visit(ParamStateVisitor& v) override {
    v("step", step_, true);
    detail::visit_compact(v, "exp_avg", exp_avg_, true);
    detail::visit_compact(v, "exp_avg_sq", exp_avg_sq_, true);
    detail::visit_compact(v, "max_exp_avg_sq", max_exp_avg_sq_, false);
    detail::visit_compact(v, "exp_avg_absmax", exp_avg_absmax_, false, /*param_shaped=*/false);
    detail::visit_compact(v, "exp_avg_sq_absmax", exp_avg_sq_absmax_, false, /*param_shaped=*/false);
    detail::visit_compact(v, "max_exp_avg_sq_absmax", max_exp_avg_sq_absmax_, false, /*param_shaped=*/false);
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
