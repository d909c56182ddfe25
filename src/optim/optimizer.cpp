// The optimiser base: param groups, zero_grad, step, state dicts (Note [Optimizer state dict]).
#include "graft/optim/optimizer.h"

#include <cmath>
#include <map>
#include <set>
#include <typeinfo>
#include <unordered_set>

#include "../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/warning.h"
#include "graft/nn/utils.h"
#include "graft/core/memory.h"

namespace graft::optim {

namespace {

using graft::detail::shortest;
using StateDict = OrderedDict<std::string, Tensor>;

// Flattens every hyper-parameter to (name, values): for comparing options.
class OptionsCollector : public OptionsVisitor {
 public:
  std::vector<std::pair<std::string, std::vector<double>>> values;
  void operator()(const char* name, double& v) override { values.push_back({name, {v}}); }
  void operator()(const char* name, bool& v) override { values.push_back({name, {v ? 1.0 : 0.0}}); }
  void operator()(const char* name, std::tuple<double, double>& v) override {
    values.push_back({name, {std::get<0>(v), std::get<1>(v)}});
  }
};

class OptionsSaver : public OptionsVisitor {
 public:
  OptionsSaver(StateDict& out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {}
  void operator()(const char* name, double& v) override { out_.insert(prefix_ + name, tensor(v, kFloat64)); }
  void operator()(const char* name, bool& v) override { out_.insert(prefix_ + name, tensor(v)); }
  void operator()(const char* name, std::tuple<double, double>& v) override {
    out_.insert(prefix_ + name, tensor({std::get<0>(v), std::get<1>(v)}, kFloat64));
  }

 private:
  StateDict& out_;
  std::string prefix_;
};

// Reads a group's options from its entries ("lr" -> tensor), marking the names it used.
class OptionsLoader : public OptionsVisitor {
 public:
  OptionsLoader(const std::map<std::string, Tensor>& entries, std::string prefix, std::string op)
      : entries_(entries), prefix_(std::move(prefix)), op_(std::move(op)) {}
  std::set<std::string> used;

  void operator()(const char* name, double& v) override { v = scalar(name, false); }
  void operator()(const char* name, bool& v) override {
    const double d = scalar(name, true);
    GRAFT_CHECK(d == 0 || d == 1, op_, prefix_ + name + " to be true or false", shortest(d),
                "load a state dict saved by the same optimiser type");
    v = d != 0;
  }
  void operator()(const char* name, std::tuple<double, double>& v) override {
    const Tensor& t = find(name);
    GRAFT_CHECK(t.dim() == 1 && t.numel() == 2 && t.dtype() != DType::Bool, op_,
                prefix_ + name + " to be a pair of numbers (a tensor of shape [2])",
                std::string("a ") + dtype_name(t.dtype()) + " tensor of shape " + shape_str(t.sizes()),
                "load a state dict saved by the same optimiser type");
    Tensor d = t.to(kFloat64);
    v = {d.select(0, 0).item<double>(), d.select(0, 1).item<double>()};
  }

 private:
  const Tensor& find(const char* name) {
    auto it = entries_.find(name);
    GRAFT_CHECK(it != entries_.end(), op_, "the key '" + prefix_ + name + "'", "a state dict without it",
                "the state dict was saved by a different kind of optimiser, or is incomplete");
    used.insert(name);
    return it->second;
  }
  double scalar(const char* name, bool allow_bool) {
    const Tensor& t = find(name);
    GRAFT_CHECK(t.numel() == 1 && t.dim() <= 1 && (allow_bool || t.dtype() != DType::Bool), op_,
                prefix_ + name + " to be a single number (a 0-dim tensor)",
                std::string("a ") + dtype_name(t.dtype()) + " tensor of shape " + shape_str(t.sizes()),
                "load a state dict saved by the same optimiser type");
    return t.to(kFloat64).item<double>();
  }

  const std::map<std::string, Tensor>& entries_;
  std::string prefix_, op_;
};

class StateSaver : public ParamStateVisitor {
 public:
  StateSaver(StateDict& out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {}
  void operator()(const char* name, int64_t& v, bool) override {
    out_.insert(prefix_ + name, tensor(static_cast<double>(v), kFloat64));
  }
  void operator()(const char* name, Tensor& v, bool) override {
    if (v.defined()) out_.insert(prefix_ + name, v);
  }

 private:
  StateDict& out_;
  std::string prefix_;
};

class StateLoader : public ParamStateVisitor {
 public:
  StateLoader(const std::map<std::string, Tensor>& entries, const Tensor& param, std::string prefix, std::string op)
      : entries_(entries), param_(param), prefix_(std::move(prefix)), op_(std::move(op)) {}
  std::set<std::string> used;

  void operator()(const char* name, int64_t& v, bool required) override {
    const Tensor* t = find(name, required);
    if (!t) return;
    GRAFT_CHECK(t->numel() == 1 && t->dim() <= 1 && t->dtype() != DType::Bool, op_,
                prefix_ + name + " to be a single number (a 0-dim tensor)",
                std::string("a ") + dtype_name(t->dtype()) + " tensor of shape " + shape_str(t->sizes()),
                "load a state dict saved by the same optimiser type");
    const double d = t->to(kFloat64).item<double>();
    GRAFT_CHECK(d >= 0 && d == std::floor(d) && d < 9.0e15, op_, prefix_ + name + " to be a count (an integer >= 0)",
                shortest(d), "load a state dict saved by the same optimiser type");
    v = static_cast<int64_t>(d);
  }
  void operator()(const char* name, Tensor& v, bool required) override { load(name, v, required, true, false); }
  void compact(const char* name, Tensor& v, bool required, bool param_shaped) override {
    load(name, v, required, param_shaped, true);
  }

 private:
  // param_shaped: the tensor must have the parameter's shape; compact: a uint8 or bfloat16 tensor,
  // or any tensor that is not param_shaped, keeps its dtype (Note [Compact optimizer state]).
  void load(const char* name, Tensor& v, bool required, bool param_shaped, bool compact) {
    const Tensor* t = find(name, required);
    if (!t) return;
    GRAFT_CHECK(!param_shaped || t->sizes() == param_.sizes(), op_,
                prefix_ + name + " of shape " + shape_str(param_.sizes()) + " (the shape of its parameter)",
                "shape " + shape_str(t->sizes()),
                "the state dict belongs to a model with different parameter shapes (or another parameter order)");
    GRAFT_CHECK(t->dtype() != DType::Bool, op_, prefix_ + name + " to hold numbers", "a bool tensor",
                "load a state dict saved by the same optimiser type");
    const bool keep = compact && (!param_shaped || t->dtype() == DType::UInt8 || t->dtype() == DType::BFloat16);
    NoGradGuard no_grad;
    v = t->detach().to(keep ? t->dtype() : param_.dtype(), /*non_blocking=*/false, /*copy=*/true).contiguous();
    memory::set_category(*v.impl().storage, memory::Category::OptimizerState);
  }

  const Tensor* find(const char* name, bool required) {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      GRAFT_CHECK(!required, op_, "the key '" + prefix_ + name + "'", "a state dict without it",
                  "the state dict was saved by a different kind of optimiser, or is incomplete");
      return nullptr;
    }
    used.insert(name);
    return &it->second;
  }

  const std::map<std::string, Tensor>& entries_;
  const Tensor& param_;
  std::string prefix_, op_;
};

// "state.12.exp_avg" -> (12, "exp_avg") after the prefix "state."; false when malformed.
bool split_key(const std::string& key, const std::string& prefix, int64_t& index, std::string& name) {
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t start = prefix.size();
  const size_t dot = key.find('.', start);
  if (dot == std::string::npos || dot == start || dot + 1 >= key.size()) return false;
  index = 0;
  for (size_t i = start; i < dot; ++i) {
    if (key[i] < '0' || key[i] > '9' || i - start > 12) return false;
    index = index * 10 + (key[i] - '0');
  }
  name = key.substr(dot + 1);
  return true;
}

// Parameters must be floating-point leaves, each listed once and in no existing group.
void check_new_params(const std::vector<OptimizerParamGroup>& groups, const std::vector<Tensor>& params,
                      const std::string& op) {
  std::unordered_set<const TensorImpl*> existing;
  for (const auto& g : groups)
    for (const auto& p : g.params()) existing.insert(p.unsafe_impl());
  std::unordered_set<const TensorImpl*> mine;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const std::string which = "parameter " + std::to_string(i) + " of the list";
    GRAFT_CHECK(p.defined(), op, "defined tensors", "an undefined tensor as " + which,
                "pass only defined tensors, e.g. model->parameters()");
    GRAFT_CHECK(p.is_floating_point(), op, "floating-point parameters",
                std::string("a ") + dtype_name(p.dtype()) + " tensor as " + which,
                "only floating-point tensors can be optimised; convert with .to(graft::kFloat32)");
    GRAFT_CHECK(p.is_leaf(), op, "leaf tensors (parameters)", "a non-leaf tensor as " + which,
                "optimise the leaf the result was computed from, or detach() it and set requires_grad_()");
    GRAFT_CHECK(mine.insert(p.unsafe_impl()).second, op, "each parameter once", which + " listed twice",
                "remove the duplicate");
    GRAFT_CHECK(!existing.count(p.unsafe_impl()), op, "parameters that are in no other group",
                which + ", which is already in a group", "some parameters appear in more than one parameter group");
  }
}

}  // namespace

// ---- options and groups ----

bool operator==(const OptimizerOptions& a, const OptimizerOptions& b) {
  if (typeid(a) != typeid(b)) return false;
  OptionsCollector ca, cb;
  const_cast<OptimizerOptions&>(a).visit(ca);
  const_cast<OptimizerOptions&>(b).visit(cb);
  return ca.values == cb.values;
}

OptimizerOptions& OptimizerParamGroup::options() {
  GRAFT_CHECK(options_ != nullptr, "OptimizerParamGroup::options", "a group with options",
              "a group without options", "a group gets a copy of the optimiser's defaults when it is added");
  return *options_;
}
const OptimizerOptions& OptimizerParamGroup::options() const {
  return const_cast<OptimizerParamGroup&>(*this).options();
}

// ---- Optimizer ----

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  GRAFT_ASSERT(defaults_ != nullptr, "an optimiser needs default options");
  defaults_->validate();
  size_t total = 0;
  for (const auto& g : param_groups) total += g.params().size();
  GRAFT_CHECK(total > 0, name(), "at least one parameter to optimise", "an empty parameter list",
              "pass the model's parameters (model->parameters())");
  for (const auto& g : param_groups) add_param_group(g);
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults,
                     AllowEmptyParameterList)
    : defaults_(std::move(defaults)) {
  GRAFT_ASSERT(defaults_ != nullptr, "an optimiser needs default options");
  defaults_->validate();
  for (const auto& g : param_groups) add_param_group(g);
}

Optimizer::~Optimizer() = default;

void Optimizer::add_param_group(const OptimizerParamGroup& param_group) {
  const std::string op = std::string(name()) + ".add_param_group";
  GRAFT_CHECK(step_in_backward_ == nullptr, op, "no StepInBackward attached", "one attached",
              "its hooks cover the parameters it found when constructed: destroy it, add the group, attach a new one");
  std::unique_ptr<OptimizerOptions> options =
      param_group.has_options() ? param_group.options().clone() : defaults_->clone();
  const OptimizerOptions& given = *options;  // typeid of a plain reference (clang warns on *ptr)
  const OptimizerOptions& own = *defaults_;
  GRAFT_CHECK(typeid(given) == typeid(own), op,
              std::string("options of this optimiser (") + defaults_->optimizer_name() + "Options)",
              std::string("options of ") + options->optimizer_name(), "give each group the optimiser's own options type");
  options->validate();

  check_new_params(param_groups_, param_group.params(), op);
  for (const Tensor& p : param_group.params())  // Note [Memory categories]
    if (p.defined()) memory::set_category(*p.impl().storage, memory::Category::Parameters);
  OptimizerParamGroup g(param_group.params(), std::move(options));
  g.initial_lr() = param_group.initial_lr();
  param_groups_.push_back(std::move(g));
}

void Optimizer::add_parameters(const std::vector<Tensor>& parameters) {
  const std::string op = std::string(name()) + ".add_parameters";
  GRAFT_CHECK(step_in_backward_ == nullptr, op, "no StepInBackward attached", "one attached",
              "its hooks cover the parameters it found when constructed: destroy it, add them, attach a new one");
  GRAFT_CHECK(!param_groups_.empty(), op, "an optimiser with a group", "no groups",
              "construct the optimiser with parameters, or call add_param_group() first");
  check_new_params(param_groups_, parameters, op);
  // LibTorch's old interface, which warns (its tests count the warning); add_param_group is the
  // current one.
  GRAFT_WARN(op + ": adds to the first parameter group; Optimizer::add_parameters() will be removed in PyTorch 1.6 "
             "(LibTorch's words): use add_param_group(OptimizerParamGroup(params))");
  for (const Tensor& p : parameters)
    if (p.defined()) memory::set_category(*p.impl().storage, memory::Category::Parameters);
  auto& ps = param_groups_[0].params();
  ps.insert(ps.end(), parameters.begin(), parameters.end());
}

double Optimizer::clip_grad_norm_(double max_norm, double norm_type, bool error_if_nonfinite) {
  return nn::utils::clip_grad_norm_(parameters(), max_norm, norm_type, error_if_nonfinite);
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& g : param_groups_) {
    for (auto& p : g.params()) {
      Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        grad = Tensor();
      } else {
        if (grad.grad_fn()) grad = grad.detach();
        else if (grad.requires_grad()) grad.requires_grad_(false);
        grad.zero_();
      }
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> all;
  for (const auto& g : param_groups_) all.insert(all.end(), g.params().begin(), g.params().end());
  return all;
}

size_t Optimizer::size() const {
  size_t n = 0;
  for (const auto& g : param_groups_) n += g.params().size();
  return n;
}

OptimizerParamState* Optimizer::state_of(const Tensor& param) const {
  auto it = state_.find(state_key(param));
  return it == state_.end() ? nullptr : it->second.get();
}

Tensor Optimizer::step(LossClosure closure) {
  GRAFT_CHECK(step_in_backward_ == nullptr, std::string(name()) + ".step",
              "no StepInBackward attached (it updates every parameter during backward)",
              "a step() with one attached, which would update the parameters a second time",
              "with step-in-backward the training loop is loss.backward() alone (Note [Optimizer step in "
              "backward]); destroy the StepInBackward to go back to step()");
  Tensor loss;
  if (closure) {
    EnableGradGuard enable;
    loss = closure();
  }
  NoGradGuard no_grad;
  ++steps_taken_;
  for (auto& group : param_groups_) {
    group.options().validate();
    step_group(group);
  }
  return loss;
}

void Optimizer::step_parameter(const Tensor& param) {
  const std::string op = std::string(name()) + ".step_parameter";
  GRAFT_CHECK(param.defined(), op, "a defined parameter", "an undefined tensor",
              "pass one of the optimiser's parameters");
  OptimizerParamGroup* found = nullptr;
  for (auto& g : param_groups_) {
    for (const Tensor& p : g.params())
      if (p.unsafe_impl() == param.unsafe_impl()) found = &g;
    if (found) break;
  }
  GRAFT_CHECK(found != nullptr, op, "a parameter of one of the optimiser's groups",
              "a tensor of shape " + shape_str(param.sizes()) + " in no group",
              "add it with add_param_group() (or add_parameters()) first");
  if (!param.grad().defined()) return;
  NoGradGuard no_grad;
  found->options().validate();
  // step_group() on the group restricted to {param}: the same options, state and update loop as
  // step(), for every optimiser, without per-optimiser code (Note [Optimizer step in backward]).
  std::vector<Tensor> only{param};
  std::swap(only, found->params());
  struct Restore {
    OptimizerParamGroup& g;
    std::vector<Tensor>& saved;
    ~Restore() { std::swap(saved, g.params()); }
  } restore{*found, only};
  step_group(*found);
}

const Optimizer::UpdateStats* Optimizer::update_stats(const Tensor& param) const {
  auto it = update_stats_.find(param.unsafe_impl());
  return it == update_stats_.end() ? nullptr : &it->second;
}

void Optimizer::set_update_stats(const Tensor& param, double weight_sq, double update_sq) {
  update_stats_[param.unsafe_impl()] = {weight_sq, update_sq, steps_taken_};
}

void Optimizer::step_group(OptimizerParamGroup&) {
  GRAFT_CHECK(false, std::string(name()) + ".step", "an optimiser that overrides step_group() or step()",
              "the base class's step_group()", "implement the update in the derived optimiser");
}

// ---- state dicts ----

StateDict Optimizer::state_dict() const {
  StateDict out("state dict key");
  int64_t id = 0;
  for (const auto& g : param_groups_) {
    for (const auto& p : g.params()) {
      if (OptimizerParamState* s = state_of(p)) {
        StateSaver saver(out, "state." + std::to_string(id) + ".");
        s->visit(saver);
      }
      ++id;
    }
  }
  id = 0;
  for (size_t gi = 0; gi < param_groups_.size(); ++gi) {
    const auto& g = param_groups_[gi];
    const std::string prefix = "param_groups." + std::to_string(gi) + ".";
    OptionsSaver saver(out, prefix);
    const_cast<OptimizerOptions&>(g.options()).visit(saver);
    if (g.initial_lr()) out.insert(prefix + "initial_lr", tensor(*g.initial_lr(), kFloat64));
    std::vector<int64_t> ids;
    for (size_t i = 0; i < g.params().size(); ++i) ids.push_back(id++);
    out.insert(prefix + "params", tensor(ids, kInt64));
  }
  return out;
}

void Optimizer::load_state_dict(const StateDict& state_dict) {
  const std::string op = std::string(name()) + ".load_state_dict";
  std::map<int64_t, std::map<std::string, Tensor>> state_entries, group_entries;
  for (const auto& item : state_dict) {
    int64_t index = 0;
    std::string field;
    const bool is_state = split_key(item.key(), "state.", index, field);
    const bool is_group = !is_state && split_key(item.key(), "param_groups.", index, field);
    GRAFT_CHECK(is_state || is_group, op, "keys 'state.<id>.<name>' or 'param_groups.<index>.<name>'",
                "the key '" + item.key() + "'", "pass the dict returned by an optimiser's state_dict()");
    GRAFT_CHECK(item.value().defined(), op, "a tensor for every key", "an undefined tensor for '" + item.key() + "'",
                "load a state dict saved by optimizer.state_dict()");
    (is_state ? state_entries : group_entries)[index][field] = item.value();
  }

  // Groups: count, parameter counts, options.
  const size_t n_groups = param_groups_.size();
  const int64_t saved_groups = group_entries.empty() ? 0 : group_entries.rbegin()->first + 1;
  GRAFT_CHECK(saved_groups == static_cast<int64_t>(n_groups) && group_entries.size() == n_groups, op,
              "a state dict with " + std::to_string(n_groups) + " parameter group(s), as this optimiser has",
              "a state dict with " + std::to_string(group_entries.size()) + " parameter group(s)" +
                  (saved_groups != static_cast<int64_t>(group_entries.size())
                       ? " numbered up to " + std::to_string(saved_groups - 1)
                       : ""),
              "create the optimiser with the same param groups as the one that was saved");
  std::map<int64_t, const Tensor*> id_to_param;
  std::vector<std::unique_ptr<OptimizerOptions>> new_options;
  std::vector<std::optional<double>> new_initial_lrs;
  for (size_t gi = 0; gi < n_groups; ++gi) {
    const auto& entries = group_entries[static_cast<int64_t>(gi)];
    const auto& params = param_groups_[gi].params();
    const std::string prefix = "param_groups." + std::to_string(gi) + ".";
    auto pit = entries.find("params");
    GRAFT_CHECK(pit != entries.end(), op, "the key '" + prefix + "params'", "a state dict without it",
                "the state dict is incomplete");
    const Tensor& ids = pit->second;
    GRAFT_CHECK(ids.dim() == 1 && ids.dtype() == DType::Int64, op, prefix + "params to be an int64 list of ids",
                std::string("a ") + dtype_name(ids.dtype()) + " tensor of shape " + shape_str(ids.sizes()),
                "load a state dict saved by the same optimiser type");
    GRAFT_CHECK(ids.numel() == static_cast<int64_t>(params.size()), op,
                "param group " + std::to_string(gi) + " with " + std::to_string(params.size()) +
                    " parameter(s), as in this optimiser",
                "a group of " + std::to_string(ids.numel()) + " parameter(s) in the state dict",
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    Tensor ids_c = ids.contiguous();
    const int64_t* idp = ids_c.data_ptr<int64_t>();
    for (size_t i = 0; i < params.size(); ++i) {
      GRAFT_CHECK(id_to_param.emplace(idp[i], &params[i]).second, op, "each parameter id once",
                  "id " + std::to_string(idp[i]) + " listed twice",
                  "the state dict is corrupt; save it again with optimizer.state_dict()");
    }
    std::unique_ptr<OptimizerOptions> options = param_groups_[gi].options().clone();
    OptionsLoader loader(entries, prefix, op);
    options->visit(loader);
    std::optional<double> initial_lr;
    if (auto it = entries.find("initial_lr"); it != entries.end()) {
      double v = 0;
      loader("initial_lr", v);
      initial_lr = v;
    }
    loader.used.insert("params");
    for (const auto& [field, t] : entries) {
      GRAFT_CHECK(loader.used.count(field), op, std::string("the options of ") + name(),
                  "the unexpected key '" + prefix + field + "'",
                  "the state dict was saved by a different kind of optimiser");
    }
    options->validate();
    new_options.push_back(std::move(options));
    new_initial_lrs.push_back(initial_lr);
  }

  // Per-parameter state.
  std::unordered_map<std::string, std::unique_ptr<OptimizerParamState>> new_state;
  for (const auto& [id, entries] : state_entries) {
    auto pit = id_to_param.find(id);
    GRAFT_CHECK(pit != id_to_param.end(), op, "state only for parameter ids listed in param_groups.<g>.params",
                "state for id " + std::to_string(id), "the state dict is inconsistent");
    const Tensor& param = *pit->second;
    const std::string prefix = "state." + std::to_string(id) + ".";
    std::unique_ptr<OptimizerParamState> s = make_param_state();
    GRAFT_CHECK(s != nullptr, op, std::string("no per-parameter state, as ") + name() + " keeps none",
                "state for id " + std::to_string(id), "the state dict was saved by a different kind of optimiser");
    StateLoader loader(entries, param, prefix, op);
    s->visit(loader);
    for (const auto& [field, t] : entries) {
      GRAFT_CHECK(loader.used.count(field), op, std::string("the state of ") + name(),
                  "the unexpected key '" + prefix + field + "'",
                  "the state dict was saved by a different kind of optimiser");
    }
    new_state[state_key(param)] = std::move(s);
  }

  // Everything checked: commit.
  for (size_t gi = 0; gi < n_groups; ++gi) {
    param_groups_[gi].set_options(std::move(new_options[gi]));
    param_groups_[gi].initial_lr() = new_initial_lrs[gi];
  }
  state_ = std::move(new_state);
}

}  // namespace graft::optim
