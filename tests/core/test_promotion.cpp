// PyTorch's type promotion rules, checked against the results PyTorch documents.
#include <gtest/gtest.h>

#include "../support/test_util.h"

namespace graft::test {

TEST(Promotion, TensorTensor) {
  Tensor f32 = ones({2}), f64 = ones({2}, kFloat64), i64 = ones({2}, kInt64), b = ones({2}, kBool);
  EXPECT_EQ((f32 + f64).dtype(), kFloat64);
  EXPECT_EQ((i64 + f32).dtype(), kFloat32);
  EXPECT_EQ((b + i64).dtype(), kInt64);
  EXPECT_EQ((i64 * i64).dtype(), kInt64);
  EXPECT_EQ((i64 / i64).dtype(), kFloat32);  // true division
}

TEST(Promotion, ZeroDimTensorsRankBelowDimensionedOnesOfTheSameCategory) {
  Tensor f32 = ones({2});
  Tensor s64 = full({}, 2.0, kFloat64);
  EXPECT_EQ((f32 * s64).dtype(), kFloat32);  // same category: the dimensioned tensor wins
  Tensor i64 = ones({2}, kInt64);
  EXPECT_EQ((i64 * s64).dtype(), kFloat64);  // higher category: the 0-dim tensor's type
  EXPECT_EQ((s64 * s64).dtype(), kFloat64);
}

TEST(Promotion, Scalars) {
  Tensor i64 = ones({2}, kInt64), f32 = ones({2}), f64 = ones({2}, kFloat64), b = ones({2}, kBool);
  EXPECT_EQ((i64 * 2.5).dtype(), kFloat32);  // default dtype for a float scalar
  EXPECT_EQ((i64 * 2).dtype(), kInt64);
  EXPECT_EQ((f32 * 2.5).dtype(), kFloat32);
  EXPECT_EQ((f64 * 2).dtype(), kFloat64);
  EXPECT_EQ((b + 1).dtype(), kInt64);
  EXPECT_TRUE(all_close(i64 * 2.5, {2.5, 2.5}, {2}));
}

TEST(Promotion, InPlaceCannotNarrowTheDtype) {
  Tensor i64 = ones({2}, kInt64);
  EXPECT_TRUE(throws_error([&] { i64.add_(ones({2})); }, {"add_", "int64", "float32"}));
  EXPECT_TRUE(throws_error([&] { i64.mul_(0.5); }, {"mul_", "int64"}));
  Tensor f32 = ones({2});
  f32.add_(ones({2}, kFloat64));  // float64 result stored into float32: allowed, as in PyTorch
  EXPECT_EQ(f32.dtype(), kFloat32);
  EXPECT_TRUE(all_close(f32, {2.0, 2.0}, {2}));
}

TEST(Promotion, GradientsComeBackInTheInputDtype) {
  Tensor a = ones({2}, TensorOptions(kFloat32).requires_grad(true));
  Tensor b = ones({2}, TensorOptions(kFloat64).requires_grad(true));
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat64);
}

TEST(Tensor, MetadataAndErrors) {
  Tensor t = zeros({2, 3, 4});
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_TRUE(throws_error([&] { t.size(3); }, {"size", "dim 3", "[-3, 2]"}));
  EXPECT_TRUE(throws_error([&] { t.item<double>(); }, {"item", "[2, 3, 4]", "24 elements"}));
  EXPECT_TRUE(throws_error([&] { t.data_ptr<double>(); }, {"data_ptr", "float32", "float64"}));
  Tensor undefined;
  EXPECT_FALSE(undefined.defined());
  EXPECT_TRUE(throws_error([&] { undefined.dim(); }, {"undefined"}));
  EXPECT_TRUE(throws_error([&] { ones({2}, kInt64).requires_grad_(); }, {"requires_grad_", "floating-point", "int64"}));
}

}  // namespace graft::test

namespace graft::test {
TEST(Overloads, BracedSingleDimMeansADim) {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 6.0, 8.0}}, kFloat64);
  EXPECT_TRUE(all_close(x.var({1}), {1.0, 4.0}, {2}));
  EXPECT_TRUE(all_close(graft::var(x, {1}), {1.0, 4.0}, {2}));
  EXPECT_TRUE(all_close(x.std({1}), {1.0, 2.0}, {2}));
  EXPECT_TRUE(all_close(x.sum({1}), {6.0, 18.0}, {2}));
  EXPECT_TRUE(all_close(x.sum(1), {6.0, 18.0}, {2}));
  // all dims, biased: mean 4, squares of deviations 9+4+1+0+4+16 = 34, / 6
  EXPECT_TRUE(all_close(x.var(false), {34.0 / 6}, {}, 1e-12, 1e-12));
}
}  // namespace graft::test
