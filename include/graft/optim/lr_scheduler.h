// Learning-rate schedulers with PyTorch 1.13's semantics and rounding:
//
//   graft::optim::SGD opt(params, graft::optim::SGDOptions(0.1).momentum(0.9));
//   graft::optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(); }
//
// Constructing a scheduler performs PyTorch's initial step (last_epoch 0: LinearLR multiplies the
// lr by start_factor at once, OneCycleLR sets it to max_lr / div_factor). Each step() advances
// last_epoch and writes the new lr into every param group's options. The schedulers use the same
// recursive ("chainable") forms as PyTorch, lr_new = f(lr_current), not closed forms: the two
// differ in rounding, and the chainable form composes with other schedulers and manual changes.
//
// The first scheduler attached records each group's starting lr as its initial_lr; later
// schedulers start from that value (PyTorch's group["initial_lr"]).
//
// Resuming: construct the optimiser and the scheduler as before, then load the optimiser's state
// dict (it restores the lrs) and the scheduler's (it restores last_epoch and the scheduler's
// counters). Both are flat OrderedDict<std::string, Tensor>s, like the optimiser's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graft/optim/optimizer.h"

namespace graft::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one epoch (or iteration) and sets every group's lr.
  void step();
  // The lr of each group after the last step().
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  // 0 after construction, +1 per step().
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() { return optimizer_; }

  // "last_epoch" and "step_count" (0-dim int64), "base_lrs" and "last_lr" (float64 [groups]).
  OrderedDict<std::string, Tensor> state_dict() const;
  void load_state_dict(const OrderedDict<std::string, Tensor>& state_dict);

 protected:
  // The lrs for last_epoch(), from the groups' current lrs (chainable) or base_lrs (closed form).
  virtual std::vector<double> get_lrs() = 0;
  // Called at the end of every derived constructor: PyTorch's initial step to last_epoch 0.
  void initial_step() { step(); }
  std::vector<double> current_lrs() const;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
};

// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lrs() override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr *= gamma at each milestone (a milestone listed k times multiplies by gamma^k).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lrs() override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> get_lrs() override;

 private:
  double gamma_;
};

// Cosine from the base lr down to eta_min over T_max epochs, then back up (period 2 * T_max), in
// PyTorch's recursive form.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lrs() override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// The lr factor goes linearly from start_factor to end_factor over total_iters epochs.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lrs() override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// lr = factor * base lr for the first total_iters epochs, then the base lr.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lrs() override;

 private:
  double factor_;
  int64_t total_iters_;
};

// lr = base lr * lr_lambda(epoch), one lambda for all groups or one per group.
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& optimizer, Lambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

 protected:
  std::vector<double> get_lrs() override;

 private:
  std::vector<Lambda> lambdas_;
};

enum class AnnealStrategy { cos, linear };

struct OneCycleLROptions {
  // One max_lr for every group, or one per group.
  OneCycleLROptions(double max_lr, int64_t total_steps) : max_lrs_({max_lr}), total_steps_(total_steps) {}
  OneCycleLROptions(std::vector<double> max_lrs, int64_t total_steps)
      : max_lrs_(std::move(max_lrs)), total_steps_(total_steps) {}
  GRAFT_OPTIM_ARG(std::vector<double>, max_lrs);
  GRAFT_OPTIM_ARG(int64_t, total_steps);
  GRAFT_OPTIM_ARG(double, pct_start) = 0.3;
  GRAFT_OPTIM_ARG(AnnealStrategy, anneal_strategy) = AnnealStrategy::cos;
  // Cycles the optimiser's "momentum" (SGD, RMSprop) or beta1 (Adam, AdamW) inversely to the lr.
  GRAFT_OPTIM_ARG(bool, cycle_momentum) = true;
  GRAFT_OPTIM_ARG(double, base_momentum) = 0.85;
  GRAFT_OPTIM_ARG(double, max_momentum) = 0.95;
  GRAFT_OPTIM_ARG(double, div_factor) = 25.0;         // initial lr = max_lr / div_factor
  GRAFT_OPTIM_ARG(double, final_div_factor) = 1e4;    // min lr = initial lr / final_div_factor
  GRAFT_OPTIM_ARG(bool, three_phase) = false;
};

// The 1cycle policy: warm up from max_lr / div_factor to max_lr over pct_start of total_steps,
// then anneal to the minimum (three_phase: back to the initial lr first, then to the minimum).
// Stepping past total_steps is an error.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start = 0.3,
             AnnealStrategy anneal_strategy = AnnealStrategy::cos, double div_factor = 25.0,
             double final_div_factor = 1e4, bool three_phase = false);

 protected:
  std::vector<double> get_lrs() override;

 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_momentum, end_momentum;  // 0 initial, 1 max, 2 min (lr); 0 max, 1 base (momentum)
  };
  double anneal(double start, double end, double pct) const;

  OneCycleLROptions options_;
  std::vector<Phase> phases_;
  std::vector<double> initial_lrs_, max_lrs_, min_lrs_, max_momentums_, base_momentums_;
};

// Lowers the lr by `factor` when a metric has stopped improving for `patience` epochs. Not an
// LRScheduler: step() takes the metric.
class ReduceLROnPlateau {
 public:
  enum SchedulerMode { min, max };
  enum ThresholdMode { rel, abs };

  // min_lr: one value for all groups, or one per group.
  ReduceLROnPlateau(Optimizer& optimizer, SchedulerMode mode = min, double factor = 0.1, int64_t patience = 10,
                    double threshold = 1e-4, ThresholdMode threshold_mode = rel, int64_t cooldown = 0,
                    std::vector<double> min_lr = {0.0}, double eps = 1e-8);

  void step(double metric);
  // The groups' lrs after the last step() (their current lrs before the first).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }

  // "best" (0-dim float64), "num_bad_epochs", "cooldown_counter", "last_epoch" (0-dim int64) and
  // "last_lr" (float64 [groups]); the configuration (mode, factor, ...) is not saved.
  OrderedDict<std::string, Tensor> state_dict() const;
  void load_state_dict(const OrderedDict<std::string, Tensor>& state_dict);

 private:
  bool is_better(double a, double best) const;

  Optimizer& optimizer_;
  SchedulerMode mode_;
  double factor_;
  int64_t patience_;
  double threshold_;
  ThresholdMode threshold_mode_;
  int64_t cooldown_;
  std::vector<double> min_lrs_;
  double eps_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

using ReduceLROnPlateauScheduler = ReduceLROnPlateau;  // LibTorch's name

}  // namespace graft::optim
