// Fold and Unfold (issue 32): F::unfold / F::fold values and input gradients against PyTorch 1.13
// (tests/fixtures/fold_fixtures.txt, written by gen_fold_fixtures.py: this test only reads it),
// hand-worked values (a 3 x 3 image's blocks, fold(unfold(x)) = x times the count of blocks covering
// each pixel), gradcheck / gradgradcheck in float64, the argument errors, the options, the modules,
// both print styles (the strings PyTorch 1.13 and LibTorch 1.13 print) and shapes on meta tensors.
#include <gtest/gtest.h>

#include <array>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../support/fixture_file.h"
#include "../support/test_util.h"
#include "graft/engine/gradcheck.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

const std::vector<FixtureCase>& fold_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("fold_fixtures.txt");
  return cases;
}

ExpandingArray<2> fold_pair(const FixtureCase& c, const std::string& key) {
  const std::vector<double> v = c.numbers(key);
  return ExpandingArray<2>({static_cast<int64_t>(v.at(0)), static_cast<int64_t>(v.at(1))});
}

Tensor fold_call(const FixtureCase& c, const Tensor& x) {
  if (c.kind == "unfold")
    return F::unfold(x, F::UnfoldFuncOptions(fold_pair(c, "kernel_size"))
                            .dilation(fold_pair(c, "dilation"))
                            .padding(fold_pair(c, "padding"))
                            .stride(fold_pair(c, "stride")));
  return F::fold(x, F::FoldFuncOptions(fold_pair(c, "output_size"), fold_pair(c, "kernel_size"))
                        .dilation(fold_pair(c, "dilation"))
                        .padding(fold_pair(c, "padding"))
                        .stride(fold_pair(c, "stride")));
}

TEST(FoldFixtures, FileLoads) {
  ASSERT_NO_THROW(fold_fixtures());
  int unfolds = 0, folds = 0, unbatched = 0;
  for (const auto& c : fold_fixtures()) {
    (c.kind == "unfold" ? unfolds : folds) += 1;
    if (c.tensor("arg0").dim() == (c.kind == "unfold" ? 3 : 2)) ++unbatched;
  }
  EXPECT_GE(unfolds, 4);
  EXPECT_GE(folds, 4);
  EXPECT_GE(unbatched, 2);
}

class FoldFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(FoldFixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = fold_fixtures()[GetParam()];
  const Tensor x = c.tensor("arg0").clone().requires_grad_();
  Tensor out;
  try {
    out = fold_call(c, x);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  // unfold copies values and fold adds them in ATen's col2im order: the same bits.
  EXPECT_TRUE(all_close(out, c.tensor("out"), 0, 0)) << "value";
  out.backward(c.tensor("grad_output"));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(all_close(x.grad(), c.tensor("grad0"), 1e-14, 1e-14)) << "gradient";
  // float32 gives the same values to float32's precision
  const Tensor out32 = fold_call(c, c.tensor("arg0").to(kFloat32));
  EXPECT_EQ(out32.dtype(), kFloat32);
  EXPECT_TRUE(all_close(out32.to(kFloat64), c.tensor("out"), 1e-5, 1e-5)) << "float32 value";
}

size_t fold_fixture_count() {
  try {
    return fold_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, FoldFixture, ::testing::Range<size_t>(0, fold_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return fold_fixtures()[info.param].name; });

// ---- hand-worked values ----
// The 3 x 3 image 1..9 in 2 x 2 blocks: four blocks (top-left, top-right, bottom-left,
// bottom-right), each a column; row k holds kernel tap k = (i, j) of every block.
TEST(FoldValues, UnfoldByHand) {
  const Tensor x = make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  EXPECT_TRUE(all_close(F::unfold(x, F::UnfoldFuncOptions(2)),
                        {1, 2, 4, 5, /**/ 2, 3, 5, 6, /**/ 4, 5, 7, 8, /**/ 5, 6, 8, 9}, {1, 4, 4}, 0, 0));
  // padding 1, kernel 1, stride 2: the padded 5 x 5 image's positions 0, 2, 4 in each dim
  EXPECT_TRUE(all_close(F::unfold(x, F::UnfoldFuncOptions(1).padding(1).stride(2)), {0, 0, 0, 0, 5, 0, 0, 0, 0},
                        {1, 1, 9}, 0, 0));
  // dilation 2 on a 3 x 3 image: one block, the four corners
  EXPECT_TRUE(all_close(F::unfold(x, F::UnfoldFuncOptions(2).dilation(2)), {1, 3, 7, 9}, {1, 4, 1}, 0, 0));
  // fold adds the blocks back: four 2 x 2 blocks of ones over a 3 x 3 image count the overlaps
  EXPECT_TRUE(all_close(F::fold(ones({4, 4}, kFloat64), F::FoldFuncOptions(3, 2)), {1, 2, 1, 2, 4, 2, 1, 2, 1},
                        {1, 3, 3}, 0, 0));
}

// fold(unfold(x)) is x times the number of blocks covering each pixel (Note [Fold and unfold are
// adjoint] in src/ops/fold.cpp), counted by hand for three geometries.
TEST(FoldValues, FoldOfUnfoldCountsBlocks) {
  const Tensor x = uniform_sample({2, 3, 3, 3}, 41, -2, 2);
  // kernel 2, stride 1: the corners lie in 1 block, the edges' middles in 2, the centre in 4
  const Tensor c1 = make({1, 2, 1, 2, 4, 2, 1, 2, 1}, {1, 1, 3, 3});
  EXPECT_TRUE(all_close(F::fold(F::unfold(x, F::UnfoldFuncOptions(2)), F::FoldFuncOptions(3, 2)), x * c1, 1e-15, 0));
  // kernel 3, padding 1: rows 0 and 2 lie in 2 blocks' rows, row 1 in 3 (columns alike)
  const Tensor c2 = make({4, 6, 4, 6, 9, 6, 4, 6, 4}, {1, 1, 3, 3});
  EXPECT_TRUE(all_close(F::fold(F::unfold(x, F::UnfoldFuncOptions(3).padding(1)), F::FoldFuncOptions(3, 3).padding(1)),
                        x * c2, 1e-14, 0));
  // 4 x 4, kernel 2, dilation 2: blocks at rows {0, 2} and {1, 3}, each pixel in exactly one
  const Tensor y = uniform_sample({3, 4, 4}, 42, -2, 2);
  const Tensor back = F::fold(F::unfold(y, F::UnfoldFuncOptions(2).dilation(2)), F::FoldFuncOptions(4, 2).dilation(2));
  EXPECT_TRUE(all_close(back, y, 0, 0));
}

TEST(FoldValues, EmptyBatch) {
  const Tensor y = F::unfold(zeros({0, 2, 4, 4}, kFloat64), F::UnfoldFuncOptions(2));
  EXPECT_EQ(y.sizes(), IntArrayRef({0, 8, 9}));
  const Tensor z = F::fold(zeros({0, 8, 9}, kFloat64), F::FoldFuncOptions(4, 2));
  EXPECT_EQ(z.sizes(), IntArrayRef({0, 2, 4, 4}));
}

// ---- gradcheck / gradgradcheck (float64) ----
TEST(FoldGradcheck, BothOps) {
  using Fn = autograd::TestFunction;
  const Tensor img = uniform_sample({2, 2, 5, 4}, 51, -1, 1).requires_grad_();
  const Tensor img3 = uniform_sample({2, 4, 5}, 52, -1, 1).requires_grad_();
  // (5 + 2 - 2 * 1 - 1) / 2 + 1 = 3 rows, (4 + 0 - 2 - 1) / 1 + 1 = 2 columns of blocks
  const auto uo = F::UnfoldFuncOptions({2, 3}).dilation({2, 1}).padding({1, 0}).stride({2, 1});
  const auto fo = F::FoldFuncOptions({5, 4}, {2, 3}).dilation({2, 1}).padding({1, 0}).stride({2, 1});
  const Tensor cols = uniform_sample({2, 12, 6}, 53, -1, 1).requires_grad_();
  // 3 channels of 1 x 2 blocks over 3 x 4 at stride 2: (3 - 1) / 2 + 1 = 2 by (4 - 2) / 2 + 1 = 2 blocks
  const Tensor cols2 = uniform_sample({6, 4}, 54, -1, 1).requires_grad_();
  const std::vector<std::tuple<std::string, Fn, TensorList>> cases = {
      {"unfold", [&](const TensorList& in) { return F::unfold(in[0], uo); }, {img}},
      {"unfold_unbatched", [&](const TensorList& in) { return F::unfold(in[0], F::UnfoldFuncOptions(2).padding(1)); },
       {img3}},
      {"fold", [&](const TensorList& in) { return F::fold(in[0], fo); }, {cols}},
      {"fold_unbatched",
       [&](const TensorList& in) { return F::fold(in[0], F::FoldFuncOptions({3, 4}, {1, 2}).stride(2)); },
       {cols2}},
      // nonlinear around the ops, so that the second derivative reaches them
      {"unfold_squared", [&](const TensorList& in) { return F::unfold(in[0] * in[0], uo) * F::unfold(in[0], uo); },
       {img}},
      {"fold_squared", [&](const TensorList& in) { return F::fold(in[0], fo).pow(2); }, {cols}},
  };
  for (const auto& [name, fn, inputs] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(autograd::gradcheck(fn, inputs));
    EXPECT_TRUE(autograd::gradgradcheck(fn, inputs));
  }
}

// The backward nodes carry PyTorch's names, and each one's backward is the other op.
TEST(FoldGradcheck, NodesAreEachOthersBackward) {
  const Tensor x = uniform_sample({1, 1, 3, 3}, 55, -1, 1).requires_grad_();
  const Tensor y = F::unfold(x, F::UnfoldFuncOptions(2));
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "Im2ColBackward0");
  const Tensor c = uniform_sample({4, 4}, 56, -1, 1).requires_grad_();
  const Tensor z = F::fold(c.unsqueeze(0), F::FoldFuncOptions(3, 2));
  ASSERT_TRUE(z.grad_fn());
  EXPECT_EQ(z.grad_fn()->name(), "Col2ImBackward0");
  // d/dx sum(unfold(x) * g) = fold(g): the ones' count map for g = 1
  const TensorList g = autograd::grad({y.sum()}, {x});
  EXPECT_TRUE(all_close(g[0], {1, 2, 1, 2, 4, 2, 1, 2, 1}, {1, 1, 3, 3}, 0, 0));
}

// ---- argument errors (PyTorch rejects the same) ----
TEST(FoldErrors, BadArguments) {
  const Tensor x = zeros({1, 2, 4, 4}, kFloat64);
  EXPECT_TRUE(throws_error([&] { F::unfold(zeros({4, 4}, kFloat64), F::UnfoldFuncOptions(2)); },
                           {"unfold", "3-D (C, H, W) or 4-D (N, C, H, W)", "[4, 4]"}));
  EXPECT_TRUE(throws_error([&] { F::unfold(zeros({1, 2, 3, 4, 4}, kFloat64), F::UnfoldFuncOptions(2)); },
                           {"unfold", "[1, 2, 3, 4, 4]"}));
  EXPECT_TRUE(throws_error([&] { F::unfold(zeros({1, 0, 4, 4}, kFloat64), F::UnfoldFuncOptions(2)); },
                           {"unfold", "non-zero", "[1, 0, 4, 4]"}));
  EXPECT_TRUE(throws_error([&] { F::unfold(zeros({1, 1, 2, 2}, kFloat64), F::UnfoldFuncOptions(3)); },
                           {"unfold", "sliding blocks", "(0, 0)", "kernel_size=(3, 3)"}));
  // rounding towards -inf: (2 - 3) / 2 + 1 = 0 blocks, not 1
  EXPECT_TRUE(throws_error([&] { F::unfold(zeros({1, 1, 2, 2}, kFloat64), F::UnfoldFuncOptions(3).stride(2)); },
                           {"unfold", "(0, 0)"}));
  EXPECT_TRUE(throws_error([&] { F::unfold(x, F::UnfoldFuncOptions(0)); }, {"unfold", "kernel size", "(0, 0)"}));
  EXPECT_TRUE(
      throws_error([&] { F::unfold(x, F::UnfoldFuncOptions(2).stride({1, 0})); }, {"unfold", "stride", "(1, 0)"}));
  EXPECT_TRUE(throws_error([&] { F::unfold(x, F::UnfoldFuncOptions(2).dilation(0)); }, {"unfold", "dilation"}));
  EXPECT_TRUE(
      throws_error([&] { F::unfold(x, F::UnfoldFuncOptions(2).padding(-1)); }, {"unfold", "padding", "(-1, -1)"}));
  EXPECT_TRUE(throws_error([&] { F::unfold(zeros({1, 1, 4, 4}, kInt64), F::UnfoldFuncOptions(2)); },
                           {"unfold", "int64", "floating-point"}));
  EXPECT_TRUE(throws_error([&] { graft::unfold(x, {2, 2, 2}, 1, 0, 1); }, {"unfold", "kernel_size of 3 values"}));

  const Tensor c = zeros({1, 8, 9}, kFloat64);
  EXPECT_TRUE(throws_error([&] { F::fold(zeros({1, 1, 8, 9}, kFloat64), F::FoldFuncOptions(4, 2)); },
                           {"fold", "2-D (C kH kW, L) or 3-D (N, C kH kW, L)", "[1, 1, 8, 9]", "unfold"}));
  EXPECT_TRUE(throws_error([&] { F::fold(zeros({1, 0, 9}, kFloat64), F::FoldFuncOptions(4, 2)); },
                           {"fold", "non-zero", "[1, 0, 9]"}));
  EXPECT_TRUE(throws_error([&] { F::fold(zeros({1, 7, 9}, kFloat64), F::FoldFuncOptions(4, 2)); },
                           {"fold", "divisible by the product of kernel_size", "input.size(1)=7"}));
  EXPECT_TRUE(throws_error([&] { F::fold(zeros({7, 9}, kFloat64), F::FoldFuncOptions(4, 2)); },
                           {"fold", "input.size(0)=7"}));
  EXPECT_TRUE(throws_error([&] { F::fold(zeros({1, 8, 8}, kFloat64), F::FoldFuncOptions(4, 2)); },
                           {"fold", "3 * 3 = 9", "input.size(2)=8"}));
  EXPECT_TRUE(throws_error([&] { F::fold(zeros({4, 1}, kFloat64), F::FoldFuncOptions(0, 2)); },
                           {"fold", "(-1, -1)", "too small (non-positive)"}));
  EXPECT_TRUE(throws_error([&] { F::fold(c, F::FoldFuncOptions(4, 2).stride(0)); }, {"fold", "stride"}));
  EXPECT_TRUE(throws_error([&] { F::fold(zeros({4, 4}, kInt64), F::FoldFuncOptions(3, 2)); },
                           {"fold", "int64", "floating-point"}));
  EXPECT_TRUE(throws_error([&] { F::fold(Tensor(), F::FoldFuncOptions(3, 2)); }, {"fold", "undefined"}));
  EXPECT_TRUE(throws_error([&] { F::UnfoldFuncOptions({1, 2, 3}); }, {"ExpandingArray", "3 values"}));
}

// ---- options and modules ----
TEST(FoldModules, OptionsGettersAndSetters) {
  auto u = nn::UnfoldOptions({2, 3});
  EXPECT_EQ(*u.kernel_size(), (std::array<int64_t, 2>{2, 3}));
  EXPECT_EQ(*u.dilation(), (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(*u.padding(), (std::array<int64_t, 2>{0, 0}));
  EXPECT_EQ(*u.stride(), (std::array<int64_t, 2>{1, 1}));
  u.dilation(2).padding({1, 0}).stride({3, 1}).kernel_size(4);
  EXPECT_EQ(*u.kernel_size(), (std::array<int64_t, 2>{4, 4}));
  EXPECT_EQ(*u.dilation(), (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(*u.padding(), (std::array<int64_t, 2>{1, 0}));
  EXPECT_EQ(*u.stride(), (std::array<int64_t, 2>{3, 1}));
  auto f = nn::FoldOptions({4, 5}, 2);
  EXPECT_EQ(*f.output_size(), (std::array<int64_t, 2>{4, 5}));
  EXPECT_EQ(*f.kernel_size(), (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(*f.dilation(), (std::array<int64_t, 2>{1, 1}));
  f.output_size(6).stride(2).padding(1).dilation({1, 2});
  EXPECT_EQ(*f.output_size(), (std::array<int64_t, 2>{6, 6}));
  EXPECT_EQ(*f.stride(), (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(*f.padding(), (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(*f.dilation(), (std::array<int64_t, 2>{1, 2}));
  // the functionals' options are the modules'
  static_assert(std::is_same_v<nn::UnfoldOptions, F::UnfoldFuncOptions>);
  static_assert(std::is_same_v<nn::FoldOptions, F::FoldFuncOptions>);
}

TEST(FoldModules, ForwardIsTheFunctional) {
  const Tensor x = uniform_sample({2, 3, 5, 6}, 61, -1, 1);
  nn::Unfold unfold(nn::UnfoldOptions({2, 3}).padding(1).stride(2));
  const Tensor cols = unfold->forward(x);
  EXPECT_TRUE(all_close(cols, F::unfold(x, F::UnfoldFuncOptions({2, 3}).padding(1).stride(2)), 0, 0));
  nn::Fold fold(nn::FoldOptions({5, 6}, {2, 3}).padding(1).stride(2));
  const Tensor img = F::fold(cols, F::FoldFuncOptions({5, 6}, {2, 3}).padding(1).stride(2));
  EXPECT_TRUE(all_close(fold->forward(cols), img, 0, 0));
  EXPECT_TRUE(nn::UnfoldImpl(2).parameters().empty());
  EXPECT_TRUE(nn::FoldImpl(3, 2).parameters().empty());
  // a clone keeps the options
  const auto copy = std::dynamic_pointer_cast<nn::FoldImpl>(fold->clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(*copy->options.stride(), (std::array<int64_t, 2>{2, 2}));
}

// ---- printing ----
template <class T> std::string fold_printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

// repr(torch.nn.Unfold((2, 3))) and repr(torch.nn.Fold((4, 5), 2)) in PyTorch 1.13; PyTorch shows a
// size as given, graft an equal pair as the int (nn.Unfold(2) and nn.Unfold((2, 2)) differ in PyTorch).
TEST(FoldPrint, PythonForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::Python);
  EXPECT_EQ(fold_printed(nn::Unfold(nn::UnfoldOptions({2, 3}))),
            "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)");
  EXPECT_EQ(fold_printed(nn::Fold(nn::FoldOptions({4, 5}, 2))),
            "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)");
  EXPECT_EQ(fold_printed(nn::Unfold(nn::UnfoldOptions(3).dilation({2, 1}).padding(1).stride({1, 2}))),
            "Unfold(kernel_size=3, dilation=(2, 1), padding=1, stride=(1, 2))");
}

// The strings LibTorch 1.13 prints (std::cout << torch::nn::Unfold(...), run against the installed
// LibTorch), torch:: renamed graft::.
TEST(FoldPrint, LibTorchForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(fold_printed(nn::Unfold(nn::UnfoldOptions({2, 3}).dilation(1).padding(0).stride(1))),
            "graft::nn::Unfold(kernel_size=[2, 3], dilation=[1, 1], padding=[0, 0], stride=[1, 1])");
  EXPECT_EQ(fold_printed(nn::Unfold(nn::UnfoldOptions({2, 3}).dilation({2, 1}).padding(1).stride({1, 2}))),
            "graft::nn::Unfold(kernel_size=[2, 3], dilation=[2, 1], padding=[1, 1], stride=[1, 2])");
  EXPECT_EQ(fold_printed(nn::Fold(nn::FoldOptions({4, 5}, {2, 2}))),
            "graft::nn::Fold(output_size=[4, 5], kernel_size=[2, 2], dilation=[1, 1], padding=[0, 0], stride=[1, 1])");
  EXPECT_EQ(fold_printed(nn::Fold(nn::FoldOptions({4, 5}, {2, 3}).dilation(2).padding({1, 0}).stride(3))),
            "graft::nn::Fold(output_size=[4, 5], kernel_size=[2, 3], dilation=[2, 2], padding=[1, 0], stride=[3, 3])");
}

// ---- meta tensors: the shapes, no data (Note [Meta device]) ----
TEST(FoldMeta, Shapes) {
  const Tensor x = empty({2, 3, 5, 6}, TensorOptions(kFloat32).device(kMeta)).requires_grad_();
  const Tensor cols = F::unfold(x, F::UnfoldFuncOptions({2, 3}).padding(1).stride(2));
  EXPECT_TRUE(cols.is_meta());
  // (5 + 2 - 2) / 2 + 1 = 3 block rows, (6 + 2 - 3) / 2 + 1 = 3 block columns
  EXPECT_EQ(cols.sizes(), IntArrayRef({2, 18, 9}));
  const Tensor img = F::fold(cols, F::FoldFuncOptions({5, 6}, {2, 3}).padding(1).stride(2));
  EXPECT_TRUE(img.is_meta());
  EXPECT_EQ(img.sizes(), IntArrayRef({2, 3, 5, 6}));
  img.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().is_meta());
  EXPECT_EQ(x.grad().sizes(), IntArrayRef({2, 3, 5, 6}));
  const Tensor u = F::unfold(empty({3, 4, 4}, TensorOptions(kFloat64).device(kMeta)), F::UnfoldFuncOptions(2));
  EXPECT_EQ(u.sizes(), IntArrayRef({12, 9}));
  // the checks still run on meta
  const Tensor bad = empty({7, 9}, TensorOptions(kFloat32).device(kMeta));
  EXPECT_TRUE(throws_error([&] { F::fold(bad, F::FoldFuncOptions(4, 2)); }, {"fold", "input.size(0)=7"}));
}

}  // namespace
}  // namespace graft::test
