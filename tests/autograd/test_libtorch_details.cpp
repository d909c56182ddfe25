// Autograd details where graft follows PyTorch/LibTorch exactly (issue 15): retain_grad() across
// in-place ops, backward(inputs=...) with non-leaf and empty inputs, grad() without inputs,
// InferenceMode's inference tensors (Note [Inference tensors] in src/autograd/grad_mode.cpp), the
// warning handler and the default dtype. Every expected value is worked out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double at(const Tensor& t, int64_t i) { return t.to(kFloat64).contiguous().data_ptr<double>()[i]; }

TEST(RetainGrad, FollowsTheTensorThroughInPlaceOps) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = x * 3;
  y.retain_grad();
  y.mul_(2);          // y = 6 x now
  (y * y).sum().backward();
  // d/dy sum(y^2) = 2 y = 12 x: the gradient of the new value, not of 3 x (which would be 24 x).
  EXPECT_DOUBLE_EQ(at(y.grad(), 0), 12.0);
  EXPECT_DOUBLE_EQ(at(y.grad(), 1), 24.0);
  EXPECT_DOUBLE_EQ(at(x.grad(), 1), 144.0);  // 72 x
  EXPECT_TRUE(y.retains_grad());
}

TEST(BackwardInputs, NonLeafInputsGetTheirGradient) {
  Tensor a = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor h = a * a;
  Tensor out = (h * 3).sum();
  out.backward({}, true, false, {h});
  EXPECT_DOUBLE_EQ(at(h.grad(), 0), 3.0);
  EXPECT_FALSE(a.grad().defined());  // not in `inputs`
  // A second pass accumulates, as into a leaf's .grad.
  out.backward({}, true, false, {h, a});
  EXPECT_DOUBLE_EQ(at(h.grad(), 1), 6.0);
  EXPECT_DOUBLE_EQ(at(a.grad(), 1), 12.0);  // d/da 3 a^2 = 6 a
  // With create_graph, the non-leaf's .grad is differentiable: out2 = sum(h^2), dh = 2 h = 2 a^2.
  Tensor h2 = a * a;
  (h2 * h2).sum().backward({}, std::nullopt, true, {h2});
  EXPECT_TRUE(h2.grad().requires_grad());
  EXPECT_DOUBLE_EQ(at(h2.grad(), 1), 8.0);
}

TEST(BackwardInputs, EmptyListsAreErrors) {
  Tensor a = tensor({1.0}, kFloat64).requires_grad_();
  Tensor out = (a * 2).sum();
  const std::string e1 = error_of([&] { out.backward({}, true, false, std::vector<Tensor>{}); });
  EXPECT_NE(e1.find("empty `inputs`"), std::string::npos) << e1;
  const std::string e2 = error_of([&] { autograd::grad({out}, {}); });
  EXPECT_NE(e2.find("an empty list of inputs"), std::string::npos) << e2;
  out.backward();  // no inputs at all: every leaf
  EXPECT_DOUBLE_EQ(at(a.grad(), 0), 2.0);
}

TEST(ViewUnderNoGrad, DoesNotRequireGrad) {
  Tensor x = ones({2, 2}, requires_grad());
  Tensor v;
  {
    NoGradGuard g;
    v = x.view({4});
  }
  EXPECT_FALSE(v.requires_grad());  // as LibTorch: a view made under no-grad records nothing
  EXPECT_TRUE(v.is_leaf());
}

TEST(InferenceTensors, FollowPyTorchsRules) {
  Tensor w = ones({2}, requires_grad());
  Tensor made, view;
  {
    InferenceMode guard;
    made = w * 2;
    view = w.view({2});
    EXPECT_TRUE(made.is_inference());
    EXPECT_FALSE(view.is_inference());  // a view of a normal tensor stays normal
    EXPECT_FALSE(made.requires_grad());
    made.add_(1);  // in-place inside InferenceMode: fine
  }
  EXPECT_DOUBLE_EQ(at(made, 0), 3.0);
  EXPECT_FALSE(w.is_inference());
  EXPECT_TRUE(made.view({2}).is_inference());
  EXPECT_TRUE(made.detach().is_inference());
  const std::string inplace = error_of([&] { made.add_(1); });
  EXPECT_NE(inplace.find("Inplace update to inference tensor outside InferenceMode is not allowed"), std::string::npos)
      << inplace;  // LibTorch's sentence
  EXPECT_NE(error_of([&] { made.fill_(0); }), "");
  EXPECT_DOUBLE_EQ(at(made, 0), 3.0);  // nothing written
  const std::string rg = error_of([&] { made.requires_grad_(true); });
  EXPECT_NE(rg.find("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."),
            std::string::npos)
      << rg;
  const std::string saved = error_of([&] { (w * made).sum(); });
  EXPECT_NE(saved.find("Inference tensors cannot be saved for backward."), std::string::npos) << saved;
  const Tensor leafless = ones({1}).requires_grad_() * 2;
  const std::string nonleaf = error_of([&] { leafless.requires_grad_(false); });
  EXPECT_NE(nonleaf.find("you can only change requires_grad flags of leaf variables."), std::string::npos) << nonleaf;
  const std::string integral = error_of([] { zeros({1}, kInt32).requires_grad_(); });
  EXPECT_NE(integral.find("Only Tensors of floating point and complex dtype can require gradients"), std::string::npos)
      << integral;
  // Uses that need no saving are fine (add saves nothing), and clone() makes a normal tensor.
  EXPECT_DOUBLE_EQ(at(w + made, 0), 4.0);
  Tensor normal = made.clone();
  EXPECT_FALSE(normal.is_inference());
  normal.add_(1);
  EXPECT_DOUBLE_EQ(at(normal, 1), 4.0);
}

struct Collect : WarningHandler {
  std::vector<std::string> messages;
  using WarningHandler::process;
  void process(const Warning& w) override { messages.push_back(w.msg()); }
};

// LibTorch 1.13's handler form: process(location, msg, verbatim), set through Warning's scope.
struct Collect113 : WarningHandler {
  std::vector<std::string> messages;
  std::vector<int> lines;
  using WarningHandler::process;
  void process(const SourceLocation& where, const std::string& msg, bool /*verbatim*/) override {
    messages.push_back(msg);
    lines.push_back(static_cast<int>(where.line));
  }
};

TEST(WarningHandler, LibTorch113FormReceivesWarningsInPieces) {
  Collect113 collect;
  WarningHandler* before = Warning::get_warning_handler();
  int line = 0;
  {
    Warning::WarningHandlerGuard guard(&collect);
    EXPECT_EQ(Warning::get_warning_handler(), &collect);
    EXPECT_EQ(WarningUtils::get_warning_handler(), &collect);  // one handler, two spellings
    line = __LINE__ + 1;
    GRAFT_TORCH_WARN("x is ", 3, ", not ", 2.5);
    for (int i = 0; i < 3; ++i) GRAFT_TORCH_WARN_ONCE("once");  // one call site: once
    Warning::WarnAlways always;
    for (int i = 0; i < 2; ++i) GRAFT_TORCH_WARN_ONCE("always");  // warn-always: each time
  }
  EXPECT_EQ(Warning::get_warning_handler(), before);
  EXPECT_FALSE(Warning::get_warnAlways());  // WarnAlways restored it
  ASSERT_EQ(collect.messages, (std::vector<std::string>{"x is 3, not 2.5", "once", "always", "always"}));
  EXPECT_EQ(collect.lines[0], line);
}

TEST(LibTorchChecks, ReadingANonLeafGradWarnsUnlessRetained) {
  Collect113 collect;
  Warning::WarningHandlerGuard guard(&collect);
  const Tensor x = ones({2}).requires_grad_();
  const Tensor h = x * 3;
  EXPECT_FALSE(h.grad().defined());
  ASSERT_EQ(collect.messages.size(), 1u);
  EXPECT_NE(collect.messages[0].find("is not a leaf"), std::string::npos) << collect.messages[0];
  (void)x.grad();  // a leaf: no warning
  h.retain_grad();
  (h * h).sum().backward();
  EXPECT_EQ(h.grad().sizes().vec(), (std::vector<int64_t>{2}));  // retained: no warning either
  EXPECT_EQ(collect.messages.size(), 1u);
}

TEST(LibTorchChecks, BackwardWithCreateGraphWarns) {
  Collect113 collect;
  Warning::WarningHandlerGuard guard(&collect);
  Warning::WarnAlways always;  // the warning is once per process otherwise
  Tensor x = ones({2}).requires_grad_();
  (x * x).sum().backward({}, std::nullopt, /*create_graph=*/true);
  ASSERT_EQ(collect.messages.size(), 1u);
  EXPECT_NE(collect.messages[0].find("Using backward() with create_graph=True"), std::string::npos);
  EXPECT_EQ(test::values(x.grad().detach()), (std::vector<double>{2, 2}));
  (x * x).sum().backward();  // without create_graph: no warning
  EXPECT_EQ(collect.messages.size(), 1u);
  autograd::backward({(x * x).sum()}, {}, std::nullopt, /*create_graph=*/true);  // the free function too
  EXPECT_EQ(collect.messages.size(), 2u);
  // The cycle the warning is about: x.grad's graph holds x. Break it, as the warning says.
  x.mutable_grad() = Tensor();
}

TEST(LibTorchChecks, RemovingAnUnknownHookIsAnError) {
  const Tensor x = ones({2}).requires_grad_();
  const Tensor y = x * 2;
  const unsigned id = y.register_hook([](const Tensor& g) { return g; });
  y.remove_hook(id);
  EXPECT_TRUE(test::throws_error([&] { y.remove_hook(id); }, {"remove_hook", "Invalid index"}));
  EXPECT_TRUE(test::throws_error([&] { x.remove_hook(12345); }, {"remove_hook", "id 12345"}));
}

// forward writes through data_ptr, which graft cannot see: mark_dirty counts the write.
struct WriteTwo : autograd::Function<WriteTwo> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor v) {
    v.data_ptr<float>()[0] = 2;
    ctx->mark_dirty({v});
    return v;
  }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list g) { return {g[0] * 2}; }
};

TEST(LibTorchChecks, MarkDirtyBumpsTheVersion) {
  const Tensor x = ones({3}).requires_grad_().clone();
  const uint32_t before = x._version();
  const Tensor out = WriteTwo::apply(x);
  EXPECT_GE(x._version(), before + 1);
  EXPECT_EQ(test::values(out), (std::vector<double>{2, 1, 1}));
}

TEST(LibTorchChecks, AutogradInferenceModeIsTheSameGuard) {
  EXPECT_FALSE(InferenceMode::is_enabled());
  {
    autograd::InferenceMode guard;  // LibTorch's torch::autograd::InferenceMode
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE(GradMode::is_enabled());
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
}

TEST(LibTorchChecks, TorchCheckMessageInPiecesOrTheCondition) {
  const int dim = -1;
  const std::string with_pieces = test::error_message([&] { GRAFT_TORCH_CHECK(dim >= 0, "dim must be >= 0, got ", dim); });
  EXPECT_NE(with_pieces.find("dim must be >= 0, got -1"), std::string::npos) << with_pieces;
  const std::string bare = test::error_message([&] { GRAFT_TORCH_CHECK(dim >= 0); });
  EXPECT_NE(bare.find("Expected dim >= 0 to be true, but got false."), std::string::npos) << bare;
  EXPECT_NO_THROW(GRAFT_TORCH_CHECK(dim < 0, "never"));
  const std::string internal = test::error_message([&] { GRAFT_TORCH_INTERNAL_ASSERT(dim == 0, "extra ", 7); });
  EXPECT_NE(internal.find("dim == 0 INTERNAL ASSERT FAILED at"), std::string::npos) << internal;
  EXPECT_NE(internal.find("extra 7"), std::string::npos) << internal;
  // LibTorch's test helpers read the message through c10::Error's what_without_backtrace().
  try {
    GRAFT_TORCH_CHECK_VALUE(false, "value");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("value"), std::string::npos);
    EXPECT_EQ(e.msg(), std::string(e.what()));
  }
}

TEST(WarningHandler, ReceivesGraftsWarningsAndRestores) {
  Collect collect;
  WarningHandler* before = WarningUtils::get_warning_handler();
  {
    WarningUtils::WarningHandlerGuard guard(&collect);
    EXPECT_EQ(WarningUtils::get_warning_handler(), &collect);
    GRAFT_WARN("first");
    warn("second");
  }
  EXPECT_EQ(WarningUtils::get_warning_handler(), before);
  ASSERT_EQ(collect.messages.size(), 2u);
  EXPECT_EQ(collect.messages[0], "first");
  EXPECT_EQ(collect.messages[1], "second");
}

TEST(DefaultDtype, FloatFactoriesAndPromotionFollowIt) {
  EXPECT_EQ(get_default_dtype(), kFloat32);
  set_default_dtype(kFloat64);
  EXPECT_EQ(ones({1}).dtype(), kFloat64);
  EXPECT_EQ(randn({1}).dtype(), kFloat64);
  EXPECT_EQ(tensor({0.5}).dtype(), kFloat64);
  EXPECT_EQ(tensor(0.5).dtype(), kFloat64);
  EXPECT_EQ((arange(3) * 0.5).dtype(), kFloat64);
  EXPECT_EQ(arange(3).dtype(), kInt64);  // integers stay int64
  EXPECT_EQ(ones({1}, kFloat32).dtype(), kFloat32);
  set_default_dtype(kFloat32);
  EXPECT_EQ(ones({1}).dtype(), kFloat32);
  const std::string e = error_of([] { set_default_dtype(kInt64); });
  EXPECT_NE(e.find("float32 or float64"), std::string::npos) << e;
  EXPECT_EQ(get_default_dtype(), kFloat32);
}

}  // namespace
}  // namespace graft
