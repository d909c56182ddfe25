// LibTorch spellings that ported programs use outside the tensor API proper: Tensor::to(Device),
// graft::cuda, AT_ASSERT, graft::optional.
#include <gtest/gtest.h>

#include <string>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

TEST(LibTorchSpellings, TensorToDevice) {
  const Tensor x = make({1, 2, 3}, {3}, kFloat32);
  const Tensor same = x.to(Device(kCPU));
  EXPECT_EQ(same.data_ptr<float>(), x.data_ptr<float>());  // no copy unless asked
  const Tensor copied = x.to(kCPU, /*non_blocking=*/false, /*copy=*/true);
  EXPECT_NE(copied.data_ptr<float>(), x.data_ptr<float>());
  EXPECT_EQ(values(copied), (std::vector<double>{1, 2, 3}));
  const Tensor as64 = x.to(Device(kCPU), kFloat64);
  EXPECT_EQ(as64.dtype(), kFloat64);
  EXPECT_TRUE(throws_error([&] { (void)x.to(Device(kCUDA, 0)); }, {"Tensor::to", "a CPU device", "cuda:0"}));
}

TEST(LibTorchSpellings, CudaIsNeverAvailable) {
  EXPECT_FALSE(cuda::is_available());
  EXPECT_EQ(cuda::device_count(), 0);
  DeviceType t = cuda::is_available() ? kCUDA : kCPU;
  EXPECT_TRUE(Device(t).is_cpu());
}

TEST(LibTorchSpellings, AtAssertThrowsWithTheCondition) {
  const int two = 2;
  EXPECT_NO_THROW(AT_ASSERT(two == 2));
  EXPECT_TRUE(throws_error([&] { AT_ASSERT(two == 3); }, {"AT_ASSERT", "two == 3", "test_libtorch_spellings.cpp"}));
}

TEST(LibTorchSpellings, OptionalIsStdOptional) {
  graft::optional<size_t> n = graft::nullopt;
  EXPECT_FALSE(n.has_value());
  n = 3;
  EXPECT_EQ(n.value(), 3u);
}

}  // namespace
}  // namespace graft::test
