// Tensors of more than 8 dimensions (up to kMaxDims = 64, PyTorch's limit): Shape keeps up to 8
// entries inline and moves to a heap buffer beyond (graft/core/shape.h); and Tensor::to(options)
// refusing requires_grad(true), as LibTorch does. Expected values are worked out by hand.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

TEST(ManyDims, ShapeCrossesTheInlineLimit) {
  Shape s{1, 2, 3, 4, 5, 6, 7, 8};
  s.push_back(9);  // inline -> heap
  EXPECT_EQ(s.vec(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  s.insert(0, 0);
  EXPECT_EQ(s.vec(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  Shape copy = s;
  s.erase(0);
  s.erase(8);  // 9 -> 8 entries: back inline
  EXPECT_EQ(s.vec(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(copy.size(), 10u);  // a deep copy
  EXPECT_EQ(copy[9], 9);
  Shape moved = std::move(copy);
  EXPECT_EQ(moved.vec(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  moved.assign(moved.ref().slice(1));  // from its own entries
  EXPECT_EQ(moved.vec(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  moved.resize(12, 7);
  EXPECT_EQ(moved.vec(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 7, 7, 7}));
  moved.resize(3);
  EXPECT_EQ(moved.vec(), (std::vector<int64_t>{1, 2, 3}));
  Shape big;
  big.resize(64, 1);
  EXPECT_EQ(big.size(), 64u);
  EXPECT_TRUE(throws_error([&] { big.push_back(1); }, {"at most 64 dimensions", "65 dimensions"}));
}

TEST(ManyDims, NestedListsOfTenDimensions) {
  // The innermost list is empty: sizes 1 x ... x 1 x 0.
  Tensor t = graft::tensor({{{{{{{{{{}}}}}}}}}});
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.dtype(), kFloat32);
  Tensor v = graft::tensor({{{{{{{{{{1.5, 2.5}}}}}}}}}});
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 2}));
  EXPECT_EQ(v.sum().item<float>(), 4.0f);
}

// A [2]*10 tensor holding 0 .. 1023 in row-major order: element (i0, ..., i9) = sum i_k 2^(9-k).
TEST(ManyDims, StridedOpsOnTenDimensions) {
  std::vector<int64_t> shape(10, 2);
  Tensor t = arange(1024, kFloat64).reshape(shape);
  ASSERT_EQ(t.dim(), 10);
  // Reversing the dims turns the value's bits around: element at flat position p of the
  // contiguous copy is the bit reversal of p.
  std::vector<int64_t> reversed(10);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  Tensor r = t.permute(reversed).contiguous();
  for (int64_t p : {0, 1, 2, 3, 5, 512, 1000, 1023}) {
    int64_t rev = 0;
    for (int b = 0; b < 10; ++b) rev |= ((p >> b) & 1) << (9 - b);
    EXPECT_EQ(r.reshape({-1})[p].item<double>(), static_cast<double>(rev)) << p;
  }
  // A non-contiguous elementwise op and a reduction over one dim: summing over dim 0 adds 512 to
  // each of the 512 values 0 .. 511 -> 2 * (0 + ... + 511) + 512 * 512.
  Tensor s = (r + t).sum(0);
  EXPECT_EQ(s.dim(), 9);
  EXPECT_EQ(s.sum().item<double>(), 2.0 * (1023.0 * 1024.0 / 2.0));
  EXPECT_EQ(t.sum(0).sum().item<double>(), 2.0 * (511.0 * 512.0 / 2.0) + 512.0 * 512.0);
  // unsqueeze past 8 and back.
  Tensor u = t.unsqueeze(0).unsqueeze(5);
  EXPECT_EQ(u.dim(), 12);
  EXPECT_TRUE(equal(u.squeeze(5).squeeze(0), t));
  // 65 dimensions are refused, as in PyTorch (64 at most).
  EXPECT_TRUE(throws_error([] { zeros(std::vector<int64_t>(65, 1)); }, {"at most 64 dimensions"}));
  EXPECT_EQ(zeros(std::vector<int64_t>(64, 1)).dim(), 64);
}

TEST(ToOptions, RequiresGradTrueIsRefused) {
  Tensor x = zeros({3, 4}, TensorOptions().requires_grad(true));
  Tensor y = x.to(kFloat64);
  EXPECT_TRUE(y.requires_grad());  // to(dtype) keeps the history
  EXPECT_TRUE(throws_error([&] { (void)x.to(TensorOptions().requires_grad(true)); },
                           {"Tensor::to", "requires_grad", "to(options) expects unset requires_grad flag"}));
  Tensor plain = zeros({2});
  EXPECT_TRUE(throws_error([&] { (void)plain.to(TensorOptions().dtype(kFloat64).requires_grad(true)); },
                           {"Tensor::to", "requires_grad = true"}));
  // Unset or false: allowed.
  EXPECT_EQ(x.to(TensorOptions()).dtype(), kFloat32);
  EXPECT_EQ(plain.to(TensorOptions().requires_grad(false)).dtype(), kFloat32);
  EXPECT_EQ(plain.to(TensorOptions().dtype(kFloat64).requires_grad(false)).dtype(), kFloat64);
}

}  // namespace
}  // namespace graft::test
