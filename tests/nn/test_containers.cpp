// Containers and utilities in LibTorch's spelling: OrderedDict's full API, AnyModule / AnyValue,
// Sequential of modules whose forward is not Tensor -> Tensor, ParameterList / ParameterDict and
// their names, Cloneable / clone(), and the two print styles (Note [Print styles]).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "graft/graft.h"

namespace graft::test {
namespace {

namespace nn = graft::nn;

// The message of the graft::Error that fn throws ("" when it throws none).
template <class F> std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const graft::Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& piece) { return s.find(piece) != std::string::npos; }

template <class T> std::string printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

// ---- OrderedDict ----

TEST(OrderedDict, InitializerListIndexAndKeyAccess) {
  OrderedDict<std::string, int> d{{"a", 1}, {"b", 2}, {"c", 3}};
  EXPECT_EQ(d.size(), 3u);
  EXPECT_FALSE(d.is_empty());
  EXPECT_EQ(d["b"], 2);
  EXPECT_EQ(d[0].key(), "a");
  EXPECT_EQ(d[2].value(), 3);
  EXPECT_EQ(d.front().key(), "a");
  EXPECT_EQ(d.back().value(), 3);
  EXPECT_EQ(*d[1], 2);
  EXPECT_EQ(d[1].pair(), std::make_pair(std::string("b"), 2));
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(d.values(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(d.items().size(), 3u);
  EXPECT_EQ(d.key_description(), "Key");
  d["b"] = 20;
  EXPECT_EQ(d.find("b") != nullptr ? *d.find("b") : 0, 20);
  EXPECT_EQ(d.find("z"), nullptr);
  EXPECT_TRUE(d.contains("c"));
  EXPECT_FALSE(d.contains("z"));
  std::string order;
  for (const auto& item : d) order += item.key();
  EXPECT_EQ(order, "abc");
}

TEST(OrderedDict, ItemArrowReachesTheValue) {
  OrderedDict<std::string, std::vector<int>> d;
  d.insert("v", std::vector<int>{1, 2, 3});
  EXPECT_EQ(d.front()->size(), 3u);
  const auto& cd = d;
  EXPECT_EQ(cd.back()->at(2), 3);
  EXPECT_EQ(d[0].first, "v");  // pair-like access is kept
}

TEST(OrderedDict, InsertUpdateEraseAndPop) {
  OrderedDict<std::string, int> d("parameter");
  EXPECT_EQ(d.key_description(), "parameter");
  d.insert("x", 1);
  d.insert("y", 2);
  d.insert("z", 3);
  const std::string dup = error_of([&] { d.insert("y", 5); });
  EXPECT_TRUE(has(dup, "parameter 'y' already defined")) << dup;  // LibTorch's phrase
  EXPECT_EQ(d["y"], 2);  // unchanged

  OrderedDict<std::string, int> other{{"z", 30}, {"w", 4}};
  d.update(other);  // overwrites z, appends w
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"x", "y", "z", "w"}));
  EXPECT_EQ(d["z"], 30);

  d.erase("y");
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"x", "z", "w"}));
  EXPECT_EQ(d["w"], 4);  // the index follows the shifted items
  EXPECT_EQ(d[1].key(), "z");
  EXPECT_EQ(d.pop("x"), 1);
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"z", "w"}));
  EXPECT_EQ(d["z"], 30);
  d.insert("x", 7);  // a popped key may come back
  EXPECT_EQ(d.back().key(), "x");

  d.update(OrderedDict<std::string, int>{{"n", 9}});
  EXPECT_EQ(d["n"], 9);
  d.reserve(100);
  EXPECT_EQ(d.size(), 4u);
  d.clear();
  EXPECT_TRUE(d.is_empty());
  EXPECT_FALSE(d.contains("z"));
}

TEST(OrderedDict, ErrorsNameTheKeyAndTheProblem) {
  OrderedDict<std::string, int> d("buffer");
  EXPECT_TRUE(has(error_of([&] { (void)d.front(); }), "empty")) << error_of([&] { (void)d.front(); });
  EXPECT_TRUE(has(error_of([&] { (void)d.back(); }), "empty"));
  d.insert("a", 1);
  const std::string missing = error_of([&] { (void)d["q"]; });
  EXPECT_TRUE(has(missing, "buffer 'q'")) << missing;
  EXPECT_TRUE(has(missing, "the keys are: a")) << missing;
  const std::string index = error_of([&] { (void)d[size_t{3}]; });
  EXPECT_TRUE(has(index, "below the size 1")) << index;
  EXPECT_TRUE(has(error_of([&] { d.erase("q"); }), "'q'"));
  EXPECT_TRUE(has(error_of([&] { (void)d.pop("q"); }), "'q'"));
  const std::string repeated = error_of([] { OrderedDict<std::string, int> r{{"a", 1}, {"a", 2}}; });
  EXPECT_TRUE(has(repeated, "Key 'a' already defined")) << repeated;
}

TEST(OrderedDict, IntegerKeysAndEquality) {
  OrderedDict<int, std::string> d{{3, "three"}, {1, "one"}};
  EXPECT_EQ(d.find(3) != nullptr ? *d.find(3) : "", "three");
  EXPECT_TRUE(has(error_of([&] { (void)d.pop(7); }), "'7'"));
  OrderedDict<int, std::string> same{{3, "three"}, {1, "one"}};
  OrderedDict<int, std::string> reordered{{1, "one"}, {3, "three"}};
  EXPECT_TRUE(d == same);
  EXPECT_FALSE(d == reordered);
}

// ---- AnyModule ----

struct AddImpl : nn::Module {
  Tensor forward(const Tensor& a, const Tensor& b) { return a + b; }
};
GRAFT_MODULE(Add);

struct SplitImpl : nn::Cloneable<SplitImpl> {  // Tensor -> (x, 2x)
  void reset() override {}
  std::tuple<Tensor, Tensor> forward(const Tensor& x) { return {x, x * 2}; }
};
GRAFT_MODULE(Split);

struct JoinImpl : nn::Cloneable<JoinImpl> {  // (a, b) -> a * b
  void reset() override {}
  Tensor forward(std::tuple<Tensor, Tensor> ab) { return std::get<0>(ab) * std::get<1>(ab); }
};
GRAFT_MODULE(Join);

struct ScaleImpl : nn::Module {  // a non-Tensor argument and result
  double forward(const Tensor& x, double factor) { return x.sum().item<double>() * factor; }
};
GRAFT_MODULE(Scale);

TEST(AnyModule, ForwardsToTheHeldModule) {
  nn::Linear linear(3, 4);
  nn::AnyModule any(linear);
  EXPECT_FALSE(any.is_empty());
  Tensor x = randn({2, 3});
  EXPECT_TRUE(graft::equal(any.forward(x), linear(x)));
  EXPECT_TRUE(graft::equal(any.forward<Tensor>(x), linear(x)));
  EXPECT_TRUE(graft::equal(any.any_forward(x).get<Tensor>(), linear(x)));
  EXPECT_EQ(any.ptr().get(), linear.ptr().get());
  EXPECT_EQ(any.ptr<nn::LinearImpl>().get(), linear.ptr().get());
  EXPECT_TRUE(has(error_of([&] { any.ptr<nn::Conv2dImpl>(); }), "Attempted to cast module"));  // LibTorch: throws
  EXPECT_EQ(&any.get<nn::LinearImpl>(), linear.get());
  nn::Linear back = any.get<nn::Linear>();
  EXPECT_EQ(back.get(), linear.get());
  EXPECT_TRUE(any.type_info() == typeid(nn::LinearImpl));
  EXPECT_TRUE(nn::AnyModule().is_empty());
  // From a shared_ptr and from a module value.
  EXPECT_FALSE(nn::AnyModule(std::make_shared<nn::ReLUImpl>()).is_empty());
  EXPECT_TRUE(nn::AnyModule(nn::ReLUImpl()).forward(-x.abs()).abs().sum().item<double>() == 0.0);
  // Copies share the module.
  nn::AnyModule copy = any;
  EXPECT_EQ(copy.ptr().get(), any.ptr().get());
}

TEST(AnyModule, OtherSignatures) {
  nn::AnyModule add(Add{});
  Tensor a = full({2}, 1.5), b = full({2}, 2.0);
  EXPECT_TRUE(graft::equal(add.forward(a, b), full({2}, 3.5)));
  nn::AnyModule split(Split{});
  auto [x, twice] = split.forward<std::tuple<Tensor, Tensor>>(a);
  EXPECT_TRUE(graft::equal(twice, full({2}, 3.0)));
  nn::AnyModule scale(Scale{});
  EXPECT_DOUBLE_EQ(scale.forward<double>(a, 2.0), 6.0);
}

TEST(AnyModule, MismatchedCallsNameTheModuleAndSignature) {
  nn::AnyModule add(Add{});
  Tensor a = ones({2});
  const std::string count = error_of([&] { add.forward(a); });
  EXPECT_TRUE(has(count, "AnyModule::forward")) << count;
  EXPECT_TRUE(has(count, "2 arguments for Add::forward(graft::Tensor, graft::Tensor) -> graft::Tensor")) << count;
  EXPECT_TRUE(has(count, "got 1 argument")) << count;
  nn::AnyModule scale(Scale{});
  const std::string type = error_of([&] { scale.forward<double>(a, 2); });  // int, not double
  EXPECT_TRUE(has(type, "argument 2 of type double")) << type;
  EXPECT_TRUE(has(type, "a value of type int")) << type;
  const std::string result = error_of([&] { (void)scale.forward(a, 2.0); });  // a double, asked as Tensor
  EXPECT_TRUE(has(result, "graft::Tensor")) << result;
  EXPECT_TRUE(has(result, "double")) << result;
  const std::string empty = error_of([] { nn::AnyModule().forward(ones({1})); });
  EXPECT_TRUE(has(empty, "empty AnyModule")) << empty;
  const std::string get = error_of([&] { (void)add.get<nn::LinearImpl>(); });
  EXPECT_TRUE(has(get, "graft::nn::LinearImpl")) << get;
}

TEST(AnyModule, CloneIsADeepCopy) {
  nn::AnyModule any(nn::Linear(3, 2));
  nn::AnyModule c = any.clone();
  auto& orig = any.get<nn::LinearImpl>();
  auto& copy = c.get<nn::LinearImpl>();
  EXPECT_NE(&orig, &copy);
  EXPECT_TRUE(graft::equal(copy.weight, orig.weight));
  {
    NoGradGuard g;
    copy.weight.fill_(0.0);
  }
  EXPECT_FALSE(graft::equal(orig.weight, copy.weight));
  EXPECT_TRUE(nn::AnyModule().clone().is_empty());
}

TEST(AnyModule, TensorForwardRunsTheModuleHooks) {
  nn::Linear linear(2, 2);
  int calls = 0;
  linear->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++calls; });
  nn::AnyModule any(linear);
  any.forward(ones({1, 2}));
  EXPECT_EQ(calls, 1);
}

// ---- Sequential of AnyModules ----

TEST(SequentialAny, MultiArgumentFirstModuleAndTuples) {
  nn::Sequential seq(Add{}, nn::ReLU());
  Tensor a = tensor({1.0, -3.0}), b = tensor({1.0, 1.0});
  EXPECT_TRUE(graft::equal(seq->forward(a, b), tensor({2.0, 0.0})));
  // A tuple handed from one module to the next.
  nn::Sequential tuple(nn::Linear(2, 2), Split{}, Join{});
  Tensor x = randn({3, 2});
  Tensor y = tuple->at<nn::LinearImpl>(0).forward(x);
  EXPECT_TRUE(graft::allclose(tuple->forward(x), y * y * 2));
  EXPECT_TRUE(graft::allclose(tuple(x), y * y * 2));
  // A non-Tensor result, named.
  nn::Sequential to_tuple(nn::Linear(2, 2), Split{});
  auto [p, q] = to_tuple->forward<std::tuple<Tensor, Tensor>>(x);
  EXPECT_TRUE(graft::allclose(q, p * 2));
  const std::string wrong = error_of([&] { to_tuple->forward(x); });
  EXPECT_TRUE(has(wrong, "Sequential::forward")) << wrong;
  EXPECT_TRUE(has(wrong, "std::tuple<graft::Tensor, graft::Tensor>")) << wrong;
  const std::string empty = error_of([] { nn::Sequential()->forward(ones({1}), ones({1})); });
  EXPECT_TRUE(has(empty, "empty")) << empty;
}

TEST(SequentialAny, PushBackIndexingIterationExtend) {
  nn::Sequential seq;
  seq->push_back("fc", nn::Linear(2, 3));
  seq->push_back(nn::AnyModule(nn::ReLU()));
  seq->push_back("join", nn::AnyModule(Split{}));
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(seq->named_children().keys(), (std::vector<std::string>{"fc", "1", "join"}));
  EXPECT_NE(std::dynamic_pointer_cast<nn::LinearImpl>(seq[0]), nullptr);
  EXPECT_NE(seq->ptr<nn::ReLUImpl>(1), nullptr);
  EXPECT_EQ(seq->ptr(2)->name(), "Split");
  size_t n = 0;
  for (const auto& m : *seq) n += m.ptr() != nullptr;
  EXPECT_EQ(n, 3u);
  nn::Sequential more(nn::Tanh{});
  seq->extend(more);
  seq->extend(std::vector<nn::AnyModule>{nn::AnyModule(nn::Sigmoid())});
  EXPECT_EQ(seq->size(), 5u);
  EXPECT_EQ(seq->ptr(4)->name(), "Sigmoid");
}

TEST(SequentialAny, FusionStaysOnForTensorModules) {
  nn::Sequential seq(nn::Linear(3, 2), nn::ReLU());
  Tensor x = randn({4, 3}).requires_grad_();
  Tensor y = seq(x);
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_EQ(std::string(y.grad_fn()->name()), "FusedLinearReluBackward0");
  seq->set_fusion(false);
  EXPECT_EQ(std::string(seq(x).grad_fn()->name()), "ReluBackward0");
  // A fused pair after a multi-argument module is still fused.
  nn::Sequential mixed(Add{}, nn::Linear(3, 2), nn::ReLU());
  EXPECT_EQ(std::string(mixed->forward(x, x).grad_fn()->name()), "FusedLinearReluBackward0");
}

TEST(SequentialAny, CloneKeepsSignatures) {
  nn::Sequential seq(nn::Linear(2, 2), Split{}, Join{});
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->clone());
  ASSERT_NE(copy, nullptr);
  Tensor x = randn({1, 2});
  EXPECT_TRUE(graft::allclose(copy->forward(x), seq->forward(x)));
  EXPECT_NE(copy->ptr(0).get(), seq->ptr(0).get());
}

// ---- ParameterList / ParameterDict ----

struct OwnerImpl : nn::Module {
  OwnerImpl() {
    params = register_module("params", nn::ParameterList(ones({2, 3}), zeros({3})));
    dict = register_module("dict", nn::ParameterDict(OrderedDict<std::string, Tensor>{{"scale", ones({4})}}));
  }
  nn::ParameterList params{nullptr};
  nn::ParameterDict dict{nullptr};
};
GRAFT_MODULE(Owner);

TEST(ParameterContainers, NamesAsPyTorchNamesThem) {
  Owner owner;
  EXPECT_EQ(owner->named_parameters().keys(), (std::vector<std::string>{"params.0", "params.1", "dict.scale"}));
  EXPECT_EQ(owner->parameters().size(), 3u);
  // append keeps requires_grad, as LibTorch's (PyTorch's makes every entry a Parameter).
  EXPECT_FALSE(owner->params[0].requires_grad());
  owner->params->append(ones({1}).requires_grad_());
  EXPECT_TRUE(owner->params[2].requires_grad());
  EXPECT_EQ(owner->state_dict().keys(),
            (std::vector<std::string>{"params.0", "params.1", "params.2", "dict.scale"}));
}

TEST(ParameterContainers, ParameterListApi) {
  nn::ParameterList list;
  EXPECT_TRUE(list->is_empty());
  list->append(ones({2}));
  list->append(zeros({3}).requires_grad_(false));
  list->extend(std::vector<Tensor>{full({1}, 5.0)});
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->at(2).item<double>(), 5.0);
  EXPECT_FALSE(list[1].requires_grad());  // append keeps requires_grad, as LibTorch's
  list->insert(0, full({1}, 7.0));
  EXPECT_EQ(list->named_parameters().keys(), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(list[0].item<double>(), 7.0);
  Tensor popped = list->pop(0);
  EXPECT_EQ(popped.item<double>(), 7.0);
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list[2].item<double>(), 5.0);
  std::vector<std::string> keys;
  for (const auto& item : *list) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"0", "1", "2"}));
  const std::string bad = error_of([&] { (void)list->at(9); });
  EXPECT_TRUE(has(bad, "ParameterList::at")) << bad;
  list->clear();
  EXPECT_EQ(list->size(), 0u);
}

TEST(ParameterContainers, ParameterDictApi) {
  nn::ParameterDict dict;
  dict->insert("w", ones({2, 2}));
  dict->insert("b", zeros({2}));
  EXPECT_TRUE(dict->contains("w"));
  EXPECT_FALSE(dict->contains("z"));
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"w", "b"}));
  EXPECT_EQ(dict->values().size(), 2u);
  EXPECT_EQ(dict->items()[1].key(), "b");
  EXPECT_TRUE(graft::equal(dict["w"], ones({2, 2})));
  EXPECT_TRUE(graft::equal(dict->get("b"), zeros({2})));
  EXPECT_TRUE(has(error_of([&] { dict->insert("w", ones({1})); }), "'w'"));
  nn::ParameterDict other;
  other->insert("b", full({2}, 3.0));
  other->insert("c", full({1}, 4.0));
  dict->update(*other);  // overwrites b, appends c
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"w", "b", "c"}));
  EXPECT_EQ(dict["b"][0].item<double>(), 3.0);
  Tensor w = dict->pop("w");
  EXPECT_TRUE(graft::equal(w, ones({2, 2})));
  EXPECT_EQ(dict->size(), 2u);
  const std::string missing = error_of([&] { (void)dict["w"]; });
  EXPECT_TRUE(has(missing, "parameter 'w'")) << missing;
  size_t n = 0;
  for (const auto& item : *dict) n += item.value().defined();
  EXPECT_EQ(n, 2u);
  dict->clear();
  EXPECT_TRUE(dict->empty());
}

TEST(ParameterContainers, CloneCopiesValues) {
  nn::ParameterList list(full({2}, 3.0).requires_grad_(), zeros({1}));
  auto copy = std::dynamic_pointer_cast<nn::ParameterListImpl>(list->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(graft::equal(copy->at(0), list[0]));
  EXPECT_NE(copy->at(0).data_ptr(), list[0].data_ptr());
  EXPECT_TRUE(copy->at(0).requires_grad());
  EXPECT_FALSE(copy->at(1).requires_grad());
  nn::ParameterDict dict(OrderedDict<std::string, Tensor>{{"k", ones({2})}});
  auto dcopy = std::dynamic_pointer_cast<nn::ParameterDictImpl>(dict->clone());
  ASSERT_NE(dcopy, nullptr);
  EXPECT_EQ(dcopy->keys(), (std::vector<std::string>{"k"}));
  EXPECT_NE(dcopy->get("k").data_ptr(), dict["k"].data_ptr());
}

// ---- Cloneable ----

struct CloneNetImpl : nn::Cloneable<CloneNetImpl> {
  explicit CloneNetImpl(int64_t width) : width(width) { reset(); }
  void reset() override {
    fc = register_module("fc", nn::Linear(width, 2));
    bn = register_module("bn", nn::BatchNorm1d(2));
    scale = register_parameter("scale", full({1}, 2.0));
    register_buffer("steps", zeros({1}, kInt64));
    params = register_module("params", nn::ParameterList(ones({3})));
  }
  Tensor forward(const Tensor& x) { return bn(fc(x)) * scale; }
  int64_t width;
  nn::Linear fc{nullptr};
  nn::BatchNorm1d bn{nullptr};
  nn::ParameterList params{nullptr};
  Tensor scale;
};
GRAFT_MODULE(CloneNet);

template <class M>
void expect_independent_equal_copy(const std::shared_ptr<nn::Module>& original,
                                   const std::shared_ptr<nn::Module>& copy) {
  ASSERT_NE(std::dynamic_pointer_cast<M>(copy), nullptr);
  const auto a = original->named_parameters(), b = copy->named_parameters();
  ASSERT_EQ(a.keys(), b.keys());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(graft::equal(a[i].value(), b[i].value())) << a[i].key();
    EXPECT_NE(a[i].value().data_ptr(), b[i].value().data_ptr()) << a[i].key();
    EXPECT_EQ(a[i].value().requires_grad(), b[i].value().requires_grad()) << a[i].key();
  }
  const auto ab = original->named_buffers(), bb = copy->named_buffers();
  ASSERT_EQ(ab.keys(), bb.keys());
  for (size_t i = 0; i < ab.size(); ++i) {
    EXPECT_TRUE(graft::equal(ab[i].value(), bb[i].value())) << ab[i].key();
    EXPECT_NE(ab[i].value().data_ptr(), bb[i].value().data_ptr()) << ab[i].key();
  }
  // Writing the copy leaves the original alone.
  NoGradGuard g;
  for (auto& p : copy->parameters()) p.add_(1.0);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FALSE(graft::equal(a[i].value(), b[i].value())) << a[i].key();
}

TEST(Cloneable, BuiltInModulesCloneDeeply) {
  nn::Linear linear(3, 4);
  expect_independent_equal_copy<nn::LinearImpl>(linear.ptr(), linear->clone());
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).stride(2).bias(false));
  auto conv_copy = conv->clone();
  expect_independent_equal_copy<nn::Conv2dImpl>(conv.ptr(), conv_copy);
  EXPECT_EQ(std::dynamic_pointer_cast<nn::Conv2dImpl>(conv_copy)->options.stride()[0], 2);
  nn::BatchNorm2d bn(4);
  bn(randn({2, 4, 3, 3}));  // moves the running statistics off their initial values
  expect_independent_equal_copy<nn::BatchNorm2dImpl>(bn.ptr(), bn->clone());
  nn::Sequential seq(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  expect_independent_equal_copy<nn::SequentialImpl>(seq.ptr(), seq->clone());
}

TEST(Cloneable, UserModuleClonesChildrenAndMembers) {
  CloneNet net(3);
  {
    NoGradGuard g;
    net->fc->weight.fill_(0.5);
    net->named_buffers()["steps"].fill_(7);
  }
  net->eval();
  auto copy = std::dynamic_pointer_cast<CloneNetImpl>(net->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_FALSE(copy->is_training());
  EXPECT_EQ(copy->width, 3);
  // The members point at the copy's own registered modules and tensors.
  EXPECT_EQ(copy->fc.get(), copy->named_children()["fc"].get());
  EXPECT_NE(copy->fc.get(), net->fc.get());
  EXPECT_TRUE(graft::equal(copy->fc->weight, net->fc->weight));
  EXPECT_EQ(copy->named_buffers()["steps"].item<int64_t>(), 7);
  expect_independent_equal_copy<CloneNetImpl>(net.ptr(), copy);
  Tensor x = randn({5, 3});
  EXPECT_FALSE(graft::allclose(copy->forward(x), net->forward(x)));  // the copy's parameters were moved by +1
}

TEST(Cloneable, NonCloneableModuleSaysHow) {
  Owner owner;
  const std::string e = error_of([&] { (void)owner->clone(); });
  EXPECT_TRUE(has(e, "Cloneable")) << e;
}

// ---- printing ----

TEST(PrintStyle, LibTorchIsTheDefault) {
  EXPECT_EQ(nn::print_style(), nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::Linear(3, 4)), "graft::nn::Linear(in_features=3, out_features=4, bias=true)");
  const PrintStyleGuard python(PrintStyle::Python);
  EXPECT_EQ(printed(nn::Linear(3, 4)), "Linear(in_features=3, out_features=4, bias=True)");
}

TEST(PrintStyle, LibTorchForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::Linear(3, 4)), "graft::nn::Linear(in_features=3, out_features=4, bias=true)");
  EXPECT_EQ(printed(nn::Linear(nn::LinearOptions(3, 4).bias(false))),
            "graft::nn::Linear(in_features=3, out_features=4, bias=false)");
  EXPECT_EQ(printed(nn::Conv2d(1, 2, 3)), "graft::nn::Conv2d(1, 2, kernel_size=[3, 3], stride=[1, 1])");
  EXPECT_EQ(printed(nn::Conv2d(nn::Conv2dOptions(2, 4, {3, 5}).stride(2).padding(1).dilation(2).groups(2).bias(false))),
            "graft::nn::Conv2d(2, 4, kernel_size=[3, 5], stride=[2, 2], padding=[1, 1], dilation=[2, 2], groups=2, "
            "bias=false)");
  EXPECT_EQ(printed(nn::BatchNorm2d(4)),
            "graft::nn::BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
  EXPECT_EQ(printed(nn::ReLU()), "graft::nn::ReLU()");
  EXPECT_EQ(printed(nn::ReLU(nn::ReLUOptions().inplace(true))), "graft::nn::ReLU(inplace=true)");
  EXPECT_EQ(printed(nn::Dropout(0.25)), "graft::nn::Dropout(p=0.25, inplace=false)");
  EXPECT_EQ(printed(nn::Tanh()), "graft::nn::Tanh()");
  EXPECT_EQ(printed(nn::Sequential(nn::Linear(2, 3), nn::Sequential(nn::ReLU(), nn::Dropout(0.5)))),
            "graft::nn::Sequential(\n"
            "  (0): graft::nn::Linear(in_features=2, out_features=3, bias=true)\n"
            "  (1): graft::nn::Sequential(\n"
            "    (0): graft::nn::ReLU()\n"
            "    (1): graft::nn::Dropout(p=0.5, inplace=false)\n"
            "  )\n"
            ")");
  EXPECT_EQ(printed(nn::ParameterList(ones({2, 3}))),
            "graft::nn::ParameterList(\n(0): Parameter containing: [Float of size [2, 3]]\n)");
  // A user module prints its class name (LibTorch's name()), then its children.
  EXPECT_EQ(printed(Owner()),
            "graft::test::(anonymous namespace)::OwnerImpl(\n"
            "  (params): graft::nn::ParameterList(\n(0): Parameter containing: [Float of size [2, 3]]\n"
            "(1): Parameter containing: [Float of size [3]]\n)\n"
            "  (dict): graft::nn::ParameterDict(\n(scale): Parameter containing: [Float of size [4]]\n)\n"
            ")");
}

TEST(PrintStyle, GuardRestoresAndPythonFormsOfParameterContainers) {
  {
    nn::PrintStyleGuard style(nn::PrintStyle::Python);
    EXPECT_EQ(nn::print_style(), nn::PrintStyle::Python);
  }
  EXPECT_EQ(nn::print_style(), nn::PrintStyle::LibTorch);
  const PrintStyleGuard python(PrintStyle::Python);
  // PyTorch 1.13's reprs.
  EXPECT_EQ(printed(nn::ParameterList(zeros({2, 3}), zeros({3}))),
            "ParameterList(\n"
            "    (0): Parameter containing: [torch.float32 of size 2x3]\n"
            "    (1): Parameter containing: [torch.float32 of size 3]\n"
            ")");
  EXPECT_EQ(printed(nn::ParameterDict(OrderedDict<std::string, Tensor>{{"b", zeros({2, 2}, kFloat64)}})),
            "ParameterDict(  (b): Parameter containing: [torch.DoubleTensor of size 2x2])");
}


// ---- LibTorch's indexing surface (issue 32) ----

TEST(ContainerIndexing, ModuleListIndexReturnsSharedPtrAndPtrOfWrongTypeIsNull) {
  nn::Linear fc(2, 3);
  nn::ModuleList list(fc, nn::ReLU());
  std::shared_ptr<nn::Module> first = list[0];
  EXPECT_EQ(first.get(), fc.get());
  EXPECT_EQ(list[0]->as<nn::LinearImpl>(), fc.get());
  EXPECT_EQ(list[1]->as<nn::LinearImpl>(), nullptr);
  EXPECT_EQ(list->ptr<nn::LinearImpl>(0), fc.ptr());
  EXPECT_EQ(list->ptr<nn::LinearImpl>(1), nullptr);  // LibTorch's dynamic_pointer_cast
  const std::string at = error_of([&] { list->at<nn::LinearImpl>(1); });
  EXPECT_TRUE(has(at, "ModuleList::at") && has(at, "index 1") && has(at, "Attempted to cast module")) << at;
  const std::string range = error_of([&] { list->ptr(2); });
  EXPECT_TRUE(has(range, "ModuleList::operator[]") && has(range, "Index out of range")) << range;
  EXPECT_TRUE(has(error_of([&] { list->insert(3, nn::ReLU()); }), "Index out of range"));
}

TEST(ContainerIndexing, ModuleListInsertRenumbersEveryShiftedChild) {
  // PyTorch's ModuleList.insert: the modules after the index move up one name each. Hand-derived:
  // [A(2->2), relu, B(2->1)] with insert(1, C(2->2)) and insert(0, tanh) -> [tanh, A, C, relu, B].
  nn::Linear a(2, 2), b(2, 1), c(2, 2);
  nn::ModuleList list(a, nn::ReLU(), b);
  list->insert(1, c);
  list->insert(0, std::make_shared<nn::TanhImpl>());
  list->insert(list->size(), nn::SigmoidImpl());
  EXPECT_EQ(list->named_children().keys(), (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
  EXPECT_EQ(list->named_parameters().keys(),
            (std::vector<std::string>{"1.weight", "1.bias", "2.weight", "2.bias", "4.weight", "4.bias"}));
  EXPECT_EQ(list->named_children()["1"].get(), a.get());
  EXPECT_EQ(list->named_children()["2"].get(), c.get());
  EXPECT_EQ(list->named_children()["4"].get(), b.get());
  EXPECT_TRUE(list->named_parameters()["4.weight"].is_alias_of(b->weight));
}

TEST(ContainerIndexing, ModuleListExtendsWithItselfASequentialAndAnyModules) {
  nn::ModuleList list(nn::Linear(2, 2), nn::ReLU());
  list->extend(*list);  // the list's own modules again, read before the first append
  ASSERT_EQ(list->size(), 4u);
  EXPECT_EQ(list[2], list[0]);
  EXPECT_EQ(list[3], list[1]);
  nn::Sequential seq(nn::Tanh(), nn::Linear(2, 1));
  list->extend(*seq);  // a Sequential's entries are AnyModules
  list->push_back(nn::AnyModule(nn::Sigmoid()));
  ASSERT_EQ(list->size(), 7u);
  EXPECT_EQ(list[4], seq[0]);
  EXPECT_EQ(list[5], seq[1]);
  EXPECT_NE(list[6]->as<nn::SigmoidImpl>(), nullptr);
  EXPECT_TRUE(has(error_of([&] { list->push_back(nn::AnyModule()); }), "empty AnyModule"));
}

TEST(ContainerIndexing, SequentialFromOrderedDictAndNamedAnyModule) {
  OrderedDict<std::string, nn::AnyModule> dict;
  dict.insert("double", nn::AnyModule(nn::Linear(1, 1)));
  dict.insert("act", nn::AnyModule(nn::ReLU()));
  nn::Sequential seq(std::move(dict));
  EXPECT_EQ(seq->named_children().keys(), (std::vector<std::string>{"double", "act"}));
  {
    NoGradGuard no_grad;
    seq->at<nn::LinearImpl>(0).weight.fill_(2.0);
    seq->at<nn::LinearImpl>(0).bias.fill_(-1.0);
  }
  // 3 -> 2 * 3 - 1 = 5 -> 5; -1 -> -3 -> 0.
  EXPECT_TRUE(graft::equal(seq->forward(Tensor(graft::tensor({3.0f, -1.0f}).view({2, 1}))),
                           graft::tensor({5.0f, 0.0f}).view({2, 1})));
  nn::NamedAnyModule named("fc", nn::Linear(2, 2));
  EXPECT_EQ(named.name(), "fc");
  EXPECT_NE(named.module().ptr()->as<nn::LinearImpl>(), nullptr);
  const nn::SequentialImpl::ConstIterator it = seq->begin();
  EXPECT_EQ(it->ptr(), seq[0]);
  const std::string wrong = error_of([&] { seq->ptr<nn::TanhImpl>(1); });
  EXPECT_TRUE(has(wrong, "Sequential::at") && has(wrong, "Attempted to cast module")) << wrong;
}

TEST(ContainerIndexing, AnyModulePtrOfWrongTypeThrowsWithLibTorchsWords) {
  nn::AnyModule any(nn::Linear(2, 2));
  const std::string ptr = error_of([&] { any.ptr<nn::ReLUImpl>(); });
  EXPECT_TRUE(has(ptr, "AnyModule::ptr") &&
              has(ptr, "Attempted to cast module of type graft::nn::LinearImpl to type graft::nn::ReLUImpl"))
      << ptr;
  const std::string get = error_of([&] { any.get<nn::ReLU>(); });
  EXPECT_TRUE(has(get, "AnyModule::get") && has(get, "Attempted to cast module")) << get;
  EXPECT_NE(any.ptr<nn::LinearImpl>(), nullptr);
  EXPECT_NE(any.ptr<nn::Module>(), nullptr);  // a base class of the held module
}

TEST(ContainerIndexing, ModuleDictItemsUpdatePopAndClearKeepTheRegistrationsInStep) {
  nn::Linear fc(2, 2);
  nn::ModuleDict dict(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{
      {"fc", fc.ptr()}, {"act", std::make_shared<nn::ReLUImpl>()}});
  std::shared_ptr<nn::Module> m = dict["fc"];
  EXPECT_EQ(m.get(), fc.get());
  const std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> items = dict->items();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].first, "act");
  OrderedDict<std::string, std::shared_ptr<nn::Module>> more;
  more.insert("act", std::make_shared<nn::TanhImpl>());
  more.insert("out", std::make_shared<nn::LinearImpl>(2, 1));
  dict->update(more);
  nn::ModuleDict other(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{
      {"extra", std::make_shared<nn::SigmoidImpl>()}});
  dict->update(other);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"fc", "act", "out", "extra"}));
  EXPECT_NE(dict["act"]->as<nn::TanhImpl>(), nullptr);
  EXPECT_EQ(dict->named_parameters().keys(),
            (std::vector<std::string>{"fc.weight", "fc.bias", "out.weight", "out.bias"}));
  // pop and clear unregister too (PyTorch's; LibTorch 1.13 keeps the children registered).
  EXPECT_EQ(dict->pop("fc").get(), fc.get());
  EXPECT_FALSE(dict->contains("fc"));
  EXPECT_EQ(dict->named_parameters().keys(), (std::vector<std::string>{"out.weight", "out.bias"}));
  EXPECT_EQ(dict->named_children().keys(), (std::vector<std::string>{"act", "out", "extra"}));
  EXPECT_TRUE(has(error_of([&] { dict->pop("fc"); }), "'fc'"));
  dict->clear();
  EXPECT_TRUE(dict->empty());
  EXPECT_TRUE(dict->named_children().is_empty());
}

TEST(ContainerIndexing, ZeroGradSetsToNoneByDefault) {
  // LibTorch 2.x's default (1.13's was false): docs/porting.md.
  nn::Linear fc(2, 1);
  fc->forward(ones({1, 2})).sum().backward();
  ASSERT_TRUE(fc->weight.grad().defined());
  fc->zero_grad();
  EXPECT_FALSE(fc->weight.grad().defined());
  fc->forward(ones({1, 2})).sum().backward();
  fc->zero_grad(false);
  ASSERT_TRUE(fc->weight.grad().defined());
  EXPECT_TRUE(graft::equal(fc->weight.grad(), zeros({1, 2})));
}

TEST(ModuleAs, TakesTheModuleTypeOrItsHolder) {
  nn::Sequential seq(nn::Linear(3, 2), nn::Dropout2d(0.5));
  const auto children = seq->children();
  // LibTorch's as<Linear>() (a holder) gives the LinearImpl, like as<LinearImpl>().
  nn::LinearImpl* linear = children[0]->as<nn::Linear>();
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear, children[0]->as<nn::LinearImpl>());
  EXPECT_EQ(linear->options.in_features(), 3);
  EXPECT_NE(children[1]->as<nn::Dropout2d>(), nullptr);
  EXPECT_EQ(children[1]->as<nn::Linear>(), nullptr);
  const nn::Module& constant = *children[0];
  EXPECT_EQ(constant.as<nn::Linear>(), linear);
}

}  // namespace
}  // namespace graft::test
