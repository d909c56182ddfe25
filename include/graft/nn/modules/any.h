// AnyValue and AnyModule: LibTorch's type-erased value and module, so that a container can hold
// modules whose forward has any signature.
//
//   graft::nn::AnyModule any(graft::nn::Linear(3, 4));
//   graft::Tensor y = any.forward(x);                        // forward(...) returns a Tensor
//   auto pair = other.forward<std::tuple<Tensor, Tensor>>(a, b);  // forward<T>(...) anything else
//   graft::nn::AnyValue v = any.any_forward(x);              // the result, type-erased
//   any.get<graft::nn::LinearImpl>().weight; any.get<graft::nn::Linear>(); any.ptr(); any.clone();
//
// Note [AnyModule calls]
// The module's forward must be a single, non-template member function (its signature is read
// from &M::forward); a module without one but callable as forward(const Tensor&) -> Tensor (e.g.
// Sequential, whose forward is a template) is held as Tensor -> Tensor. A call checks the argument
// count and each argument's type against that signature and throws a graft::Error naming the
// module and the expected signature on a mismatch. Types must match exactly after decay, as in
// LibTorch (an int is not converted to a double). A Tensor -> Tensor forward is called through
// Module::call, so the module's hooks run (Note [Module hooks] in graft/nn/module.h), as `module(x)`.
// Copies of an AnyModule share the module; clone() deep-copies it (Module::clone).
#pragma once

#include <any>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "graft/nn/module.h"

namespace graft::nn {

namespace detail {
// A readable name for a type: "graft::Tensor", "double", "std::tuple<graft::Tensor, graft::Tensor>".
std::string type_name(const std::type_info& type);
[[noreturn]] void throw_any_value_cast(const std::type_info& held, const std::type_info& wanted);
}  // namespace detail

// ---- AnyValue: one value of any copyable type ----
class AnyValue {
 public:
  template <class T>
  requires(!std::is_same_v<std::remove_cvref_t<T>, AnyValue>) explicit AnyValue(T&& value)
      : value_(std::decay_t<T>(std::forward<T>(value))) {}
  AnyValue(const AnyValue&) = default;
  AnyValue& operator=(const AnyValue&) = default;
  AnyValue(AnyValue&&) noexcept = default;
  AnyValue& operator=(AnyValue&&) noexcept = default;
  ~AnyValue() = default;

  // A pointer to the value when it is a T, else nullptr.
  template <class T> T* try_get() noexcept { return std::any_cast<T>(&value_); }
  template <class T> const T* try_get() const noexcept { return std::any_cast<T>(&value_); }
  // The value as a T; another type is a graft::Error naming both.
  template <class T> T get() const {
    if (const T* p = try_get<T>()) return *p;
    detail::throw_any_value_cast(value_.type(), typeid(T));
  }
  const std::type_info& type_info() const noexcept { return value_.type(); }

 private:
  std::any value_;
};

namespace detail {

// The signature of M's forward: &M::forward when it names one member function, else
// Tensor(const Tensor&) for a module callable that way (Note [AnyModule calls]).
template <class F> struct ForwardTraits;
template <class C, class R, class... A> struct ForwardTraits<R (C::*)(A...)> {
  using Return = R;
  using Args = std::tuple<A...>;
};
template <class C, class R, class... A> struct ForwardTraits<R (C::*)(A...) const> : ForwardTraits<R (C::*)(A...)> {};

template <class M>
concept HasNamedForward = requires {
  &M::forward;
};

template <class M> struct ModuleSignature {
  using Return = Tensor;
  using Args = std::tuple<const Tensor&>;
};
template <class M>
requires HasNamedForward<M>
struct ModuleSignature<M> : ForwardTraits<decltype(&M::forward)> {
};

// "Linear::forward(graft::Tensor const&) -> graft::Tensor", for error messages.
template <class R, class... A> std::string signature_string(const std::string& module, std::tuple<A...>* /*tag*/) {
  std::string s = module + "::forward(";
  bool first = true;
  auto add = [&](const std::type_info& t) {
    if (!first) s += ", ";
    s += type_name(t);
    first = false;
  };
  (add(typeid(std::remove_cvref_t<A>)), ...);
  s += ") -> ";
  s += type_name(typeid(R));
  return s;
}

// The type-erased module behind an AnyModule.
struct AnyModulePlaceholder {
  virtual ~AnyModulePlaceholder() = default;
  virtual AnyValue forward(std::vector<AnyValue>&& arguments) = 0;
  virtual std::shared_ptr<Module> ptr() const = 0;
  virtual const std::type_info& type_info() const = 0;
  virtual std::unique_ptr<AnyModulePlaceholder> copy() const = 0;
  virtual std::unique_ptr<AnyModulePlaceholder> clone_module(const std::optional<Device>& device) const = 0;
  // Whether forward is Tensor(Tensor); then forward_tensor calls it without AnyValues.
  virtual bool tensor_forward() const noexcept = 0;
  virtual Tensor forward_tensor(const Tensor& input) = 0;
};

void check_any_arity(const std::string& signature, size_t expected, size_t got);
[[noreturn]] void throw_any_argument(const std::string& signature, size_t index, const std::type_info& expected,
                                     const std::type_info& got);

template <class M> class AnyModuleHolder final : public AnyModulePlaceholder {
  using Signature = ModuleSignature<M>;
  using Return = typename Signature::Return;
  using Args = typename Signature::Args;
  static constexpr size_t kArity = std::tuple_size_v<Args>;
  static_assert(
      HasNamedForward<M> || requires(M & m, const Tensor& x) { m.forward(x); },
      "a module held by an AnyModule (or a Sequential) needs one forward member function (not overloaded "
      "or a template), or a forward callable with one Tensor");
  static_assert(!std::is_void_v<Return>, "a module held by an AnyModule (or a Sequential) must return a value");
  static constexpr bool kTensorToTensor = kArity == 1 && std::is_same_v<std::remove_cvref_t<Return>, Tensor> &&
                                          std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, Args>>, Tensor>;

 public:
  explicit AnyModuleHolder(std::shared_ptr<M> module) : module_(std::move(module)) {}

  AnyValue forward(std::vector<AnyValue>&& arguments) override {
    check_any_arity(signature(), kArity, arguments.size());
    return call(arguments, std::make_index_sequence<kArity>{});
  }
  std::shared_ptr<Module> ptr() const override { return module_; }
  const std::type_info& type_info() const override { return typeid(M); }
  std::unique_ptr<AnyModulePlaceholder> copy() const override { return std::make_unique<AnyModuleHolder>(module_); }
  std::unique_ptr<AnyModulePlaceholder> clone_module(const std::optional<Device>& device) const override {
    return std::make_unique<AnyModuleHolder>(std::static_pointer_cast<M>(module_->clone(device)));
  }
  bool tensor_forward() const noexcept override { return kTensorToTensor; }
  Tensor forward_tensor(const Tensor& input) override {
    if constexpr (kTensorToTensor) {
      M* m = module_.get();
      // Through Module::call, so that the hooks run as for `module(x)`.
      return static_cast<Module*>(m)->call(input, [m](const Tensor& in) -> Tensor { return m->forward(in); });
    } else {
      std::vector<AnyValue> arguments;
      arguments.emplace_back(input);
      return forward(std::move(arguments)).template get<Tensor>();
    }
  }

 private:
  std::string signature() const { return signature_string<Return>(module_->name(), static_cast<Args*>(nullptr)); }

  // How argument I is handed to forward: as an lvalue for a reference parameter, moved otherwise
  // (a by-value or rvalue-reference parameter).
  template <size_t I> using Param = std::tuple_element_t<I, Args>;
  template <size_t I>
  using Pass = std::conditional_t<std::is_lvalue_reference_v<Param<I>>, Param<I>, std::remove_cvref_t<Param<I>>&&>;

  // Argument I as the type forward takes (a reference into the AnyValue, which outlives the call).
  template <size_t I> std::remove_cvref_t<std::tuple_element_t<I, Args>>& argument(std::vector<AnyValue>& arguments) {
    using D = std::remove_cvref_t<std::tuple_element_t<I, Args>>;
    if (D* p = arguments[I].template try_get<D>()) return *p;
    throw_any_argument(signature(), I, typeid(D), arguments[I].type_info());
  }

  template <size_t... I> AnyValue call(std::vector<AnyValue>& arguments, std::index_sequence<I...> /*unused*/) {
    if constexpr (kTensorToTensor) {
      return AnyValue(forward_tensor(argument<0>(arguments)));
    } else {
      M* m = module_.get();
      (void)arguments;  // unused when forward takes no argument
      return AnyValue(m->forward(static_cast<Pass<I>>(argument<I>(arguments))...));
    }
  }

  std::shared_ptr<M> module_;
};

template <class D>
concept HolderType = requires {
  typename D::ContainedType;
}
&&std::is_base_of_v<ModuleHolder<typename D::ContainedType>, D>;

}  // namespace detail

// ---- AnyModule ----
class AnyModule {
 public:
  AnyModule() = default;  // empty
  template <class M>
  requires std::is_base_of_v<Module, M>
  explicit AnyModule(std::shared_ptr<M> module) : content_(make(std::move(module))) {}
  template <class M>
  requires(std::is_base_of_v<Module, std::remove_cvref_t<M>> &&
           !std::is_same_v<std::remove_cvref_t<M>, AnyModule>) explicit AnyModule(M&& module)
      : AnyModule(std::make_shared<std::remove_cvref_t<M>>(std::forward<M>(module))) {}
  template <class C> explicit AnyModule(const ModuleHolder<C>& holder) : AnyModule(holder.ptr()) {}

  AnyModule(const AnyModule& other) : content_(other.content_ ? other.content_->copy() : nullptr) {}
  AnyModule& operator=(const AnyModule& other) {
    if (this != &other) content_ = other.content_ ? other.content_->copy() : nullptr;
    return *this;
  }
  AnyModule(AnyModule&&) noexcept = default;
  AnyModule& operator=(AnyModule&&) noexcept = default;
  virtual ~AnyModule() = default;

  template <class M>
  requires std::is_base_of_v<Module, M> AnyModule& operator=(std::shared_ptr<M> module) {
    content_ = make(std::move(module));
    return *this;
  }

  // A deep copy of the module (Module::clone); an empty AnyModule clones to an empty one.
  AnyModule clone(const std::optional<Device>& device = std::nullopt) const {
    AnyModule copy;
    if (content_) copy.content_ = content_->clone_module(device);
    return copy;
  }

  // Calls forward with the arguments (Note [AnyModule calls]) and returns its result, type-erased.
  template <class... Args> AnyValue any_forward(Args&&... arguments) const {
    check_not_empty("forward");
    std::vector<AnyValue> values;
    values.reserve(sizeof...(Args));
    (values.emplace_back(std::forward<Args>(arguments)), ...);
    return content_->forward(std::move(values));
  }
  // The result as a ReturnType (a Tensor unless named); another type is a graft::Error.
  template <class ReturnType = Tensor, class... Args> ReturnType forward(Args&&... arguments) const {
    return any_forward(std::forward<Args>(arguments)...).template get<ReturnType>();
  }

  // The module as its own type: get<LinearImpl>() a reference, get<Linear>() a holder.
  template <class T>
  requires std::is_base_of_v<Module, T> T& get() const { return *checked_ptr<T>("AnyModule::get"); }
  template <class T>
  requires detail::HolderType<T> T get()
  const { return T(checked_ptr<typename T::ContainedType>("AnyModule::get")); }
  std::shared_ptr<Module> ptr() const {
    check_not_empty("ptr");
    return content_->ptr();
  }
  // The module as a shared_ptr to its own type; another type is a graft::Error, as LibTorch's
  // ptr<T>() ("Attempted to cast module of type ... to type ...").
  template <class T> std::shared_ptr<T> ptr() const { return checked_ptr<T>("AnyModule::ptr"); }
  const std::type_info& type_info() const {
    check_not_empty("type_info");
    return content_->type_info();
  }
  bool is_empty() const noexcept { return content_ == nullptr; }

  // graft's own (Sequential's fast path): whether forward is Tensor(Tensor), and a call of it
  // without AnyValues (a Tensor result is required otherwise).
  bool tensor_forward() const noexcept { return content_ && content_->tensor_forward(); }
  Tensor forward_tensor(const Tensor& input) const {
    check_not_empty("forward");
    return content_->forward_tensor(input);
  }

 private:
  template <class M> static std::unique_ptr<detail::AnyModulePlaceholder> make(std::shared_ptr<M> module) {
    GRAFT_CHECK(module != nullptr, "AnyModule", "a module", "an empty module pointer", "construct the module first");
    return std::make_unique<detail::AnyModuleHolder<M>>(std::move(module));
  }
  template <class T> std::shared_ptr<T> checked_ptr(const char* op) const {
    auto p = std::dynamic_pointer_cast<T>(ptr());
    if (!p) throw_bad_get(op, typeid(T));
    return p;
  }
  void check_not_empty(const char* what) const;
  [[noreturn]] void throw_bad_get(const char* op, const std::type_info& wanted) const;

  std::unique_ptr<detail::AnyModulePlaceholder> content_;
};

}  // namespace graft::nn
