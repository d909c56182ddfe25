// Views share storage and the version counter; shapes and strides follow PyTorch's.
#include <gtest/gtest.h>

#include "../support/test_util.h"

namespace graft::test {

TEST(Views, ViewSharesStorageAndVersion) {
  Tensor x = arange(6, kFloat64);
  Tensor v = x.view({2, 3});
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(v.strides().vec(), (std::vector<int64_t>{3, 1}));
  v.select(0, 1).fill_(7.0);
  EXPECT_EQ(values(x), (std::vector<double>{0, 1, 2, 7, 7, 7}));
  EXPECT_EQ(x._version(), 1u);
  EXPECT_EQ(v._version(), 1u);
}

TEST(Views, TransposeAndPermuteStrides) {
  Tensor x = arange(24, kFloat64).view({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.sizes().vec(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(p.strides().vec(), (std::vector<int64_t>{1, 12, 4}));
  EXPECT_FALSE(p.is_contiguous());
  // element [k, i, j] of p is x[i, j, k] = 12 i + 4 j + k
  EXPECT_EQ(p.select(0, 3).select(0, 1).select(0, 2).item<double>(), 12 + 8 + 3);
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(values(t.contiguous()).at(1), 12.0);
}

TEST(Views, SliceWithStepNarrowSelect) {
  Tensor x = arange(10, kFloat64);
  EXPECT_EQ(values(x.slice(0, 1, 8, 3)), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values(x.slice(0, -3)), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(values(x.narrow(0, 2, 3)), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(x.select(0, -1).item<double>(), 9.0);
  EXPECT_TRUE(throws_error([&] { x.narrow(0, 8, 3); }, {"narrow", "start + length"}));
  EXPECT_TRUE(throws_error([&] { x.select(0, 10); }, {"select", "index 10"}));
}

TEST(Views, ExpandSqueezeUnsqueezeFlatten) {
  Tensor x = tensor({1.0, 2.0, 3.0}).view({3, 1});
  Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.strides().vec(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(values(e).at(5), 2.0);  // [0, 1, 1]
  EXPECT_EQ(x.squeeze().sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(x.unsqueeze(0).sizes().vec(), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(zeros({2, 3, 4}).flatten(1).sizes().vec(), (std::vector<int64_t>{2, 12}));
  EXPECT_TRUE(throws_error([&] { x.expand({2, 2}); }, {"expand", "[2, 2]"}));
}

TEST(Views, ViewOfNonContiguousFailsReshapeCopies) {
  Tensor x = arange(6, kFloat64).view({2, 3}).t();
  EXPECT_TRUE(throws_error([&] { x.view({6}); }, {"view", "reshape", "[3, 2]"}));
  Tensor r = x.reshape({6});
  EXPECT_FALSE(r.is_alias_of(x));
  EXPECT_EQ(values(r), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(throws_error([&] { x.reshape({4}); }, {"reshape", "6 elements"}));
  EXPECT_EQ(x.reshape({-1, 2}).sizes().vec(), (std::vector<int64_t>{3, 2}));
}

TEST(Views, SplitAndChunk) {
  Tensor x = arange(7, kFloat64);
  auto parts = x.split(3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(values(parts[2]), (std::vector<double>{6}));
  auto ch = x.chunk(2);
  ASSERT_EQ(ch.size(), 2u);
  EXPECT_EQ(ch[0].numel(), 4);
  EXPECT_TRUE(throws_error([&] { x.split_with_sizes({3, 3}); }, {"split_with_sizes", "7"}));
}

TEST(Views, TooManyDims) {
  EXPECT_TRUE(throws_error([] { zeros(std::vector<int64_t>(65, 1)); }, {"at most 64 dimensions", "65"}));
}

}  // namespace graft::test
