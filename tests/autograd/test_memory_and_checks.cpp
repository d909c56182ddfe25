// Saved tensors and graphs are released when they should be; gradcheck catches wrong formulas;
// anomaly mode names the op that produced a NaN.
#include <gtest/gtest.h>

#include <limits>

#include "../support/test_util.h"

namespace graft::test {

using autograd::Node;

TEST(Memory, SavedTensorsFreedByBackward) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  std::weak_ptr<Storage> saved_storage;
  Tensor loss;
  {
    Tensor h = x * 3.0;      // h is saved by the next mul
    saved_storage = h.impl().storage;
    loss = (h * h).sum();
  }
  EXPECT_FALSE(saved_storage.expired()) << "the graph holds h until backward";
  loss.backward();
  EXPECT_TRUE(saved_storage.expired()) << "backward must release saved tensors";
}

TEST(Memory, RetainGraphKeepsSavedTensors) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  std::weak_ptr<Storage> saved_storage;
  Tensor loss;
  {
    Tensor h = x * 3.0;
    saved_storage = h.impl().storage;
    loss = (h * h).sum();
  }
  loss.backward({}, true);
  EXPECT_FALSE(saved_storage.expired());
  loss = Tensor();
  EXPECT_TRUE(saved_storage.expired()) << "dropping the last output frees the graph (no cycles)";
}

TEST(Memory, GraphDiesWithItsOutput) {
  Tensor x = tensor({1.0}, requires_grad());
  std::weak_ptr<Node> node;
  {
    Tensor y = (x * x).exp();  // exp saves its output: must not form a cycle
    node = y.grad_fn();
    EXPECT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired());
}

TEST(Memory, NoGradSavesNothing) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  NoGradGuard ng;
  Tensor y = x * x;
  EXPECT_EQ(y.grad_fn(), nullptr);
  EXPECT_FALSE(y.requires_grad());
}

TEST(Gradcheck, CatchesAWrongBackwardFormula) {
  // y = x^2 with a deliberately wrong derivative (x instead of 2x).
  auto wrong_square = [](const TensorList& in) {
    const Tensor& x = in[0];
    Tensor y;
    {
      NoGradGuard ng;
      y = x * x;
    }
    if (auto node = autograd::make_node("WrongSquareBackward", autograd::ForwardOp::unlisted("wrong_square"), {&x}, [](Node& n, const Tensor& g) -> TensorList {
          return {g * n.saved(0)};
        })) {
      node->save(x);
      autograd::set_history(y, node);
    }
    return y;
  };
  Tensor x = tensor({1.0, -2.0}, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_TRUE(throws_error([&] { autograd::gradcheck(wrong_square, {x}); },
                           {"gradcheck", "Jacobian mismatch", "analytical", "numerical"}));
  autograd::GradcheckOptions quiet;
  quiet.raise_exception = false;
  EXPECT_FALSE(autograd::gradcheck(wrong_square, {x}, quiet));
  auto right = [](const TensorList& in) { return in[0] * in[0]; };
  EXPECT_TRUE(autograd::gradcheck(right, {x}));
}

TEST(Gradcheck, RequiresFloat64) {
  Tensor x = tensor({1.0f}, requires_grad());
  EXPECT_TRUE(throws_error([&] { autograd::gradcheck([](const TensorList& in) { return in[0] * 2.0; }, {x}); },
                           {"gradcheck", "float64", "float32"}));
}

TEST(Anomaly, NamesTheForwardOpThatProducedNaN) {
  Tensor x = tensor({0.0, 1.0}, TensorOptions(kFloat64).requires_grad(true));
  {
    autograd::DetectAnomalyGuard guard;
    Tensor y = (x.sqrt() * 0.0).sum();  // d sqrt(x)/dx at 0 is inf; inf * 0 = nan
    EXPECT_TRUE(throws_error([&] { y.backward(); }, {"SqrtBackward0", "sqrt", "NaN or Inf"}));
  }
  Tensor y = (x.sqrt() * 0.0).sum();  // without anomaly mode: no error, a NaN gradient
  EXPECT_NO_THROW(y.backward());
  EXPECT_TRUE(std::isnan(values(x.grad())[0]));
}

// Issue 14 item 17: the forward op named in these messages is the one the node recorded (Note
// [Forward op of a node]), not a guess from the node's name ("Log1PBackward0" once printed log1_p,
// "AvgPool2DBackward0" avg_pool2_d).
TEST(ForwardOpName, NodesCarryTheirOpIdAndTheListsName) {
  namespace F = graft::nn::functional;
  Tensor x = tensor({0.5, 1.5}, TensorOptions(kFloat64).requires_grad(true));
  const Tensor y = x.log1p();
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "Log1PBackward0");
  EXPECT_STREQ(y.grad_fn()->forward_op_name(), "log1p");
  EXPECT_EQ(y.grad_fn()->op_id(), static_cast<int>(ops::OpId::log1p));
  Tensor img = ones({1, 1, 4, 4}, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_STREQ(F::avg_pool2d(img, 2).grad_fn()->forward_op_name(), "avg_pool2d");
  EXPECT_STREQ(F::max_pool2d(img, 2).grad_fn()->forward_op_name(), "max_pool2d_with_indices");
  EXPECT_STREQ(F::adaptive_avg_pool2d(img, 1).grad_fn()->forward_op_name(), "adaptive_avg_pool2d");
  // Nodes of no listed op have a name and no id.
  EXPECT_STREQ(autograd::grad_accumulator(x)->forward_op_name(), "accumulate_grad");
  EXPECT_EQ(autograd::grad_accumulator(x)->op_id(), autograd::ForwardOp::kNoId);
}

TEST(ForwardOpName, TheInPlaceVersionErrorNamesLog1p) {
  Tensor x = tensor({0.5, 1.5}, TensorOptions(kFloat64).requires_grad(true));
  Tensor a = x * 1.0;
  Tensor y = a.log1p();  // saves its input a
  a.add_(1.0);
  EXPECT_TRUE(throws_error([&] { y.sum().backward(); },
                           {"modified by an inplace operation", "saved by Log1PBackward0 (the backward of log1p)"}));
}

TEST(ForwardOpName, AnomalyModeNamesAvgPool2d) {
  namespace F = graft::nn::functional;
  Tensor x = ones({1, 1, 4, 4}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = F::avg_pool2d(x, 2);
  Tensor g = ones({1, 1, 2, 2}, kFloat64);
  g.select(3, 1).fill_(std::numeric_limits<double>::infinity());
  autograd::DetectAnomalyGuard guard;
  EXPECT_TRUE(throws_error([&] { y.backward(g); }, {"AvgPool2DBackward0", "the forward op 'avg_pool2d'", "NaN or Inf"}));
}

TEST(ForwardOpName, TheMemoryReportNamesTheOpThatProducedASavedTensor) {
  namespace F = graft::nn::functional;
  Tensor x = ones({1, 1, 64, 64}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = F::avg_pool2d(x, 2).sin();  // sin saves its input, the output of avg_pool2d
  bool found = false;
  for (const auto& a : memory::largest_saved_activations(100)) {
    if (a.saved_by != "SinBackward0") continue;
    found = true;
    EXPECT_EQ(a.produced_by, "avg_pool2d");
  }
  EXPECT_TRUE(found);
}

TEST(VersionCounter, SharedByViews) {
  Tensor base = zeros({4}, kFloat64);
  Tensor v = base.narrow(0, 1, 2);
  EXPECT_EQ(base._version(), 0u);
  v.add_(1.0);
  EXPECT_EQ(base._version(), 1u);
  EXPECT_EQ(v._version(), 1u);
  base.mul_(2.0);
  EXPECT_EQ(v._version(), 2u);
  EXPECT_EQ(values(base), (std::vector<double>{0, 2, 2, 0}));
}

}  // namespace graft::test

namespace graft::test {
namespace {

// Note [Gradient stealing]: a leaf's first gradient that nothing else refers to becomes .grad
// without a copy; one shared with another input (AddBackward returns g for both) is copied, so the
// two .grad tensors never alias.
TEST(GradStealing, SoleGradientBecomesGradWithoutCopy) {
  Tensor x = ones({1000}).requires_grad_();
  const Tensor w = full({1000}, 3.0);
  const void* seen = nullptr;
  auto handle = x.register_hook([&seen](const Tensor& g) { seen = g.data_ptr(); });  // observes only
  (x * w).sum().backward();
  ASSERT_NE(seen, nullptr);
  EXPECT_EQ(x.grad().data_ptr(), seen) << "the gradient was copied into .grad";
  EXPECT_TRUE(all_close(x.grad(), std::vector<double>(1000, 3.0), {1000}));
  handle.remove();
}

TEST(GradStealing, SharedGradientIsCopiedSoGradsNeverAlias) {
  Tensor a = zeros({4}).requires_grad_(), b = zeros({4}).requires_grad_();
  (a + b).sum().backward();
  EXPECT_NE(a.grad().data_ptr(), b.grad().data_ptr());
  {
    NoGradGuard ng;
    a.mutable_grad().mul_(5.0);
  }
  EXPECT_TRUE(all_close(a.grad(), {5, 5, 5, 5}, {4}));
  EXPECT_TRUE(all_close(b.grad(), {1, 1, 1, 1}, {4}));
}

}  // namespace
}  // namespace graft::test
