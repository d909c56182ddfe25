// OrderedDict: name -> value in insertion order, the container LibTorch returns from
// named_parameters(), state_dict() and friends. Lookup by key is a linear scan for small dicts and
// a hash index once it grows, so both tiny modules and big state dicts stay cheap.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graft/core/error.h"

namespace graft {

template <class Key, class Value>
class OrderedDict {
 public:
  struct Item {
    Key first;  // LibTorch spells these key() / value(); pair-like access is kept too
    Value second;
    const Key& key() const { return first; }
    Value& value() { return second; }
    const Value& value() const { return second; }
  };

  OrderedDict() = default;
  explicit OrderedDict(std::string key_description) : key_description_(std::move(key_description)) {}

  // Inserts; a key that is already present is an error (use insert_or_assign to overwrite).
  Value& insert(Key key, Value value) {
    GRAFT_CHECK(!contains(key), "OrderedDict::insert", "a new " + key_description_,
                key_description_ + " '" + key_string(key) + "' which is already present",
                "use a distinct name");
    index_.emplace(key, items_.size());
    items_.push_back({std::move(key), std::move(value)});
    return items_.back().second;
  }
  Value& insert_or_assign(Key key, Value value) {
    if (auto* v = find(key)) return *v = std::move(value);
    return insert(std::move(key), std::move(value));
  }

  Value* find(const Key& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  const Value* find(const Key& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  bool contains(const Key& key) const { return index_.count(key) != 0; }
  Value& operator[](const Key& key) {
    Value* v = find(key);
    GRAFT_CHECK(v != nullptr, "OrderedDict", "a known " + key_description_,
                "'" + key_string(key) + "'", "check the name with .keys()");
    return *v;
  }
  const Value& operator[](const Key& key) const { return const_cast<OrderedDict&>(*this)[key]; }

  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  bool empty() const { return items_.empty(); }
  void clear() {
    items_.clear();
    index_.clear();
  }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  const std::vector<Item>& items() const { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> k;
    for (auto& i : items_) k.push_back(i.first);
    return k;
  }
  std::vector<Value> values() const {
    std::vector<Value> v;
    for (auto& i : items_) v.push_back(i.second);
    return v;
  }

 private:
  static std::string key_string(const Key& k) {
    if constexpr (std::is_convertible_v<Key, std::string>) return k;
    else return std::to_string(k);
  }
  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
  std::string key_description_ = "key";
};

}  // namespace graft
