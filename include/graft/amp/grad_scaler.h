// graft::amp::GradScaler: dynamic loss scaling for float16 training, with PyTorch's semantics
// (torch.amp.GradScaler) and defaults.
//
//   graft::amp::GradScaler scaler;                    // init_scale 65536, growth x2 every 2000 steps
//   for (...) {
//     opt.zero_grad();
//     graft::Tensor loss;
//     {
//       graft::AutocastGuard autocast(graft::kHalf);
//       loss = F::cross_entropy(model(x), y);
//     }
//     scaler.scale(loss).backward();                   // gradients are scale times too large
//     scaler.unscale_(opt);                            // optional: only to look at / clip them
//     graft::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//     scaler.step(opt);                                // skipped when a gradient is inf or nan
//     scaler.update();                                 // back off or grow the scale
//   }
//
// Note [Gradient scaling]
// Gradients that pass through float16 tensors underflow below 6e-8 (Note [Autocast]). Multiplying
// the loss by S multiplies every gradient by S, lifting small ones into float16's range; unscale_
// multiplies the (float32) parameter gradients by 1/S (computed in float64, rounded to float32, as
// PyTorch does) and records whether any of them is inf or nan, which happens when S was too large.
//   step(opt):  unscales first if unscale_(opt) was not called since the last update(); then runs
//               opt.step() only when no inf/nan was found (the parameters stay untouched otherwise).
//   update():   inf/nan found by any optimiser since the last update:  S *= backoff_factor (0.5), and
//               the count of clean steps restarts; otherwise the count grows, and when it reaches
//               growth_interval (2000), S *= growth_factor (2) and the count restarts.
// So S settles just below the largest value that does not overflow, probing upwards now and then.
// Clipping must see true gradients: call unscale_(opt) before clip_grad_norm_, then step(opt),
// which will not unscale again. unscale_ twice for one optimiser before update() throws, as does
// step() twice. bfloat16 has float32's range and does not need a scaler; it works with one all the
// same. enabled = false turns every method into a pass-through (scale returns the loss unchanged,
// step calls opt.step()), so one training loop serves both precisions.
// The scale is a float32 value (PyTorch keeps a float32 tensor): growth stops where S * growth_factor
// would not be finite, and back-off stops at FLT_MIN (2^-126, the smallest normal float32), where 1/S
// is still finite: without the bound, repeated infs take S through subnormals to 0, and 0 never grows
// (PyTorch's scale can underflow so). init_scale, update(new_scale) and a loaded scale must lie in
// [FLT_MIN, FLT_MAX] as float32 too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "graft/core/ordered_dict.h"
#include "graft/core/tensor.h"
#include "graft/optim/optimizer.h"

namespace graft::amp {

struct GradScalerOptions {
  GRAFT_OPTIM_ARG(double, init_scale) = 65536.0;  // 2^16
  GRAFT_OPTIM_ARG(double, growth_factor) = 2.0;
  GRAFT_OPTIM_ARG(double, backoff_factor) = 0.5;
  GRAFT_OPTIM_ARG(int64_t, growth_interval) = 2000;
  GRAFT_OPTIM_ARG(bool, enabled) = true;
};

class GradScaler {
 public:
  explicit GradScaler(const GradScalerOptions& options = {});

  // outputs * scale (recorded by autograd); outputs itself when disabled.
  Tensor scale(const Tensor& outputs) const;
  // Divides the gradients of opt's parameters by the scale, in place, and records inf/nan. Once per
  // optimiser between update() calls; not after step().
  void unscale_(optim::Optimizer& opt);
  // opt.step() unless an inf/nan gradient was found (unscaling first when not yet done). Returns
  // whether the optimiser stepped. (PyTorch returns the optimiser's return value, None when skipped.)
  bool step(optim::Optimizer& opt);
  // Adjusts the scale for the next iteration (Note [Gradient scaling]), or sets it to new_scale.
  void update(std::optional<double> new_scale = std::nullopt);

  double get_scale() const { return options_.enabled() ? scale_ : 1.0; }  // 1.0 when disabled, as PyTorch
  double get_growth_factor() const { return options_.growth_factor(); }
  void set_growth_factor(double v);
  double get_backoff_factor() const { return options_.backoff_factor(); }
  void set_backoff_factor(double v);
  int64_t get_growth_interval() const { return options_.growth_interval(); }
  void set_growth_interval(int64_t v);
  bool is_enabled() const { return options_.enabled(); }
  // Clean steps since the last back-off or growth.
  int64_t growth_tracker() const { return growth_tracker_; }

  // {"scale", "growth_factor", "backoff_factor"} as 0-dim float64, {"growth_interval",
  // "_growth_tracker"} as 0-dim int64 (PyTorch's keys), flat like the optimisers' state dicts; empty
  // when disabled.
  OrderedDict<std::string, Tensor> state_dict() const;
  // Checks every key and value before changing anything; an empty dict throws on an enabled scaler.
  void load_state_dict(const OrderedDict<std::string, Tensor>& state);

 private:
  enum class Stage : uint8_t { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool found_inf = false;
  };

  GradScalerOptions options_;
  double scale_;  // always a float32 value
  int64_t growth_tracker_ = 0;
  std::unordered_map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace graft::amp
