// The indexing kernels (src/kernels/indexing.h) called directly, against plain loops written here
// over multi-indices (the kernels walk (outer, n, inner) blocks or row-major positions): every entry
// in float64, float32, int64 and bool where it takes them, with duplicate indices for the
// accumulating ones (their results must equal a reference that adds in index order, bit for bit),
// and empty inputs. The ops around them are tested by their records (tests/ops/records_indexing.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../../src/kernels/indexing.h"
#include "../support/test_util.h"

namespace graft::test {

namespace {

namespace ik = graft::kernels::indexing;

// A contiguous CPU tensor of `shape` holding v (row-major).
template <class T>
Tensor ik_tensor(const std::vector<T>& v, IntArrayRef shape) {
  Tensor t = make_empty(shape, dtype_of<T>());
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  if (!v.empty()) std::copy(v.begin(), v.end(), t.data_ptr<T>());
  return t;
}

template <class T>
std::vector<T> ik_read(const Tensor& t) {
  if (t.numel() == 0) return {};
  const T* p = t.data_ptr<T>();
  return std::vector<T>(p, p + t.numel());
}

// n values of T that differ from each other and need rounding in float arithmetic.
template <class T>
std::vector<T> ik_values(int64_t n, int64_t seed) {
  std::vector<T> v;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (i * 37 + seed * 11) % 23 - 9;
    if constexpr (std::is_same_v<T, bool>) v.push_back(k % 3 == 0);
    else if constexpr (std::is_integral_v<T>) v.push_back(static_cast<T>(k));
    else v.push_back(static_cast<T>(static_cast<double>(k) * 0.1372 + 0.0113 * static_cast<double>(seed)));
  }
  return v;
}

int64_t ik_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// The row-major multi-index of flat position f in `shape`.
std::vector<int64_t> ik_unravel(int64_t f, const std::vector<int64_t>& shape) {
  std::vector<int64_t> p(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    p[k] = f % shape[k];
    f /= shape[k];
  }
  return p;
}

// The row-major flat position of multi-index p in `shape`.
int64_t ik_ravel(const std::vector<int64_t>& p, const std::vector<int64_t>& shape) {
  int64_t f = 0;
  for (size_t k = 0; k < shape.size(); ++k) f = f * shape[k] + p[k];
  return f;
}

ik::Slices ik_slices(const std::vector<int64_t>& shape, size_t d) {
  ik::Slices s;
  for (size_t k = 0; k < d; ++k) s.outer *= shape[k];
  s.n = shape[d];
  for (size_t k = d + 1; k < shape.size(); ++k) s.inner *= shape[k];
  return s;
}

// alpha for index_add: inexact in float, an integer for int64, true for bool.
template <class T>
Scalar ik_alpha() {
  if constexpr (std::is_same_v<T, bool>) return Scalar(true);
  else if constexpr (std::is_integral_v<T>) return Scalar(int64_t{3});
  else return Scalar(1.3);
}

// out += alpha * s, as the reference computes it (bool: out || (alpha && s)).
template <class T>
T ik_add(T out, T alpha, T s) {
  if constexpr (std::is_same_v<T, bool>) return out || (alpha && s);
  else return static_cast<T>(out + alpha * s);
}

template <class T>
T ik_plus(T out, T s) {
  if constexpr (std::is_same_v<T, bool>) return out || s;
  else return static_cast<T>(out + s);
}

}  // namespace

TEST(IndexingKernels, ReadIndicesReturnsRowMajorValues) {
  EXPECT_EQ(ik::read_indices(ik_tensor<int64_t>({3, -1, 7, 0, 2, 2}, {2, 3})),
            (std::vector<int64_t>{3, -1, 7, 0, 2, 2}));
  EXPECT_EQ(ik::read_indices(ik_tensor<int64_t>({5}, {})), (std::vector<int64_t>{5}));
  EXPECT_TRUE(ik::read_indices(ik_tensor<int64_t>({}, {0})).empty());
  EXPECT_TRUE(ik::read_indices(ik_tensor<int64_t>({}, {2, 0})).empty());
  // Only contiguous int64 tensors: the ops convert first.
  EXPECT_THROW(ik::read_indices(ik_tensor<double>({1.0}, {1})), Error);
  EXPECT_THROW(ik::read_indices(ik_tensor<int64_t>({1, 2, 3, 4}, {2, 2}).t()), Error);
}

TEST(IndexingKernels, WriteIndicesFillsTheTensor) {
  const std::vector<int64_t> v = {4, 0, -2, 9};
  Tensor out = make_empty({4}, kInt64);
  ik::write_indices(v, out);
  EXPECT_EQ(ik_read<int64_t>(out), v);
  Tensor empty = make_empty({0}, kInt64);
  ik::write_indices({}, empty);
  EXPECT_EQ(empty.numel(), 0);
}

TEST(IndexingKernels, TruePositionsListsTheTrueEntriesInOrder) {
  const std::vector<bool> mask = {true, false, false, true, true, false, true};
  std::vector<int64_t> want;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) want.push_back(static_cast<int64_t>(i));
  EXPECT_EQ(ik::true_positions(ik_tensor<bool>(mask, {7})), want);
  EXPECT_TRUE(ik::true_positions(ik_tensor<bool>({false, false, false}, {3})).empty());
  EXPECT_TRUE(ik::true_positions(ik_tensor<bool>({}, {0})).empty());
}

template <class T>
class IndexingKernelsTyped : public ::testing::Test {};
using IndexingKernelTypes = ::testing::Types<double, float, int64_t, bool>;
TYPED_TEST_SUITE(IndexingKernelsTyped, IndexingKernelTypes);

TYPED_TEST(IndexingKernelsTyped, IndexSelectPicksSlicesInIndexOrder) {
  using T = TypeParam;
  struct Case {
    std::vector<int64_t> shape;
    size_t d;
    std::vector<int64_t> idx;
  };
  const std::vector<Case> cases = {
      {{2, 4, 3}, 1, {3, 0, 3, 1, 2}},  // middle dim, duplicates
      {{5, 2}, 0, {4, 4, 0}},           // first dim (outer 1)
      {{3, 6}, 1, {5, 1, 1, 0}},        // last dim (inner 1)
      {{7}, 0, {6, 2, 6}},              // 1-D
      {{2, 4, 3}, 1, {}},               // no index: an empty result
      {{0, 4, 3}, 1, {1, 2}},           // empty source
      {{2, 4, 0}, 1, {3, 3}},           // empty slices
  };
  for (const Case& c : cases) {
    const Tensor src = ik_tensor<T>(ik_values<T>(ik_numel(c.shape), 1), c.shape);
    std::vector<int64_t> out_shape = c.shape;
    out_shape[c.d] = static_cast<int64_t>(c.idx.size());
    Tensor out = make_empty(out_shape, dtype_of<T>());
    ik::index_select(src, c.idx, ik_slices(c.shape, c.d), out);
    // out at multi-index p is src at p with p[d] replaced by idx[p[d]].
    const std::vector<T> s = ik_read<T>(src);
    std::vector<T> want;
    for (int64_t f = 0; f < ik_numel(out_shape); ++f) {
      std::vector<int64_t> p = ik_unravel(f, out_shape);
      p[c.d] = c.idx[static_cast<size_t>(p[c.d])];
      want.push_back(s[static_cast<size_t>(ik_ravel(p, c.shape))]);
    }
    EXPECT_EQ(ik_read<T>(out), want) << "shape " << shape_str(c.shape) << ", dim " << c.d;
  }
}

TYPED_TEST(IndexingKernelsTyped, IndexAddAccumulatesDuplicatesInIndexOrder) {
  using T = TypeParam;
  struct Case {
    std::vector<int64_t> shape;  // out's shape; source has idx.size() in dim d
    size_t d;
    std::vector<int64_t> idx;
  };
  const std::vector<Case> cases = {
      {{2, 4, 3}, 1, {1, 3, 1, 0, 1}},   // middle dim, row 1 three times
      {{3, 2}, 0, {2, 2, 2, 2, 0}},      // first dim
      {{2, 5}, 1, {4, 0, 4, 4}},         // last dim
      {{1}, 0, {0}},                     // one element (the op's 0-dim case)
      {{2, 4, 3}, 1, {}},                // no index: out unchanged
      {{0, 3}, 1, {2, 2}},               // empty
  };
  const Scalar alpha = ik_alpha<T>();
  const T al = alpha.to<T>();
  for (const Case& c : cases) {
    std::vector<int64_t> src_shape = c.shape;
    src_shape[c.d] = static_cast<int64_t>(c.idx.size());
    const std::vector<T> x = ik_values<T>(ik_numel(c.shape), 2);
    const std::vector<T> s = ik_values<T>(ik_numel(src_shape), 3);
    Tensor out = ik_tensor<T>(x, c.shape);
    ik::index_add(out, ik_tensor<T>(s, src_shape), c.idx, ik_slices(c.shape, c.d), alpha);
    // Source position by source position, in row-major order: each output element receives its
    // contributions in increasing source index along d, as the kernel adds them.
    std::vector<T> want = x;
    for (int64_t f = 0; f < ik_numel(src_shape); ++f) {
      std::vector<int64_t> p = ik_unravel(f, src_shape);
      const T v = s[static_cast<size_t>(f)];
      p[c.d] = c.idx[static_cast<size_t>(p[c.d])];
      const size_t at = static_cast<size_t>(ik_ravel(p, c.shape));
      want[at] = ik_add<T>(want[at], al, v);
    }
    EXPECT_EQ(ik_read<T>(out), want) << "shape " << shape_str(c.shape) << ", dim " << c.d;
  }
}

TYPED_TEST(IndexingKernelsTyped, GatherReadsAlongTheDim) {
  using T = TypeParam;
  struct Case {
    std::vector<int64_t> src_shape, index_shape;
    size_t d;
  };
  const std::vector<Case> cases = {
      {{3, 5}, {2, 4}, 1},     // index smaller than src outside d
      {{4, 2, 3}, {6, 2, 2}, 0},
      {{2, 3, 4}, {2, 3, 7}, 2},
      {{6}, {9}, 0},
      {{3, 5}, {0, 4}, 1},     // empty index
      {{3, 5}, {3, 0}, 1},
  };
  for (const Case& c : cases) {
    const Tensor src = ik_tensor<T>(ik_values<T>(ik_numel(c.src_shape), 4), c.src_shape);
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < ik_numel(c.index_shape); ++k) idx.push_back((k * 7 + 3) % c.src_shape[c.d]);
    const Tensor index = ik_tensor<int64_t>(idx, c.index_shape);
    Tensor out = make_empty(c.index_shape, dtype_of<T>());
    ik::gather(src, static_cast<int64_t>(c.d), index, idx, out);
    const std::vector<T> s = ik_read<T>(src);
    std::vector<T> want;
    for (int64_t f = 0; f < ik_numel(c.index_shape); ++f) {
      std::vector<int64_t> p = ik_unravel(f, c.index_shape);
      p[c.d] = idx[static_cast<size_t>(f)];
      want.push_back(s[static_cast<size_t>(ik_ravel(p, c.src_shape))]);
    }
    EXPECT_EQ(ik_read<T>(out), want) << "src " << shape_str(c.src_shape) << ", index " << shape_str(c.index_shape);
  }
}

TYPED_TEST(IndexingKernelsTyped, ScatterAddAccumulatesDuplicatesInRowMajorOrder) {
  using T = TypeParam;
  struct Case {
    std::vector<int64_t> out_shape, index_shape, src_shape;
    size_t d;
  };
  const std::vector<Case> cases = {
      {{3, 5}, {2, 4}, {2, 6}, 1},  // src larger than the index: its tail is not read
      {{2, 2, 3}, {5, 2, 3}, {5, 3, 3}, 0},
      {{2, 3, 2}, {2, 3, 6}, {2, 3, 6}, 2},
      {{4}, {9}, {9}, 0},
      {{3, 5}, {0, 4}, {1, 4}, 1},  // empty index: out unchanged
  };
  for (const Case& c : cases) {
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < ik_numel(c.index_shape); ++k) idx.push_back((k * 5 + 1) % c.out_shape[c.d]);
    const std::vector<T> x = ik_values<T>(ik_numel(c.out_shape), 5);
    const std::vector<T> s = ik_values<T>(ik_numel(c.src_shape), 6);
    Tensor out = ik_tensor<T>(x, c.out_shape);
    ik::scatter_add(out, static_cast<int64_t>(c.d), ik_tensor<int64_t>(idx, c.index_shape), idx,
                    ik_tensor<T>(s, c.src_shape));
    std::vector<T> want = x;
    for (int64_t f = 0; f < ik_numel(c.index_shape); ++f) {
      std::vector<int64_t> p = ik_unravel(f, c.index_shape);
      const T v = s[static_cast<size_t>(ik_ravel(p, c.src_shape))];
      p[c.d] = idx[static_cast<size_t>(f)];
      const size_t at = static_cast<size_t>(ik_ravel(p, c.out_shape));
      want[at] = ik_plus<T>(want[at], v);
    }
    EXPECT_EQ(ik_read<T>(out), want) << "out " << shape_str(c.out_shape) << ", index " << shape_str(c.index_shape);
  }
}

TYPED_TEST(IndexingKernelsTyped, MetaOutputsAreNotTouched) {
  using T = TypeParam;
  // Note [Meta device]: the kernels that run on meta outputs return after the dtype dispatch.
  const Device meta(DeviceType::Meta);
  const Tensor out = make_empty({2, 3}, dtype_of<T>(), meta);
  const Tensor src = make_empty({2, 3}, dtype_of<T>(), meta);
  const Tensor index = make_empty({2, 3}, kInt64, meta);
  EXPECT_NO_THROW(ik::index_add(out, src, {}, {2, 3, 1}, ik_alpha<T>()));
  EXPECT_NO_THROW(ik::gather(src, 1, index, {}, out));
  EXPECT_NO_THROW(ik::scatter_add(out, 1, index, {}, src));
}

TEST(IndexingKernels, PaddingKeepZeroesThePaddingRows) {
  const std::vector<int64_t> ids = {2, 0, 2, 5, 1, 2};
  for (const DType dt : {kFloat64, kFloat32}) {
    Tensor keep = make_empty({static_cast<int64_t>(ids.size()), 1}, dt);
    ik::padding_keep(ids, 2, keep);
    std::vector<double> want;
    for (int64_t id : ids) want.push_back(id == 2 ? 0.0 : 1.0);
    EXPECT_TRUE(all_close(keep, want, {static_cast<int64_t>(ids.size()), 1}, 0, 0)) << dtype_name(dt);
    Tensor empty = make_empty({0, 1}, dt);
    ik::padding_keep({}, 0, empty);
    EXPECT_EQ(empty.numel(), 0);
  }
  // floating dtypes only, named after the op
  Tensor ints = make_empty({1, 1}, kInt64);
  EXPECT_TRUE(throws_error([&] { ik::padding_keep({0}, 0, ints); }, {"embedding", "int64"}));
}

TEST(IndexingKernels, OneHotSetsOneEntryPerRow) {
  const std::vector<int64_t> classes = {2, 0, 3, 2, 1};
  const int64_t num = 4;
  Tensor out = zeros({static_cast<int64_t>(classes.size()), num}, kInt64);
  ik::one_hot(classes, num, out);
  std::vector<int64_t> want;
  for (int64_t c : classes)
    for (int64_t k = 0; k < num; ++k) want.push_back(k == c ? 1 : 0);
  EXPECT_EQ(ik_read<int64_t>(out), want);
  Tensor empty = zeros({0, num}, kInt64);
  ik::one_hot({}, num, empty);
  EXPECT_EQ(empty.numel(), 0);
}

TEST(IndexingKernels, UnsupportedDtypesAreErrorsNamingTheOp) {
  const Tensor src = make_empty({2, 2}, kInt32);
  Tensor out = make_empty({2, 2}, kInt32);
  EXPECT_TRUE(throws_error([&] { ik::index_select(src, {1, 0}, {1, 2, 2}, out); }, {"index_select", "int32"}));
  EXPECT_TRUE(throws_error([&] { ik::index_add(out, src, {1, 0}, {1, 2, 2}, Scalar(1)); }, {"index_add", "int32"}));
}

}  // namespace graft::test
