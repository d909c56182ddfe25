// LibTorch-style source (tests/porting, docs/porting.md): custom autograd functions. CMake runs
// tools/port-from-libtorch.sh over this file and builds the result against graft; where LibTorch is
// installed it also builds this file unchanged against LibTorch, and the two outputs are compared.
// Every value is also checked against a hand-derived one, so the program fails on its own.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "porting_checks.h"

using namespace torch::autograd;

namespace {

using porting::check;
using porting::show;

// y = x w^T + b, with an optional bias; saves its inputs.
class LinearFunction : public Function<LinearFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor input, torch::Tensor weight,
                               torch::Tensor bias = torch::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) output += bias.unsqueeze(0).expand_as(output);
    return output;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto grad_output = grad_outputs[0];
    torch::Tensor gi, gw, gb;
    if (ctx->needs_input_grad(0)) gi = grad_output.mm(saved[1]);
    if (ctx->needs_input_grad(1)) gw = grad_output.t().mm(saved[0]);
    if (saved[2].defined() && ctx->needs_input_grad(2)) gb = grad_output.sum(0);
    return {gi, gw, gb};
  }
};

// y = c x, with c kept in saved_data.
class MulConstant : public Function<MulConstant> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, double constant) {
    ctx->saved_data["constant"] = constant;
    ctx->saved_data["label"] = std::string("scale");
    return x * constant;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), torch::Tensor()};
  }
};

// y = x^3 with a backward made of differentiable ops, so that double backward works through it.
class Cube : public Function<Cube> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto x = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * 3 * x * x};
  }
};

// x *= 2 in place (marked dirty), returned as the output.
class DoubleInPlace : public Function<DoubleInPlace> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x;
  }
  static tensor_list backward(AutogradContext*, tensor_list grad_outputs) { return {grad_outputs[0] * 2}; }
};

// Returns the row sums and the index of each row's maximum; the index takes no gradient.
class SumAndArgmax : public Function<SumAndArgmax> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor x) {
    auto idx = x.argmax(1);
    ctx->mark_non_differentiable({idx});
    ctx->saved_data["cols"] = x.size(1);
    return {x.sum(1), idx};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const int64_t cols = ctx->saved_data["cols"].toInt();
    return {grad_outputs[0].unsqueeze(1).expand({grad_outputs[0].size(0), cols}).clone()};
  }
};

// Returns (x y, x + y): two differentiable outputs; backward gets one gradient for each, and
// zeros for an output that took no part in the loss.
class ProductAndSum : public Function<ProductAndSum> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor y) {
    ctx->save_for_backward({x, y});
    return {x * y, x + y};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto gp = grad_outputs[0], gs = grad_outputs[1];
    return {gp * saved[1] + gs, gp * saved[0] + gs};
  }
};

}  // namespace

int main() {
  auto x = torch::tensor({{1.0, 2.0, 3.0}, {-1.0, 0.5, 2.0}}).requires_grad_();
  auto w = torch::tensor({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.5}, {0.0, -2.0, 1.0}, {1.0, 1.0, 1.0}}).requires_grad_();
  auto b = torch::tensor({0.5, -0.5, 1.0, 0.0}).requires_grad_();

  // LinearFunction against the hand-derived x w^T + b and its gradients for sum(): dx = 1 w,
  // dw = 1^T x, db = column counts.
  auto y = LinearFunction::apply(x, w, b);
  show("linear", y, {-1.5, 5, 0, 6, -2.5, -1, 2, 1.5});
  y.sum().backward();
  show("linear.dx", x.grad(), {4, 0, 1.5, 4, 0, 1.5});
  show("linear.dw", w.grad(), {0, 2.5, 5, 0, 2.5, 5, 0, 2.5, 5, 0, 2.5, 5});
  show("linear.db", b.grad(), {2, 2, 2, 2});
  check(y.requires_grad(), "a custom function's output requires grad");

  // Without a bias: the third argument's gradient stays undefined.
  x.grad().zero_();
  auto y2 = LinearFunction::apply(x, w.detach());
  y2.sum().backward();
  show("linear_nobias.dx", x.grad(), {4, 0, 1.5, 4, 0, 1.5});

  // MulConstant: d(5.5 x)/dx = 5.5.
  auto v = torch::tensor({1.0, -2.0}).requires_grad_();
  auto m = MulConstant::apply(v, 5.5);
  show("mulconstant", m, {5.5, -11});
  m.sum().backward();
  show("mulconstant.dv", v.grad(), {5.5, 5.5});

  // Double backward through Cube: d/dx x^3 = 3 x^2, d2/dx2 = 6 x.
  auto c = torch::tensor({2.0, -1.0}).requires_grad_();
  auto cube = Cube::apply(c);
  auto g = torch::autograd::grad({cube.sum()}, {c}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  show("cube.grad", g, {12, 3});
  auto gg = torch::autograd::grad({g.sum()}, {c})[0];
  show("cube.gradgrad", gg, {12, -6});

  // mark_dirty: the input is changed in place and its history continues through the node.
  auto leaf = torch::tensor({1.0, 3.0}).requires_grad_();
  auto t = leaf * 1;  // not a leaf: may be changed in place
  auto d = DoubleInPlace::apply(t);
  show("dirty", d, {2, 6});
  show("dirty.same_storage", torch::tensor({d.data_ptr<float>() == t.data_ptr<float>() ? 1.0 : 0.0}), {1});
  (d * d).sum().backward();  // d = 2 leaf: d(sum d^2)/dleaf = 8 leaf
  show("dirty.dleaf", leaf.grad(), {8, 24});
  bool threw = false;
  try {
    DoubleInPlace::apply(leaf);  // a leaf that requires grad may not be changed in place
  } catch (const c10::Error&) {
    threw = true;
  }
  check(threw, "mark_dirty on a leaf that requires grad throws");

  // mark_non_differentiable: two outputs, the indices without grad.
  auto s = torch::tensor({{1.0, 5.0, 2.0}, {7.0, 0.0, 1.0}}).requires_grad_();
  auto outs = SumAndArgmax::apply(s);
  show("sum", outs[0], {8, 8});
  show("argmax", outs[1], {1, 0});
  check(outs[0].requires_grad() && !outs[1].requires_grad(), "only the sums require grad");
  (outs[0] * torch::tensor({1.0, 2.0})).sum().backward();
  show("sum.ds", s.grad(), {1, 1, 1, 2, 2, 2});

  // Two differentiable outputs. loss = sum(3 p + s) with p = x y, s = x + y: dx = 3 y + 1, dy = 3 x + 1.
  auto px = torch::tensor({1.0, -2.0, 0.5}).requires_grad_();
  auto py = torch::tensor({4.0, 3.0, -1.0}).requires_grad_();
  auto ps = ProductAndSum::apply(px, py);
  show("product", ps[0], {4, -6, -0.5});
  show("sum2", ps[1], {5, 1, -0.5});
  check(ps[0].requires_grad() && ps[1].requires_grad(), "both outputs require grad");
  (3 * ps[0] + ps[1]).sum().backward();
  show("product.dx", px.grad(), {13, 10, -2});
  show("product.dy", py.grad(), {4, -5, 2.5});
  // Only the second output in the loss: the first one's gradient reaches backward as zeros.
  px.grad().zero_();
  py.grad().zero_();
  ProductAndSum::apply(px, py)[1].sum().backward();
  show("sum2.dx", px.grad(), {1, 1, 1});
  show("sum2.dy", py.grad(), {1, 1, 1});

  // Saved tensors are freed by backward: a second backward through the node is an error.
  auto p = torch::tensor({1.5}).requires_grad_();
  auto q = Cube::apply(p);
  q.backward();
  threw = false;
  try {
    q.backward();
  } catch (const c10::Error&) {
    threw = true;
  }
  check(threw, "a second backward through a freed custom node throws");

  // No grad mode: nothing is recorded.
  {
    torch::NoGradGuard no_grad;
    auto z = Cube::apply(p);
    check(!z.requires_grad(), "under NoGradGuard the output does not require grad");
  }

  return porting::finish();
}
