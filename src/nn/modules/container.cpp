// Sequential, ModuleList, ModuleDict, Functional.
#include "graft/nn/modules/container.h"

#include <typeinfo>

#include "graft/autograd/grad_mode.h"

#include "graft/nn/modules/activation.h"
#include "graft/nn/modules/linear.h"

namespace graft::nn {

namespace {
void check_index(size_t index, size_t size, const char* op) {
  GRAFT_CHECK(index < size, op, "an index below the size " + std::to_string(size), std::to_string(index),
              size == 0 ? "Index out of range: the container is empty"
                        : "Index out of range: indices run from 0 to size() - 1");
}
}  // namespace

// ---- Functional ----

FunctionalImpl::FunctionalImpl(Function function) : function_(std::move(function)) {
  GRAFT_CHECK(static_cast<bool>(function_), "Functional", "a callable", "an empty std::function",
              "pass a lambda or function");
}

// ---- Sequential ----

SequentialImpl::SequentialImpl(std::initializer_list<NamedSequentialEntry> named) {
  for (const auto& n : named) add(n.name(), n.module());
}

SequentialImpl::SequentialImpl(OrderedDict<std::string, AnyModule>&& named) {
  for (auto& item : named) add(item.key(), SequentialEntry(std::move(item.value())));
}

void SequentialImpl::add(std::string name, SequentialEntry entry) {
  register_module(std::move(name), entry.module());
  entries_.push_back(std::move(entry));
}

void SequentialImpl::extend(const SequentialImpl& other) {
  // Copied first: `other` may be this Sequential.
  const std::vector<SequentialEntry> more = other.entries_;
  for (const auto& e : more) add(std::to_string(entries_.size()), e);
}

namespace {
// The activation `next` fuses into a preceding Linear as, if any: exact module types only (a
// subclass may override forward), and no hooks on either (they must see two calls).
std::optional<functional::FusedActivation> fused_activation(const Module& first, const Module& next) {
  if (typeid(first) != typeid(LinearImpl) || first.has_hooks() || next.has_hooks()) return std::nullopt;
  if (typeid(next) == typeid(ReLUImpl)) return functional::FusedActivation::ReLU;
  if (typeid(next) == typeid(SigmoidImpl)) return functional::FusedActivation::Sigmoid;
  if (typeid(next) == typeid(TanhImpl)) return functional::FusedActivation::Tanh;
  if (typeid(next) == typeid(GELUImpl))
    return static_cast<const GELUImpl&>(next).options.approximate() == "tanh" ? functional::FusedActivation::GELUTanh
                                                                                : functional::FusedActivation::GELU;
  return std::nullopt;
}
}  // namespace

Tensor SequentialImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (!entries_[i].tensor_forward()) {
      // A module of another signature: on through AnyValues from here.
      AnyValue out = run(i, AnyValue(std::move(x)));
      return result<Tensor>(std::move(out));
    }
    if (fusion_ && i + 1 < entries_.size()) {
      if (const auto act = fused_activation(*entries_[i].module(), *entries_[i + 1].module())) {
        const auto& linear = static_cast<const LinearImpl&>(*entries_[i].module());
        x = functional::fused_linear(x, linear.weight, linear.bias, *act);
        ++i;
        continue;
      }
    }
    x = entries_[i].forward_tensor(x);
  }
  return x;
}

AnyValue SequentialImpl::run(size_t from, AnyValue value) {
  for (size_t i = from; i < entries_.size(); ++i) {
    const SequentialEntry& e = entries_[i];
    const Tensor* x = value.try_get<Tensor>();
    if (x && e.tensor_forward()) {
      if (fusion_ && i + 1 < entries_.size() && entries_[i + 1].tensor_forward()) {
        if (const auto act = fused_activation(*e.module(), *entries_[i + 1].module())) {
          const auto& linear = static_cast<const LinearImpl&>(*e.module());
          value = AnyValue(functional::fused_linear(*x, linear.weight, linear.bias, *act));
          ++i;
          continue;
        }
      }
      value = AnyValue(e.forward_tensor(*x));
    } else {
      value = e.any_forward(std::move(value));
    }
  }
  return value;
}

void SequentialImpl::check_callable() const {
  GRAFT_CHECK(!entries_.empty(), "Sequential::forward", "a Sequential with at least one module",
              "an empty one. Cannot call forward() on an empty Sequential",
              "push_back a module first (forward(const Tensor&) of an empty Sequential returns its input)");
}

void SequentialImpl::throw_bad_result(const std::type_info& held, const std::type_info& wanted) {
  throw Error("Sequential::forward", "the last module to return " + detail::type_name(wanted),
              "a result of type " + detail::type_name(held),
              "name the result type: seq->forward<" + detail::type_name(held) + ">(...)");
}

std::shared_ptr<Module> SequentialImpl::ptr(size_t index) const {
  check_index(index, entries_.size(), "Sequential::operator[]");
  return entries_[index].module();
}

std::shared_ptr<Module> SequentialImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<SequentialImpl>();
  const auto names = children_.keys();
  for (size_t i = 0; i < entries_.size(); ++i) copy->add(names[i], SequentialEntry(entries_[i].clone(device)));
  copy->set_fusion(fusion_);
  if (!is_training()) copy->train(false);
  return copy;
}

// ---- ModuleList ----

void ModuleListImpl::append(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleListImpl::insert_ptr(size_t index, std::shared_ptr<Module> module) {
  GRAFT_CHECK(index <= modules_.size(), "ModuleList::insert", "an index at most the size " + std::to_string(modules_.size()),
              std::to_string(index), "Index out of range: pass an index in [0, size()]; use push_back to append");
  modules_.insert(modules_.begin() + static_cast<std::ptrdiff_t>(index), std::move(module));
  // Re-register under the shifted indices.
  children_.clear();
  for (size_t i = 0; i < modules_.size(); ++i) register_module(std::to_string(i), modules_[i]);
}

std::shared_ptr<Module> ModuleListImpl::ptr(size_t index) const {
  check_index(index, modules_.size(), "ModuleList::operator[]");
  return modules_[index];
}

std::shared_ptr<Module> ModuleListImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleListImpl>();
  for (const auto& m : modules_) copy->append(m->clone(device));
  if (!is_training()) copy->train(false);
  return copy;
}

// ---- ModuleDict ----

ModuleDictImpl::ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  update(modules);
}

ModuleDictImpl::ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules) {
  for (const auto& item : modules) insert_ptr(item.key(), item.value());
}

void ModuleDictImpl::insert_ptr(const std::string& key, std::shared_ptr<Module> module) {
  if (children_.contains(key)) replace_module(key, std::move(module));
  else register_module(key, std::move(module));
}

void ModuleDictImpl::update(const ModuleDictImpl& other) {
  const auto items = other.children_.items();  // copied: `other` may be this dict
  for (const auto& item : items) insert_ptr(item.key(), item.value());
}

void ModuleDictImpl::update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  for (const auto& [key, module] : modules) insert_ptr(key, module);
}

std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key) {
  auto m = (*this)[key];
  unregister_module(key);
  return m;
}

void ModuleDictImpl::clear() { children_.clear(); }

std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  const auto* m = children_.find(key);
  std::string known;
  if (!m)
    for (const auto& k : children_.keys()) known += (known.empty() ? "" : ", ") + k;
  GRAFT_CHECK(m != nullptr, "ModuleDict", "one of the keys [" + known + "]",
              "'" + key + "'. Key '" + key + "' is not defined",
              "check the key against keys(), or use contains() first");
  return *m;
}

std::shared_ptr<Module> ModuleDictImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& item : children_) copy->insert_ptr(item.key(), item.value()->clone(device));
  if (!is_training()) copy->train(false);
  return copy;
}

// ---- ParameterList ----

void ParameterListImpl::append(const Tensor& param) {
  register_parameter(std::to_string(parameters_.size()), param, param.defined() && param.requires_grad());
}

void ParameterListImpl::renumber(std::vector<Tensor> params) {
  parameters_.clear();
  for (auto& p : params) append(p);
}

void ParameterListImpl::insert(size_t index, const Tensor& param) {
  GRAFT_CHECK(index <= parameters_.size(), "ParameterList::insert",
              "an index at most the size " + std::to_string(parameters_.size()), std::to_string(index),
              "pass an index in [0, size()]; use append to add at the end");
  std::vector<Tensor> params = parameters_.values();
  params.insert(params.begin() + static_cast<std::ptrdiff_t>(index), param);
  renumber(std::move(params));
}

Tensor ParameterListImpl::pop(size_t index) {
  check_index(index, parameters_.size(), "ParameterList::pop");
  std::vector<Tensor> params = parameters_.values();
  Tensor out = params[index];
  params.erase(params.begin() + static_cast<std::ptrdiff_t>(index));
  renumber(std::move(params));
  return out;
}

Tensor& ParameterListImpl::at(size_t index) {
  check_index(index, parameters_.size(), "ParameterList::at");
  return parameters_[index].value();
}

const Tensor& ParameterListImpl::at(size_t index) const {
  check_index(index, parameters_.size(), "ParameterList::at");
  return parameters_[index].value();
}

namespace {
// A copy of each parameter (values, requires_grad), for the clone of a parameter container.
OrderedDict<std::string, Tensor> copied_parameters(const OrderedDict<std::string, Tensor>& params) {
  NoGradGuard no_grad;
  OrderedDict<std::string, Tensor> out;
  for (const auto& item : params) {
    Tensor c = item.value().detach().clone();
    if (item.value().requires_grad()) c.set_requires_grad(true);
    out.insert(item.key(), c);
  }
  return out;
}

// PyTorch's line for one parameter: "(0): Parameter containing: [torch.float32 of size 2x3]".
std::string parameter_line(const std::string& key, const Tensor& p, bool dict) {
  std::string size;
  for (int64_t d = 0; d < p.dim(); ++d) {
    if (d) size += 'x';
    size += std::to_string(p.size(d));
  }
  // ParameterDict shows Tensor.type() ("torch.FloatTensor"), ParameterList the dtype ("torch.float32").
  const std::string type =
      dict ? std::string(dtype_info(p.dtype()).tensor_type) : std::string("torch.") + dtype_name(p.dtype());
  return "  (" + key + "): Parameter containing: [" + type + " of size " + size + "]";
}

std::string parameter_lines(const OrderedDict<std::string, Tensor>& params, bool dict) {
  std::string out;
  for (const auto& item : params) {
    if (!item.value().defined()) continue;
    if (!out.empty()) out += '\n';
    out += parameter_line(item.key(), item.value(), dict);
  }
  return out;
}
}  // namespace

std::shared_ptr<Module> ParameterListImpl::clone(const std::optional<Device>& device) const {
  GRAFT_CHECK(!device || device->is_cpu(), "Module::clone", "a CPU device", device ? device->str() : "",
              "graft runs on the CPU only for now");
  auto copy = std::make_shared<ParameterListImpl>();
  for (const auto& item : copied_parameters(parameters_)) copy->append(item.value());
  if (!is_training()) copy->train(false);
  return copy;
}

std::string ParameterListImpl::extra_repr() const { return parameter_lines(parameters_, false); }

// ---- ParameterDict ----

ParameterDictImpl::ParameterDictImpl(const OrderedDict<std::string, Tensor>& params) {
  for (const auto& item : params) insert(item.key(), item.value());
}

Tensor& ParameterDictImpl::insert(std::string key, Tensor param) {
  const bool rg = param.defined() && param.requires_grad();
  return register_parameter(std::move(key), std::move(param), rg);
}

void ParameterDictImpl::insert_or_assign(const std::string& key, const Tensor& param) {
  if (!parameters_.contains(key)) {
    insert(key, param);
    return;
  }
  GRAFT_CHECK(!param.defined() || param.is_leaf(), "ParameterDict::update", "a leaf tensor for parameter '" + key + "'",
              "a tensor computed by an op", "pass a leaf, e.g. t.detach()");
  parameters_[key] = param;
}

Tensor ParameterDictImpl::pop(const std::string& key) { return parameters_.pop(key); }

std::shared_ptr<Module> ParameterDictImpl::clone(const std::optional<Device>& device) const {
  GRAFT_CHECK(!device || device->is_cpu(), "Module::clone", "a CPU device", device ? device->str() : "",
              "graft runs on the CPU only for now");
  auto copy = std::make_shared<ParameterDictImpl>(copied_parameters(parameters_));
  if (!is_training()) copy->train(false);
  return copy;
}

std::string ParameterDictImpl::extra_repr() const { return parameter_lines(parameters_, true); }

}  // namespace graft::nn
