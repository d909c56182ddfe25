// Sequential, ModuleList, ModuleDict, Functional.
#include "graft/nn/modules/container.h"

namespace graft::nn {

namespace {
void check_index(size_t index, size_t size, const char* op) {
  GRAFT_CHECK(index < size, op, "an index below the size " + std::to_string(size), std::to_string(index),
              size == 0 ? "the container is empty" : "indices run from 0 to size() - 1");
}
}  // namespace

// ---- Functional ----

FunctionalImpl::FunctionalImpl(Function function) : function_(std::move(function)) {
  GRAFT_CHECK(static_cast<bool>(function_), "Functional", "a callable", "an empty std::function", "");
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

Tensor SequentialImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& e : entries_) x = e.forward(x);
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
              std::to_string(index), "");
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
  GRAFT_CHECK(m != nullptr, "ModuleDict", "one of the keys [" + known + "]", "'" + key + "'", "");
  return *m;
}

std::shared_ptr<Module> ModuleDictImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& item : children_) copy->insert_ptr(item.key(), item.value()->clone(device));
  if (!is_training()) copy->train(false);
  return copy;
}

}  // namespace graft::nn
