// SGD: see include/graft/optim/sgd.h and Note [Optimizer update loops].
#include "graft/optim/sgd.h"

#include "update.h"

namespace graft::optim {

using detail::format_double;

void SGDOptions::visit(OptionsVisitor& v) {
  v("lr", lr_);
  v("momentum", momentum_);
  v("dampening", dampening_);
  v("weight_decay", weight_decay_);
  v("nesterov", nesterov_);
  v("maximize", maximize_);
}

void SGDOptions::validate() const {
  GRAFT_CHECK(lr_ >= 0, "SGD", "a learning rate >= 0", "lr = " + format_double(lr_), "");
  GRAFT_CHECK(momentum_ >= 0, "SGD", "momentum >= 0", "momentum = " + format_double(momentum_), "");
  GRAFT_CHECK(weight_decay_ >= 0, "SGD", "weight_decay >= 0", "weight_decay = " + format_double(weight_decay_), "");
  GRAFT_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0), "SGD",
              "momentum > 0 and dampening = 0 for Nesterov momentum",
              "momentum = " + format_double(momentum_) + ", dampening = " + format_double(dampening_),
              "Nesterov momentum requires a momentum and zero dampening");
}

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, const SGDOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

void SGD::step_group(OptimizerParamGroup& group) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
  detail::for_each_param_with_grad(group, "SGD.step", [&](const Tensor& param, Tensor& p, const Tensor& g) {
    auto& st = param_state<SGDParamState>(param);
    const bool use_momentum = o.momentum() != 0;
    const bool first = !st.momentum_buffer().defined();
    if (use_momentum && first) st.momentum_buffer(detail::make_buffer(p));
    detail::dispatch_floating(p.dtype(), "SGD.step", [&]<class T>() {
      T* pd = p.data_ptr<T>();
      const T* gd = g.data_ptr<T>();
      T* buf = use_momentum ? detail::contiguous_buffer(st.momentum_buffer()).template data_ptr<T>() : nullptr;
      const bool maximize = o.maximize(), nesterov = o.nesterov();
      const bool decay = o.weight_decay() != 0;
      const T wd = static_cast<T>(o.weight_decay());
      const T mom = static_cast<T>(o.momentum());
      const T one_minus_damp = static_cast<T>(1 - o.dampening());
      const T neg_lr = static_cast<T>(-o.lr());
      const int64_t n = p.numel();
      for (int64_t i = 0; i < n; ++i) {
        T d = maximize ? -gd[i] : gd[i];
        if (decay) d = std::fma(wd, pd[i], d);
        if (use_momentum) {
          buf[i] = first ? d : std::fma(one_minus_damp, d, buf[i] * mom);
          d = nesterov ? std::fma(mom, buf[i], d) : buf[i];
        }
        pd[i] = std::fma(neg_lr, d, pd[i]);
      }
    });
  });
}

}  // namespace graft::optim
