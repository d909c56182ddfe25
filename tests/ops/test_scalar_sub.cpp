// Issue 14, item 16: sub(Tensor, Scalar) keeps PyTorch's dtype and node name. Expected values are
// worked out by hand (torch.tensor([5, 7]) - 1 == tensor([4, 6]), dtype int64; grad_fn
// SubBackward1; d(x - 2)/dx = 1).
#include <gtest/gtest.h>

#include "graft/graft.h"

namespace {

using graft::Tensor;

TEST(ScalarSub, IntegerTensorMinusIntegerStaysInt64) {
  Tensor a = graft::tensor({5, 7}, graft::kInt64);
  Tensor y = a - 1;
  EXPECT_EQ(y.dtype(), graft::kInt64);
  EXPECT_EQ(y.data_ptr<int64_t>()[0], 4);
  EXPECT_EQ(y.data_ptr<int64_t>()[1], 6);
  Tensor z = graft::sub(a, 2, /*alpha=*/3);  // 5 - 6, 7 - 6
  EXPECT_EQ(z.dtype(), graft::kInt64);
  EXPECT_EQ(z.data_ptr<int64_t>()[0], -1);
  EXPECT_EQ(z.data_ptr<int64_t>()[1], 1);
  // A floating scalar promotes an integer tensor to the default float dtype, as in PyTorch.
  Tensor f = a - 0.5;
  EXPECT_EQ(f.dtype(), graft::kFloat32);
  EXPECT_FLOAT_EQ(f.data_ptr<float>()[0], 4.5f);
}

TEST(ScalarSub, NodeIsSubBackward1WithUnitGradient) {
  Tensor x = graft::tensor({1.5, -2.0}, graft::kFloat64).requires_grad_();
  Tensor y = x - 2;
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "SubBackward1");
  EXPECT_DOUBLE_EQ(y.data_ptr<double>()[0], -0.5);
  EXPECT_DOUBLE_EQ(y.data_ptr<double>()[1], -4.0);
  y.sum().backward();
  EXPECT_DOUBLE_EQ(x.grad().data_ptr<double>()[0], 1.0);
  EXPECT_DOUBLE_EQ(x.grad().data_ptr<double>()[1], 1.0);
}

}  // namespace
