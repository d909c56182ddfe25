// IValue (graft/core/ivalue.h).
#include "graft/core/ivalue.h"

#include <cstring>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "graft/core/error.h"

namespace graft {

namespace {
[[noreturn]] void wrong_kind(const char* accessor, const char* expected, const IValue& v) {
  throw Error(std::string("IValue::") + accessor, expected, "an IValue holding " + v.tagKind(),
              "read it with the accessor of the kind that was stored (isDouble(), isInt(), ... tell which)");
}
}  // namespace

IValue::IValue(const Scalar& s) {
  if (s.is_bool()) {
    kind_ = Kind::Bool;
    bool_ = s.to_bool();
  } else if (s.is_integral()) {
    kind_ = Kind::Int;
    int_ = s.to_long();
  } else {
    kind_ = Kind::Double;
    double_ = s.to_double();
  }
}

const Tensor& IValue::toTensor() const {
  if (!isTensor()) wrong_kind("toTensor", "a Tensor", *this);
  return tensor_;
}
double IValue::toDouble() const {
  if (!isDouble()) wrong_kind("toDouble", "a Double", *this);
  return double_;
}
int64_t IValue::toInt() const {
  if (!isInt()) wrong_kind("toInt", "an Int", *this);
  return int_;
}
bool IValue::toBool() const {
  if (!isBool()) wrong_kind("toBool", "a Bool", *this);
  return bool_;
}
const std::string& IValue::toStringRef() const {
  if (!isString()) wrong_kind("toStringRef", "a String", *this);
  return string_;
}
namespace {
// The elements of a generic list as T, when every one is of T's kind; otherwise the error of
// `accessor`.
template <class T, class Is, class To>
std::vector<T> generic_as(const IValue& v, const std::vector<IValue>& elements, const char* accessor,
                          const char* expected, Is is, To to) {
  std::vector<T> out;
  out.reserve(elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    if (!is(elements[i])) {
      throw Error(std::string("IValue::") + accessor, expected,
                  "a GenericList whose element " + std::to_string(i) + " is " + elements[i].tagKind(),
                  "walk the list with toList() and read each element with the accessor of its kind");
    }
    out.push_back(to(elements[i]));
  }
  (void)v;
  return out;
}
}  // namespace

std::vector<int64_t> IValue::toIntVector() const {
  if (kind_ == Kind::GenericList) {
    return generic_as<int64_t>(*this, list_->elements, "toIntVector", "a list of Ints",
                               [](const IValue& e) { return e.isInt(); }, [](const IValue& e) { return e.toInt(); });
  }
  if (!isIntList()) wrong_kind("toIntVector", "an IntList", *this);
  return ints_;
}
std::vector<double> IValue::toDoubleVector() const {
  if (kind_ == Kind::GenericList) {
    return generic_as<double>(*this, list_->elements, "toDoubleVector", "a list of Doubles",
                              [](const IValue& e) { return e.isDouble(); },
                              [](const IValue& e) { return e.toDouble(); });
  }
  if (!isDoubleList()) wrong_kind("toDoubleVector", "a DoubleList", *this);
  return doubles_;
}
std::vector<Tensor> IValue::toTensorVector() const {
  if (kind_ == Kind::GenericList) {
    return generic_as<Tensor>(*this, list_->elements, "toTensorVector", "a list of Tensors",
                              [](const IValue& e) { return e.isTensor(); },
                              [](const IValue& e) { return e.toTensor(); });
  }
  if (!isTensorList()) wrong_kind("toTensorVector", "a TensorList", *this);
  return tensors_;
}
Scalar IValue::toScalar() const {
  if (isDouble()) return double_;
  if (isInt()) return int_;
  if (isBool()) return bool_;
  wrong_kind("toScalar", "a number (Double, Int or Bool)", *this);
}

std::string IValue::tagKind() const {
  static const char* const kinds[] = {"None",       "Tensor", "Double",      "Int",        "Bool",
                                      "String",     "IntList", "DoubleList", "TensorList", "Tuple",
                                      "GenericList", "GenericDict"};
  return kinds[static_cast<int>(kind_)];
}
IValue::IValue(intrusive_ptr<ivalue::Tuple> t) : kind_(Kind::Tuple), tuple_(std::move(t)) {
  if (!tuple_) tuple_ = ivalue::Tuple::create(std::vector<IValue>{});
}
IValue::IValue(const impl::GenericList& l) : kind_(Kind::GenericList), list_(l.impl()) {}
IValue::IValue(const impl::GenericDict& d) : kind_(Kind::GenericDict), dict_(d.impl()) {}

intrusive_ptr<ivalue::Tuple> IValue::toTuple() const {
  if (!isTuple()) wrong_kind("toTuple", "a Tuple", *this);
  return tuple_;
}
ivalue::Tuple& IValue::toTupleRef() const {
  if (!isTuple()) wrong_kind("toTupleRef", "a Tuple", *this);
  return *tuple_;
}
impl::GenericList IValue::toList() const {
  if (kind_ == Kind::GenericList) return impl::GenericList(list_);
  if (!isList()) wrong_kind("toList", "a list", *this);
  impl::GenericList out(isIntList() ? IntType::get() : isDoubleList() ? FloatType::get() : TensorType::get());
  if (isIntList()) {
    for (int64_t x : ints_) out.push_back(x);
  } else if (isDoubleList()) {
    for (double x : doubles_) out.push_back(x);
  } else {
    for (const Tensor& x : tensors_) out.push_back(x);
  }
  return out;
}
const std::vector<IValue>& IValue::toListRef() const {
  if (kind_ != Kind::GenericList) wrong_kind("toListRef", "a GenericList", *this);
  return list_->elements;
}
impl::GenericDict IValue::toGenericDict() const {
  if (!isGenericDict()) wrong_kind("toGenericDict", "a GenericDict", *this);
  return impl::GenericDict(dict_);
}

bool IValue::is(const IValue& rhs) const {
  if (kind_ != rhs.kind_) return false;
  switch (kind_) {
    case Kind::None: return true;
    case Kind::Tensor: return tensor_.is_same(rhs.tensor_);
    case Kind::Double: return std::memcmp(&double_, &rhs.double_, sizeof(double)) == 0;
    case Kind::Int: return int_ == rhs.int_;
    case Kind::Bool: return bool_ == rhs.bool_;
    case Kind::String: return string_ == rhs.string_;
    case Kind::IntList: return ints_ == rhs.ints_;
    case Kind::DoubleList: return doubles_ == rhs.doubles_;
    case Kind::TensorList: return false;  // a value type here: never the same object
    case Kind::Tuple: return tuple_ == rhs.tuple_;
    case Kind::GenericList: return list_ == rhs.list_;
    case Kind::GenericDict: return dict_ == rhs.dict_;
  }
  return false;
}

namespace {
void print_string(std::ostream& os, const std::string& s) {
  os << '\'';
  for (char c : s) {
    if (c == '\'' || c == '\\') os << '\\';
    os << c;
  }
  os << '\'';
}
template <class Seq>
void print_seq(std::ostream& os, const Seq& seq, const char* open, const char* close, bool one_tuple) {
  os << open;
  bool first = true;
  for (const auto& e : seq) {
    if (!first) os << ", ";
    first = false;
    os << IValue(e);
  }
  if (one_tuple && seq.size() == 1) os << ',';
  os << close;
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const IValue& v) {
  if (v.isNone()) return os << "None";
  if (v.isTensor()) return os << v.toTensor();
  if (v.isDouble()) return os << v.toDouble();
  if (v.isInt()) return os << v.toInt();
  if (v.isBool()) return os << (v.toBool() ? "True" : "False");
  if (v.isString()) {
    print_string(os, v.toStringRef());
    return os;
  }
  if (v.isIntList()) {
    print_seq(os, v.toIntVector(), "[", "]", false);
  } else if (v.isDoubleList()) {
    print_seq(os, v.toDoubleVector(), "[", "]", false);
  } else if (v.isTensorList()) {
    print_seq(os, v.toTensorVector(), "[", "]", false);
  } else if (v.isTuple()) {
    print_seq(os, v.toTupleRef().elements(), "(", ")", true);
  } else if (v.isList()) {
    print_seq(os, v.toListRef(), "[", "]", false);
  } else if (v.isGenericDict()) {
    os << '{';
    bool first = true;
    for (const auto& e : v.toGenericDict()) {
      if (!first) os << ", ";
      first = false;
      os << e.key() << ": " << e.value();
    }
    os << '}';
  }
  return os;
}

// ---- Type -----------------------------------------------------------------------------------

std::string Type::str() const {
  switch (kind_) {
    case Kind::Any: return "Any";
    case Kind::Tensor: return "Tensor";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Bool: return "bool";
    case Kind::String: return "str";
    case Kind::None: return "NoneType";
  }
  return "?";
}
bool Type::accepts(const IValue& v) const {
  switch (kind_) {
    case Kind::Any: return true;
    case Kind::Tensor: return v.isTensor();
    case Kind::Int: return v.isInt();
    case Kind::Float: return v.isDouble();
    case Kind::Bool: return v.isBool();
    case Kind::String: return v.isString();
    case Kind::None: return v.isNone();
  }
  return false;
}
namespace {
TypePtr singleton(Type::Kind kind) {
  static const TypePtr types[] = {std::make_shared<const Type>(Type::Kind::Any), std::make_shared<const Type>(Type::Kind::Tensor),
                                  std::make_shared<const Type>(Type::Kind::Int), std::make_shared<const Type>(Type::Kind::Float),
                                  std::make_shared<const Type>(Type::Kind::Bool), std::make_shared<const Type>(Type::Kind::String),
                                  std::make_shared<const Type>(Type::Kind::None)};
  return types[static_cast<int>(kind)];
}
void check_element(const TypePtr& type, const IValue& v, const char* op, const char* what) {
  if (type->accepts(v)) return;
  throw Error(op, std::string("a ") + what + " of type " + type->str(), "an IValue holding " + v.tagKind(),
              "build the container with AnyType::get() to hold values of any kind");
}
}  // namespace
TypePtr AnyType::get() { return singleton(Type::Kind::Any); }
TypePtr TensorType::get() { return singleton(Type::Kind::Tensor); }
TypePtr IntType::get() { return singleton(Type::Kind::Int); }
TypePtr FloatType::get() { return singleton(Type::Kind::Float); }
TypePtr BoolType::get() { return singleton(Type::Kind::Bool); }
TypePtr StringType::get() { return singleton(Type::Kind::String); }
TypePtr NoneType::get() { return singleton(Type::Kind::None); }

// ---- List -----------------------------------------------------------------------------------

List<IValue>::List(TypePtr element_type) : impl_(std::make_shared<detail::ListImpl>()) {
  if (!element_type) throw Error("List", "an element type (AnyType::get(), ...)", "a null TypePtr", "pass AnyType::get()");
  impl_->element_type = std::move(element_type);
}
IValue List<IValue>::get(size_t pos) const {
  if (pos >= size()) {
    throw Error("List::get", "an index below the list's size " + std::to_string(size()), std::to_string(pos),
                "check size() first");
  }
  return impl_->elements[pos];
}
void List<IValue>::set(size_t pos, IValue value) const {
  if (pos >= size()) {
    throw Error("List::set", "an index below the list's size " + std::to_string(size()), std::to_string(pos),
                "use push_back to grow the list");
  }
  check_element(impl_->element_type, value, "List::set", "list element");
  impl_->elements[pos] = std::move(value);
}
void List<IValue>::push_back(IValue value) const {
  check_element(impl_->element_type, value, "List::push_back", "list element");
  impl_->elements.push_back(std::move(value));
}
void List<IValue>::pop_back() const {
  if (empty()) throw Error("List::pop_back", "a non-empty list", "an empty list", "check empty() first");
  impl_->elements.pop_back();
}
List<IValue> List<IValue>::copy() const {
  List out(impl_->element_type);
  out.impl_->elements = impl_->elements;
  return out;
}

// ---- Dict -----------------------------------------------------------------------------------

namespace detail {
// Entries in insertion order, and an index from each key's identity (its kind and value, a tensor
// by its address) to its entry, so a lookup costs one hash however large the dict.
struct DictImpl {
  std::vector<DictEntry> entries;
  std::unordered_map<std::string, size_t> index;
  TypePtr key_type;
  TypePtr value_type;

  static std::string identity(const IValue& key) {
    // A tag character, then the value (built by append: GCC 12 misreports "s" + string here as
    // an overflowing memcpy).
    std::string id;
    auto tagged = [&id](char tag, const std::string& value) {
      id.reserve(value.size() + 1);
      id.push_back(tag);
      id.append(value);
      return id;
    };
    if (key.isString()) return tagged('s', key.toStringRef());
    if (key.isInt()) return tagged('i', std::to_string(key.toInt()));
    if (key.isBool()) return tagged('b', key.toBool() ? "1" : "0");
    if (key.isDouble()) {
      double d = key.toDouble();
      if (d == 0) d = 0;  // -0.0 and 0.0 are one key, as in Python
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      return tagged('d', std::to_string(bits));
    }
    if (key.isTensor()) {
      return tagged('t', std::to_string(reinterpret_cast<uintptr_t>(key.toTensor().unsafeGetTensorImpl())));
    }
    throw Error("Dict", "a key that is a String, Int, Double, Bool or Tensor", "a key holding " + key.tagKind(),
                "use one of those kinds as the key, as LibTorch's Dict does");
  }
  void rebuild_index() {
    index.clear();
    for (size_t i = 0; i < entries.size(); ++i) index.emplace(identity(entries[i].key()), i);
  }
};
}  // namespace detail

Dict<IValue, IValue>::Dict(TypePtr key_type, TypePtr value_type) : impl_(std::make_shared<detail::DictImpl>()) {
  if (!key_type || !value_type) {
    throw Error("Dict", "a key type and a value type (AnyType::get(), ...)", "a null TypePtr", "pass AnyType::get()");
  }
  impl_->key_type = std::move(key_type);
  impl_->value_type = std::move(value_type);
}
size_t Dict<IValue, IValue>::size() const { return impl_->entries.size(); }
Dict<IValue, IValue>::iterator Dict<IValue, IValue>::begin() const { return impl_->entries.begin(); }
Dict<IValue, IValue>::iterator Dict<IValue, IValue>::end() const { return impl_->entries.end(); }
std::pair<Dict<IValue, IValue>::iterator, bool> Dict<IValue, IValue>::insert(IValue key, IValue value) const {
  check_element(impl_->key_type, key, "Dict::insert", "key");
  check_element(impl_->value_type, value, "Dict::insert", "value");
  auto [it, added] = impl_->index.emplace(detail::DictImpl::identity(key), impl_->entries.size());
  if (added) impl_->entries.emplace_back(std::move(key), std::move(value));
  return {impl_->entries.begin() + static_cast<std::ptrdiff_t>(it->second), added};
}
std::pair<Dict<IValue, IValue>::iterator, bool> Dict<IValue, IValue>::insert_or_assign(IValue key, IValue value) const {
  check_element(impl_->value_type, value, "Dict::insert_or_assign", "value");
  IValue v = value;
  auto result = insert(std::move(key), std::move(value));
  if (!result.second) impl_->entries[static_cast<size_t>(result.first - impl_->entries.begin())].value_ = std::move(v);
  return result;
}
Dict<IValue, IValue>::iterator Dict<IValue, IValue>::find(const IValue& key) const {
  auto it = impl_->index.find(detail::DictImpl::identity(key));
  if (it == impl_->index.end()) return end();
  return impl_->entries.begin() + static_cast<std::ptrdiff_t>(it->second);
}
bool Dict<IValue, IValue>::contains(const IValue& key) const { return find(key) != end(); }
IValue Dict<IValue, IValue>::at(const IValue& key) const {
  auto it = find(key);
  if (it == end()) {
    std::ostringstream k;
    k << key;
    throw Error("Dict::at", "a key the dict holds", "the key " + k.str() + ", absent from a dict of " + std::to_string(size()),
                "check contains(key) first, or iterate the dict to see its keys");
  }
  return it->value();
}
size_t Dict<IValue, IValue>::erase(const IValue& key) const {
  auto it = impl_->index.find(detail::DictImpl::identity(key));
  if (it == impl_->index.end()) return 0;
  impl_->entries.erase(impl_->entries.begin() + static_cast<std::ptrdiff_t>(it->second));
  impl_->rebuild_index();
  return 1;
}
void Dict<IValue, IValue>::erase(iterator it) const {
  if (it < begin() || it >= end()) {
    throw Error("Dict::erase", "an iterator to an entry of this dict", "another iterator", "erase(find(key)) erases one key");
  }
  (void)erase(it->key());
}
void Dict<IValue, IValue>::clear() const {
  impl_->entries.clear();
  impl_->index.clear();
}
void Dict<IValue, IValue>::reserve(size_t n) const {
  impl_->entries.reserve(n);
  impl_->index.reserve(n);
}
Dict<IValue, IValue> Dict<IValue, IValue>::copy() const {
  Dict out(impl_->key_type, impl_->value_type);
  *out.impl_ = *impl_;
  return out;
}
TypePtr Dict<IValue, IValue>::keyType() const { return impl_->key_type; }
TypePtr Dict<IValue, IValue>::valueType() const { return impl_->value_type; }

}  // namespace graft
