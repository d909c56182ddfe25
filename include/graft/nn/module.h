// graft::nn::Module: the base of every layer and model, with LibTorch's interface so that code
// ports by renaming torch:: to graft::.
//
//   struct NetImpl : graft::nn::Module {
//     NetImpl() {
//       fc1 = register_module("fc1", graft::nn::Linear(784, 64));
//       fc2 = register_module("fc2", graft::nn::Linear(64, 10));
//     }
//     graft::Tensor forward(const graft::Tensor& x) { return fc2(graft::relu(fc1(x))); }
//     graft::nn::Linear fc1{nullptr}, fc2{nullptr};
//   };
//   GRAFT_MODULE(Net);  // Net: a shared-ownership handle to a NetImpl
//
// Note [Module semantics]
// - Parameters, buffers and submodules are registered under names without dots; the recursive
//   accessors join them with dots ("features.0.weight"), in PyTorch's order: a module's own entries
//   first, then each child's, depth first. A tensor or module registered twice (weight tying) is
//   listed once by parameters()/named_modules()/..., as PyTorch does; state_dict() keeps every name.
// - An undefined tensor may be registered (Linear without bias registers "bias" as undefined, as
//   LibTorch does); it is skipped by parameters(), buffers() and state_dict().
// - name() is the class name without namespaces and without a trailing "Impl" ("Linear" for
//   graft::nn::LinearImpl, "Net" for NetImpl), so printing matches PyTorch's repr; a module may
//   pass its own name to the Module(std::string) constructor.
// - state_dict() returns detached aliases (writing to them writes the module), parameters and
//   buffers in registration order, module by module. load_state_dict() copies values into the
//   existing tensors under NoGradGuard, so handles held elsewhere (an optimiser's) stay valid.
// - to(dtype) converts floating-point parameters, buffers and gradients in place (the same tensor
//   handles see the new dtype, like LibTorch's set_data); integer buffers (counters) are kept.
//
// Note [Module hooks]
// PyTorch's forward pre-hooks, forward hooks and full backward hooks, for modules whose forward
// takes one Tensor and returns one Tensor. They run when the module is called through
// Module::call: `model(x)` on a ModuleHolder, and Sequential for each of its entries (so hooks on
// nested modules fire). Calling `impl->forward(x)` directly runs no hooks, as calling .forward()
// does in PyTorch; a forward of any other signature (several arguments, a tuple result) is called
// directly by ModuleHolder::operator(), without hooks. With no hook ever registered, call() is one
// branch and records nothing extra. During a call:
//   1. each forward pre-hook fn(module, input) runs in registration order; a returned defined
//      tensor replaces the input (std::nullopt or an undefined tensor keeps it);
//   2. with full backward hooks, grad mode on and an input that requires grad, the input is
//      passed through an identity node "BackwardHookFunctionBackward";
//   3. forward(input);
//   4. each forward hook fn(module, input, output) runs; a returned tensor replaces the output;
//   5. with full backward hooks and an output that requires grad, the output is passed through
//      another identity node "BackwardHookFunctionBackward", which becomes output.grad_fn().
// In backward, the output node stores grad_output; the input node then calls each full backward
// hook fn(module, grad_input, grad_output) in registration order (grad_input = {dL/dinput},
// grad_output = {dL/doutput}); a returned list replaces grad_input, for the next hook and for the
// gradient that flows on. When the input does not require grad, the hooks run at the output node
// with grad_input = {undefined Tensor} and must not return a defined gradient. Nested modules: the
// inner module's input gradient is computed first, so its backward hook runs before the outer's.
// The hooks of a call are those registered when it started. A node holds the module weakly when
// a shared_ptr owns it (hooks of a module destroyed before backward are skipped), by address
// otherwise. The identity outputs are views, so an in-place op on them is refused (as PyTorch
// refuses it). Every register_* returns a RemovableHandle; remove() is idempotent and harmless
// once the module is gone. Copies of a module (clone()) start without hooks.
#pragma once

#include <concepts>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/ordered_dict.h"
#include "graft/core/tensor.h"

namespace graft::nn {

template <class Contained> class ModuleHolder;
namespace detail {
// A module type, or the one a ModuleHolder holds.
template <class M, class = void>
struct ContainedOf {
  using type = M;
};
template <class M>
struct ContainedOf<M, std::void_t<typename M::ContainedType>> {
  using type = typename M::ContainedType;
};
}  // namespace detail
class Module;

namespace detail {
// Copies parameter and buffer values of `from` into `to` and recurses into children of the same
// names (the tree structure must match); used by Cloneable::clone.
void copy_module_state(const Module& from, Module& to);
}  // namespace detail

// What load_state_dict(dict, strict = false) did not find or did not use.
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

// Returned by the register_*_hook functions (the same type as Tensor::register_hook's handle).
using RemovableHandle = ::graft::HookHandle;

class Module : public std::enable_shared_from_this<Module> {
 public:
  // See Note [Module hooks]. A hook returning void is accepted too (it changes nothing).
  using ForwardPreHook = std::function<std::optional<Tensor>(Module&, const Tensor& input)>;
  using ForwardHook = std::function<std::optional<Tensor>(Module&, const Tensor& input, const Tensor& output)>;
  using FullBackwardHook =
      std::function<std::optional<TensorList>(Module&, const TensorList& grad_input, const TensorList& grad_output)>;

  using ModuleApplyFunction = std::function<void(Module&)>;
  using ConstModuleApplyFunction = std::function<void(const Module&)>;
  using NamedModuleApplyFunction = std::function<void(const std::string&, Module&)>;
  using ModulePointerApplyFunction = std::function<void(const std::shared_ptr<Module>&)>;

  Module() = default;
  explicit Module(std::string name) : name_(std::move(name)), given_name_(true) {}
  virtual ~Module() = default;
  Module(const Module&) = default;
  Module& operator=(const Module&) = default;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;

  // The class name ("Linear", "Net"), see Note [Module semantics].
  const std::string& name() const;

  // ---- registration ----
  // Registers `tensor` as a parameter (sets requires_grad) and returns the stored handle.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor);
  template <class ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, std::shared_ptr<ModuleType> module) {
    static_assert(std::is_base_of_v<Module, ModuleType>, "register_module needs a graft::nn::Module");
    register_module_impl(std::move(name), module);
    return module;
  }
  template <class ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, const ModuleHolder<ModuleType>& holder) {
    return register_module(std::move(name), holder.ptr());
  }
  // Replaces a registered child (same name) and returns the new one.
  template <class ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, std::shared_ptr<ModuleType> module) {
    replace_module_impl(name, module);
    return module;
  }
  template <class ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, const ModuleHolder<ModuleType>& holder) {
    return replace_module(name, holder.ptr());
  }
  void unregister_module(const std::string& name);

  // ---- parameters, buffers, submodules ----
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;
  // All modules of the tree, depth first. include_self needs this module to be owned by a
  // shared_ptr (a ModuleHolder, std::make_shared); otherwise a graft::Error says so.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& name_prefix = "",
                                                                  bool include_self = true) const;

  // ---- modes ----
  virtual void train(bool on = true);  // this module and every submodule
  void eval() { train(false); }
  virtual bool is_training() const noexcept { return is_training_; }
  // True when this module's forward, as configured now, mixes the samples of a batch (BatchNorm in
  // train mode normalises with the batch's statistics), so that micro-batches do not add up to the
  // big batch. optim::GradAccumulator asks every module of a model (not a type test across layers).
  virtual bool uses_batch_statistics() const noexcept { return false; }

  // fn(module) on this module and then every submodule, depth first (LibTorch's order).
  void apply(const ModuleApplyFunction& fn);
  void apply(const ConstModuleApplyFunction& fn) const;
  // fn("features.0", module); this module itself gets name_prefix ("" by default).
  void apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix = "");
  void apply(const ModulePointerApplyFunction& fn) const;

  // set_to_none: grads become undefined (their memory is released); otherwise they are zeroed.
  virtual void zero_grad(bool set_to_none = true);
  // Converts floating-point parameters, buffers and their gradients (see Note [Module semantics]).
  virtual void to(DType dtype, bool non_blocking = false);
  virtual void to(Device device, bool non_blocking = false);  // CPU only for now
  virtual void to(Device device, DType dtype, bool non_blocking = false);

  // ---- state ----
  OrderedDict<std::string, Tensor> state_dict() const;
  // strict: a missing or unexpected key is an error; a shape mismatch is one always. All
  // problems are reported together in one graft::Error naming each key and shape. Nothing is
  // copied unless every check passes.
  LoadStateDictResult load_state_dict(const OrderedDict<std::string, Tensor>& state_dict, bool strict = true);

  // A deep copy. Modules derived from graft::nn::Cloneable<Derived> implement it; others throw.
  virtual std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const;

  // ---- printing (Note [Print styles]) ----
  // The arguments shown between the parentheses: "in_features=4, out_features=3, bias=True".
  virtual std::string extra_repr() const { return ""; }
  // In the Python style (the default): writes this module and its children as a tree, following
  // PyTorch's __repr__; override to take over the whole subtree's printing. In the LibTorch style:
  // writes this module's own line only (LibTorch's pretty_print), operator<< adds the children.
  virtual void pretty_print(std::ostream& stream) const;
  // This module's own line in LibTorch's style, as LibTorch prints it with the namespace renamed:
  // "graft::nn::Linear(in_features=4, out_features=3, bias=true)". The default: for graft's own
  // modules graft::nn::Name(extra_repr() with true/false), for others the class name (LibTorch's
  // name(), e.g. "NetImpl") or the name given to the Module(std::string) constructor.
  virtual std::string libtorch_repr() const;

  // ---- hooks (Note [Module hooks]) ----
  // prepend: run before the hooks already registered instead of after them.
  template <class F>
  RemovableHandle register_forward_pre_hook(F&& hook, bool prepend = false) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, Module&, const Tensor&>>) {
      return add_forward_pre_hook(
          [h = std::forward<F>(hook)](Module& m, const Tensor& x) mutable -> std::optional<Tensor> {
            h(m, x);
            return std::nullopt;
          },
          prepend);
    } else {
      return add_forward_pre_hook(ForwardPreHook(std::forward<F>(hook)), prepend);
    }
  }
  template <class F>
  RemovableHandle register_forward_hook(F&& hook, bool prepend = false) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, Module&, const Tensor&, const Tensor&>>) {
      return add_forward_hook(
          [h = std::forward<F>(hook)](Module& m, const Tensor& x, const Tensor& y) mutable -> std::optional<Tensor> {
            h(m, x, y);
            return std::nullopt;
          },
          prepend);
    } else {
      return add_forward_hook(ForwardHook(std::forward<F>(hook)), prepend);
    }
  }
  template <class F>
  RemovableHandle register_full_backward_hook(F&& hook, bool prepend = false) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, Module&, const TensorList&, const TensorList&>>) {
      return add_full_backward_hook(
          [h = std::forward<F>(hook)](Module& m, const TensorList& gi,
                                      const TensorList& go) mutable -> std::optional<TensorList> {
            h(m, gi, go);
            return std::nullopt;
          },
          prepend);
    } else {
      return add_full_backward_hook(FullBackwardHook(std::forward<F>(hook)), prepend);
    }
  }
  // True once a hook of any kind has been registered (even if removed since).
  bool has_hooks() const noexcept { return hooks_.ptr != nullptr; }

  // Calls forward(input) with this module's hooks around it: what `model(x)` and Sequential do
  // (Note [Module hooks]). `forward` is this module's forward, e.g. [&](const Tensor& x) { return
  // impl.forward(x); }. Without hooks it is called directly.
  template <class F>
  Tensor call(const Tensor& input, F&& forward) {
    if (!hooks_.ptr) return std::forward<F>(forward)(input);
    return call_with_hooks(input, std::function<Tensor(const Tensor&)>(std::forward<F>(forward)));
  }

  // as<LinearImpl>() or, as LibTorch, as<Linear>() (a holder: its module type): nullptr when this
  // module is not one.
  template <class ModuleType> auto* as() noexcept {
    return dynamic_cast<typename detail::ContainedOf<ModuleType>::type*>(this);
  }
  template <class ModuleType> const auto* as() const noexcept {
    return dynamic_cast<const typename detail::ContainedOf<ModuleType>::type*>(this);
  }

 protected:
  // The direct entries, in registration order (undefined tensors included).
  OrderedDict<std::string, Tensor> parameters_{"parameter"};
  OrderedDict<std::string, Tensor> buffers_{"buffer"};
  OrderedDict<std::string, std::shared_ptr<Module>> children_{"submodule"};

  // Used by clone() to rebuild the registries of a copy.
  void clear_registrations() {
    parameters_.clear();
    buffers_.clear();
    children_.clear();
  }

 private:
  void check_new_name(const std::string& name, const char* what) const;
  void register_module_impl(std::string name, std::shared_ptr<Module> module);
  void replace_module_impl(const std::string& name, std::shared_ptr<Module> module);
  std::shared_ptr<Module> shared_self(const char* op) const;

  struct Hooks {
    std::vector<std::pair<unsigned, ForwardPreHook>> forward_pre;
    std::vector<std::pair<unsigned, ForwardHook>> forward;
    std::vector<std::pair<unsigned, FullBackwardHook>> full_backward;
  };
  // Owns the hooks; handles point at them weakly. Not copied: a copy starts without hooks (a
  // copy-assigned module keeps its own).
  struct HookSlot {
    std::shared_ptr<Hooks> ptr;
    HookSlot() = default;
    HookSlot(const HookSlot& /*other*/) noexcept {}
    HookSlot& operator=(const HookSlot& /*other*/) noexcept { return *this; }
    HookSlot(HookSlot&&) noexcept = default;
    HookSlot& operator=(HookSlot&&) noexcept = default;
    ~HookSlot() = default;
  };
  Hooks& hooks();
  RemovableHandle add_forward_pre_hook(ForwardPreHook hook, bool prepend);
  RemovableHandle add_forward_hook(ForwardHook hook, bool prepend);
  RemovableHandle add_full_backward_hook(FullBackwardHook hook, bool prepend);
  Tensor call_with_hooks(const Tensor& input, const std::function<Tensor(const Tensor&)>& forward);

  mutable std::optional<std::string> name_;
  bool given_name_ = false;  // name_ came from the Module(std::string) constructor
  bool is_training_ = true;
  HookSlot hooks_;

  friend void detail::copy_module_state(const Module& from, Module& to);
};

std::ostream& operator<<(std::ostream& stream, const Module& module);

// `std::cout << module` prints in the process-wide print style (Note [Print styles] in
// graft/core/print_style.h): LibTorch's form by default, PyTorch's repr under PrintStyle::Python.
// nn:: spellings of the style's names, which were nn's own before tensors followed the style too.
using graft::PrintStyle;
using graft::PrintStyleGuard;
using graft::print_style;
using graft::set_print_style;

// Cloneable<Derived>: derive from it (instead of Module) and implement reset(), which registers
// every parameter, buffer and submodule (LibTorch's pattern: the constructor calls reset()). Then
// clone() gives a deep copy: a copy-constructed Derived re-runs reset() and receives copies of the
// original's parameter and buffer values and clones of its submodules.
template <class Derived>
class Cloneable : public Module {
 public:
  using Module::Module;
  virtual void reset() = 0;

  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override {
    GRAFT_CHECK(!device || device->is_cpu(), "Module::clone", "a CPU device", device ? device->str() : "",
                "graft runs on the CPU only for now");
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    copy->clear_registrations();
    copy->reset();
    detail::copy_module_state(*this, *copy);
    return copy;
  }
};

namespace detail {
// A call `module(x)` that runs the module's hooks: one Tensor argument, forward(Tensor) -> Tensor.
template <class Impl, class... Args>
concept HookableCall = sizeof...(Args) == 1 && (std::is_same_v<std::remove_cvref_t<Args>, Tensor> && ...) &&
                       requires(Impl& impl, const Tensor& x) {
                         { impl.forward(x) } -> std::same_as<Tensor>;
                       };
}  // namespace detail

// ModuleHolder<Impl>: a shared-ownership handle, so that `graft::nn::Linear fc(784, 10);
// fc->weight; fc(x)` works and copies of the handle share one module (GRAFT_MODULE makes these).
template <class Contained>
class ModuleHolder {
 public:
  using ContainedType = Contained;

  // Default-constructs the module (when it can be); use `Name m{nullptr}` for an empty holder.
  ModuleHolder() : impl_(default_construct()) {}
  ModuleHolder(std::nullptr_t) {}  // NOLINT: an empty holder, assigned later
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}  // NOLINT
  template <class Head, class... Tail,
            class = std::enable_if_t<!(sizeof...(Tail) == 0 &&
                                       (std::is_same_v<std::decay_t<Head>, std::nullptr_t> ||
                                        std::is_base_of_v<ModuleHolder, std::decay_t<Head>> ||
                                        std::is_convertible_v<Head, std::shared_ptr<Contained>>))>>
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  explicit operator bool() const noexcept { return impl_ != nullptr; }
  bool is_empty() const noexcept { return impl_ == nullptr; }

  Contained* operator->() { return get(); }
  const Contained* operator->() const { return get(); }
  Contained& operator*() { return *get(); }
  const Contained& operator*() const { return *get(); }
  const std::shared_ptr<Contained>& ptr() const {
    check_not_empty();
    return impl_;
  }
  Contained* get() {
    check_not_empty();
    return impl_.get();
  }
  const Contained* get() const {
    check_not_empty();
    return impl_.get();
  }
  operator std::shared_ptr<Module>() const { return ptr(); }  // NOLINT

  // fc(x) calls fc->forward(x), with the module's hooks when forward takes and returns one Tensor
  // (Note [Module hooks]); other forwards are called directly.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    Contained* impl = get();
    if constexpr (detail::HookableCall<Contained, Args...>) {
      return static_cast<Module&>(*impl).call(args..., [impl](const Tensor& x) -> Tensor { return impl->forward(x); });
    } else {
      return impl->forward(std::forward<Args>(args)...);
    }
  }
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

 protected:
  std::shared_ptr<Contained> impl_;

 private:
  static std::shared_ptr<Contained> default_construct() {
    if constexpr (std::is_default_constructible_v<Contained>) {
      return std::make_shared<Contained>();
    } else {
      static_assert(std::is_default_constructible_v<Contained>,
                    "this module has no default constructor: pass its arguments, or nullptr for an empty holder");
      return nullptr;
    }
  }
  void check_not_empty() const {
    GRAFT_CHECK(impl_ != nullptr, "ModuleHolder", "a holder that owns a module",
                "an empty holder (constructed from nullptr). Accessing empty ModuleHolder",
                "assign a module first, e.g. fc = register_module(\"fc\", graft::nn::Linear(4, 3))");
  }
};

template <class Contained>
std::ostream& operator<<(std::ostream& stream, const ModuleHolder<Contained>& holder) {
  return stream << *holder;
}

}  // namespace graft::nn

// GRAFT_MODULE(Name) defines `class Name : ModuleHolder<NameImpl>`, like TORCH_MODULE.
#define GRAFT_MODULE_IMPL(Name, ImplType)                       \
  class Name : public ::graft::nn::ModuleHolder<ImplType> {    \
   public:                                                      \
    using ::graft::nn::ModuleHolder<ImplType>::ModuleHolder;    \
    using ::graft::nn::ModuleHolder<ImplType>::get;             \
  }
#define GRAFT_MODULE(Name) GRAFT_MODULE_IMPL(Name, Name##Impl)
