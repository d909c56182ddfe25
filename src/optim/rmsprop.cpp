// RMSprop: see include/graft/optim/rmsprop.h and Note [Optimizer update loops].
#include "graft/optim/rmsprop.h"

#include "../core/dispatch.h"
#include "../core/format.h"
#include "update.h"

namespace graft::optim {

using graft::detail::shortest;

void RMSpropOptions::visit(OptionsVisitor& v) {
  v("lr", lr_);
  v("momentum", momentum_);
  v("alpha", alpha_);
  v("eps", eps_);
  v("centered", centered_);
  v("weight_decay", weight_decay_);
  v("maximize", maximize_);
}

void RMSpropOptions::validate() const {
  GRAFT_CHECK(lr_ >= 0, "RMSprop", "a learning rate >= 0", "lr = " + shortest(lr_),
              "pass lr >= 0 in RMSpropOptions, e.g. 0.01");
  GRAFT_CHECK(eps_ >= 0, "RMSprop", "eps >= 0", "eps = " + shortest(eps_), "pass a small positive eps, e.g. 1e-8");
  GRAFT_CHECK(momentum_ >= 0, "RMSprop", "momentum >= 0", "momentum = " + shortest(momentum_),
              "pass momentum >= 0 in RMSpropOptions (0 disables it)");
  GRAFT_CHECK(weight_decay_ >= 0, "RMSprop", "weight_decay >= 0", "weight_decay = " + shortest(weight_decay_),
              "pass weight_decay >= 0 in RMSpropOptions (0 disables it)");
  GRAFT_CHECK(alpha_ >= 0, "RMSprop", "alpha >= 0", "alpha = " + shortest(alpha_),
              "alpha is the smoothing constant of the squared-gradient average, e.g. 0.99");
}

RMSprop::RMSprop(std::vector<OptimizerParamGroup> param_groups, const RMSpropOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

void RMSprop::step_group(OptimizerParamGroup& group) {
  const auto& o = static_cast<const RMSpropOptions&>(group.options());
  detail::for_each_param_with_grad(group, "RMSprop.step", [&](const Tensor& param, Tensor& p, const Tensor& g) {
    auto& st = param_state<RMSpropParamState>(param);
    const bool use_momentum = o.momentum() > 0;
    if (!st.square_avg().defined()) st.square_avg(detail::make_buffer(p));
    if (use_momentum && !st.momentum_buffer().defined()) st.momentum_buffer(detail::make_buffer(p));
    if (o.centered() && !st.grad_avg().defined()) st.grad_avg(detail::make_buffer(p));
    st.step(st.step() + 1);
    if (!p.is_meta()) kernels::dispatch_floating(p.dtype(), "RMSprop.step", [&]<class T>() {
      T* pd = p.data_ptr<T>();
      const T* gd = g.data_ptr<T>();
      T* sq = detail::contiguous_buffer(st.square_avg()).template data_ptr<T>();
      T* buf = use_momentum ? detail::contiguous_buffer(st.momentum_buffer()).template data_ptr<T>() : nullptr;
      T* ga = o.centered() ? detail::contiguous_buffer(st.grad_avg()).template data_ptr<T>() : nullptr;
      const bool maximize = o.maximize();
      const bool decay = o.weight_decay() != 0;
      const T wd = static_cast<T>(o.weight_decay());
      const T alpha = static_cast<T>(o.alpha()), one_minus_alpha = static_cast<T>(1 - o.alpha());
      const T eps = static_cast<T>(o.eps());
      const T mom = static_cast<T>(o.momentum());
      const T neg_lr = static_cast<T>(-o.lr());
      const int64_t n = p.numel();
      for (int64_t i = 0; i < n; ++i) {
        T gi = maximize ? -gd[i] : gd[i];
        if (decay) gi = std::fma(wd, pd[i], gi);
        sq[i] = std::fma(one_minus_alpha * gi, gi, sq[i] * alpha);
        T avg;
        if (ga) {
          ga[i] = std::fma(one_minus_alpha, gi, ga[i] * alpha);
          avg = std::sqrt(std::fma(-ga[i], ga[i], sq[i]));  // square_avg.addcmul(grad_avg, grad_avg, value=-1)
        } else {
          avg = std::sqrt(sq[i]);
        }
        avg = avg + eps;
        if (buf) {
          buf[i] = buf[i] * mom + gi / avg;  // buf.mul_(momentum).addcdiv_(grad, avg)
          pd[i] = std::fma(neg_lr, buf[i], pd[i]);
        } else {
          pd[i] = pd[i] + (neg_lr * gi) / avg;
        }
      }
    });
  });
}

}  // namespace graft::optim
