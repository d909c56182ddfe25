// Adam and AdamW: see include/graft/optim/adam.h, adamw.h and Note [Optimizer update loops].
#include "graft/optim/adam.h"

#include <algorithm>
#include <type_traits>

#include "graft/optim/adamw.h"
#include "graft/runtime/parallel.h"
#include "../core/dispatch.h"
#include "../core/format.h"
#include "../kernels/vector_clones.h"
#include "update.h"

namespace graft::optim {

using graft::detail::shortest;

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
  GRAFT_CHECK(o.lr() >= 0, op, "a learning rate >= 0", "lr = " + shortest(o.lr()),
              "pass lr >= 0 in the options, e.g. 1e-3");
  GRAFT_CHECK(o.eps() >= 0, op, "eps >= 0", "eps = " + shortest(o.eps()), "pass a small positive eps, e.g. 1e-8");
  const auto [b1, b2] = o.betas();
  GRAFT_CHECK(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1, op, "betas in [0, 1)",
              "betas = (" + shortest(b1) + ", " + shortest(b2) + ")",
              "beta1 decays the gradient average and beta2 the squared-gradient average, e.g. (0.9, 0.999)");
  GRAFT_CHECK(o.weight_decay() >= 0, op, "weight_decay >= 0", "weight_decay = " + shortest(o.weight_decay()),
              "pass weight_decay >= 0 in the options (0 disables it)");
}

// One Adam/AdamW update over n contiguous elements (Note [Optimizer update loops] for the rounding).
template <class T>
struct AdamUpdate {
  T* p;
  const T* g;
  T* m;     // exp_avg
  T* v;     // exp_avg_sq
  T* vmax;  // max_exp_avg_sq (amsgrad), or null
  bool maximize, decoupled, coupled_decay;
  T wd, decay_factor, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, neg_step_size;
};

// The general loop: every option, tested per element.
template <class T>
[[gnu::always_inline]] inline void adam_general(const AdamUpdate<T>& u, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    T gi = u.maximize ? -u.g[i] : u.g[i];
    if (u.decoupled) u.p[i] = u.p[i] * u.decay_factor;
    if (u.coupled_decay) gi = std::fma(u.wd, u.p[i], gi);
    u.m[i] = std::fma(u.one_minus_b1, gi, u.m[i] * u.b1);
    u.v[i] = std::fma(u.one_minus_b2 * gi, gi, u.v[i] * u.b2);
    T denom;
    if (u.vmax) {
      u.vmax[i] = detail::nan_maximum(u.vmax[i], u.v[i]);
      denom = std::sqrt(u.vmax[i]) / u.bc2_sqrt + u.eps;
    } else {
      denom = std::sqrt(u.v[i]) / u.bc2_sqrt + u.eps;
    }
    u.p[i] = u.p[i] + (u.neg_step_size * u.m[i]) / denom;
  }
}

// The common cases (no amsgrad, no maximize; AdamW's decoupled decay, or Adam's decay in the
// gradient, or none), without per-element flag tests so that they vectorise: the same operations
// in the same order as adam_general, so the same bits.
template <class T, bool Decoupled, bool Coupled>
[[gnu::always_inline]] inline void adam_plain(const AdamUpdate<T>& u, int64_t begin, int64_t end) {
  T* __restrict p = u.p;
  T* __restrict m = u.m;
  T* __restrict v = u.v;
  const T* __restrict g = u.g;
  // (scalars in locals: the stores through p, m and v could otherwise alias them)
  const T decay_factor = u.decay_factor, wd = u.wd, b1 = u.b1, one_minus_b1 = u.one_minus_b1, b2 = u.b2,
          one_minus_b2 = u.one_minus_b2, bc2_sqrt = u.bc2_sqrt, eps = u.eps, neg_step_size = u.neg_step_size;
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    T gi = g[i];
    T pi = p[i];
    if constexpr (Decoupled) pi = pi * decay_factor;
    if constexpr (Coupled) gi = std::fma(wd, pi, gi);
    const T mi = std::fma(one_minus_b1, gi, m[i] * b1);
    const T vi = std::fma(one_minus_b2 * gi, gi, v[i] * b2);
    m[i] = mi;
    v[i] = vi;
    const T denom = std::sqrt(vi) / bc2_sqrt + eps;
    p[i] = pi + (neg_step_size * mi) / denom;
  }
}

template <class T>
[[gnu::always_inline]] inline void adam_range(const AdamUpdate<T>& u, int64_t begin, int64_t end) {
  if (u.vmax || u.maximize) return adam_general(u, begin, end);
  if (u.decoupled) return adam_plain<T, true, false>(u, begin, end);
  if (u.coupled_decay) return adam_plain<T, false, true>(u, begin, end);
  adam_plain<T, false, false>(u, begin, end);
}

// One body, compiled per processor (vector_clones.h: the baseline, x86-64-v3 with AVX2 + FMA and
// x86-64-v4 with AVX-512): std::fma becomes one instruction instead of a libm call per element, and
// the divisions and square roots run 8 or 16 lanes wide. Every variant rounds the same (fma rounds
// once either way; nothing else is contracted), so the result does not depend on the processor.
GRAFT_VEC_CLONES void adam_block(const AdamUpdate<float>& u, int64_t b, int64_t e) { adam_range(u, b, e); }
GRAFT_VEC_CLONES void adam_block(const AdamUpdate<double>& u, int64_t b, int64_t e) { adam_range(u, b, e); }

// The update of n elements, split over graft's threads (elementwise, so the split does not change
// any bit).
template <class T>
void adam_update(const AdamUpdate<T>& u, int64_t n) {
  // About 2 ns per element on one core: chunks of 64K elements are ~100 us, far above a wake-up.
  parallel_for(0, n, int64_t{1} << 16, [&](int64_t b, int64_t e) { adam_block(u, b, e); });
}

// The update with compact moments (Note [Compact optimizer state]): block by block, the moments are
// read into float32, updated with the parameter by adam_block (the full-precision loop, so the same
// float32 arithmetic) and written back compactly. Blocks are independent: the same bits at any
// thread count.
void adam_update_compact(const AdamUpdate<float>& u, int64_t n, const detail::CompactState& m,
                         const detail::CompactState& v, const detail::CompactState* vmax) {
  constexpr int64_t kBlock = kernels::kQuantBlock;
  parallel_for(0, (n + kBlock - 1) / kBlock, 32, [&](int64_t b, int64_t e) {
    float tm[kBlock], tv[kBlock], tx[kBlock];
    for (int64_t k = b; k < e; ++k) {
      const int64_t s = k * kBlock, len = std::min(kBlock, n - s);
      m.load(k, s, len, tm);
      v.load(k, s, len, tv);
      if (vmax) vmax->load(k, s, len, tx);
      AdamUpdate<float> w = u;
      w.p = u.p + s;
      w.g = u.g + s;
      w.m = tm;
      w.v = tv;
      w.vmax = vmax ? tx : nullptr;
      adam_block(w, 0, len);
      m.store(k, s, len, tm);
      v.store(k, s, len, tv);
      if (vmax) vmax->store(k, s, len, tx);
    }
  });
}

// One Adam/AdamW update of every parameter of the group with a gradient. `decoupled`: AdamW's
// p *= 1 - lr * weight_decay instead of weight decay in the gradient.
template <class O>
void adam_step(OptimizerParamGroup& group, bool decoupled, const char* op,
               const std::function<AdamParamState&(const Tensor&)>& state_of) {
  const auto& o = static_cast<const O&>(group.options());
  detail::for_each_param_with_grad(group, op, [&](const Tensor& param, Tensor& p, const Tensor& g) {
    AdamParamState& st = state_of(param);
    // The moments in the group's precision (made on the first step, converted when it changed);
    // the first moment on the signed 8-bit map, the second moments on the unsigned one.
    const StatePrecision form = detail::effective_precision(o.state_precision(), p);
    detail::prepare_state(st.exp_avg(), st.exp_avg_absmax(), p, form, /*is_signed=*/true, op);
    detail::prepare_state(st.exp_avg_sq(), st.exp_avg_sq_absmax(), p, form, /*is_signed=*/false, op);
    if (o.amsgrad()) detail::prepare_state(st.max_exp_avg_sq(), st.max_exp_avg_sq_absmax(), p, form, false, op);
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
    if (!p.is_meta()) kernels::dispatch_floating(p.dtype(), op, [&]<class T>() {
      AdamUpdate<T> u;
      u.p = p.data_ptr<T>();
      u.g = g.data_ptr<T>();
      const bool compact = form != StatePrecision::Full;  // float32 parameters only
      u.m = compact ? nullptr : st.exp_avg().template data_ptr<T>();
      u.v = compact ? nullptr : st.exp_avg_sq().template data_ptr<T>();
      u.vmax = o.amsgrad() && !compact ? st.max_exp_avg_sq().template data_ptr<T>() : nullptr;
      u.maximize = o.maximize();
      u.decoupled = decoupled;
      u.coupled_decay = !decoupled && o.weight_decay() != 0;
      u.wd = static_cast<T>(o.weight_decay());
      u.decay_factor = static_cast<T>(1 - lr * o.weight_decay());
      u.b1 = static_cast<T>(beta1);
      u.one_minus_b1 = static_cast<T>(1 - beta1);
      u.b2 = static_cast<T>(beta2);
      u.one_minus_b2 = static_cast<T>(1 - beta2);
      u.bc2_sqrt = static_cast<T>(bias_correction2_sqrt);
      u.eps = static_cast<T>(o.eps());
      u.neg_step_size = static_cast<T>(-step_size);
      if constexpr (std::is_same_v<T, float>) {
        if (compact) {
          const detail::CompactState m(st.exp_avg(), st.exp_avg_absmax(), true);
          const detail::CompactState v(st.exp_avg_sq(), st.exp_avg_sq_absmax(), false);
          const detail::CompactState vmax =
              o.amsgrad() ? detail::CompactState(st.max_exp_avg_sq(), st.max_exp_avg_sq_absmax(), false)
                          : detail::CompactState();
          return adam_update_compact(u, p.numel(), m, v, o.amsgrad() ? &vmax : nullptr);
        }
      }
      adam_update(u, p.numel());
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
