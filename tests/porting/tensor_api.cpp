// LibTorch-style source (tests/porting, docs/porting.md): the tensor and optimiser spellings that
// pytorch/examples' regression and autograd programs use. Ported by tools/port-from-libtorch.sh and
// built against graft; where LibTorch is installed, also built unchanged against it and the outputs
// compared. Each value is checked against a hand-derived one.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++failures;
  }
}

void show(const std::string& name, const torch::Tensor& t, std::vector<double> expected) {
  torch::Tensor c = t.to(torch::kFloat64).contiguous().view({-1});
  std::printf("%s:", name.c_str());
  check(c.numel() == static_cast<int64_t>(expected.size()), name + " has " + std::to_string(expected.size()) + " values");
  for (int64_t i = 0; i < c.numel() && i < static_cast<int64_t>(expected.size()); ++i) {
    const double v = c[i].item<double>();
    const double e = expected[static_cast<size_t>(i)];
    std::printf(" %.6g", v);
    check(std::abs(v - e) <= 1e-5 * (1 + std::abs(e)), name + "[" + std::to_string(i) + "] = " + std::to_string(e));
  }
  std::printf("\n");
}

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

  std::printf("%s\n", failures == 0 ? "all checks passed" : "SOME CHECKS FAILED");
  return failures == 0 ? 0 : 1;
}
