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

TEST(LibTorchSpellings, DeviceFromStringAndItsAccessors) {
  EXPECT_EQ(Device("cpu"), Device(kCPU));
  EXPECT_EQ(Device("cpu:0"), Device(kCPU, 0));
  EXPECT_EQ(Device("cuda:123"), Device(kCUDA, 123));
  EXPECT_EQ(Device("meta").type(), kMeta);
  EXPECT_EQ(Device("cuda:7").index(), 7);
  EXPECT_EQ(Device("cuda").index(), -1);
  for (const char* bad : {"", "cud:1", "cuda:", "cpu::1", ":1", "3", "tpu:4", "??", "cuda:01", "cuda:-1", "cuda:128"}) {
    EXPECT_TRUE(throws_error([&] { Device d(bad); }, {"Device", std::string("\"") + bad + "\""})) << bad;
  }
  Device d(kCUDA, 1);
  d.set_index(3);
  EXPECT_EQ(d.str(), "cuda:3");
}

TEST(LibTorchSpellings, ToOptionsToTensorTypeAsCpu) {
  const Tensor x = make({1.5, -2.5}, {2}, kFloat32);
  const Tensor d = make({0}, {1}, kFloat64);
  EXPECT_EQ(x.to(d).dtype(), kFloat64);
  EXPECT_EQ(x.type_as(d).dtype(), kFloat64);
  EXPECT_EQ(values(x.to(d)), (std::vector<double>{1.5, -2.5}));
  EXPECT_EQ(x.to(TensorOptions(kInt64)).dtype(), kInt64);
  EXPECT_EQ(values(x.toType(kInt32).to(kFloat64)), (std::vector<double>{1, -2}));  // truncation toward zero
  // Options naming only a device keep the dtype; to() without a change is the tensor itself,
  // with copy = true a new one.
  EXPECT_EQ(x.to(TensorOptions(kCPU)).data_ptr<float>(), x.data_ptr<float>());
  EXPECT_NE(x.to(TensorOptions(kCPU), false, true).data_ptr<float>(), x.data_ptr<float>());
  EXPECT_EQ(x.to(kFloat32).data_ptr<float>(), x.data_ptr<float>());
  EXPECT_NE(x.to(kFloat32, /*non_blocking=*/false, /*copy=*/true).data_ptr<float>(), x.data_ptr<float>());
  EXPECT_EQ(x.cpu().data_ptr<float>(), x.data_ptr<float>());
  EXPECT_EQ(x.get_device(), -1);
  EXPECT_TRUE(x.is_signed());
  EXPECT_TRUE(make({1}, {1}, kInt8).is_signed());
  EXPECT_FALSE(make({1}, {1}, kUInt8).is_signed());
  EXPECT_FALSE(make({1}, {1}, kBool).is_signed());
}

TEST(LibTorchSpellings, AssigningToATemporaryWritesIntoIt) {
  Tensor x = zeros({2, 3});
  x[1] = 5;                                          // fill_ of the row view
  x.index({0, 2}) = 7.5;
  x[0].slice(0, 0, 2) = make({1, 2}, {2}, kFloat32);  // copy_
  EXPECT_EQ(values(x), (std::vector<double>{1, 2, 7.5, 5, 5, 5}));
  Tensor y = x;  // a named tensor rebinds
  y = ones({1});
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(y.numel(), 1);
}

TEST(LibTorchSpellings, JoinWritesTheElementsWithTheDelimiter) {
  EXPECT_EQ(Join(", ", std::vector<int>{1, 2, 3}), "1, 2, 3");
  EXPECT_EQ(Join("\n", std::vector<std::string>{"a"}), "a");
  EXPECT_EQ(Join("-", std::vector<std::string>{}), "");
}

}  // namespace
}  // namespace graft::test
