// IValue: one value of a few kinds, as LibTorch's c10::IValue holds them: none, tensor, double,
// int, bool, string, the typed lists of ints, doubles and tensors, and the generic containers a
// pickled file holds (graft/io/pickle.h): tuples, lists and dicts of IValues. graft uses it where
// LibTorch does: AutogradContext::saved_data of a custom autograd Function
// (graft/autograd/function.h), and graft::pickle_load / pickle_save. graft has no TorchScript, so
// there are no objects, futures or custom classes here (docs/porting.md).
//
//   graft::impl::GenericDict d(graft::AnyType::get(), graft::AnyType::get());
//   d.insert("weight", w);                                   // insertion order is kept
//   graft::impl::GenericList l(graft::AnyType::get());
//   l.push_back(1); l.push_back("two");
//   graft::IValue v = graft::ivalue::Tuple::create({d, l});  // v.isTuple()
//   v.toTupleRef().elements()[1].toList().get(1).toStringRef() == "two"
//
// As in LibTorch, the accessors are strict: toDouble() of an int is an error, not a conversion;
// toScalar() takes any number. Lists and dicts are handles, as in LibTorch: copying one shares its
// elements (copy() makes an independent one); a Tuple is immutable and held by intrusive_ptr
// (graft's intrusive_ptr is std::shared_ptr under LibTorch's name).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/scalar.h"
#include "graft/core/tensor.h"

namespace graft {

// LibTorch's c10::intrusive_ptr / make_intrusive, as graft spells shared ownership.
template <class T>
using intrusive_ptr = std::shared_ptr<T>;
template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return std::make_shared<T>(std::forward<Args>(args)...);
}

class IValue;
namespace ivalue {
struct Tuple;
}
namespace detail {
struct ListImpl;
struct DictImpl;
}  // namespace detail
template <class T>
class List;
template <class Key, class Value>
class Dict;
namespace impl {
using GenericList = List<IValue>;
using GenericDict = Dict<IValue, IValue>;
}  // namespace impl

class IValue {
 public:
  IValue() = default;  // None
  IValue(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT: implicit, as in LibTorch
  // Every arithmetic type: bool stays bool, integers become int64, floating types double.
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  IValue(T x) {  // NOLINT
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      bool_ = x;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      int_ = static_cast<int64_t>(x);
    } else {
      kind_ = Kind::Double;
      double_ = static_cast<double>(x);
    }
  }
  IValue(const Scalar& s);  // NOLINT
  IValue(std::string s) : kind_(Kind::String), string_(std::move(s)) {}  // NOLINT
  IValue(const char* s) : kind_(Kind::String), string_(s) {}  // NOLINT
  IValue(std::vector<int64_t> v) : kind_(Kind::IntList), ints_(std::move(v)) {}  // NOLINT
  IValue(std::vector<double> v) : kind_(Kind::DoubleList), doubles_(std::move(v)) {}  // NOLINT
  IValue(std::vector<Tensor> v) : kind_(Kind::TensorList), tensors_(std::move(v)) {}  // NOLINT
  IValue(intrusive_ptr<ivalue::Tuple> t);  // NOLINT
  IValue(const impl::GenericList& l);  // NOLINT
  IValue(const impl::GenericDict& d);  // NOLINT

  bool isNone() const { return kind_ == Kind::None; }
  bool isTensor() const { return kind_ == Kind::Tensor; }
  bool isDouble() const { return kind_ == Kind::Double; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isString() const { return kind_ == Kind::String; }
  bool isIntList() const { return kind_ == Kind::IntList; }
  bool isDoubleList() const { return kind_ == Kind::DoubleList; }
  bool isTensorList() const { return kind_ == Kind::TensorList; }
  bool isScalar() const { return isDouble() || isInt() || isBool(); }
  bool isTuple() const { return kind_ == Kind::Tuple; }
  // Any list: a generic one, or one of the typed lists above (as in LibTorch, where those are
  // lists too).
  bool isList() const { return kind_ == Kind::GenericList || isIntList() || isDoubleList() || isTensorList(); }
  bool isGenericDict() const { return kind_ == Kind::GenericDict; }

  // Each throws graft::Error naming the kind it holds when it holds another.
  const Tensor& toTensor() const;
  double toDouble() const;
  int64_t toInt() const;
  bool toBool() const;
  const std::string& toStringRef() const;
  // The typed lists, or a generic list whose every element is of that kind.
  std::vector<int64_t> toIntVector() const;
  std::vector<double> toDoubleVector() const;
  std::vector<Tensor> toTensorVector() const;
  Scalar toScalar() const;
  intrusive_ptr<ivalue::Tuple> toTuple() const;
  ivalue::Tuple& toTupleRef() const;
  // A generic list: the list itself (a handle sharing its elements) or, for a typed list, a new
  // generic list of its elements.
  impl::GenericList toList() const;
  // The elements of a generic list, in place (LibTorch returns an ArrayRef over them).
  const std::vector<IValue>& toListRef() const;
  impl::GenericDict toGenericDict() const;

  // "None", "Tensor", "Double", "Int", "Bool", "String", "IntList", "DoubleList", "TensorList",
  // "Tuple", "GenericList", "GenericDict" (LibTorch's tagKind()).
  std::string tagKind() const;

  // graft: LibTorch's IValue::is: the same object (tensors, containers) or the same value
  // (numbers, strings, None).
  bool is(const IValue& rhs) const;

 private:
  // One member per kind rather than a std::variant: GCC 12 reports a variant holding strings and
  // vectors as "maybe uninitialized" when it is moved at -O1 (the sanitizer build), a known false
  // positive; an IValue is small user data, so the few unused members cost nothing that matters.
  enum class Kind { None, Tensor, Double, Int, Bool, String, IntList, DoubleList, TensorList, Tuple, GenericList, GenericDict };
  Kind kind_ = Kind::None;
  Tensor tensor_;
  double double_ = 0;
  int64_t int_ = 0;
  bool bool_ = false;
  std::string string_;
  std::vector<int64_t> ints_;
  std::vector<double> doubles_;
  std::vector<Tensor> tensors_;
  std::shared_ptr<ivalue::Tuple> tuple_;
  std::shared_ptr<detail::ListImpl> list_;
  std::shared_ptr<detail::DictImpl> dict_;
};

// Writes a readable form: 3, 2.5, True, None, 'text', a tensor as operator<< prints it,
// [1, 2], (1, 'x'), {'k': 1}.
std::ostream& operator<<(std::ostream& os, const IValue& v);

// The element types of generic containers (LibTorch's c10::Type, reduced to what a container
// checks): a list or dict built with AnyType takes any IValue; one built with IntType only ints,
// and so on. The error for a wrong element names both.
class Type {
 public:
  enum class Kind { Any, Tensor, Int, Float, Bool, String, None };
  explicit Type(Kind kind) : kind_(kind) {}
  Kind kind() const { return kind_; }
  std::string str() const;  // "Any", "Tensor", "int", "float", "bool", "str", "NoneType"
  std::string annotation_str() const { return str(); }
  bool accepts(const IValue& v) const;

 private:
  Kind kind_;
};
using TypePtr = std::shared_ptr<const Type>;
struct AnyType {
  static TypePtr get();
};
struct TensorType {
  static TypePtr get();
};
struct IntType {
  static TypePtr get();
};
struct FloatType {
  static TypePtr get();
};
struct BoolType {
  static TypePtr get();
};
struct StringType {
  static TypePtr get();
};
struct NoneType {
  static TypePtr get();
};

namespace ivalue {
// A fixed sequence of values (Python's tuple).
struct Tuple {
  explicit Tuple(std::vector<IValue> elements) : elements_(std::move(elements)) {}
  static intrusive_ptr<Tuple> create(std::vector<IValue> elements) {
    return make_intrusive<Tuple>(std::move(elements));
  }
  template <class... Args, std::enable_if_t<(std::is_constructible_v<IValue, Args> && ...), int> = 0>
  static intrusive_ptr<Tuple> create(Args&&... args) {
    return create(std::vector<IValue>{IValue(std::forward<Args>(args))...});
  }
  const std::vector<IValue>& elements() const { return elements_; }
  size_t size() const { return elements_.size(); }

 private:
  std::vector<IValue> elements_;
};
}  // namespace ivalue

namespace detail {
struct ListImpl {
  std::vector<IValue> elements;
  TypePtr element_type;
};
}  // namespace detail

// A list of IValues (LibTorch's c10::List<IValue>, c10::impl::GenericList). Copies share the
// elements; copy() does not.
template <>
class List<IValue> {
 public:
  using value_type = IValue;
  using size_type = size_t;
  using iterator = std::vector<IValue>::const_iterator;
  using const_iterator = iterator;

  List() : List(AnyType::get()) {}
  explicit List(TypePtr element_type);
  explicit List(std::shared_ptr<detail::ListImpl> impl) : impl_(std::move(impl)) {}

  size_t size() const { return impl_->elements.size(); }
  bool empty() const { return impl_->elements.empty(); }
  IValue get(size_t pos) const;  // bounds-checked
  // list[i] reads element i (it converts to IValue) and `list[i] = v` sets it, as LibTorch's
  // ListElementReference does.
  class ElementReference {
   public:
    ElementReference(const List& list, size_t pos) : list_(list), pos_(pos) {}
    operator IValue() const { return list_.get(pos_); }  // NOLINT: implicit, as in LibTorch
    const ElementReference& operator=(IValue value) const {
      list_.set(pos_, std::move(value));
      return *this;
    }
    const ElementReference& operator=(const ElementReference& other) const { return *this = IValue(other); }
    ElementReference(const ElementReference&) = default;

   private:
    const List& list_;
    size_t pos_;
  };
  ElementReference operator[](size_t pos) const { return ElementReference(*this, pos); }
  void set(size_t pos, IValue value) const;
  void push_back(IValue value) const;
  template <class... Args>
  void emplace_back(Args&&... args) const {
    push_back(IValue(std::forward<Args>(args)...));
  }
  void reserve(size_t n) const { impl_->elements.reserve(n); }
  void clear() const { impl_->elements.clear(); }
  void pop_back() const;
  iterator begin() const { return impl_->elements.begin(); }
  iterator end() const { return impl_->elements.end(); }
  std::vector<IValue> vec() const { return impl_->elements; }
  List copy() const;
  bool is(const List& rhs) const { return impl_ == rhs.impl_; }
  TypePtr elementType() const { return impl_->element_type; }
  size_t use_count() const { return static_cast<size_t>(impl_.use_count()); }
  const std::shared_ptr<detail::ListImpl>& impl() const { return impl_; }  // graft

 private:
  std::shared_ptr<detail::ListImpl> impl_;
};

namespace detail {
// One (key, value) entry of a Dict; iterating a Dict yields these (LibTorch's DictEntryRef).
class DictEntry {
 public:
  DictEntry(IValue key, IValue value) : key_(std::move(key)), value_(std::move(value)) {}
  const IValue& key() const { return key_; }
  const IValue& value() const { return value_; }

 private:
  friend struct DictImpl;
  template <class K, class V>
  friend class graft::Dict;
  IValue key_;
  IValue value_;
};
struct DictImpl;
}  // namespace detail

// A dict of IValues in insertion order (LibTorch's c10::Dict<IValue, IValue>,
// c10::impl::GenericDict). Keys are strings, ints, doubles, bools or tensors (by identity), as in
// LibTorch. Copies share the entries; copy() does not.
template <>
class Dict<IValue, IValue> {
 public:
  using key_type = IValue;
  using mapped_type = IValue;
  using size_type = size_t;
  using iterator = std::vector<detail::DictEntry>::const_iterator;

  Dict() : Dict(AnyType::get(), AnyType::get()) {}
  Dict(TypePtr key_type, TypePtr value_type);
  explicit Dict(std::shared_ptr<detail::DictImpl> impl) : impl_(std::move(impl)) {}

  size_t size() const;
  bool empty() const { return size() == 0; }
  iterator begin() const;
  iterator end() const;
  // Adds (key, value) when key is absent; returns where the key's entry is and whether it was
  // added (the existing value is kept otherwise), as std::unordered_map does.
  std::pair<iterator, bool> insert(IValue key, IValue value) const;
  std::pair<iterator, bool> insert_or_assign(IValue key, IValue value) const;
  IValue at(const IValue& key) const;  // graft::Error when absent
  iterator find(const IValue& key) const;  // end() when absent
  bool contains(const IValue& key) const;
  size_t erase(const IValue& key) const;  // how many were erased (0 or 1)
  void erase(iterator it) const;          // the entry at `it` (an iterator of this dict)
  void clear() const;
  void reserve(size_t n) const;
  Dict copy() const;
  bool is(const Dict& rhs) const { return impl_ == rhs.impl_; }
  TypePtr keyType() const;
  TypePtr valueType() const;
  const std::shared_ptr<detail::DictImpl>& impl() const { return impl_; }  // graft

 private:
  std::shared_ptr<detail::DictImpl> impl_;
};

}  // namespace graft
