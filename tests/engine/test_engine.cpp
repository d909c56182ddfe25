// The autograd engine: PyTorch's semantics checked against hand-computed gradients.
#include <gtest/gtest.h>

#include "../support/test_util.h"

namespace graft::test {

TEST(Engine, SeedExample) {
  // The seed document's example: x = [1, 2, 3], y = 2x, z = mean(y) -> dz/dx = 2/3 each.
  Tensor x = tensor({1.0, 2.0, 3.0}, requires_grad());
  Tensor z = (x * 2).mean();
  z.backward();
  EXPECT_TRUE(all_close(x.grad(), {2.0 / 3, 2.0 / 3, 2.0 / 3}, {3}, 1e-7, 1e-7));
}

TEST(Engine, GradAccumulatesAcrossBackwardCalls) {
  Tensor x = tensor({1.0, -2.0}, TensorOptions(kFloat64).requires_grad(true));
  (x * x).sum().backward();   // 2x
  (x * 3.0).sum().backward();  // + 3
  EXPECT_TRUE(all_close(x.grad(), {5.0, -1.0}, {2}));
  x.mutable_grad() = Tensor();
  (x * x).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {2.0, -4.0}, {2}));
}

TEST(Engine, LeafAndGradFnNames) {
  Tensor a = tensor({1.0, 2.0}, requires_grad());
  Tensor b = a * a + 1.0;
  EXPECT_TRUE(a.is_leaf());
  EXPECT_FALSE(b.is_leaf());
  EXPECT_EQ(b.grad_fn()->name(), "AddBackward1");
  EXPECT_EQ((a * a).grad_fn()->name(), "MulBackward0");
  EXPECT_EQ(a.grad_fn(), nullptr);
  Tensor c = tensor({1.0, 2.0});
  EXPECT_FALSE((c * c).requires_grad());
}

TEST(Engine, NonLeafGradNotKeptUnlessRetained) {
  Tensor x = tensor({1.0, 2.0}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = x * 3.0;
  Tensor w = x * 2.0;
  w.retain_grad();
  ((y + w) * (y + w)).sum().backward();
  EXPECT_FALSE(y.grad().defined());
  // d/dw sum((y+w)^2) = 2 (y + w) = 2 * 5x
  EXPECT_TRUE(all_close(w.grad(), {10.0, 20.0}, {2}));
  EXPECT_TRUE(w.retains_grad());
}

TEST(Engine, SecondBackwardThroughFreedGraphRaises) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = (x * x).sum();
  y.backward();
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"MulBackward0", "second time", "retain_graph"}));
  Tensor z = (x * x).sum();
  z.backward({}, /*retain_graph=*/true);
  z.backward();  // allowed: the first kept the graph
  EXPECT_TRUE(all_close(x.grad(), {2 + 4.0, 4 + 8.0}, {2}, 1e-6, 1e-6));
}

TEST(Engine, BackwardOnNonScalarNeedsGradient) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 2.0;
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"backward", "scalar", "[2]"}));
  y.backward(tensor({1.0, 10.0}));
  EXPECT_TRUE(all_close(x.grad(), {2.0, 20.0}, {2}));
}

TEST(Engine, BackwardOnTensorWithoutGradRaises) {
  Tensor x = tensor({1.0, 2.0});
  EXPECT_TRUE(throws_error([&] { x.sum().backward(); }, {"backward", "does not require grad"}));
}

TEST(Engine, NoGradGuardRecordsNothingAndIsThreadLocal) {
  Tensor x = tensor({1.0}, requires_grad());
  {
    NoGradGuard ng;
    EXPECT_FALSE((x * 2.0).requires_grad());
    {
      EnableGradGuard eg;
      EXPECT_TRUE((x * 2.0).requires_grad());
    }
    bool other_thread = false;
    std::thread t([&] { other_thread = GradMode::is_enabled(); });
    t.join();
    EXPECT_TRUE(other_thread);
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
  {
    InferenceMode im;
    EXPECT_FALSE((x * 2.0).requires_grad());
    EXPECT_TRUE(InferenceMode::is_enabled());
  }
}

TEST(Engine, DeepChainDoesNotOverflowAndFrees) {
  Tensor x = tensor({1.0}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.sum().backward();
  EXPECT_EQ(x.grad().item<double>(), 1.0);
  // Rebuild and drop without backward: destruction must be iterative too.
  Tensor z = x;
  for (int i = 0; i < 100000; ++i) z = z * x;
  z = Tensor();
  SUCCEED();
}

TEST(Engine, BroadcastGradientIsSummedToInputShape) {
  Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, requires_grad());
  Tensor b = tensor({10.0, 20.0, 30.0}, requires_grad());
  (a * b).sum().backward();
  EXPECT_TRUE(all_close(b.grad(), {5.0, 7.0, 9.0}, {3}));
  EXPECT_TRUE(all_close(a.grad(), {10, 20, 30, 10, 20, 30}, {2, 3}));
}

TEST(Engine, InPlaceOnSavedTensorRaisesNamingBothOps) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 1.0;
  Tensor z = y * y;  // saves y
  y.add_(1.0);
  EXPECT_TRUE(throws_error([&] { z.sum().backward(); },
                           {"MulBackward0", "[2]", "version 0", "version 1", "add_"}));
}

TEST(Engine, InPlaceOnLeafRequiringGradRaises) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  EXPECT_TRUE(throws_error([&] { x.mul_(2.0); }, {"mul_", "leaf", "NoGradGuard"}));
  {
    NoGradGuard ng;
    x.mul_(2.0);
  }
  EXPECT_TRUE(all_close(x, {2.0, 4.0}, {2}));
}

TEST(Engine, InPlaceRecordsHistory) {
  Tensor x = tensor({1.0, 2.0}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = x * 1.0;
  y.mul_(3.0);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward1");
  y.add_(x);
  (y * y).sum().backward();
  // y = 4x, d/dx sum(y^2) = 2 y * 4 = 32 x
  EXPECT_TRUE(all_close(x.grad(), {32.0, 64.0}, {2}));
}

TEST(Engine, TensorHooksReplaceGradientAndRemove) {
  Tensor x = tensor({1.0, 2.0}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = x * 2.0;
  auto h = y.register_hook([](const Tensor& g) { return g * 10.0; });
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {20.0, 20.0}, {2}));
  x.mutable_grad() = Tensor();
  Tensor y2 = x * 2.0;
  auto h2 = y2.register_hook([](const Tensor& g) { return g * 10.0; });
  h2.remove();
  y2.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {2.0, 2.0}, {2}));
  // Leaf hooks run before accumulation.
  x.mutable_grad() = Tensor();
  auto hl = x.register_hook([](const Tensor& g) { return g + 1.0; });
  (x * 1.0).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {2.0, 2.0}, {2}));
  hl.remove();
  (void)h;
}

TEST(Engine, AutogradGradDoesNotTouchDotGrad) {
  Tensor x = tensor({3.0}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = x * x * x;
  auto g = autograd::grad({y.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(all_close(g[0], {27.0}, {1}));  // 3x^2
  EXPECT_FALSE(x.grad().defined());
  auto gg = autograd::grad({g[0].sum()}, {x});
  EXPECT_TRUE(all_close(gg[0], {18.0}, {1}));  // 6x
  Tensor unused = tensor({1.0}, requires_grad());
  EXPECT_TRUE(throws_error([&] { autograd::grad({(x * 2.0).sum()}, {unused}); }, {"grad", "allow_unused"}));
  auto r = autograd::grad({(x * 2.0).sum()}, {unused}, {}, std::nullopt, false, true);
  EXPECT_FALSE(r[0].defined());
}

TEST(Engine, BackwardInputsRestrictsAccumulation) {
  Tensor a = tensor({1.0}, requires_grad());
  Tensor b = tensor({2.0}, requires_grad());
  (a * b).sum().backward({}, std::nullopt, false, TensorList{a});
  EXPECT_TRUE(all_close(a.grad(), {2.0}, {1}));
  EXPECT_FALSE(b.grad().defined());
}

TEST(Engine, FirstGradientIsStolenNotCopied) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor g = tensor({5.0, 6.0});
  void* p = g.data_ptr();
  (x * 1.0).backward(g);
  // mul by a scalar creates a fresh gradient, which is then stolen; the user's g is not reused
  EXPECT_NE(x.grad().data_ptr(), p);
  Tensor y = tensor({1.0, 2.0}, requires_grad());
  y.backward(tensor({3.0, 4.0}));
  EXPECT_TRUE(all_close(y.grad(), {3.0, 4.0}, {2}));
}

TEST(Engine, DetachSharesStorageWithoutHistory) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_alias_of(y));
  y.detach_();
  EXPECT_FALSE(y.requires_grad());
}

}  // namespace graft::test
