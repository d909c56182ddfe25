// Module hooks (Note [Module hooks] in graft/nn/module.h): forward pre-hooks, forward hooks and full
// backward hooks, their order, removal through handles, nested modules, and the no-hook fast path.
// Expected values are worked out by hand from a Linear with fixed weights:
//   W = [[1, 2, 3], [4, 5, 6]], b = [0.5, -1], x = [[1, 0, -1], [2, 1, 0]]
//   y = x W^T + b = [[-1.5, -3], [4.5, 12]]
//   with L = sum(y): dL/dy = ones(2, 2), dL/dx = ones(2, 2) @ W = [[5, 7, 9], [5, 7, 9]],
//   dL/dW = ones(2, 2)^T @ x = [[3, 1, -1], [3, 1, -1]], dL/db = [2, 2].
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

using nn::Module;

nn::Linear fixed_linear() {
  nn::Linear lin(3, 2);
  lin->to(kFloat64);
  NoGradGuard no_grad;
  lin->weight.copy_(make({1, 2, 3, 4, 5, 6}, {2, 3}));
  lin->bias.copy_(make({0.5, -1}, {2}));
  return lin;
}

Tensor fixed_input(bool requires_grad) {
  Tensor x = make({1, 0, -1, 2, 1, 0}, {2, 3});
  if (requires_grad) x.requires_grad_();
  return x;
}

// Sequential(inner) as one entry (a Sequential built from a single Sequential holder would copy it).
nn::Sequential nest(const nn::Sequential& inner) { return nn::Sequential({{"inner", inner}}); }

const std::vector<double> kY = {-1.5, -3, 4.5, 12};
const std::vector<double> kGradX = {5, 7, 9, 5, 7, 9};

TEST(ModuleHooks, ForwardPreHookReplacesTheInput) {
  auto lin = fixed_linear();
  std::vector<double> seen;
  lin->register_forward_pre_hook([&](Module& m, const Tensor& input) -> std::optional<Tensor> {
    EXPECT_EQ(m.name(), "Linear");
    seen = values(input);
    return input * 2.0;
  });
  Tensor y = lin(fixed_input(false));
  EXPECT_EQ(seen, (std::vector<double>{1, 0, -1, 2, 1, 0}));
  // (2x) W^T + b: row 0 = 2 * [-2, -2] + b, row 1 = 2 * [4, 13] + b
  EXPECT_TRUE(all_close(y, {-3.5, -5, 8.5, 25}, {2, 2}));
}

TEST(ModuleHooks, ForwardPreHookReturningNothingKeepsTheInput) {
  auto lin = fixed_linear();
  int calls = 0;
  lin->register_forward_pre_hook([&](Module&, const Tensor&) { ++calls; });  // void
  lin->register_forward_pre_hook([&](Module&, const Tensor&) -> std::optional<Tensor> { return std::nullopt; });
  EXPECT_TRUE(all_close(lin(fixed_input(false)), kY, {2, 2}));
  EXPECT_EQ(calls, 1);
}

TEST(ModuleHooks, ForwardHookSeesInputAndOutputAndReplacesTheOutput) {
  auto lin = fixed_linear();
  std::vector<double> seen_in, seen_out;
  int calls = 0;
  lin->register_forward_hook([&](Module&, const Tensor& input, const Tensor& output) -> std::optional<Tensor> {
    ++calls;
    seen_in = values(input);
    seen_out = values(output);
    return output + 1.0;
  });
  Tensor y = lin(fixed_input(false));
  EXPECT_EQ(seen_in, (std::vector<double>{1, 0, -1, 2, 1, 0}));
  EXPECT_EQ(seen_out, kY);
  EXPECT_TRUE(all_close(y, {-0.5, -2, 5.5, 13}, {2, 2}));
  EXPECT_EQ(calls, 1);
  // Calling forward directly runs no hooks (as .forward() in PyTorch).
  EXPECT_TRUE(all_close(lin->forward(fixed_input(false)), kY, {2, 2}));
  EXPECT_EQ(calls, 1);
}

TEST(ModuleHooks, PreHookOutputIsWhatForwardHookSees) {
  auto lin = fixed_linear();
  std::vector<double> seen_in;
  lin->register_forward_pre_hook([](Module&, const Tensor& x) -> std::optional<Tensor> { return x * 2.0; });
  lin->register_forward_hook([&](Module&, const Tensor& input, const Tensor&) { seen_in = values(input); });
  lin(fixed_input(false));
  EXPECT_EQ(seen_in, (std::vector<double>{2, 0, -2, 4, 2, 0}));
}

TEST(ModuleHooks, BackwardHookOnALinearInsideNestedSequentials) {
  auto lin = fixed_linear();
  nn::Sequential inner(lin);
  nn::Sequential outer = nest(inner);
  ASSERT_EQ(outer->size(), 1u);
  ASSERT_EQ(outer->ptr(0).get(), inner.get());
  int calls = 0;
  std::vector<double> grad_in, grad_out;
  lin->register_full_backward_hook([&](Module& m, const TensorList& gi, const TensorList& go) {
    ++calls;
    EXPECT_EQ(&m, lin.get());
    ASSERT_EQ(gi.size(), 1u);
    ASSERT_EQ(go.size(), 1u);
    grad_in = values(gi[0]);
    grad_out = values(go[0]);
  });
  Tensor x = fixed_input(true);
  Tensor y = outer(x);
  EXPECT_TRUE(all_close(y, kY, {2, 2}));
  EXPECT_EQ(calls, 0);
  y.sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(grad_out, (std::vector<double>{1, 1, 1, 1}));  // dL/dy
  EXPECT_EQ(grad_in, kGradX);                              // dL/dx = ones @ W
  EXPECT_TRUE(all_close(x.grad(), kGradX, {2, 3}));
  EXPECT_TRUE(all_close(lin->weight.grad(), {3, 1, -1, 3, 1, -1}, {2, 3}));
  EXPECT_TRUE(all_close(lin->bias.grad(), {2, 2}, {2}));
}

TEST(ModuleHooks, BackwardHookReplacesGradInput) {
  auto lin = fixed_linear();
  nn::Sequential net = nest(nn::Sequential(lin));
  lin->register_full_backward_hook(
      [](Module&, const TensorList& gi, const TensorList&) -> std::optional<TensorList> {
        return TensorList{gi[0] * 2.0};
      });
  Tensor x = fixed_input(true);
  net(x).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {10, 14, 18, 10, 14, 18}, {2, 3}));
  // The parameters' gradients do not pass through the input node: unchanged.
  EXPECT_TRUE(all_close(lin->weight.grad(), {3, 1, -1, 3, 1, -1}, {2, 3}));
  EXPECT_TRUE(all_close(lin->bias.grad(), {2, 2}, {2}));
}

TEST(ModuleHooks, BackwardHookSeesTheGradientOfTheReplacedOutput) {
  // A forward hook multiplies the output by 3; L = sum(3 y): grad_output is dL/d(3y) = ones, and
  // grad_input = 3 * ones @ W.
  auto lin = fixed_linear();
  lin->register_forward_hook([](Module&, const Tensor&, const Tensor& y) -> std::optional<Tensor> { return y * 3.0; });
  std::vector<double> grad_in, grad_out;
  lin->register_full_backward_hook([&](Module&, const TensorList& gi, const TensorList& go) {
    grad_in = values(gi[0]);
    grad_out = values(go[0]);
  });
  Tensor x = fixed_input(true);
  (lin(x) * 0.5).sum().backward();  // L = sum(0.5 * 3y)
  EXPECT_EQ(grad_out, (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
  EXPECT_EQ(grad_in, (std::vector<double>{7.5, 10.5, 13.5, 7.5, 10.5, 13.5}));
  EXPECT_TRUE(all_close(x.grad(), {7.5, 10.5, 13.5, 7.5, 10.5, 13.5}, {2, 3}));
}

TEST(ModuleHooks, HooksRunInRegistrationOrderAndPrependGoesFirst) {
  auto lin = fixed_linear();
  std::vector<std::string> log;
  lin->register_forward_pre_hook([&](Module&, const Tensor&) { log.push_back("pre1"); });
  lin->register_forward_pre_hook([&](Module&, const Tensor&) { log.push_back("pre2"); });
  lin->register_forward_pre_hook([&](Module&, const Tensor&) { log.push_back("pre0"); }, /*prepend=*/true);
  lin->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { log.push_back("fwd1"); });
  lin->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { log.push_back("fwd2"); });
  // The second backward hook sees the first one's replacement: grad_input doubled, then +1.
  std::vector<double> second_saw;
  lin->register_full_backward_hook([&](Module&, const TensorList& gi, const TensorList&) -> std::optional<TensorList> {
    log.push_back("bwd1");
    return TensorList{gi[0] * 2.0};
  });
  lin->register_full_backward_hook([&](Module&, const TensorList& gi, const TensorList&) -> std::optional<TensorList> {
    log.push_back("bwd2");
    second_saw = values(gi[0]);
    return TensorList{gi[0] + 1.0};
  });
  Tensor x = fixed_input(true);
  lin(x).sum().backward();
  EXPECT_EQ(log, (std::vector<std::string>{"pre0", "pre1", "pre2", "fwd1", "fwd2", "bwd1", "bwd2"}));
  EXPECT_EQ(second_saw, (std::vector<double>{10, 14, 18, 10, 14, 18}));
  EXPECT_TRUE(all_close(x.grad(), {11, 15, 19, 11, 15, 19}, {2, 3}));
}

TEST(ModuleHooks, RemovedHooksNoLongerFire) {
  auto lin = fixed_linear();
  int pre = 0, fwd = 0, bwd = 0, kept = 0;
  auto h1 = lin->register_forward_pre_hook([&](Module&, const Tensor&) { ++pre; });
  auto h2 = lin->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { ++fwd; });
  auto h3 = lin->register_full_backward_hook([&](Module&, const TensorList&, const TensorList&) { ++bwd; });
  lin->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { ++kept; });
  lin(fixed_input(true)).sum().backward();
  EXPECT_EQ(pre, 1);
  EXPECT_EQ(fwd, 1);
  EXPECT_EQ(bwd, 1);
  h1.remove();
  h2.remove();
  h3.remove();
  h3.remove();  // twice: harmless
  Tensor x = fixed_input(true);
  Tensor y = lin(x);
  y.sum().backward();
  EXPECT_EQ(pre, 1);
  EXPECT_EQ(fwd, 1);
  EXPECT_EQ(bwd, 1);
  EXPECT_EQ(kept, 2);
  EXPECT_EQ(y.grad_fn()->name(), "AddmmBackward0");  // no backward hook left: no hook node
  EXPECT_TRUE(all_close(x.grad(), kGradX, {2, 3}));
}

TEST(ModuleHooks, RemovingAfterTheModuleIsGoneIsHarmless) {
  nn::RemovableHandle handle;
  {
    auto lin = fixed_linear();
    handle = lin->register_forward_hook([](Module&, const Tensor&, const Tensor&) {});
  }
  handle.remove();
  handle.remove();
  SUCCEED();
}

TEST(ModuleHooks, OuterAndInnerHooksFireInPyTorchsOrder) {
  // outer = Sequential(lin, x -> 3x). Forward: outer pre, inner pre, inner forward hook, outer
  // forward hook. Backward: the inner module's input gradient is computed first, so inner's
  // backward hook runs before outer's (as in PyTorch).
  auto lin = fixed_linear();
  nn::Sequential outer(lin, [](const Tensor& t) { return t * 3.0; });
  std::vector<std::string> log;
  std::vector<double> inner_gi, inner_go, outer_gi, outer_go;
  outer->register_forward_pre_hook([&](Module&, const Tensor&) { log.push_back("outer pre"); });
  lin->register_forward_pre_hook([&](Module&, const Tensor&) { log.push_back("inner pre"); });
  outer->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { log.push_back("outer forward"); });
  lin->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { log.push_back("inner forward"); });
  outer->register_full_backward_hook([&](Module& m, const TensorList& gi, const TensorList& go) {
    EXPECT_EQ(m.name(), "Sequential");
    log.push_back("outer backward");
    outer_gi = values(gi[0]);
    outer_go = values(go[0]);
  });
  lin->register_full_backward_hook([&](Module& m, const TensorList& gi, const TensorList& go) {
    EXPECT_EQ(m.name(), "Linear");
    log.push_back("inner backward");
    inner_gi = values(gi[0]);
    inner_go = values(go[0]);
  });
  Tensor x = fixed_input(true);
  Tensor out = outer(x);
  EXPECT_TRUE(all_close(out, {-4.5, -9, 13.5, 36}, {2, 2}));
  out.sum().backward();
  EXPECT_EQ(log, (std::vector<std::string>{"outer pre", "inner pre", "inner forward", "outer forward",
                                           "inner backward", "outer backward"}));
  EXPECT_EQ(outer_go, (std::vector<double>{1, 1, 1, 1}));  // dL/d(out)
  EXPECT_EQ(inner_go, (std::vector<double>{3, 3, 3, 3}));  // dL/dy = 3
  const std::vector<double> gx = {15, 21, 27, 15, 21, 27};   // 3 * ones @ W
  EXPECT_EQ(inner_gi, gx);
  EXPECT_EQ(outer_gi, gx);
  EXPECT_TRUE(all_close(x.grad(), gx, {2, 3}));
}

TEST(ModuleHooks, InputThatDoesNotRequireGradGivesAnUndefinedGradInput) {
  auto lin = fixed_linear();
  int calls = 0;
  TensorList grad_in, grad_out;
  lin->register_full_backward_hook([&](Module&, const TensorList& gi, const TensorList& go) {
    ++calls;
    grad_in = gi;
    grad_out = go;
  });
  Tensor y = nn::Sequential(lin)(fixed_input(false));
  EXPECT_EQ(y.grad_fn()->name(), "BackwardHookFunctionBackward");
  y.sum().backward();
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(grad_in.size(), 1u);
  EXPECT_FALSE(grad_in[0].defined());
  ASSERT_EQ(grad_out.size(), 1u);
  EXPECT_TRUE(all_close(grad_out[0], {1, 1, 1, 1}, {2, 2}));
  EXPECT_TRUE(all_close(lin->bias.grad(), {2, 2}, {2}));
}

TEST(ModuleHooks, ReturningAGradientForAnInputWithoutGradIsAnError) {
  auto lin = fixed_linear();
  lin->register_full_backward_hook([](Module&, const TensorList&, const TensorList& go) -> std::optional<TensorList> {
    return TensorList{go[0]};
  });
  Tensor y = lin(fixed_input(false));
  EXPECT_TRUE(throws_error([&] { y.sum().backward(); },
                           {"register_full_backward_hook", "Linear", "does not require grad"}));
}

TEST(ModuleHooks, ReturningTheWrongNumberOfGradientsIsAnError) {
  auto lin = fixed_linear();
  lin->register_full_backward_hook([](Module&, const TensorList& gi, const TensorList&) -> std::optional<TensorList> {
    return TensorList{gi[0], gi[0]};
  });
  Tensor y = lin(fixed_input(true));
  EXPECT_TRUE(throws_error([&] { y.sum().backward(); }, {"register_full_backward_hook", "Linear", "2"}));
}

TEST(ModuleHooks, NoHooksMeansNoExtraNodesAndTheSameResults) {
  auto lin = fixed_linear();
  EXPECT_FALSE(lin->has_hooks());
  Tensor x = fixed_input(true);
  Tensor y = lin(x);
  EXPECT_EQ(y.grad_fn()->name(), "AddmmBackward0");
  EXPECT_TRUE(all_close(y, kY, {2, 2}));
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), kGradX, {2, 3}));

  // Through a Sequential too.
  Tensor x2 = fixed_input(true);
  Tensor y2 = nest(nn::Sequential(lin))(x2);
  EXPECT_EQ(y2.grad_fn()->name(), "AddmmBackward0");
  ASSERT_EQ(y2.grad_fn()->num_inputs(), 3u);

  // Forward hooks alone add no node either; a backward hook adds the two identity nodes.
  lin->register_forward_hook([](Module&, const Tensor&, const Tensor&) {});
  EXPECT_EQ(lin(fixed_input(true)).grad_fn()->name(), "AddmmBackward0");
  auto h = lin->register_full_backward_hook([](Module&, const TensorList&, const TensorList&) {});
  Tensor y3 = lin(fixed_input(true));
  EXPECT_EQ(y3.grad_fn()->name(), "BackwardHookFunctionBackward");
  ASSERT_EQ(y3.grad_fn()->num_inputs(), 1u);
  EXPECT_EQ(y3.grad_fn()->next_edges[0].fn->name(), "AddmmBackward0");
  h.remove();
  EXPECT_EQ(lin(fixed_input(true)).grad_fn()->name(), "AddmmBackward0");
}

TEST(ModuleHooks, NoGradModeRunsForwardHooksButRecordsNoBackwardHook) {
  auto lin = fixed_linear();
  int fwd = 0, bwd = 0;
  lin->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { ++fwd; });
  lin->register_full_backward_hook([&](Module&, const TensorList&, const TensorList&) { ++bwd; });
  NoGradGuard no_grad;
  Tensor y = lin(fixed_input(true));
  EXPECT_EQ(fwd, 1);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(all_close(y, kY, {2, 2}));
  EXPECT_EQ(bwd, 0);
}

TEST(ModuleHooks, ModuleHeldByValueUsesCall) {
  nn::LinearImpl lin(3, 2);
  lin.to(kFloat64);
  {
    NoGradGuard no_grad;
    lin.weight.copy_(make({1, 2, 3, 4, 5, 6}, {2, 3}));
    lin.bias.copy_(make({0.5, -1}, {2}));
  }
  std::vector<double> grad_in;
  lin.register_full_backward_hook([&](Module& m, const TensorList& gi, const TensorList&) {
    EXPECT_EQ(&m, &lin);
    grad_in = values(gi[0]);
  });
  Tensor x = fixed_input(true);
  Tensor y = lin.call(x, [&](const Tensor& in) { return lin.forward(in); });
  y.sum().backward();
  EXPECT_EQ(grad_in, kGradX);
}

TEST(ModuleHooks, OtherForwardSignaturesAreCalledWithoutHooks) {
  nn::MSELoss loss;
  int calls = 0;
  loss->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { ++calls; });
  Tensor l = loss(make({1, 2}, {2}), make({0, 0}, {2}));  // two arguments: forward directly
  EXPECT_DOUBLE_EQ(l.item<double>(), 2.5);                  // (1 + 4) / 2
  EXPECT_EQ(calls, 0);
}

TEST(ModuleHooks, ACloneStartsWithoutHooks) {
  auto lin = fixed_linear();
  int calls = 0;
  lin->register_forward_hook([&](Module&, const Tensor&, const Tensor&) { ++calls; });
  auto copy = std::dynamic_pointer_cast<nn::LinearImpl>(lin->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_FALSE(copy->has_hooks());
  nn::Linear copy_holder(copy);
  copy_holder(fixed_input(false));
  EXPECT_EQ(calls, 0);
  lin(fixed_input(false));
  EXPECT_EQ(calls, 1);
}

TEST(ModuleHooks, GradientsThroughTheHookNodesAreSecondDifferentiable) {
  // L = sum(y^2), y = x W^T + b, through a module with a backward hook: create_graph works
  // through the identity nodes. By hand: g = dL/dx = 2 y W; sum(g) = 2 sum_n sum_i y_ni s_i with
  // s = row sums of W = [6, 15], so d sum(g)/dx_nk = 2 (6 W_0k + 15 W_1k) = [132, 174, 216].
  auto lin = fixed_linear();
  Tensor x = fixed_input(true);
  Tensor g_plain = autograd::grad({lin(x).pow(2).sum()}, {x}, {}, std::nullopt, true)[0];
  Tensor gg_plain = autograd::grad({g_plain.sum()}, {x})[0];
  lin->register_full_backward_hook([](Module&, const TensorList&, const TensorList&) {});
  Tensor g = autograd::grad({lin(x).pow(2).sum()}, {x}, {}, std::nullopt, true)[0];
  Tensor gg = autograd::grad({g.sum()}, {x})[0];
  // Row 0: 2 (-1.5 [1, 2, 3] - 3 [4, 5, 6]); row 1: 2 (4.5 [1, 2, 3] + 12 [4, 5, 6]).
  EXPECT_TRUE(all_close(g, {-27, -36, -45, 105, 138, 171}, {2, 3}));
  EXPECT_TRUE(all_close(g, g_plain));
  EXPECT_TRUE(all_close(gg, {132, 174, 216, 132, 174, 216}, {2, 3}));
  EXPECT_TRUE(all_close(gg, gg_plain));
}

}  // namespace
}  // namespace graft::test
