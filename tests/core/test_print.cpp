// Printing in Python's style: graft's str() / repr() / operator<< under PrintStyle::Python against strings PyTorch 1.13 printed for the same tensors
// (tests/fixtures/gen_print_fixtures.py wrote tests/fixtures/print_fixtures.inc), plus hand-written
// cases for what the fixtures cannot build (half precision, views, undefined tensors).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"

namespace graft::test {
namespace {

struct PrintCase {
  const char* name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major, unless `lin`
  bool lin;                    // values[i] = lin_a + lin_b * i
  double lin_a, lin_b;
  std::string grad;  // "none", "leaf" (requires_grad=True), "mul" (leaf * ones: grad_fn=<MulBackward0>)
  bool transpose;    // print t.t()
  const char* expected;
};

const std::vector<PrintCase>& print_cases() {
  static const std::vector<PrintCase> cases = {
#include "../fixtures/print_fixtures.inc"
  };
  return cases;
}

Tensor build(const PrintCase& c) {
  std::vector<double> v = c.values;
  if (c.lin) {
    int64_t n = 1;
    for (int64_t s : c.shape) n *= s;
    v.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = c.lin_a + c.lin_b * static_cast<double>(i);
  }
  Tensor t = make(v, c.shape, c.dtype);
  if (c.transpose) t = t.t();
  if (c.grad == "leaf") t.requires_grad_();
  if (c.grad == "mul") t = t.requires_grad_() * ones_like(t);
  return t;
}

TEST(Print, MatchesPyTorchFixtures) {
  ASSERT_GT(print_cases().size(), 50u);
  for (const auto& c : print_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor t = build(c);
    EXPECT_EQ(t.str(), c.expected) << "case " << c.name;
  }
}

TEST(Print, StreamOperatorInPythonStyleAndReprMatchStr) {
  const PrintStyleGuard python(PrintStyle::Python);
  for (const auto& c : print_cases()) {
    const Tensor t = build(c);
    std::ostringstream os;
    os << t;
    EXPECT_EQ(repr(t), c.expected) << "case " << c.name;
    EXPECT_EQ(os.str(), c.expected) << "case " << c.name;
    EXPECT_EQ(t.str(), c.expected) << "case " << c.name;
  }
}

TEST(Print, HandWrittenBasics) {
  EXPECT_EQ(tensor({{1.0, 2.0}, {3.0, 4.0}}, requires_grad()).str(),
            "tensor([[1., 2.],\n        [3., 4.]], requires_grad=True)");
  EXPECT_EQ(tensor(3.5).str(), "tensor(3.5000)");
  EXPECT_EQ(tensor({1, 2, 3}).str(), "tensor([1, 2, 3])");
  EXPECT_EQ(tensor({true, false}).str(), "tensor([ True, False])");
  EXPECT_EQ(tensor({1.5, 2.0}, kFloat64).str(), "tensor([1.5000, 2.0000], dtype=graft.float64)");
  EXPECT_EQ(zeros({0}).str(), "tensor([])");
  EXPECT_EQ(tensor({NAN, INFINITY, -INFINITY}).str(), "tensor([nan, inf, -inf])");
  EXPECT_EQ(tensor({1e10, 1.0}).str(), "tensor([1.0000e+10, 1.0000e+00])");
}

TEST(Print, UndefinedTensor) { EXPECT_EQ(Tensor().str(), "[ Tensor (undefined) ]"); }

TEST(Print, GradFnNameOfNonLeaf) {
  Tensor a = tensor({1.0, 2.0}, requires_grad());
  Tensor b = tensor({3.0, 4.0});
  EXPECT_EQ((a * b).str(), "tensor([3., 8.], grad_fn=<MulBackward0>)");
  EXPECT_EQ((a + b).str(), "tensor([4., 6.], grad_fn=<AddBackward0>)");
  // a detached result prints no autograd suffix
  EXPECT_EQ((a * b).detach().str(), "tensor([3., 8.])");
}

TEST(Print, HalfPrecision) {
  // 1.5 and -2 as IEEE half (0x3E00, 0xC000) and bfloat16 (0x3FC0, 0xC000); PyTorch 1.13 prints both as
  // tensor([ 1.5000, -2.0000], dtype=torch.float16 / torch.bfloat16).
  uint16_t half[2] = {0x3E00, 0xC000};
  uint16_t bf16[2] = {0x3FC0, 0xC000};
  EXPECT_EQ(from_blob(half, {2}, kFloat16).str(), "tensor([ 1.5000, -2.0000], dtype=graft.float16)");
  EXPECT_EQ(from_blob(bf16, {2}, kBFloat16).str(), "tensor([ 1.5000, -2.0000], dtype=graft.bfloat16)");
  uint16_t special[3] = {0x7C00, 0x7E00, 0x0001};  // inf, nan, smallest subnormal (2^-24)
  EXPECT_EQ(from_blob(special, {3}, kFloat16).str(), "tensor([       inf,        nan, 5.9605e-08], dtype=graft.float16)");
}

TEST(Print, ViewsPrintTheirOwnElements) {
  // PyTorch: torch.arange(12.).reshape(3, 4)[:, 1::2] and torch.tensor([1., 2., 3.]).expand(2, 3)
  Tensor m = make({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, kFloat32);
  EXPECT_EQ(m.slice(1, 1, 4, 2).str(), "tensor([[ 1.,  3.],\n        [ 5.,  7.],\n        [ 9., 11.]])");
  EXPECT_EQ(tensor({1.0f, 2.0f, 3.0f}).expand({2, 3}).str(), "tensor([[1., 2., 3.],\n        [1., 2., 3.]])");
  EXPECT_EQ(m.select(0, 1).str(), "tensor([4., 5., 6., 7.])");
}

}  // namespace
}  // namespace graft::test
