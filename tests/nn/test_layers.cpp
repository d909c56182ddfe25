// Layers (Linear, Embedding, Dropout, Flatten, Identity, activations, losses) and containers
// (Sequential, ModuleList, ModuleDict), against hand computations, gradcheck, the init formulas,
// and what PyTorch 1.13 prints (tests/fixtures/nn_fixtures.txt, from gen_nn_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace nn = graft::nn;
namespace F = graft::nn::functional;

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }

// ---- Linear ----

TEST(Linear, ForwardMatchesHandComputation) {
  nn::Linear fc(3, 2);
  {
    NoGradGuard g;
    fc->weight.copy_(make({1, 2, 3, -1, 0.5, 0.25}, {2, 3}, kFloat32));
    fc->bias.copy_(make({0.5, -2}, {2}, kFloat32));
  }
  Tensor x = make({1, 0, -1, 2, 4, 8}, {2, 3}, kFloat32);
  // Row 0: [1*1 + 0*2 - 1*3 + 0.5, -1*1 + 0 - 0.25 - 2] = [-1.5, -3.25]
  // Row 1: [2 + 8 + 24 + 0.5, -2 + 2 + 2 - 2] = [34.5, 0]
  EXPECT_TRUE(all_close(fc(x), {-1.5, -3.25, 34.5, 0}, {2, 2}, 1e-6, 1e-6));
  // Batched input (*, in): the same rows.
  EXPECT_TRUE(all_close(fc(x.reshape({2, 1, 3})), {-1.5, -3.25, 34.5, 0}, {2, 1, 2}, 1e-6, 1e-6));

  nn::Linear nobias(nn::LinearOptions(3, 2).bias(false));
  EXPECT_FALSE(nobias->bias.defined());
  EXPECT_EQ(nobias->parameters().size(), 1u);
  {
    NoGradGuard g;
    nobias->weight.copy_(fc->weight);
  }
  EXPECT_TRUE(all_close(nobias(x), {-2, -1.25, 34, 2}, {2, 2}, 1e-6, 1e-6));
  EXPECT_TRUE(throws_error([&] { fc(graft::ones({2, 4})); }, {"[2, 4]"}));
  EXPECT_TRUE(throws_error([&] { nn::Linear(-1, 2); }, {"Linear", "non-negative"}));
}

TEST(Linear, ForwardMatchesPlainLoopsOnRandomValues) {
  manual_seed(3);
  nn::Linear fc(5, 4);
  fc->to(kFloat64);
  Tensor x = graft::randn({6, 5}, kFloat64);
  auto xv = values(x), wv = values(fc->weight), bv = values(fc->bias);
  std::vector<double> expected;
  for (int i = 0; i < 6; ++i)
    for (int o = 0; o < 4; ++o) {
      double s = bv[o];
      for (int k = 0; k < 5; ++k) s += xv[i * 5 + k] * wv[o * 5 + k];
      expected.push_back(s);
    }
  EXPECT_TRUE(all_close(fc(x), expected, {6, 4}, 1e-12, 1e-12));
}

TEST(Linear, GradcheckThroughTheModule) {
  manual_seed(4);
  nn::Linear fc(4, 3);
  fc->to(kFloat64);
  Tensor x = graft::randn({5, 4}, kFloat64).requires_grad_();
  // gradcheck perturbs the inputs in place: passing the module's own parameters checks the
  // gradients the module's forward produces for them.
  EXPECT_TRUE(autograd::gradcheck([&](const TensorList& in) { return fc(in[0]).tanh(); }, {x, fc->weight, fc->bias}));
  nn::Linear nobias(nn::LinearOptions(4, 2).bias(false));
  nobias->to(kFloat64);
  EXPECT_TRUE(autograd::gradcheck([&](const TensorList& in) { return nobias(in[0]); }, {x, nobias->weight}));
  // Gradients land in .grad of the registered parameters.
  fc(x).sum().backward();
  EXPECT_TRUE(all_close(fc->bias.grad(), {5, 5, 5}, {3}));
  EXPECT_TRUE(all_close(fc->weight.grad(), x.sum(0).detach().unsqueeze(0).expand({3, 4}).contiguous(), 1e-12));
}

TEST(Linear, DefaultInitMatchesPyTorchRule) {
  manual_seed(5);
  const int64_t in = 1000, out = 500;
  nn::Linear fc(in, out);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // kaiming_uniform_(a = sqrt(5))
  EXPECT_LE(max_abs(fc->weight), bound);
  EXPECT_GT(max_abs(fc->weight), 0.999 * bound);
  const double std_expected = bound / std::sqrt(3.0);  // std of U(-b, b)
  EXPECT_NEAR(fc->weight.std().item<double>(), std_expected, 0.01 * std_expected);
  EXPECT_NEAR(fc->weight.mean().item<double>(), 0.0, 0.01 * std_expected);
  EXPECT_LE(max_abs(fc->bias), bound);
  EXPECT_GT(max_abs(fc->bias), 0.95 * bound);
  EXPECT_EQ(fc->weight.dtype(), kFloat32);
  EXPECT_TRUE(fc->weight.requires_grad());
  // A different fan_in gives a different bound.
  nn::Linear small(4, 300);
  EXPECT_LE(max_abs(small->weight), 0.5);
  EXPECT_GT(max_abs(small->weight), 0.49);
  EXPECT_LE(max_abs(small->bias), 0.5);
  // reset_parameters draws again.
  Tensor before = small->weight.clone();
  small->reset_parameters();
  EXPECT_FALSE(graft::equal(before, small->weight));
  // Zero-sized layers are fine.
  nn::Linear empty(0, 3);
  EXPECT_EQ(empty(graft::ones({2, 0})).sizes().vec(), (std::vector<int64_t>{2, 3}));
}

// ---- Embedding ----

TEST(Embedding, InitForwardAndPadding) {
  manual_seed(6);
  nn::Embedding big(2000, 100);
  EXPECT_NEAR(big->weight.std().item<double>(), 1.0, 0.01);
  EXPECT_NEAR(big->weight.mean().item<double>(), 0.0, 0.01);

  nn::Embedding emb(nn::EmbeddingOptions(10, 3).padding_idx(0));
  EXPECT_TRUE(all_close(emb->weight.select(0, 0), {0, 0, 0}, {3}, 0, 0));
  EXPECT_GT(max_abs(emb->weight.select(0, 1)), 0.0);
  Tensor idx = graft::tensor({{1, 0, 3}, {3, 3, 9}});
  Tensor y = emb(idx);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 3}));
  EXPECT_TRUE(all_close(y.select(0, 1).select(0, 2), emb->weight.select(0, 9).detach(), 0, 0));
  y.sum().backward();
  // Row 3 is looked up three times, row 0 (padding) gets no gradient.
  auto g = values(emb->weight.grad());
  EXPECT_EQ(g[0 * 3], 0.0);
  EXPECT_EQ(g[3 * 3], 3.0);
  EXPECT_EQ(g[9 * 3 + 1], 1.0);
  EXPECT_EQ(g[2 * 3], 0.0);

  nn::Embedding neg(nn::EmbeddingOptions(5, 2).padding_idx(-1));
  EXPECT_EQ(*neg->options.padding_idx(), 4);
  EXPECT_TRUE(all_close(neg->weight.select(0, 4), {0, 0}, {2}, 0, 0));
  EXPECT_TRUE(throws_error([&] { nn::Embedding(nn::EmbeddingOptions(5, 2).padding_idx(5)); }, {"Embedding", "padding_idx 5"}));
  EXPECT_TRUE(throws_error([&] { emb(graft::tensor({10})); }, {"embedding"}));

  Tensor table = make({1, 2, 3, 4, 5, 6}, {3, 2}, kFloat32);
  nn::Embedding pre = nn::embedding_from_pretrained(table);
  EXPECT_FALSE(pre->weight.requires_grad());
  EXPECT_FALSE(pre->weight.is_alias_of(table));
  EXPECT_TRUE(all_close(pre(graft::tensor({2, 0})), {5, 6, 1, 2}, {2, 2}, 0, 0));
  nn::Embedding trainable = nn::embedding_from_pretrained(table, nn::EmbeddingFromPretrainedOptions().freeze(false));
  EXPECT_TRUE(trainable->weight.requires_grad());
  EXPECT_TRUE(throws_error([&] { nn::Embedding(nn::EmbeddingOptions(4, 2)._weight(table)); }, {"_weight", "[4, 2]", "[3, 2]"}));
}

// ---- Dropout ----

TEST(Dropout, StatisticsAndScaling) {
  manual_seed(7);
  const double p = 0.3;
  nn::Dropout drop(p);
  Tensor x = graft::ones({200, 500});
  Tensor y = drop(x);
  auto v = values(y);
  int64_t zeros = 0;
  for (double e : v) {
    if (e == 0) ++zeros;
    else EXPECT_NEAR(e, 1.0 / (1.0 - p), 1e-6);
  }
  const double frac = static_cast<double>(zeros) / static_cast<double>(v.size());
  EXPECT_NEAR(frac, p, 0.01);                      // std of the fraction is 0.002
  EXPECT_NEAR(y.mean().item<double>(), 1.0, 0.02);  // unbiased in expectation
  // The gradient is the scaled mask.
  Tensor xg = graft::ones({4, 50}, requires_grad());
  manual_seed(8);
  Tensor out = drop(xg);
  out.sum().backward();
  EXPECT_TRUE(all_close(xg.grad(), out.detach(), 1e-6, 1e-6));
}

TEST(Dropout, EvalIdentitySeedsAndEdgeProbabilities) {
  nn::Dropout drop(nn::DropoutOptions(0.5));
  Tensor x = graft::randn({64, 64});
  drop->eval();
  EXPECT_TRUE(drop(x).is_same(x));
  drop->train();
  manual_seed(42);
  Tensor a = drop(x);
  manual_seed(42);
  Tensor b = drop(x);
  EXPECT_TRUE(graft::equal(a, b));
  Tensor c = drop(x);
  EXPECT_FALSE(graft::equal(a, c));
  // Values are x * 2 where kept.
  auto av = values(a), xv = values(x);
  for (size_t i = 0; i < av.size(); ++i) EXPECT_TRUE(av[i] == 0 || std::abs(av[i] - 2 * xv[i]) < 1e-6);

  nn::Dropout none(0.0);
  EXPECT_TRUE(none(x).is_same(x));
  nn::Dropout all(1.0);
  Tensor xr = x.detach().requires_grad_();
  Tensor z = all(xr);
  EXPECT_EQ(max_abs(z), 0.0);
  z.sum().backward();
  EXPECT_EQ(max_abs(xr.grad()), 0.0);
  // Float64 stays float64.
  EXPECT_EQ(drop(x.to(kFloat64)).dtype(), kFloat64);
  EXPECT_TRUE(throws_error([] { nn::Dropout(1.5); }, {"Dropout", "[0, 1]", "p = 1.5"}));
  EXPECT_TRUE(throws_error([] { nn::Dropout(-0.1); }, {"Dropout", "p = -0.1"}));
  EXPECT_TRUE(throws_error([&] { drop(graft::ones({3}, kInt64)); }, {"Dropout", "floating-point", "int64"}));
  // In place: the input's values are replaced.
  nn::Dropout inplace(nn::DropoutOptions(0.5).inplace(true));
  Tensor w = graft::ones({100});
  Tensor r = inplace(w);
  EXPECT_TRUE(r.is_same(w));
  EXPECT_GT(values(w)[0] + values(w)[1] + values(w)[2] + values(w)[3], -1.0);
  for (double e : values(w)) EXPECT_TRUE(e == 0 || e == 2);
}

// ---- Flatten, Identity, activations ----

TEST(Layers, FlattenAndIdentity) {
  Tensor x = graft::randn({2, 3, 4, 5});
  nn::Flatten flat;
  EXPECT_EQ(flat(x).sizes().vec(), (std::vector<int64_t>{2, 60}));
  nn::Flatten mid(nn::FlattenOptions().start_dim(1).end_dim(2));
  EXPECT_EQ(mid(x).sizes().vec(), (std::vector<int64_t>{2, 12, 5}));
  EXPECT_TRUE(graft::equal(flat(x), x.reshape({2, 60})));
  EXPECT_TRUE(throws_error([&] { nn::Flatten(nn::FlattenOptions().start_dim(5))(x); }, {"flatten"}));
  nn::Identity id;
  EXPECT_TRUE(id(x).is_same(x));
}

TEST(Layers, ActivationsMatchFormulas) {
  Tensor x = make({-3, -0.5, 0, 0.7, 2.5, 30}, {6}, kFloat64);
  auto check = [&](Tensor y, const std::function<double(double)>& f) {
    std::vector<double> e;
    for (double v : values(x)) e.push_back(f(v));
    return all_close(y, e, {6}, 1e-12, 1e-12);
  };
  EXPECT_TRUE(check(nn::ReLU()(x), [](double v) { return v > 0 ? v : 0; }));
  EXPECT_TRUE(check(nn::LeakyReLU()(x), [](double v) { return v > 0 ? v : 0.01 * v; }));
  EXPECT_TRUE(check(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2))(x), [](double v) { return v > 0 ? v : 0.2 * v; }));
  EXPECT_TRUE(check(nn::Sigmoid()(x), [](double v) { return 1 / (1 + std::exp(-v)); }));
  EXPECT_TRUE(check(nn::Tanh()(x), [](double v) { return std::tanh(v); }));
  EXPECT_TRUE(check(nn::GELU()(x), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  EXPECT_TRUE(check(nn::GELU(nn::GELUOptions().approximate("tanh"))(x), [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }));
  EXPECT_TRUE(check(nn::SiLU()(x), [](double v) { return v / (1 + std::exp(-v)); }));
  EXPECT_TRUE(check(nn::Softplus()(x), [](double v) { return v > 20 ? v : std::log1p(std::exp(v)); }));
  EXPECT_TRUE(check(nn::Softplus(nn::SoftplusOptions().beta(2).threshold(5))(x),
                    [](double v) { return 2 * v > 5 ? v : std::log1p(std::exp(2 * v)) / 2; }));
  EXPECT_TRUE(check(nn::ELU()(x), [](double v) { return v > 0 ? v : std::expm1(v); }));
  EXPECT_TRUE(check(nn::ELU(nn::ELUOptions().alpha(0.5))(x), [](double v) { return v > 0 ? v : 0.5 * std::expm1(v); }));
  Tensor m = make({1, 2, 3, 1, 1, 1}, {2, 3});
  double s = std::exp(1) + std::exp(2) + std::exp(3);
  EXPECT_TRUE(all_close(nn::Softmax(1)(m), {std::exp(1) / s, std::exp(2) / s, std::exp(3) / s, 1. / 3, 1. / 3, 1. / 3},
                        {2, 3}, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(nn::LogSoftmax(-1)(m).exp(), nn::Softmax(1)(m), 1e-12, 1e-12));
  // ReLU(inplace = true) writes its input.
  Tensor w = make({-1, 2}, {2});
  nn::ReLU relu_inplace(true);
  EXPECT_TRUE(relu_inplace(w).is_same(w));
  EXPECT_TRUE(all_close(w, {0, 2}, {2}, 0, 0));
  EXPECT_TRUE(throws_error([] { nn::GELU(nn::GELUOptions().approximate("erf")); }, {"GELU", "'erf'"}));
  // Gradients flow through the modules.
  Tensor xr = x.detach().requires_grad_();
  EXPECT_TRUE(autograd::gradcheck([](const TensorList& in) { return nn::SiLU()(in[0]) + nn::ELU()(in[0]); }, {xr}));
}

// ---- losses ----

TEST(Losses, ModulesMatchFunctionals) {
  manual_seed(9);
  Tensor logits = graft::randn({6, 4}, kFloat64);
  Tensor classes = graft::tensor({0, 3, 1, 1, 2, 3});
  Tensor w = make({1, 2, 0.5, 1}, {4});
  EXPECT_TRUE(all_close(nn::CrossEntropyLoss()(logits, classes), F::cross_entropy(logits, classes)));
  EXPECT_TRUE(all_close(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().weight(w).label_smoothing(0.1))(logits, classes),
                        F::cross_entropy(logits, classes, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.1))));
  EXPECT_TRUE(all_close(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().reduction(kNone).ignore_index(1))(logits, classes),
                        F::cross_entropy(logits, classes, F::CrossEntropyFuncOptions().reduction(kNone).ignore_index(1))));
  Tensor logp = logits.log_softmax(1);
  EXPECT_TRUE(all_close(nn::NLLLoss(nn::NLLLossOptions().weight(w))(logp, classes),
                        F::nll_loss(logp, classes, F::NLLLossFuncOptions().weight(w))));
  // Hand value: mean of -logp[i, y_i].
  double nll = 0;
  auto lp = values(logp);
  auto cls = values(classes);
  for (int i = 0; i < 6; ++i) nll -= lp[i * 4 + static_cast<int>(cls[i])];
  EXPECT_NEAR(nn::NLLLoss()(logp, classes).item<double>(), nll / 6, 1e-12);

  Tensor a = make({1, 2, 3, 4}, {4}), b = make({1.5, 2, 0, 4.25}, {4});
  EXPECT_NEAR(nn::MSELoss()(a, b).item<double>(), (0.25 + 0 + 9 + 0.0625) / 4, 1e-12);
  EXPECT_NEAR(nn::MSELoss(nn::MSELossOptions().reduction(kSum))(a, b).item<double>(), 9.3125, 1e-12);
  EXPECT_NEAR(nn::L1Loss()(a, b).item<double>(), (0.5 + 0 + 3 + 0.25) / 4, 1e-12);
  // smooth_l1 (beta 1): 0.5 d^2 below 1, |d| - 0.5 above.
  EXPECT_NEAR(nn::SmoothL1Loss()(a, b).item<double>(), (0.125 + 0 + 2.5 + 0.03125) / 4, 1e-12);
  EXPECT_NEAR(nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(4))(a, b).item<double>(),
              (0.125 / 4 + 0 + 4.5 / 4 + 0.03125 / 4) / 4, 1e-12);

  Tensor prob = make({0.1, 0.8, 0.5}, {3}), target = make({0, 1, 1}, {3});
  const double bce = -(std::log(0.9) + std::log(0.8) + std::log(0.5)) / 3;
  EXPECT_NEAR(nn::BCELoss()(prob, target).item<double>(), bce, 1e-12);
  Tensor z = make({-2, 1, 0}, {3});
  EXPECT_TRUE(all_close(nn::BCEWithLogitsLoss()(z, target), nn::BCELoss()(z.sigmoid(), target), 1e-12, 1e-12));
  Tensor pw = make({3}, {1});
  EXPECT_TRUE(all_close(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().pos_weight(pw))(z, target),
                        F::binary_cross_entropy_with_logits(z, target, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pw))));
  EXPECT_TRUE(all_close(nn::BCELoss(nn::BCELossOptions().weight(make({1, 2, 3}, {3})))(prob, target),
                        F::binary_cross_entropy(prob, target, F::BinaryCrossEntropyFuncOptions().weight(make({1, 2, 3}, {3})))));
}

TEST(Losses, WeightsAreBuffers) {
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(graft::tensor({1.0f, 2.0f, 3.0f})));
  EXPECT_EQ(ce->named_buffers().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_TRUE(ce->parameters().empty());
  ce->to(kFloat64);
  EXPECT_EQ(ce->weight.dtype(), kFloat64);
  Tensor logits = graft::randn({2, 3}, kFloat64);
  Tensor y = graft::tensor({0, 2});
  EXPECT_TRUE(all_close(ce(logits, y), F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().weight(make({1, 2, 3}, {3})))));
  nn::BCEWithLogitsLoss bl(nn::BCEWithLogitsLossOptions().pos_weight(graft::ones({1})));
  EXPECT_EQ(bl->named_buffers().keys(), (std::vector<std::string>{"pos_weight"}));
  nn::MSELoss mse;
  EXPECT_TRUE(mse->state_dict().empty());
}

// ---- containers ----

TEST(Sequential, ForwardIndexingAndNames) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  manual_seed(10);
  nn::Sequential seq(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
  EXPECT_EQ(seq->size(), 3u);
  Tensor x = graft::randn({5, 4});
  auto l0 = seq->ptr<nn::LinearImpl>(0);
  auto& l2 = seq->at<nn::LinearImpl>(2);
  EXPECT_TRUE(graft::equal(seq(x), l2.forward(graft::relu(l0->forward(x)))));
  EXPECT_EQ(seq->named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(seq[1]->name(), "ReLU");
  EXPECT_EQ(seq->ptr(1).get(), seq[1].get());
  EXPECT_TRUE(throws_error([&] { seq->ptr(3); }, {"Sequential", "index below the size 3", "3"}));
  EXPECT_TRUE(throws_error([&] { seq->at<nn::LinearImpl>(1); }, {"Sequential::at", "ReLU"}));

  // push_back of holders, shared_ptrs, values and functions.
  nn::Sequential built;
  EXPECT_TRUE(graft::equal(built(x), x));  // empty: the input
  built->push_back(nn::Linear(4, 4));
  built->push_back(std::make_shared<nn::TanhImpl>());
  built->push_back(nn::SigmoidImpl());
  built->push_back([](const Tensor& t) { return t * 2; });
  built->push_back("last", graft::relu);
  EXPECT_EQ(built->named_children().keys(), (std::vector<std::string>{"0", "1", "2", "3", "last"}));
  auto expect = (built->at<nn::LinearImpl>(0).forward(x).tanh().sigmoid() * 2).relu();
  EXPECT_TRUE(all_close(built(x), expect, 1e-6, 1e-6));
  EXPECT_EQ(built[3]->name(), "Functional");
  // Functional binds extra arguments after the input.
  nn::Sequential bound(nn::Functional(F::leaky_relu, F::LeakyReLUFuncOptions().negative_slope(0.5)),
                       nn::Functional(graft::relu));
  EXPECT_TRUE(all_close(bound(make({-2, 3}, {2})), {0, 3}, {2}, 0, 0));
  EXPECT_TRUE(all_close(bound[0]->as<nn::FunctionalImpl>()->forward(make({-2, 3}, {2})), {-1, 3}, {2}, 0, 0));
  std::ostringstream fs;
  fs << *bound;
  EXPECT_EQ(fs.str(), "Sequential(\n  (0): Functional()\n  (1): Functional()\n)");

  // Named construction; shared modules; extend.
  nn::Linear shared(2, 2);
  nn::Sequential named({{"first", shared}, {"act", nn::Tanh()}, {"second", shared}});
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"first", "act"}));  // shared listed once
  EXPECT_EQ(named->size(), 3u);
  EXPECT_EQ(named->parameters().size(), 2u);
  Tensor x2 = graft::randn({3, 2});
  EXPECT_TRUE(graft::equal(named(x2), shared(shared(x2).tanh())));
  nn::Sequential more{nn::ReLU()};
  more->extend(*named);
  EXPECT_EQ(more->size(), 4u);
  EXPECT_EQ(more->named_children().keys(), (std::vector<std::string>{"0", "1", "2"}));
  // Train/eval reaches the entries.
  nn::Sequential with_dropout(nn::Linear(4, 4), nn::Dropout(0.5));
  with_dropout->eval();
  EXPECT_FALSE(with_dropout[1]->is_training());
  EXPECT_TRUE(graft::equal(with_dropout(x), with_dropout->at<nn::LinearImpl>(0).forward(x)));
}

TEST(Sequential, CloneIsDeep) {
  nn::Sequential seq(nn::Linear(3, 3), nn::ReLU(), nn::Linear(3, 1));
  seq->eval();
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->clone());
  ASSERT_NE(copy, nullptr);
  Tensor x = graft::randn({4, 3});
  EXPECT_TRUE(graft::equal(copy->forward(x), seq(x)));
  EXPECT_FALSE(copy->ptr<nn::LinearImpl>(0)->weight.is_alias_of(seq->ptr<nn::LinearImpl>(0)->weight));
  EXPECT_FALSE(copy->is_training());
  {
    NoGradGuard g;
    copy->at<nn::LinearImpl>(2).bias.fill_(100);
  }
  EXPECT_FALSE(graft::equal(copy->forward(x), seq(x)));  // the copy's forward uses its own modules
  EXPECT_EQ(copy->named_parameters().keys(), seq->named_parameters().keys());
}

TEST(ModuleList, PushInsertIterate) {
  nn::ModuleList list(nn::Linear(2, 3), nn::ReLU());
  list->push_back(nn::Linear(3, 1));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = graft::randn({4, 2});
  Tensor y = x;
  for (size_t i = 0; i < list->size(); ++i) {
    if (auto* lin = list[i]->as<nn::LinearImpl>()) y = lin->forward(y);
    else y = graft::relu(y);
  }
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{4, 1}));
  list->insert(1, nn::Tanh());
  EXPECT_EQ(list->named_children().keys(), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(list->ptr(1)->name(), "Tanh");
  EXPECT_EQ(list->named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias"}));
  std::vector<std::string> names;
  for (const auto& m : *list) names.push_back(m->name());
  EXPECT_EQ(names, (std::vector<std::string>{"Linear", "Tanh", "ReLU", "Linear"}));
  EXPECT_EQ(list->at<nn::LinearImpl>(3).options.out_features(), 1);
  EXPECT_TRUE(throws_error([&] { list->at<nn::LinearImpl>(1); }, {"ModuleList::at", "Tanh"}));
  EXPECT_TRUE(throws_error([&] { list->ptr(4); }, {"ModuleList", "4"}));
  EXPECT_TRUE(throws_error([&] { list->insert(9, nn::ReLU()); }, {"ModuleList::insert", "9"}));
  nn::ModuleList other;
  other->extend(*list);
  other->extend(std::vector<std::shared_ptr<nn::Module>>{std::make_shared<nn::ReLUImpl>()});
  EXPECT_EQ(other->size(), 5u);
  auto copy = std::dynamic_pointer_cast<nn::ModuleListImpl>(list->clone());
  EXPECT_EQ(copy->size(), 4u);
  EXPECT_FALSE(copy->at<nn::LinearImpl>(0).weight.is_alias_of(list->at<nn::LinearImpl>(0).weight));
  // Registered as a submodule, its entries get dotted names.
  struct NetImpl : nn::Module {
    NetImpl() { blocks = register_module("blocks", nn::ModuleList(nn::Linear(2, 2), nn::Linear(2, 2))); }
    nn::ModuleList blocks{nullptr};
  };
  NetImpl net;
  EXPECT_EQ(net.named_parameters().keys(),
            (std::vector<std::string>{"blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"}));
}

TEST(ModuleDict, InsertLookupPop) {
  nn::ModuleDict dict(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{
      {"fc", nn::Linear(2, 3)}, {"act", nn::Tanh()}});
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"fc", "act"}));
  EXPECT_EQ(dict->size(), 2u);
  EXPECT_TRUE(dict->contains("fc"));
  EXPECT_FALSE(dict->contains("head"));
  EXPECT_EQ(dict->at<nn::LinearImpl>("fc").options.out_features(), 3);
  EXPECT_EQ(dict["act"]->name(), "Tanh");
  EXPECT_EQ(dict->named_parameters().keys(), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  auto head = dict->insert("head", nn::Linear(3, 1));
  EXPECT_EQ(head->options.in_features(), 3);
  dict->insert("act", nn::ReLU());  // replaces, keeping the position
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"fc", "act", "head"}));
  EXPECT_EQ(dict["act"]->name(), "ReLU");
  Tensor x = graft::randn({2, 2});
  Tensor y = dict->at<nn::LinearImpl>("head").forward(dict->at<nn::ReLUImpl>("act").forward(dict->at<nn::LinearImpl>("fc").forward(x)));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 1}));
  auto popped = dict->pop("fc");
  EXPECT_EQ(popped->name(), "Linear");
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"act", "head"}));
  EXPECT_TRUE(throws_error([&] { dict["fc"]; }, {"ModuleDict", "'fc'", "act, head"}));
  EXPECT_TRUE(throws_error([&] { dict->at<nn::LinearImpl>("act"); }, {"ModuleDict::at", "ReLU"}));
  nn::ModuleDict other;
  other->update(*dict);
  EXPECT_EQ(other->keys(), dict->keys());
  std::vector<std::string> keys;
  for (const auto& item : *other) keys.push_back(item.key());
  EXPECT_EQ(keys, dict->keys());
  auto copy = std::dynamic_pointer_cast<nn::ModuleDictImpl>(dict->clone());
  EXPECT_EQ(copy->keys(), dict->keys());
  EXPECT_NE(copy->values()[1].get(), dict->values()[1].get());
  other->clear();
  EXPECT_TRUE(other->empty());
}

// ---- a small end-to-end fit ----

TEST(Layers, SequentialLearnsALinearMap) {
  manual_seed(11);
  nn::Sequential net(nn::Linear(3, 16), nn::Tanh(), nn::Linear(16, 1));
  Tensor x = graft::randn({64, 3});
  Tensor y = (x * graft::tensor({1.0f, -2.0f, 0.5f})).sum(1, true);
  nn::MSELoss loss_fn;
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    net->zero_grad();
    Tensor loss = loss_fn(net(x), y);
    loss.backward();
    {
      NoGradGuard g;
      for (auto& p : net->parameters()) p.sub_(p.grad() * 0.05);
    }
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first / 10);
}

// ---- what PyTorch prints ----

struct Fixtures {
  std::map<std::string, std::string> reprs;
  std::map<std::string, std::vector<std::string>> keys, params;
};

const Fixtures& fixtures() {
  static const Fixtures f = [] {
    Fixtures out;
    std::ifstream in(std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "nn_fixtures.txt");
    EXPECT_TRUE(in.good()) << "tests/fixtures/nn_fixtures.txt is missing";
    for (std::string line; std::getline(in, line);) {
      std::istringstream ls(line);
      std::string kind, id;
      ls >> kind >> id;
      if (kind == "repr") {
        std::string rest = line.substr(kind.size() + id.size() + 2), r;
        for (size_t i = 0; i < rest.size(); ++i) {
          if (rest[i] == '\\' && i + 1 < rest.size() && rest[i + 1] == 'n') {
            r += '\n';
            ++i;
          } else {
            r += rest[i];
          }
        }
        out.reprs[id] = r;
      } else if (kind == "keys" || kind == "params") {
        std::vector<std::string> k;
        for (std::string s; ls >> s;) k.push_back(s);
        (kind == "keys" ? out.keys : out.params)[id] = k;
      }
    }
    return out;
  }();
  return f;
}

std::shared_ptr<nn::Module> build_case(const std::string& id) {
  using namespace graft::nn;  // NOLINT
  static const std::map<std::string, std::function<std::shared_ptr<Module>()>> cases = {
      {"linear", [] { return Linear(784, 10).ptr(); }},
      {"linear_nobias", [] { return Linear(LinearOptions(3, 2).bias(false)).ptr(); }},
      {"embedding", [] { return Embedding(10, 3).ptr(); }},
      {"embedding_pad", [] { return Embedding(EmbeddingOptions(10, 3).padding_idx(0)).ptr(); }},
      {"dropout", [] { return Dropout().ptr(); }},
      {"dropout02", [] { return Dropout(0.2).ptr(); }},
      {"flatten", [] { return Flatten().ptr(); }},
      {"flatten_02", [] { return Flatten(FlattenOptions().start_dim(0).end_dim(2)).ptr(); }},
      {"identity", [] { return Identity().ptr(); }},
      {"relu", [] { return ReLU().ptr(); }},
      {"relu_inplace", [] { return ReLU(ReLUOptions(true)).ptr(); }},
      {"leaky_relu", [] { return LeakyReLU().ptr(); }},
      {"leaky_relu02", [] { return LeakyReLU(LeakyReLUOptions().negative_slope(0.2)).ptr(); }},
      {"sigmoid", [] { return Sigmoid().ptr(); }},
      {"tanh", [] { return Tanh().ptr(); }},
      {"gelu", [] { return GELU().ptr(); }},
      {"gelu_tanh", [] { return GELU(GELUOptions().approximate("tanh")).ptr(); }},
      {"silu", [] { return SiLU().ptr(); }},
      {"softplus", [] { return Softplus().ptr(); }},
      {"softplus_custom", [] { return Softplus(SoftplusOptions().beta(0.5).threshold(10)).ptr(); }},
      {"elu", [] { return ELU().ptr(); }},
      {"elu05", [] { return ELU(ELUOptions().alpha(0.5)).ptr(); }},
      {"softmax", [] { return Softmax(1).ptr(); }},
      {"log_softmax", [] { return LogSoftmax(-1).ptr(); }},
      {"cross_entropy", [] { return CrossEntropyLoss().ptr(); }},
      {"nll", [] { return NLLLoss().ptr(); }},
      {"mse", [] { return MSELoss().ptr(); }},
      {"l1", [] { return L1Loss().ptr(); }},
      {"smooth_l1", [] { return SmoothL1Loss().ptr(); }},
      {"bce", [] { return BCELoss().ptr(); }},
      {"bce_logits", [] { return BCEWithLogitsLoss().ptr(); }},
      {"mlp", [] { return Sequential(Linear(4, 3), ReLU(), Dropout(0.2), Linear(3, 1), Sigmoid()).ptr(); }},
      {"nested",
       [] {
         return Sequential({{"features", Sequential(Flatten(), Linear(12, 8), Tanh())},
                            {"embed", Embedding(EmbeddingOptions(5, 2).padding_idx(1))},
                            {"head", Linear(LinearOptions(8, 2).bias(false))}})
             .ptr();
       }},
      {"module_list", [] { return ModuleList(Linear(2, 2), ReLU(), Linear(2, 1)).ptr(); }},
      {"module_dict",
       [] {
         return ModuleDict(std::vector<std::pair<std::string, std::shared_ptr<Module>>>{{"fc", Linear(2, 3)}, {"act", Tanh()}})
             .ptr();
       }},
      {"empty_sequential", [] { return Sequential().ptr(); }},
  };
  auto it = cases.find(id);
  return it == cases.end() ? nullptr : it->second();
}

TEST(PyTorchFixtures, ReprStateDictKeysAndParameterNames) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Fixtures& f = fixtures();
  ASSERT_GE(f.reprs.size(), 30u);
  for (const auto& [id, expected] : f.reprs) {
    auto m = build_case(id);
    ASSERT_NE(m, nullptr) << "no C++ case for fixture " << id;
    std::ostringstream os;
    os << *m;
    EXPECT_EQ(os.str(), expected) << id;
    EXPECT_EQ(m->state_dict().keys(), f.keys.at(id)) << id;
    EXPECT_EQ(m->named_parameters().keys(), f.params.at(id)) << id;
  }
}

}  // namespace
}  // namespace graft::test
