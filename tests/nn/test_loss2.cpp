// The losses of issue 32 (SoftMarginLoss, MultiLabelSoftMarginLoss, HingeEmbeddingLoss,
// PoissonNLLLoss, GaussianNLLLoss, MultiMarginLoss, MultiLabelMarginLoss): values and gradients
// against PyTorch 1.13 (tests/fixtures/loss2_fixtures.txt, written by gen_loss2_fixtures.py: this
// test only reads it), gradcheck / gradgradcheck in float64, the argument errors, the options, the
// modules, and both print styles (the expected strings as PyTorch 1.13 and LibTorch 1.13 print them).
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

const std::vector<FixtureCase>& loss2_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("loss2_fixtures.txt");
  return cases;
}

Reduction loss2_reduction(const FixtureCase& c) {
  const std::string& r = c.param("reduction");
  if (r == "none") return kNone;
  if (r == "sum") return kSum;
  if (r == "mean") return kMean;
  throw std::runtime_error("unknown reduction " + r);
}

Tensor loss2_weight(const FixtureCase& c) {
  if (!c.params.count("weight")) return {};
  const std::vector<double> w = c.numbers("weight");
  return make(w, {static_cast<int64_t>(w.size())});
}

// The graft call a case names, with its options rebuilt from the params.
Tensor loss2_call(const FixtureCase& c, const TensorList& a) {
  const Reduction red = loss2_reduction(c);
  const std::string& fn = c.kind;
  if (fn == "soft_margin_loss") return F::soft_margin_loss(a[0], a[1], F::SoftMarginLossFuncOptions(red));
  if (fn == "multilabel_soft_margin_loss")
    return F::multilabel_soft_margin_loss(
        a[0], a[1], F::MultilabelSoftMarginLossFuncOptions().weight(loss2_weight(c)).reduction(red));
  if (fn == "hinge_embedding_loss")
    return F::hinge_embedding_loss(a[0], a[1],
                                   F::HingeEmbeddingLossFuncOptions().margin(c.number("margin", 1.0)).reduction(red));
  if (fn == "poisson_nll_loss")
    return F::poisson_nll_loss(a[0], a[1],
                               F::PoissonNLLLossFuncOptions()
                                   .log_input(c.params.count("log_input") ? c.flag("log_input") : true)
                                   .full(c.params.count("full") ? c.flag("full") : false)
                                   .eps(c.number("eps", 1e-8))
                                   .reduction(red));
  if (fn == "gaussian_nll_loss")
    return F::gaussian_nll_loss(a[0], a[1], a[2],
                                F::GaussianNLLLossFuncOptions()
                                    .full(c.params.count("full") ? c.flag("full") : false)
                                    .eps(c.number("eps", 1e-6))
                                    .reduction(red));
  if (fn == "multi_margin_loss")
    return F::multi_margin_loss(a[0], a[1],
                                F::MultiMarginLossFuncOptions()
                                    .p(static_cast<int64_t>(c.number("p", 1)))
                                    .margin(c.number("margin", 1.0))
                                    .weight(loss2_weight(c))
                                    .reduction(red));
  if (fn == "multilabel_margin_loss")
    return F::multilabel_margin_loss(a[0], a[1], F::MultilabelMarginLossFuncOptions(red));
  if (fn == "triplet_margin_with_distance_loss") {
    // The generator's distances: none (pairwise_distance), 1 - cosine_similarity, the L1 distance.
    auto o = F::TripletMarginWithDistanceLossFuncOptions().margin(c.number("margin", 1.0)).swap(c.flag("swap")).reduction(red);
    const std::string& d = c.param("distance");
    if (d == "cosine") o.distance_function([](const Tensor& x1, const Tensor& x2) { return 1.0 - F::cosine_similarity(x1, x2); });
    if (d == "l1") o.distance_function([](const Tensor& x1, const Tensor& x2) { return (x1 - x2).abs().sum({-1}); });
    return F::triplet_margin_with_distance_loss(a[0], a[1], a[2], o);
  }
  throw std::runtime_error("unknown function " + fn);
}

TEST(Loss2Fixtures, FileLoads) {
  ASSERT_NO_THROW(loss2_fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : loss2_fixtures()) ++per_fn[c.kind];
  for (const char* fn : {"soft_margin_loss", "multilabel_soft_margin_loss", "hinge_embedding_loss", "poisson_nll_loss",
                         "gaussian_nll_loss", "multi_margin_loss", "multilabel_margin_loss",
                         "triplet_margin_with_distance_loss"})
    EXPECT_GE(per_fn[fn], 3) << "too few fixtures for " << fn;  // at least one per reduction
}

class Loss2Fixture : public ::testing::TestWithParam<size_t> {};

TEST_P(Loss2Fixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = loss2_fixtures()[GetParam()];
  TensorList args;
  for (int i = 0; c.has("arg" + std::to_string(i)); ++i) {
    Tensor t = c.tensor("arg" + std::to_string(i)).clone();
    if (c.has("grad" + std::to_string(i))) t.requires_grad_();
    args.push_back(t);
  }
  Tensor out;
  try {
    out = loss2_call(c, args);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_TRUE(all_close(out, c.tensor("out"), 1e-12, 1e-12)) << "value";
  out.backward(c.tensor("grad_output"));
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string role = "grad" + std::to_string(i);
    if (!c.has(role)) continue;
    ASSERT_TRUE(args[i].grad().defined()) << "no gradient for arg " << i;
    EXPECT_TRUE(all_close(args[i].grad(), c.tensor(role), 1e-12, 1e-12)) << "gradient of arg " << i;
  }
}

size_t loss2_fixture_count() {
  try {
    return loss2_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Loss2Fixture, ::testing::Range<size_t>(0, loss2_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return loss2_fixtures()[info.param].name;
                         });

// ---- gradcheck / gradgradcheck (float64, points away from the hinges' kinks) ----
TEST(Loss2Gradcheck, EachLoss) {
  using Fn = autograd::TestFunction;
  const Tensor x = uniform_sample({3, 4}, 31, -2.0, 2.0).requires_grad_();
  const Tensor sgn = make({1, -1, -1, 1, 1, 1, -1, -1, 1, -1, 1, -1}, {3, 4});
  const Tensor bits = make({1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0}, {3, 4});
  const Tensor counts = make({0, 1, 2, 3, 0.5, 1.5, 4, 7, 1, 2, 0, 5}, {3, 4});
  const Tensor rate = uniform_sample({3, 4}, 32, 0.2, 3.0).requires_grad_();
  const Tensor tg = uniform_sample({3, 4}, 33, -1.0, 1.0);
  const Tensor var = uniform_sample({3, 4}, 34, 0.3, 2.0).requires_grad_();
  const Tensor var_row = uniform_sample({3}, 35, 0.3, 2.0).requires_grad_();
  const Tensor w = make({0.5, 1.0, 2.0, 1.5}, {4});
  const Tensor cls = tensor<int64_t>({2, 0, 3});
  const Tensor labels = tensor<int64_t>({{1, 3, -1, 0}, {0, -1, 0, 0}, {2, 2, 1, -1}});
  // hinge terms are kinked where z = 0: x spread on a grid of spacing 0.37 keeps them apart
  const Tensor xs =
      make({0.1, 0.47, -0.84, 1.21, -0.27, 1.58, -1.31, 0.64, 1.95, -0.61, 0.29, -1.68}, {3, 4}).requires_grad_();
  const std::vector<std::tuple<std::string, Fn, TensorList>> cases = {
      {"soft_margin", [&](const TensorList& in) { return F::soft_margin_loss(in[0], sgn); }, {x}},
      {"multilabel_soft_margin",
       [&](const TensorList& in) {
         return F::multilabel_soft_margin_loss(in[0], bits,
                                               F::MultilabelSoftMarginLossFuncOptions().weight(w).reduction(kNone));
       },
       {x}},
      {"hinge_embedding",
       [&](const TensorList& in) {
         return F::hinge_embedding_loss(in[0], sgn, F::HingeEmbeddingLossFuncOptions().margin(0.9));
       },
       {xs}},
      {"poisson_log",
       [&](const TensorList& in) {
         return F::poisson_nll_loss(in[0], counts, F::PoissonNLLLossFuncOptions().full(true));
       },
       {x}},
      {"poisson_rate",
       [&](const TensorList& in) {
         return F::poisson_nll_loss(in[0], counts, F::PoissonNLLLossFuncOptions().log_input(false).reduction(kSum));
       },
       {rate}},
      {"gaussian",
       [&](const TensorList& in) {
         return F::gaussian_nll_loss(in[0], tg, in[1], F::GaussianNLLLossFuncOptions().full(true));
       },
       {x, var}},
      {"gaussian_row",
       [&](const TensorList& in) {
         return F::gaussian_nll_loss(in[0], tg, in[1], F::GaussianNLLLossFuncOptions().reduction(kNone));
       },
       {x, var_row}},
      {"multi_margin_p1",
       [&](const TensorList& in) {
         return F::multi_margin_loss(in[0], cls, F::MultiMarginLossFuncOptions().margin(0.5));
       },
       {xs}},
      {"multi_margin_p2",
       [&](const TensorList& in) {
         return F::multi_margin_loss(in[0], cls, F::MultiMarginLossFuncOptions().p(2).weight(w).reduction(kNone));
       },
       {xs}},
      {"multilabel_margin", [&](const TensorList& in) { return F::multilabel_margin_loss(in[0], labels, kSum); }, {xs}},
  };
  for (const auto& [name, fn, inputs] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(autograd::gradcheck(fn, inputs));
    EXPECT_TRUE(autograd::gradgradcheck(fn, inputs));
  }
}

// ---- argument errors (PyTorch rejects the same) ----
TEST(Loss2Errors, BadArguments) {
  const Tensor x = zeros({2, 3}, kFloat64);
  const Tensor bad = zeros({4}, kFloat64);
  EXPECT_TRUE(throws_error([&] { F::soft_margin_loss(x, bad); }, {"soft_margin_loss", "[2, 3]", "[4]"}));
  EXPECT_TRUE(
      throws_error([&] { F::soft_margin_loss(x.to(kInt64), x); }, {"soft_margin_loss", "floating-point", "int64"}));
  EXPECT_TRUE(throws_error([&] { F::multilabel_soft_margin_loss(x, bad); }, {"multilabel_soft_margin_loss", "[4]"}));
  EXPECT_TRUE(throws_error([&] { F::hinge_embedding_loss(x, bad); }, {"hinge_embedding_loss", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error([&] { F::poisson_nll_loss(x, bad); }, {"poisson_nll_loss", "[4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::gaussian_nll_loss(x, x, zeros({2, 2}, kFloat64));
      },
      {"gaussian_nll_loss", "var of shape [2, 2]", "incorrect size"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::gaussian_nll_loss(x, x, make({1, -0.5}, {2}));
      },
      {"gaussian_nll_loss", "var >= 0"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::gaussian_nll_loss(x, x, tensor<int64_t>({1, 1}));
      },
      {"gaussian_nll_loss", "var", "int64"}));
  // the class-index losses: int64 targets of the right shape, in range
  EXPECT_TRUE(throws_error(
      [&] {
        F::multi_margin_loss(x, make({0, 1}, {2}));
      },
      {"multi_margin_loss", "int64", "float64"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multi_margin_loss(x, tensor<int64_t>({0, 1, 2}));
      },
      {"multi_margin_loss", "[3]", "inconsistent"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multi_margin_loss(x, tensor<int64_t>({0, 3}));
      },
      {"multi_margin_loss", "target 3", "out of range"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multi_margin_loss(x, tensor<int64_t>({0, 1}), F::MultiMarginLossFuncOptions().p(3));
      },
      {"multi_margin_loss", "p 1 or 2", "p 3"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multi_margin_loss(x, tensor<int64_t>({0, 1}), F::MultiMarginLossFuncOptions().weight(ones({2}, kFloat64)));
      },
      {"multi_margin_loss", "weight of shape [2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multi_margin_loss(zeros({2, 3, 4}, kFloat64), tensor<int64_t>({0, 1}));
      },
      {"multi_margin_loss", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multilabel_margin_loss(x, make({0, 1, -1, 0, 1, -1}, {2, 3}));
      },
      {"multilabel_margin_loss", "int64"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multilabel_margin_loss(x, tensor<int64_t>({0, 1, -1}));
      },
      {"multilabel_margin_loss", "[3]", "[2, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multilabel_margin_loss(x, tensor<int64_t>({{0, 3, -1}, {0, -1, 0}}));
      },
      {"multilabel_margin_loss", "target 3", "out of range"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multilabel_margin_loss(x, tensor<int64_t>({{0, -2, -1}, {0, -1, 0}}));
      },
      {"multilabel_margin_loss", "target -2"}));
  // Like LibTorch's, the modules construct and the op checks on forward.
  nn::MultiMarginLoss m(nn::MultiMarginLossOptions().p(5));
  EXPECT_TRUE(throws_error([&] { m(x, tensor<int64_t>({0, 1})); }, {"multi_margin_loss", "p 5"}));
}

// Hand-worked values: the formulas of PyTorch's documentation on small inputs.
TEST(Loss2Values, ByHand) {
  // multi_margin: x = (0.1, 0.2, 0.4, 0.8), y = 3: (max(0, 1 - 0.8 + 0.1) + ... ) / 4 = (0.3 + 0.4 + 0.6) / 4
  EXPECT_TRUE(all_close(F::multi_margin_loss(make({0.1, 0.2, 0.4, 0.8}, {1, 4}), tensor<int64_t>({3})), {0.325}, {}));
  // PyTorch's docs: multilabel_margin x = (0.1, 0.2, 0.4, 0.8), y = (3, 0, -1, 1) gives 0.85
  EXPECT_TRUE(all_close(F::multilabel_margin_loss(make({0.1, 0.2, 0.4, 0.8}, {1, 4}), tensor<int64_t>({{3, 0, -1, 1}})),
                        {0.85}, {}));
  // hinge: y = 1 gives x, y = -1 gives max(0, 1 - x)
  EXPECT_TRUE(all_close(F::hinge_embedding_loss(make({0.3, 0.3, 2.0}, {3}), make({1, -1, -1}, {3}),
                                                F::HingeEmbeddingLossFuncOptions().reduction(kNone)),
                        {0.3, 0.7, 0.0}, {3}));
  // soft margin: log(1 + e^0) = log 2
  EXPECT_TRUE(all_close(F::soft_margin_loss(make({0.0}, {1}), make({1}, {1})), {std::log(2.0)}, {}));
  // gaussian: var 0 clamped to eps: 0.5 (log 1e-6 + 1 / 1e-6)
  EXPECT_TRUE(all_close(F::gaussian_nll_loss(make({1.0}, {1}), make({0.0}, {1}), make({0.0}, {1})),
                        {0.5 * (std::log(1e-6) + 1e6)}, {}, 1e-6, 1e-12));
  // an int64 target for the elementwise losses is promoted, as PyTorch's
  EXPECT_TRUE(all_close(F::soft_margin_loss(make({0.0}, {1}), tensor<int64_t>({1})), {std::log(2.0)}, {}));
}

// ---- modules, options ----
TEST(Loss2Options, DefaultsAndSetters) {
  EXPECT_EQ(nn::SoftMarginLossOptions().reduction(), kMean);
  EXPECT_EQ(nn::SoftMarginLossOptions(kSum).reduction(), kSum);
  EXPECT_EQ(F::SoftMarginLossFuncOptions().reduction(kNone).reduction(), kNone);
  EXPECT_FALSE(nn::MultiLabelSoftMarginLossOptions().weight().defined());
  EXPECT_EQ(nn::MultiLabelSoftMarginLossOptions().weight(ones({3})).reduction(kSum).weight().numel(), 3);
  EXPECT_EQ(nn::MultiLabelSoftMarginLossOptions().reduction(), kMean);
  EXPECT_EQ(nn::HingeEmbeddingLossOptions().margin(), 1.0);
  EXPECT_EQ(nn::HingeEmbeddingLossOptions().margin(2.5).margin(), 2.5);
  EXPECT_EQ(nn::HingeEmbeddingLossOptions().reduction(), kMean);
  const nn::PoissonNLLLossOptions po;
  EXPECT_TRUE(po.log_input());
  EXPECT_FALSE(po.full());
  EXPECT_EQ(po.eps(), 1e-8);
  EXPECT_EQ(po.reduction(), kMean);
  const auto po2 = nn::PoissonNLLLossOptions().log_input(false).full(true).eps(1e-4).reduction(kSum);
  EXPECT_FALSE(po2.log_input());
  EXPECT_TRUE(po2.full());
  EXPECT_EQ(po2.eps(), 1e-4);
  EXPECT_EQ(po2.reduction(), kSum);
  const nn::GaussianNLLLossOptions go;
  EXPECT_FALSE(go.full());
  EXPECT_EQ(go.eps(), 1e-6);
  EXPECT_EQ(go.reduction(), kMean);
  EXPECT_EQ(nn::GaussianNLLLossOptions().eps(0.1).full(true).reduction(kNone).eps(), 0.1);
  const nn::MultiMarginLossOptions mo;
  EXPECT_EQ(mo.p(), 1);
  EXPECT_EQ(mo.margin(), 1.0);
  EXPECT_FALSE(mo.weight().defined());
  EXPECT_EQ(mo.reduction(), kMean);
  EXPECT_EQ(nn::MultiMarginLossOptions().p(2).margin(0.5).p(), 2);
  EXPECT_EQ(nn::MultiLabelMarginLossOptions().reduction(), kMean);
  EXPECT_EQ(nn::MultiLabelMarginLossOptions(kNone).reduction(), kNone);
  EXPECT_EQ(F::MultilabelMarginLossFuncOptions(kSum).reduction(), kSum);
}

TEST(Loss2Modules, ForwardEqualsFunctionalAndWeightsAreBuffers) {
  const Tensor x = uniform_sample({3, 4}, 41, -2, 2);
  const Tensor sgn = make({1, -1, -1, 1, 1, 1, -1, -1, 1, -1, 1, -1}, {3, 4});
  const Tensor bits = (sgn + 1.0) * 0.5;
  const Tensor var = uniform_sample({3, 4}, 42, 0.1, 1.0);
  const Tensor cls = tensor<int64_t>({2, 0, 3});
  const Tensor labels = tensor<int64_t>({{1, 3, -1, 0}, {0, -1, 0, 0}, {2, 2, 1, -1}});
  const Tensor w = make({0.5, 1.0, 2.0, 1.5}, {4});
  EXPECT_TRUE(equal(nn::SoftMarginLoss(kSum)(x, sgn), graft::soft_margin_loss(x, sgn, kSum)));
  nn::MultiLabelSoftMarginLoss mlsm(nn::MultiLabelSoftMarginLossOptions().weight(w));
  EXPECT_TRUE(equal(mlsm(x, bits), graft::multilabel_soft_margin_loss(x, bits, w)));
  ASSERT_EQ(mlsm->named_buffers().size(), 1u);
  EXPECT_EQ(mlsm->named_buffers().begin()->key(), "weight");
  EXPECT_TRUE(nn::MultiLabelSoftMarginLoss()->named_buffers().empty() ||
              !nn::MultiLabelSoftMarginLoss()->named_buffers().begin()->value().defined());
  EXPECT_TRUE(equal(nn::HingeEmbeddingLoss(nn::HingeEmbeddingLossOptions().margin(0.5))(x, sgn),
                    graft::hinge_embedding_loss(x, sgn, 0.5)));
  EXPECT_TRUE(equal(nn::PoissonNLLLoss(nn::PoissonNLLLossOptions().full(true))(x, bits * 3.0),
                    graft::poisson_nll_loss(x, bits * 3.0, true, true)));
  EXPECT_TRUE(equal(nn::GaussianNLLLoss(nn::GaussianNLLLossOptions().full(true).reduction(kNone))(x, sgn, var),
                    graft::gaussian_nll_loss(x, sgn, var, true, 1e-6, kNone)));
  nn::MultiMarginLoss mm(nn::MultiMarginLossOptions().p(2).margin(0.4).weight(w));
  EXPECT_TRUE(equal(mm(x, cls), graft::multi_margin_loss(x, cls, 2, 0.4, w)));
  ASSERT_EQ(mm->named_buffers().size(), 1u);
  EXPECT_EQ(mm->named_buffers().begin()->key(), "weight");
  EXPECT_TRUE(equal(nn::MultiLabelMarginLoss()(x, labels), graft::multilabel_margin_loss(x, labels)));
  // module.to(dtype) converts the weight buffer, so float32 inputs work after it
  mm->to(kFloat32);
  EXPECT_EQ(mm->weight.dtype(), kFloat32);
  EXPECT_EQ(mm(x.to(kFloat32), cls).dtype(), kFloat32);
}

// ---- printing ----
template <class T> std::string loss2_printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

// PyTorch 1.13's losses have no extra_repr: repr(torch.nn.SoftMarginLoss(reduction='sum')) is "SoftMarginLoss()".
TEST(Loss2Print, PythonForms) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  EXPECT_EQ(loss2_printed(nn::SoftMarginLoss(kSum)), "SoftMarginLoss()");
  EXPECT_EQ(loss2_printed(nn::MultiLabelSoftMarginLoss()), "MultiLabelSoftMarginLoss()");
  EXPECT_EQ(loss2_printed(nn::HingeEmbeddingLoss(nn::HingeEmbeddingLossOptions().margin(2))), "HingeEmbeddingLoss()");
  EXPECT_EQ(loss2_printed(nn::PoissonNLLLoss()), "PoissonNLLLoss()");
  EXPECT_EQ(loss2_printed(nn::GaussianNLLLoss()), "GaussianNLLLoss()");
  EXPECT_EQ(loss2_printed(nn::MultiMarginLoss()), "MultiMarginLoss()");
  EXPECT_EQ(loss2_printed(nn::MultiLabelMarginLoss()), "MultiLabelMarginLoss()");
}

// The strings LibTorch 1.13 prints (std::cout << torch::nn::SoftMarginLoss(), ..., run against the
// installed LibTorch), torch:: renamed graft::. LibTorch 1.13 has no GaussianNLLLoss: graft's prints
// the same way as its siblings without options.
TEST(Loss2Print, LibTorchForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(loss2_printed(nn::SoftMarginLoss()), "graft::nn::SoftMarginLoss()");
  EXPECT_EQ(loss2_printed(nn::SoftMarginLoss(kSum)), "graft::nn::SoftMarginLoss()");
  EXPECT_EQ(loss2_printed(
                nn::MultiLabelSoftMarginLoss(nn::MultiLabelSoftMarginLossOptions().weight(ones({3})).reduction(kNone))),
            "graft::nn::MultiLabelSoftMarginLoss()");
  EXPECT_EQ(loss2_printed(nn::HingeEmbeddingLoss()), "graft::nn::HingeEmbeddingLoss(margin=1)");
  EXPECT_EQ(loss2_printed(nn::HingeEmbeddingLoss(nn::HingeEmbeddingLossOptions().margin(2.5))),
            "graft::nn::HingeEmbeddingLoss(margin=2.5)");
  EXPECT_EQ(loss2_printed(
                nn::PoissonNLLLoss(nn::PoissonNLLLossOptions().log_input(false).full(true).eps(1e-4).reduction(kSum))),
            "graft::nn::PoissonNLLLoss()");
  EXPECT_EQ(loss2_printed(nn::GaussianNLLLoss()), "graft::nn::GaussianNLLLoss()");
  EXPECT_EQ(loss2_printed(nn::MultiMarginLoss()),
            "graft::nn::MultiMarginLoss(p=1, margin=1, weight=[ Tensor (undefined) ], reduction=kMean)");
  // LibTorch writes a defined weight with its tensor operator<< (" 1\n 1\n 1\n[ CPUFloatType{3} ]"); graft's
  // operator<< writes its own form, so only the frame is compared here.
  const std::string with_weight = loss2_printed(
      nn::MultiMarginLoss(nn::MultiMarginLossOptions().p(2).margin(0.5).weight(ones({3})).reduction(kNone)));
  EXPECT_EQ(with_weight.rfind("graft::nn::MultiMarginLoss(p=2, margin=0.5, weight=", 0), 0u) << with_weight;
  EXPECT_NE(with_weight.find(", reduction=kNone)"), std::string::npos) << with_weight;
  EXPECT_EQ(loss2_printed(nn::MultiLabelMarginLoss(kSum)), "graft::nn::MultiLabelMarginLoss()");
}

}  // namespace
}  // namespace graft::test

namespace graft::test {
namespace {

// LibTorch 1.13's F::smooth_l1_loss(input, target, options, beta): the fourth argument is the beta.
// By hand, |d| = 0, 0.25, 1, 2 with beta 0.5: 0.5 d^2 / beta below beta (0, 0.0625), |d| - beta / 2
// above (0.75, 1.75); their mean 0.640625, their sum 2.5625.
TEST(Loss2, SmoothL1LossTakesLibTorchsBetaArgument) {
  namespace F = nn::functional;
  const Tensor x = tensor({0.0, 0.25, 1.0, -2.0}, kFloat64), y = zeros({4}, kFloat64);
  EXPECT_DOUBLE_EQ(F::smooth_l1_loss(x, y, {}, 0.5).item<double>(), 0.640625);
  EXPECT_DOUBLE_EQ(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions(kSum), 0.5).item<double>(), 2.5625);
  // Options made from a reduction, as LibTorch's are (F::SmoothL1LossFuncOptions(torch::kNone)).
  const Tensor each = F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions(kNone), 0.5);
  ASSERT_EQ(each.numel(), 4);
  EXPECT_DOUBLE_EQ(each[3].item<double>(), 1.75);
  EXPECT_DOUBLE_EQ(F::mse_loss(x, y, kSum).item<double>(), 0.0625 + 1.0 + 4.0);
  EXPECT_DOUBLE_EQ(F::l1_loss(x, y, F::L1LossFuncOptions(kSum)).item<double>(), 3.25);
  // The argument wins over options.beta(); the three-argument form reads options.beta().
  EXPECT_DOUBLE_EQ(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(2.0), 0.5).item<double>(), 0.640625);
  EXPECT_DOUBLE_EQ(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(0.5)).item<double>(), 0.640625);
}

}  // namespace
}  // namespace graft::test

namespace graft::test {
namespace {

namespace F = nn::functional;

// TripletMarginWithDistanceLoss by hand: anchors (0, 0) and (1, 1), positives (3, 4) and (1, 2),
// negatives (0, 1) and (4, 5). The custom distance is the L1 distance: d(a, p) = 7 and 1, d(a, n) = 1
// and 7, d(p, n) = 6 and 6. margin 1: max(7 - 1 + 1, 0) = 7 and max(1 - 7 + 1, 0) = 0; with swap the
// first row's negative distance stays min(1, 6) = 1 and the second's becomes min(7, 6) = 6: 7 and 0.
// margin 10, swap: 7 - 1 + 10 = 16 and 1 - 6 + 10 = 5.
TEST(TripletMarginWithDistanceLoss, CustomDistanceByHand) {
  const Tensor a = tensor({{0.0, 0.0}, {1.0, 1.0}}, kFloat64), p = tensor({{3.0, 4.0}, {1.0, 2.0}}, kFloat64),
               n = tensor({{0.0, 1.0}, {4.0, 5.0}}, kFloat64);
  int calls = 0;
  auto l1 = [&calls](const Tensor& x1, const Tensor& x2) {
    ++calls;
    return (x1 - x2).abs().sum({-1});
  };
  auto o = F::TripletMarginWithDistanceLossFuncOptions().distance_function(l1).reduction(kNone);
  EXPECT_TRUE(all_close(F::triplet_margin_with_distance_loss(a, p, n, o), tensor({7.0, 0.0}, kFloat64), 0, 0));
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(
      all_close(F::triplet_margin_with_distance_loss(a, p, n, o.swap(true)), tensor({7.0, 0.0}, kFloat64), 0, 0));
  EXPECT_EQ(calls, 5);  // d(p, n) too
  EXPECT_TRUE(all_close(F::triplet_margin_with_distance_loss(a, p, n, o.margin(10).reduction(kSum)),
                        tensor(21.0, kFloat64), 0, 0));
  // The module forwards to the functional with its options.
  nn::TripletMarginWithDistanceLoss m(nn::TripletMarginWithDistanceLossOptions().distance_function(l1).margin(10).swap(true));
  EXPECT_TRUE(all_close(m(a, p, n), tensor(10.5, kFloat64), 0, 0));  // the mean of 16 and 5
}

TEST(TripletMarginWithDistanceLoss, DefaultsGradcheckAndPrint) {
  const F::TripletMarginWithDistanceLossFuncOptions o;
  EXPECT_FALSE(o.distance_function().has_value());
  EXPECT_EQ(o.margin(), 1.0);
  EXPECT_FALSE(o.swap());
  EXPECT_EQ(o.reduction(), kMean);
  // Away from the hinge (every loss term positive), in float64.
  const Tensor a = uniform_sample({3, 4}, 41, -1.0, 1.0).requires_grad_();
  const Tensor p = uniform_sample({3, 4}, 42, -1.0, 1.0).requires_grad_();
  const Tensor n = uniform_sample({3, 4}, 43, -1.0, 1.0).requires_grad_();
  const autograd::TestFunction fn = [](const TensorList& in) {
    return F::triplet_margin_with_distance_loss(
        in[0], in[1], in[2], F::TripletMarginWithDistanceLossFuncOptions().margin(5.0).swap(true).reduction(kNone));
  };
  EXPECT_TRUE(autograd::gradcheck(fn, {a, p, n}));
  EXPECT_TRUE(autograd::gradgradcheck(fn, {a, p, n}));
  // LibTorch 1.13 prints torch::nn::TripletMarginWithDistanceLoss(margin=1, swap=false) and, with
  // margin 2.5 and swap, (margin=2.5, swap=true) (run against the installed LibTorch).
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  std::ostringstream s1, s2;
  s1 << nn::TripletMarginWithDistanceLoss();
  s2 << nn::TripletMarginWithDistanceLoss(nn::TripletMarginWithDistanceLossOptions().margin(2.5).swap(true));
  EXPECT_EQ(s1.str(), "graft::nn::TripletMarginWithDistanceLoss(margin=1, swap=false)");
  EXPECT_EQ(s2.str(), "graft::nn::TripletMarginWithDistanceLoss(margin=2.5, swap=true)");
}

}  // namespace
}  // namespace graft::test
