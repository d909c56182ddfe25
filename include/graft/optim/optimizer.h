// graft::optim::Optimizer: the base of every optimiser, shaped like LibTorch's torch::optim::Optimizer
// with PyTorch's semantics.
//
//   graft::optim::SGD opt(params, graft::optim::SGDOptions(0.1).momentum(0.9));
//   for (...) { opt.zero_grad(); loss(...).backward(); opt.step(); }
//
// Parameters live in param groups; each group has its own options (lr etc.), which may be changed
// between steps: opt.param_groups()[0].options().set_lr(0.01) (or .lr(0.01)). Per-parameter state
// (momentum buffers, moment estimates, step counts) is created on a parameter's first step.
//
// Note [Optimizer state dict]
// state_dict() is a flat OrderedDict<std::string, Tensor>, so a checkpoint can store it with the
// model's tensors (safetensors): parameters are numbered 0, 1, ... across the groups in order, as
// PyTorch does, and the keys are
//   state.<id>.<name>        the parameter's state: "state.3.exp_avg", "state.3.step" (0-dim float64)
//   param_groups.<g>.params  int64 [n]: the ids of the group's parameters
//   param_groups.<g>.<opt>   the group's options: 0-dim float64 ("lr"), 0-dim bool ("nesterov"),
//                            float64 [2] ("betas"); "initial_lr" once a scheduler has set it
// State tensors are shared with the live state, as in PyTorch (clone them to keep a snapshot).
// load_state_dict() checks everything before changing anything: the number of groups and of
// parameters per group, every key, every option, and the shape of every state tensor; state
// tensors are copied and cast to their parameter's dtype, except compact state (uint8 codes, bfloat16
// values and the 8-bit blocks' scales, visited through ParamStateVisitor::compact), which keeps its own.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "graft/core/compat.h"
#include "graft/core/error.h"
#include "graft/core/ordered_dict.h"
#include "graft/core/tensor.h"

// GRAFT_OPTIM_ARG(type, name): a chainable setter name(v), a getter name() and a mutable getter,
// like LibTorch's TORCH_ARG. Defaults follow the macro: GRAFT_OPTIM_ARG(double, momentum) = 0;
#define GRAFT_OPTIM_ARG(T, name)                        \
 public:                                                \
  auto& name(const T& new_##name) {                     \
    this->name##_ = new_##name;                         \
    return *this;                                       \
  }                                                     \
  const T& name() const noexcept { return this->name##_; } \
  T& name() noexcept { return this->name##_; }          \
                                                        \
 private:                                               \
  T name##_

namespace graft::optim {

class StepInBackward;  // graft/optim/step_in_backward.h

// Visits an options object's hyper-parameters by name (state dicts, comparison, schedulers that
// cycle "momentum" or "betas").
class OptionsVisitor {
 public:
  virtual ~OptionsVisitor() = default;
  virtual void operator()(const char* name, double& value) = 0;
  virtual void operator()(const char* name, bool& value) = 0;
  virtual void operator()(const char* name, std::tuple<double, double>& value) = 0;
};

// The options of a param group. lr lives here so that every group's learning rate can be read and
// changed through the base class, as schedulers do.
class OptimizerOptions {
 public:
  OptimizerOptions() = default;
  explicit OptimizerOptions(double lr) : lr_(lr) {}
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;

  double lr() const noexcept { return lr_; }
  OptimizerOptions& lr(double lr) {
    lr_ = lr;
    return *this;
  }
  double get_lr() const noexcept { return lr_; }  // LibTorch's spelling
  void set_lr(double lr) { lr_ = lr; }

  // Every hyper-parameter, "lr" first, in PyTorch's order.
  virtual void visit(OptionsVisitor& v) { v("lr", lr_); }
  // Throws graft::Error naming the optimiser when a value is out of range (negative lr, ...).
  virtual void validate() const = 0;
  // "SGD", "Adam", ...: names the optimiser in errors.
  virtual const char* optimizer_name() const = 0;

 protected:
  double lr_ = 1e-3;
};

// Same type and the same hyper-parameters.
bool operator==(const OptimizerOptions& a, const OptimizerOptions& b);
inline bool operator!=(const OptimizerOptions& a, const OptimizerOptions& b) { return !(a == b); }

// CRTP helper: clone(), and lr(v) returning the derived type so that setters chain.
template <class Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  using OptimizerOptions::OptimizerOptions;
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  using OptimizerOptions::lr;
  Derived& lr(double lr) {
    lr_ = lr;
    return static_cast<Derived&>(*this);
  }
};

// Visits a parameter's state: the step count and the named buffers. `required` fields must be
// present when a state dict holds state for the parameter.
class ParamStateVisitor {
 public:
  virtual ~ParamStateVisitor() = default;
  virtual void operator()(const char* name, int64_t& value, bool required) = 0;
  virtual void operator()(const char* name, Tensor& value, bool required) = 0;
  // A state tensor that an optimiser may hold compactly (Note [Compact optimizer state] in
  // graft/optim/state_precision.h): saved as any other, and loaded as any other except that a uint8
  // or bfloat16 tensor keeps its dtype; with param_shaped false (8-bit block scales) the tensor keeps
  // its dtype and its own shape, and the optimiser checks it at its next step. By default, as
  // operator() (a saver needs nothing else).
  virtual void compact(const char* name, Tensor& value, bool required, bool /*param_shaped*/) {
    (*this)(name, value, required);
  }
};

class OptimizerParamState {
 public:
  virtual ~OptimizerParamState() = default;
  virtual void visit(ParamStateVisitor& v) = 0;
};

// A list of parameters with their options. Without options, the optimiser's defaults are used (a
// copy, made when the group is added).
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  // OptimizerParamGroup({w, b}, SGDOptions(0.01)): any options object, copied.
  template <class O, std::enable_if_t<std::is_base_of_v<OptimizerOptions, O>, int> = 0>
  OptimizerParamGroup(std::vector<Tensor> params, const O& options)
      : params_(std::move(params)), options_(options.clone()) {}
  OptimizerParamGroup(const OptimizerParamGroup& o)
      : params_(o.params_), options_(o.options_ ? o.options_->clone() : nullptr), initial_lr_(o.initial_lr_) {}
  OptimizerParamGroup& operator=(const OptimizerParamGroup& o) {
    if (this != &o) {
      params_ = o.params_;
      options_ = o.options_ ? o.options_->clone() : nullptr;
      initial_lr_ = o.initial_lr_;
    }
    return *this;
  }
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  // The learning rate a scheduler started from (PyTorch's group["initial_lr"]); set by the first
  // scheduler attached to the optimiser, so that later schedulers start from the same base.
  std::optional<double>& initial_lr() { return initial_lr_; }
  const std::optional<double>& initial_lr() const { return initial_lr_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  std::optional<double> initial_lr_;
};

using LossClosure = std::function<Tensor()>;

class Optimizer {
 public:
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer();

  // Runs `closure` (with grad mode on) when given, then one update of every parameter that has a
  // gradient, under NoGradGuard. Returns the closure's loss (undefined without a closure). An error
  // while a StepInBackward is attached (the parameters were updated in backward already).
  virtual Tensor step(LossClosure closure = nullptr);
  // One update of `param` alone, exactly as step() would update it: the options of its group, its
  // state (Adam's per-parameter step count, momentum buffers), under NoGradGuard; nothing when it
  // has no gradient. It runs step_group() on the group restricted to {param}, so every optimiser
  // that implements step_group() supports it. steps_taken() does not change. `param` must be in a
  // group. Used by StepInBackward (Note [Optimizer step in backward]).
  void step_parameter(const Tensor& param);
  // Whether a StepInBackward is attached (step(), add_param_group and add_parameters are errors then).
  bool steps_in_backward() const noexcept { return step_in_backward_ != nullptr; }

  // Adds a group; without options it gets a copy of the defaults. Parameters must be floating-point
  // leaf tensors that are in no other group.
  void add_param_group(const OptimizerParamGroup& param_group);
  // Appends parameters to the first group (LibTorch's add_parameters).
  void add_parameters(const std::vector<Tensor>& parameters);
  // set_to_none: drop each .grad (the default, as in LibTorch); otherwise zero it in place
  // (detached from any graph).
  virtual void zero_grad(bool set_to_none = true);
  // nn::utils::clip_grad_norm_ over parameters() (GradAccumulator clips through this): an optimiser
  // whose gradients are sharded over ranks (ZeroRedundancyOptimizer) returns the global norm.
  virtual double clip_grad_norm_(double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false);

  // Every parameter, group by group.
  std::vector<Tensor> parameters() const;
  // The number of parameters over all groups.
  size_t size() const;
  OptimizerOptions& defaults() { return *defaults_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  // Per-parameter state, keyed as LibTorch keys it: by the address of the parameter's TensorImpl
  // as text, state_key(p) = guts::to_string(p.unsafeGetTensorImpl()).
  std::unordered_map<std::string, std::unique_ptr<OptimizerParamState>>& state() { return state_; }
  // The text guts::to_string gives (an ostream writes a pointer as "0x" and lowercase hex), made
  // without an ostringstream: this runs for every parameter at every step, and the result fits in
  // std::string's small buffer.
  static std::string state_key(const Tensor& param) {
    char buf[2 + 2 * sizeof(void*)] = {'0', 'x'};
    const auto r = std::to_chars(buf + 2, buf + sizeof buf,
                                 reinterpret_cast<std::uintptr_t>(param.unsafeGetTensorImpl()), 16);
    return std::string(buf, r.ptr);
  }
  // The state of `param`, or null before its first step.
  OptimizerParamState* state_of(const Tensor& param) const;

  // See Note [Optimizer state dict].
  OrderedDict<std::string, Tensor> state_dict() const;
  void load_state_dict(const OrderedDict<std::string, Tensor>& state_dict);

  const char* name() const { return defaults_->optimizer_name(); }

  // Note [Update statistics]
  // With record_update_stats(true), step() records for every parameter it updates the squared L2
  // norms of the weight before the step and of the update (w_after - w_before, as rounded), computed
  // inside the update loop from data already in cache, so a gradient monitor gets update-to-weight
  // ratios without keeping a copy of the weights (diagnostics::GradMonitor uses this). SGD supports
  // it; for the other optimisers supports_update_stats() is false and nothing is recorded.
  struct UpdateStats {
    double weight_sq = 0;  // ||w_before||^2
    double update_sq = 0;  // ||w_after - w_before||^2
    int64_t step = 0;      // the value of steps_taken() after the step that recorded them
  };
  virtual bool supports_update_stats() const { return false; }
  void record_update_stats(bool on) { record_update_stats_ = on && supports_update_stats(); }
  bool recording_update_stats() const { return record_update_stats_; }
  // The statistics `param` got at the last step that updated it, or null.
  const UpdateStats* update_stats(const Tensor& param) const;
  // Calls of step() so far.
  int64_t steps_taken() const { return steps_taken_; }

 protected:
  // For step_group implementations: store statistics for `param` at the current step.
  void set_update_stats(const Tensor& param, double weight_sq, double update_sq);
  bool record_update_stats_ = false;
  int64_t steps_taken_ = 0;
  std::unordered_map<const TensorImpl*, UpdateStats> update_stats_;

  Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults);
  // For LBFGS, which LibTorch's API lets one construct from an empty list and fill with
  // add_parameters/add_param_group: no check that the groups hold a parameter.
  struct AllowEmptyParameterList {};
  Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults,
            AllowEmptyParameterList);

  // One update of the group's parameters that have a gradient (grad mode is off). An optimiser
  // overrides this (or step() itself, as a LibTorch-style optimiser may).
  virtual void step_group(OptimizerParamGroup& group);
  // A fresh, empty state object of this optimiser's kind (for load_state_dict and param_state);
  // null for an optimiser that keeps no per-parameter state.
  virtual std::unique_ptr<OptimizerParamState> make_param_state() const { return nullptr; }

  // The state of `param`, created with make_param_state() when missing.
  template <class S>
  S& param_state(const Tensor& param) {
    auto& slot = state_[state_key(param)];
    if (!slot) slot = make_param_state();
    GRAFT_ASSERT(slot != nullptr, "an optimiser that keeps state overrides make_param_state()");
    return static_cast<S&>(*slot);
  }

  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> param_groups_;
  std::unordered_map<std::string, std::unique_ptr<OptimizerParamState>> state_;

 private:
  // StepInBackward attaches itself here, counts steps_taken_ per backward pass and checks that the
  // optimiser implements step_group().
  friend class StepInBackward;
  const StepInBackward* step_in_backward_ = nullptr;
};

}  // namespace graft::optim
