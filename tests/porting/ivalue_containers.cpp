// LibTorch-style source (tests/porting, docs/porting.md): IValue's generic containers as a ported
// program meets them, walking a checkpoint-like value (a tuple holding a dict of numbers, strings,
// tensors, lists, tuples and dicts) and editing dicts and lists through their handles. CMake runs
// tools/port-from-libtorch.sh over this file and builds the result against graft; where LibTorch is
// installed it also builds this file unchanged against LibTorch, and the two outputs are compared.
// Every value is also checked against a hand-derived one, so the program fails on its own.
// Only what both libraries do alike is printed: the kinds' names of the containers and scalars
// (an int list's tagKind() differs, so the walk prints kinds of its own), and no operator<< of an
// IValue (LibTorch prints strings unquoted and 2.0 as "2.").
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "porting_checks.h"

namespace {

using porting::check;

std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

// The lines walk() printed, checked afterwards against the hand-written ones.
std::vector<std::string> walked;

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  walked.push_back(line);
}

std::string key_text(const c10::IValue& k) {
  if (k.isString()) return k.toStringRef();
  if (k.isInt()) return std::to_string(k.toInt());
  if (k.isDouble()) return number(k.toDouble());
  if (k.isBool()) return k.toBool() ? "true" : "false";
  return "<" + k.tagKind() + ">";
}

// Depth first, in the containers' order, one line per container and per leaf.
void walk(const std::string& path, const c10::IValue& v) {
  if (v.isGenericDict()) {
    auto d = v.toGenericDict();
    say(path + ": dict of " + std::to_string(d.size()));
    for (const auto& e : d) walk(path + "." + key_text(e.key()), e.value());
  } else if (v.isTuple()) {
    const auto& elements = v.toTupleRef().elements();
    say(path + ": tuple of " + std::to_string(elements.size()));
    for (size_t i = 0; i < elements.size(); ++i) walk(path + "(" + std::to_string(i) + ")", elements[i]);
  } else if (v.isList()) {
    auto l = v.toList();
    say(path + ": list of " + std::to_string(l.size()));
    for (size_t i = 0; i < l.size(); ++i) walk(path + "[" + std::to_string(i) + "]", l.get(i));
  } else if (v.isTensor()) {
    auto flat = v.toTensor().to(torch::kFloat64).contiguous().view({-1});
    std::string line = path + ": tensor";
    for (int64_t i = 0; i < flat.numel(); ++i) line += " " + number(flat[i].item<double>());
    say(line);
  } else if (v.isInt()) {
    say(path + ": int " + std::to_string(v.toInt()));
  } else if (v.isDouble()) {
    say(path + ": double " + number(v.toDouble()));
  } else if (v.isBool()) {
    say(path + ": bool " + (v.toBool() ? "true" : "false"));
  } else if (v.isString()) {
    say(path + ": string " + v.toStringRef());
  } else if (v.isNone()) {
    say(path + ": none");
  } else {
    say(path + ": other " + v.tagKind());
  }
}

// The string keys of d in iteration order, space-separated.
std::string keys_of(const c10::impl::GenericDict& d) {
  std::string out;
  for (const auto& e : d) out += (out.empty() ? "" : " ") + e.key().toStringRef();
  return out;
}

// Runs f and says whether it threw (any exception: LibTorch throws std::out_of_range or
// std::runtime_error where graft throws its Error, a std::runtime_error too).
template <class F>
bool throws(F f) {
  try {
    f();
  } catch (const std::exception&) {
    return true;
  }
  return false;
}

}  // namespace

int main() {
  // ---- a checkpoint-like value, walked ----
  auto w = torch::tensor({1.0, 2.0, 3.0});
  auto b = torch::tensor({0.5});
  c10::impl::GenericDict state(c10::AnyType::get(), c10::AnyType::get());
  state.insert("epoch", 3);
  state.insert("lr", 0.01);
  state.insert("name", "mlp");
  state.insert("amp", false);
  state.insert("best", c10::IValue());
  c10::impl::GenericList params(c10::AnyType::get());
  params.push_back(w);
  params.push_back(b);
  state.insert("params", params);
  state.insert("shape", std::vector<int64_t>{2, 3});
  state.insert("optimizer", c10::ivalue::Tuple::create("sgd", 0.9, 4));
  c10::impl::GenericDict sched(c10::AnyType::get(), c10::AnyType::get());
  sched.insert("step", 10);
  sched.insert("gamma", 0.5);
  state.insert("scheduler", sched);
  c10::impl::GenericDict layers(c10::AnyType::get(), c10::AnyType::get());
  layers.insert(2, "out");
  layers.insert(0, "in");  // insertion order, not sorted
  state.insert("layers", layers);
  c10::IValue root = c10::ivalue::Tuple::create(c10::IValue(state), c10::IValue("v1"));

  walk("root", root);
  const std::vector<std::string> expected_walk = {
      "root: tuple of 2",
      "root(0): dict of 10",
      "root(0).epoch: int 3",
      "root(0).lr: double 0.01",
      "root(0).name: string mlp",
      "root(0).amp: bool false",
      "root(0).best: none",
      "root(0).params: list of 2",
      "root(0).params[0]: tensor 1 2 3",
      "root(0).params[1]: tensor 0.5",
      "root(0).shape: list of 2",
      "root(0).shape[0]: int 2",
      "root(0).shape[1]: int 3",
      "root(0).optimizer: tuple of 3",
      "root(0).optimizer(0): string sgd",
      "root(0).optimizer(1): double 0.9",
      "root(0).optimizer(2): int 4",
      "root(0).scheduler: dict of 2",
      "root(0).scheduler.step: int 10",
      "root(0).scheduler.gamma: double 0.5",
      "root(0).layers: dict of 2",
      "root(0).layers.2: string out",
      "root(0).layers.0: string in",
      "root(1): string v1",
  };
  check(walked == expected_walk, "the walk finds every value in insertion order");

  // Reading by hand, as a loader would.
  const auto& top = root.toTupleRef().elements();
  check(top.size() == 2 && top[0].isGenericDict() && top[1].toStringRef() == "v1", "root is (dict, 'v1')");
  auto loaded = top[0].toGenericDict();
  check(loaded.is(state), "toGenericDict() hands back the dict itself");
  auto loaded_params = loaded.at("params").toList();
  std::printf("params: %zu, the second %s\n", loaded_params.size(),
              number(loaded_params.get(1).toTensor().item<double>()).c_str());
  check(loaded_params.size() == 2 && loaded_params.get(1).toTensor().item<double>() == 0.5, "params[1] is 0.5");
  auto shape = loaded.at("shape").toIntVector();
  std::printf("shape: %lld %lld\n", static_cast<long long>(shape[0]), static_cast<long long>(shape[1]));
  check(shape == std::vector<int64_t>{2, 3}, "shape is [2, 3]");
  std::printf("kinds: %s %s %s %s %s\n", root.tagKind().c_str(), top[0].tagKind().c_str(),
              loaded.at("params").tagKind().c_str(), loaded.at("lr").tagKind().c_str(),
              loaded.at("best").tagKind().c_str());
  check(root.tagKind() == "Tuple" && top[0].tagKind() == "GenericDict" && loaded.at("params").tagKind() == "GenericList",
        "the containers' kinds");

  // ---- dicts: handles, insert, insert_or_assign, erase and order ----
  auto alias = state;  // the same dict
  alias.insert("extra", 1);
  auto snapshot = state.copy();  // another dict
  snapshot.insert("only_in_copy", 1);
  std::printf("alias: %zu %d, copy: %zu %d\n", state.size(), state.contains("extra") ? 1 : 0, snapshot.size(),
              state.contains("only_in_copy") ? 1 : 0);
  check(state.size() == 11 && state.contains("extra") && snapshot.size() == 12 && !state.contains("only_in_copy"),
        "a copy of the handle shares the entries, copy() does not");

  auto kept = state.insert("lr", 1.0);
  std::printf("insert existing: added %d, value %s\n", kept.second ? 1 : 0, number(kept.first->value().toDouble()).c_str());
  check(!kept.second && state.at("lr").toDouble() == 0.01, "insert keeps the existing value");
  auto assigned = c10::IValue(state).toGenericDict().insert_or_assign("epoch", 4);
  std::printf("insert_or_assign: added %d, epoch %lld\n", assigned.second ? 1 : 0,
              static_cast<long long>(state.at("epoch").toInt()));
  check(!assigned.second && state.at("epoch").toInt() == 4, "insert_or_assign through an IValue's dict replaces");

  const size_t erased = state.erase("amp");
  const size_t erased_again = state.erase("amp");
  state.insert("amp", true);
  std::printf("erased %zu then %zu; keys: %s\n", erased, erased_again, keys_of(state).c_str());
  check(erased == 1 && erased_again == 0, "erase says how many it erased");
  check(keys_of(state) == "epoch lr name best params shape optimizer scheduler layers extra amp",
        "an erased key inserted again comes last");
  check(state.find("nothing") == state.end() && !state.contains("nothing"), "find of an absent key is end()");
  check(throws([&] { (void)state.at("nothing"); }), "at() of an absent key throws");

  // Keys: tensors by identity, -0.0 as 0.0, None refused.
  c10::impl::GenericDict by_tensor(c10::AnyType::get(), c10::AnyType::get());
  auto t1 = torch::ones({2});
  auto t2 = torch::ones({2});
  by_tensor.insert(t1, 1);
  by_tensor.insert(t2, 2);
  auto again = by_tensor.insert(t1, 3);
  std::printf("tensor keys: %zu, t1 again added %d\n", by_tensor.size(), again.second ? 1 : 0);
  check(by_tensor.size() == 2 && !again.second && by_tensor.at(t2).toInt() == 2, "tensor keys are by identity");
  c10::impl::GenericDict by_double(c10::AnyType::get(), c10::AnyType::get());
  by_double.insert(0.0, "zero");
  auto minus_zero = by_double.insert(-0.0, "minus zero");
  std::printf("-0.0 added %d, at(-0.0) %s\n", minus_zero.second ? 1 : 0, by_double.at(-0.0).toStringRef().c_str());
  check(!minus_zero.second && by_double.size() == 1, "-0.0 and 0.0 are one key");
  check(throws([&] { by_double.insert(c10::IValue(), 1); }), "None is not a key");

  // ---- lists: handles, set, iteration ----
  c10::impl::GenericList l(c10::AnyType::get());
  l.push_back(1);
  l.push_back("two");
  l.push_back(2.5);
  std::string kinds;
  for (const auto& e : l) {
    c10::IValue v = e;
    kinds += (kinds.empty() ? "" : " ") + v.tagKind();
  }
  std::printf("list kinds: %s\n", kinds.c_str());
  check(kinds == "Int String Double", "the list's elements keep their kinds");
  l.set(1, "TWO");
  auto l_alias = l;
  l_alias.push_back(c10::IValue());
  auto l_copy = l.copy();
  l_copy.push_back(5);
  std::printf("list: %zu, [1] %s, copy %zu, same %d %d\n", l.size(), l.get(1).toStringRef().c_str(), l_copy.size(),
              l.is(l_alias) ? 1 : 0, l.is(l_copy) ? 1 : 0);
  check(l.size() == 4 && l.get(3).isNone() && l_copy.size() == 5 && l.is(l_alias) && !l.is(l_copy),
        "a copy of the handle shares the elements, copy() does not");
  c10::IValue lv(l);
  double sum = 0;
  for (const auto& e : lv.toListRef()) {
    if (e.isInt()) sum += static_cast<double>(e.toInt());
    if (e.isDouble()) sum += e.toDouble();
  }
  lv.toList().push_back(7);
  std::printf("list through an IValue: sum %s, size %zu\n", number(sum).c_str(), l.size());
  check(sum == 3.5 && l.size() == 5 && l.get(4).toInt() == 7, "toList() of a generic list is the list itself");
  check(throws([&] { (void)l.get(10); }), "get() past the end throws");
  c10::impl::GenericList ints(c10::IntType::get());
  ints.push_back(5);
  ints.push_back(6);
  auto int_vector = c10::IValue(ints).toIntVector();
  std::printf("int list: %lld %lld\n", static_cast<long long>(int_vector[0]), static_cast<long long>(int_vector[1]));
  check(int_vector == std::vector<int64_t>{5, 6}, "toIntVector of a list of ints");

  // ---- tuples ----
  auto pair = c10::ivalue::Tuple::create({c10::IValue(1), c10::IValue("a")});
  auto triple = c10::ivalue::Tuple::create(std::vector<c10::IValue>{c10::IValue(), 1.5, false});
  c10::IValue tv = triple;
  std::printf("tuples: %zu %zu, %s %s\n", pair->elements().size(), tv.toTupleRef().elements().size(),
              pair->elements()[1].toStringRef().c_str(), number(tv.toTuple()->elements()[1].toDouble()).c_str());
  check(pair->elements().size() == 2 && pair->elements()[0].toInt() == 1 && tv.isTuple() &&
            tv.toTupleRef().elements()[0].isNone() && !tv.toTupleRef().elements()[2].toBool(),
        "tuples from an initializer list and from a vector");

  // ---- accessors of the wrong kind throw ----
  bool threw = false;
  try {
    (void)c10::IValue(3).toTuple();
  } catch (const c10::Error&) {
    threw = true;
  }
  check(threw, "toTuple() of an int throws c10::Error");
  threw = false;
  try {
    (void)lv.toGenericDict();
  } catch (const c10::Error&) {
    threw = true;
  }
  check(threw, "toGenericDict() of a list throws c10::Error");

  return porting::finish();
}
