// LibTorch-style source (tests/porting, docs/porting.md): torch::triu / torch::tril (free, members,
// in place, batched, int64, their gradient, meta shapes) and torch::lerp (a number or a tensor weight,
// member, in place, gradients of all three inputs) of issue 32. Ported by
// tools/port-from-libtorch.sh and built against graft; where LibTorch is installed, also built
// unchanged against it and the outputs compared. The expected values are worked out by hand.
#include <torch/torch.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "porting_checks.h"

namespace {

using porting::check;
using porting::show;

// "name: s0 s1 ..." (the sizes of a tensor that has no values to print)
void print_sizes(const std::string& name, const torch::Tensor& t) {
  std::printf("%s:", name.c_str());
  for (int64_t s : t.sizes()) std::printf(" %lld", static_cast<long long>(s));
  std::printf("\n");
}

template <class F>
void expect_throws(const std::string& name, F&& f) {
  bool threw = false;
  try {
    f();
  } catch (const std::exception&) {
    threw = true;
  }
  std::printf("%s: %s\n", name.c_str(), threw ? "throws" : "does not throw");
  check(threw, name + " throws");
}

}  // namespace

int main() {
  auto x = torch::tensor({{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}, {9.0, 10.0, 11.0, 12.0}}, torch::kFloat64);

  // ---- triu / tril ----
  show("triu_1", torch::triu(x, 1), {3, 4}, {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  show("tril_m1", torch::tril(x, -1), {3, 4}, {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  show("member_triu", x.triu(), {3, 4}, {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  show("member_tril_1", x.tril(1), {3, 4}, {1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12});
  show("triu_past_edge", torch::triu(x, 4), {3, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  show("tril_transposed", torch::tril(x.t()), {4, 3}, {1, 0, 0, 2, 6, 0, 3, 7, 11, 4, 8, 12});
  show("tril_batched", torch::ones({2, 2, 3}, torch::kFloat64).tril(), {2, 2, 3},
       {1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0});
  auto xi = torch::tensor({{1, 2}, {3, 4}}, torch::kInt64);
  auto ui = torch::triu(xi);
  check(ui.dtype() == torch::kInt64, "triu keeps int64");
  show("triu_int64", ui, {2, 2}, {1, 2, 0, 4});

  auto y = x.clone();
  y.triu_(1);
  show("triu_inplace", y, {3, 4}, {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  auto z = x.clone();
  z.tril_(-2);
  show("tril_inplace", z, {3, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0});

  auto xg = x.clone().requires_grad_();
  show("triu_grad", torch::autograd::grad({torch::triu(xg, 1).sum()}, {xg})[0], {3, 4},
       {0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1});
  show("tril_grad", torch::autograd::grad({(torch::tril(xg) * xg).sum()}, {xg})[0], {3, 4},
       {2, 0, 0, 0, 10, 12, 0, 0, 18, 20, 22, 0});

  auto meta = torch::empty({2, 3, 4}, torch::kMeta);  // the default dtype, float32
  auto mt = torch::triu(meta, 1);
  check(mt.is_meta(), "triu of a meta tensor is meta");
  print_sizes("triu_meta_sizes", mt);
  expect_throws("triu_1d", [] { torch::triu(torch::ones({4}, torch::kFloat64)); });

  // ---- lerp ----
  auto s = torch::tensor({0.0, 1.0, -2.0}, torch::kFloat64);
  auto e = torch::tensor({4.0, 3.0, 2.0}, torch::kFloat64);
  show("lerp_0.25", torch::lerp(s, e, 0.25), {3}, {1, 1.5, -1});
  show("lerp_0.75", torch::lerp(s, e, 0.75), {3}, {3, 2.5, 1});
  show("lerp_1.3", torch::lerp(s, e, 1.3), {3}, {5.2, 3.6, 3.2});
  auto w = torch::tensor({{0.5}, {2.0}}, torch::kFloat64);
  show("lerp_tensor_weight", torch::lerp(s, e, w), {2, 3}, {2, 2, 0, 8, 5, 6});
  show("member_lerp", s.lerp(e, 0.5), {3}, {2, 2, 0});
  auto t = s.clone();
  t.lerp_(e, 0.25);
  show("lerp_inplace", t, {3}, {1, 1.5, -1});
  t.lerp_(e, torch::tensor({1.0, 0.0, 0.5}, torch::kFloat64));
  show("lerp_inplace_tensor", t, {3}, {4, 1.5, 0.5});

  auto sg = s.clone().requires_grad_();
  auto eg = e.clone().requires_grad_();
  auto wg = w.clone().requires_grad_();
  auto grads = torch::autograd::grad({torch::lerp(sg, eg, wg).sum()}, {sg, eg, wg});
  show("lerp_grad_start", grads[0], {3}, {-0.5, -0.5, -0.5});
  show("lerp_grad_end", grads[1], {3}, {2.5, 2.5, 2.5});
  show("lerp_grad_weight", grads[2], {2, 1}, {10, 10});
  auto gs = torch::autograd::grad({torch::lerp(sg, eg, 0.75).sum()}, {sg, eg});
  show("lerp_scalar_grad_start", gs[0], {3}, {0.25, 0.25, 0.25});
  show("lerp_scalar_grad_end", gs[1], {3}, {0.75, 0.75, 0.75});
  expect_throws("lerp_int64", [] {
    torch::lerp(torch::tensor({1, 2}, torch::kInt64), torch::tensor({3, 4}, torch::kInt64), 0.5);
  });

  return porting::finish();
}
