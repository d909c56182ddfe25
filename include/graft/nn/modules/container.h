// Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict, and Functional (a
// function as a module).
//
//   graft::nn::Sequential net(graft::nn::Linear(784, 64), graft::nn::ReLU(), graft::nn::Linear(64, 10));
//   graft::Tensor y = net->forward(x);             // or net(x)
//   graft::nn::Sequential named({{"fc", graft::nn::Linear(4, 3)}, {"act", graft::nn::Tanh()}});
//   graft::nn::ModuleList blocks(graft::nn::Linear(4, 4), graft::nn::Linear(4, 4));
//   for (const auto& m : *blocks) ...; blocks->at<graft::nn::LinearImpl>(0).weight
//   blocks[0]->as<graft::nn::LinearImpl>(); blocks->ptr<graft::nn::LinearImpl>(1)
//
// Indexing follows LibTorch's: list[i], seq[i] and dict["key"] return std::shared_ptr<Module>;
// ptr(i) the same; at<T>(i) a T& and ptr<T>(i) a std::shared_ptr<T>. A wrong T is a graft::Error,
// except ModuleList::ptr<T>(i), which returns nullptr as LibTorch's does (a dynamic_pointer_cast).
//
// Each entry of a Sequential is an AnyModule (graft/nn/modules/any.h), so a module's forward may
// have any signature, as in LibTorch: the first may take several arguments (seq->forward(a, b)), a
// module may return a std::tuple that the next one takes, and seq->forward<T>(...) names a result
// that is not a Tensor. Tensor -> Tensor entries are called directly (no type erasure) through
// Module::call, so their hooks run (Note [Module hooks] in graft/nn/module.h). Plain functions and
// lambdas Tensor(Tensor) may be pushed too (Sequential(Linear(2, 3), graft::relu)); they are wrapped
// in a Functional.
//
//   graft::nn::ParameterList params(graft::randn({2, 3}), graft::zeros({3}));   // "0", "1"
//   graft::nn::ParameterDict dict(graft::OrderedDict<std::string, graft::Tensor>{{"scale", graft::ones({4})}});
//   register_module("params", params);  // the owner's named_parameters(): "params.0", ...
//
// Fusion: Sequential runs a Linear followed by a ReLU, GELU, Sigmoid or Tanh as one op,
// nn::functional::fused_linear (Note [Fused linear + activation] in src/ops/linalg.cpp): the same
// values, one pass less each way, one graph node (FusedLinearReluBackward0 where the pair records
// AddmmBackward0 and ReluBackward0). Only exact LinearImpl and activation modules without hooks are
// fused (a hook, or a subclass, sees the pair run as two modules). set_fusion(false) turns it off,
// e.g. to compare a graph with PyTorch's node by node.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/nn/module.h"
#include "graft/nn/modules/any.h"

namespace graft::nn {

// ---- Functional: a Tensor(Tensor) function as a module (no parameters) ----
class FunctionalImpl : public Cloneable<FunctionalImpl> {
 public:
  using Function = std::function<Tensor(const Tensor&)>;
  explicit FunctionalImpl(Function function);
  // Binds arguments after the input, as LibTorch: Functional(F::leaky_relu, F::LeakyReLUFuncOptions()...).
  template <class Fn, class Arg, class... Args>
  FunctionalImpl(Fn fn, Arg arg, Args... args)
      : FunctionalImpl(Function([fn, arg, args...](const Tensor& x) -> Tensor { return fn(x, arg, args...); })) {}
  void reset() override {}
  Tensor forward(const Tensor& input) { return function_(input); }
  Tensor operator()(const Tensor& input) { return function_(input); }

 private:
  Function function_;
};
GRAFT_MODULE(Functional);

namespace detail {

template <class T> struct is_shared_ptr : std::false_type {};
template <class T> struct is_shared_ptr<std::shared_ptr<T>> : std::true_type {};

template <class D>
concept ModuleHolderType = requires { typename D::ContainedType; } &&
                           std::is_base_of_v<ModuleHolder<typename D::ContainedType>, D>;

template <class D>
concept ModuleLike = ModuleHolderType<D> || (is_shared_ptr<D>::value && std::is_base_of_v<Module, typename D::element_type>) ||
                     std::is_base_of_v<Module, D> || std::is_base_of_v<AnyModule, D>;

template <class D>
concept TensorFunction = !ModuleLike<D> && std::is_invocable_r_v<Tensor, D&, const Tensor&>;

// A holder, a shared_ptr to a module, a module value, or an AnyModule -> shared_ptr to the module
// (its own type; std::shared_ptr<Module> for an AnyModule).
template <class M>
auto module_ptr(M&& m) {
  using D = std::decay_t<M>;
  static_assert(ModuleLike<D>, "expected a module: a holder (graft::nn::Linear), a std::shared_ptr to a module, or a module value");
  if constexpr (ModuleHolderType<D>) {
    return m.ptr();
  } else if constexpr (std::is_base_of_v<AnyModule, D>) {
    return m.ptr();
  } else if constexpr (is_shared_ptr<D>::value) {
    GRAFT_CHECK(m != nullptr, "nn container", "a module", "an empty module pointer", "construct the module first");
    return std::shared_ptr<typename D::element_type>(std::forward<M>(m));
  } else {
    return std::make_shared<D>(std::forward<M>(m));
  }
}

template <class Impl>
concept HasTensorForward = requires(Impl& impl, const Tensor& x) {
  { impl.forward(x) } -> std::convertible_to<Tensor>;
};

}  // namespace detail

// One entry of a Sequential: an AnyModule (so a module's forward may have any signature, Note
// [AnyModule calls] in graft/nn/modules/any.h) that also knows its module's name and keeps the
// direct Tensor -> Tensor call of the fast path.
class SequentialEntry : public AnyModule {
 public:
  template <class M>
    requires(!std::is_same_v<std::decay_t<M>, SequentialEntry> && !std::is_same_v<std::decay_t<M>, AnyModule>)
  SequentialEntry(M&& module)  // NOLINT: implicit, so Sequential({{"fc", Linear(4, 3)}}) works
      : AnyModule(make(std::forward<M>(module))) {}
  SequentialEntry(AnyModule module) : AnyModule(std::move(module)) {  // NOLINT
    GRAFT_CHECK(!is_empty(), "Sequential::push_back", "a module", "an empty AnyModule", "construct the module first");
  }

  std::shared_ptr<Module> module() const { return ptr(); }
  // forward(x) of a Tensor -> Tensor module, through Module::call so its hooks run (Note [Module
  // hooks]); for another signature, through the AnyModule (the module must then return a Tensor).
  Tensor forward(const Tensor& x) const { return forward_tensor(x); }

 private:
  template <class M>
  static AnyModule make(M&& module) {
    using D = std::decay_t<M>;
    if constexpr (detail::TensorFunction<D>) {
      return AnyModule(std::make_shared<FunctionalImpl>(FunctionalImpl::Function(std::forward<M>(module))));
    } else {
      return AnyModule(detail::module_ptr(std::forward<M>(module)));
    }
  }
};

// LibTorch's NamedAnyModule: a {name, module} pair of Sequential's initializer list.
class NamedSequentialEntry {
 public:
  template <class M>
  NamedSequentialEntry(std::string name, M&& module) : name_(std::move(name)), entry_(std::forward<M>(module)) {}
  const std::string& name() const noexcept { return name_; }
  const SequentialEntry& module() const noexcept { return entry_; }

 private:
  std::string name_;
  SequentialEntry entry_;
};
using NamedAnyModule = NamedSequentialEntry;

// ---- Sequential ----
class SequentialImpl : public Cloneable<SequentialImpl> {
 public:
  using Iterator = std::vector<SequentialEntry>::iterator;
  using ConstIterator = std::vector<SequentialEntry>::const_iterator;

  SequentialImpl() = default;
  template <class... Ms,
            class = std::enable_if_t<!(sizeof...(Ms) == 1 && (std::is_base_of_v<SequentialImpl, std::decay_t<Ms>> && ...))>>
  explicit SequentialImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  explicit SequentialImpl(std::initializer_list<NamedSequentialEntry> named);
  // LibTorch's: the modules under the dict's keys, in its order.
  explicit SequentialImpl(OrderedDict<std::string, AnyModule>&& named);
  SequentialImpl(const SequentialImpl&) = default;

  void reset() override {}
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;

  // Appends a module (holder, shared_ptr or value) or a Tensor(Tensor) function, named by its index.
  template <class M>
  void push_back(M&& module) {
    push_back(std::to_string(entries_.size()), std::forward<M>(module));
  }
  template <class M>
  void push_back(std::string name, M&& module) {
    add(std::move(name), SequentialEntry(std::forward<M>(module)));
  }
  void extend(const SequentialImpl& other);

  void extend(const ModuleHolder<SequentialImpl>& other) { extend(*other); }
  // Appends each module of a container (holders, shared_ptrs, AnyModules).
  template <class Container>
    requires(!std::is_base_of_v<SequentialImpl, Container> &&
             !std::is_base_of_v<ModuleHolder<SequentialImpl>, Container>)
  void extend(const Container& modules) {
    for (const auto& m : modules) push_back(m);
  }

  // Runs the modules in order, each one's result the next one's argument; an empty Sequential
  // returns its input. Tensor -> Tensor modules take the fast path (fusion, no AnyValues).
  Tensor forward(const Tensor& input);
  // LibTorch's forward<ReturnType>(inputs...): the inputs go to the first module, whose forward may
  // take several arguments; a module returning something else than a Tensor (a std::tuple) hands it
  // to the next as its one argument. The last result must be a ReturnType (a graft::Error says
  // which type it is otherwise). An empty Sequential cannot be called this way.
  template <class ReturnType = Tensor, class... Inputs>
  ReturnType forward(Inputs&&... inputs) {
    if constexpr (sizeof...(Inputs) == 1 && (std::is_same_v<std::remove_cvref_t<Inputs>, Tensor> && ...)) {
      if constexpr (std::is_same_v<ReturnType, Tensor>) {
        return forward(static_cast<const Tensor&>(inputs)...);
      } else {
        check_callable();
        return result<ReturnType>(run(0, AnyValue(static_cast<const Tensor&>(inputs)...)));
      }
    } else {
      check_callable();
      return result<ReturnType>(run(1, entries_.front().any_forward(std::forward<Inputs>(inputs)...)));
    }
  }

  // Whether forward fuses Linear + activation pairs (see the top of this file); on by default.
  void set_fusion(bool enabled) noexcept { fusion_ = enabled; }
  bool fusion() const noexcept { return fusion_; }

  size_t size() const noexcept { return entries_.size(); }
  bool is_empty() const noexcept { return entries_.empty(); }
  std::shared_ptr<Module> ptr(size_t index) const;
  template <class T>
  std::shared_ptr<T> ptr(size_t index) const {
    return checked_cast<T>(ptr(index), index);
  }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  template <class T>
  T& at(size_t index) const {
    return *ptr<T>(index);
  }
  const std::vector<SequentialEntry>& entries() const { return entries_; }
  // Iterates the entries, each an AnyModule (LibTorch's iteration).
  ConstIterator begin() const { return entries_.begin(); }
  ConstIterator end() const { return entries_.end(); }

 private:
  void add(std::string name, SequentialEntry entry);
  // Runs entries [from, size()) on `value` (the fast path while it holds a Tensor).
  AnyValue run(size_t from, AnyValue value);
  void check_callable() const;
  [[noreturn]] static void throw_bad_result(const std::type_info& held, const std::type_info& wanted);
  template <class T>
  static T result(AnyValue&& value) {
    if (T* p = value.try_get<T>()) return std::move(*p);
    throw_bad_result(value.type_info(), typeid(T));
  }
  template <class T>
  static std::shared_ptr<T> checked_cast(const std::shared_ptr<Module>& m, size_t index) {
    auto p = std::dynamic_pointer_cast<T>(m);
    GRAFT_CHECK(p != nullptr, "Sequential::at", "a module of the requested type at index " + std::to_string(index),
                "a " + m->name(), "check the index, or the type asked for (Attempted to cast module)");
    return p;
  }
  std::vector<SequentialEntry> entries_;
  bool fusion_ = true;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  using ModuleHolder<SequentialImpl>::get;
  Sequential() : ModuleHolder<SequentialImpl>() {}
  Sequential(std::initializer_list<NamedSequentialEntry> named)  // NOLINT
      : ModuleHolder<SequentialImpl>(std::make_shared<SequentialImpl>(named)) {}
};

// ---- ModuleList: modules of any kind, registered as "0", "1", ... ----
class ModuleListImpl : public Cloneable<ModuleListImpl> {
 public:
  using Iterator = std::vector<std::shared_ptr<Module>>::iterator;
  using ConstIterator = std::vector<std::shared_ptr<Module>>::const_iterator;

  ModuleListImpl() = default;
  template <class... Ms,
            class = std::enable_if_t<!(sizeof...(Ms) == 1 && (std::is_base_of_v<ModuleListImpl, std::decay_t<Ms>> && ...))>>
  explicit ModuleListImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  ModuleListImpl(const ModuleListImpl&) = default;

  void reset() override {}
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;

  // Appends a module: a holder, a std::shared_ptr to a module, a module value, or an AnyModule.
  template <class M>
  void push_back(M&& module) {
    append(detail::module_ptr(std::forward<M>(module)));
  }
  // Inserts before `index` (0 <= index <= size()); the later modules are renumbered.
  template <class M>
  void insert(size_t index, M&& module) {
    insert_ptr(index, detail::module_ptr(std::forward<M>(module)));
  }
  // Appends each module of a container (a ModuleList, a Sequential, a std::vector of pointers...).
  template <class Container>
  void extend(const Container& modules) {
    for (const auto& m : modules) push_back(m);
  }
  void extend(const ModuleListImpl& other) {
    const std::vector<std::shared_ptr<Module>> more = other.modules_;  // copied: `other` may be this list
    for (const auto& m : more) append(m);
  }

  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  // LibTorch's: list[i] is the module as a std::shared_ptr<Module> (list[i]->as<Linear>()).
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  std::shared_ptr<Module> ptr(size_t index) const;
  // nullptr when the module at `index` is not a T (LibTorch's dynamic_pointer_cast); at<T> throws.
  template <class T>
  std::shared_ptr<T> ptr(size_t index) const {
    return std::dynamic_pointer_cast<T>(ptr(index));
  }
  template <class T>
  T& at(size_t index) const {
    auto p = ptr<T>(index);
    GRAFT_CHECK(p != nullptr, "ModuleList::at", "a module of the requested type at index " + std::to_string(index),
                "a " + ptr(index)->name(), "check the index, or the type asked for (Attempted to cast module)");
    return *p;
  }
  ConstIterator begin() const { return modules_.begin(); }
  ConstIterator end() const { return modules_.end(); }

 private:
  void append(std::shared_ptr<Module> module);
  void insert_ptr(size_t index, std::shared_ptr<Module> module);
  std::vector<std::shared_ptr<Module>> modules_;
};
GRAFT_MODULE(ModuleList);

// ---- ModuleDict: modules by name, in insertion order ----
class ModuleDictImpl : public Cloneable<ModuleDictImpl> {
 public:
  using Iterator = OrderedDict<std::string, std::shared_ptr<Module>>::Iterator;
  using ConstIterator = OrderedDict<std::string, std::shared_ptr<Module>>::ConstIterator;

  ModuleDictImpl() = default;
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  explicit ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules);
  ModuleDictImpl(const ModuleDictImpl&) = default;

  void reset() override {}
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;

  // Adds, or replaces the module under `key`; returns the module.
  template <class M>
  auto insert(const std::string& key, M&& module) {
    auto p = detail::module_ptr(std::forward<M>(module));
    insert_ptr(key, p);
    return p;
  }
  // Adds or replaces each entry, in order.
  void update(const ModuleDictImpl& other);
  void update(const ModuleHolder<ModuleDictImpl>& other) { update(*other); }
  void update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  // Any container of items with key() and value() (an OrderedDict<std::string, std::shared_ptr<Module>>).
  template <class Container>
    requires(!std::is_base_of_v<ModuleDictImpl, Container> &&
             !std::is_base_of_v<ModuleHolder<ModuleDictImpl>, Container>)
  void update(const Container& items) {
    for (const auto& item : items) insert(item.key(), item.value());
  }
  std::shared_ptr<Module> pop(const std::string& key);
  void clear();

  size_t size() const noexcept { return children_.size(); }
  bool empty() const noexcept { return children_.empty(); }
  bool is_empty() const noexcept { return children_.empty(); }
  bool contains(const std::string& key) const { return children_.contains(key); }
  std::vector<std::string> keys() const { return children_.keys(); }
  std::vector<std::shared_ptr<Module>> values() const { return children_.values(); }
  // LibTorch's: {key, module} pairs, in order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> items() const {
    return {children_.items().begin(), children_.items().end()};
  }
  ConstIterator begin() const { return children_.begin(); }
  ConstIterator end() const { return children_.end(); }

  std::shared_ptr<Module> operator[](const std::string& key) const;
  template <class T>
  T& at(const std::string& key) const {
    auto p = std::dynamic_pointer_cast<T>((*this)[key]);
    GRAFT_CHECK(p != nullptr, "ModuleDict::at", "a module of the requested type under '" + key + "'",
                "a " + (*this)[key]->name(), "check the key, or the type asked for (Attempted to cast module)");
    return *p;
  }

 private:
  void insert_ptr(const std::string& key, std::shared_ptr<Module> module);
};
GRAFT_MODULE(ModuleDict);

// ---- ParameterList: parameters registered as "0", "1", ... ----
// An owner that registers it as "params" lists them as "params.0", "params.1" (PyTorch's names).
// Each parameter keeps its requires_grad (LibTorch's append).
class ParameterListImpl : public Cloneable<ParameterListImpl> {
 public:
  using Iterator = OrderedDict<std::string, Tensor>::Iterator;
  using ConstIterator = OrderedDict<std::string, Tensor>::ConstIterator;

  ParameterListImpl() = default;
  template <class... Ts>
    requires(sizeof...(Ts) > 0 && (std::is_convertible_v<Ts, Tensor> && ...))
  explicit ParameterListImpl(Ts&&... params) {
    (append(Tensor(std::forward<Ts>(params))), ...);
  }

  void reset() override {}
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  std::string extra_repr() const override;

  void append(const Tensor& param);
  // The key is dropped: the parameter is appended under the next index (as LibTorch).
  void append(const OrderedDict<std::string, Tensor>::Item& item) { append(item.value()); }
  template <class Container>
  void extend(const Container& params) {
    for (const auto& p : params) append(p);
  }
  // Inserts before `index` (0 <= index <= size()); the later parameters are renumbered.
  void insert(size_t index, const Tensor& param);
  // Removes and returns the parameter at `index`; the later ones are renumbered.
  Tensor pop(size_t index);
  void clear() { parameters_.clear(); }

  Tensor& at(size_t index);
  const Tensor& at(size_t index) const;
  Tensor& operator[](size_t index) { return at(index); }
  const Tensor& operator[](size_t index) const { return at(index); }
  size_t size() const noexcept { return parameters_.size(); }
  bool is_empty() const noexcept { return parameters_.is_empty(); }
  // Iterates OrderedDict items: item.key() is the index as a string, item.value() the parameter.
  Iterator begin() { return parameters_.begin(); }
  Iterator end() { return parameters_.end(); }
  ConstIterator begin() const { return parameters_.begin(); }
  ConstIterator end() const { return parameters_.end(); }

 private:
  void renumber(std::vector<Tensor> params);
};
GRAFT_MODULE(ParameterList);

// ---- ParameterDict: parameters by key, in insertion order ----
// An owner that registers it as "dict" lists them as "dict.<key>". Keys follow the parameter name
// rules (non-empty, no dots). insert() of a present key is an error, as LibTorch's; update()
// overwrites present keys and appends new ones, as PyTorch's.
class ParameterDictImpl : public Cloneable<ParameterDictImpl> {
 public:
  using Iterator = OrderedDict<std::string, Tensor>::Iterator;
  using ConstIterator = OrderedDict<std::string, Tensor>::ConstIterator;

  ParameterDictImpl() = default;
  explicit ParameterDictImpl(const OrderedDict<std::string, Tensor>& params);

  void reset() override {}
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  std::string extra_repr() const override;

  Tensor& insert(std::string key, Tensor param);
  Tensor pop(const std::string& key);
  template <class Container>
  void update(const Container& params) {
    for (const auto& item : params) insert_or_assign(item.key(), item.value());
  }
  void clear() { parameters_.clear(); }

  bool contains(const std::string& key) const noexcept { return parameters_.contains(key); }
  Tensor& get(const std::string& key) { return parameters_[key]; }
  const Tensor& get(const std::string& key) const { return parameters_[key]; }
  Tensor& operator[](const std::string& key) { return parameters_[key]; }
  const Tensor& operator[](const std::string& key) const { return parameters_[key]; }
  std::vector<std::string> keys() const { return parameters_.keys(); }
  std::vector<Tensor> values() const { return parameters_.values(); }
  const std::vector<OrderedDict<std::string, Tensor>::Item>& items() const noexcept { return parameters_.items(); }
  size_t size() const noexcept { return parameters_.size(); }
  bool empty() const noexcept { return parameters_.is_empty(); }
  bool is_empty() const noexcept { return parameters_.is_empty(); }
  Iterator begin() { return parameters_.begin(); }
  Iterator end() { return parameters_.end(); }
  ConstIterator begin() const { return parameters_.begin(); }
  ConstIterator end() const { return parameters_.end(); }

 private:
  void insert_or_assign(const std::string& key, const Tensor& param);
};
GRAFT_MODULE(ParameterDict);

}  // namespace graft::nn
