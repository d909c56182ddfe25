// graft::nn::Module: registration, the module tree and dotted names, modes, apply, zero_grad,
// dtype conversion, state dicts and their errors, holders and cloning.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

using nn::Module;

// A leaf with one weight, an optional bias and a counter buffer.
struct LeafImpl : nn::Cloneable<LeafImpl> {
  LeafImpl(int64_t in, int64_t out, bool with_bias = true) : in_(in), out_(out), with_bias_(with_bias) { reset(); }
  void reset() override {
    weight = register_parameter("weight", graft::randn({out_, in_}));
    bias = register_parameter("bias", with_bias_ ? graft::zeros({out_}) : Tensor(), with_bias_);
    steps = register_buffer("steps", graft::zeros({}, kInt64));
  }
  Tensor forward(const Tensor& x) { return nn::functional::linear(x, weight, bias); }
  std::string extra_repr() const override {
    return "in=" + std::to_string(in_) + ", out=" + std::to_string(out_);
  }
  int64_t in_, out_;
  bool with_bias_;
  Tensor weight, bias, steps;
};
GRAFT_MODULE(Leaf);

struct BlockImpl : nn::Cloneable<BlockImpl> {
  BlockImpl() { reset(); }
  void reset() override {
    a = register_module("a", Leaf(3, 4));
    b = register_module("b", Leaf(4, 2, false));
    scale = register_buffer("scale", graft::ones({2}));
  }
  Tensor forward(const Tensor& x) { return b(a(x)) * scale; }
  Leaf a{nullptr}, b{nullptr};
  Tensor scale;
};
GRAFT_MODULE(Block);

struct NetImpl : nn::Cloneable<NetImpl> {
  NetImpl() { reset(); }
  void reset() override {
    features = register_module("features", Block());
    head = register_module("head", Leaf(2, 1));
    temperature = register_parameter("temperature", graft::ones({1}));
  }
  Tensor forward(const Tensor& x) { return head(features(x)) * temperature; }
  Block features{nullptr};
  Leaf head{nullptr};
  Tensor temperature;
};
GRAFT_MODULE(Net);

std::vector<std::string> keys_of(const OrderedDict<std::string, Tensor>& d) { return d.keys(); }

TEST(Module, DottedNamesInPyTorchOrder) {
  Net net;
  EXPECT_EQ(keys_of(net->named_parameters()),
            (std::vector<std::string>{"temperature", "features.a.weight", "features.a.bias", "features.b.weight",
                                      "head.weight", "head.bias"}));
  EXPECT_EQ(keys_of(net->named_parameters(/*recurse=*/false)), (std::vector<std::string>{"temperature"}));
  EXPECT_EQ(net->parameters().size(), 6u);
  EXPECT_EQ(keys_of(net->named_buffers()),
            (std::vector<std::string>{"features.scale", "features.a.steps", "features.b.steps", "head.steps"}));
  // state_dict: each module's parameters, then its buffers, then its children.
  EXPECT_EQ(keys_of(net->state_dict()),
            (std::vector<std::string>{"temperature", "features.scale", "features.a.weight", "features.a.bias",
                                      "features.a.steps", "features.b.weight", "features.b.steps", "head.weight",
                                      "head.bias", "head.steps"}));
  auto mods = net->named_modules();
  EXPECT_EQ(mods.keys(), (std::vector<std::string>{"", "features", "features.a", "features.b", "head"}));
  EXPECT_EQ(mods[""].get(), net.get());
  EXPECT_EQ(net->named_modules("net", false).keys(),
            (std::vector<std::string>{"net.features", "net.features.a", "net.features.b", "net.head"}));
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"features", "head"}));
  EXPECT_EQ(net->children().size(), 2u);
  EXPECT_EQ(net->modules().size(), 5u);
  EXPECT_EQ(net->modules(false).size(), 4u);
  // The handles are the registered tensors.
  EXPECT_TRUE(net->named_parameters()["features.a.weight"].is_same(net->features->a->weight));
  EXPECT_TRUE(net->features->a->weight.requires_grad());
  EXPECT_FALSE(net->features->scale.requires_grad());
  EXPECT_EQ(net->name(), "Net");
  EXPECT_EQ(net->features->a->name(), "Leaf");
}

TEST(Module, SharedModulesAndTensorsAreListedOnce) {
  struct TiedImpl : Module {
    TiedImpl() {
      leaf = register_module("first", Leaf(2, 2));
      register_module("second", leaf);  // the same module twice
      extra = register_parameter("extra", leaf->weight.detach());
      register_parameter("alias", leaf->weight);  // the same tensor twice
    }
    Leaf leaf{nullptr};
    Tensor extra;
  };
  auto tied = std::make_shared<TiedImpl>();
  // The module's own entries come first, so the tied weight is listed under "alias" (as PyTorch would).
  EXPECT_EQ(keys_of(tied->named_parameters()), (std::vector<std::string>{"extra", "alias", "first.bias"}));
  EXPECT_EQ(tied->named_modules().keys(), (std::vector<std::string>{"", "first"}));
  EXPECT_EQ(tied->children().size(), 1u);
  // state_dict keeps every name, as PyTorch's does.
  EXPECT_EQ(tied->state_dict().size(), 8u);
}

// An undefined parameter is kept out of parameters(); asking it to require grad warns once, in
// LibTorch's words, and changes nothing else.
TEST(Module, UndefinedParameterIsSkippedAndRequiresGradWarns) {
  struct Collect : WarningHandler {
    std::vector<std::string> messages;
    using WarningHandler::process;
    void process(const Warning& w) override { messages.push_back(w.msg()); }
  } collect;
  nn::Module quiet, loud;
  {
    Warning::WarningHandlerGuard guard(&collect);
    quiet.register_parameter("u", Tensor(), /*requires_grad=*/false);
    EXPECT_TRUE(collect.messages.empty());
    loud.register_parameter("u", Tensor());
  }
  EXPECT_TRUE(quiet.parameters().empty());
  EXPECT_TRUE(loud.parameters().empty());
  ASSERT_EQ(collect.messages.size(), 1u);
  EXPECT_NE(collect.messages[0].find("Ignoring the `requires_grad=true` function parameter"), std::string::npos)
      << collect.messages[0];
  EXPECT_NE(collect.messages[0].find("'u'"), std::string::npos) << collect.messages[0];
}

TEST(Module, RegistrationErrors) {
  Module m;
  m.register_parameter("w", graft::ones({2}));
  EXPECT_TRUE(throws_error([&] { m.register_parameter("w", graft::ones({2})); }, {"register_parameter", "'w'", "parameter"}));
  EXPECT_TRUE(throws_error([&] { m.register_buffer("w", graft::ones({2})); }, {"register_buffer", "'w'", "already"}));
  EXPECT_TRUE(throws_error([&] { m.register_parameter("a.b", graft::ones({2})); }, {"without dots", "'a.b'"}));
  EXPECT_TRUE(throws_error([&] { m.register_parameter("", graft::ones({2})); }, {"non-empty"}));
  EXPECT_TRUE(throws_error([&] { m.register_module("w", Leaf(1, 1)); }, {"register_module", "'w'"}));
  Tensor x = graft::ones({2}, requires_grad());
  EXPECT_TRUE(throws_error([&] { m.register_parameter("y", x * 2); }, {"register_parameter", "leaf", "MulBackward", "detach"}));
  EXPECT_TRUE(throws_error([&] { m.register_parameter("i", graft::zeros({2}, kInt64)); }, {"floating-point"}));
  m.register_parameter("i", graft::zeros({2}, kInt64), /*requires_grad=*/false);  // allowed without grad
  EXPECT_TRUE(throws_error([&] { m.register_module("empty", std::shared_ptr<Module>()); }, {"empty module"}));
  EXPECT_TRUE(throws_error([&] { m.named_modules(); }, {"named_modules", "shared_ptr"}));
  EXPECT_EQ(m.named_modules("", false).size(), 0u);
  Leaf empty{nullptr};
  EXPECT_TRUE(empty.is_empty());
  EXPECT_TRUE(throws_error([&] { (void)empty->weight; }, {"ModuleHolder", "empty holder"}));
  EXPECT_TRUE(throws_error([&] { m.clone(); }, {"clone", "Cloneable"}));
}

TEST(Module, ReplaceAndUnregister) {
  Net net;
  auto fresh = net->replace_module("head", Leaf(2, 1, false));
  EXPECT_EQ(keys_of(net->named_parameters()).back(), "head.weight");
  EXPECT_EQ(net->named_children()["head"].get(), fresh.get());
  net->unregister_module("head");
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"features"}));
  EXPECT_TRUE(throws_error([&] { net->unregister_module("head"); }, {"unregister_module", "'head'"}));
  EXPECT_TRUE(throws_error([&] { net->replace_module("nope", Leaf(1, 1)); }, {"replace_module", "'nope'"}));
}

TEST(Module, TrainEvalPropagates) {
  Net net;
  for (auto& m : net->modules()) EXPECT_TRUE(m->is_training());
  net->eval();
  for (auto& m : net->modules()) EXPECT_FALSE(m->is_training());
  net->features->train();
  EXPECT_FALSE(net->is_training());
  EXPECT_TRUE(net->features->a->is_training());
  EXPECT_FALSE(net->head->is_training());
  net->train(true);
  for (auto& m : net->modules()) EXPECT_TRUE(m->is_training());
}

void he_init(Module& m) {
  if (auto* leaf = m.as<LeafImpl>()) {
    NoGradGuard no_grad;
    leaf->weight.fill_(0.5);
  }
}

TEST(Module, Apply) {
  Net net;
  net->apply(he_init);  // the seed document's model.apply(he_init)
  EXPECT_TRUE(all_close(net->features->a->weight, std::vector<double>(12, 0.5), {4, 3}, 0, 0));
  EXPECT_TRUE(all_close(net->head->weight, std::vector<double>(2, 0.5), {1, 2}, 0, 0));
  std::vector<std::string> names;
  net->apply([&](const std::string& name, Module& m) { names.push_back(name + ":" + m.name()); });
  EXPECT_EQ(names, (std::vector<std::string>{":Net", "features:Block", "features.a:Leaf", "features.b:Leaf", "head:Leaf"}));
  names.clear();
  net->apply([&](const std::string& name, Module&) { names.push_back(name); }, "model");
  EXPECT_EQ(names.front(), "model");
  EXPECT_EQ(names.back(), "model.head");
  int count = 0;
  const Net& cnet = net;
  cnet->apply([&](const Module&) { ++count; });
  EXPECT_EQ(count, 5);
  int pointers = 0;
  net->apply([&](const std::shared_ptr<Module>& m) { pointers += m != nullptr; });
  EXPECT_EQ(pointers, 5);
}

TEST(Module, ZeroGrad) {
  Net net;
  Tensor x = graft::randn({5, 3});
  net(x).sum().backward();
  for (auto& p : net->parameters()) ASSERT_TRUE(p.grad().defined());
  // set_to_none = false: zeroed in place, same tensors.
  Tensor g = net->head->weight.grad();
  net->zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(net->head->weight.grad().is_same(g));
  for (auto& p : net->parameters()) EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0);
  // Default (set_to_none = true): grads released.
  std::weak_ptr<TensorImpl> weak = g.impl_ptr();
  g = Tensor();
  net->zero_grad();
  for (auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
  EXPECT_TRUE(weak.expired());
  // A grad with history (create_graph) is detached by zero_grad(false).
  Tensor w = net->head->weight;
  auto gw = autograd::grad({net(x).pow(2).sum()}, {w}, {}, std::nullopt, /*create_graph=*/true)[0];
  w.mutable_grad() = gw;
  net->zero_grad(false);
  EXPECT_TRUE(w.grad().is_leaf());
  EXPECT_EQ(w.grad().abs().sum().item<double>(), 0.0);
}

TEST(Module, ToDtypeKeepsHandles) {
  Net net;
  Tensor w = net->features->a->weight;
  auto before = values(w);
  net(graft::randn({2, 3})).sum().backward();
  net->to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);  // the same handle sees the new dtype
  EXPECT_EQ(net->features->a->weight.dtype(), kFloat64);
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  EXPECT_EQ(net->features->scale.dtype(), kFloat64);
  EXPECT_EQ(net->head->steps.dtype(), kInt64);  // integer buffers are kept
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(values(w), before);  // float32 -> float64 is exact
  Tensor y = net(graft::randn({2, 3}, kFloat64));
  EXPECT_EQ(y.dtype(), kFloat64);
  y.sum().backward();
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  EXPECT_TRUE(throws_error([&] { net->to(kInt64); }, {"Module::to", "floating-point", "int64"}));
  EXPECT_TRUE(throws_error([&] { net->to(Device(kCUDA)); }, {"Module::to", "CPU"}));
  net->to(Device(kCPU), kFloat32);
  EXPECT_EQ(w.dtype(), kFloat32);
}

TEST(Module, StateDictRoundTrip) {
  manual_seed(1);
  Net a;
  manual_seed(2);
  Net b;
  ASSERT_FALSE(graft::equal(a->head->weight, b->head->weight));
  Tensor held = b->head->weight;  // e.g. held by an optimiser
  auto r = b->load_state_dict(a->state_dict());
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  for (auto& item : a->state_dict()) EXPECT_TRUE(graft::equal(item.value(), b->state_dict()[item.key()])) << item.key();
  EXPECT_TRUE(held.is_same(b->head->weight));
  EXPECT_TRUE(graft::equal(held, a->head->weight));
  EXPECT_TRUE(held.requires_grad());
  EXPECT_TRUE(held.is_leaf());
  // The state dict aliases the module: it is a view of the same storage, without grad.
  auto sd = a->state_dict();
  EXPECT_FALSE(sd["head.weight"].requires_grad());
  sd["head.weight"].fill_(3.0);
  EXPECT_EQ(a->head->weight.sum().item<double>(), 6.0);
  EXPECT_FALSE(b->head->weight.is_alias_of(a->head->weight));  // loading copies
  // Loading a module's own state dict is a no-op.
  b->load_state_dict(b->state_dict());
  EXPECT_TRUE(graft::equal(held, b->head->weight));
  // Values of another dtype are converted on copy.
  OrderedDict<std::string, Tensor> d64;
  for (auto& item : a->state_dict()) d64.insert(item.key(), item.value().to(item.value().is_floating_point() ? kFloat64 : kInt64));
  b->load_state_dict(d64);
  EXPECT_EQ(b->head->weight.dtype(), kFloat32);
  EXPECT_EQ(b->head->weight.sum().item<double>(), 6.0);
}

TEST(Module, LoadStateDictErrors) {
  Net net;
  auto good = net->state_dict();
  Tensor before = net->head->weight.clone();

  OrderedDict<std::string, Tensor> missing;
  for (auto& item : good)
    if (item.key() != "head.bias") missing.insert(item.key(), item.value().clone());
  EXPECT_TRUE(throws_error([&] { net->load_state_dict(missing); },
                           {"load_state_dict", "Net", "missing key(s)", "\"head.bias\"", "strict=*/false"}));

  OrderedDict<std::string, Tensor> unexpected;
  for (auto& item : good) unexpected.insert(item.key(), item.value().clone());
  unexpected.insert("head.gamma", graft::ones({1}));
  EXPECT_TRUE(throws_error([&] { net->load_state_dict(unexpected); }, {"unexpected key(s)", "\"head.gamma\""}));

  OrderedDict<std::string, Tensor> misshaped;
  for (auto& item : good)
    misshaped.insert(item.key(), item.key() == "features.a.weight" ? graft::zeros({3, 4}) : item.value().clone() + 1);
  EXPECT_TRUE(throws_error([&] { net->load_state_dict(misshaped); },
                           {"size mismatch", "\"features.a.weight\"", "[3, 4]", "[4, 3]", "nothing was loaded"}));
  EXPECT_TRUE(graft::equal(before, net->head->weight));  // nothing was copied
  // Shape mismatches are errors even when not strict.
  EXPECT_TRUE(throws_error([&] { net->load_state_dict(misshaped, false); }, {"size mismatch", "[3, 4]"}));

  // Non-strict: missing and unexpected keys are reported, the rest is loaded.
  missing.insert("extra", graft::ones({1}));
  for (auto& item : missing) {
    NoGradGuard g;
    if (item.value().is_floating_point()) item.value().fill_(0.25);
  }
  auto r = net->load_state_dict(missing, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"head.bias"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"extra"}));
  EXPECT_EQ(net->head->weight.sum().item<double>(), 0.5);
  // Several problems at once: all are named.
  OrderedDict<std::string, Tensor> several;
  several.insert("head.weight", graft::zeros({5}));
  several.insert("bogus", graft::zeros({5}));
  EXPECT_TRUE(throws_error([&] { net->load_state_dict(several); },
                           {"missing key(s)", "\"temperature\"", "unexpected key(s)", "\"bogus\"", "\"head.weight\"", "[5]", "[1, 2]"}));
}

TEST(Module, HolderSemantics) {
  Leaf a(3, 2);
  Leaf b = a;  // copies share one module
  EXPECT_EQ(a.get(), b.get());
  EXPECT_TRUE(a->weight.is_same(b->weight));
  std::shared_ptr<LeafImpl> p = a.ptr();
  Leaf c(p);
  EXPECT_EQ(c.get(), a.get());
  Leaf d{nullptr};
  EXPECT_FALSE(static_cast<bool>(d));
  d = a;
  EXPECT_TRUE(static_cast<bool>(d));
  Tensor x = graft::randn({4, 3});
  EXPECT_TRUE(graft::equal(a(x), a->forward(x)));
  std::shared_ptr<Module> base = a;
  EXPECT_EQ(base.get(), a.get());
  EXPECT_EQ((*a).in_, 3);
}

TEST(Module, CloneIsDeep) {
  Net net;
  net->eval();
  auto copy = std::dynamic_pointer_cast<NetImpl>(net->clone());
  ASSERT_NE(copy, nullptr);
  auto a = net->state_dict(), b = copy->state_dict();
  ASSERT_EQ(a.keys(), b.keys());
  for (auto& item : a) {
    EXPECT_TRUE(graft::equal(item.value(), b[item.key()])) << item.key();
    EXPECT_FALSE(item.value().is_alias_of(b[item.key()])) << item.key();
  }
  // The clone's member handles are its registered tensors and modules.
  EXPECT_TRUE(copy->head->weight.is_same(copy->named_parameters()["head.weight"]));
  EXPECT_NE(copy->features.get(), net->features.get());
  EXPECT_TRUE(copy->head->weight.requires_grad());
  EXPECT_FALSE(copy->is_training());
  {
    NoGradGuard g;
    copy->head->weight.fill_(7.0);
  }
  EXPECT_NE(net->head->weight.sum().item<double>(), 14.0);
}

TEST(Module, PrettyPrint) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  Net net;
  std::ostringstream os;
  os << net;
  EXPECT_EQ(os.str(),
            "Net(\n"
            "  (features): Block(\n"
            "    (a): Leaf(in=3, out=4)\n"
            "    (b): Leaf(in=4, out=2)\n"
            "  )\n"
            "  (head): Leaf(in=2, out=1)\n"
            ")");
  std::ostringstream leaf;
  leaf << *net->head;
  EXPECT_EQ(leaf.str(), "Leaf(in=2, out=1)");
  std::ostringstream plain;
  plain << Module();
  EXPECT_EQ(plain.str(), "Module()");
  // Multi-line extra_repr with children, and a named module.
  struct Fancy : Module {
    Fancy() : Module("Custom") { register_module("leaf", Leaf(1, 1)); }
    std::string extra_repr() const override { return "x=1\ny=2"; }
  };
  std::ostringstream fancy;
  fancy << Fancy();
  EXPECT_EQ(fancy.str(), "Custom(\n  x=1\n  y=2\n  (leaf): Leaf(in=1, out=1)\n)");
}

}  // namespace
}  // namespace graft::test
