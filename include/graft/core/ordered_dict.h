// OrderedDict: name -> value in insertion order, the container LibTorch returns from
// named_parameters(), state_dict() and friends, with LibTorch's API:
//
//   graft::OrderedDict<std::string, int> d{{"a", 1}, {"b", 2}};
//   d["a"]; d[0].key(); d.front().value(); d.back()->...; d.insert("c", 3);  // a duplicate key throws
//   d.update(other); d.erase("a"); int b = d.pop("b"); d.find("x") == nullptr; d.contains("c");
//   for (const auto& item : d) item.key(), item.value(), *item, item->member, item.pair();
//
// Lookup by key goes through a hash index (key -> position); erase and pop shift the later items
// and re-number them, O(size), as LibTorch's does.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graft/core/error.h"

namespace graft {

template <class Key, class Value>
class OrderedDict {
 public:
  // A key and its value. LibTorch spells the accessors key() / value() / pair(); the pair's
  // first / second stay reachable too (Item is a std::pair underneath).
  class Item : public std::pair<Key, Value> {
   public:
    Item(Key key, Value value) : std::pair<Key, Value>(std::move(key), std::move(value)) {}
    const Key& key() const noexcept { return this->first; }
    Value& value() noexcept { return this->second; }
    const Value& value() const noexcept { return this->second; }
    Value& operator*() noexcept { return this->second; }
    const Value& operator*() const noexcept { return this->second; }
    Value* operator->() noexcept { return &this->second; }
    const Value* operator->() const noexcept { return &this->second; }
    const std::pair<Key, Value>& pair() const noexcept { return *this; }
  };
  using Iterator = typename std::vector<Item>::iterator;
  using ConstIterator = typename std::vector<Item>::const_iterator;

  // key_description names the keys in error messages ("parameter 'w' is not defined"). The default
  // constructor is not explicit, so that `return {};` makes an empty dict.
  OrderedDict() = default;
  explicit OrderedDict(std::string key_description) : key_description_(std::move(key_description)) {}
  // From {key, value} pairs, in order; a repeated key throws, as insert does.
  OrderedDict(std::initializer_list<Item> items) {
    reserve(items.size());
    for (const auto& item : items) insert(item.key(), item.value());
  }
  OrderedDict(const OrderedDict&) = default;
  OrderedDict& operator=(const OrderedDict&) = default;
  OrderedDict(OrderedDict&&) = default;
  OrderedDict& operator=(OrderedDict&&) = default;
  ~OrderedDict() = default;

  const std::string& key_description() const noexcept { return key_description_; }

  // ---- by position ----
  Item& front() { return items_[check_not_empty("front")]; }
  const Item& front() const { return items_[check_not_empty("front")]; }
  Item& back() { return items_[check_not_empty("back") + items_.size() - 1]; }
  const Item& back() const { return items_[check_not_empty("back") + items_.size() - 1]; }
  Item& operator[](size_t index) { return items_[check_index(index)]; }
  const Item& operator[](size_t index) const { return items_[check_index(index)]; }

  // ---- by key ----
  // The key must be present (a graft::Error names it and the known keys otherwise).
  Value& operator[](const Key& key) { return *checked_find(key); }
  const Value& operator[](const Key& key) const { return *const_cast<OrderedDict&>(*this).checked_find(key); }
  Value* find(const Key& key) noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  const Value* find(const Key& key) const noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  bool contains(const Key& key) const noexcept { return index_.count(key) != 0; }

  // ---- changes ----
  // Appends; a key that is already present is an error (update / insert_or_assign overwrite).
  template <class K, class V>
  Value& insert(K&& key, V&& value) {
    // The got carries LibTorch's phrase ("Key 'a' already defined"), which its tests look for.
    GRAFT_CHECK(!contains(key), "OrderedDict::insert", "a new " + key_description_,
                key_description_ + " '" + key_string(key) + "' already defined",
                "use a distinct key, or update() / insert_or_assign() to overwrite");
    items_.emplace_back(Key(std::forward<K>(key)), Value(std::forward<V>(value)));
    index_.emplace(items_.back().key(), items_.size() - 1);
    return items_.back().second;
  }
  Value& insert(Key key, Value&& value) { return insert<Key, Value>(std::move(key), std::move(value)); }
  Value& insert_or_assign(Key key, Value value) {
    if (auto* v = find(key)) return *v = std::move(value);
    return insert(std::move(key), std::move(value));
  }
  // Each item of `other`, in its order: overwrites the value of a present key, appends a new one.
  void update(const OrderedDict& other) {
    if (&other == this) return;
    reserve(size() + other.size());
    for (const auto& item : other) insert_or_assign(item.key(), item.value());
  }
  void update(OrderedDict&& other) {
    if (&other == this) return;
    reserve(size() + other.size());
    for (auto& item : other) insert_or_assign(item.key(), std::move(item.second));
  }
  // Removes the key (which must be present); later items move up one place.
  void erase(const Key& key) { (void)pop(key); }
  // Removes the key and returns its value.
  Value pop(const Key& key) {
    auto it = index_.find(key);
    GRAFT_CHECK(it != index_.end(), "OrderedDict::pop", "a " + key_description_ + " that is present",
                "'" + key_string(key) + "'", known_keys_hint());
    const size_t at = it->second;
    Value value = std::move(items_[at].second);
    index_.erase(it);
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(at));
    for (size_t i = at; i < items_.size(); ++i) index_[items_[i].key()] = i;
    return value;
  }
  void clear() {
    items_.clear();
    index_.clear();
  }
  void reserve(size_t capacity) {
    items_.reserve(capacity);
    index_.reserve(capacity);
  }

  // ---- views ----
  size_t size() const noexcept { return items_.size(); }
  bool is_empty() const noexcept { return items_.empty(); }
  bool empty() const noexcept { return items_.empty(); }
  Iterator begin() { return items_.begin(); }
  Iterator end() { return items_.end(); }
  ConstIterator begin() const { return items_.begin(); }
  ConstIterator end() const { return items_.end(); }
  const std::vector<Item>& items() const noexcept { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> k;
    k.reserve(items_.size());
    for (const auto& i : items_) k.push_back(i.first);
    return k;
  }
  std::vector<Value> values() const {
    std::vector<Value> v;
    v.reserve(items_.size());
    for (const auto& i : items_) v.push_back(i.second);
    return v;
  }

  // Equal when the same keys hold equal values in the same order (key_description aside).
  friend bool operator==(const OrderedDict& a, const OrderedDict& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!(a.items_[i].key() == b.items_[i].key()) || !(a.items_[i].value() == b.items_[i].value())) return false;
    return true;
  }

 private:
  static std::string key_string(const Key& k) {
    if constexpr (std::is_convertible_v<const Key&, std::string>) {
      return k;
    } else {
      std::ostringstream s;
      s << k;
      return s.str();
    }
  }
  std::string known_keys_hint() const {
    std::string known;
    for (size_t i = 0; i < items_.size() && i < 20; ++i) {
      if (i) known += ", ";
      known += key_string(items_[i].key());
    }
    if (items_.size() > 20) known += ", ...";
    return items_.empty() ? "the dict is empty" : "the keys are: " + known;
  }
  Value* checked_find(const Key& key) {
    Value* v = find(key);
    if (v == nullptr) [[unlikely]] {
      // Built by appending: g++ 12 warns (-Wrestrict, wrongly) on "literal" + std::string&& here.
      const std::string name = key_string(key);
      std::string got = "'";
      got.append(name).append("'. ").append(key_description_).append(" '").append(name).append("' is not defined");
      std::string expected = "a ";
      expected.append(key_description_).append(" that is defined");
      throw Error("OrderedDict::operator[]", expected, got, known_keys_hint());
    }
    return v;
  }
  // Returns 0 so that the callers can index with it.
  size_t check_not_empty(const char* what) const {
    // "Called front() on an empty OrderedDict" is LibTorch's sentence, which its tests look for.
    GRAFT_CHECK(!items_.empty(), std::string("OrderedDict::") + what, "a non-empty OrderedDict",
                std::string("an empty one. Called ") + what + "() on an empty OrderedDict",
                "insert an item first, or test is_empty()");
    return 0;
  }
  size_t check_index(size_t index) const {
    GRAFT_CHECK(index < items_.size(), "OrderedDict::operator[]", "an index below the size " + std::to_string(size()),
                std::to_string(index), items_.empty() ? "the dict is empty" : "indices run from 0 to size() - 1");
    return index;
  }

  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
  std::string key_description_ = "Key";
};

}  // namespace graft
