// Tensor::resize_ and resize_as_ (Note [resize_] in src/core/resize.cpp), against PyTorch 1.13's
// rules worked out by hand: contiguous strides for the new sizes, the flat prefix kept when the
// storage grows (the new elements zero in graft), a storage that never shrinks, and the errors.
#include <gtest/gtest.h>

#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

// 0, 1, ..., n-1 as float64 in a contiguous tensor of `shape`.
Tensor resize_iota(IntArrayRef shape) {
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return make(v, shape);
}

TEST(Resize, ShrinkKeepsTheFlatPrefixAndTheStorage) {
  Tensor x = resize_iota({2, 3});
  const size_t bytes = x.impl().storage->nbytes;
  const void* data = x.data_ptr();
  const Tensor& same = x.resize_({2, 2});
  EXPECT_TRUE(same.is_same(x));
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(x.strides().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(x.numel(), 4);
  EXPECT_TRUE(all_close(x, {0, 1, 2, 3}, {2, 2}, 0, 0));
  EXPECT_EQ(x.impl().storage->nbytes, bytes);  // never shrinks
  EXPECT_EQ(x.data_ptr(), data);
  // Growing back within the storage shows the old elements 4 and 5 again.
  x.resize_({6});
  EXPECT_TRUE(all_close(x, {0, 1, 2, 3, 4, 5}, {6}, 0, 0));
  EXPECT_EQ(x.data_ptr(), data);
}

TEST(Resize, GrowKeepsTheFlatPrefixAndZeroesTheRest) {
  Tensor x = resize_iota({2, 2});
  x.resize_({3, 3});
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(x.strides().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(x.impl().storage->nbytes, 9 * sizeof(double));
  EXPECT_TRUE(all_close(x, {0, 1, 2, 3, 0, 0, 0, 0, 0}, {3, 3}, 0, 0));
  x.resize_({2, 1, 5});  // 10 elements: grows again
  EXPECT_EQ(x.strides().vec(), (std::vector<int64_t>{5, 5, 1}));
  EXPECT_TRUE(all_close(x, {0, 1, 2, 3, 0, 0, 0, 0, 0, 0}, {2, 1, 5}, 0, 0));
}

TEST(Resize, FromEmptyAndToZeroElements) {
  Tensor e = empty({0});
  e.resize_({2, 3});
  EXPECT_EQ(e.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(e.strides().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(all_close(e, {0, 0, 0, 0, 0, 0}, {2, 3}, 0, 0));
  e.resize_({0, 4});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.strides().vec(), (std::vector<int64_t>{4, 1}));
  e.resize_({});  // 0-dim: one element, the first of the storage
  EXPECT_EQ(e.dim(), 0);
  EXPECT_EQ(e.item<double>(), 0.0);
  Tensor i = tensor({7L, 8L});
  i.resize_({3});
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_TRUE(all_close(i, {7, 8, 0}, {3}, 0, 0));
}

TEST(Resize, SameSizesKeepTheStrides) {
  Tensor t = resize_iota({2, 3}).t();  // (3, 2) with strides (1, 3)
  t.resize_({3, 2});
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 3}));  // PyTorch returns early as well
  t.resize_({2, 3});  // other sizes: contiguous strides over the same storage
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(all_close(t, {0, 1, 2, 3, 4, 5}, {2, 3}, 0, 0));
}

TEST(Resize, ViewGrowsTheSharedStorageAtItsOffset) {
  // As PyTorch: b = arange(4); v = b[1:3]; v.resize_(5) -> v = [1, 2, 3, 0, 0], b unchanged,
  // and the shared storage holds 6 elements (offset 1 + 5).
  Tensor b = resize_iota({4});
  Tensor v = b.slice(0, 1, 3);
  v.resize_({5});
  EXPECT_EQ(v.storage_offset(), 1);
  EXPECT_TRUE(all_close(v, {1, 2, 3, 0, 0}, {5}, 0, 0));
  EXPECT_TRUE(all_close(b, {0, 1, 2, 3}, {4}, 0, 0));
  EXPECT_EQ(b.impl().storage->nbytes, 6 * sizeof(double));
  EXPECT_TRUE(v.is_alias_of(b));
  v.fill_(9);  // still one buffer
  EXPECT_TRUE(all_close(b, {0, 9, 9, 9}, {4}, 0, 0));
}

TEST(Resize, ResizeAsTakesTheTemplatesSizes) {
  Tensor x = resize_iota({3});
  Tensor like = zeros({2, 2}, kFloat32);
  const Tensor& r = x.resize_as_(like);
  EXPECT_TRUE(r.is_same(x));
  EXPECT_EQ(x.dtype(), kFloat64);  // only the sizes are taken
  EXPECT_TRUE(all_close(x, {0, 1, 2, 0}, {2, 2}, 0, 0));
}

TEST(Resize, MetaTensorsChangeShapeOnly) {
  Tensor m = empty({2}, TensorOptions(kFloat32).device(kMeta));
  const int64_t before = memory::stats(kMeta).allocated_bytes;
  m.resize_({4, 5});
  EXPECT_TRUE(m.is_meta());
  EXPECT_EQ(m.sizes().vec(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(m.strides().vec(), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(m.impl().storage->nbytes, 20 * sizeof(float));
  EXPECT_EQ(memory::stats(kMeta).allocated_bytes - before, static_cast<int64_t>(18 * sizeof(float)));
}

TEST(Resize, GrowthIsCountedInTheMemoryStats) {
  Tensor x = zeros({4}, kFloat64);
  memory::set_category(*x.impl().storage, memory::Category::Data);
  const memory::Stats before = memory::stats();
  x.resize_({100});
  const memory::Stats after = memory::stats();
  // 32 bytes out, 800 in: 768 more live bytes, one allocation as before, still in its category.
  EXPECT_EQ(after.allocated_bytes - before.allocated_bytes, 768);
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after[memory::Category::Data].current_bytes - before[memory::Category::Data].current_bytes, 768);
  EXPECT_EQ(after[memory::Category::Other].current_bytes, before[memory::Category::Other].current_bytes);
  EXPECT_EQ(memory::category_of(*x.impl().storage), memory::Category::Data);
  x.reset();  // freeing the grown storage gives back exactly what was counted
  EXPECT_EQ(memory::stats().allocated_bytes, before.allocated_bytes - 32);
  EXPECT_EQ(memory::stats()[memory::Category::Data].current_bytes, before[memory::Category::Data].current_bytes - 32);
}

TEST(Resize, Errors) {
  Tensor p = zeros({3}).requires_grad_();
  EXPECT_TRUE(throws_error([&] { p.resize_({4}); }, {"resize_", "requires grad", "cannot resize variables that require grad"}));
  {
    NoGradGuard no_grad;  // PyTorch refuses under no_grad too
    EXPECT_TRUE(throws_error([&] { p.resize_({3}); }, {"cannot resize variables that require grad"}));
  }
  EXPECT_EQ(p.sizes().vec(), (std::vector<int64_t>{3}));
  Tensor x = zeros({2});
  EXPECT_TRUE(throws_error([&] { x.resize_({2, -1}); }, {"resize_", "sizes >= 0", "-1"}));
  EXPECT_TRUE(throws_error([&] { x.resize_({int64_t(1) << 40, int64_t(1) << 40}); }, {"resize_", "int64"}));
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2}));  // unchanged after a refusal
  float buf[3] = {1, 2, 3};
  Tensor borrowed = from_blob(buf, {3}, kFloat32);
  borrowed.resize_({2});  // within the borrowed bytes: fine
  EXPECT_TRUE(all_close(borrowed, {1, 2}, {2}, 0, 0));
  EXPECT_TRUE(throws_error([&] { borrowed.resize_({4}); }, {"resize_", "not resizable", "from_blob"}));
  EXPECT_TRUE(throws_error([] { Tensor().resize_({1}); }, {"undefined"}));
}

}  // namespace
}  // namespace graft::test
