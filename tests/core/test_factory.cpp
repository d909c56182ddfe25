// Factories (include/graft/core/factory.h), conversions (item, to, clone, data_ptr) and the random
// generators. Expected values are written out by hand or computed with plain loops in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "../support/test_util.h"

namespace graft::test {
namespace {

using V = std::vector<double>;
using S = std::vector<int64_t>;

double mean_of(const V& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
double var_of(const V& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

// ---- tensor(...) from nested lists ----
TEST(Factory, TensorInfersDtypeFromValues) {
  Tensor f = tensor({1.0, 2.5});
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.sizes().vec(), S{2});
  EXPECT_EQ(values(f), (V{1.0, 2.5}));
  EXPECT_EQ(tensor({1.5f}).dtype(), kFloat32);
  Tensor i = tensor({1, -2, 3});
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(values(i), (V{1, -2, 3}));
  EXPECT_EQ(tensor({int64_t{7}}).dtype(), kInt64);
  Tensor b = tensor({true, false, true});
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(values(b), (V{1, 0, 1}));
  EXPECT_FALSE(f.requires_grad());
  EXPECT_TRUE(f.is_contiguous());
}

TEST(Factory, TensorNestedShapes) {
  Tensor m = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(m.sizes().vec(), (S{2, 3}));
  EXPECT_EQ(m.strides().vec(), (S{3, 1}));
  EXPECT_EQ(values(m), (V{1, 2, 3, 4, 5, 6}));
  Tensor c = tensor({{{1, 2}, {3, 4}, {5, 6}}, {{7, 8}, {9, 10}, {11, 12}}});
  EXPECT_EQ(c.dtype(), kInt64);
  EXPECT_EQ(c.sizes().vec(), (S{2, 3, 2}));
  EXPECT_EQ(values(c), (V{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  Tensor v = tensor(std::vector<double>{0.5, 1.5, 2.5, 3.5});
  EXPECT_EQ(v.sizes().vec(), S{4});
  EXPECT_EQ(v.dtype(), kFloat32);
  Tensor e = tensor(std::initializer_list<double>{});
  EXPECT_EQ(e.sizes().vec(), S{0});
  EXPECT_EQ(e.numel(), 0);
  Tensor s = scalar_tensor(2.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.dtype(), kFloat32);
  EXPECT_EQ(s.item<double>(), 2.5);
  EXPECT_EQ(scalar_tensor(int64_t{3}).dtype(), kFloat32);  // LibTorch: the options' dtype, whatever the value
  EXPECT_EQ(scalar_tensor(true).dtype(), kFloat32);
  EXPECT_EQ(scalar_tensor(true).item<float>(), 1.0f);
}

TEST(Factory, TensorOptionsOverrideDtypeAndRequiresGrad) {
  Tensor d = tensor({1, 2}, kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(values(d), (V{1, 2}));
  Tensor t = tensor({{1.5, -2.7}}, TensorOptions().dtype(kInt64));
  EXPECT_EQ(t.dtype(), kInt64);
  EXPECT_EQ(values(t), (V{1, -2}));  // truncation toward zero, as PyTorch
  Tensor b = tensor({0.0, 0.5, -3.0}, kBool);
  EXPECT_EQ(values(b), (V{0, 1, 1}));
  Tensor g = tensor({1.0, 2.0}, requires_grad());
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.is_leaf());
  EXPECT_EQ(g.dtype(), kFloat32);
  Tensor g64 = tensor({1.0}, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_TRUE(g64.requires_grad());
  EXPECT_EQ(g64.dtype(), kFloat64);
}

TEST(Factory, TensorErrors) {
  // LibTorch 1.13's own messages (printed by a LibTorch program) are in the hints.
  EXPECT_TRUE(throws_error([] { tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7}}}); },
                           {"tensor", "rectangular",
                            "Expected all sub-lists to have sizes: 2 (e.g. {5, 6}), but got sub-list {7} with sizes: 1"}));
  EXPECT_TRUE(throws_error([] { tensor({{1.5, 2.0}, {3.0}}); },
                           {"Expected all sub-lists to have sizes: 2 (e.g. {1.5, 2}), but got sub-list {3} with sizes: 1"}));
  EXPECT_TRUE(throws_error([] { tensor({{{1, 2, 3}}, {{1, 2}}}); },
                           {"Expected all sub-lists to have sizes: 1 3 (e.g. {{1, 2, 3}}), but got sub-list {{1, 2}} with "
                            "sizes: 1 2"}));
  EXPECT_TRUE(throws_error([] { tensor({{1, 2}, {1.5, 2.5}}); },
                           {"tensor", "one scalar type", "Expected all elements of the tensor to have the same scalar type: "
                                                         "Int, but got element of scalar type: Double"}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}, requires_grad()); }, {"requires_grad", "floating-point", "int64"}));
}

// LibTorch's TensorDataContainer rules, as a LibTorch 1.13 program printed them: int and int64_t
// give int64, float and double the default dtype, bool, uint8_t and int16_t their own; an empty
// braced list is float32 of shape [0]; a list of sizes is int64; nesting goes to any depth.
TEST(Factory, TensorTakesWhatLibTorchsTensorTakes) {
  EXPECT_EQ(tensor({}).sizes().vec(), S{0});
  EXPECT_EQ(tensor({}).dtype(), kFloat32);
  EXPECT_EQ(tensor(1).dtype(), kInt64);
  EXPECT_EQ(tensor(true).dtype(), kBool);
  EXPECT_EQ(tensor(uint8_t{3}).dtype(), kUInt8);
  EXPECT_EQ(tensor(1.5f).dtype(), kFloat32);
  EXPECT_EQ(tensor(int16_t{2}).dtype(), kInt16);
  EXPECT_EQ(tensor(IntArrayRef{1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({{1, 2}, {3, 4}}, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(values(tensor({{1, 2}, {3, 4}}, kFloat64)), (V{1, 2, 3, 4}));
  // 2^53 + 1 is exact through int64 (a double would round it to 2^53).
  EXPECT_EQ(tensor({int64_t{9007199254740993}}).item<int64_t>(), int64_t{9007199254740993});
  const Tensor deep = tensor({{{{1.0}, {2.0}}, {{3.0}, {4.0}}}, {{{5.0}, {6.0}}, {{7.0}, {8.0}}}});
  EXPECT_EQ(deep.sizes().vec(), (S{2, 2, 2, 1}));
  EXPECT_EQ(values(deep), (V{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(tensor(std::vector<bool>{true, false}).dtype(), kBool);
  EXPECT_EQ(values(tensor(std::vector<float>{0.5f, 2.0f})), (V{0.5, 2}));
}

// ---- constant fills ----
TEST(Factory, ZerosOnesFullEmpty) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.sizes().vec(), (S{2, 3}));
  EXPECT_EQ(values(z), V(6, 0.0));
  Tensor o = ones({4}, kInt64);
  EXPECT_EQ(o.dtype(), kInt64);
  EXPECT_EQ(values(o), V(4, 1.0));
  Tensor f = full({2, 2}, 2.5, kFloat64);
  EXPECT_EQ(values(f), V(4, 2.5));
  EXPECT_EQ(values(full({3}, 7.9, kInt64)), V(3, 7.0));
  EXPECT_EQ(values(full({2}, true, kBool)), V(2, 1.0));
  Tensor e = empty({3, 0, 2});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.sizes().vec(), (S{3, 0, 2}));
  EXPECT_EQ(empty({5}, kFloat64).numel(), 5);
  Tensor s = zeros({});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item<float>(), 0.0f);
  Tensor r = ones({2}, requires_grad());
  EXPECT_TRUE(r.requires_grad());
  EXPECT_TRUE(r.is_leaf());
  Tensor b = zeros({2}, kBool);
  EXPECT_EQ(values(b), V(2, 0.0));
}

TEST(Factory, SizeErrors) {
  EXPECT_TRUE(throws_error([] { zeros({2, -1}); }, {"zeros", "[2, -1]", "non-negative"}));
  EXPECT_TRUE(throws_error([] { ones({-3}); }, {"ones", "[-3]", "non-negative"}));
  EXPECT_TRUE(throws_error([] { full({-1, 2}, 1.0); }, {"full", "[-1, 2]"}));
  EXPECT_TRUE(throws_error([] { empty({-2}); }, {"empty", "[-2]"}));
  EXPECT_TRUE(throws_error([] { rand({2, -2}); }, {"rand", "[2, -2]"}));
  EXPECT_TRUE(throws_error([] { randn({-1}); }, {"randn", "[-1]"}));
  EXPECT_TRUE(throws_error([] { randint(0, 5, {-1}); }, {"randint", "[-1]"}));
  EXPECT_TRUE(throws_error([] { zeros(std::vector<int64_t>(65, 1)); }, {"at most 64 dimensions", "65"}));
  EXPECT_TRUE(throws_error([] { zeros({2}, Device(kCUDA, 0)); }, {"zeros", "CPU", "cuda"}));
  EXPECT_TRUE(throws_error([] { eye(-1, 2); }, {"eye", "[-1, 2]"}));
}

// ---- ranges ----
TEST(Factory, ArangeIntegers) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(values(a), (V{0, 1, 2, 3, 4}));
  Tensor b = arange(2, 9, 3);
  EXPECT_EQ(b.dtype(), kInt64);
  EXPECT_EQ(values(b), (V{2, 5, 8}));
  Tensor n = arange(5, 0, -2);
  EXPECT_EQ(values(n), (V{5, 3, 1}));
  EXPECT_EQ(arange(3, 3).numel(), 0);
  Tensor d = arange(4, kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(values(d), (V{0, 1, 2, 3}));
}

TEST(Factory, ArangeFloats) {
  Tensor a = arange(0.0, 1.0, 0.25);
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(values(a), (V{0, 0.25, 0.5, 0.75}));
  Tensor b = arange(1, 2.5, 0.5);  // one float argument makes the result floating
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_EQ(values(b), (V{1, 1.5, 2}));
  // (1 - 0) / 0.3 = 3.33.. -> ceil = 4 elements
  Tensor c = arange(0, 1, 0.3, kFloat64);
  EXPECT_TRUE(all_close(c, {0, 0.3, 0.6, 0.9}, {4}, 1e-15, 0));
  Tensor d = arange(1.0, -1.0, -0.5, kFloat64);
  EXPECT_EQ(values(d), (V{1, 0.5, 0, -0.5}));
  Tensor e = arange(0.5, 3.0);
  EXPECT_EQ(values(e), (V{0.5, 1.5, 2.5}));
}

TEST(Factory, ArangeErrors) {
  EXPECT_TRUE(throws_error([] { arange(0, 5, 0); }, {"arange", "non-zero step"}));
  EXPECT_TRUE(throws_error([] { arange(0, 5, -1); }, {"arange", "start", "end", "step"}));
  EXPECT_TRUE(throws_error([] { arange(5, 0); }, {"arange", "start 5", "end 0"}));
  EXPECT_TRUE(throws_error([] { arange(0.0, INFINITY); }, {"arange", "finite", "inf"}));
}

TEST(Factory, LinspaceExactEndpoints) {
  Tensor a = linspace(0, 1, 5);
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(values(a), (V{0, 0.25, 0.5, 0.75, 1}));
  Tensor b = linspace(2, -2, 4, kFloat64);
  EXPECT_TRUE(all_close(b, {2, 2.0 / 3, -2.0 / 3, -2}, {4}, 1e-15, 0));
  // awkward decimals: both ends exactly as given
  for (int64_t steps : {2, 3, 7, 10, 101}) {
    Tensor c = linspace(0.1, 0.7, steps, kFloat64);
    const V v = values(c);
    ASSERT_EQ(static_cast<int64_t>(v.size()), steps);
    EXPECT_EQ(v.front(), 0.1);
    EXPECT_EQ(v.back(), 0.7);
    for (int64_t i = 0; i < steps; ++i)
      EXPECT_NEAR(v[static_cast<size_t>(i)], 0.1 + 0.6 * static_cast<double>(i) / static_cast<double>(steps - 1), 1e-15);
  }
  EXPECT_EQ(values(linspace(0, 10, 1)), V{0});  // one step gives start, as PyTorch
  EXPECT_EQ(linspace(0, 10, 0).numel(), 0);
  Tensor i = linspace(0, 10, 5, kInt64);  // PyTorch: [0, 2, 5, 7, 10]
  EXPECT_EQ(values(i), (V{0, 2, 5, 7, 10}));
  EXPECT_TRUE(throws_error([] { linspace(0, 1, -1); }, {"linspace", "-1"}));
}

TEST(Factory, Eye) {
  EXPECT_EQ(values(eye(3)), (V{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  Tensor r = eye(2, 3);
  EXPECT_EQ(r.sizes().vec(), (S{2, 3}));
  EXPECT_EQ(values(r), (V{1, 0, 0, 0, 1, 0}));
  Tensor t = eye(3, 2, kInt64);
  EXPECT_EQ(t.dtype(), kInt64);
  EXPECT_EQ(values(t), (V{1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(eye(0).numel(), 0);
  EXPECT_TRUE(eye(2, requires_grad()).requires_grad());
}

// ---- random ----
TEST(Factory, ManualSeedReproducibility) {
  manual_seed(42);
  const V a = values(rand({100}));
  const V an = values(randn({50}));
  const V ai = values(randint(0, 1000, {50}));
  manual_seed(42);
  EXPECT_EQ(values(rand({100})), a);
  EXPECT_EQ(values(randn({50})), an);
  EXPECT_EQ(values(randint(0, 1000, {50})), ai);
  manual_seed(43);
  EXPECT_NE(values(rand({100})), a);
  // consecutive draws differ
  manual_seed(42);
  const V first = values(rand({100}));
  EXPECT_NE(values(rand({100})), first);
}

TEST(Factory, OwnGeneratorIsIndependentOfTheDefault) {
  Generator g1(7), g2(7);
  EXPECT_EQ(values(rand({20}, kFloat64, &g1)), values(rand({20}, kFloat64, &g2)));
  EXPECT_EQ(values(randn({20}, kFloat64, &g1)), values(randn({20}, kFloat64, &g2)));
  manual_seed(3);
  const V ref = values(rand({10}));
  manual_seed(3);
  Generator g(99);
  rand({1000}, {}, &g);  // does not advance the default generator
  EXPECT_EQ(values(rand({10})), ref);
  EXPECT_EQ(g.initial_seed(), 99u);
}

TEST(Factory, RandStatistics) {
  Generator g(1234);
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor u = rand({200000}, dt, &g);
    EXPECT_EQ(u.dtype(), dt);
    const V v = values(u);
    for (double x : v) ASSERT_TRUE(x >= 0.0 && x < 1.0) << x;
    // mean 1/2, variance 1/12 (standard errors ~6.5e-4 and ~1.9e-4)
    EXPECT_NEAR(mean_of(v), 0.5, 0.004);
    EXPECT_NEAR(var_of(v), 1.0 / 12.0, 0.0015);
    // each tenth of [0, 1) holds ~10% of the draws
    std::vector<int> bins(10, 0);
    for (double x : v) ++bins[static_cast<size_t>(x * 10)];
    for (int c : bins) EXPECT_NEAR(c / 200000.0, 0.1, 0.005);
  }
}

TEST(Factory, RandnStatistics) {
  Generator g(99);
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor n = randn({200000}, dt, &g);
    EXPECT_EQ(n.dtype(), dt);
    const V v = values(n);
    EXPECT_NEAR(mean_of(v), 0.0, 0.012);
    EXPECT_NEAR(var_of(v), 1.0, 0.02);
    // P(|x| < 1) = 0.6827
    double inside = 0;
    for (double x : v) inside += std::abs(x) < 1.0;
    EXPECT_NEAR(inside / static_cast<double>(v.size()), 0.6827, 0.005);
    for (double x : v) ASSERT_TRUE(std::isfinite(x));
  }
}

TEST(Factory, RandintRangeAndUniformity) {
  Generator g(5);
  Tensor r = randint(-3, 4, {70000}, kInt64, &g);
  EXPECT_EQ(r.dtype(), kInt64);
  std::map<int64_t, int> counts;
  for (double x : values(r)) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    ASSERT_EQ(x, std::floor(x));
    ++counts[static_cast<int64_t>(x)];
  }
  EXPECT_EQ(counts.size(), 7u);  // every value in [low, high) appears
  for (auto [k, c] : counts) EXPECT_NEAR(c / 70000.0, 1.0 / 7, 0.01) << k;
  Tensor h = randint(3, {1000});
  EXPECT_EQ(h.dtype(), kInt64);
  for (double x : values(h)) ASSERT_TRUE(x == 0 || x == 1 || x == 2);
  Tensor f = randint(0, 10, {50}, kFloat64, &g);  // a float dtype holds integral values
  EXPECT_EQ(f.dtype(), kFloat64);
  for (double x : values(f)) ASSERT_TRUE(x == std::floor(x) && x >= 0 && x < 10);
  EXPECT_EQ(values(randint(4, 5, {3}, kInt64, &g)), V(3, 4.0));
  // a range wider than 2^53: values must stay within bounds and be exact integers
  const int64_t lo = int64_t{1} << 60, hi = lo + 3;
  Tensor big = randint(lo, hi, {100}, kInt64, &g);
  for (int64_t i = 0; i < 100; ++i) {
    const int64_t v = big.data_ptr<int64_t>()[i];
    ASSERT_TRUE(v >= lo && v < hi) << v;
  }
  EXPECT_TRUE(throws_error([] { randint(5, 5, {2}); }, {"randint", "low 5", "high 5"}));
  EXPECT_TRUE(throws_error([] { randint(0, {2}); }, {"randint", "low < high"}));
}

TEST(Factory, RandomDtypeErrors) {
  EXPECT_TRUE(throws_error([] { rand({2}, kInt64); }, {"rand", "int64", "floating-point"}));
  EXPECT_TRUE(throws_error([] { randn({2}, kBool); }, {"randn", "bool"}));
}

// ---- *_like ----
TEST(Factory, LikeFactories) {
  Tensor src = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, TensorOptions(kFloat64).requires_grad(true));
  for (const Tensor& t : {empty_like(src), zeros_like(src), ones_like(src), full_like(src, 3.0), rand_like(src),
                          randn_like(src)}) {
    EXPECT_EQ(t.sizes().vec(), (S{2, 3}));
    EXPECT_EQ(t.dtype(), kFloat64);
    EXPECT_FALSE(t.requires_grad());
    EXPECT_FALSE(t.is_alias_of(src));
  }
  EXPECT_EQ(values(zeros_like(src)), V(6, 0.0));
  EXPECT_EQ(values(ones_like(src)), V(6, 1.0));
  EXPECT_EQ(values(full_like(src, -1.5)), V(6, -1.5));
  Tensor i = zeros_like(src, kInt64);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(i.sizes().vec(), (S{2, 3}));
  Tensor g = ones_like(src, requires_grad());
  EXPECT_TRUE(g.requires_grad());
  EXPECT_EQ(g.dtype(), kFloat64);  // options without a dtype keep the source's
  Tensor ints = tensor({1, 2, 3});
  EXPECT_EQ(full_like(ints, 2.7).dtype(), kInt64);
  EXPECT_EQ(values(full_like(ints, 2.7)), V(3, 2.0));
  // like a non-contiguous tensor: a fresh contiguous tensor of the same shape
  Tensor tt = src.t();
  Tensor z = zeros_like(tt);
  EXPECT_EQ(z.sizes().vec(), (S{3, 2}));
  EXPECT_TRUE(z.is_contiguous());
  for (double x : values(rand_like(tt))) EXPECT_TRUE(x >= 0 && x < 1);
}

// ---- from_blob ----
TEST(Factory, FromBlobSharesMemory) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(data, {2, 3});
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_EQ(t.data_ptr(), static_cast<void*>(data));
  EXPECT_EQ(values(t), (V{1, 2, 3, 4, 5, 6}));
  data[4] = 50;
  EXPECT_EQ(values(t)[4], 50.0);
  t.fill_(0.5);
  EXPECT_EQ(data[0], 0.5f);
  EXPECT_EQ(data[5], 0.5f);
  double d[6] = {0, 1, 2, 3, 4, 5};
  Tensor s = from_blob(d, {2, 3}, {1, 2}, kFloat64);  // column-major view of the buffer
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(values(s), (V{0, 2, 4, 1, 3, 5}));
  int64_t ints[3] = {7, 8, 9};
  EXPECT_EQ(values(from_blob(ints, {3}, kInt64)), (V{7, 8, 9}));
  // the caller keeps ownership: a clone is independent
  Tensor c = from_blob(ints, {3}, kInt64).clone();
  ints[0] = -1;
  EXPECT_EQ(values(c)[0], 7.0);
}

TEST(Factory, FromBlobDeleterRunsWhenTheLastViewDies) {
  int calls = 0;
  void* seen = nullptr;
  double buf[4] = {1, 2, 3, 4};
  {
    Tensor t = from_blob(buf, {4}, [&](void* p) { ++calls; seen = p; }, kFloat64);
    Tensor v = t.view({2, 2});
    t = Tensor();
    EXPECT_EQ(calls, 0);  // the view still holds the storage
    EXPECT_EQ(values(v), (V{1, 2, 3, 4}));
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, static_cast<void*>(buf));
}

TEST(Factory, FromBlobErrors) {
  float data[4] = {};
  EXPECT_TRUE(throws_error([&] { from_blob(data, {2, -2}); }, {"from_blob", "[2, -2]"}));
  EXPECT_TRUE(throws_error([&] { from_blob(nullptr, {2}); }, {"from_blob", "nullptr"}));
  EXPECT_TRUE(throws_error([&] { from_blob(data, {2, 2}, IntArrayRef{1}); }, {"from_blob", "strides", "[2, 2]", "[1]"}));
}

// ---- conversions ----
TEST(Factory, ItemConversions) {
  EXPECT_EQ(tensor({2.5}).item<double>(), 2.5);
  EXPECT_EQ(tensor({2.5}).item<float>(), 2.5f);
  EXPECT_EQ(tensor({2.5}).item<int64_t>(), 2);
  EXPECT_EQ(tensor({-7}).item<int64_t>(), -7);
  EXPECT_EQ(tensor({-7}).item<double>(), -7.0);
  EXPECT_EQ(tensor({-7}).item<int>(), -7);
  EXPECT_TRUE(tensor({true}).item<bool>());
  EXPECT_FALSE(tensor({0.0}).item<bool>());
  EXPECT_TRUE(tensor({0.25}).item<bool>());
  EXPECT_EQ(scalar_tensor(1.25, kFloat64).item<double>(), 1.25);
  const int64_t big = (int64_t{1} << 62) + 1;
  Tensor b = zeros({1}, kInt64);
  b.data_ptr<int64_t>()[0] = big;
  EXPECT_EQ(b.item<int64_t>(), big);  // exact, not through double
  Scalar s = tensor({1.5}).item();
  EXPECT_TRUE(s.is_floating_point());
  EXPECT_EQ(s.to_double(), 1.5);
  EXPECT_TRUE(tensor({3}).item().is_integral());
  EXPECT_TRUE(tensor({false}).item().is_bool());
  // one element of a larger tensor, through a view
  EXPECT_EQ(tensor({{1.0, 2.0}, {3.0, 4.0}}).select(1, 1).select(0, 1).item<double>(), 4.0);
  EXPECT_TRUE(throws_error([] { tensor({1.0, 2.0}).item<double>(); }, {"item", "one element", "[2]"}));
  EXPECT_TRUE(throws_error([] { zeros({0}).item<double>(); }, {"item", "[0]"}));
}

TEST(Factory, ToDtype) {
  Tensor f = tensor({2.7, -2.7, 0.0, 0.5}, kFloat64);
  Tensor i = f.to(kInt64);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(values(i), (V{2, -2, 0, 0}));  // truncation toward zero
  Tensor b = f.to(kBool);
  EXPECT_EQ(values(b), (V{1, 1, 0, 1}));
  Tensor back = tensor({true, false}).to(kFloat32);
  EXPECT_EQ(back.dtype(), kFloat32);
  EXPECT_EQ(values(back), (V{1, 0}));
  Tensor r = tensor({0.1}, kFloat64).to(kFloat32);
  EXPECT_EQ(values(r)[0], static_cast<double>(0.1f));
  EXPECT_EQ(values(tensor({3, -4}).to(kFloat64)), (V{3, -4}));
  EXPECT_EQ(values(tensor({3, 0, -4}).to(kBool)), (V{1, 0, 1}));
  // same dtype: the same tensor unless a copy is asked for
  EXPECT_TRUE(f.to(kFloat64).is_same(f));
  Tensor c = f.to(kFloat64, /*non_blocking=*/false, /*copy=*/true);
  EXPECT_FALSE(c.is_alias_of(f));
  EXPECT_EQ(values(c), values(f));
  // non-contiguous source
  Tensor m = tensor({{1.5, 2.5}, {3.5, 4.5}});
  EXPECT_EQ(values(m.t().to(kInt64)), (V{1, 3, 2, 4}));
}

TEST(Factory, CloneIsIndependent) {
  Tensor a = tensor({1.0, 2.0, 3.0});
  Tensor c = a.clone();
  EXPECT_FALSE(c.is_alias_of(a));
  EXPECT_EQ(c.dtype(), a.dtype());
  c.data_ptr<float>()[0] = 100;
  EXPECT_EQ(values(a)[0], 1.0);
  a.fill_(9.0);
  EXPECT_EQ(values(c), (V{100, 2, 3}));
  Tensor m = tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor mc = m.t().clone();
  EXPECT_TRUE(mc.is_contiguous());
  EXPECT_EQ(mc.sizes().vec(), (S{3, 2}));
  EXPECT_EQ(values(mc), (V{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(mc.dtype(), kInt64);
}

TEST(Factory, DataPtrChecksDtype) {
  Tensor f = zeros({2});
  EXPECT_NE(f.data_ptr<float>(), nullptr);
  EXPECT_TRUE(throws_error([&] { f.data_ptr<double>(); }, {"data_ptr", "float32", "float64"}));
  EXPECT_TRUE(throws_error([] { zeros({2}, kInt64).data_ptr<bool>(); }, {"data_ptr", "int64", "bool"}));
  EXPECT_TRUE(throws_error([] { zeros({2}, kBool).data_ptr<int64_t>(); }, {"data_ptr", "bool", "int64"}));
  // data_ptr points at the first element of a view
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  EXPECT_EQ(x.slice(0, 2).data_ptr<double>(), x.data_ptr<double>() + 2);
}

// Issue 14, item 10: element counts and byte sizes that do not fit are errors, not wrapped
// counts. Each case crashed (SIGSEGV), returned a tensor without memory, or summed to 0 before.
TEST(Factory, SizesThatOverflowAreErrors) {
  auto expect_error = [](auto&& f, const std::string& word) {
    try {
      f();
      ADD_FAILURE() << "expected a graft::Error mentioning " << word;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  // 2^62 float32 elements: 2^64 bytes, which wrapped to 0 in a size_t.
  expect_error([] { (void)ones({int64_t{1} << 62}).select(0, 12345).item<float>(); }, "bytes");
  expect_error([] { (void)empty({int64_t{1} << 62}); }, "bytes");
  // 2^93 elements: the count itself overflows int64.
  expect_error([] { (void)zeros({int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31}); }, "elements");
  // An expanded view of 2^64 elements (no memory needed, but its numel cannot be represented).
  expect_error([] { (void)ones({1, 1}).expand({int64_t{1} << 32, int64_t{1} << 32}).sum(); }, "elements");
  // A reshape to such a shape is refused in the same way.
  expect_error([] { (void)zeros({0}).reshape({0, int64_t{1} << 40, int64_t{1} << 40}); }, "strides");
  // Shapes that do fit still work, including empty ones with large sizes (hand count: 0 elements).
  EXPECT_EQ(zeros({0, int64_t{1} << 40}).numel(), 0);
  EXPECT_EQ(ones({1, 1}).expand({int64_t{1} << 20, int64_t{1} << 20}).numel(), int64_t{1} << 40);
}

}  // namespace
}  // namespace graft::test
