// graft::nn::Module: registration, recursive accessors, modes, state dicts and printing.
// See Note [Module semantics] in include/graft/nn/module.h.
#include "graft/nn/module.h"

#include <cxxabi.h>

#include <atomic>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "graft/autograd/grad_mode.h"
#include "graft/autograd/node.h"
#include "graft/core/warning.h"
#include "graft/core/memory.h"
#include "graft/core/shape.h"

namespace graft::nn {

namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  char* out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = status == 0 && out ? out : mangled;
  std::free(out);
  return s;
}

// "graft::nn::LinearImpl" -> "Linear"; "ns::Box<int>" -> "Box<int>".
std::string short_class_name(const std::string& full) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0 && c == ':' && i + 1 < full.size() && full[i + 1] == ':') start = i + 2;
  }
  std::string s = full.substr(start);
  if (s.size() > 4 && s.compare(s.size() - 4, 4, "Impl") == 0) s.resize(s.size() - 4);
  return s;
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Tensor::set_data keeps the TensorImpl, and so every handle to the parameter, and its memory
// category: a cloned module's or a converted parameter stays a parameter.
void set_data(const Tensor& t, const Tensor& src) { t.set_data(src); }

void convert_tensor(const Tensor& t, DType dtype) {
  if (!t.defined() || !t.is_floating_point() || t.dtype() == dtype) return;
  set_data(t, t.detach().to(dtype));
  if (t.impl().autograd && t.grad().defined()) {
    const Tensor& g = t.grad();
    if (g.dtype() != dtype) set_data(g, g.detach().to(dtype));
  }
}

}  // namespace

const std::string& Module::name() const {
  if (!name_) name_ = short_class_name(demangle(typeid(*this).name()));
  return *name_;
}

// ---- registration ----

// The messages carry LibTorch's sentences ("Submodule 'linear' already defined", "Parameter name must
// not contain a dot (got 'a.b')"), which its tests look for, after graft's got.
void Module::check_new_name(const std::string& name, const char* what) const {
  const std::string op = std::string("register_") + what;
  // LibTorch calls a registered module a submodule.
  std::string kind = std::string(what) == "module" ? "submodule" : what;
  std::string Kind = kind;
  Kind[0] = static_cast<char>(Kind[0] - 'a' + 'A');
  GRAFT_CHECK(!name.empty(), op, "a non-empty " + kind + " name", "an empty name. " + Kind + " name must not be empty",
              "pass a non-empty name");
  GRAFT_CHECK(name.find('.') == std::string::npos, op, "a " + kind + " name without dots",
              "'" + name + "'. " + Kind + " name must not contain a dot (got '" + name + "')",
              "dots join the names of nested modules; use '_' instead");
  const char* taken = parameters_.contains(name) ? "parameter"
                      : buffers_.contains(name)  ? "buffer"
                      : children_.contains(name) ? "submodule"
                                                 : nullptr;
  GRAFT_CHECK(taken == nullptr, op, "a name not yet used in " + this->name(),
              kind == (taken ? taken : "") ? Kind + " '" + name + "' already defined"
                                           : "'" + name + "', already defined as a " + (taken ? taken : ""),
              "each parameter, buffer and submodule of a module needs its own name");
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  if (tensor.defined()) {
    GRAFT_CHECK(tensor.is_leaf(), "register_parameter", "a leaf tensor for parameter '" + name + "'",
                std::string("a tensor computed by ") + tensor.grad_fn()->name(),
                "register tensor.detach() (parameters are leaves that collect .grad)");
    tensor.set_requires_grad(requires_grad);
    memory::set_category(*tensor.impl().storage, memory::Category::Parameters);
  } else if (requires_grad) {  // LibTorch's warning, word for word (its API test counts it)
    GRAFT_WARN("register_parameter: an undefined tensor cannot require grad (parameter '" + name +
               "'). Ignoring the `requires_grad=true` function parameter.");
  }
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_new_name(name, "buffer");
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::register_module_impl(std::string name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  GRAFT_CHECK(module != nullptr, "register_module", "a module for '" + name + "'", "an empty module pointer",
              "construct the module before registering it");
  GRAFT_CHECK(module.get() != this, "register_module", "a module other than the parent",
              "the module itself under '" + name + "'", "a module cannot contain itself");
  children_.insert(std::move(name), std::move(module));
}

void Module::replace_module_impl(const std::string& name, std::shared_ptr<Module> module) {
  GRAFT_CHECK(children_.contains(name), "replace_module", "the name of a registered submodule of " + this->name(),
              "'" + name + "'. Submodule '" + name + "' is not defined", "register it first with register_module");
  GRAFT_CHECK(module != nullptr, "replace_module", "a module for '" + name + "'", "an empty module pointer",
              "pass a constructed module, e.g. std::make_shared<...>()");
  children_[name] = std::move(module);
}

void Module::unregister_module(const std::string& name) {
  GRAFT_CHECK(children_.contains(name), "unregister_module", "the name of a registered submodule of " + this->name(),
              "'" + name + "'. No Module with name `" + name + "` is registered",
              "check the name against named_children()");
  OrderedDict<std::string, std::shared_ptr<Module>> kept("submodule");
  for (auto& item : children_)
    if (item.key() != name) kept.insert(item.key(), item.value());
  children_ = std::move(kept);
}

// ---- recursive accessors ----

namespace {

// Visits (prefix, module) depth first, each module once (shared submodules are not revisited).
void visit_modules(const Module& root, const std::string& prefix,
                   const std::function<void(const std::string&, const Module&)>& fn, bool include_self) {
  std::unordered_set<const Module*> seen;
  struct Frame { const Module* m; std::string prefix; };
  std::vector<Frame> stack;
  seen.insert(&root);
  if (include_self) fn(prefix, root);
  auto push_children = [&](const Module& m, const std::string& p) {
    auto kids = m.named_children();
    for (auto it = kids.items().rbegin(); it != kids.items().rend(); ++it) stack.push_back({it->second.get(), join(p, it->first)});
  };
  push_children(root, prefix);
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(f.m).second) continue;
    fn(f.prefix, *f.m);
    push_children(*f.m, f.prefix);
  }
}

}  // namespace

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> out("parameter");
  if (!recurse) {
    for (auto& item : parameters_)
      if (item.value().defined()) out.insert(item.key(), item.value());
    return out;
  }
  std::unordered_set<const TensorImpl*> seen;
  visit_modules(*this, "", [&](const std::string& prefix, const Module& m) {
    for (auto& item : m.parameters_)
      if (item.value().defined() && seen.insert(item.value().unsafe_impl()).second)
        out.insert(join(prefix, item.key()), item.value());
  }, true);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> out("buffer");
  if (!recurse) {
    for (auto& item : buffers_)
      if (item.value().defined()) out.insert(item.key(), item.value());
    return out;
  }
  std::unordered_set<const TensorImpl*> seen;
  visit_modules(*this, "", [&](const std::string& prefix, const Module& m) {
    for (auto& item : m.buffers_)
      if (item.value().defined() && seen.insert(item.value().unsafe_impl()).second)
        out.insert(join(prefix, item.key()), item.value());
  }, true);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const {
  OrderedDict<std::string, std::shared_ptr<Module>> out("submodule");
  std::unordered_set<const Module*> seen;
  for (auto& item : children_)
    if (seen.insert(item.value().get()).second) out.insert(item.key(), item.value());
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const { return named_children().values(); }

std::shared_ptr<Module> Module::shared_self(const char* op) const {
  auto self = std::const_pointer_cast<Module>(weak_from_this().lock());
  GRAFT_CHECK(self != nullptr, op, "a module owned by a std::shared_ptr (include_self = true)",
              name() + " held by value. It looks like you attempted to retrieve your top-level module as a shared_ptr",
              "hold it in a ModuleHolder or std::make_shared, or pass include_self = false");
  return self;
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& name_prefix,
                                                                        bool include_self) const {
  OrderedDict<std::string, std::shared_ptr<Module>> out("module");
  if (include_self) out.insert(name_prefix, shared_self("named_modules"));
  // Children are reached through their owning shared_ptrs, so no shared_from_this is needed.
  std::unordered_set<const Module*> seen{this};
  struct Frame { std::shared_ptr<Module> m; std::string prefix; };
  std::vector<Frame> stack;
  auto push_children = [&](const Module& m, const std::string& p) {
    auto kids = m.named_children();
    for (auto it = kids.items().rbegin(); it != kids.items().rend(); ++it) stack.push_back({it->second, join(p, it->first)});
  };
  push_children(*this, name_prefix);
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(f.m.get()).second) continue;
    out.insert(f.prefix, f.m);
    push_children(*f.m, f.prefix);
  }
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
  return named_modules("", include_self).values();
}

// ---- modes, apply, grads, dtype ----

void Module::train(bool on) {
  for (auto& item : children_) item.value()->train(on);
  is_training_ = on;
}

void Module::apply(const ModuleApplyFunction& fn) {
  visit_modules(*this, "", [&](const std::string&, const Module& m) { fn(const_cast<Module&>(m)); }, true);
}

void Module::apply(const ConstModuleApplyFunction& fn) const {
  visit_modules(*this, "", [&](const std::string&, const Module& m) { fn(m); }, true);
}

void Module::apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix) {
  visit_modules(*this, name_prefix, [&](const std::string& n, const Module& m) { fn(n, const_cast<Module&>(m)); },
                true);
}

void Module::apply(const ModulePointerApplyFunction& fn) const {
  for (auto& m : modules(true)) fn(m);
}

void Module::zero_grad(bool set_to_none) {
  for (auto& p : parameters(true)) {
    if (!p.grad().defined()) continue;
    Tensor& g = p.mutable_grad();
    if (set_to_none) {
      g = Tensor();
    } else {
      // As PyTorch: a grad with history (create_graph) is detached first, then zeroed in place.
      if (g.grad_fn()) g = g.detach();
      else g.set_requires_grad(false);
      NoGradGuard no_grad;
      g.zero_();
    }
  }
}

void Module::to(DType dtype, bool /*non_blocking*/) {
  GRAFT_CHECK(is_floating_point(dtype), "Module::to", "a floating-point dtype",
              std::string(dtype_name(dtype)), "parameters are floating point; to(kFloat64) or to(kFloat32)");
  GRAFT_CHECK(dtype == kFloat32 || dtype == kFloat64, "Module::to", "float32 or float64", dtype_name(dtype),
              "half-precision kernels do not exist yet");
  NoGradGuard no_grad;
  visit_modules(*this, "", [&](const std::string&, const Module& m) {
    for (auto& item : m.parameters_) convert_tensor(item.value(), dtype);
    for (auto& item : m.buffers_) convert_tensor(item.value(), dtype);
  }, true);
}

// to(kMeta) replaces every parameter, buffer and gradient by a meta tensor of the same shape and
// dtype (Note [Meta device]), keeping the tensors' identity (as to(dtype) does), requires_grad and
// memory category; the values are gone. Back to the CPU is an error: meta tensors have no values.
void Module::to(Device device, bool /*non_blocking*/) {
  GRAFT_CHECK(device.is_cpu() || device.is_meta(), "Module::to", "a CPU device or the meta device", device.str(),
              "graft runs on the CPU and on meta tensors so far; the CUDA device is planned");
  NoGradGuard no_grad;
  auto move = [&](const Tensor& t) {
    if (!t.defined() || t.device().type() == device.type()) return;
    GRAFT_CHECK(device.is_meta(), "Module::to", "parameters and buffers with values to copy to the CPU",
                "a meta tensor of shape " + shape_str(t.sizes()),
                "a module on meta tensors has no weights; build it again on the CPU (or load a state dict "
                "into a CPU copy)");
    set_data(t, t.detach().to(device));  // keeps the memory category
  };
  visit_modules(*this, "", [&](const std::string&, const Module& m) {
    for (auto& item : m.parameters_) {
      move(item.value());
      if (item.value().defined() && item.value().impl().autograd && item.value().grad().defined()) move(item.value().grad());
    }
    for (auto& item : m.buffers_) move(item.value());
  }, true);
}

void Module::to(Device device, DType dtype, bool non_blocking) {
  to(device, non_blocking);
  to(dtype, non_blocking);
}

// ---- state dicts ----

OrderedDict<std::string, Tensor> Module::state_dict() const {
  OrderedDict<std::string, Tensor> out("state_dict key");
  // Every name is kept, shared modules included (PyTorch's state_dict does the same).
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (auto& item : m.parameters_)
      if (item.value().defined()) out.insert(join(prefix, item.key()), item.value().detach());
    for (auto& item : m.buffers_)
      if (item.value().defined()) out.insert(join(prefix, item.key()), item.value().detach());
    for (auto& item : m.children_) walk(*item.value(), join(prefix, item.key()));
  };
  walk(*this, "");
  return out;
}

LoadStateDictResult Module::load_state_dict(const OrderedDict<std::string, Tensor>& state_dict, bool strict) {
  OrderedDict<std::string, Tensor> own = this->state_dict();
  LoadStateDictResult result;
  std::vector<std::string> shape_problems;
  for (auto& item : own) {
    const Tensor* src = state_dict.find(item.key());
    if (!src) {
      result.missing_keys.push_back(item.key());
      continue;
    }
    if (!src->defined()) {
      shape_problems.push_back("an undefined tensor for \"" + item.key() + "\"");
    } else if (!src->sizes().equals(item.value().sizes())) {
      shape_problems.push_back("size mismatch for \"" + item.key() + "\": copying a tensor of shape " +
                               shape_str(src->sizes()) + " from the state dict, the shape in the model is " +
                               shape_str(item.value().sizes()));
    }
  }
  for (auto& item : state_dict)
    if (!own.contains(item.key())) result.unexpected_keys.push_back(item.key());
  auto quoted_list = [](const std::vector<std::string>& keys) {
    std::string s;
    for (auto& k : keys) s += (s.empty() ? "\"" : ", \"") + k + "\"";
    return s;
  };
  std::vector<std::string> problems;
  if (strict && !result.missing_keys.empty())
    problems.push_back("missing key(s) in state_dict: " + quoted_list(result.missing_keys));
  if (strict && !result.unexpected_keys.empty())
    problems.push_back("unexpected key(s) in state_dict: " + quoted_list(result.unexpected_keys));
  problems.insert(problems.end(), shape_problems.begin(), shape_problems.end());
  if (!problems.empty()) {
    std::string msg = "error(s) in loading state_dict for " + name() + ":";
    for (auto& p : problems) msg += "\n\t" + p;
    msg += "\n(nothing was loaded";
    msg += strict ? "; load_state_dict(dict, /*strict=*/false) skips missing and unexpected keys)" : ")";
    throw Error("load_state_dict", msg);
  }
  NoGradGuard no_grad;
  for (auto& item : own) {
    const Tensor* src = state_dict.find(item.key());
    if (!src) continue;
    Tensor dst = item.value();  // a detached alias of the module's tensor: writes land in it
    if (src->is_alias_of(dst)) {
      if (src->is_same(dst) || (src->storage_offset() == dst.storage_offset() && src->strides().equals(dst.strides())))
        continue;
      dst.copy_(src->clone());
    } else {
      dst.copy_(*src);
    }
  }
  return result;
}

// ---- clone ----

std::shared_ptr<Module> Module::clone(const std::optional<Device>& /*device*/) const {
  throw Error("Module::clone", "clone() has not been implemented for " + name() +
                                   ": derive it from graft::nn::Cloneable<" + name() +
                                   "Impl> and implement reset() to make it cloneable");
}

namespace detail {
void copy_module_state(const Module& from, Module& to) {
  NoGradGuard no_grad;
  auto copy_dict = [&](const OrderedDict<std::string, Tensor>& src, OrderedDict<std::string, Tensor>& dst,
                       const char* what) {
    for (auto& item : src) {
      Tensor* d = dst.find(item.key());
      GRAFT_CHECK(d != nullptr && d->defined() == item.value().defined(), "Module::clone",
                  "reset() of " + from.name() + " to register " + what + " '" + item.key() + "' as the original has it",
                  d ? "a different registration" : "no such " + std::string(what),
                  "reset() must register every parameter, buffer and submodule");
      if (!item.value().defined()) continue;
      const bool rg = item.value().requires_grad();
      set_data(*d, item.value().detach().clone());
      d->set_requires_grad(rg);
    }
  };
  copy_dict(from.parameters_, to.parameters_, "parameter");
  copy_dict(from.buffers_, to.buffers_, "buffer");
  for (auto& item : from.children_) {
    auto* d = to.children_.find(item.key());
    GRAFT_CHECK(d != nullptr, "Module::clone",
                "reset() of " + from.name() + " to register submodule '" + item.key() + "'", "no such submodule",
                "reset() must register every parameter, buffer and submodule");
    const Module& dst_child = **d;
    const Module& src_child = *item.value();
    if (dst_child.parameters_.size() == src_child.parameters_.size() &&
        dst_child.children_.size() == src_child.children_.size() && typeid(dst_child) == typeid(src_child)) {
      copy_module_state(*item.value(), **d);
    } else {
      // A child whose structure reset() does not rebuild (a container): clone it whole.
      to.children_[item.key()] = item.value()->clone();
    }
  }
  to.is_training_ = from.is_training_;
}
}  // namespace detail

// ---- printing ----

namespace {
// LibTorch's operator<<: the module's own line, then its children, each on a line of its own.
void print_libtorch(std::ostream& stream, const Module& module, const std::string& indentation) {
  module.pretty_print(stream);
  const auto children = module.named_children();
  if (children.is_empty()) return;
  stream << "(\n";
  const std::string next = indentation + "  ";
  for (const auto& item : children) {
    stream << next << "(" << item.key() << "): ";
    print_libtorch(stream, *item.value(), next);
    stream << "\n";
  }
  stream << indentation << ")";
}
}  // namespace

void Module::pretty_print(std::ostream& stream) const {
  if (print_style() == PrintStyle::LibTorch) {
    stream << libtorch_repr();
    return;
  }
  const std::string extra = extra_repr();
  std::vector<std::string> lines;
  std::vector<std::string> extra_lines;
  if (!extra.empty()) {
    std::istringstream in(extra);
    for (std::string line; std::getline(in, line);) extra_lines.push_back(line);
  }
  std::vector<std::string> child_lines;
  for (auto& item : children_) {
    std::ostringstream child;
    item.value()->pretty_print(child);
    // Indent every line after the first by two spaces (PyTorch's _addindent).
    std::string s = child.str(), indented;
    for (char c : s) {
      indented += c;
      if (c == '\n') indented += "  ";
    }
    child_lines.push_back("(" + item.key() + "): " + indented);
  }
  stream << name() << "(";
  if (extra_lines.size() == 1 && child_lines.empty()) {
    stream << extra_lines[0];
  } else if (!extra_lines.empty() || !child_lines.empty()) {
    stream << "\n";
    for (auto& l : extra_lines) stream << "  " << l << "\n";
    for (auto& l : child_lines) stream << "  " << l << "\n";
  }
  stream << ")";
}

// ---- hooks (Note [Module hooks]) ----

namespace {

std::atomic<unsigned> next_module_hook_id{1};

template <class Hook>
RemovableHandle add_hook(const std::shared_ptr<void>& owner, std::vector<std::pair<unsigned, Hook>>& list,
                         Hook hook, bool prepend) {
  const unsigned id = next_module_hook_id++;
  if (prepend) list.insert(list.begin(), {id, std::move(hook)});
  else list.emplace_back(id, std::move(hook));
  // The handle holds the hook list weakly: removing after the module is gone does nothing.
  std::weak_ptr<void> weak = owner;
  auto* raw = &list;
  return RemovableHandle(id, [weak, raw, id] {
    if (auto alive = weak.lock()) std::erase_if(*raw, [id](const auto& p) { return p.first == id; });
  });
}

// The state shared by the two BackwardHookFunctionBackward nodes of one call (PyTorch's
// BackwardHook object).
struct BackwardHookState {
  std::vector<Module::FullBackwardHook> hooks;  // those registered when the call started
  std::weak_ptr<Module> owned;                  // set when a shared_ptr owns the module
  Module* unowned = nullptr;                    // otherwise
  bool input_wrapped = false;
  std::optional<TensorList> grad_outputs;       // set by the output node, cleared by the input node

  // The module, or null when it was owned by a shared_ptr and has been destroyed since.
  std::shared_ptr<Module> keep_alive() const { return owned.lock(); }
};

// The forward "op" of the identity nodes that run backward hooks (Note [Forward op of a node]).
constexpr autograd::ForwardOp kHookFunction = autograd::ForwardOp::unlisted("backward_hook_function");

Tensor identity_through(const Tensor& t, const std::shared_ptr<autograd::Node>& node) {
  Tensor out = t.detach();
  autograd::set_history(out, node);
  return out;
}

Tensor wrap_input(const Tensor& x, const std::shared_ptr<BackwardHookState>& state) {
  auto node = autograd::make_node(
      "BackwardHookFunctionBackward", kHookFunction, {&x}, [state](autograd::Node&, const Tensor& g) -> TensorList {
        // Reached without passing through the module's output (PyTorch skips the hooks too).
        if (!state->grad_outputs) return {g};
        auto alive = state->keep_alive();
        Module* module = alive ? alive.get() : state->unowned;
        TensorList grad_input{g};
        if (module) {
          for (const auto& hook : state->hooks) {
            std::optional<TensorList> out = hook(*module, grad_input, *state->grad_outputs);
            if (!out) continue;
            GRAFT_CHECK(out->size() == grad_input.size(), "register_full_backward_hook",
                        "a backward hook of " + module->name() + " returning " + std::to_string(grad_input.size()) +
                            " grad_input tensor(s)",
                        std::to_string(out->size()), "return std::nullopt to keep grad_input, or a list of its size");
            grad_input = std::move(*out);
          }
        }
        state->grad_outputs.reset();
        return {grad_input[0]};
      });
  if (!node) return x;
  state->input_wrapped = true;
  return identity_through(x, node);
}

Tensor wrap_output(const Tensor& y, const std::shared_ptr<BackwardHookState>& state) {
  auto node = autograd::make_node(
      "BackwardHookFunctionBackward", kHookFunction, {&y}, [state](autograd::Node&, const Tensor& g) -> TensorList {
        state->grad_outputs = TensorList{g};
        if (!state->input_wrapped) {
          // No input requires grad: the hooks run here, with grad_input = {undefined}.
          auto alive = state->keep_alive();
          Module* module = alive ? alive.get() : state->unowned;
          const TensorList grad_input{Tensor()};
          if (module) {
            for (const auto& hook : state->hooks) {
              std::optional<TensorList> out = hook(*module, grad_input, *state->grad_outputs);
              bool all_undefined = true;
              if (out)
                for (const auto& t : *out) all_undefined = all_undefined && !t.defined();
              GRAFT_CHECK(all_undefined, "register_full_backward_hook",
                          "std::nullopt or undefined tensors from a backward hook of " + module->name() +
                              " whose input does not require grad",
                          "a defined gradient",
                          "no gradient flows to an input that does not require grad; return std::nullopt");
            }
          }
          state->grad_outputs.reset();
        }
        return {g};
      });
  return node ? identity_through(y, node) : y;
}

}  // namespace

Module::Hooks& Module::hooks() {
  if (!hooks_.ptr) hooks_.ptr = std::make_shared<Hooks>();
  return *hooks_.ptr;
}

RemovableHandle Module::add_forward_pre_hook(ForwardPreHook hook, bool prepend) {
  GRAFT_CHECK(static_cast<bool>(hook), "register_forward_pre_hook", "a callable", "an empty std::function",
              "pass a lambda or function");
  Hooks& h = hooks();
  return add_hook(hooks_.ptr, h.forward_pre, std::move(hook), prepend);
}

RemovableHandle Module::add_forward_hook(ForwardHook hook, bool prepend) {
  GRAFT_CHECK(static_cast<bool>(hook), "register_forward_hook", "a callable", "an empty std::function",
              "pass a lambda or function");
  Hooks& h = hooks();
  return add_hook(hooks_.ptr, h.forward, std::move(hook), prepend);
}

RemovableHandle Module::add_full_backward_hook(FullBackwardHook hook, bool prepend) {
  GRAFT_CHECK(static_cast<bool>(hook), "register_full_backward_hook", "a callable", "an empty std::function",
              "pass a lambda or function");
  Hooks& h = hooks();
  return add_hook(hooks_.ptr, h.full_backward, std::move(hook), prepend);
}

Tensor Module::call_with_hooks(const Tensor& input, const std::function<Tensor(const Tensor&)>& forward) {
  // Copies of the lists: a hook may register or remove hooks, which takes effect from the next call.
  const std::shared_ptr<Hooks> held = hooks_.ptr;
  const auto pre_hooks = held->forward_pre;
  const auto forward_hooks = held->forward;
  Tensor x = input;
  for (const auto& item : pre_hooks) {
    std::optional<Tensor> r = item.second(*this, x);
    if (r && r->defined()) x = std::move(*r);
  }
  std::shared_ptr<BackwardHookState> state;
  if (!held->full_backward.empty() && GradMode::is_enabled()) {
    state = std::make_shared<BackwardHookState>();
    for (const auto& item : held->full_backward) state->hooks.push_back(item.second);
    state->owned = weak_from_this();
    if (state->owned.expired()) state->unowned = this;
    if (x.defined()) x = wrap_input(x, state);
  }
  Tensor y = forward(x);
  for (const auto& item : forward_hooks) {
    std::optional<Tensor> r = item.second(*this, x, y);
    if (r && r->defined()) y = std::move(*r);
  }
  if (state && y.defined()) y = wrap_output(y, state);
  return y;
}

std::ostream& operator<<(std::ostream& stream, const Module& module) {
  if (print_style() == PrintStyle::LibTorch) print_libtorch(stream, module, "");
  else module.pretty_print(stream);
  return stream;
}

}  // namespace graft::nn
