// Adagrad: see include/graft/optim/adagrad.h and Note [Optimizer update loops].
#include "graft/optim/adagrad.h"

#include "../core/dispatch.h"
#include "../core/format.h"
#include "update.h"

namespace graft::optim {

using graft::detail::shortest;

void AdagradOptions::visit(OptionsVisitor& v) {
  v("lr", lr_);
  v("lr_decay", lr_decay_);
  v("eps", eps_);
  v("weight_decay", weight_decay_);
  v("initial_accumulator_value", initial_accumulator_value_);
  v("maximize", maximize_);
}

void AdagradOptions::validate() const {
  GRAFT_CHECK(lr_ >= 0, "Adagrad", "a learning rate >= 0", "lr = " + shortest(lr_),
              "pass lr >= 0 in AdagradOptions, e.g. 0.01");
  GRAFT_CHECK(lr_decay_ >= 0, "Adagrad", "lr_decay >= 0", "lr_decay = " + shortest(lr_decay_),
              "pass lr_decay >= 0 in AdagradOptions (0 disables the decay)");
  GRAFT_CHECK(weight_decay_ >= 0, "Adagrad", "weight_decay >= 0", "weight_decay = " + shortest(weight_decay_),
              "pass weight_decay >= 0 in AdagradOptions (0 disables it)");
  GRAFT_CHECK(initial_accumulator_value_ >= 0, "Adagrad", "initial_accumulator_value >= 0",
              "initial_accumulator_value = " + shortest(initial_accumulator_value_),
              "pass initial_accumulator_value >= 0 in AdagradOptions (PyTorch's default is 0)");
  GRAFT_CHECK(eps_ >= 0, "Adagrad", "eps >= 0", "eps = " + shortest(eps_), "pass a small positive eps, e.g. 1e-10");
}

Adagrad::Adagrad(std::vector<OptimizerParamGroup> param_groups, const AdagradOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

void Adagrad::step_group(OptimizerParamGroup& group) {
  const auto& o = static_cast<const AdagradOptions&>(group.options());
  detail::for_each_param_with_grad(group, "Adagrad.step", [&](const Tensor& param, Tensor& p, const Tensor& g) {
    auto& st = param_state<AdagradParamState>(param);
    if (!st.sum().defined()) st.sum(detail::make_buffer(p, o.initial_accumulator_value()));
    st.step(st.step() + 1);
    const double step = static_cast<double>(st.step());
    const double clr = o.lr() / (1 + (step - 1) * o.lr_decay());
    if (!p.is_meta()) kernels::dispatch_floating(p.dtype(), "Adagrad.step", [&]<class T>() {
      T* pd = p.data_ptr<T>();
      const T* gd = g.data_ptr<T>();
      T* sum = detail::contiguous_buffer(st.sum()).template data_ptr<T>();
      const bool maximize = o.maximize();
      const bool decay = o.weight_decay() != 0;
      const T wd = static_cast<T>(o.weight_decay());
      const T eps = static_cast<T>(o.eps());
      const T neg_clr = static_cast<T>(-clr);
      const int64_t n = p.numel();
      for (int64_t i = 0; i < n; ++i) {
        T gi = maximize ? -gd[i] : gd[i];
        if (decay) gi = std::fma(wd, pd[i], gi);
        sum[i] = std::fma(gi, gi, sum[i]);
        const T std_ = std::sqrt(sum[i]) + eps;
        pd[i] = pd[i] + (neg_clr * gi) / std_;
      }
    });
  });
}

}  // namespace graft::optim
