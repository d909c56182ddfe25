// MaxUnpool1d/2d/3d, F::pad's 3-D modes with ReflectionPad3d / ReplicationPad3d / ConstantPad3d, and
// LPPool1d/2d, and the adaptive pools' output_size with Nones (issue 32): outputs and input gradients against PyTorch 1.13
// (tests/fixtures/unpool_pad3d_fixtures.txt, written by gen_unpool_pad3d_fixtures.py: this test only
// reads it), values worked out by hand, gradcheck / gradgradcheck in float64, argument errors, the
// modules, and both print styles (PyTorch 1.13's repr; LibTorch 1.13's operator<< as test_api's
// PrettyPrint* expectations, torch:: read as graft::).
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

const std::vector<FixtureCase>& unpool_pad3d_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("unpool_pad3d_fixtures.txt");
  return cases;
}

constexpr double kTol = 1e-12;

std::vector<int64_t> ints(const FixtureCase& c, const std::string& key) {
  std::vector<int64_t> out;
  for (double v : c.numbers(key)) out.push_back(static_cast<int64_t>(v));
  return out;
}

template <size_t D>
ExpandingArray<D> sizes(const FixtureCase& c, const std::string& key) {
  return ExpandingArray<D>(ints(c, key));
}

template <size_t D>
F::MaxUnpoolFuncOptions<D> unpool_options(const FixtureCase& c) {
  F::MaxUnpoolFuncOptions<D> o(sizes<D>(c, "kernel_size"));
  o.stride(sizes<D>(c, "stride")).padding(sizes<D>(c, "padding"));
  if (c.params.count("output_size")) o.output_size(ints(c, "output_size"));
  return o;
}

PadMode pad_mode(const std::string& m) {
  if (m == "reflect") return kReflect;
  if (m == "replicate") return kReplicate;
  if (m == "circular") return kCircular;
  return kConstant;
}

Tensor fixture_call(const FixtureCase& c, const Tensor& x) {
  const std::string& fn = c.kind;
  if (fn == "max_unpool1d") return F::max_unpool1d(x, c.tensor("arg1"), unpool_options<1>(c));
  if (fn == "max_unpool2d") return F::max_unpool2d(x, c.tensor("arg1"), unpool_options<2>(c));
  if (fn == "max_unpool3d") return F::max_unpool3d(x, c.tensor("arg1"), unpool_options<3>(c));
  if (fn == "pad") {
    F::PadFuncOptions o(ints(c, "pad"));
    o.mode(pad_mode(c.param("mode")));
    if (c.params.count("value")) o.value(c.number("value"));
    return F::pad(x, o);
  }
  if (fn == "lp_pool1d")
    return F::lp_pool1d(x, F::LPPool1dFuncOptions(c.number("norm_type"), sizes<1>(c, "kernel_size"))
                               .stride(sizes<1>(c, "stride"))
                               .ceil_mode(c.flag("ceil_mode")));
  if (fn == "lp_pool2d")
    return F::lp_pool2d(x, F::LPPool2dFuncOptions(c.number("norm_type"), sizes<2>(c, "kernel_size"))
                               .stride(sizes<2>(c, "stride"))
                               .ceil_mode(c.flag("ceil_mode")));
  throw std::runtime_error("unknown function " + fn);
}

TEST(UnpoolPad3dFixtures, FileLoads) {
  ASSERT_NO_THROW(unpool_pad3d_fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : unpool_pad3d_fixtures()) ++per_fn[c.kind];
  for (const char* fn : {"max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d"})
    EXPECT_GE(per_fn[fn], 3) << "too few fixtures for " << fn;
  EXPECT_GE(per_fn["pad"], 8);
}

class UnpoolPad3dFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(UnpoolPad3dFixture, OutputsAndGradientsMatchPyTorch) {
  const FixtureCase& c = unpool_pad3d_fixtures()[GetParam()];
  const Tensor x = c.tensor("arg0").clone().requires_grad_();
  Tensor out;
  try {
    out = fixture_call(c, x);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  ASSERT_EQ(out.sizes().vec(), c.tensor("out").sizes().vec());
  EXPECT_TRUE(all_close(out, c.tensor("out"), kTol, kTol)) << "output";
  out.backward(c.tensor("grad_output"));
  ASSERT_TRUE(x.grad().defined()) << "no gradient";
  EXPECT_TRUE(all_close(x.grad(), c.tensor("grad0"), kTol, kTol)) << "gradient";
}

size_t fixture_count() {
  try {
    return unpool_pad3d_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, UnpoolPad3dFixture, ::testing::Range<size_t>(0, fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return unpool_pad3d_fixtures()[info.param].name;
                         });

// ---- by hand ----
// One index twice (overlapping windows): the value lands once, not summed; each input position's
// gradient is the output gradient at its index (PyTorch's max_unpool backward, a gather).
TEST(MaxUnpoolValues, DuplicateIndicesWriteOnceAndEachGetsTheGradient) {
  const Tensor x = graft::tensor({5.0, 5.0, 7.0}, kFloat64).reshape({1, 1, 3}).requires_grad_();
  const Tensor idx = graft::tensor({1, 1, 4}, kInt64).reshape({1, 1, 3});
  const Tensor y = F::max_unpool1d(x, idx, F::MaxUnpool1dFuncOptions(3).stride(2));  // (3 - 1) 2 + 3 = 7
  EXPECT_TRUE(all_close(y, graft::tensor({0.0, 5.0, 0.0, 0.0, 7.0, 0.0, 0.0}, kFloat64).reshape({1, 1, 7}), 0, 0));
  y.backward(graft::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0}, kFloat64).reshape({1, 1, 7}));
  EXPECT_TRUE(all_close(x.grad(), graft::tensor({2.0, 2.0, 5.0}, kFloat64).reshape({1, 1, 3}), 0, 0));
}

// MaxPool2d then MaxUnpool2d keeps each window's maximum in place and zeroes the rest.
TEST(MaxUnpoolValues, RoundTripOfMaxPool2d) {
  const Tensor x = graft::tensor({1.0, 2.0, 3.0, 4.0, 8.0, 6.0, 7.0, 5.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 16.0, 15.0},
                                 kFloat64)
                       .reshape({1, 1, 4, 4});
  nn::MaxPool2d pool(nn::MaxPool2dOptions(2));
  nn::MaxUnpool2d unpool(nn::MaxUnpool2dOptions(2));
  auto [y, idx] = pool->forward_with_indices(x);
  const Tensor back = unpool(y, idx);
  // Windows [1 2; 8 6], [3 4; 7 5], [9 10; 13 14], [11 12; 16 15]: maxima 8, 7, 14, 16.
  const Tensor want = graft::tensor({0.0, 0.0, 0.0, 0.0, 8.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 14.0, 16.0, 0.0},
                                    kFloat64)
                          .reshape({1, 1, 4, 4});
  EXPECT_TRUE(all_close(back, want, 0, 0));
  // output_size (N, C, H, W) or (H, W): 5 x 5 is within stride of the default 4 x 4.
  EXPECT_EQ(unpool(y, idx, std::vector<int64_t>{1, 1, 5, 5}).sizes().vec(), (std::vector<int64_t>{1, 1, 5, 5}));
  EXPECT_EQ(unpool(y, idx, std::vector<int64_t>{5, 5}).sizes().vec(), (std::vector<int64_t>{1, 1, 5, 5}));
}

// Each mode of the 3-D pad on a 1 x 1 x 2 x 1 x 2 input [[[a b]], [[c d]]] (D = 2, H = 1, W = 2).
TEST(Pad3dValues, ModesByHand) {
  const Tensor x = graft::tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).reshape({1, 1, 2, 1, 2});
  auto padded = [&](PadMode m) { return F::pad(x, F::PadFuncOptions({1, 0, 0, 0, 0, 1}).mode(m)); };
  // W: one on the left; D: one at the back. Output (1, 1, 3, 1, 3).
  EXPECT_TRUE(all_close(padded(kReflect),
                        graft::tensor({2.0, 1.0, 2.0, 4.0, 3.0, 4.0, 2.0, 1.0, 2.0}, kFloat64).reshape({1, 1, 3, 1, 3}),
                        0, 0));
  EXPECT_TRUE(all_close(padded(kReplicate),
                        graft::tensor({1.0, 1.0, 2.0, 3.0, 3.0, 4.0, 3.0, 3.0, 4.0}, kFloat64).reshape({1, 1, 3, 1, 3}),
                        0, 0));
  EXPECT_TRUE(all_close(padded(kCircular),
                        graft::tensor({2.0, 1.0, 2.0, 4.0, 3.0, 4.0, 2.0, 1.0, 2.0}, kFloat64).reshape({1, 1, 3, 1, 3}),
                        0, 0));
  // Unbatched circular (graft accepts it; PyTorch 1.13's F.pad wants a batch): the batched result.
  EXPECT_TRUE(all_close(F::pad(x.squeeze(0), F::PadFuncOptions({1, 0, 0, 0, 0, 1}).mode(kCircular)),
                        padded(kCircular).squeeze(0), 0, 0));
}

// LPPool: (sum of x^p)^(1/p) over each window.
TEST(LPPoolValues, ByHand) {
  const Tensor x = graft::tensor({3.0, 4.0, 1.0, 2.0}, kFloat64).reshape({1, 1, 4});
  EXPECT_TRUE(all_close(F::lp_pool1d(x, F::LPPool1dFuncOptions(2, 2)),
                        graft::tensor({5.0, std::sqrt(5.0)}, kFloat64).reshape({1, 1, 2}), 1e-15, 1e-15));
  EXPECT_TRUE(all_close(nn::LPPool2d(1, 2)(x.reshape({1, 1, 2, 2})), graft::tensor({10.0}, kFloat64).reshape({1, 1, 1, 1}),
                        1e-15, 1e-15));
}

// Adaptive pools' output_size with graft::nullopt (LibTorch's ExpandingArrayWithOptionalElem): a None
// keeps the input's size in that dim. [[1 2 3], [4 5 6]] to (1, None): column means and maxima.
TEST(AdaptiveOptionalSize, NoneKeepsTheInputSize) {
  const Tensor x = graft::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat64).reshape({1, 1, 2, 3});
  EXPECT_TRUE(all_close(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, graft::nullopt}))(x),
                        graft::tensor({2.5, 3.5, 4.5}, kFloat64).reshape({1, 1, 1, 3}), 0, 0));
  EXPECT_TRUE(all_close(F::adaptive_max_pool2d(x, F::AdaptiveMaxPool2dFuncOptions({1, graft::nullopt})),
                        graft::tensor({4.0, 5.0, 6.0}, kFloat64).reshape({1, 1, 1, 3}), 0, 0));
  EXPECT_EQ(nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({graft::nullopt, graft::nullopt}))(x).sizes().vec(),
            (std::vector<int64_t>{1, 1, 2, 3}));
  const Tensor v = x.reshape({1, 1, 2, 1, 3});  // D = 2, H = 1, W = 3: the depth means of each column
  EXPECT_TRUE(all_close(F::adaptive_avg_pool3d(v, F::AdaptiveAvgPool3dFuncOptions({1, graft::nullopt, graft::nullopt})),
                        graft::tensor({2.5, 3.5, 4.5}, kFloat64).reshape({1, 1, 1, 1, 3}), 0, 0));
  EXPECT_TRUE(all_close(nn::AdaptiveMaxPool3d(nn::AdaptiveMaxPool3dOptions({graft::nullopt, 1, 1}))(v),
                        graft::tensor({3.0, 6.0}, kFloat64).reshape({1, 1, 2, 1, 1}), 0, 0));
}

// ---- gradcheck / gradgradcheck (float64) ----
TEST(UnpoolPad3dGradcheck, EachOp) {
  using Fn = autograd::TestFunction;
  const Tensor x5 = uniform_sample({2, 2, 3, 4, 5}, 61, -2.0, 2.0).requires_grad_();
  const Tensor x4 = uniform_sample({2, 3, 4, 5}, 62, 0.5, 2.0).requires_grad_();
  const Tensor x3 = uniform_sample({2, 3, 8}, 63, -2.0, 2.0).requires_grad_();
  // Indices of non-overlapping max pools: distinct within each plane.
  const Tensor i3 = std::get<1>(F::max_pool1d_with_indices(uniform_sample({2, 3, 16}, 64, -1.0, 1.0), 2));
  const Tensor i4 = std::get<1>(F::max_pool2d_with_indices(uniform_sample({2, 3, 8, 10}, 65, -1.0, 1.0), 2));
  const Tensor i5 = std::get<1>(F::max_pool3d_with_indices(uniform_sample({2, 2, 6, 8, 10}, 66, -1.0, 1.0), 2));
  const std::vector<std::tuple<std::string, Fn, TensorList>> cases = {
      {"max_unpool1d", [i3](const TensorList& in) { return F::max_unpool1d(in[0], i3, 2); }, {x3}},
      {"max_unpool2d", [i4](const TensorList& in) { return F::max_unpool2d(in[0], i4, 2); }, {x4}},
      {"max_unpool3d", [i5](const TensorList& in) { return F::max_unpool3d(in[0], i5, 2); }, {x5}},
      {"pad3d_reflect",
       [](const TensorList& in) { return F::pad(in[0], F::PadFuncOptions({1, 2, 3, 0, 2, 1}).mode(kReflect)); },
       {x5}},
      {"pad3d_replicate",
       [](const TensorList& in) { return F::pad(in[0], F::PadFuncOptions({2, 2, 1, 0, 3, 1}).mode(kReplicate)); },
       {x5}},
      {"pad3d_circular",
       [](const TensorList& in) { return F::pad(in[0], F::PadFuncOptions({1, 2, 0, 3, 2, 1}).mode(kCircular)); },
       {x5}},
      {"lp_pool1d", [](const TensorList& in) { return F::lp_pool1d(in[0], F::LPPool1dFuncOptions(2, 3).stride(2)); },
       {x3}},
      {"lp_pool2d",
       [](const TensorList& in) { return F::lp_pool2d(in[0], F::LPPool2dFuncOptions(1.5, {2, 3}).ceil_mode(true)); },
       {x4}},
  };
  for (const auto& [name, fn, inputs] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(autograd::gradcheck(fn, inputs));
    EXPECT_TRUE(autograd::gradgradcheck(fn, inputs));
  }
}

// ---- errors ----
TEST(UnpoolPad3dErrors, ShapesAndArguments) {
  const Tensor x = graft::ones({1, 1, 2}, kFloat64);
  const Tensor idx = graft::tensor({0, 9}, kInt64).reshape({1, 1, 2});
  EXPECT_TRUE(throws_error([&] { F::max_unpool1d(x, idx, 2); }, {"max_unpool1d", "within the output plane"}));
  EXPECT_TRUE(throws_error([&] { F::max_unpool1d(x, idx.reshape({1, 2, 1}), 2); }, {"max_unpool1d", "input's shape"}));
  EXPECT_TRUE(throws_error([&] { F::max_unpool1d(x, idx.to(kFloat64), 2); }, {"max_unpool1d", "int64"}));
  EXPECT_TRUE(throws_error(
      [&] { F::max_unpool1d(x, graft::zeros({1, 1, 2}, kInt64), F::MaxUnpool1dFuncOptions(2).output_size(std::vector<int64_t>{7})); },
      {"max_unpool1d", "between 2 and 6"}));
  EXPECT_TRUE(throws_error(
      [&] { F::max_unpool2d(x.reshape({1, 2}), graft::zeros({1, 2}, kInt64), 2); }, {"max_unpool2d", "-D (N, C, *) input"}));
  const Tensor v = graft::ones({1, 1, 2, 3, 3}, kFloat64);
  EXPECT_TRUE(throws_error([&] { F::pad(v, F::PadFuncOptions({1, 1, 1, 1, 2, 0}).mode(kReflect)); }, {"reflection_pad3d", "smaller than the padded dim"}));
  EXPECT_TRUE(throws_error([&] { F::pad(v.reshape({2, 3, 3}), F::PadFuncOptions({1, 1, 1, 1, 1, 1}).mode(kReplicate)); },
                           {"pad", "4-D or 5-D input for 6 pad values"}));
  EXPECT_TRUE(throws_error([&] { F::lp_pool1d(x, F::LPPool1dFuncOptions(0, 2)); }, {"lp_pool1d", "non-zero norm_type"}));
}

// ---- modules and printing ----
TEST(UnpoolPad3dModules, ForwardIsTheFunctional) {
  const Tensor x = uniform_sample({1, 2, 3, 4, 3}, 71, -1.0, 1.0);
  EXPECT_TRUE(all_close(nn::ReflectionPad3d(1)(x), F::pad(x, F::PadFuncOptions({1, 1, 1, 1, 1, 1}).mode(kReflect)), 0, 0));
  EXPECT_TRUE(all_close(nn::ReplicationPad3d(nn::ReplicationPad3dOptions({1, 2, 0, 1, 2, 0}))(x),
                        F::pad(x, F::PadFuncOptions({1, 2, 0, 1, 2, 0}).mode(kReplicate)), 0, 0));
  EXPECT_TRUE(all_close(nn::ConstantPad3d(2, 3.5)(x), F::pad(x, F::PadFuncOptions({2, 2, 2, 2, 2, 2}).value(3.5)), 0, 0));
  EXPECT_EQ(nn::ConstantPad3d(2, 3.5)(x).sizes().vec(), (std::vector<int64_t>{1, 2, 7, 8, 7}));
  const Tensor y = uniform_sample({2, 3, 9}, 72, 0.1, 1.0);
  EXPECT_TRUE(all_close(nn::LPPool1d(nn::LPPool1dOptions(3, 2).stride(3))(y),
                        F::lp_pool1d(y, F::LPPool1dFuncOptions(3, 2).stride(3)), 0, 0));
}

template <class T>
std::string printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

// repr() of the same modules in PyTorch 1.13 (LPPool with its stride set: unset, PyTorch prints None).
TEST(UnpoolPad3dPrint, PythonForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::Python);
  EXPECT_EQ(printed(nn::MaxUnpool1d(5)), "MaxUnpool1d(kernel_size=(5,), stride=(5,), padding=(0,))");
  EXPECT_EQ(printed(nn::MaxUnpool2d(nn::MaxUnpool2dOptions({5, 6}).stride({3, 4}).padding({1, 2}))),
            "MaxUnpool2d(kernel_size=(5, 6), stride=(3, 4), padding=(1, 2))");
  EXPECT_EQ(printed(nn::MaxUnpool3d(2)), "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))");
  EXPECT_EQ(printed(nn::LPPool2d(nn::LPPool2dOptions(1, {3, 4}).stride({5, 6}).ceil_mode(true))),
            "LPPool2d(norm_type=1.0, kernel_size=(3, 4), stride=(5, 6), ceil_mode=True)");
  EXPECT_EQ(printed(nn::ReflectionPad3d(nn::ReflectionPad3dOptions({1, 2, 3, 4, 5, 6}))),
            "ReflectionPad3d((1, 2, 3, 4, 5, 6))");
  EXPECT_EQ(printed(nn::ReplicationPad3d(1)), "ReplicationPad3d((1, 1, 1, 1, 1, 1))");
  EXPECT_EQ(printed(nn::ConstantPad3d(nn::ConstantPad3dOptions({1, 2, 1, 2, 1, 2}, 3.5))),
            "ConstantPad3d(padding=(1, 2, 1, 2, 1, 2), value=3.5)");
  EXPECT_EQ(printed(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({5, graft::nullopt}))),
            "AdaptiveAvgPool2d(output_size=(5, None))");
  EXPECT_EQ(printed(nn::AdaptiveMaxPool3d(nn::AdaptiveMaxPool3dOptions({graft::nullopt, graft::nullopt, graft::nullopt}))),
            "AdaptiveMaxPool3d(output_size=(None, None, None))");
}

// LibTorch 1.13's test_api PrettyPrintMaxUnpool / LPPool / ReplicationPad / ConstantPad / Adaptive*Pool.
TEST(UnpoolPad3dPrint, LibTorchForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::MaxUnpool1d(5)), "graft::nn::MaxUnpool1d(kernel_size=5, stride=5, padding=0)");
  EXPECT_EQ(printed(nn::MaxUnpool1d(nn::MaxUnpool1dOptions(5).stride(3).padding(1))),
            "graft::nn::MaxUnpool1d(kernel_size=5, stride=3, padding=1)");
  EXPECT_EQ(printed(nn::MaxUnpool2d(nn::MaxUnpool2dOptions({5, 6}).stride({3, 4}).padding({1, 2}))),
            "graft::nn::MaxUnpool2d(kernel_size=[5, 6], stride=[3, 4], padding=[1, 2])");
  EXPECT_EQ(printed(nn::MaxUnpool2d(std::vector<int64_t>{5, 6})),
            "graft::nn::MaxUnpool2d(kernel_size=[5, 6], stride=[5, 6], padding=[0, 0])");
  EXPECT_EQ(printed(nn::LPPool1d(2, 5)), "graft::nn::LPPool1d(norm_type=2, kernel_size=5, stride=5, ceil_mode=false)");
  EXPECT_EQ(printed(nn::LPPool2d(nn::LPPool2dOptions(1, std::vector<int64_t>({3, 4})).stride({5, 6}).ceil_mode(true))),
            "graft::nn::LPPool2d(norm_type=1, kernel_size=[3, 4], stride=[5, 6], ceil_mode=true)");
  EXPECT_EQ(printed(nn::ReplicationPad3d(nn::ReplicationPad3dOptions({1, 2, 1, 2, 1, 2}))),
            "graft::nn::ReplicationPad3d(padding=[1, 2, 1, 2, 1, 2])");
  EXPECT_EQ(printed(nn::ReflectionPad3d(1)), "graft::nn::ReflectionPad3d(padding=[1, 1, 1, 1, 1, 1])");
  EXPECT_EQ(printed(nn::ConstantPad3d(nn::ConstantPad3dOptions(1, 3.5))),
            "graft::nn::ConstantPad3d(padding=[1, 1, 1, 1, 1, 1], value=3.5)");
  // PrettyPrintAdaptiveMaxPool / PrettyPrintAdaptiveAvgPool with Nones.
  EXPECT_EQ(printed(nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({5, graft::nullopt}))),
            "graft::nn::AdaptiveMaxPool2d(output_size=[5, None])");
  EXPECT_EQ(printed(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({graft::nullopt, graft::nullopt}))),
            "graft::nn::AdaptiveAvgPool2d(output_size=[None, None])");
  EXPECT_EQ(printed(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({5, 6}))),
            "graft::nn::AdaptiveAvgPool2d(output_size=[5, 6])");
  EXPECT_EQ(printed(nn::AdaptiveMaxPool3d(nn::AdaptiveMaxPool3dOptions({5, graft::nullopt, 7}))),
            "graft::nn::AdaptiveMaxPool3d(output_size=[5, None, 7])");
  EXPECT_EQ(printed(nn::AdaptiveAvgPool3d(nn::AdaptiveAvgPool3dOptions({graft::nullopt, graft::nullopt, graft::nullopt}))),
            "graft::nn::AdaptiveAvgPool3d(output_size=[None, None, None])");
}

}  // namespace
}  // namespace graft::test
