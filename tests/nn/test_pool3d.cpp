// MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d and the indices of
// MaxPool1d (issue 32): values, indices and input gradients against PyTorch 1.13
// (tests/fixtures/pool3d_fixtures.txt, written by gen_pool3d_fixtures.py: this test only reads it),
// gradcheck / gradgradcheck in float64, the argument errors, the modules, and both print styles (the
// expected strings as PyTorch 1.13's repr and LibTorch 1.13's operator<< print them; the LibTorch
// ones are test_api's PrettyPrint* expectations with torch:: read as graft::).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../support/fixture_file.h"
#include "../support/test_util.h"
#include "graft/engine/gradcheck.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

const std::vector<FixtureCase>& pool3d_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("pool3d_fixtures.txt");
  return cases;
}

constexpr double kPool3dTol = 1e-12;

template <size_t D>
ExpandingArray<D> pool_sizes(const FixtureCase& c, const std::string& key) {
  const std::vector<double> v = c.numbers(key);
  std::vector<int64_t> out;
  for (double x : v) out.push_back(static_cast<int64_t>(x));
  if (out.size() == 1) return ExpandingArray<D>(out[0]);  // one value for every dim, as PyTorch's
  return ExpandingArray<D>(out);
}

// The graft call a case names: (output, indices), indices undefined for the average pools.
std::tuple<Tensor, Tensor> pool3d_call(const FixtureCase& c, const Tensor& x) {
  const std::string& fn = c.kind;
  if (fn == "max_pool3d_with_indices")
    return F::max_pool3d_with_indices(x, F::MaxPool3dFuncOptions(pool_sizes<3>(c, "kernel_size"))
                                             .stride(pool_sizes<3>(c, "stride"))
                                             .padding(pool_sizes<3>(c, "padding"))
                                             .dilation(pool_sizes<3>(c, "dilation"))
                                             .ceil_mode(c.flag("ceil_mode")));
  if (fn == "avg_pool3d") {
    auto o = F::AvgPool3dFuncOptions(pool_sizes<3>(c, "kernel_size"))
                 .stride(pool_sizes<3>(c, "stride"))
                 .padding(pool_sizes<3>(c, "padding"))
                 .ceil_mode(c.flag("ceil_mode"))
                 .count_include_pad(c.flag("count_include_pad"));
    if (c.params.count("divisor_override")) o.divisor_override(static_cast<int64_t>(c.number("divisor_override")));
    return {F::avg_pool3d(x, o), Tensor()};
  }
  if (fn == "adaptive_avg_pool3d") return {F::adaptive_avg_pool3d(x, pool_sizes<3>(c, "output_size")), Tensor()};
  if (fn == "adaptive_max_pool3d_with_indices") return F::adaptive_max_pool3d_with_indices(x, pool_sizes<3>(c, "output_size"));
  if (fn == "adaptive_max_pool1d_with_indices") return F::adaptive_max_pool1d_with_indices(x, pool_sizes<1>(c, "output_size"));
  if (fn == "max_pool1d_with_indices")
    return F::max_pool1d_with_indices(x, F::MaxPool1dFuncOptions(pool_sizes<1>(c, "kernel_size"))
                                             .stride(pool_sizes<1>(c, "stride"))
                                             .padding(pool_sizes<1>(c, "padding"))
                                             .dilation(pool_sizes<1>(c, "dilation"))
                                             .ceil_mode(c.flag("ceil_mode")));
  throw std::runtime_error("unknown function " + fn);
}

TEST(Pool3dFixtures, FileLoads) {
  ASSERT_NO_THROW(pool3d_fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : pool3d_fixtures()) ++per_fn[c.kind];
  for (const char* fn : {"max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d_with_indices",
                         "adaptive_max_pool1d_with_indices", "max_pool1d_with_indices"})
    EXPECT_GE(per_fn[fn], 4) << "too few fixtures for " << fn;
}

class Pool3dFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(Pool3dFixture, ValuesIndicesAndGradientsMatchPyTorch) {
  const FixtureCase& c = pool3d_fixtures()[GetParam()];
  const Tensor x = c.tensor("arg0").clone().requires_grad_();
  Tensor out, idx;
  try {
    std::tie(out, idx) = pool3d_call(c, x);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_EQ(out.sizes().vec(), c.tensor("out").sizes().vec());
  EXPECT_TRUE(all_close(out, c.tensor("out"), kPool3dTol, kPool3dTol)) << "value";
  EXPECT_EQ(idx.defined(), c.has("indices"));
  if (idx.defined() && c.has("indices")) {
    EXPECT_EQ(idx.dtype(), kInt64);
    EXPECT_TRUE(all_close(idx.to(kFloat64), c.tensor("indices").to(kFloat64), 0, 0)) << "indices";
  }
  out.backward(c.tensor("grad_output"));
  ASSERT_TRUE(x.grad().defined()) << "no gradient";
  EXPECT_TRUE(all_close(x.grad(), c.tensor("grad0"), kPool3dTol, kPool3dTol)) << "gradient";
}

size_t pool3d_fixture_count() {
  try {
    return pool3d_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Pool3dFixture, ::testing::Range<size_t>(0, pool3d_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return pool3d_fixtures()[info.param].name;
                         });

// ---- gradcheck / gradgradcheck (float64; distinct values, so no max sits on a tie) ----
TEST(Pool3dGradcheck, EachOp) {
  using Fn = autograd::TestFunction;
  const Tensor x5 = uniform_sample({2, 2, 3, 4, 5}, 51, -2.0, 2.0).requires_grad_();
  const Tensor x4 = uniform_sample({2, 4, 3, 5}, 52, -2.0, 2.0).requires_grad_();
  const Tensor x3 = uniform_sample({2, 3, 7}, 53, -2.0, 2.0).requires_grad_();
  const std::vector<std::tuple<std::string, Fn, TensorList>> cases = {
      {"max_pool3d",
       [](const TensorList& in) {
         return F::max_pool3d(in[0], F::MaxPool3dFuncOptions({2, 2, 3}).stride({1, 2, 1}).padding({1, 0, 1}));
       },
       {x5}},
      {"avg_pool3d",
       [](const TensorList& in) {
         return F::avg_pool3d(in[0],
                              F::AvgPool3dFuncOptions({2, 3, 2}).stride(1).padding({1, 1, 0}).count_include_pad(false));
       },
       {x5}},
      {"avg_pool3d_unbatched", [](const TensorList& in) { return F::avg_pool3d(in[0], F::AvgPool3dFuncOptions(2)); }, {x4}},
      {"adaptive_avg_pool3d", [](const TensorList& in) { return F::adaptive_avg_pool3d(in[0], F::AdaptiveAvgPool3dFuncOptions({2, 3, 3})); }, {x5}},
      {"adaptive_max_pool3d", [](const TensorList& in) { return F::adaptive_max_pool3d(in[0], F::AdaptiveMaxPool3dFuncOptions({2, 3, 2})); }, {x5}},
      {"adaptive_max_pool1d", [](const TensorList& in) { return F::adaptive_max_pool1d(in[0], 3); }, {x3}},
      {"max_pool1d_with_indices",
       [](const TensorList& in) {
         return std::get<0>(F::max_pool1d_with_indices(in[0], F::MaxPool1dFuncOptions(3).stride(2).padding(1)));
       },
       {x3}},
  };
  for (const auto& [name, fn, inputs] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(autograd::gradcheck(fn, inputs));
    EXPECT_TRUE(autograd::gradgradcheck(fn, inputs));
  }
}

// ---- worked by hand: the first maximum in (d, h, w) order wins a tie ----
TEST(Pool3dValues, TiesPickTheFirstInDepthRowColumnOrder) {
  // one 2x2x2 window; the maximum 5 at (d, h, w) = (0, 1, 1) and (1, 0, 0): flat 3 and 4
  const Tensor x = make({1, 2, 3, 5, 5, 0, 1, 2}, {1, 1, 2, 2, 2}).requires_grad_();
  auto [y, idx] = F::max_pool3d_with_indices(x, 2);
  EXPECT_TRUE(all_close(y, {5}, {1, 1, 1, 1, 1}, 0, 0));
  EXPECT_EQ(idx.item<int64_t>(), 3);
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 0, 0, 1, 0, 0, 0, 0}, {1, 1, 2, 2, 2}, 0, 0));
  // avg over the same window: (1 + 2 + 3 + 5 + 5 + 0 + 1 + 2) / 8 = 19 / 8; with divisor_override 3: 19 / 3
  EXPECT_TRUE(all_close(F::avg_pool3d(x.detach(), 2), {19.0 / 8}, {1, 1, 1, 1, 1}, 0, 1e-15));
  EXPECT_TRUE(all_close(F::avg_pool3d(x.detach(), F::AvgPool3dFuncOptions(2).divisor_override(3)), {19.0 / 3}, {1, 1, 1, 1, 1},
                        0, 1e-15));
}

// ---- bad inputs: a graft::Error naming the op ----
TEST(Pool3dErrors, ShapesAndArguments) {
  EXPECT_TRUE(throws_error([] { F::max_pool3d(zeros({2, 3, 4}), 2); }, {"max_pool3d", "5-D", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([] { F::avg_pool3d(zeros({1, 4, 4, 4}, TensorOptions(kInt64)), 2); },
                           {"avg_pool3d", "floating-point", "int64"}));
  EXPECT_TRUE(throws_error([] { F::max_pool3d(zeros({1, 1, 4, 4, 4}), F::MaxPool3dFuncOptions(2).padding({0, 2, 0})); },
                           {"max_pool3d", "padding at most half of kernel_size", "padding [0, 2, 0]"}));
  EXPECT_TRUE(throws_error([] { F::max_pool3d(zeros({1, 1, 2, 4, 4}), 3); }, {"max_pool3d", "output size >= 1"}));
  EXPECT_TRUE(throws_error([] { F::avg_pool3d(zeros({1, 1, 4, 4, 4}), F::AvgPool3dFuncOptions(2).stride({1, 0, 1})); },
                           {"avg_pool3d", "positive stride"}));
  EXPECT_TRUE(throws_error([] { F::avg_pool3d(zeros({1, 1, 4, 4, 4}), F::AvgPool3dFuncOptions(2).divisor_override(0)); },
                           {"avg_pool3d", "divisor_override"}));
  EXPECT_TRUE(throws_error([] { F::adaptive_avg_pool3d(zeros({1, 1, 4, 4, 4}), F::AdaptiveAvgPool3dFuncOptions({2, 0, 2})); },
                           {"adaptive_avg_pool3d", "positive output_size", "[2, 0, 2]"}));
  EXPECT_TRUE(throws_error([] { F::adaptive_max_pool3d(zeros({1, 0, 4, 4, 4}), 2); },
                           {"adaptive_max_pool3d", "non-zero sizes"}));
  EXPECT_TRUE(throws_error([] { F::adaptive_max_pool1d(zeros({4}), 2); }, {"adaptive_max_pool1d", "3-D", "unsqueeze"}));
  EXPECT_TRUE(throws_error([] { F::max_pool1d_with_indices(zeros({1, 2, 5}), F::MaxPool1dFuncOptions(2).padding(2)); },
                           {"max_pool1d", "padding at most half"}));
  EXPECT_TRUE(throws_error([] { nn::MaxPool3d(2)(zeros({1, 4, 4})); }, {"max_pool3d", "4-D"}));
}

// ---- the modules: the functionals with their options; a batch of 0 works ----
TEST(Pool3dModules, ForwardIsTheFunctional) {
  const Tensor x = uniform_sample({2, 3, 4, 5, 6}, 61, -1.0, 1.0);
  nn::MaxPool3d mp(nn::MaxPool3dOptions({2, 2, 3}).stride(1).padding({1, 0, 0}).ceil_mode(true));
  auto [y, idx] = mp->forward_with_indices(x);
  EXPECT_TRUE(all_close(mp(x), y, 0, 0));
  EXPECT_TRUE(all_close(y, F::max_pool3d(x, mp->options), 0, 0));
  // each index names the input element holding the output value
  EXPECT_TRUE(all_close(x.reshape({2, 3, 120}).gather(2, idx.reshape({2, 3, -1})).reshape(y.sizes()), y, 0, 0));
  nn::AvgPool3d ap(nn::AvgPool3dOptions(2).count_include_pad(false));
  EXPECT_EQ(ap(x).sizes().vec(), (std::vector<int64_t>{2, 3, 2, 2, 3}));
  EXPECT_EQ(nn::AdaptiveAvgPool3d(nn::AdaptiveAvgPool3dOptions({1, 2, 3}))(x).sizes().vec(),
            (std::vector<int64_t>{2, 3, 1, 2, 3}));
  // a mean over everything: adaptive_avg_pool3d to 1 is the mean of each channel
  EXPECT_TRUE(all_close(nn::AdaptiveAvgPool3d(1)(x).reshape({2, 3}), x.mean({2, 3, 4}), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(nn::AdaptiveMaxPool3d(1)(x).reshape({2, 3}), x.amax({2, 3, 4}), 0, 0));
  const Tensor x3 = uniform_sample({2, 3, 7}, 62, -1.0, 1.0);
  EXPECT_TRUE(all_close(nn::AdaptiveMaxPool1d(1)(x3).reshape({2, 3}), x3.amax({2}), 0, 0));
  auto [y1, i1] = nn::MaxPool1d(nn::MaxPool1dOptions(3).stride(2))->forward_with_indices(x3);
  EXPECT_TRUE(all_close(y1, nn::MaxPool1d(nn::MaxPool1dOptions(3).stride(2))(x3), 0, 0));
  EXPECT_TRUE(all_close(x3.gather(2, i1), y1, 0, 0));
  auto [ya, ia] = nn::AdaptiveMaxPool1d(3)->forward_with_indices(x3);
  EXPECT_TRUE(all_close(x3.gather(2, ia), ya, 0, 0));
  EXPECT_EQ(nn::MaxPool3d(2)(zeros({0, 2, 4, 4, 4})).sizes().vec(), (std::vector<int64_t>{0, 2, 2, 2, 2}));
}

// ---- printing ----
template <class T>
std::string pool3d_printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

// repr() of the same modules in PyTorch 1.13.
TEST(Pool3dPrint, PythonForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::Python);
  EXPECT_EQ(pool3d_printed(nn::MaxPool3d(2)), "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(pool3d_printed(nn::MaxPool3d(nn::MaxPool3dOptions({2, 3, 2}).stride({1, 2, 2}).padding({1, 1, 0}).ceil_mode(true))),
            "MaxPool3d(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=1, ceil_mode=True)");
  EXPECT_EQ(pool3d_printed(nn::AvgPool3d(2)), "AvgPool3d(kernel_size=2, stride=2, padding=0)");
  EXPECT_EQ(pool3d_printed(nn::AvgPool3d(nn::AvgPool3dOptions({3, 2, 3}).stride({2, 1, 2}).padding(1))),
            "AvgPool3d(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1)");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveAvgPool3d(nn::AdaptiveAvgPool3dOptions({2, 3, 4}))),
            "AdaptiveAvgPool3d(output_size=(2, 3, 4))");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveAvgPool3d(2)), "AdaptiveAvgPool3d(output_size=2)");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveMaxPool1d(3)), "AdaptiveMaxPool1d(output_size=3)");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveMaxPool3d(nn::AdaptiveMaxPool3dOptions({5, 6, 7}))),
            "AdaptiveMaxPool3d(output_size=(5, 6, 7))");
}

// LibTorch 1.13's test_api PrettyPrintMaxPool / AvgPool / AdaptiveMaxPool / AdaptiveAvgPool.
TEST(Pool3dPrint, LibTorchForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(pool3d_printed(nn::MaxPool3d(5)),
            "graft::nn::MaxPool3d(kernel_size=[5, 5, 5], stride=[5, 5, 5], padding=[0, 0, 0], dilation=[1, 1, 1], "
            "ceil_mode=false)");
  EXPECT_EQ(pool3d_printed(nn::MaxPool3d(nn::MaxPool3dOptions(5).stride(2))),
            "graft::nn::MaxPool3d(kernel_size=[5, 5, 5], stride=[2, 2, 2], padding=[0, 0, 0], dilation=[1, 1, 1], "
            "ceil_mode=false)");
  EXPECT_EQ(pool3d_printed(nn::AvgPool3d(5)),
            "graft::nn::AvgPool3d(kernel_size=[5, 5, 5], stride=[5, 5, 5], padding=[0, 0, 0])");
  EXPECT_EQ(pool3d_printed(nn::AvgPool3d(nn::AvgPool3dOptions(5).stride(2))),
            "graft::nn::AvgPool3d(kernel_size=[5, 5, 5], stride=[2, 2, 2], padding=[0, 0, 0])");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveMaxPool1d(5)), "graft::nn::AdaptiveMaxPool1d(output_size=5)");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveMaxPool1d(nn::AdaptiveMaxPool1dOptions(3))),
            "graft::nn::AdaptiveMaxPool1d(output_size=3)");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveMaxPool3d(5)), "graft::nn::AdaptiveMaxPool3d(output_size=[5, 5, 5])");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveMaxPool3d(nn::AdaptiveMaxPool3dOptions({5, 6, 7}))),
            "graft::nn::AdaptiveMaxPool3d(output_size=[5, 6, 7])");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveAvgPool3d(5)), "graft::nn::AdaptiveAvgPool3d(output_size=[5, 5, 5])");
  EXPECT_EQ(pool3d_printed(nn::AdaptiveAvgPool3d(nn::AdaptiveAvgPool3dOptions({5, 6, 7}))),
            "graft::nn::AdaptiveAvgPool3d(output_size=[5, 6, 7])");
}

}  // namespace
}  // namespace graft::test
