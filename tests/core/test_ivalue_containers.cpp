// IValue's generic containers (graft/core/ivalue.h): ivalue::Tuple, impl::GenericList and
// impl::GenericDict, their element types, and the IValue accessors over them. Every expectation is
// worked out by hand from LibTorch's documented behaviour (c10::List / c10::Dict are handles, a Dict
// keeps insertion order, std::unordered_map's insert semantics, Python's repr for operator<<);
// where LibTorch's own behaviour was the reference (three distinct keys 1, 1.0 and True), it was
// measured with LibTorch 1.13 and is said so next to the check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"

namespace graft::test {
namespace {

// operator<< of an IValue, as a string. (Names here are unique across graft_core_tests: Note
// [Unity test builds] in tests/CMakeLists.txt.)
std::string ivalue_text(const IValue& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The keys of a dict whose keys are all strings, in iteration order.
std::vector<std::string> ivalue_dict_string_keys(const impl::GenericDict& d) {
  std::vector<std::string> keys;
  for (const auto& e : d) keys.push_back(e.key().toStringRef());
  return keys;
}

// ---- element types -----------------------------------------------------------------------------

TEST(IValueContainerTypes, NamesAreTorchScriptsAnnotations) {
  EXPECT_EQ(AnyType::get()->str(), "Any");
  EXPECT_EQ(TensorType::get()->str(), "Tensor");
  EXPECT_EQ(IntType::get()->str(), "int");
  EXPECT_EQ(FloatType::get()->str(), "float");
  EXPECT_EQ(BoolType::get()->str(), "bool");
  EXPECT_EQ(StringType::get()->str(), "str");
  EXPECT_EQ(NoneType::get()->str(), "NoneType");
  EXPECT_EQ(IntType::get()->annotation_str(), "int");
  // One object per type, as LibTorch's singletons.
  EXPECT_EQ(IntType::get().get(), IntType::get().get());
  EXPECT_EQ(IntType::get()->kind(), Type::Kind::Int);
}

TEST(IValueContainerTypes, AcceptsOnlyItsKind) {
  const IValue none, t = ones({1}), d = 1.5, i = int64_t{2}, b = true, s = "s";
  EXPECT_TRUE(AnyType::get()->accepts(none) && AnyType::get()->accepts(t) && AnyType::get()->accepts(s));
  EXPECT_TRUE(TensorType::get()->accepts(t));
  EXPECT_FALSE(TensorType::get()->accepts(none));
  EXPECT_TRUE(IntType::get()->accepts(i));
  EXPECT_FALSE(IntType::get()->accepts(b));  // a bool is not an int here (nor in TorchScript)
  EXPECT_FALSE(IntType::get()->accepts(d));
  EXPECT_TRUE(FloatType::get()->accepts(d));
  EXPECT_FALSE(FloatType::get()->accepts(i));  // no int-to-float promotion in a container
  EXPECT_TRUE(BoolType::get()->accepts(b));
  EXPECT_FALSE(BoolType::get()->accepts(i));
  EXPECT_TRUE(StringType::get()->accepts(s));
  EXPECT_FALSE(StringType::get()->accepts(none));
  EXPECT_TRUE(NoneType::get()->accepts(none));
  EXPECT_FALSE(NoneType::get()->accepts(i));
}

// ---- GenericList -----------------------------------------------------------------------------------

TEST(IValueGenericList, AnyTypeTakesEveryKind) {
  impl::GenericList l(AnyType::get());
  EXPECT_TRUE(l.empty());
  const Tensor t = full({2}, 3.0);
  l.push_back(int64_t{1});
  l.push_back("two");
  l.push_back(IValue());
  l.push_back(t);
  l.push_back(2.5);
  l.push_back(false);
  l.emplace_back(std::vector<int64_t>{7, 8});
  ASSERT_EQ(l.size(), 7u);
  EXPECT_FALSE(l.empty());
  EXPECT_EQ(l.get(0).toInt(), 1);
  EXPECT_EQ(l.get(1).toStringRef(), "two");
  EXPECT_TRUE(l.get(2).isNone());
  EXPECT_TRUE(l.get(3).toTensor().is_same(t));
  EXPECT_EQ(l.get(4).toDouble(), 2.5);
  EXPECT_EQ(l.get(5).toBool(), false);
  EXPECT_EQ(l.get(6).toIntVector(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(l.elementType()->str(), "Any");
  // A default-constructed list is an Any list too.
  impl::GenericList dflt;
  EXPECT_EQ(dflt.elementType()->str(), "Any");
  dflt.push_back("x");
  EXPECT_EQ(dflt.size(), 1u);
}

TEST(IValueGenericList, TypedListRefusesOtherKindsNamingBoth) {
  impl::GenericList l(IntType::get());
  l.push_back(int64_t{5});
  EXPECT_TRUE(throws_error([&] { l.push_back("x"); }, {"List::push_back", "int", "String"}));
  EXPECT_TRUE(throws_error([&] { l.push_back(1.5); }, {"List::push_back", "int", "Double"}));
  EXPECT_TRUE(throws_error([&] { l.push_back(true); }, {"List::push_back", "int", "Bool"}));
  EXPECT_TRUE(throws_error([&] { l.push_back(IValue()); }, {"List::push_back", "int", "None"}));
  EXPECT_TRUE(throws_error([&] { l.set(0, "y"); }, {"List::set", "int", "String"}));
  // A refused element leaves the list as it was.
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l.get(0).toInt(), 5);

  impl::GenericList f(FloatType::get());
  EXPECT_TRUE(throws_error([&] { f.push_back(int64_t{1}); }, {"List::push_back", "float", "Int"}));
  impl::GenericList ts(TensorType::get());
  ts.push_back(ones({1}));
  EXPECT_TRUE(throws_error([&] { ts.push_back(1.0); }, {"List::push_back", "Tensor", "Double"}));
  impl::GenericList ss(StringType::get());
  EXPECT_TRUE(throws_error([&] { ss.push_back(ones({1})); }, {"List::push_back", "str", "Tensor"}));
  impl::GenericList bs(BoolType::get());
  EXPECT_TRUE(throws_error([&] { bs.push_back(int64_t{0}); }, {"List::push_back", "bool", "Int"}));
  EXPECT_TRUE(throws_error([] { impl::GenericList bad(TypePtr{}); }, {"List", "null TypePtr"}));
}

TEST(IValueGenericList, CopiesShareElementsCopyDoesNot) {
  impl::GenericList a(AnyType::get());
  a.push_back(int64_t{1});
  impl::GenericList b = a;  // a handle: the same elements
  b.push_back(int64_t{2});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a.get(1).toInt(), 2);
  b.set(0, "one");
  EXPECT_EQ(a.get(0).toStringRef(), "one");
  EXPECT_TRUE(a.is(b));
  EXPECT_EQ(a.use_count(), 2u);

  impl::GenericList c = a.copy();  // independent
  EXPECT_FALSE(a.is(c));
  c.push_back(int64_t{3});
  c.set(1, 20.0);
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(a.get(1).toInt(), 2);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.get(0).toStringRef(), "one");
  EXPECT_EQ(c.get(1).toDouble(), 20.0);
  EXPECT_EQ(c.get(2).toInt(), 3);

  // copy() keeps the element type.
  impl::GenericList typed(IntType::get());
  impl::GenericList typed_copy = typed.copy();
  EXPECT_EQ(typed_copy.elementType()->str(), "int");
  EXPECT_TRUE(throws_error([&] { typed_copy.push_back("s"); }, {"List::push_back", "int", "String"}));

  // An IValue holding a list holds the handle: pushes through the list show through the IValue,
  // and toList() hands back the same list.
  IValue iv(a);
  a.push_back(int64_t{9});
  EXPECT_EQ(iv.toListRef().size(), 3u);
  impl::GenericList back = iv.toList();
  EXPECT_TRUE(back.is(a));
  back.push_back(int64_t{10});
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(a.get(3).toInt(), 10);
}

TEST(IValueGenericList, BoundsAndEditing) {
  impl::GenericList l(AnyType::get());
  l.reserve(8);
  for (int64_t i = 0; i < 3; ++i) l.push_back(i * 10);
  EXPECT_TRUE(throws_error([&] { (void)l.get(3); }, {"List::get", "3", "size 3"}));
  EXPECT_TRUE(throws_error([&] { (void)IValue(l[7]); }, {"List::get", "7"}));
  // list[i] = v sets the element (LibTorch's ListElementReference), list[i] reads it.
  l[1] = int64_t{11};
  EXPECT_EQ(IValue(l[1]).toInt(), 11);
  l[2] = l[1];
  EXPECT_EQ(l.get(2).toInt(), 11);
  EXPECT_TRUE(throws_error([&] { l[5] = int64_t{1}; }, {"List::set", "5"}));
  l.set(1, int64_t{10});
  l.set(2, int64_t{20});
  EXPECT_TRUE(throws_error([&] { l.set(3, int64_t{0}); }, {"List::set", "3"}));
  std::vector<int64_t> seen;
  for (const IValue& e : l) seen.push_back(e.toInt());
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 10, 20}));
  l.pop_back();
  ASSERT_EQ(l.size(), 2u);
  const std::vector<IValue> v = l.vec();  // a copy of the elements
  l.clear();
  EXPECT_TRUE(l.empty());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].toInt(), 10);
  EXPECT_TRUE(throws_error([&] { l.pop_back(); }, {"List::pop_back", "empty"}));
}

// ---- GenericDict -----------------------------------------------------------------------------------

TEST(IValueGenericDict, EraseByIterator) {
  // erase(iterator), LibTorch's other form.
  impl::GenericDict d(AnyType::get(), AnyType::get());
  for (const char* k : {"a", "c", "d", "b"}) d.insert(k, int64_t{1});
  d.erase(d.find("d"));
  EXPECT_EQ(ivalue_dict_string_keys(d), (std::vector<std::string>{"a", "c", "b"}));
  EXPECT_TRUE(throws_error([&] { d.erase(d.end()); }, {"Dict::erase"}));
}

TEST(IValueGenericDict, InsertionOrderKeptAfterEraseAndInsert) {
  impl::GenericDict d(AnyType::get(), AnyType::get());
  d.insert("a", int64_t{1});
  d.insert("b", int64_t{2});
  d.insert("c", int64_t{3});
  d.insert("d", int64_t{4});
  EXPECT_EQ(ivalue_dict_string_keys(d), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(d.erase("b"), 1u);
  EXPECT_EQ(d.erase("b"), 0u);
  EXPECT_EQ(d.erase("zz"), 0u);
  EXPECT_EQ(ivalue_dict_string_keys(d), (std::vector<std::string>{"a", "c", "d"}));
  // The entries after the erased one moved: lookups must still find each.
  EXPECT_EQ(d.at("a").toInt(), 1);
  EXPECT_EQ(d.at("c").toInt(), 3);
  EXPECT_EQ(d.at("d").toInt(), 4);
  EXPECT_FALSE(d.contains("b"));
  EXPECT_EQ(d.find("b"), d.end());
  // Re-inserting an erased key puts it last, as Python's dict does.
  d.insert("b", int64_t{20});
  EXPECT_EQ(ivalue_dict_string_keys(d), (std::vector<std::string>{"a", "c", "d", "b"}));
  // Inserting or assigning an existing key leaves the order alone.
  d.insert("a", int64_t{100});
  d.insert_or_assign("c", int64_t{30});
  EXPECT_EQ(ivalue_dict_string_keys(d), (std::vector<std::string>{"a", "c", "d", "b"}));
  std::vector<int64_t> values;
  for (const auto& e : d) values.push_back(e.value().toInt());
  EXPECT_EQ(values, (std::vector<int64_t>{1, 30, 4, 20}));
  EXPECT_EQ(d.size(), 4u);
  d.erase("d");
  d.erase("a");
  EXPECT_EQ(ivalue_dict_string_keys(d), (std::vector<std::string>{"c", "b"}));
  EXPECT_EQ(d.at("b").toInt(), 20);
  d.clear();
  EXPECT_TRUE(d.empty());
  EXPECT_FALSE(d.contains("c"));
  d.reserve(4);
  d.insert("c", int64_t{5});  // usable after clear()
  EXPECT_EQ(d.at("c").toInt(), 5);
  EXPECT_EQ(d.size(), 1u);
}

TEST(IValueGenericDict, InsertKeepsTheOldValueInsertOrAssignReplaces) {
  impl::GenericDict d(AnyType::get(), AnyType::get());
  auto r1 = d.insert("k", int64_t{1});
  EXPECT_TRUE(r1.second);
  EXPECT_EQ(r1.first->key().toStringRef(), "k");
  EXPECT_EQ(r1.first->value().toInt(), 1);
  d.insert("other", "x");
  auto r2 = d.insert("k", int64_t{2});
  EXPECT_FALSE(r2.second);
  EXPECT_EQ(r2.first->key().toStringRef(), "k");  // the existing entry
  EXPECT_EQ(r2.first->value().toInt(), 1);        // its old value kept
  EXPECT_EQ(r2.first, d.begin());
  EXPECT_EQ(d.at("k").toInt(), 1);
  EXPECT_EQ(d.size(), 2u);

  auto r3 = d.insert_or_assign("k", "three");
  EXPECT_FALSE(r3.second);
  EXPECT_EQ(r3.first->value().toStringRef(), "three");
  EXPECT_EQ(d.at("k").toStringRef(), "three");
  auto r4 = d.insert_or_assign("new", 4.5);
  EXPECT_TRUE(r4.second);
  EXPECT_EQ(r4.first->key().toStringRef(), "new");
  EXPECT_EQ(d.at("new").toDouble(), 4.5);
  EXPECT_EQ(d.size(), 3u);
  auto f = d.find("other");
  ASSERT_NE(f, d.end());
  EXPECT_EQ(f->value().toStringRef(), "x");
}

TEST(IValueGenericDict, AtOfAMissingKeyNamesTheKey) {
  impl::GenericDict d(AnyType::get(), AnyType::get());
  d.insert("present", int64_t{1});
  EXPECT_TRUE(throws_error([&] { (void)d.at("nope"); }, {"Dict::at", "'nope'", "absent", "dict of 1"}));
  EXPECT_TRUE(throws_error([&] { (void)d.at(int64_t{7}); }, {"Dict::at", "the key 7"}));
  // A key of another kind with the same spelling is another key.
  d.insert(int64_t{7}, "seven");
  EXPECT_TRUE(throws_error([&] { (void)d.at("7"); }, {"Dict::at", "'7'"}));
}

TEST(IValueGenericDict, KeysOfEachKind) {
  impl::GenericDict d(AnyType::get(), AnyType::get());
  const Tensor t = ones({2});
  d.insert("s", "string key");
  d.insert(int64_t{-3}, "int key");
  d.insert(2.5, "double key");
  d.insert(true, "bool key");
  d.insert(t, "tensor key");
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d.at("s").toStringRef(), "string key");
  EXPECT_EQ(d.at(int64_t{-3}).toStringRef(), "int key");
  EXPECT_EQ(d.at(2.5).toStringRef(), "double key");
  EXPECT_EQ(d.at(true).toStringRef(), "bool key");
  EXPECT_EQ(d.at(t).toStringRef(), "tensor key");
  EXPECT_FALSE(d.contains(false));
  EXPECT_FALSE(d.contains(int64_t{3}));
  EXPECT_FALSE(d.contains(2.25));
  // The iteration hands the keys back with their kinds.
  std::vector<std::string> kinds;
  for (const auto& e : d) kinds.push_back(e.key().tagKind());
  EXPECT_EQ(kinds, (std::vector<std::string>{"String", "Int", "Double", "Bool", "Tensor"}));
}

TEST(IValueGenericDict, MinusZeroIsZero) {
  impl::GenericDict d(AnyType::get(), AnyType::get());
  d.insert(0.0, "zero");
  auto r = d.insert(-0.0, "minus zero");  // -0.0 == 0.0: the same key, as in Python
  EXPECT_FALSE(r.second);
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d.at(-0.0).toStringRef(), "zero");
  EXPECT_FALSE(std::signbit(r.first->key().toDouble()));  // the first key is the one kept
  d.insert_or_assign(-0.0, "assigned");
  EXPECT_EQ(d.at(0.0).toStringRef(), "assigned");
  EXPECT_EQ(d.erase(-0.0), 1u);
  EXPECT_TRUE(d.empty());
}

TEST(IValueGenericDict, NumbersOfDifferentKindsAreDifferentKeys) {
  // LibTorch 1.13, measured: inserting 1, 1.0 and True into a GenericDict gives three entries
  // (Python's dict would give one).
  impl::GenericDict d(AnyType::get(), AnyType::get());
  d.insert(int64_t{1}, "int");
  d.insert(1.0, "double");
  d.insert(true, "bool");
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(d.at(int64_t{1}).toStringRef(), "int");
  EXPECT_EQ(d.at(1.0).toStringRef(), "double");
  EXPECT_EQ(d.at(true).toStringRef(), "bool");
}

TEST(IValueGenericDict, TensorKeysAreByIdentity) {
  impl::GenericDict d(AnyType::get(), AnyType::get());
  const Tensor a = ones({2});
  const Tensor b = ones({2});  // equal values, another tensor
  EXPECT_TRUE(d.insert(a, int64_t{1}).second);
  EXPECT_TRUE(d.insert(b, int64_t{2}).second);
  EXPECT_EQ(d.size(), 2u);
  const Tensor a_again = a;  // the same tensor under another handle
  EXPECT_FALSE(d.insert(a_again, int64_t{3}).second);
  EXPECT_EQ(d.at(a_again).toInt(), 1);
  EXPECT_EQ(d.at(b).toInt(), 2);
  EXPECT_FALSE(d.contains(a.view({2})));  // a view is another tensor
  EXPECT_FALSE(d.contains(ones({2})));
  EXPECT_TRUE(d.begin()->key().toTensor().is_same(a));
}

TEST(IValueGenericDict, InvalidKeyKindsAreErrors) {
  impl::GenericDict d(AnyType::get(), AnyType::get());
  const std::vector<std::string> allowed = {"String, Int, Double, Bool or Tensor"};
  EXPECT_TRUE(throws_error([&] { d.insert(IValue(), int64_t{1}); }, {"Dict", allowed[0], "None"}));
  impl::GenericList l(AnyType::get());
  EXPECT_TRUE(throws_error([&] { d.insert(l, int64_t{1}); }, {"Dict", allowed[0], "GenericList"}));
  EXPECT_TRUE(throws_error([&] { d.insert(std::vector<int64_t>{1}, int64_t{1}); }, {"Dict", allowed[0], "IntList"}));
  EXPECT_TRUE(throws_error([&] { d.insert(ivalue::Tuple::create(int64_t{1}), int64_t{1}); }, {"Dict", allowed[0], "Tuple"}));
  EXPECT_TRUE(throws_error([&] { d.insert(impl::GenericDict(), int64_t{1}); }, {"Dict", allowed[0], "GenericDict"}));
  EXPECT_TRUE(throws_error([&] { d.insert_or_assign(IValue(), int64_t{1}); }, {"Dict", allowed[0], "None"}));
  EXPECT_TRUE(throws_error([&] { (void)d.contains(IValue()); }, {"Dict", allowed[0], "None"}));
  EXPECT_TRUE(throws_error([&] { (void)d.at(l); }, {"Dict", allowed[0], "GenericList"}));
  EXPECT_TRUE(d.empty());  // nothing was added by the refused inserts
  d.insert("ok", int64_t{1});
  EXPECT_EQ(d.size(), 1u);
}

TEST(IValueGenericDict, TypedDictRefusesOtherKindsNamingBoth) {
  impl::GenericDict d(StringType::get(), IntType::get());
  EXPECT_EQ(d.keyType()->str(), "str");
  EXPECT_EQ(d.valueType()->str(), "int");
  d.insert("a", int64_t{1});
  EXPECT_TRUE(throws_error([&] { d.insert(int64_t{1}, int64_t{1}); }, {"Dict::insert", "key", "str", "Int"}));
  EXPECT_TRUE(throws_error([&] { d.insert("b", "x"); }, {"Dict::insert", "value", "int", "String"}));
  EXPECT_TRUE(throws_error([&] { d.insert_or_assign("a", 1.5); }, {"Dict::insert_or_assign", "value", "int", "Double"}));
  EXPECT_TRUE(throws_error([&] { d.insert_or_assign(2.5, int64_t{1}); }, {"key", "str", "Double"}));
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d.at("a").toInt(), 1);  // the refused assignment left the value alone
  EXPECT_TRUE(throws_error([] { impl::GenericDict bad(TypePtr{}, AnyType::get()); }, {"Dict", "null TypePtr"}));
  EXPECT_TRUE(throws_error([] { impl::GenericDict bad(AnyType::get(), TypePtr{}); }, {"Dict", "null TypePtr"}));
  impl::GenericDict dflt;
  EXPECT_EQ(dflt.keyType()->str(), "Any");
  EXPECT_EQ(dflt.valueType()->str(), "Any");
}

TEST(IValueGenericDict, CopiesShareEntriesCopyDoesNot) {
  impl::GenericDict a(AnyType::get(), AnyType::get());
  a.insert("x", int64_t{1});
  impl::GenericDict b = a;
  b.insert("y", int64_t{2});
  b.insert_or_assign("x", int64_t{10});
  EXPECT_EQ(ivalue_dict_string_keys(a), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(a.at("x").toInt(), 10);
  EXPECT_TRUE(a.is(b));

  impl::GenericDict c = a.copy();
  EXPECT_FALSE(c.is(a));
  c.insert("z", int64_t{3});
  c.erase("x");
  a.insert_or_assign("y", int64_t{20});
  EXPECT_EQ(ivalue_dict_string_keys(a), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(ivalue_dict_string_keys(c), (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(a.at("y").toInt(), 20);
  EXPECT_EQ(c.at("y").toInt(), 2);  // the copy's own value, taken before the assignment
  EXPECT_EQ(c.at("z").toInt(), 3);
  EXPECT_FALSE(a.contains("z"));

  // copy() keeps the key and value types.
  impl::GenericDict typed(StringType::get(), FloatType::get());
  impl::GenericDict typed_copy = typed.copy();
  EXPECT_EQ(typed_copy.keyType()->str(), "str");
  EXPECT_TRUE(throws_error([&] { typed_copy.insert("k", int64_t{1}); }, {"Dict::insert", "float", "Int"}));

  // An IValue holding a dict holds the handle.
  IValue iv(a);
  EXPECT_TRUE(iv.isGenericDict());
  impl::GenericDict back = iv.toGenericDict();
  EXPECT_TRUE(back.is(a));
  back.insert("w", "via the IValue");
  EXPECT_EQ(a.at("w").toStringRef(), "via the IValue");
  a.insert("v", int64_t{0});
  EXPECT_EQ(iv.toGenericDict().size(), 4u);
}

// ---- Tuple ---------------------------------------------------------------------------------------

TEST(IValueTuple, CreateBothForms) {
  // From a vector (a braced list picks it), and from the elements themselves.
  auto t1 = ivalue::Tuple::create({IValue(int64_t{1}), IValue("a")});
  auto t2 = ivalue::Tuple::create(std::vector<IValue>{2.5, IValue(), true});
  auto t3 = ivalue::Tuple::create(int64_t{7}, "two", 3.5, ones({1}));
  auto t4 = ivalue::Tuple::create(int64_t{9});
  auto empty = ivalue::Tuple::create();
  ASSERT_EQ(t1->size(), 2u);
  EXPECT_EQ(t1->elements()[0].toInt(), 1);
  EXPECT_EQ(t1->elements()[1].toStringRef(), "a");
  ASSERT_EQ(t2->elements().size(), 3u);
  EXPECT_EQ(t2->elements()[0].toDouble(), 2.5);
  EXPECT_TRUE(t2->elements()[1].isNone());
  EXPECT_TRUE(t2->elements()[2].toBool());
  ASSERT_EQ(t3->size(), 4u);
  EXPECT_EQ(t3->elements()[0].toInt(), 7);
  EXPECT_EQ(t3->elements()[1].toStringRef(), "two");
  EXPECT_EQ(t3->elements()[2].toDouble(), 3.5);
  EXPECT_TRUE(t3->elements()[3].isTensor());
  ASSERT_EQ(t4->size(), 1u);
  EXPECT_EQ(t4->elements()[0].toInt(), 9);
  EXPECT_EQ(empty->size(), 0u);

  // An IValue holds the tuple itself.
  IValue v = t3;
  EXPECT_TRUE(v.isTuple());
  EXPECT_EQ(v.toTuple().get(), t3.get());
  EXPECT_EQ(&v.toTupleRef(), t3.get());
  EXPECT_EQ(v.toTupleRef().elements()[1].toStringRef(), "two");
  // A null tuple pointer is read as the empty tuple.
  IValue from_null(intrusive_ptr<ivalue::Tuple>{});
  EXPECT_TRUE(from_null.isTuple());
  EXPECT_EQ(from_null.toTupleRef().size(), 0u);
}

TEST(IValueTuple, WalksNestedContainers) {
  // The header's example: a tuple of (dict, list).
  impl::GenericDict d(AnyType::get(), AnyType::get());
  const Tensor w = full({2}, 0.5);
  d.insert("weight", w);
  impl::GenericList l(AnyType::get());
  l.push_back(int64_t{1});
  l.push_back("two");
  const IValue v = ivalue::Tuple::create({d, l});
  ASSERT_TRUE(v.isTuple());
  const auto& el = v.toTupleRef().elements();
  ASSERT_EQ(el.size(), 2u);
  EXPECT_TRUE(el[0].isGenericDict());
  EXPECT_TRUE(el[0].toGenericDict().at("weight").toTensor().is_same(w));
  EXPECT_TRUE(el[1].isList());
  EXPECT_EQ(el[1].toList().get(1).toStringRef(), "two");
  // The tuple holds the handles: a push after creation shows through it.
  l.push_back(IValue());
  EXPECT_EQ(v.toTupleRef().elements()[1].toListRef().size(), 3u);
}

// ---- IValue accessors over containers --------------------------------------------------------------

TEST(IValueListAccess, ToListOfTypedListsGivesGenericLists) {
  const IValue ints(std::vector<int64_t>{4, 5, 6});
  EXPECT_TRUE(ints.isList());
  EXPECT_TRUE(ints.isIntList());
  const impl::GenericList li = ints.toList();
  ASSERT_EQ(li.size(), 3u);
  EXPECT_EQ(li.elementType()->str(), "int");
  EXPECT_TRUE(li.get(0).isInt());
  EXPECT_EQ(li.get(0).toInt(), 4);
  EXPECT_EQ(li.get(1).toInt(), 5);
  EXPECT_EQ(li.get(2).toInt(), 6);

  const IValue doubles(std::vector<double>{0.25, -1.0});
  const impl::GenericList ld = doubles.toList();
  ASSERT_EQ(ld.size(), 2u);
  EXPECT_EQ(ld.elementType()->str(), "float");
  EXPECT_EQ(ld.get(0).toDouble(), 0.25);
  EXPECT_EQ(ld.get(1).toDouble(), -1.0);

  const Tensor a = ones({1}), b = zeros({2});
  const IValue tensors(std::vector<Tensor>{a, b});
  const impl::GenericList lt = tensors.toList();
  ASSERT_EQ(lt.size(), 2u);
  EXPECT_EQ(lt.elementType()->str(), "Tensor");
  EXPECT_TRUE(lt.get(0).toTensor().is_same(a));
  EXPECT_TRUE(lt.get(1).toTensor().is_same(b));

  EXPECT_TRUE(IValue(impl::GenericList()).isList());
  EXPECT_FALSE(IValue(impl::GenericList()).isIntList());
  EXPECT_FALSE(IValue(ivalue::Tuple::create(int64_t{1})).isList());
  EXPECT_FALSE(IValue(impl::GenericDict()).isList());
}

TEST(IValueListAccess, TypedVectorsOfGenericLists) {
  impl::GenericList ints(AnyType::get());
  for (int64_t x : {3, -1, 8}) ints.push_back(x);
  EXPECT_EQ(IValue(ints).toIntVector(), (std::vector<int64_t>{3, -1, 8}));
  impl::GenericList typed_ints(IntType::get());
  typed_ints.push_back(int64_t{2});
  EXPECT_EQ(IValue(typed_ints).toIntVector(), (std::vector<int64_t>{2}));
  EXPECT_TRUE(IValue(impl::GenericList()).toIntVector().empty());

  impl::GenericList mixed(AnyType::get());
  mixed.push_back(int64_t{1});
  mixed.push_back("x");
  mixed.push_back(int64_t{3});
  EXPECT_TRUE(throws_error([&] { (void)IValue(mixed).toIntVector(); },
                           {"IValue::toIntVector", "a list of Ints", "element 1", "String"}));
  impl::GenericList bool_in_ints(AnyType::get());
  bool_in_ints.push_back(int64_t{1});
  bool_in_ints.push_back(int64_t{2});
  bool_in_ints.push_back(true);
  EXPECT_TRUE(throws_error([&] { (void)IValue(bool_in_ints).toIntVector(); }, {"IValue::toIntVector", "element 2", "Bool"}));

  impl::GenericList doubles(AnyType::get());
  doubles.push_back(1.5);
  doubles.push_back(-2.0);
  EXPECT_EQ(IValue(doubles).toDoubleVector(), (std::vector<double>{1.5, -2.0}));
  doubles.push_back(int64_t{2});  // an int is not a double, even here
  EXPECT_TRUE(throws_error([&] { (void)IValue(doubles).toDoubleVector(); },
                           {"IValue::toDoubleVector", "a list of Doubles", "element 2", "Int"}));

  const Tensor t = ones({3});
  impl::GenericList tensors(AnyType::get());
  tensors.push_back(t);
  const std::vector<Tensor> tv = IValue(tensors).toTensorVector();
  ASSERT_EQ(tv.size(), 1u);
  EXPECT_TRUE(tv[0].is_same(t));
  tensors.push_back(IValue());
  EXPECT_TRUE(throws_error([&] { (void)IValue(tensors).toTensorVector(); },
                           {"IValue::toTensorVector", "a list of Tensors", "element 1", "None"}));

  // The typed accessors still refuse the other typed lists and non-lists.
  EXPECT_TRUE(throws_error([] { (void)IValue(std::vector<double>{1.0}).toIntVector(); },
                           {"IValue::toIntVector", "DoubleList"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(ivalue::Tuple::create(int64_t{1})).toIntVector(); },
                           {"IValue::toIntVector", "Tuple"}));
}

TEST(IValueListAccess, ToListRefIsTheElementsInPlace) {
  impl::GenericList l(AnyType::get());
  l.push_back(int64_t{1});
  const IValue v(l);
  const std::vector<IValue>& ref = v.toListRef();
  EXPECT_EQ(ref.size(), 1u);
  l.push_back(int64_t{2});
  ASSERT_EQ(ref.size(), 2u);  // the same elements, not a snapshot
  EXPECT_EQ(ref[1].toInt(), 2);
}

TEST(IValueKinds, TagKindNamesEachKind) {
  EXPECT_EQ(IValue().tagKind(), "None");
  EXPECT_EQ(IValue(ones({1})).tagKind(), "Tensor");
  EXPECT_EQ(IValue(1.5).tagKind(), "Double");
  EXPECT_EQ(IValue(int64_t{1}).tagKind(), "Int");
  EXPECT_EQ(IValue(3).tagKind(), "Int");  // an int becomes int64
  EXPECT_EQ(IValue(true).tagKind(), "Bool");
  EXPECT_EQ(IValue("s").tagKind(), "String");
  EXPECT_EQ(IValue(std::vector<int64_t>{1}).tagKind(), "IntList");
  EXPECT_EQ(IValue(std::vector<double>{1.0}).tagKind(), "DoubleList");
  EXPECT_EQ(IValue(std::vector<Tensor>{}).tagKind(), "TensorList");
  EXPECT_EQ(IValue(ivalue::Tuple::create()).tagKind(), "Tuple");
  EXPECT_EQ(IValue(impl::GenericList()).tagKind(), "GenericList");
  EXPECT_EQ(IValue(impl::GenericDict()).tagKind(), "GenericDict");
  // A typed generic list is still a GenericList.
  EXPECT_EQ(IValue(impl::GenericList(IntType::get())).tagKind(), "GenericList");
}

TEST(IValueKinds, IsComparesObjectsOrValues) {
  impl::GenericList l(AnyType::get());
  const IValue lv(l);
  EXPECT_TRUE(lv.is(IValue(l)));
  EXPECT_TRUE(lv.is(lv.toList()));
  EXPECT_FALSE(lv.is(IValue(l.copy())));
  EXPECT_FALSE(lv.is(IValue(impl::GenericList())));  // equal contents, another list
  impl::GenericDict d;
  EXPECT_TRUE(IValue(d).is(IValue(d)));
  EXPECT_FALSE(IValue(d).is(IValue(d.copy())));
  auto t = ivalue::Tuple::create(int64_t{1});
  EXPECT_TRUE(IValue(t).is(IValue(t)));
  EXPECT_FALSE(IValue(t).is(IValue(ivalue::Tuple::create(int64_t{1}))));
  const Tensor a = ones({1});
  const Tensor a_again = a;
  EXPECT_TRUE(IValue(a).is(IValue(a_again)));
  EXPECT_FALSE(IValue(a).is(IValue(ones({1}))));
  EXPECT_TRUE(IValue(int64_t{4}).is(IValue(int64_t{4})));
  EXPECT_FALSE(IValue(int64_t{4}).is(IValue(int64_t{5})));
  EXPECT_FALSE(IValue(int64_t{1}).is(IValue(1.0)));  // another kind
  EXPECT_FALSE(IValue(int64_t{1}).is(IValue(true)));
  EXPECT_TRUE(IValue(2.5).is(IValue(2.5)));
  EXPECT_TRUE(IValue(true).is(IValue(true)));
  EXPECT_TRUE(IValue().is(IValue()));
  EXPECT_TRUE(IValue("s").is(IValue("s")));
  EXPECT_FALSE(IValue("s").is(IValue("t")));
  EXPECT_FALSE(IValue().is(IValue(int64_t{0})));
}

TEST(IValueKinds, AccessorErrorsNameTheAccessor) {
  EXPECT_TRUE(throws_error([] { (void)IValue(int64_t{3}).toTuple(); }, {"IValue::toTuple", "a Tuple", "Int"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(impl::GenericList()).toTupleRef(); },
                           {"IValue::toTupleRef", "a Tuple", "GenericList"}));
  EXPECT_TRUE(throws_error([] { (void)IValue("s").toList(); }, {"IValue::toList", "a list", "String"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(ivalue::Tuple::create()).toList(); }, {"IValue::toList", "Tuple"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(impl::GenericDict()).toList(); }, {"IValue::toList", "GenericDict"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(ivalue::Tuple::create()).toListRef(); },
                           {"IValue::toListRef", "a GenericList", "Tuple"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(impl::GenericList()).toGenericDict(); },
                           {"IValue::toGenericDict", "a GenericDict", "GenericList"}));
  EXPECT_TRUE(throws_error([] { (void)IValue().toGenericDict(); }, {"IValue::toGenericDict", "None"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(ivalue::Tuple::create()).toInt(); }, {"IValue::toInt", "an Int", "Tuple"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(impl::GenericDict()).toStringRef(); },
                           {"IValue::toStringRef", "GenericDict"}));
  EXPECT_TRUE(throws_error([] { (void)IValue(impl::GenericList()).toTensor(); }, {"IValue::toTensor", "GenericList"}));
}

// ---- operator<< ------------------------------------------------------------------------------------

TEST(IValuePrint, ContainersPrintAsPythonsRepr) {
  impl::GenericList l(AnyType::get());
  l.push_back(int64_t{1});
  l.push_back("two");
  l.push_back(IValue());
  EXPECT_EQ(ivalue_text(l), "[1, 'two', None]");
  EXPECT_EQ(ivalue_text(ivalue::Tuple::create(int64_t{1})), "(1,)");  // a one-tuple keeps its comma
  EXPECT_EQ(ivalue_text(ivalue::Tuple::create(int64_t{1}, int64_t{2})), "(1, 2)");
  EXPECT_EQ(ivalue_text(ivalue::Tuple::create()), "()");
  impl::GenericDict d(AnyType::get(), AnyType::get());
  d.insert("k", true);
  EXPECT_EQ(ivalue_text(d), "{'k': True}");
  EXPECT_EQ(ivalue_text(impl::GenericList()), "[]");
  EXPECT_EQ(ivalue_text(impl::GenericDict()), "{}");
  EXPECT_EQ(ivalue_text(std::vector<int64_t>{1, 2}), "[1, 2]");
  EXPECT_EQ(ivalue_text(std::vector<double>{2.5, -0.25}), "[2.5, -0.25]");
  EXPECT_EQ(ivalue_text(false), "False");
  EXPECT_EQ(ivalue_text("it's"), "'it\\'s'");  // the quote escaped, so the text reads back
}

TEST(IValuePrint, NestedContainersInInsertionOrder) {
  impl::GenericDict inner(AnyType::get(), AnyType::get());
  inner.insert(int64_t{2}, "b");
  inner.insert(int64_t{1}, "a");  // insertion order, not sorted
  impl::GenericList l(AnyType::get());
  l.push_back(inner);
  l.push_back(ivalue::Tuple::create(false));
  l.push_back(impl::GenericList());
  impl::GenericDict outer(AnyType::get(), AnyType::get());
  outer.insert("xs", l);
  outer.insert("t", ivalue::Tuple::create({IValue(2.5), IValue(std::vector<int64_t>{3})}));
  EXPECT_EQ(ivalue_text(outer), "{'xs': [{2: 'b', 1: 'a'}, (False,), []], 't': (2.5, [3])}");
  EXPECT_EQ(ivalue_text(ivalue::Tuple::create(outer)),
            "({'xs': [{2: 'b', 1: 'a'}, (False,), []], 't': (2.5, [3])},)");
}

}  // namespace
}  // namespace graft::test
