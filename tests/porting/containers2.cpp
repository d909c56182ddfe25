// The container surface a LibTorch program indexes and grows: ModuleList (operator[] returning a
// std::shared_ptr<Module>, ptr / ptr<T> / at<T>, push_back of every kind of argument, insert, extend,
// iteration), Sequential (the same, push_back(name, module), an OrderedDict of AnyModules,
// NamedAnyModule, forward<T>), AnyModule's checked ptr<T>() / get<T>(), ModuleDict (operator[],
// update, pop, keys / values / items, contains) and zero_grad with an explicit set_to_none.
// Written in LibTorch's spelling; graft builds it renamed (torch:: to graft::), and the two builds'
// outputs are compared line by line. Every expected value is worked out by hand in the comments.
// Exits 1 when a check fails.
#include <torch/torch.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "porting_checks.h"

using porting::check;

namespace {

// Whether fn throws, with `phrase` in its message (LibTorch's wording, which graft's message keeps).
template <class F>
bool throws_with(F&& fn, const std::string& phrase) {
  try {
    fn();
  } catch (const std::exception& e) {
    return std::string(e.what()).find(phrase) != std::string::npos;
  }
  return false;
}

void print_keys(const char* what, const std::vector<std::string>& keys) {
  std::printf("%s:", what);
  for (const auto& k : keys) std::printf(" %s", k.c_str());
  std::printf("\n");
}

// Linear(in, out) with every weight `w` and every bias `b`, so that its outputs are worked out by hand.
torch::nn::Linear constant_linear(int64_t in, int64_t out, double w, double b) {
  torch::nn::Linear fc(in, out);
  torch::NoGradGuard no_grad;
  fc->weight.fill_(w);
  fc->bias.fill_(b);
  return fc;
}

void module_list() {
  // Every push_back LibTorch takes: holders and values through the constructor, a holder, a
  // std::shared_ptr to a derived module, a std::shared_ptr<Module>, a module value.
  torch::nn::ModuleList list(constant_linear(2, 2, 1.0, 0.0), torch::nn::ReLU());
  list->push_back(constant_linear(2, 1, 2.0, -1.0));
  list->push_back(std::make_shared<torch::nn::TanhImpl>());
  std::shared_ptr<torch::nn::Module> sigmoid = std::make_shared<torch::nn::SigmoidImpl>();
  list->push_back(sigmoid);
  list->push_back(torch::nn::ReLUImpl());
  std::printf("list size %zu is_empty %d\n", list->size(), list->is_empty() ? 1 : 0);
  check(list->size() == 6 && !list->is_empty(), "ModuleList size() / is_empty()");
  print_keys("list children", list->named_children().keys());

  // list[i] is a std::shared_ptr<Module>: ->as<T>() gives the module or nullptr.
  check(list[0]->as<torch::nn::LinearImpl>() != nullptr, "list[0]->as<LinearImpl>()");
  check(list[1]->as<torch::nn::LinearImpl>() == nullptr, "list[1]->as<LinearImpl>() is nullptr");
  std::shared_ptr<torch::nn::Module> first = list[0];
  check(first == list->ptr(0), "list[0] == ptr(0)");
  check(list->ptr<torch::nn::ReLUImpl>(1) != nullptr, "ptr<ReLUImpl>(1)");
  // LibTorch's ModuleList::ptr<T> is a dynamic_pointer_cast: nullptr for another type.
  check(list->ptr<torch::nn::LinearImpl>(1) == nullptr, "ptr<LinearImpl>(1) is nullptr");
  check(list->ptr(4) == sigmoid, "ptr(4) is the pushed std::shared_ptr<Module>");
  std::printf("at<LinearImpl>(2) out_features %lld\n",
              static_cast<long long>(list->at<torch::nn::LinearImpl>(2).weight.size(0)));
  check(list->at<torch::nn::LinearImpl>(2).weight.size(0) == 1, "at<LinearImpl>(2)");
  check(throws_with([&] { list->ptr(6); }, "Index out of range"), "ptr(6) is out of range");

  // x = [1, -2]: Linear(w=1, b=0) gives [-1, -1], ReLU [0, 0], Linear(w=2, b=-1) [-1],
  // Tanh tanh(-1) = -0.761594, Sigmoid 1 / (1 + e^0.761594) = 0.318300, ReLU the same.
  torch::Tensor x = torch::tensor({1.0f, -2.0f}).view({1, 2});
  for (const auto& module : *list) {
    if (auto* fc = module->as<torch::nn::LinearImpl>()) x = fc->forward(x);
    else if (auto* relu = module->as<torch::nn::ReLUImpl>()) x = relu->forward(x);
    else if (auto* tanh = module->as<torch::nn::TanhImpl>()) x = tanh->forward(x);
    else if (auto* sig = module->as<torch::nn::SigmoidImpl>()) x = sig->forward(x);
  }
  porting::show("list chain", x, {0.318300});

  // insert at the front, in the middle and at the end; the later modules are renumbered.
  list->insert(0, torch::nn::Tanh());
  list->insert(2, std::make_shared<torch::nn::SigmoidImpl>());
  list->insert(list->size(), torch::nn::Linear(1, 3));
  std::printf("after insert size %zu\n", list->size());
  check(list->size() == 9, "insert adds three");
  check(list[0]->as<torch::nn::TanhImpl>() != nullptr && list[1]->as<torch::nn::LinearImpl>() != nullptr &&
            list[2]->as<torch::nn::SigmoidImpl>() != nullptr && list[8]->as<torch::nn::LinearImpl>() != nullptr,
        "insert places the modules");
  // Not printed here: the names the list's children are registered under after an insert. LibTorch
  // 1.13 re-registers only the child named by the index (so an insert drops shifted modules'
  // parameters from named_parameters()); graft renumbers them all, as PyTorch (docs/porting.md).
  check(throws_with([&] { list->insert(10, torch::nn::ReLU()); }, "Index out of range"), "insert(10) is out of range");

  // extend with another list, and with vectors of pointers.
  torch::nn::ModuleList other;
  check(other->is_empty(), "a new ModuleList is empty");
  other->extend(*list);
  other->extend(std::vector<std::shared_ptr<torch::nn::Module>>{std::make_shared<torch::nn::ReLUImpl>()});
  other->extend(std::vector<std::shared_ptr<torch::nn::LinearImpl>>{std::make_shared<torch::nn::LinearImpl>(3, 3)});
  std::printf("extended size %zu\n", other->size());
  check(other->size() == 11 && other[0] == list[0], "extend shares the modules");
  size_t parameters = 0;
  for (auto it = other->begin(); it != other->end(); ++it) parameters += (*it)->parameters().size();
  // Three Linears of the 9 with weight and bias, and the one added: 8.
  std::printf("parameters over begin/end %zu\n", parameters);
  check(parameters == 8, "eight parameters over begin/end");
}

struct Blocks : torch::nn::Module {
  Blocks() { blocks = register_module("blocks", torch::nn::ModuleList(torch::nn::Linear(2, 2), torch::nn::ReLU())); }
  torch::nn::ModuleList blocks{nullptr};
};

void registered_list() {
  Blocks net;
  net.blocks->push_back(torch::nn::Linear(2, 1));
  print_keys("net parameters", net.named_parameters().keys());
}

void sequential() {
  torch::nn::Sequential seq;
  check(seq->is_empty(), "a new Sequential is empty");
  seq->push_back("fc", constant_linear(2, 2, 0.5, 1.0));
  seq->push_back("act", torch::nn::ReLU());
  seq->push_back(std::make_shared<torch::nn::LinearImpl>(2, 1));
  seq->push_back(torch::nn::AnyModule(torch::nn::Sigmoid()));
  seq->push_back("last", std::make_shared<torch::nn::TanhImpl>());
  std::printf("sequential size %zu\n", seq->size());
  print_keys("sequential children", seq->named_children().keys());
  check(seq[0]->as<torch::nn::LinearImpl>() != nullptr, "seq[0]->as<LinearImpl>()");
  check(seq->ptr(1) == seq[1], "ptr(1) == seq[1]");
  check(seq->ptr<torch::nn::ReLUImpl>(1) != nullptr, "ptr<ReLUImpl>(1)");
  check(throws_with([&] { seq->ptr<torch::nn::LinearImpl>(1); }, "Attempted to cast module"),
        "ptr<LinearImpl>(1) throws");
  check(throws_with([&] { seq->at<torch::nn::TanhImpl>(0); }, "Attempted to cast module"), "at<TanhImpl>(0) throws");
  check(throws_with([&] { seq->ptr(9); }, "Index out of range"), "ptr(9) is out of range");
  {
    torch::NoGradGuard no_grad;
    seq->at<torch::nn::LinearImpl>(2).weight.fill_(1.0);
    seq->at<torch::nn::LinearImpl>(2).bias.fill_(-4.0);
  }
  // x = [2, 4]: fc 0.5 * 6 + 1 = [4, 4], ReLU [4, 4], Linear(w=1, b=-4) [4], Sigmoid 0.982014,
  // Tanh tanh(0.982014) = 0.753936.
  torch::Tensor x = torch::tensor({2.0f, 4.0f}).view({1, 2});
  porting::show("seq->forward<Tensor>", seq->forward<torch::Tensor>(x), {0.753936});
  porting::show("seq(x)", seq->forward(x), {0.753936});

  // extend with another Sequential and a vector of pointers; iterate the AnyModules.
  torch::nn::Sequential more(torch::nn::Linear(1, 2));
  seq->extend(*more);
  seq->extend(std::vector<std::shared_ptr<torch::nn::ReLUImpl>>{std::make_shared<torch::nn::ReLUImpl>()});
  print_keys("extended children", seq->named_children().keys());
  size_t linears = 0;
  for (const auto& any : *seq)
    if (any.ptr()->as<torch::nn::LinearImpl>() != nullptr) ++linears;
  std::printf("linears over begin/end %zu\n", linears);
  check(linears == 3, "three Linears");
  torch::nn::SequentialImpl::ConstIterator it = seq->begin();
  check(it->ptr() == seq[0], "ConstIterator");

  // From an OrderedDict of AnyModules, and from NamedAnyModules.
  torch::OrderedDict<std::string, torch::nn::AnyModule> dict;
  dict.insert("double", torch::nn::AnyModule(constant_linear(1, 1, 2.0, 0.0)));
  dict.insert("shift", torch::nn::AnyModule(constant_linear(1, 1, 1.0, 3.0)));
  torch::nn::Sequential from_dict(std::move(dict));
  print_keys("from OrderedDict", from_dict->named_children().keys());
  // 5 -> 10 -> 13.
  porting::show("from_dict(5)", from_dict->forward(torch::full({1, 1}, 5.0)), {13.0});
  torch::nn::NamedAnyModule named("scale", constant_linear(1, 1, -1.0, 0.0));
  std::printf("NamedAnyModule name %s\n", named.name().c_str());
  check(named.module().ptr()->as<torch::nn::LinearImpl>() != nullptr, "NamedAnyModule::module()");
  torch::nn::Sequential from_named({{"neg", constant_linear(1, 1, -1.0, 0.0)}, {"act", torch::nn::ReLU()}});
  print_keys("from NamedAnyModules", from_named->named_children().keys());
  // -2 -> 2 -> 2.
  porting::show("from_named(-2)", from_named->forward(torch::full({1, 1}, -2.0)), {2.0});
}

void any_module() {
  torch::nn::Linear fc(2, 3);
  torch::nn::AnyModule any(fc);
  check(any.ptr<torch::nn::LinearImpl>() == fc.ptr(), "ptr<LinearImpl>()");
  check(any.get<torch::nn::Linear>().ptr() == fc.ptr(), "get<Linear>()");
  check(&any.get<torch::nn::LinearImpl>() == fc.get(), "get<LinearImpl>()");
  check(throws_with([&] { any.ptr<torch::nn::ReLUImpl>(); }, "Attempted to cast module"), "ptr<ReLUImpl>() throws");
  check(throws_with([&] { any.get<torch::nn::ReLUImpl>(); }, "Attempted to cast module"), "get<ReLUImpl>() throws");
  std::printf("AnyModule casts checked\n");
}

void module_dict() {
  torch::nn::Linear fc(2, 2);
  torch::nn::ModuleDict dict(std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>>{
      {"fc", fc.ptr()}, {"act", std::make_shared<torch::nn::ReLUImpl>()}});
  std::printf("dict size %zu empty %d contains fc %d contains z %d\n", dict->size(), dict->empty() ? 1 : 0,
              dict->contains("fc") ? 1 : 0, dict->contains("z") ? 1 : 0);
  check(dict["fc"] == fc.ptr() && dict["fc"]->as<torch::nn::LinearImpl>() != nullptr, "dict[key]");
  check(dict->at<torch::nn::ReLUImpl>("act").is_training(), "at<ReLUImpl>(key)");
  check(throws_with([&] { dict["z"]; }, "'z'"), "dict[missing] throws");

  // update: a present key is replaced in place, a new one appended.
  auto tanh = std::make_shared<torch::nn::TanhImpl>();
  dict->update(std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>>{
      {"act", tanh}, {"out", std::make_shared<torch::nn::LinearImpl>(2, 1)}});
  torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>> more;
  more.insert("extra", std::make_shared<torch::nn::SigmoidImpl>());
  dict->update(more);
  print_keys("dict keys", dict->keys());
  check(dict["act"] == tanh, "update replaces a present key");
  std::printf("values:");
  for (const auto& m : dict->values()) std::printf(" %zu", m->parameters().size());
  std::printf("\nitems:");
  for (const auto& item : dict->items()) std::printf(" %s=%zu", item.first.c_str(), item.second->parameters().size());
  std::printf("\niterated:");
  for (const auto& item : *dict) std::printf(" %s", item.key().c_str());
  std::printf("\n");

  std::shared_ptr<torch::nn::Module> popped = dict->pop("fc");
  check(popped == fc.ptr(), "pop returns the module");
  std::printf("after pop size %zu contains fc %d\n", dict->size(), dict->contains("fc") ? 1 : 0);
  print_keys("keys after pop", dict->keys());
  dict->clear();
  std::printf("after clear size %zu empty %d\n", dict->size(), dict->empty() ? 1 : 0);
}

void zero_grad() {
  // An explicit set_to_none (LibTorch 1.13's default is false, 2.x's true: docs/porting.md).
  torch::nn::Linear fc(2, 1);
  fc->forward(torch::ones({1, 2})).sum().backward();
  fc->zero_grad(false);
  std::printf("zero_grad(false): defined %d sum %.6g\n", fc->weight.grad().defined() ? 1 : 0,
              fc->weight.grad().sum().item<double>());
  fc->forward(torch::ones({1, 2})).sum().backward();
  fc->zero_grad(true);
  std::printf("zero_grad(true): defined %d\n", fc->weight.grad().defined() ? 1 : 0);
}

struct Named : torch::nn::Module {
  Named() : torch::nn::Module("MyName") {}
};

}  // namespace

int main() {
  module_list();
  registered_list();
  sequential();
  any_module();
  module_dict();
  zero_grad();
  std::printf("given name %s\n", Named().name().c_str());
  return porting::finish();
}
