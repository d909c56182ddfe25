// Containers and utilities as a LibTorch program uses them: torch::OrderedDict's API, AnyModule,
// a Sequential of modules whose forward is not Tensor -> Tensor (two arguments, a std::tuple handed
// on), ParameterList / ParameterDict and their names, Cloneable / clone(), and module printing.
// Written in LibTorch's spelling; graft builds it renamed (torch:: to graft::), and the two builds'
// outputs are compared line by line. Exits 1 when a check fails.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "porting_checks.h"

using porting::check;

namespace {

// (a, b) -> a + 2 b: a first module with two arguments.
struct AddImpl : torch::nn::Cloneable<AddImpl> {
  void reset() override {}
  torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) { return a + 2 * b; }
};
TORCH_MODULE(Add);

// x -> (x, x * x): a std::tuple for the next module.
struct SquareImpl : torch::nn::Cloneable<SquareImpl> {
  void reset() override {}
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x) { return {x, x * x}; }
};
TORCH_MODULE(Square);

// (x, y) -> x - y.
struct SubtractImpl : torch::nn::Cloneable<SubtractImpl> {
  void reset() override {}
  torch::Tensor forward(std::tuple<torch::Tensor, torch::Tensor> xy) { return std::get<0>(xy) - std::get<1>(xy); }
};
TORCH_MODULE(Subtract);

// A non-Tensor result.
struct TotalImpl : torch::nn::Cloneable<TotalImpl> {
  void reset() override {}
  double forward(const torch::Tensor& x, double scale) { return x.sum().item<double>() * scale; }
};
TORCH_MODULE(Total);

// A user module with children, a parameter and a buffer: cloneable (LibTorch's clone() requires
// reset() to register everything; its ParameterList / ParameterDict cannot be cloned).
struct NetImpl : torch::nn::Cloneable<NetImpl> {
  NetImpl() { reset(); }
  void reset() override {
    fc = register_module("fc", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
    scale = register_parameter("scale", torch::full({1}, 2.0));
    register_buffer("count", torch::zeros({1}));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn(fc(x)) * scale; }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  torch::Tensor scale;
};
TORCH_MODULE(Net);

// Parameter containers registered by an owner: their parameters are "params.0", "dict.scale".
struct OwnerImpl : torch::nn::Module {
  OwnerImpl() {
    fc = register_module("fc", torch::nn::Linear(2, 2));
    params = register_module("params", torch::nn::ParameterList(torch::ones({2}), torch::zeros({2, 2})));
    torch::OrderedDict<std::string, torch::Tensor> entries;
    entries.insert("scale", torch::full({1}, 2.0));
    entries.insert("shift", torch::zeros({2}));
    dict = register_module("dict", torch::nn::ParameterDict(entries));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc(x) * dict["scale"] + params[0]; }
  torch::nn::Linear fc{nullptr};
  torch::nn::ParameterList params{nullptr};
  torch::nn::ParameterDict dict{nullptr};
};
TORCH_MODULE(Owner);

template <class F> bool throws(F&& fn) {
  try {
    fn();
  } catch (const std::exception&) {
    return true;
  }
  return false;
}

template <class M> std::string printed(const M& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

void print_lines(const std::string& name, const std::string& text) {
  std::printf("%s:\n%s\n", name.c_str(), text.c_str());
}

// Parameters of `copy` equal those of `original`, in other memory.
void check_clone(const std::string& name, const torch::nn::Module& original, const torch::nn::Module& copy) {
  const auto a = original.named_parameters();
  const auto b = copy.named_parameters();
  check(a.keys() == b.keys(), name + " clone has the same parameter names");
  bool equal = a.size() == b.size(), separate = true;
  for (size_t i = 0; equal && i < a.size(); ++i) {
    equal = equal && torch::equal(a[i].value(), b[i].value());
    separate = separate && a[i].value().data_ptr() != b[i].value().data_ptr();
  }
  check(equal, name + " clone has equal values");
  check(separate, name + " clone has its own tensors");
  std::printf("%s clone: %zu parameters, equal %d, separate %d\n", name.c_str(), a.size(), equal ? 1 : 0,
              separate ? 1 : 0);
}

void ordered_dict() {
  torch::OrderedDict<std::string, int> d = {{"a", 1}, {"b", 2}, {"c", 3}};
  std::printf("dict size %zu front %s=%d back %s=%d [1] %s=%d [\"c\"] %d\n", d.size(), d.front().key().c_str(),
              d.front().value(), d.back().key().c_str(), d.back().value(), d[1].key().c_str(), *d[1], d["c"]);
  check(d.key_description() == "Key", "the default key description is Key");
  check(throws([&] { d.insert("a", 9); }), "inserting a present key throws");
  check(throws([&] { (void)d["zz"]; }), "a missing key throws");
  check(d.find("zz") == nullptr && d.find("b") != nullptr && d.contains("a") && !d.contains("zz"), "find / contains");
  // update() appends the other dict's items (LibTorch's throws on a key already present, graft's
  // overwrites it: docs/porting.md).
  torch::OrderedDict<std::string, int> more = {{"d", 4}, {"e", 5}};
  d.update(more);
  d.erase("a");
  std::printf("after update and erase:");
  for (const auto& item : d) std::printf(" %s=%d", item.key().c_str(), item.value());
  std::printf("\n");
  std::string keys;
  for (const auto& k : d.keys()) keys += k;
  int sum = 0;
  for (int v : d.values()) sum += v;
  std::printf("keys %s values sum %d items %zu pair %s=%d\n", keys.c_str(), sum, d.items().size(),
              d[0].pair().first.c_str(), d[0].pair().second);
  torch::OrderedDict<std::string, std::vector<int>> vectors("vector");
  vectors.insert("v", std::vector<int>{1, 2, 3});
  std::printf("item-> size %zu key description %s\n", vectors.front()->size(), vectors.key_description().c_str());
  d.reserve(10);
  d.clear();
  std::printf("cleared: empty %d size %zu\n", d.is_empty() ? 1 : 0, d.size());
  check(throws([&] { (void)d.front(); }), "front() of an empty dict throws");
}

void any_module() {
  torch::manual_seed(0);
  torch::nn::Linear linear(3, 2);
  torch::nn::AnyModule any(linear);
  torch::Tensor x = torch::tensor({{1.0f, 2.0f, 3.0f}});
  const torch::Tensor expected = linear(x);
  check(torch::equal(any.forward(x), expected), "AnyModule forward returns the Linear's result");
  check(torch::equal(any.forward<torch::Tensor>(x), expected), "forward<Tensor>");
  check(any.ptr().get() == linear.get(), "ptr() is the module");
  check(&any.get<torch::nn::LinearImpl>() == linear.get(), "get<LinearImpl>()");
  check(any.get<torch::nn::Linear>().get() == linear.get(), "get<Linear>()");
  check(!any.is_empty() && torch::nn::AnyModule().is_empty(), "is_empty");
  torch::nn::AnyModule copy = any.clone();
  check(copy.ptr().get() != any.ptr().get(), "clone() is another module");
  check(torch::equal(copy.forward(x), expected), "the clone computes the same");
  torch::nn::AnyModule add(Add{});
  torch::Tensor a = torch::tensor({1.0, 2.0}), b = torch::tensor({0.5, -1.0});
  porting::show("Add(a, b)", add.forward(a, b), {2.0, 0.0});
  check(throws([&] { add.forward(a); }), "a missing argument throws");
  check(throws([&] { add.forward(a, 2.0); }), "an argument of the wrong type throws");
  torch::nn::AnyModule total(Total{});
  std::printf("Total(a, 0.5) = %.6g\n", total.forward<double>(a, 0.5));
  torch::nn::AnyModule square(Square{});
  auto pair = square.forward<std::tuple<torch::Tensor, torch::Tensor>>(b);
  porting::show("Square(b).second", std::get<1>(pair), {0.25, 1.0});
}

void sequential() {
  torch::nn::Sequential seq(Add{}, Square{}, Subtract{});
  torch::Tensor a = torch::tensor({1.0, 2.0, 3.0}), b = torch::tensor({0.5, 0.0, -1.0});
  // a + 2b = [2, 2, 1]; x - x^2 = [-2, -2, 0].
  porting::show("Sequential(Add, Square, Subtract)(a, b)", seq->forward(a, b), {-2.0, -2.0, 0.0});
  torch::nn::Sequential tuple_out(torch::nn::Linear(2, 2), Square());
  auto out = tuple_out->forward<std::tuple<torch::Tensor, torch::Tensor>>(torch::ones({1, 2}));
  check(torch::allclose(std::get<1>(out), std::get<0>(out) * std::get<0>(out)),
        "forward<std::tuple> returns the tuple");
  torch::nn::Sequential named;
  named->push_back("fc", torch::nn::Linear(4, 3));
  named->push_back("act", torch::nn::ReLU());
  named->push_back(torch::nn::AnyModule(torch::nn::Linear(3, 1)));
  torch::nn::Sequential tail(torch::nn::Sigmoid{});
  named->extend(*tail);
  std::vector<std::shared_ptr<torch::nn::TanhImpl>> more = {std::make_shared<torch::nn::TanhImpl>()};
  named->extend(more);
  std::printf("sequential size %zu, children:", named->size());
  for (const auto& child : named->named_children()) std::printf(" %s", child.key().c_str());
  std::printf("\n");
  check(std::dynamic_pointer_cast<torch::nn::LinearImpl>(named[0]) != nullptr, "operator[] gives the module");
  check(named->ptr(2) == named[2] && named->ptr<torch::nn::ReLUImpl>(1) != nullptr, "ptr(i), ptr<T>(i)");
  check(named->at<torch::nn::LinearImpl>(2).weight.size(1) == 3, "at<T>(i)");
  size_t parameters = 0;
  for (const auto& module : *named) parameters += module.ptr()->parameters().size();
  std::printf("parameters over begin/end: %zu\n", parameters);
  torch::Tensor y = named->forward(torch::ones({2, 4}));
  std::printf("named(x) shape %lld %lld\n", static_cast<long long>(y.size(0)), static_cast<long long>(y.size(1)));
}

void parameter_containers() {
  Owner owner;
  std::printf("named parameters:");
  for (const auto& item : owner->named_parameters()) std::printf(" %s", item.key().c_str());
  std::printf("\n");
  porting::show("owner(x)", owner->forward(torch::zeros({1, 2})) - owner->fc->bias * 2, {1.0, 1.0});
  torch::nn::ParameterList list;
  list->append(torch::ones({2}));
  list->append(torch::zeros({3}));
  list->extend(std::vector<torch::Tensor>{torch::full({1}, 5.0)});
  std::printf("list size %zu empty %d at(2) %.6g [1] numel %lld\n", list->size(), list->is_empty() ? 1 : 0,
              list->at(2).item<double>(), static_cast<long long>(list[1].numel()));
  for (const auto& item : *list)
    std::printf(" (%s) numel %lld", item.key().c_str(), static_cast<long long>(item.value().numel()));
  std::printf("\n");
  torch::nn::ParameterDict dict;
  dict->insert("w", torch::ones({2, 2}));
  dict->insert("b", torch::zeros({2}));
  torch::OrderedDict<std::string, torch::Tensor> update;
  update.insert("b", torch::full({2}, 3.0));
  dict->update(update);
  std::printf("dict size %zu contains w %d contains z %d b[0] %.6g get(w) sum %.6g\n", dict->size(),
              dict->contains("w") ? 1 : 0, dict->contains("z") ? 1 : 0, dict["b"][0].item<double>(),
              dict->get("w").sum().item<double>());
  std::printf("keys:");
  for (const auto& k : dict->keys()) std::printf(" %s", k.c_str());
  std::printf(" values %zu\n", dict->values().size());
  torch::Tensor w = dict->pop("w");
  std::printf("popped w sum %.6g, now size %zu\n", w.sum().item<double>(), dict->size());
  dict->clear();
  std::printf("cleared: empty %d\n", dict->empty() ? 1 : 0);
}

void cloning() {
  torch::manual_seed(1);
  torch::nn::Linear linear(3, 4);
  check_clone("Linear", *linear, *linear->clone());
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(2, 3, 3).stride(2));
  check_clone("Conv2d", *conv, *conv->clone());
  torch::nn::BatchNorm2d bn(3);
  check_clone("BatchNorm2d", *bn, *bn->clone());
  torch::nn::Sequential seq(torch::nn::Linear(2, 3), torch::nn::ReLU(), torch::nn::Linear(3, 1));
  check_clone("Sequential", *seq, *seq->clone());
  Net net;
  auto copy = std::dynamic_pointer_cast<NetImpl>(net->clone());
  check(copy != nullptr, "clone() of a Cloneable user module has its type");
  check_clone("Net", *net, *copy);
  check(copy->fc.get() != net->fc.get(), "the clone's members point at its own children");
  {
    torch::NoGradGuard no_grad;
    copy->fc->weight.add_(1.0);
  }
  check(!torch::equal(copy->fc->weight, net->fc->weight), "changing the clone leaves the original");
}

void printing() {
  print_lines("Linear", printed(torch::nn::Linear(3, 4)));
  print_lines("Linear without bias", printed(torch::nn::Linear(torch::nn::LinearOptions(3, 4).bias(false))));
  print_lines("Conv2d", printed(torch::nn::Conv2d(1, 2, 3)));
  print_lines("Conv2d with options",
              printed(torch::nn::Conv2d(
                  torch::nn::Conv2dOptions(2, 4, {3, 5}).stride(2).padding(1).dilation(2).groups(2).bias(false))));
  print_lines("BatchNorm2d", printed(torch::nn::BatchNorm2d(4)));
  print_lines("BatchNorm2d with options",
              printed(torch::nn::BatchNorm2d(torch::nn::BatchNormOptions(2).eps(0.001).momentum(0.5).affine(false))));
  print_lines("ReLU", printed(torch::nn::ReLU()));
  print_lines("ReLU in place", printed(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true))));
  print_lines("Dropout", printed(torch::nn::Dropout(0.25)));
  print_lines("Sequential", printed(torch::nn::Sequential(torch::nn::Linear(2, 3), torch::nn::ReLU(),
                                                          torch::nn::Dropout(0.5), torch::nn::Tanh())));
  // Nesting (LibTorch 1.13 cannot put a Sequential in a Sequential): a user module with children.
  print_lines("Net", printed(Net()));
  print_lines("ParameterList", printed(torch::nn::ParameterList(torch::ones({2, 3}), torch::zeros({4}))));
  print_lines(
      "ParameterDict",
      printed(torch::nn::ParameterDict(torch::OrderedDict<std::string, torch::Tensor>{{"k", torch::ones({2})}})));
}

}  // namespace

int main() {
  ordered_dict();
  any_module();
  sequential();
  parameter_containers();
  cloning();
  printing();
  return porting::finish();
}
