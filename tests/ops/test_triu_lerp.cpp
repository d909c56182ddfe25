// triu / tril / lerp (issue 32): values and gradients against PyTorch 1.13
// (tests/fixtures/triu_lerp_fixtures.txt, written by gen_triu_lerp_fixtures.py: this test only
// reads it), gradcheck and gradgradcheck in float64, every stored dtype of triu/tril against a
// plain loop, diagonals past the edges, the in-place forms (values, version counter, autograd,
// the leaf error), the argument errors, and shapes on the meta device.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "../support/fixture_file.h"
#include "../support/test_util.h"
#include "graft/engine/gradcheck.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

const std::vector<FixtureCase>& triu_lerp_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("triu_lerp_fixtures.txt");
  return cases;
}

// The graft call a case names (its args already in the case's dtype).
Tensor call_triu_lerp(const FixtureCase& c, const TensorList& a) {
  const std::string& fn = c.kind;
  if (fn == "triu") return triu(a[0], static_cast<int64_t>(c.number("diagonal")));
  if (fn == "tril") return tril(a[0], static_cast<int64_t>(c.number("diagonal")));
  if (fn == "lerp_scalar") return lerp(a[0], a[1], c.number("weight"));
  if (fn == "lerp_tensor") return lerp(a[0], a[1], a[2]);
  throw std::runtime_error("unknown function " + fn);
}

TEST(TriuLerpFixtures, FileLoads) {
  ASSERT_NO_THROW(triu_lerp_fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : triu_lerp_fixtures()) ++per_fn[c.kind];
  EXPECT_EQ(per_fn["triu"], 16);  // 3 inputs x 5 diagonals, and one of int64
  EXPECT_EQ(per_fn["tril"], 16);
  EXPECT_EQ(per_fn["lerp_scalar"], 8);
  EXPECT_EQ(per_fn["lerp_tensor"], 3);
}

class TriuLerpFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(TriuLerpFixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = triu_lerp_fixtures()[GetParam()];
  const bool f32 = c.params.count("dtype") && c.param("dtype") == "f32";
  const bool grads = c.has("grad_output");
  TensorList args;
  for (int i = 0; c.has("arg" + std::to_string(i)); ++i) {
    Tensor a = c.tensor("arg" + std::to_string(i)).clone();
    if (f32) a = a.to(kFloat32);
    if (grads) a.requires_grad_();
    args.push_back(a);
  }
  Tensor out;
  try {
    out = call_triu_lerp(c, args);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_EQ(out.dtype(), args[0].dtype());
  if (f32) {
    // float32: the same bits as PyTorch's kernel (its fused multiply-add and its choice of formula;
    // ATen's other, scalar formula is a unit in the last place off in about half of these)
    EXPECT_TRUE(same_values(values(out), values(c.tensor("out")))) << "value";
  } else {
    EXPECT_TRUE(all_close(out, c.tensor("out"), 1e-12, 1e-12)) << "value";
  }
  if (!grads) return;
  out.backward(c.tensor("grad_output"));
  for (size_t i = 0; i < args.size(); ++i) {
    ASSERT_TRUE(args[i].grad().defined()) << "no gradient for arg " << i;
    EXPECT_TRUE(all_close(args[i].grad(), c.tensor("grad" + std::to_string(i)), 1e-12, 1e-12))
        << "gradient of arg " << i;
  }
}

size_t triu_lerp_fixture_count() {
  try {
    return triu_lerp_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, TriuLerpFixture, ::testing::Range<size_t>(0, triu_lerp_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return triu_lerp_fixtures()[info.param].name;
                         });

// ---- a plain reference: element (.., i, j) kept when j - i >= d (upper) or <= d (lower) ----
std::vector<double> triangle_ref(const std::vector<double>& v, int64_t rows, int64_t cols, int64_t d, bool upper) {
  std::vector<double> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    const auto j = static_cast<int64_t>(k) % cols, i = (static_cast<int64_t>(k) / cols) % rows;
    const bool keep = upper ? j - i >= d : j - i <= d;
    out[k] = keep ? v[k] : 0.0;
  }
  return out;
}

TEST(TriuTril, EveryStoredDtype) {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  for (DType dt : {kFloat32, kFloat64, kInt64, kInt32, kInt16, kInt8, kUInt8, kFloat16, kBFloat16}) {
    const Tensor x = make(v, {3, 4}).to(dt);
    for (int64_t d : {-1, 0, 2}) {
      const Tensor u = triu(x, d), l = tril(x, d);
      EXPECT_EQ(u.dtype(), dt);
      EXPECT_EQ(l.dtype(), dt);
      // (read back through float64: values() reads the op kernels' dtypes only)
      EXPECT_TRUE(same_values(values(u.to(kFloat64)), triangle_ref(v, 3, 4, d, true))) << dtype_name(dt) << " triu " << d;
      EXPECT_TRUE(same_values(values(l.to(kFloat64)), triangle_ref(v, 3, 4, d, false))) << dtype_name(dt) << " tril " << d;
    }
  }
  // bool: true stays true inside the triangle, false outside
  const Tensor b = ones({3, 3}, kBool);
  EXPECT_TRUE(same_values(values(triu(b, 1)), {0, 1, 1, 0, 0, 1, 0, 0, 0}));
  EXPECT_TRUE(same_values(values(tril(b)), {1, 0, 0, 1, 1, 0, 1, 1, 1}));
}

TEST(TriuTril, DiagonalsPastTheEdges) {
  const std::vector<double> v = uniform_values(12, 7);
  const Tensor x = make(v, {3, 4});
  const std::vector<double> none(12, 0.0);
  EXPECT_TRUE(same_values(values(triu(x, 4)), none));
  EXPECT_TRUE(same_values(values(triu(x, 100)), none));
  EXPECT_TRUE(same_values(values(triu(x, -2)), v));
  EXPECT_TRUE(same_values(values(tril(x, 3)), v));
  EXPECT_TRUE(same_values(values(tril(x, -3)), none));
  EXPECT_TRUE(same_values(values(triu(x, std::numeric_limits<int64_t>::min())), v));
  EXPECT_TRUE(same_values(values(tril(x, std::numeric_limits<int64_t>::max())), v));
  EXPECT_TRUE(same_values(values(triu(x, std::numeric_limits<int64_t>::max())), none));
  EXPECT_TRUE(same_values(values(tril(x, std::numeric_limits<int64_t>::min())), none));
}

TEST(TriuTril, StridedAndBatchedInputs) {
  // a transposed (4, 3) view and a batch whose matrices are every other one of a larger tensor
  const std::vector<double> v = uniform_values(12, 11);
  const Tensor x = make(v, {3, 4}).t();
  std::vector<double> xt(12);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j) xt[static_cast<size_t>(i * 3 + j)] = v[static_cast<size_t>(j * 4 + i)];
  EXPECT_TRUE(same_values(values(triu(x, 1)), triangle_ref(xt, 4, 3, 1, true)));
  EXPECT_TRUE(same_values(values(tril(x, -1)), triangle_ref(xt, 4, 3, -1, false)));

  const std::vector<double> w = uniform_values(4 * 2 * 3, 12);
  const Tensor big = make(w, {4, 2, 3});
  const Tensor every_other = big.slice(0, 0, 4, 2);  // matrices 0 and 2
  std::vector<double> picked(w.begin(), w.begin() + 6);
  picked.insert(picked.end(), w.begin() + 12, w.begin() + 18);
  EXPECT_TRUE(same_values(values(triu(every_other)), triangle_ref(picked, 2, 3, 0, true)));
  // empty matrices and empty batches
  EXPECT_EQ(triu(zeros({0, 3})).sizes(), IntArrayRef({0, 3}));
  EXPECT_EQ(tril(zeros({2, 0, 3}), 1).sizes(), IntArrayRef({2, 0, 3}));
}

TEST(TriuTril, Members) {
  const Tensor x = make(uniform_values(12, 13), {2, 2, 3});
  EXPECT_TRUE(same_values(values(x.triu(1)), values(triu(x, 1))));
  EXPECT_TRUE(same_values(values(x.tril(-1)), values(tril(x, -1))));
  EXPECT_TRUE(same_values(values(x.triu()), values(triu(x, 0))));
}

TEST(TriuTril, Gradcheck) {
  for (int64_t d : {-2, -1, 0, 1, 3}) {
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{3, 4}, {4, 3}, {2, 3, 4}}) {
      const Tensor x = make(uniform_values(static_cast<int64_t>(shape.size() == 3 ? 24 : 12), 20), shape)
                           .requires_grad_();
      EXPECT_TRUE(autograd::gradcheck([d](const TensorList& a) { return triu(a[0], d); }, {x}));
      EXPECT_TRUE(autograd::gradcheck([d](const TensorList& a) { return tril(a[0], d); }, {x}));
      EXPECT_TRUE(autograd::gradgradcheck([d](const TensorList& a) { return triu(a[0], d); }, {x}));
      EXPECT_TRUE(autograd::gradgradcheck([d](const TensorList& a) { return tril(a[0], d); }, {x}));
    }
  }
  const Tensor x = make({1, 2, 3, 4}, {2, 2}).requires_grad_();
  EXPECT_EQ(triu(x).grad_fn()->name(), "TriuBackward0");
  EXPECT_EQ(tril(x).grad_fn()->name(), "TrilBackward0");
}

TEST(Lerp, Gradcheck) {
  const Tensor s = make(uniform_values(12, 30, -2, 2), {3, 4}).requires_grad_();
  const Tensor e = make(uniform_values(4, 31, -2, 2), {4}).requires_grad_();
  const Tensor w = make(uniform_values(3, 32, -0.5, 1.5), {3, 1}).requires_grad_();
  for (double wv : {0.25, 0.5, 0.75, 1.3, -0.7}) {
    auto f = [wv](const TensorList& a) { return lerp(a[0], a[1], wv); };
    EXPECT_TRUE(autograd::gradcheck(f, {s, e})) << wv;
    EXPECT_TRUE(autograd::gradgradcheck(f, {s, e})) << wv;
  }
  auto ft = [](const TensorList& a) { return lerp(a[0], a[1], a[2]); };
  EXPECT_TRUE(autograd::gradcheck(ft, {s, e, w}));
  EXPECT_TRUE(autograd::gradgradcheck(ft, {s, e, w}));
  // the weight broadcasting to the largest shape of the three
  const Tensor s1 = make(uniform_values(3, 33), {3, 1}).requires_grad_();
  const Tensor e1 = make(uniform_values(4, 34), {1, 4}).requires_grad_();
  const Tensor w1 = make(uniform_values(8, 35), {2, 1, 4}).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck(ft, {s1, e1, w1}));
  EXPECT_EQ(lerp(s1, e1, w1).sizes(), IntArrayRef({2, 3, 4}));
  EXPECT_EQ(lerp(s, e, 0.5).grad_fn()->name(), "LerpBackward0");
  EXPECT_EQ(lerp(s, e, w).grad_fn()->name(), "LerpBackward1");
}

TEST(Lerp, ValuesByDefinition) {
  // start + w (end - start), worked out by hand
  const Tensor s = make({0, 1, -2}, {3}), e = make({4, 3, 2}, {3});
  EXPECT_TRUE(all_close(lerp(s, e, 0.25), {1, 1.5, -1}, {3}));
  EXPECT_TRUE(all_close(lerp(s, e, 1.0), {4, 3, 2}, {3}));  // exactly end
  EXPECT_TRUE(all_close(lerp(s, e, 0.0), {0, 1, -2}, {3}));
  EXPECT_TRUE(all_close(lerp(s, e, -1.0), {-4, -1, -6}, {3}));
  EXPECT_TRUE(all_close(lerp(s, e, make({0.5, 2, 0}, {3})), {2, 5, -2}, {3}));
  EXPECT_TRUE(all_close(s.lerp(e, 0.75), {3, 2.5, 1}, {3}));
  EXPECT_TRUE(all_close(s.lerp(e, make({1.0}, {1})), {4, 3, 2}, {3}));
  // float32: weight 1 gives end exactly even where start + (end - start) would round
  const Tensor s32 = make({1e-8, 3}, {2}).to(kFloat32), e32 = make({1, 1e8}, {2}).to(kFloat32);
  EXPECT_TRUE(same_values(values(lerp(s32, e32, 1.0)), values(e32)));
}

TEST(TriuLerpInPlace, ValuesVersionAndResult) {
  const std::vector<double> v = uniform_values(12, 40);
  Tensor x = make(v, {3, 4});
  const uint32_t before = x._version();
  Tensor& r = x.triu_(1);
  EXPECT_TRUE(r.is_same(x));
  EXPECT_EQ(x._version(), before + 1);
  EXPECT_TRUE(same_values(values(x), triangle_ref(v, 3, 4, 1, true)));
  const Tensor ints = (make(v, {3, 4}) * 100.0).to(kInt64);
  Tensor y = ints.clone();
  y.tril_(-1);
  const std::vector<double> vi = values(ints);
  EXPECT_TRUE(same_values(values(y), triangle_ref(vi, 3, 4, -1, false)));
  // a strided view written in place: only its elements change
  Tensor base = make(v, {3, 4});
  Tensor view = base.t();  // (4, 3)
  view.tril_();            // zeroes view[i][j] = base[j][i] for j > i: base below its diagonal
  EXPECT_TRUE(same_values(values(base), triangle_ref(v, 3, 4, 0, true)));

  Tensor s = make({0, 1, -2}, {3});
  const uint32_t sv = s._version();
  s.lerp_(make({4, 3, 2}, {3}), 0.25);
  EXPECT_EQ(s._version(), sv + 1);
  EXPECT_TRUE(all_close(s, {1, 1.5, -1}, {3}));
  s.lerp_(make({5, 5, 5}, {3}), make({1.0, 0.0, 0.5}, {3}));
  EXPECT_TRUE(all_close(s, {5, 1.5, 2}, {3}));
  // end aliasing self
  Tensor a = make({1, 2}, {2});
  a.lerp_(a, 0.3);
  EXPECT_TRUE(all_close(a, {1, 2}, {2}));
}

TEST(TriuLerpInPlace, Autograd) {
  // on a non-leaf: the gradient goes through the in-place node, as PyTorch's
  const Tensor x = make(uniform_values(12, 41), {3, 4}).requires_grad_();
  Tensor y = x * 2.0;
  y.triu_(1);
  y.sum().backward();
  EXPECT_TRUE(same_values(values(x.grad()), triangle_ref(std::vector<double>(12, 2.0), 3, 4, 1, true)));

  const Tensor s = make({0, 1, -2}, {3}).requires_grad_();
  const Tensor e = make({4, 3, 2}, {3}).requires_grad_();
  const Tensor w = make({0.25}, {1}).requires_grad_();
  Tensor t = s * 1.0;
  t.lerp_(e, w);
  t.sum().backward();
  EXPECT_TRUE(all_close(s.grad(), {0.75, 0.75, 0.75}, {3}));
  EXPECT_TRUE(all_close(e.grad(), {0.25, 0.25, 0.25}, {3}));
  EXPECT_TRUE(all_close(w.grad(), {4 + 2 + 4}, {1}));  // sum of end - start

  auto f = [](const TensorList& a) {
    Tensor u = a[0] * 1.0;
    u.lerp_(a[1], 0.8);
    u.tril_(0);
    return u;
  };
  EXPECT_TRUE(autograd::gradcheck(f, {make(uniform_values(9, 42), {3, 3}).requires_grad_(),
                                      make(uniform_values(3, 43), {3}).requires_grad_()}));
}

TEST(TriuLerpErrors, MessagesNameTheOp) {
  EXPECT_TRUE(throws_error([] { triu(zeros({4})); }, {"triu", "at least 2 dims", "1 dims", "[4]", "unsqueeze"}));
  EXPECT_TRUE(throws_error([] { tril(zeros({})); }, {"tril", "at least 2 dims", "0 dims"}));
  EXPECT_TRUE(throws_error([] { zeros({3}).triu_(); }, {"triu_", "at least 2 dims"}));
  EXPECT_TRUE(throws_error([] { zeros({3}).tril(1); }, {"tril", "at least 2 dims"}));
  EXPECT_TRUE(throws_error([] { lerp(tensor({1, 2}), tensor({3, 4}), 0.5); }, {"lerp", "floating-point", "int64"}));
  EXPECT_TRUE(throws_error([] { lerp(tensor({1, 2}), tensor({3, 4}), tensor({1, 1})); }, {"lerp", "floating-point", "int64"}));
  EXPECT_TRUE(throws_error([] { lerp(zeros({2}), zeros({2}, kFloat64), 0.5); }, {"lerp", "end", "float32", "float64"}));
  EXPECT_TRUE(throws_error([] { lerp(zeros({2}), zeros({2}), zeros({2}, kFloat64)); }, {"lerp", "weight", "float64"}));
  EXPECT_TRUE(throws_error([] { lerp(zeros({2, 3}), zeros({4}), 0.5); }, {"lerp", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}).lerp_(tensor({1, 2}), 0.5); }, {"lerp_", "floating-point", "int64"}));
  EXPECT_TRUE(throws_error([] { zeros({3}).lerp_(zeros({2, 3}), 0.5); }, {"lerp_", "[3]", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { zeros({3}).lerp_(zeros({3}), zeros({2, 1})); }, {"lerp_", "[3]", "[2, 3]"}));
  // in place on a leaf that requires grad
  EXPECT_TRUE(throws_error([] { zeros({2, 2}, requires_grad()).triu_(); }, {"triu_", "leaf", "NoGradGuard"}));
  EXPECT_TRUE(throws_error([] { zeros({2, 2}, requires_grad()).tril_(); }, {"tril_", "leaf"}));
  EXPECT_TRUE(throws_error([] { zeros({2}, requires_grad()).lerp_(ones({2}), 0.5); }, {"lerp_", "leaf"}));
}

TEST(TriuLerpMeta, ShapesOnly) {
  const Tensor x = empty({2, 3, 4}, TensorOptions(kFloat32).device(kMeta));
  for (const Tensor& y : {triu(x, 1), tril(x, -1), x.triu(), x.tril()}) {
    EXPECT_TRUE(y.is_meta());
    EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, 4}));
    EXPECT_EQ(y.dtype(), kFloat32);
  }
  EXPECT_TRUE(throws_error([&] { triu(empty({4}, TensorOptions(kFloat32).device(kMeta))); }, {"triu", "at least 2 dims"}));
  Tensor m = empty({3, 3}, TensorOptions(kInt64).device(kMeta));
  EXPECT_TRUE(m.triu_(1).is_meta());
  const Tensor s = empty({3, 1}, TensorOptions(kFloat64).device(kMeta));
  const Tensor e = empty({1, 4}, TensorOptions(kFloat64).device(kMeta));
  const Tensor w = empty({3, 4}, TensorOptions(kFloat64).device(kMeta));
  const Tensor l = lerp(s, e, w);
  EXPECT_TRUE(l.is_meta());
  EXPECT_EQ(l.sizes(), IntArrayRef({3, 4}));
  EXPECT_EQ(lerp(s, e, 0.5).sizes(), IntArrayRef({3, 4}));
  // gradients on meta: shapes of the inputs
  const Tensor sg = empty({3, 1}, TensorOptions(kFloat64).device(kMeta)).requires_grad_();
  const Tensor wg = empty({3, 4}, TensorOptions(kFloat64).device(kMeta)).requires_grad_();
  const auto g = autograd::grad({lerp(sg, e, wg).sum()}, {sg, wg});
  EXPECT_TRUE(g[0].is_meta());
  EXPECT_EQ(g[0].sizes(), IntArrayRef({3, 1}));
  EXPECT_EQ(g[1].sizes(), IntArrayRef({3, 4}));
}

}  // namespace
}  // namespace graft::test
