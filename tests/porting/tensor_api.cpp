// LibTorch-style source (tests/porting, docs/porting.md): the tensor and optimiser spellings that
// pytorch/examples' regression and autograd programs use. Ported by tools/port-from-libtorch.sh and
// built against graft; where LibTorch is installed, also built unchanged against it and the outputs
// compared. Each value is checked against a hand-derived one.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "porting_checks.h"

namespace {

using porting::check;
using porting::show;

}  // namespace

int main() {
  auto m = torch::tensor({{3.0, -4.0, 0.0}, {1.0, 2.0, 2.0}});

  // t[i] is select(0, i); chained, it reaches an element.
  show("row1", m[1], {1, 2, 2});
  show("m[0][1]", m[0][1], {-4});
  check(m[1][2].item<float>() == 2.0f, "m[1][2].item<float>() == 2");

  // all / any, as members and over a dim.
  check(!m.all().item<bool>(), "m has a zero: all() is false");
  check(m.any().item<bool>(), "m has a nonzero: any() is true");
  show("all(1)", m.all(1), {0, 1});
  show("any(0)", (m > 2).any(0), {1, 0, 0});
  check(m.eq(m.clone()).all().item<bool>(), "m == clone everywhere");

  // norm(p, dim): the row norms 5 and 3; p = 1 over columns.
  show("norm2_dim1", m.norm(2, 1), {5, 3});
  show("norm1_dim0", m.norm(1, 0), {4, 6, 2});
  show("norm2_dim1_keepdim", m.norm(2, 1, /*keepdim=*/true), {5, 3});
  check(m.norm(2, 1, true).dim() == 2, "keepdim keeps the reduced dim");

  // Optimisers take a plain learning rate where LibTorch's Options convert from one.
  auto w = torch::tensor({1.0, -2.0}).requires_grad_();
  torch::optim::SGD sgd({w}, 0.1);
  (w * w).sum().backward();  // d/dw = 2 w
  sgd.step();
  show("sgd_step", w, {0.8, -1.6});
  torch::optim::Adam adam({w}, 0.01);
  torch::optim::AdamW adamw({w}, 0.01);
  torch::optim::RMSprop rmsprop({w}, 0.01);
  torch::optim::Adagrad adagrad({w}, 0.01);
  check(adam.param_groups().size() == 1 && adamw.param_groups().size() == 1 && rmsprop.param_groups().size() == 1 &&
            adagrad.param_groups().size() == 1,
        "every optimiser constructs from (params, lr)");

  // A namespace-level loss, as pytorch/examples' regression program calls it: smooth L1 (beta 1) of [0.5, 3] against 0
  // is mean(0.5 * 0.25, 3 - 0.5) = 1.3125.
  show("smooth_l1", torch::smooth_l1_loss(torch::tensor({0.5, 3.0}), torch::zeros({2})), {1.3125});

  // Comparisons with numbers, and item() as a Scalar.
  show("lt3", m < 3, {0, 1, 1, 1, 1, 1});
  show("eq2", m == 2, {0, 0, 0, 0, 1, 1});
  check((m.sum().item().to<double>() == 4.0), "item() returns a Scalar");

  // c10's utilities: irange, optional, ArrayRef, str.
  int64_t total = 0;
  for (const auto i : c10::irange(4)) total += i;
  for (const auto i : c10::irange(2, 5)) total += 10 * i;  // 20 + 30 + 40
  std::printf("irange_total: %lld\n", static_cast<long long>(total));
  check(total == 96, "irange(4) sums to 6 and irange(2, 5) to 9");
  c10::optional<int64_t> maybe = c10::nullopt;
  check(!maybe.has_value(), "c10::nullopt is empty");
  maybe = 7;
  check(maybe.value() == 7, "an optional holds 7");
  std::vector<double> values = {1.5, 2.5, 3.5};
  c10::ArrayRef<double> ref(values);
  check(ref.size() == 3 && ref[1] == 2.5 && ref.slice(1).size() == 2 && ref.slice(1)[0] == 2.5, "ArrayRef views a vector");
  std::vector<int64_t> dims = {2, 3};
  c10::ArrayRef<int64_t> sizes(dims);
  show("zeros_from_arrayref", torch::zeros(sizes).sum(0), {0, 0, 0});
  const std::string text = c10::str("x=", 3, ", y=", 1.5);
  std::printf("str: %s\n", text.c_str());
  check(text == "x=3, y=1.5", "c10::str concatenates");

  // Random fills: the two libraries draw different numbers, so only their laws are checked (each
  // bound is several standard errors wide).
  torch::manual_seed(0);
  auto u = torch::empty({1000}, torch::kFloat64).uniform_(0.8, 1.0);
  const bool u_in = u.min().item<double>() >= 0.8 && u.max().item<double>() < 1.0;
  const bool u_mean = std::abs(u.mean().item<double>() - 0.9) < 0.01;
  std::printf("uniform_: in [0.8, 1) %d, mean near 0.9 %d\n", u_in ? 1 : 0, u_mean ? 1 : 0);
  check(u_in && u_mean, "uniform_(0.8, 1) over 1000 draws");
  auto n = torch::empty({20000}).normal_(2.0, 3.0);
  const bool n_ok = std::abs(n.mean().item<double>() - 2.0) < 0.15 && std::abs(n.std().item<double>() - 3.0) < 0.15;
  std::printf("normal_: mean and std near 2 and 3 %d\n", n_ok ? 1 : 0);
  check(n_ok, "normal_(2, 3) over 20000 draws");
  auto b = torch::empty({20000}).bernoulli_(0.25);
  const double ones = b.sum().item<double>();
  const bool b_ok = std::abs(ones / 20000 - 0.25) < 0.02 && b.eq(0).logical_or(b.eq(1)).all().item<bool>();
  std::printf("bernoulli_: zeros and ones, a quarter ones %d\n", b_ok ? 1 : 0);
  check(b_ok, "bernoulli_(0.25) over 20000 draws");
  auto r = torch::empty({2000}, torch::kInt64).random_(3, 7);
  bool r_ok = r.min().item<int64_t>() == 3 && r.max().item<int64_t>() == 6;
  for (int64_t v = 3; v < 7; ++v) r_ok = r_ok && r.eq(v).any().item<bool>();
  std::printf("random_: every value of [3, 7) and no other %d\n", r_ok ? 1 : 0);
  check(r_ok, "random_(3, 7) over 2000 draws");
  bool threw = false;
  try {
    auto leaf = torch::zeros({2}).requires_grad_();
    leaf.uniform_();
  } catch (const c10::Error&) {
    threw = true;
  }
  check(threw, "a random fill of a leaf that requires grad throws");

  // Node names as PyTorch gives them: the reduction of every element is variant 0, over dims 1.
  auto q = torch::ones({2, 3}).requires_grad_();
  const std::string names[] = {q.sum().grad_fn()->name(), q.sum(0).grad_fn()->name(), q.mean().grad_fn()->name(),
                               q.mean(1).grad_fn()->name()};
  std::printf("reduction nodes: %s %s %s %s\n", names[0].c_str(), names[1].c_str(), names[2].c_str(),
              names[3].c_str());
  check(names[0] == "SumBackward0" && names[1] == "SumBackward1" && names[2] == "MeanBackward0" &&
            names[3] == "MeanBackward1",
        "SumBackward0/1 and MeanBackward0/1");

  // Scalars, reset() and the impl pointer.
  auto s2 = torch::tensor(2.5);
  std::printf("tensor(2.5): dim %lld value %g\n", static_cast<long long>(s2.dim()), s2.item<double>());
  check(s2.dim() == 0 && s2.dtype() == torch::kFloat && s2.item<double>() == 2.5, "tensor(2.5) is a 0-dim float");
  auto h = torch::ones({2});
  check(h.unsafeGetTensorImpl() != nullptr, "a defined tensor has an impl");
  h.reset();
  check(!h.defined(), "reset() leaves the handle undefined");

  return porting::finish();
}
