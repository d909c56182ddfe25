// GradScaler (Note [Gradient scaling] in graft/amp/grad_scaler.h).
#include "graft/amp/grad_scaler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "../core/dispatch.h"
#include "../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"

namespace graft::amp {

namespace {

std::string num(double v) { return graft::detail::shortest(v); }

// The least scale (Note [Gradient scaling]): FLT_MIN (2^-126), the smallest normal float32. Backing off
// below it would reach subnormals and then 0, where no growth recovers (0 * 2 is 0) and 1/S is inf; at
// FLT_MIN, 1/S = 2^126 is still a finite float32, so unscale_ stays exact and growth can lift S again.
constexpr float kMinScale = FLT_MIN;

// A scale given by the user (init_scale, new_scale, a loaded "scale") as a float32 in [FLT_MIN, FLT_MAX].
bool valid_scale(double s) {
  const auto f = static_cast<float>(s);
  return std::isfinite(f) && f >= kMinScale;
}

void check_factors(double growth, double backoff, int64_t interval, const char* op) {
  GRAFT_CHECK(growth > 1.0, op, "growth_factor > 1", "growth_factor " + num(growth), "PyTorch's default is 2.0");
  GRAFT_CHECK(backoff > 0.0 && backoff < 1.0, op, "0 < backoff_factor < 1", "backoff_factor " + num(backoff),
              "PyTorch's default is 0.5");
  GRAFT_CHECK(interval > 0, op, "growth_interval > 0", "growth_interval " + std::to_string(interval),
              "PyTorch's default is 2000");
}

// g *= inv_scale in place (g contiguous or not); returns whether any result is inf or nan.
bool unscale_and_check(Tensor& g, float inv_scale) {
  if (!g.is_contiguous()) {
    g.mul_(static_cast<double>(inv_scale));
    bool bad = false;
    const Tensor c = g.contiguous();
    kernels::dispatch_floating(c.dtype(), "unscale_", [&]<class T>() {
      const T* p = c.data_ptr<T>();
      for (int64_t i = 0, n = c.numel(); i < n; ++i) bad = bad || !std::isfinite(p[i]);
    });
    return bad;
  }
  bool bad = false;
  kernels::dispatch_floating(g.dtype(), "unscale_", [&]<class T>() {
    T* p = g.data_ptr<T>();
    const T s = static_cast<T>(inv_scale);
    // v * s - v * s is 0 for finite values and nan for inf/nan: one vectorisable sum, no branches.
    T acc = 0;
    for (int64_t i = 0, n = g.numel(); i < n; ++i) {
      const T v = p[i] * s;
      p[i] = v;
      acc += v - v;
    }
    bad = !(acc == T(0));
  });
  g.impl().storage->bump_version("unscale_");
  return bad;
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options) : options_(options) {
  check_factors(options.growth_factor(), options.backoff_factor(), options.growth_interval(), "GradScaler");
  GRAFT_CHECK(valid_scale(options.init_scale()), "GradScaler",
              "a finite float32 init_scale of at least FLT_MIN (1.1754944e-38)",
              "init_scale " + num(options.init_scale()), "PyTorch's default is 65536 (2^16)");
  scale_ = static_cast<float>(options.init_scale());
}

Tensor GradScaler::scale(const Tensor& outputs) const {
  if (!options_.enabled()) return outputs;
  GRAFT_CHECK(outputs.defined() && outputs.is_floating_point(), "GradScaler::scale", "a floating-point loss tensor",
              outputs.defined() ? std::string("a ") + dtype_name(outputs.dtype()) + " tensor" : "an undefined tensor",
              "scale the loss tensor returned by the loss function (a floating-point tensor)");
  return outputs * scale_;
}

void GradScaler::unscale_(optim::Optimizer& opt) {
  if (!options_.enabled()) return;
  PerOptimizer& st = per_optimizer_[&opt];
  GRAFT_CHECK(st.stage != Stage::Unscaled, "GradScaler::unscale_", "one unscale_(optimizer) per update()",
              "a second unscale_() on this optimizer since the last update()",
              "unscale_() has already been called on this optimizer since the last update(); step() does not unscale again");
  GRAFT_CHECK(st.stage != Stage::Stepped, "GradScaler::unscale_", "unscale_() before step()",
              "unscale_() after step() since the last update()", "call update() to finish the iteration first");
  // 1/S in float64, rounded to float32 (S is a power of two in practice, so this is exact).
  const auto inv = static_cast<float>(1.0 / scale_);
  NoGradGuard no_grad;
  bool found = false;
  for (Tensor p : opt.parameters()) {  // a handle: mutable_grad() writes the parameter's .grad
    if (!p.grad().defined()) continue;
    Tensor& g = p.mutable_grad();
    GRAFT_CHECK(g.dtype() == kFloat32 || g.dtype() == kFloat64, "GradScaler::unscale_", "float32 or float64 gradients",
                std::string("a ") + dtype_name(g.dtype()) + " gradient",
                "keep the parameters (master weights) in float32 and let autocast lower the products");
    found = unscale_and_check(g, inv) || found;
  }
  st.found_inf = found;
  st.stage = Stage::Unscaled;
}

bool GradScaler::step(optim::Optimizer& opt) {
  if (!options_.enabled()) {
    opt.step();
    return true;
  }
  PerOptimizer& st = per_optimizer_[&opt];
  GRAFT_CHECK(st.stage != Stage::Stepped, "GradScaler::step", "one step(optimizer) per update()",
              "a second step() on this optimizer since the last update()", "call update() after each step()");
  if (st.stage == Stage::Ready) unscale_(opt);
  per_optimizer_[&opt].stage = Stage::Stepped;
  if (per_optimizer_[&opt].found_inf) return false;
  opt.step();
  return true;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!options_.enabled()) return;
  if (new_scale) {
    GRAFT_CHECK(valid_scale(*new_scale), "GradScaler::update",
                "a finite float32 new_scale of at least FLT_MIN (1.1754944e-38)", "new_scale " + num(*new_scale),
                "pass a new_scale of at least FLT_MIN, or call update() without one");
    scale_ = static_cast<float>(*new_scale);
  } else {
    bool any_recorded = false, found_inf = false;
    for (const auto& [opt, st] : per_optimizer_) {
      if (st.stage == Stage::Ready) continue;
      any_recorded = true;
      found_inf = found_inf || st.found_inf;
    }
    GRAFT_CHECK(any_recorded, "GradScaler::update", "an unscale_() or step() since the last update()",
                "no inf checks were recorded", "call scaler.step(optimizer) before scaler.update()");
    if (found_inf) {
      // Never below kMinScale: repeated infs would otherwise take S to 0, for good.
      scale_ = std::max(static_cast<float>(scale_ * options_.backoff_factor()), kMinScale);
      growth_tracker_ = 0;
    } else if (++growth_tracker_ == options_.growth_interval()) {
      const auto grown = static_cast<float>(scale_ * options_.growth_factor());
      if (std::isfinite(grown)) scale_ = grown;
      growth_tracker_ = 0;
    }
  }
  per_optimizer_.clear();
}

void GradScaler::set_growth_factor(double v) {
  check_factors(v, options_.backoff_factor(), options_.growth_interval(), "GradScaler::set_growth_factor");
  options_.growth_factor(v);
}
void GradScaler::set_backoff_factor(double v) {
  check_factors(options_.growth_factor(), v, options_.growth_interval(), "GradScaler::set_backoff_factor");
  options_.backoff_factor(v);
}
void GradScaler::set_growth_interval(int64_t v) {
  check_factors(options_.growth_factor(), options_.backoff_factor(), v, "GradScaler::set_growth_interval");
  options_.growth_interval(v);
}

OrderedDict<std::string, Tensor> GradScaler::state_dict() const {
  OrderedDict<std::string, Tensor> d;
  if (!options_.enabled()) return d;
  d.insert("scale", full({}, scale_, kFloat64));
  d.insert("growth_factor", full({}, options_.growth_factor(), kFloat64));
  d.insert("backoff_factor", full({}, options_.backoff_factor(), kFloat64));
  d.insert("growth_interval", full({}, options_.growth_interval(), kInt64));
  d.insert("_growth_tracker", full({}, growth_tracker_, kInt64));
  return d;
}

void GradScaler::load_state_dict(const OrderedDict<std::string, Tensor>& state) {
  const char* op = "GradScaler::load_state_dict";
  if (!options_.enabled()) return;
  GRAFT_CHECK(!state.is_empty(), op, "a state dict from an enabled GradScaler", "an empty state dict",
              "the state dict was saved from a disabled scaler");
  auto get = [&](const char* key, bool integral) {
    GRAFT_CHECK(state.contains(key), op, std::string("the key \"") + key + "\"", "a state dict without it",
                "save it with GradScaler::state_dict()");
    const Tensor& t = state[key];
    GRAFT_CHECK(t.defined() && t.numel() == 1 && (integral ? t.dtype() == kInt64 : t.is_floating_point()), op,
                std::string("\"") + key + "\" as a one-element " + (integral ? "int64" : "floating-point") + " tensor",
                t.defined() ? std::string("a ") + dtype_name(t.dtype()) + " tensor of shape " + shape_str(t.sizes())
                            : std::string("an undefined tensor"),
                "load a state dict saved by GradScaler::state_dict()");
    return t.item<double>();
  };
  const double s = get("scale", false), gf = get("growth_factor", false), bf = get("backoff_factor", false);
  const auto gi = static_cast<int64_t>(get("growth_interval", true));
  const auto tracker = static_cast<int64_t>(get("_growth_tracker", true));
  check_factors(gf, bf, gi, op);
  GRAFT_CHECK(valid_scale(s), op, "a finite float32 scale of at least FLT_MIN (1.1754944e-38)", "scale " + num(s),
              "load a state dict saved by GradScaler::state_dict()");
  GRAFT_CHECK(tracker >= 0 && tracker < gi, op, "0 <= _growth_tracker < growth_interval",
              "_growth_tracker " + std::to_string(tracker) + " with growth_interval " + std::to_string(gi),
              "load a state dict saved by GradScaler::state_dict()");
  scale_ = static_cast<float>(s);
  options_.growth_factor(gf);
  options_.backoff_factor(bf);
  options_.growth_interval(gi);
  growth_tracker_ = tracker;
}

}  // namespace graft::amp
