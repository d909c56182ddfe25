// LR schedulers: the formulas of PyTorch 1.13's torch/optim/lr_scheduler.py, written in the same
// order of operations so that the doubles round identically. (graft builds for x86-64 without FMA
// contraction; a target that contracts a * b + c could differ in the last bit.)
#include "graft/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "../core/format.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"

namespace graft::optim {

using graft::detail::shortest;

namespace {

constexpr double kPi = std::numbers::pi;

// Finds (and optionally sets) an optimiser's "momentum" or beta1 of "betas" through its options'
// visitor, as OneCycleLR's cycle_momentum does with PyTorch's group dicts.
class MomentumAccess : public OptionsVisitor {
 public:
  explicit MomentumAccess(std::optional<double> set_to = std::nullopt) : set_to_(set_to) {}
  bool has_momentum = false, has_betas = false;
  void operator()(const char* name, double& v) override {
    if (std::string(name) == "momentum") {
      has_momentum = true;
      if (set_to_ && !has_betas) v = *set_to_;
    }
  }
  void operator()(const char*, bool&) override {}
  void operator()(const char* name, std::tuple<double, double>& v) override {
    if (std::string(name) == "betas") {
      has_betas = true;
      if (set_to_) std::get<0>(v) = *set_to_;
    }
  }

 private:
  std::optional<double> set_to_;
};

using StateDict = OrderedDict<std::string, Tensor>;

const Tensor& entry(const StateDict& sd, const std::string& key, const char* op) {
  const Tensor* t = sd.find(key);
  GRAFT_CHECK(t != nullptr && t->defined(), op, "the key '" + key + "'", "a state dict without it",
              "pass the dict returned by the same kind of scheduler's state_dict()");
  return *t;
}

// A count: last_epoch starts at -1 before the initial step (PyTorch's convention), the others at 0;
// a value below `min_value` is a damaged state, not a schedule.
int64_t int_entry(const StateDict& sd, const std::string& key, const char* op, int64_t min_value = 0) {
  const Tensor& t = entry(sd, key, op);
  GRAFT_CHECK(t.numel() == 1 && t.dtype() == DType::Int64, op, key + " as a 0-dim int64 tensor",
              std::string("a ") + dtype_name(t.dtype()) + " tensor of shape " + shape_str(t.sizes()),
              "load a state dict saved by the same scheduler");
  const int64_t v = t.item<int64_t>();
  GRAFT_CHECK(v >= min_value, op, key + " >= " + std::to_string(min_value), std::to_string(v),
              "the state dict is damaged; load one saved by the same scheduler");
  return v;
}

double double_entry(const StateDict& sd, const std::string& key, const char* op) {
  const Tensor& t = entry(sd, key, op);
  GRAFT_CHECK(t.numel() == 1 && t.is_floating_point(), op, key + " as a 0-dim floating-point tensor",
              std::string("a ") + dtype_name(t.dtype()) + " tensor of shape " + shape_str(t.sizes()),
              "load a state dict saved by the same scheduler");
  return t.to(kFloat64).item<double>();
}

std::vector<double> list_entry(const StateDict& sd, const std::string& key, size_t n, const char* op) {
  const Tensor& t = entry(sd, key, op);
  GRAFT_CHECK(t.dim() == 1 && t.numel() == static_cast<int64_t>(n) && t.is_floating_point(), op,
              key + " with one value per param group (" + std::to_string(n) + ")",
              std::string("a ") + dtype_name(t.dtype()) + " tensor of shape " + shape_str(t.sizes()),
              "the state dict belongs to an optimiser with a different number of param groups");
  Tensor d = t.to(kFloat64).contiguous();
  const double* p = d.data_ptr<double>();
  std::vector<double> values(p, p + n);
  for (double v : values)  // learning rates (and momenta): finite and not negative
    GRAFT_CHECK(std::isfinite(v) && v >= 0, op, key + " of finite values >= 0", std::to_string(v),
                "the state dict is damaged; load one saved by the same scheduler");
  return values;
}

void check_keys(const StateDict& sd, const std::vector<std::string>& known, const char* op) {
  for (const auto& item : sd)
    GRAFT_CHECK(std::find(known.begin(), known.end(), item.key()) != known.end(), op, "a scheduler state dict",
                "the unexpected key '" + item.key() + "'", "load a state dict saved by the same scheduler type");
}

}  // namespace

// ---- LRScheduler ----

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (auto& g : optimizer_.param_groups()) {
    if (!g.initial_lr()) g.initial_lr() = g.options().lr();
    base_lrs_.push_back(*g.initial_lr());
  }
}

std::vector<double> LRScheduler::current_lrs() const {
  std::vector<double> lrs;
  for (const auto& g : optimizer_.param_groups()) lrs.push_back(g.options().lr());
  return lrs;
}

void LRScheduler::step() {
  GRAFT_CHECK(optimizer_.param_groups().size() == base_lrs_.size(), "LRScheduler::step",
              std::to_string(base_lrs_.size()) + " param group(s), as when the scheduler was created",
              std::to_string(optimizer_.param_groups().size()) + " param group(s)",
              "create the scheduler after adding every param group");
  ++step_count_;
  ++last_epoch_;
  const std::vector<double> lrs = get_lrs();
  GRAFT_ASSERT(lrs.size() == base_lrs_.size(), "a scheduler returned one lr per group");
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lr_ = current_lrs();
}

StateDict LRScheduler::state_dict() const {
  StateDict sd("state dict key");
  sd.insert("last_epoch", tensor(last_epoch_));
  sd.insert("step_count", tensor(step_count_));
  sd.insert("base_lrs", tensor(base_lrs_, kFloat64));
  sd.insert("last_lr", tensor(last_lr_, kFloat64));
  return sd;
}

void LRScheduler::load_state_dict(const StateDict& sd) {
  const char* op = "LRScheduler::load_state_dict";
  check_keys(sd, {"last_epoch", "step_count", "base_lrs", "last_lr"}, op);
  const int64_t last_epoch = int_entry(sd, "last_epoch", op, /*min_value=*/-1);
  const int64_t step_count = int_entry(sd, "step_count", op);
  std::vector<double> base_lrs = list_entry(sd, "base_lrs", base_lrs_.size(), op);
  std::vector<double> last_lr = list_entry(sd, "last_lr", base_lrs_.size(), op);
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  base_lrs_ = std::move(base_lrs);
  last_lr_ = std::move(last_lr);
}

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  GRAFT_CHECK(step_size >= 1, "StepLR", "step_size >= 1", "step_size = " + std::to_string(step_size),
              "pass step_size >= 1 (the lr decays every step_size epochs)");
  initial_step();
}

std::vector<double> StepLR::get_lrs() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

// ---- MultiStepLR ----

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  initial_step();
}

std::vector<double> MultiStepLR::get_lrs() {
  std::vector<double> lrs = current_lrs();
  const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return lrs;
  for (double& lr : lrs) lr = lr * std::pow(gamma_, static_cast<double>(count));
  return lrs;
}

// ---- ExponentialLR ----

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lrs() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  GRAFT_CHECK(T_max >= 1, "CosineAnnealingLR", "T_max >= 1", "T_max = " + std::to_string(T_max),
              "pass T_max >= 1 (the number of steps in one half cosine period)");
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lrs() {
  std::vector<double> lrs = current_lrs();
  const int64_t e = last_epoch_;
  const double T = static_cast<double>(T_max_);
  if (e == 0) return lrs;
  if ((e - 1 - T_max_) % (2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
    return lrs;
  }
  const double ratio = (1 + std::cos(kPi * static_cast<double>(e) / T)) /
                       (1 + std::cos(kPi * static_cast<double>(e - 1) / T));
  for (double& lr : lrs) lr = ratio * (lr - eta_min_) + eta_min_;
  return lrs;
}

// ---- LinearLR ----

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  GRAFT_CHECK(start_factor > 0 && start_factor <= 1, "LinearLR", "start_factor in (0, 1]",
              "start_factor = " + shortest(start_factor), "the lr starts at start_factor * lr");
  GRAFT_CHECK(end_factor >= 0 && end_factor <= 1, "LinearLR", "end_factor in [0, 1]",
              "end_factor = " + shortest(end_factor), "pass end_factor in [0, 1], e.g. 1.0 to warm up to the base lr");
  GRAFT_CHECK(total_iters >= 1, "LinearLR", "total_iters >= 1", "total_iters = " + std::to_string(total_iters),
              "pass total_iters >= 1");
  initial_step();
}

std::vector<double> LinearLR::get_lrs() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double d = end_factor_ - start_factor_;
  const double factor = 1. + d / (static_cast<double>(total_iters_) * start_factor_ +
                                  static_cast<double>(last_epoch_ - 1) * d);
  for (double& lr : lrs) lr = lr * factor;
  return lrs;
}

// ---- ConstantLR ----

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer), factor_(factor), total_iters_(total_iters) {
  GRAFT_CHECK(factor > 0 && factor <= 1, "ConstantLR", "factor in (0, 1]", "factor = " + shortest(factor),
              "pass factor in (0, 1], e.g. 1.0 / 3");
  GRAFT_CHECK(total_iters >= 0, "ConstantLR", "total_iters >= 0", "total_iters = " + std::to_string(total_iters),
              "pass total_iters >= 0 (0 applies no factor)");
  initial_step();
}

std::vector<double> ConstantLR::get_lrs() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : lrs) lr = lr * (1.0 / factor_);
  }
  return lrs;
}

// ---- LambdaLR ----

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LRScheduler(optimizer), lambdas_(std::move(lr_lambdas)) {
  GRAFT_CHECK(lambdas_.size() == base_lrs_.size(), "LambdaLR",
              std::to_string(base_lrs_.size()) + " lr_lambdas (one per param group)",
              std::to_string(lambdas_.size()), "pass a single lr_lambda or one per param group");
  for (const auto& l : lambdas_) GRAFT_CHECK(l != nullptr, "LambdaLR", "callable lr_lambdas", "an empty function",
                                             "pass a lambda such as [](int64_t epoch) { return 0.95; }");
  initial_step();
}

std::vector<double> LambdaLR::get_lrs() {
  std::vector<double> lrs(base_lrs_.size());
  for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs_[i] * lambdas_[i](last_epoch_);
  return lrs;
}

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start,
                       AnnealStrategy anneal_strategy, double div_factor, double final_div_factor, bool three_phase)
    : OneCycleLR(optimizer, OneCycleLROptions(max_lr, total_steps)
                                .pct_start(pct_start)
                                .anneal_strategy(anneal_strategy)
                                .div_factor(div_factor)
                                .final_div_factor(final_div_factor)
                                .three_phase(three_phase)) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options)
    : LRScheduler(optimizer), options_(options) {
  const int64_t total = options_.total_steps();
  const double pct = options_.pct_start();
  GRAFT_CHECK(total >= 1, "OneCycleLR", "a positive total_steps", "total_steps = " + std::to_string(total),
              "pass total_steps >= 1");
  GRAFT_CHECK(pct >= 0 && pct <= 1, "OneCycleLR", "pct_start in [0, 1]", "pct_start = " + shortest(pct),
              "pass pct_start in [0, 1], e.g. 0.3");
  auto& groups = optimizer_.param_groups();
  const size_t n = groups.size();
  GRAFT_CHECK(options_.max_lrs().size() == 1 || options_.max_lrs().size() == n, "OneCycleLR",
              "one max_lr, or one per param group (" + std::to_string(n) + ")",
              std::to_string(options_.max_lrs().size()) + " values", "pass a single max_lr or one per param group");
  const double t = static_cast<double>(total);
  if (options_.three_phase()) {
    phases_ = {{pct * t - 1, 0, 1, 0, 1}, {2 * pct * t - 2, 1, 0, 1, 0}, {t - 1, 0, 2, 0, 0}};
  } else {
    phases_ = {{pct * t - 1, 0, 1, 0, 1}, {t - 1, 1, 2, 1, 0}};
  }
  base_lrs_.clear();
  for (size_t i = 0; i < n; ++i) {
    const double max_lr = options_.max_lrs().size() == 1 ? options_.max_lrs()[0] : options_.max_lrs()[i];
    const double initial = max_lr / options_.div_factor();
    groups[i].initial_lr() = initial;
    base_lrs_.push_back(initial);
    initial_lrs_.push_back(initial);
    max_lrs_.push_back(max_lr);
    min_lrs_.push_back(initial / options_.final_div_factor());
  }
  if (options_.cycle_momentum()) {
    for (auto& g : groups) {
      MomentumAccess probe;
      g.options().visit(probe);
      GRAFT_CHECK(probe.has_momentum || probe.has_betas, "OneCycleLR",
                  "an optimiser with momentum or betas when cycle_momentum is on",
                  std::string(g.options().optimizer_name()), "construct OneCycleLR with .cycle_momentum(false)");
      MomentumAccess set(options_.max_momentum());
      g.options().visit(set);
      max_momentums_.push_back(options_.max_momentum());
      base_momentums_.push_back(options_.base_momentum());
    }
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy() == AnnealStrategy::cos) {
    const double cos_out = std::cos(kPi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lrs() {
  const int64_t step_num = last_epoch_;
  GRAFT_CHECK(step_num <= options_.total_steps(), "OneCycleLR::step",
              "at most total_steps = " + std::to_string(options_.total_steps()) + " steps",
              "step " + std::to_string(step_num + 1),
              "Tried to step " + std::to_string(step_num + 1) + " times. The specified number of total steps is " +
                  std::to_string(options_.total_steps()));
  auto& groups = optimizer_.param_groups();
  std::vector<double> lrs;
  for (size_t g = 0; g < groups.size(); ++g) {
    const double lr_at[3] = {initial_lrs_[g], max_lrs_[g], min_lrs_[g]};
    double start_step = 0, lr = 0, momentum = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& phase = phases_[i];
      if (static_cast<double>(step_num) <= phase.end_step || i + 1 == phases_.size()) {
        GRAFT_CHECK(phase.end_step != start_step, "OneCycleLR", "phases of at least one step",
                    "an empty phase (pct_start = " + shortest(options_.pct_start()) +
                        ", total_steps = " + std::to_string(options_.total_steps()) + ")",
                    "increase total_steps or change pct_start");
        const double pct = (static_cast<double>(step_num) - start_step) / (phase.end_step - start_step);
        lr = anneal(lr_at[phase.start_lr], lr_at[phase.end_lr], pct);
        if (options_.cycle_momentum()) {
          const double mom_at[2] = {max_momentums_[g], base_momentums_[g]};
          momentum = anneal(mom_at[phase.start_momentum], mom_at[phase.end_momentum], pct);
        }
        break;
      }
      start_step = phase.end_step;
    }
    lrs.push_back(lr);
    if (options_.cycle_momentum()) {
      MomentumAccess set(momentum);
      groups[g].options().visit(set);
    }
  }
  return lrs;
}

// ---- ReduceLROnPlateau ----

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, SchedulerMode mode, double factor, int64_t patience,
                                     double threshold, ThresholdMode threshold_mode, int64_t cooldown,
                                     std::vector<double> min_lr, double eps)
    : optimizer_(optimizer),
      mode_(mode),
      factor_(factor),
      patience_(patience),
      threshold_(threshold),
      threshold_mode_(threshold_mode),
      cooldown_(cooldown),
      eps_(eps) {
  GRAFT_CHECK(factor < 1.0, "ReduceLROnPlateau", "factor < 1", "factor = " + shortest(factor),
              "the lr is multiplied by factor when the metric plateaus");
  GRAFT_CHECK(patience >= 0 && cooldown >= 0, "ReduceLROnPlateau", "patience >= 0 and cooldown >= 0",
              "patience = " + std::to_string(patience) + ", cooldown = " + std::to_string(cooldown),
              "pass patience and cooldown as counts of epochs >= 0");
  const size_t n = optimizer_.param_groups().size();
  GRAFT_CHECK(min_lr.size() == 1 || min_lr.size() == n, "ReduceLROnPlateau",
              "one min_lr, or one per param group (" + std::to_string(n) + ")",
              std::to_string(min_lr.size()) + " values", "pass a single min_lr or one per param group");
  min_lrs_ = min_lr.size() == 1 ? std::vector<double>(n, min_lr[0]) : std::move(min_lr);
  best_ = mode_ == min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (const auto& g : optimizer_.param_groups()) last_lr_.push_back(g.options().lr());
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (mode_ == min && threshold_mode_ == rel) return a < best * (1. - threshold_);
  if (mode_ == min && threshold_mode_ == abs) return a < best - threshold_;
  if (mode_ == max && threshold_mode_ == rel) return a > best * (threshold_ + 1.);
  return a > best + threshold_;
}

StateDict ReduceLROnPlateau::state_dict() const {
  StateDict sd("state dict key");
  sd.insert("best", tensor(best_, kFloat64));
  sd.insert("num_bad_epochs", tensor(num_bad_epochs_));
  sd.insert("cooldown_counter", tensor(cooldown_counter_));
  sd.insert("last_epoch", tensor(last_epoch_));
  sd.insert("last_lr", tensor(last_lr_, kFloat64));
  return sd;
}

void ReduceLROnPlateau::load_state_dict(const StateDict& sd) {
  const char* op = "ReduceLROnPlateau::load_state_dict";
  check_keys(sd, {"best", "num_bad_epochs", "cooldown_counter", "last_epoch", "last_lr"}, op);
  const double best = double_entry(sd, "best", op);
  GRAFT_CHECK(!std::isnan(best), op, "best as a number (or +-inf before the first step)", "nan",
              "the state dict is damaged; load one saved by the same scheduler");
  const int64_t bad = int_entry(sd, "num_bad_epochs", op);
  const int64_t cooldown = int_entry(sd, "cooldown_counter", op);
  const int64_t last_epoch = int_entry(sd, "last_epoch", op, /*min_value=*/-1);
  std::vector<double> last_lr = list_entry(sd, "last_lr", min_lrs_.size(), op);
  best_ = best;
  num_bad_epochs_ = bad;
  cooldown_counter_ = cooldown;
  last_epoch_ = last_epoch;
  last_lr_ = std::move(last_lr);
}

void ReduceLROnPlateau::step(double metric) {
  auto& groups = optimizer_.param_groups();
  GRAFT_CHECK(groups.size() == min_lrs_.size(), "ReduceLROnPlateau::step",
              std::to_string(min_lrs_.size()) + " param group(s), as when the scheduler was created",
              std::to_string(groups.size()) + " param group(s)", "create the scheduler after adding every param group");
  last_epoch_ = last_epoch_ + 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // ignore bad epochs in cooldown
  }
  if (num_bad_epochs_ > patience_) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].options().lr();
      const double reduced = old_lr * factor_;
      const double new_lr = min_lrs_[i] > reduced ? min_lrs_[i] : reduced;
      if (old_lr - new_lr > eps_) groups[i].options().set_lr(new_lr);
    }
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const auto& g : groups) last_lr_.push_back(g.options().lr());
}

}  // namespace graft::optim
