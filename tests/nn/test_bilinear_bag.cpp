// Bilinear and EmbeddingBag (issue 32): values and gradients against PyTorch 1.13
// (tests/fixtures/bilinear_bag_fixtures.txt, written by gen_bilinear_bag_fixtures.py: this test only
// reads it), gradcheck / gradgradcheck in float64, the argument errors, the options, the modules,
// and both print styles (the expected strings as PyTorch 1.13 and LibTorch 1.13 print them).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "../support/fixture_file.h"
#include "../support/test_util.h"
#include "graft/engine/gradcheck.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

const std::vector<FixtureCase>& bilinear_bag_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("bilinear_bag_fixtures.txt");
  return cases;
}

EmbeddingBagMode bag_mode(const std::string& m) {
  if (m == "sum") return kSum;
  if (m == "mean") return kMean;
  if (m == "max") return kMax;
  throw std::runtime_error("unknown mode " + m);
}

// An int64 tensor of the given values (1-D unless a shape is given).
Tensor bb_idx(const std::vector<double>& v) { return make(v, {static_cast<int64_t>(v.size())}, kInt64); }
Tensor bb_idx(const std::vector<double>& v, IntArrayRef shape) { return make(v, shape, kInt64); }

bool bag_flag(const FixtureCase& c, const std::string& key) { return c.params.count(key) ? c.flag(key) : false; }

TEST(BilinearBagFixtures, FileLoads) {
  ASSERT_NO_THROW(bilinear_bag_fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : bilinear_bag_fixtures()) ++per_fn[c.kind + (c.params.count("mode") ? c.param("mode") : "")];
  EXPECT_GE(per_fn["bilinear"], 3);
  for (const char* m : {"embedding_bagsum", "embedding_bagmean", "embedding_bagmax"}) EXPECT_GE(per_fn[m], 8) << m;
}

class BilinearBagFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(BilinearBagFixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = bilinear_bag_fixtures()[GetParam()];
  constexpr double tol = 1e-12;
  if (c.kind == "bilinear") {
    TensorList args;
    for (int i = 0; c.has("arg" + std::to_string(i)); ++i)
      args.push_back(c.tensor("arg" + std::to_string(i)).clone().requires_grad_());
    Tensor out;
    try {
      out = F::bilinear(args[0], args[1], args[2], args.size() > 3 ? args[3] : Tensor());
    } catch (const Error& e) {
      FAIL() << e.what();
    }
    EXPECT_TRUE(all_close(out, c.tensor("out"), tol, tol)) << "value";
    out.backward(c.tensor("grad_output"));
    for (size_t i = 0; i < args.size(); ++i) {
      ASSERT_TRUE(args[i].grad().defined()) << "no gradient for arg " << i;
      EXPECT_TRUE(all_close(args[i].grad(), c.tensor("grad" + std::to_string(i)), tol, tol)) << "gradient of arg " << i;
    }
    return;
  }
  ASSERT_EQ(c.kind, "embedding_bag");
  const bool int32 = c.params.count("index_dtype") && c.param("index_dtype") == "int32";
  const DType index_dtype = int32 ? kInt32 : kInt64;
  Tensor weight = c.tensor("weight").clone().requires_grad_();
  const Tensor input = c.tensor("input").to(index_dtype);
  auto options = F::EmbeddingBagFuncOptions()
                     .mode(bag_mode(c.param("mode")))
                     .include_last_offset(bag_flag(c, "include_last_offset"))
                     .scale_grad_by_freq(bag_flag(c, "scale_grad_by_freq"))
                     .norm_type(c.number("norm_type", 2.0));
  if (c.has("offsets")) options.offsets(c.tensor("offsets").to(index_dtype));
  if (c.params.count("padding_idx")) options.padding_idx(static_cast<int64_t>(c.number("padding_idx")));
  if (c.params.count("max_norm")) options.max_norm(c.number("max_norm"));
  Tensor psw;
  if (c.has("per_sample_weights")) {
    psw = c.tensor("per_sample_weights").clone().requires_grad_();
    options.per_sample_weights(psw);
  }
  Tensor out;
  try {
    out = F::embedding_bag(input, weight, options);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  if (c.has("weight_after")) {
    EXPECT_TRUE(all_close(weight.detach(), c.tensor("weight_after"), tol, tol)) << "renormalised weight";
  }
  EXPECT_TRUE(all_close(out, c.tensor("out"), tol, tol)) << "value";
  out.backward(c.tensor("grad_output"));
  ASSERT_TRUE(weight.grad().defined());
  EXPECT_TRUE(all_close(weight.grad(), c.tensor("grad_weight"), tol, tol)) << "gradient of weight";
  if (psw.defined()) {
    ASSERT_TRUE(psw.grad().defined());
    EXPECT_TRUE(all_close(psw.grad(), c.tensor("grad_per_sample_weights"), tol, tol)) << "gradient of psw";
  }
}

size_t bilinear_bag_fixture_count() {
  try {
    return bilinear_bag_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, BilinearBagFixture, ::testing::Range<size_t>(0, bilinear_bag_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return bilinear_bag_fixtures()[info.param].name;
                         });

// ---- gradcheck / gradgradcheck (float64) ----
// Integer tensors give the exact integer result, as in PyTorch: by hand, x1 W = [44, 35] and
// [108, 93], so y = 44 * 7 + 35 * 4 + 1 = 449 and 108 * 8 + 93 * 9 + 1 = 1702.
TEST(BilinearInteger, ExactInt64Result) {
  const Tensor x1 = tensor({{1, 2, 3}, {7, 6, 5}}), x2 = tensor({{7, 4}, {8, 9}});
  const Tensor w = tensor({2, 3, 9, 7, 8, 6}).reshape({1, 3, 2}), b = tensor({1});
  const Tensor y = F::bilinear(x1, x2, w, b);
  EXPECT_EQ(y.dtype(), kInt64);
  EXPECT_EQ(y[0][0].item<int64_t>(), 449);
  EXPECT_EQ(y[1][0].item<int64_t>(), 1702);
  EXPECT_EQ(F::bilinear(x1, x2, w)[1][0].item<int64_t>(), 1701);
}

TEST(BilinearBagGradcheck, Bilinear) {
  using Fn = autograd::TestFunction;
  const Tensor x1 = uniform_sample({3, 4}, 51, -1, 1).requires_grad_();
  const Tensor x2 = uniform_sample({3, 2}, 52, -1, 1).requires_grad_();
  const Tensor w = uniform_sample({5, 4, 2}, 53, -1, 1).requires_grad_();
  const Tensor b = uniform_sample({5}, 54, -1, 1).requires_grad_();
  const Fn with_bias = [](const TensorList& in) { return F::bilinear(in[0], in[1], in[2], in[3]); };
  EXPECT_TRUE(autograd::gradcheck(with_bias, {x1, x2, w, b}));
  EXPECT_TRUE(autograd::gradgradcheck(with_bias, {x1, x2, w, b}));
  const Tensor y1 = uniform_sample({2, 2, 3}, 55, -1, 1).requires_grad_();
  const Tensor y2 = uniform_sample({2, 2, 3}, 56, -1, 1).requires_grad_();
  const Tensor v = uniform_sample({2, 3, 3}, 57, -1, 1).requires_grad_();
  const Fn no_bias = [](const TensorList& in) { return F::bilinear(in[0], in[1], in[2]); };
  EXPECT_TRUE(autograd::gradcheck(no_bias, {y1, y2, v}));
  EXPECT_TRUE(autograd::gradgradcheck(no_bias, {y1, y2, v}));
}

TEST(BilinearBagGradcheck, EmbeddingBag) {
  using Fn = autograd::TestFunction;
  const Tensor w = uniform_sample({7, 3}, 61, -2, 2).requires_grad_();
  const Tensor ids = bb_idx({1, 4, 4, 0, 6, 2, 3, 5, 1, 2});
  const Tensor offs = bb_idx({0, 3, 3, 8});
  const Tensor psw = uniform_sample({10}, 62, -1, 1).requires_grad_();
  const Fn sum_psw = [&](const TensorList& in) {
    return F::embedding_bag(
        ids, in[0], F::EmbeddingBagFuncOptions().offsets(offs).mode(kSum).per_sample_weights(in[1]).padding_idx(2));
  };
  EXPECT_TRUE(autograd::gradcheck(sum_psw, {w, psw}));
  EXPECT_TRUE(autograd::gradgradcheck(sum_psw, {w, psw}));
  for (EmbeddingBagMode mode : {EmbeddingBagMode(kMean), EmbeddingBagMode(kMax)}) {
    SCOPED_TRACE(mode.name());
    const Fn f = [&](const TensorList& in) {
      return F::embedding_bag(ids, in[0], F::EmbeddingBagFuncOptions().offsets(offs).mode(mode).padding_idx(4));
    };
    EXPECT_TRUE(autograd::gradcheck(f, {w}));
    EXPECT_TRUE(autograd::gradgradcheck(f, {w}));
  }
  const Fn two_d = [&](const TensorList& in) {
    return F::embedding_bag(ids.reshape({2, 5}), in[0], F::EmbeddingBagFuncOptions().mode(kSum));
  };
  EXPECT_TRUE(autograd::gradcheck(two_d, {w}));
}

// ---- semantics worked out by hand ----
TEST(BilinearBagValues, ByHand) {
  // bilinear: x1 = (1, 2), x2 = (3), A = [[1], [2]] (one output): 1*1*3 + 2*2*3 = 15, + bias 0.5
  EXPECT_TRUE(all_close(F::bilinear(make({1, 2}, {1, 2}), make({3}, {1, 1}), make({1, 2}, {1, 2, 1}), make({0.5}, {1})),
                        {15.5}, {1, 1}));
  const Tensor w = make({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  // 2-D input with include_last_offset: the bags' starts 0, 2, 4 with the last one an end, so the
  // last row of the input is in no bag (as PyTorch 1.13).
  EXPECT_TRUE(all_close(F::embedding_bag(bb_idx({0, 1, 2, 3, 3, 3}, {3, 2}), w,
                                         F::EmbeddingBagFuncOptions().mode(kSum).include_last_offset(true)),
                        {10, 12, 50, 52}, {2, 2}));
  // include_last_offset with a last offset short of the input's end: entries after it are in no bag.
  EXPECT_TRUE(all_close(
      F::embedding_bag(bb_idx({0, 1, 2, 3}), w,
                       F::EmbeddingBagFuncOptions().offsets(bb_idx({0, 1, 3})).mode(kSum).include_last_offset(true)),
      {0, 1, 30, 32}, {2, 2}));
  // max per feature, padding left out of a mean's count, an empty bag is 0
  EXPECT_TRUE(all_close(F::embedding_bag(bb_idx({0, 3, 1, 2}), make({0, 5, 1, 1, 2, 0, 4, -1}, {4, 2}),
                                         F::EmbeddingBagFuncOptions().offsets(bb_idx({0, 2, 2})).mode(kMax)),
                        {4, 5, 0, 0, 2, 1}, {3, 2}));
  EXPECT_TRUE(all_close(
      F::embedding_bag(bb_idx({0, 3, 3, 2}), w, F::EmbeddingBagFuncOptions().offsets(bb_idx({0, 3})).padding_idx(3)),
      {0, 1, 20, 21}, {2, 2}));
  // scale_grad_by_freq divides each row's gradient by its index's count in the input (PyTorch's
  // documented rule; PyTorch 1.13's CPU kernel divides row 2's by the count of row 1 here, see
  // gen_bilinear_bag_fixtures.py): counts 2, 1, 3 for rows 1, 2, 3.
  Tensor fw = make({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}).requires_grad_();
  F::embedding_bag(bb_idx({1, 1, 2, 3, 3, 3}), fw,
                   F::EmbeddingBagFuncOptions().offsets(bb_idx({0, 2})).mode(kSum).scale_grad_by_freq(true))
      .backward(make({1, 10, 100, 1000}, {2, 2}));
  EXPECT_TRUE(all_close(fw.grad(), {0, 0, 1, 10, 100, 1000, 100, 1000}, {4, 2}, 1e-12, 1e-12));
  // max_norm: row 1 = (3, 4) has norm 5 > 1: scaled by 1 / (5 + 1e-7) in place; row 0 untouched
  Tensor rw = make({0.3, 0.4, 3, 4, 6, 8}, {3, 2});
  F::embedding_bag(bb_idx({0, 1}), rw, F::EmbeddingBagFuncOptions().offsets(bb_idx({0})).max_norm(1.0));
  const double s = 1.0 / (5.0 + 1e-7);
  EXPECT_TRUE(all_close(rw, {0.3, 0.4, 3 * s, 4 * s, 6, 8}, {3, 2}, 1e-15, 1e-15));
}

// ---- argument errors ----
TEST(BilinearBagErrors, BadArguments) {
  const Tensor x = zeros({2, 3}, kFloat64);
  const Tensor w = zeros({4, 3, 5}, kFloat64);
  EXPECT_TRUE(throws_error(
      [&] {
        F::bilinear(x, zeros({2, 2, 5}, kFloat64), w);
      },
      {"bilinear", "same number of dimensions"}));
  EXPECT_TRUE(throws_error([&] { F::bilinear(x, zeros({3, 5}, kFloat64), w); }, {"bilinear", "batch dimensions"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::bilinear(x, zeros({2, 5}, kFloat64), zeros({4, 3}, kFloat64));
      },
      {"bilinear", "3-D weight"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::bilinear(zeros({2, 2}, kFloat64), zeros({2, 5}, kFloat64), w);
      },
      {"bilinear", "input1", "weight.size(1) = 3"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::bilinear(x, zeros({2, 4}, kFloat64), w);
      },
      {"bilinear", "input2", "weight.size(2) = 5"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::bilinear(x, zeros({2, 5}, kFloat64), w, zeros({5}, kFloat64));
      },
      {"bilinear", "bias of shape [4]"}));
  EXPECT_TRUE(throws_error([&] { F::bilinear(x, zeros({2, 5}), w); }, {"bilinear", "one dtype", "float32 input2"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::bilinear(zeros({}, kFloat64), zeros({}, kFloat64), zeros({1, 1, 1}, kFloat64));
      },
      {"bilinear", "at least 1"}));

  const Tensor e = zeros({5, 2}, kFloat64);
  const Tensor ids = bb_idx({0, 1, 2});
  auto off = [](const std::vector<double>& v) { return F::EmbeddingBagFuncOptions().offsets(bb_idx(v)); };
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(ids, e, off({1})); }, {"embedding_bag", "offsets[0] = 1"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::embedding_bag(ids, e, off({0, 2, 1}));
      },
      {"embedding_bag", "non-decreasing", "offsets[2] = 1 after offsets[1] = 2"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::embedding_bag(ids, e, off({0, 4}));
      },
      {"embedding_bag", "offsets[-1] = 4", "length 3"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::embedding_bag(bb_idx({0, 5}), e, off({0}));
      },
      {"embedding_bag", "index 5", "[0, 5)"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::embedding_bag(bb_idx({-1, 0}), e, off({0}).max_norm(1.0));
      },
      {"embedding_bag", "index -1"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::embedding_bag(make({0, 1}, {2}), e, off({0}));
      },
      {"embedding_bag", "int64 or int32", "float64"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(ids, e.to(kInt64), off({0})); },
                           {"embedding_bag", "floating-point 2-D weight"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::embedding_bag(ids.reshape({1, 3}), e, off({0}));
      },
      {"embedding_bag", "no offsets with a 2-D input"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(ids, e); }, {"embedding_bag", "offsets with a 1-D input"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(zeros({1, 1, 3}, kInt64), e); }, {"embedding_bag", "1-D indices"}));
  EXPECT_TRUE(
      throws_error([&] { F::embedding_bag(ids, e, off({0}).mode(kMean).per_sample_weights(zeros({3}, kFloat64))); },
                   {"embedding_bag", "mode sum only", "mean"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(ids, e, off({0}).mode(kSum).per_sample_weights(zeros({3}))); },
                           {"embedding_bag", "float64", "float32 per_sample_weights"}));
  EXPECT_TRUE(
      throws_error([&] { F::embedding_bag(ids, e, off({0}).mode(kSum).per_sample_weights(zeros({2}, kFloat64))); },
                   {"embedding_bag", "input's shape [3]"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(ids, e, off({0}).sparse(true)); },
                           {"embedding_bag", "sparse", "no sparse tensors"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(ids, e, off({0}).mode(kMax).scale_grad_by_freq(true)); },
                           {"embedding_bag", "scale_grad_by_freq", "max"}));
  EXPECT_TRUE(
      throws_error([&] { F::embedding_bag(ids, e, off({0}).padding_idx(5)); }, {"embedding_bag", "padding_idx 5"}));
  EXPECT_TRUE(throws_error(
      [&] { F::embedding_bag(ids, e, F::EmbeddingBagFuncOptions().offsets(bb_idx({})).include_last_offset(true)); },
      {"embedding_bag", "at least one offset"}));
  EXPECT_TRUE(throws_error([&] { (void)F::EmbeddingBagFuncOptions().mode(kNone); }, {"EmbeddingBag", "kNone"}));
  // Modules: checked on construction, as LibTorch's.
  EXPECT_TRUE(throws_error([] { nn::EmbeddingBag(nn::EmbeddingBagOptions(4, 2).padding_idx(4)); },
                           {"EmbeddingBag", "padding_idx 4"}));
  EXPECT_TRUE(throws_error(
      [] {
        nn::EmbeddingBag(nn::EmbeddingBagOptions(4, 2)._weight(zeros({3, 2})));
      },
      {"EmbeddingBag", "[4, 2]", "[3, 2]"}));
  EXPECT_TRUE(
      throws_error([] { nn::EmbeddingBag::from_pretrained(zeros({3})); }, {"EmbeddingBag::from_pretrained", "[3]"}));
  EXPECT_TRUE(throws_error([] { nn::Bilinear(2, -1, 3); }, {"Bilinear", "in2_features -1"}));
  // sparse(true) constructs (and prints) as in LibTorch; forward refuses it.
  nn::EmbeddingBag sparse_bag(nn::EmbeddingBagOptions(4, 2).sparse(true));
  EXPECT_TRUE(throws_error([&] { sparse_bag(bb_idx({0, 1}, {1, 2})); }, {"embedding_bag", "sparse"}));
}

// ---- options and modules ----
TEST(BilinearBagOptions, DefaultsAndSetters) {
  const nn::BilinearOptions bo(2, 3, 4);
  EXPECT_EQ(bo.in1_features(), 2);
  EXPECT_EQ(bo.in2_features(), 3);
  EXPECT_EQ(bo.out_features(), 4);
  EXPECT_TRUE(bo.bias());
  EXPECT_FALSE(nn::BilinearOptions(2, 3, 4).bias(false).in1_features(5).bias());
  EXPECT_EQ(nn::BilinearOptions(2, 3, 4).in1_features(5).in2_features(6).out_features(7).out_features(), 7);

  const nn::EmbeddingBagOptions eo(10, 3);
  EXPECT_EQ(eo.num_embeddings(), 10);
  EXPECT_EQ(eo.embedding_dim(), 3);
  EXPECT_FALSE(eo.max_norm().has_value());
  EXPECT_EQ(eo.norm_type(), 2.0);
  EXPECT_FALSE(eo.scale_grad_by_freq());
  EXPECT_EQ(eo.mode(), EmbeddingBagMode(kMean));
  EXPECT_FALSE(eo.sparse());
  EXPECT_FALSE(eo._weight().defined());
  EXPECT_FALSE(eo.include_last_offset());
  EXPECT_FALSE(eo.padding_idx().has_value());
  const auto eo2 = nn::EmbeddingBagOptions(10, 3)
                       .max_norm(2.5)
                       .norm_type(3)
                       .scale_grad_by_freq(true)
                       .mode(kSum)
                       .sparse(true)
                       .include_last_offset(true)
                       .padding_idx(4);
  EXPECT_EQ(*eo2.max_norm(), 2.5);
  EXPECT_EQ(eo2.norm_type(), 3.0);
  EXPECT_TRUE(eo2.scale_grad_by_freq());
  EXPECT_EQ(eo2.mode().kind(), EmbeddingBagMode::Kind::Sum);
  EXPECT_TRUE(eo2.sparse());
  EXPECT_TRUE(eo2.include_last_offset());
  EXPECT_EQ(*eo2.padding_idx(), 4);
  EXPECT_EQ(nn::EmbeddingBagOptions(1, 1).mode(kMax).mode().aten_mode(), 2);
  EXPECT_EQ(EmbeddingBagMode(kSum).aten_mode(), 0);
  EXPECT_EQ(EmbeddingBagMode(kMean).aten_mode(), 1);

  const nn::EmbeddingBagFromPretrainedOptions po;
  EXPECT_TRUE(po.freeze());
  EXPECT_FALSE(po.max_norm().has_value());
  EXPECT_EQ(po.norm_type(), 2.0);
  EXPECT_FALSE(po.scale_grad_by_freq());
  EXPECT_EQ(po.mode(), EmbeddingBagMode(kMean));
  EXPECT_FALSE(po.sparse());
  EXPECT_FALSE(po.include_last_offset());
  EXPECT_FALSE(po.padding_idx().has_value());
  EXPECT_FALSE(nn::EmbeddingBagFromPretrainedOptions().freeze(false).freeze());

  const F::EmbeddingBagFuncOptions fo;
  EXPECT_FALSE(fo.offsets().defined());
  EXPECT_FALSE(fo.max_norm().has_value());
  EXPECT_EQ(fo.norm_type(), 2.0);
  EXPECT_FALSE(fo.scale_grad_by_freq());
  EXPECT_EQ(fo.mode(), EmbeddingBagMode(kMean));
  EXPECT_FALSE(fo.sparse());
  EXPECT_FALSE(fo.per_sample_weights().defined());
  EXPECT_FALSE(fo.include_last_offset());
  EXPECT_FALSE(fo.padding_idx().has_value());
  EXPECT_EQ(F::EmbeddingBagFuncOptions().per_sample_weights(ones({3})).per_sample_weights().numel(), 3);
}

TEST(BilinearBagModules, ParametersInitialisationAndForward) {
  manual_seed(7);
  nn::Bilinear b(4, 3, 5);
  ASSERT_EQ(b->named_parameters().size(), 2u);
  EXPECT_EQ(shape_str(b->weight.sizes()), "[5, 4, 3]");
  EXPECT_EQ(shape_str(b->bias.sizes()), "[5]");
  // PyTorch's bound 1 / sqrt(in1_features) = 0.5 for both
  for (const Tensor& p : {b->weight, b->bias}) {
    for (double v : values(p)) {
      EXPECT_LE(std::abs(v), 0.5);
    }
  }
  EXPECT_GT(values(b->weight.abs().max())[0], 0.3);  // spread over the range, not all near 0
  nn::Bilinear nb(nn::BilinearOptions(4, 3, 5).bias(false));
  EXPECT_EQ(nb->parameters().size(), 1u);
  EXPECT_FALSE(nb->bias.defined());
  const Tensor x1 = uniform_sample({2, 4}, 71, -1, 1).to(kFloat32), x2 = uniform_sample({2, 3}, 72, -1, 1).to(kFloat32);
  EXPECT_TRUE(equal(b(x1, x2), F::bilinear(x1, x2, b->weight, b->bias)));
  EXPECT_EQ(shape_str(b(x1, x2).sizes()), "[2, 5]");

  nn::EmbeddingBag e(nn::EmbeddingBagOptions(6, 3).padding_idx(-2).mode(kSum));
  EXPECT_EQ(*e->options.padding_idx(), 4);
  EXPECT_EQ(shape_str(e->weight.sizes()), "[6, 3]");
  EXPECT_TRUE(all_close(e->weight.select(0, 4), {0, 0, 0}, {3}, 0, 0));  // PyTorch zeroes the padding row
  const Tensor ids = bb_idx({0, 4, 5, 1});
  const Tensor offs = bb_idx({0, 2});
  EXPECT_TRUE(
      equal(e(ids, offs),
            F::embedding_bag(ids, e->weight, F::EmbeddingBagFuncOptions().offsets(offs).mode(kSum).padding_idx(4))));
  const Tensor psw = make({1, 2, 3, 4}, {4}, kFloat32);
  EXPECT_TRUE(equal(
      e(ids, offs, psw),
      F::embedding_bag(ids, e->weight,
                       F::EmbeddingBagFuncOptions().offsets(offs).mode(kSum).padding_idx(4).per_sample_weights(psw))));
  EXPECT_TRUE(e->weight.requires_grad());

  const Tensor table = make({1, 2, 3, 4, 5, 6}, {3, 2});
  nn::EmbeddingBag frozen =
      nn::EmbeddingBag::from_pretrained(table, nn::EmbeddingBagFromPretrainedOptions().mode(kMax));
  EXPECT_FALSE(frozen->weight.requires_grad());
  EXPECT_TRUE(equal(frozen->weight, table));
  EXPECT_TRUE(all_close(frozen(bb_idx({0, 2, 1, 1}, {2, 2})), {5, 6, 3, 4}, {2, 2}));
  nn::EmbeddingBag trainable =
      nn::EmbeddingBag::from_pretrained(table, nn::EmbeddingBagFromPretrainedOptions().freeze(false).padding_idx(0));
  EXPECT_TRUE(trainable->weight.requires_grad());
  EXPECT_TRUE(all_close(trainable->weight.select(0, 0), {1, 2}, {2}, 0, 0));  // a given weight keeps its padding row
  // the module's max_norm renormalises its own weight in place
  nn::EmbeddingBag capped(nn::EmbeddingBagOptions(3, 2)._weight(make({3, 4, 0.3, 0.4, 6, 8}, {3, 2})).max_norm(1.0));
  capped(bb_idx({0, 1}, {1, 2}));
  EXPECT_TRUE(
      all_close(capped->weight.detach(), {3 / (5 + 1e-7), 4 / (5 + 1e-7), 0.3, 0.4, 6, 8}, {3, 2}, 1e-15, 1e-15));
  // clone() copies the options and the weight
  auto copy = std::dynamic_pointer_cast<nn::EmbeddingBagImpl>(frozen->clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->options.mode(), EmbeddingBagMode(kMax));
  EXPECT_TRUE(equal(copy->weight, table));
}

// ---- printing ----
template <class T> std::string bag_printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

// repr() of the same modules in PyTorch 1.13.
TEST(BilinearBagPrint, PythonForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::Python);
  EXPECT_EQ(bag_printed(nn::Bilinear(2, 3, 4)), "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)");
  EXPECT_EQ(bag_printed(nn::Bilinear(nn::BilinearOptions(2, 3, 4).bias(false))),
            "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=False)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(10, 3)), "EmbeddingBag(10, 3, mode=mean)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).mode(kSum))), "EmbeddingBag(10, 3, mode=sum)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3)
                                             .max_norm(2.5)
                                             .norm_type(3)
                                             .scale_grad_by_freq(true)
                                             .sparse(true)
                                             .mode(kMax)
                                             .include_last_offset(true)
                                             .padding_idx(4))),
            "EmbeddingBag(10, 3, max_norm=2.5, norm_type=3.0, scale_grad_by_freq=True, mode=max, padding_idx=4)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).max_norm(2).norm_type(1.5))),
            "EmbeddingBag(10, 3, max_norm=2.0, norm_type=1.5, mode=mean)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).padding_idx(-1))),
            "EmbeddingBag(10, 3, mode=mean, padding_idx=9)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag::from_pretrained(
                ones({4, 2}), nn::EmbeddingBagFromPretrainedOptions().mode(kSum).padding_idx(1))),
            "EmbeddingBag(4, 2, mode=sum, padding_idx=1)");
  EXPECT_EQ(bag_printed(nn::Sequential(nn::Bilinear(2, 3, 4), nn::EmbeddingBag(5, 2))),
            "Sequential(\n"
            "  (0): Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)\n"
            "  (1): EmbeddingBag(5, 2, mode=mean)\n"
            ")");
}

// What LibTorch 1.13 prints for the same modules (std::cout << torch::nn::EmbeddingBag(...), run
// against the installed LibTorch), torch:: renamed graft::.
TEST(BilinearBagPrint, LibTorchForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(bag_printed(nn::Bilinear(2, 3, 4)),
            "graft::nn::Bilinear(in1_features=2, in2_features=3, out_features=4, bias=true)");
  EXPECT_EQ(bag_printed(nn::Bilinear(nn::BilinearOptions(2, 3, 4).bias(false))),
            "graft::nn::Bilinear(in1_features=2, in2_features=3, out_features=4, bias=false)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(10, 3)), "graft::nn::EmbeddingBag(num_embeddings=10, embedding_dim=3)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).mode(kSum))),
            "graft::nn::EmbeddingBag(num_embeddings=10, embedding_dim=3, mode=kSum)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3)
                                             .max_norm(2.5)
                                             .norm_type(3)
                                             .scale_grad_by_freq(true)
                                             .sparse(true)
                                             .mode(kMax)
                                             .include_last_offset(true)
                                             .padding_idx(4))),
            "graft::nn::EmbeddingBag(num_embeddings=10, embedding_dim=3, max_norm=2.5, norm_type=3, "
            "scale_grad_by_freq=true, sparse=true, mode=kMax, include_last_offset=true, padding_idx=4)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).max_norm(2).norm_type(1.5))),
            "graft::nn::EmbeddingBag(num_embeddings=10, embedding_dim=3, max_norm=2, norm_type=1.5)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).padding_idx(-1))),
            "graft::nn::EmbeddingBag(num_embeddings=10, embedding_dim=3, padding_idx=9)");
  EXPECT_EQ(bag_printed(nn::EmbeddingBag::from_pretrained(
                ones({4, 2}), nn::EmbeddingBagFromPretrainedOptions().mode(kSum).padding_idx(1))),
            "graft::nn::EmbeddingBag(num_embeddings=4, embedding_dim=2, mode=kSum, padding_idx=1)");
}

}  // namespace
}  // namespace graft::test
