// Sequential, ModuleList, ModuleDict, Functional.
#include "graft/nn/modules/container.h"

#include <typeinfo>

#include "graft/nn/modules/activation.h"
#include "graft/nn/modules/linear.h"

namespace graft::nn {

namespace {
void check_index(size_t index, size_t size, const char* op) {
  GRAFT_CHECK(index < size, op, "an index below the size " + std::to_string(size), std::to_string(index),
              size == 0 ? "the container is empty" : "indices run from 0 to size() - 1");
}
}  // namespace

// ---- Functional ----

FunctionalImpl::FunctionalImpl(Function function) : function_(std::move(function)) {
  GRAFT_CHECK(static_cast<bool>(function_), "Functional", "a callable", "an empty std::function",
              "pass a lambda or function");
}

// ---- Sequential ----

SequentialImpl::SequentialImpl(std::initializer_list<NamedSequentialEntry> named) {
  for (const auto& n : named) add(n.name, n.entry);
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
    if (fusion_ && i + 1 < entries_.size()) {
      if (const auto act = fused_activation(*entries_[i].module(), *entries_[i + 1].module())) {
        const auto& linear = static_cast<const LinearImpl&>(*entries_[i].module());
        x = functional::fused_linear(x, linear.weight, linear.bias, *act);
        ++i;
        continue;
      }
    }
    x = entries_[i].forward(x);
  }
  return x;
}

std::shared_ptr<Module> SequentialImpl::ptr(size_t index) const {
  check_index(index, entries_.size(), "Sequential::operator[]");
  return entries_[index].module();
}

std::shared_ptr<Module> SequentialImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<SequentialImpl>();
  const auto names = children_.keys();
  for (size_t i = 0; i < entries_.size(); ++i)
    copy->add(names[i], entries_[i].rebind(entries_[i].module()->clone(device)));
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
              std::to_string(index), "pass an index in [0, size()]; use push_back to append");
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
  GRAFT_CHECK(m != nullptr, "ModuleDict", "one of the keys [" + known + "]", "'" + key + "'",
              "check the key against keys(), or use contains() first");
  return *m;
}

std::shared_ptr<Module> ModuleDictImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& item : children_) copy->insert_ptr(item.key(), item.value()->clone(device));
  if (!is_training()) copy->train(false);
  return copy;
}

}  // namespace graft::nn
