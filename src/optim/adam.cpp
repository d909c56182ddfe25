// Adam and AdamW: see include/graft/optim/adam.h, adamw.h and Note [Optimizer update loops].
#include "graft/optim/adam.h"

#include "graft/optim/adamw.h"
#include "update.h"

namespace graft::optim {

using detail::format_double;

namespace {

template <class O>
void visit_adam_options(O& o, OptionsVisitor& v, double& lr) {
  v("lr", lr);
  v("betas", o.betas());
  v("eps", o.eps());
  v("weight_decay", o.weight_decay());
  v("amsgrad", o.amsgrad());
  v("maximize", o.maximize());
}

template <class O>
void validate_adam_options(const O& o, const char* op) {
  GRAFT_CHECK(o.lr() >= 0, op, "a learning rate >= 0", "lr = " + format_double(o.lr()), "");
  GRAFT_CHECK(o.eps() >= 0, op, "eps >= 0", "eps = " + format_double(o.eps()), "");
  const auto [b1, b2] = o.betas();
  GRAFT_CHECK(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1, op, "betas in [0, 1)",
              "betas = (" + format_double(b1) + ", " + format_double(b2) + ")",
              "beta1 decays the gradient average and beta2 the squared-gradient average, e.g. (0.9, 0.999)");
  GRAFT_CHECK(o.weight_decay() >= 0, op, "weight_decay >= 0", "weight_decay = " + format_double(o.weight_decay()),
              "");
}

// One Adam/AdamW update of every parameter of the group with a gradient. `decoupled`: AdamW's
// p *= 1 - lr * weight_decay instead of weight decay in the gradient.
template <class O>
void adam_step(OptimizerParamGroup& group, bool decoupled, const char* op,
               const std::function<AdamParamState&(const Tensor&)>& state_of) {
  const auto& o = static_cast<const O&>(group.options());
  detail::for_each_param_with_grad(group, op, [&](const Tensor& param, Tensor& p, const Tensor& g) {
    AdamParamState& st = state_of(param);
    if (!st.exp_avg().defined()) st.exp_avg(detail::make_buffer(p));
    if (!st.exp_avg_sq().defined()) st.exp_avg_sq(detail::make_buffer(p));
    if (o.amsgrad() && !st.max_exp_avg_sq().defined()) st.max_exp_avg_sq(detail::make_buffer(p));
    st.step(st.step() + 1);
    const double lr = o.lr();
    // (no structured binding: clang 14 cannot capture one in the lambda below)
    const auto betas = o.betas();
    const double beta1 = std::get<0>(betas), beta2 = std::get<1>(betas);
    const double step = static_cast<double>(st.step());
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const double step_size = lr / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);
    detail::dispatch_floating(p.dtype(), op, [&]<class T>() {
      T* pd = p.data_ptr<T>();
      const T* gd = g.data_ptr<T>();
      T* m = detail::contiguous_buffer(st.exp_avg()).template data_ptr<T>();
      T* v = detail::contiguous_buffer(st.exp_avg_sq()).template data_ptr<T>();
      T* vmax = o.amsgrad() ? detail::contiguous_buffer(st.max_exp_avg_sq()).template data_ptr<T>() : nullptr;
      const bool maximize = o.maximize();
      const bool coupled_decay = !decoupled && o.weight_decay() != 0;
      const T wd = static_cast<T>(o.weight_decay());
      const T decay_factor = static_cast<T>(1 - lr * o.weight_decay());
      const T b1 = static_cast<T>(beta1), one_minus_b1 = static_cast<T>(1 - beta1);
      const T b2 = static_cast<T>(beta2), one_minus_b2 = static_cast<T>(1 - beta2);
      const T bc2_sqrt = static_cast<T>(bias_correction2_sqrt);
      const T eps = static_cast<T>(o.eps());
      const T neg_step_size = static_cast<T>(-step_size);
      const int64_t n = p.numel();
      for (int64_t i = 0; i < n; ++i) {
        T gi = maximize ? -gd[i] : gd[i];
        if (decoupled) pd[i] = pd[i] * decay_factor;
        if (coupled_decay) gi = std::fma(wd, pd[i], gi);
        m[i] = std::fma(one_minus_b1, gi, m[i] * b1);
        v[i] = std::fma(one_minus_b2 * gi, gi, v[i] * b2);
        T denom;
        if (vmax) {
          vmax[i] = detail::nan_maximum(vmax[i], v[i]);
          denom = std::sqrt(vmax[i]) / bc2_sqrt + eps;
        } else {
          denom = std::sqrt(v[i]) / bc2_sqrt + eps;
        }
        pd[i] = pd[i] + (neg_step_size * m[i]) / denom;
      }
    });
  });
}

}  // namespace

void AdamOptions::visit(OptionsVisitor& v) { visit_adam_options(*this, v, lr_); }
void AdamOptions::validate() const { validate_adam_options(*this, "Adam"); }
void AdamWOptions::visit(OptionsVisitor& v) { visit_adam_options(*this, v, lr_); }
void AdamWOptions::validate() const { validate_adam_options(*this, "AdamW"); }

Adam::Adam(std::vector<OptimizerParamGroup> param_groups, const AdamOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

void Adam::step_group(OptimizerParamGroup& group) {
  adam_step<AdamOptions>(group, /*decoupled=*/false, "Adam.step",
                         [this](const Tensor& p) -> AdamParamState& { return param_state<AdamParamState>(p); });
}

AdamW::AdamW(std::vector<OptimizerParamGroup> param_groups, const AdamWOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

void AdamW::step_group(OptimizerParamGroup& group) {
  adam_step<AdamWOptions>(group, /*decoupled=*/true, "AdamW.step",
                          [this](const Tensor& p) -> AdamParamState& { return param_state<AdamParamState>(p); });
}

}  // namespace graft::optim
