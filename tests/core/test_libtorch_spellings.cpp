// LibTorch spellings that ported programs use outside the tensor API proper: Tensor::to(Device),
// graft::cuda, AT_ASSERT, graft::optional.
#include <gtest/gtest.h>

#include <sstream>
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
  EXPECT_EQ(graft::to_string(7), "7");
  EXPECT_EQ(graft::to_string(0.5), "0.5");
}

TEST(LibTorchSpellings, RepeatTilesAndSumsTheGradientBack) {
  const Tensor x = make({1, 2, 3}, {3}, kFloat64).requires_grad_();
  const Tensor y = x.repeat({2, 2});  // [2, 6]: each row 1 2 3 1 2 3
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
  // d/dx_j of sum(w * y) is the sum of w over the four places x_j went to.
  const Tensor w = arange(12, kFloat64).view({2, 6});
  (y * w).sum().backward();
  // x_0 sits at columns 0 and 3 of both rows: 0 + 3 + 6 + 9 = 18; x_1: 1 + 4 + 7 + 10; x_2: 2 + 5 + 8 + 11.
  EXPECT_EQ(values(x.grad()), (std::vector<double>{18, 22, 26}));
  const Tensor m = make({1, 2, 3, 4}, {2, 2}, kFloat64);
  EXPECT_EQ(values(m.repeat({1, 2})), (std::vector<double>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(m.repeat({0, 1}).numel(), 0);
  EXPECT_TRUE(throws_error([&] { (void)m.repeat({2}); }, {"repeat", "at least as many repeats", "[2]"}));
}

TEST(LibTorchSpellings, SetDataKeepsTheTensorsIdentity) {
  Tensor p = zeros({2}).requires_grad_();
  (p * 3).sum().backward();
  Tensor handle = p;
  p.set_data(make({5, 6, 7}, {3}, kFloat64));
  EXPECT_EQ(handle.sizes().vec(), (std::vector<int64_t>{3}));  // every handle sees the new data
  EXPECT_EQ(handle.dtype(), kFloat64);
  EXPECT_EQ(values(handle), (std::vector<double>{5, 6, 7}));
  EXPECT_TRUE(handle.requires_grad());
  EXPECT_EQ(values(handle.grad()), (std::vector<double>{3, 3}));  // .grad stays as it was
  const Tensor d = p.data();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.data_ptr<double>(), p.data_ptr<double>());
  EXPECT_TRUE(throws_error([&] { p.set_data(Tensor()); }, {"set_data", "two defined tensors"}));
}

TEST(LibTorchSpellings, AliasIntArrayRefSliceAndScalarNames) {
  const Tensor x = make({1, 2, 3, 4}, {2, 2}, kFloat32).t();
  const Tensor a = x.alias();
  EXPECT_TRUE(a.is_alias_of(x));
  EXPECT_EQ(values(a), values(x));
  const std::vector<int64_t> v{4, 5, 6, 7};
  const IntArrayRef r(v);
  EXPECT_EQ(r.slice(1).vec(), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(r.slice(1, 2).vec(), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(r.front(), 4);
  EXPECT_TRUE(throws_error([&] { (void)r.slice(3, 2); }, {"IntArrayRef::slice", "n = 3, m = 2"}));
  const Scalar s = 2.75;
  EXPECT_FLOAT_EQ(s.toFloat(), 2.75f);
  EXPECT_EQ(s.toLong(), 2);
  EXPECT_TRUE(s.isFloatingPoint());
  EXPECT_TRUE(Scalar(true).isIntegral(/*include_bool=*/true));
  EXPECT_FALSE(Scalar(true).isIntegral(/*include_bool=*/false));
}

TEST(LibTorchSpellings, FactoryAndBinaryMaxOverloads) {
  const Tensor r = arange(2, 5, kInt64);  // arange(start, end, options)
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(values(r.to(kFloat64)), (std::vector<double>{2, 3, 4}));
  const std::vector<float> v{1.5f, -2.f};
  const Tensor t = tensor(ArrayRef<float>(v));
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_EQ(values(t), (std::vector<double>{1.5, -2}));
  const std::vector<int> iv{3, 4};
  EXPECT_EQ(tensor(ArrayRef<int>(iv), kFloat64).dtype(), kFloat64);
  const Tensor a = make({1, 5, 3}, {3}, kFloat32), b = make({4, 2, 3}, {3}, kFloat32);
  EXPECT_EQ(values(max(a, b)), (std::vector<double>{4, 5, 3}));
  EXPECT_EQ(values(min(a, b)), (std::vector<double>{1, 2, 3}));
  Dtype d = kFloat64;  // torch::Dtype
  EXPECT_EQ(d, kFloat64);
}

TEST(LibTorchSpellings, TensorOptionsLayoutAndDeviceIndex) {
  TensorOptions options;
  EXPECT_EQ(options.layout(), kStrided);
  EXPECT_FALSE(options.has_layout());
  options = layout(kSparse);
  EXPECT_EQ(options.layout(), kSparse);
  options = dtype(kUInt8).layout(kSparse).device(kCUDA, 2).device_index(3);
  EXPECT_EQ(options.device(), Device(kCUDA, 3));
  EXPECT_EQ(options.dtype(), kUInt8);
  EXPECT_EQ(device_index(1).device(), Device(kCUDA, 1));
  EXPECT_EQ(TensorOptions(std::string("cpu:0")).device(), Device(kCPU, 0));
  EXPECT_EQ(zeros({2}).layout(), kStrided);
  EXPECT_EQ(zeros({2}).options().layout(), kStrided);
  EXPECT_TRUE(throws_error([] { (void)zeros({2}, layout(kSparse)); }, {"zeros", "the strided layout", "kSparse"}));
  std::ostringstream os;
  os << kStrided << " " << kSparse;
  EXPECT_EQ(os.str(), "Strided Sparse");
}

}  // namespace
}  // namespace graft::test
