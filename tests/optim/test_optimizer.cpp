// The optimiser base: param groups, zero_grad, state dicts, errors; plus update rules checked by hand
// where the fixtures do not reach (float32, non-contiguous parameters, closures).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"
#include "optim_test_helpers.h"

namespace graft::test {
namespace {

using optim::Adagrad;
using optim::AdagradOptions;
using optim::Adam;
using optim::AdamOptions;
using optim::AdamW;
using optim::AdamWOptions;
using optim::OptimizerParamGroup;
using optim::RMSprop;
using optim::RMSpropOptions;
using optim::SGD;
using optim::SGDOptions;

// A small model and data; params() returns fresh leaves with the same values each call.
struct Problem {
  Tensor x, y, w1, b1, w2, b2;
  Problem() {
    Generator g(7);
    x = randn({6, 3}, kFloat64, &g);
    y = randn({6, 2}, kFloat64, &g);
    w1 = randn({4, 3}, kFloat64, &g) * 0.5;
    b1 = randn({4}, kFloat64, &g) * 0.1;
    w2 = randn({2, 4}, kFloat64, &g) * 0.5;
    b2 = randn({2}, kFloat64, &g) * 0.1;
  }
  std::vector<Tensor> params() const {
    return {w1.clone().requires_grad_(), b1.clone().requires_grad_(), w2.clone().requires_grad_(),
            b2.clone().requires_grad_()};
  }
  Tensor loss(const std::vector<Tensor>& p) const { return mlp_loss(x, y, p[0], p[1], p[2], p[3]); }
  void train(optim::Optimizer& opt, const std::vector<Tensor>& p, int steps) const {
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      loss(p).backward();
      opt.step();
    }
  }
};

// Each optimiser kind with options that create every state buffer.
std::unique_ptr<optim::Optimizer> make_kind(const std::string& kind, std::vector<OptimizerParamGroup> groups) {
  if (kind == "SGD") return std::make_unique<SGD>(std::move(groups), SGDOptions(0.05).momentum(0.9).nesterov(true));
  if (kind == "Adam") return std::make_unique<Adam>(std::move(groups), AdamOptions(0.01).amsgrad(true));
  if (kind == "AdamW") return std::make_unique<AdamW>(std::move(groups), AdamWOptions(0.01).weight_decay(0.1));
  if (kind == "RMSprop")
    return std::make_unique<RMSprop>(std::move(groups), RMSpropOptions(0.01).momentum(0.5).centered(true));
  return std::make_unique<Adagrad>(std::move(groups), AdagradOptions(0.1).lr_decay(0.01));
}

std::vector<OptimizerParamGroup> two_groups(const std::vector<Tensor>& p) {
  return {OptimizerParamGroup({p[0], p[1]}), OptimizerParamGroup({p[2], p[3]})};
}

class StateDictRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(StateDictRoundTrip, ResumedRunEqualsUninterruptedRun) {
  const Problem pb;
  // Uninterrupted: 20 steps.
  auto pa = pb.params();
  auto a = make_kind(GetParam(), two_groups(pa));
  a->param_groups()[1].options().set_lr(a->param_groups()[1].options().lr() / 2);
  pb.train(*a, pa, 20);

  // 10 steps, checkpoint, a fresh optimiser on copies of the parameters, load, 10 more.
  auto pb1 = pb.params();
  auto b = make_kind(GetParam(), two_groups(pb1));
  b->param_groups()[1].options().set_lr(b->param_groups()[1].options().lr() / 2);
  pb.train(*b, pb1, 10);
  OrderedDict<std::string, Tensor> sd = b->state_dict();
  std::vector<Tensor> pc;
  for (const auto& p : pb1) pc.push_back(p.detach().clone().requires_grad_());
  auto c = make_kind(GetParam(), two_groups(pc));  // default lrs: the state dict restores group 1's
  c->load_state_dict(sd);
  EXPECT_EQ(c->param_groups()[1].options(), b->param_groups()[1].options());
  b.reset();  // the loaded state must not depend on the old optimiser
  for (auto& item : sd) {
    NoGradGuard ng;
    if (item.key().rfind("state.", 0) == 0) item.value().fill_(123.0);  // loaded state is a copy
  }
  pb.train(*c, pc, 10);
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(equal(pa[i], pc[i])) << "parameter " << i;
  // And the two state dicts agree key by key.
  auto sa = a->state_dict(), sc = c->state_dict();
  ASSERT_EQ(sa.keys(), sc.keys());
  for (const auto& item : sa) EXPECT_TRUE(equal(item.value(), sc[item.key()])) << item.key();
}

INSTANTIATE_TEST_SUITE_P(Optimizers, StateDictRoundTrip,
                         ::testing::Values("SGD", "Adam", "AdamW", "RMSprop", "Adagrad"));

TEST(OptimizerStateDict, KeysNumberParametersAcrossGroups) {
  const Problem pb;
  auto p = pb.params();
  Adam opt(two_groups(p), AdamOptions(0.01).amsgrad(true));
  p[2].requires_grad_(false);  // no gradient: no state
  pb.train(opt, p, 2);
  auto sd = opt.state_dict();
  const std::vector<std::string> expected = {
      "state.0.step", "state.0.exp_avg", "state.0.exp_avg_sq", "state.0.max_exp_avg_sq",
      "state.1.step", "state.1.exp_avg", "state.1.exp_avg_sq", "state.1.max_exp_avg_sq",
      "state.3.step", "state.3.exp_avg", "state.3.exp_avg_sq", "state.3.max_exp_avg_sq",
      "param_groups.0.lr", "param_groups.0.betas", "param_groups.0.eps", "param_groups.0.weight_decay",
      "param_groups.0.amsgrad", "param_groups.0.maximize", "param_groups.0.params",
      "param_groups.1.lr", "param_groups.1.betas", "param_groups.1.eps", "param_groups.1.weight_decay",
      "param_groups.1.amsgrad", "param_groups.1.maximize", "param_groups.1.params"};
  EXPECT_EQ(sd.keys(), expected);
  EXPECT_EQ(sd["state.3.step"].dim(), 0);
  EXPECT_EQ(sd["state.3.step"].dtype(), kFloat64);
  EXPECT_EQ(sd["state.3.step"].item<double>(), 2.0);
  EXPECT_EQ(sd["param_groups.0.lr"].dim(), 0);
  EXPECT_EQ(sd["param_groups.0.lr"].dtype(), kFloat64);
  EXPECT_EQ(sd["param_groups.0.lr"].item<double>(), 0.01);
  EXPECT_EQ(sd["param_groups.0.amsgrad"].dtype(), kBool);
  EXPECT_TRUE(all_close(sd["param_groups.1.betas"], {0.9, 0.999}, {2}, 0, 0));
  EXPECT_TRUE(all_close(sd["param_groups.1.params"].to(kFloat64), {2, 3}, {2}, 0, 0));
  EXPECT_EQ(sd["param_groups.1.params"].dtype(), kInt64);
  // State tensors are the live state (as in PyTorch).
  EXPECT_TRUE(sd["state.0.exp_avg"].is_same(static_cast<optim::AdamParamState*>(opt.state_of(p[0]))->exp_avg()));
}

TEST(OptimizerStateDict, LoadCastsStateToTheParameterDtype) {
  auto w64 = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  SGD a({w64}, SGDOptions(0.1).momentum(0.9));
  w64.mutable_grad() = tensor({0.5, -0.5}, kFloat64);
  a.step();
  auto w32 = tensor({1.0f, 2.0f}).requires_grad_();
  SGD b({w32}, SGDOptions(0.1));
  b.load_state_dict(a.state_dict());
  auto* st = static_cast<optim::SGDParamState*>(b.state_of(w32));
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->momentum_buffer().dtype(), kFloat32);
  EXPECT_EQ(static_cast<const SGDOptions&>(b.param_groups()[0].options()).momentum(), 0.9);
}

TEST(OptimizerStateDict, MismatchesAreClearErrors) {
  const Problem pb;
  auto p = pb.params();
  Adam src(two_groups(p), AdamOptions(0.01));
  pb.train(src, p, 1);
  const auto sd = src.state_dict();
  auto q = pb.params();

  {  // a different number of groups
    Adam one({q[0], q[1], q[2], q[3]});
    EXPECT_TRUE(throws_error([&] { one.load_state_dict(sd); },
                             {"Adam.load_state_dict", "1 parameter group(s)", "2 parameter group(s)"}));
  }
  {  // a group of a different size
    Adam other({OptimizerParamGroup({q[0]}), OptimizerParamGroup({q[1], q[2], q[3]})});
    EXPECT_TRUE(throws_error([&] { other.load_state_dict(sd); },
                             {"param group 0 with 1 parameter(s)", "a group of 2 parameter(s) in the state dict"}));
  }
  {  // a parameter of a different shape
    std::vector<Tensor> r = {zeros({3, 4}, kFloat64).requires_grad_(), q[1], q[2], q[3]};
    Adam other(two_groups(r));
    EXPECT_TRUE(throws_error([&] { other.load_state_dict(sd); },
                             {"state.0.exp_avg of shape [3, 4]", "shape [4, 3]"}));
  }
  {  // another optimiser's state dict
    SGD sgd(two_groups(q), SGDOptions(0.1));
    EXPECT_TRUE(throws_error([&] { sgd.load_state_dict(sd); }, {"SGD.load_state_dict", "momentum"}));
  }
  Adam dst(two_groups(q));
  auto edited = [&](auto&& edit) {
    OrderedDict<std::string, Tensor> e;
    for (const auto& item : sd) e.insert(item.key(), item.value());
    edit(e);
    return e;
  };
  EXPECT_TRUE(throws_error(
      [&] { dst.load_state_dict(edited([](auto& e) { e.insert("state.0.bogus", zeros({4, 3}, kFloat64)); })); },
      {"unexpected key 'state.0.bogus'"}));
  EXPECT_TRUE(throws_error(
      [&] { dst.load_state_dict(edited([](auto& e) { e.insert("param_groups.0.momentum", tensor(0.9, kFloat64)); })); },
      {"unexpected key 'param_groups.0.momentum'"}));
  EXPECT_TRUE(throws_error(
      [&] { dst.load_state_dict(edited([](auto& e) { e.insert("state.9.step", tensor(1.0, kFloat64)); })); },
      {"state for id 9"}));
  EXPECT_TRUE(throws_error(
      [&] { dst.load_state_dict(edited([](auto& e) { e.insert("lr", tensor(1.0, kFloat64)); })); },
      {"the key 'lr'", "state.<id>.<name>"}));
  EXPECT_TRUE(throws_error(
      [&] { dst.load_state_dict(edited([](auto& e) { e["param_groups.1.lr"] = tensor({0.1, 0.2}, kFloat64); })); },
      {"param_groups.1.lr to be a single number", "shape [2]"}));
  EXPECT_TRUE(throws_error(
      [&] { dst.load_state_dict(edited([](auto& e) { e["param_groups.0.lr"] = tensor(-1.0, kFloat64); })); },
      {"Adam", "a learning rate >= 0", "lr = -1"}));
  {
    OrderedDict<std::string, Tensor> e;
    for (const auto& item : sd)
      if (item.key() != "state.1.exp_avg_sq") e.insert(item.key(), item.value());
    EXPECT_TRUE(throws_error([&] { dst.load_state_dict(e); }, {"the key 'state.1.exp_avg_sq'", "without it"}));
  }
  // Nothing was changed by the failed loads.
  EXPECT_EQ(dst.state().size(), 0u);
  EXPECT_EQ(dst.param_groups()[0].options(), AdamOptions());
}

TEST(Optimizer, ParamGroupsWithDifferentLearningRates) {
  auto a = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  auto b = tensor({3.0}, kFloat64).requires_grad_();
  SGD opt({OptimizerParamGroup({a}), OptimizerParamGroup({b}, SGDOptions(0.01))}, SGDOptions(0.1));
  EXPECT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].options().lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.01);
  a.mutable_grad() = tensor({1.0, -2.0}, kFloat64);
  b.mutable_grad() = tensor({4.0}, kFloat64);
  opt.step();
  EXPECT_TRUE(all_close(a, {1.0 - 0.1, 2.0 + 0.2}, {2}, 1e-15, 0));
  EXPECT_TRUE(all_close(b, {3.0 - 0.04}, {1}, 1e-15, 0));
  // Changing a group's lr between steps, both spellings.
  opt.param_groups()[0].options().set_lr(1.0);
  opt.param_groups()[1].options().lr(0.5);
  opt.step();
  EXPECT_TRUE(all_close(a, {0.9 - 1.0, 2.2 + 2.0}, {2}, 1e-15, 0));
  EXPECT_TRUE(all_close(b, {2.96 - 2.0}, {1}, 1e-15, 0));
  // The defaults are unaffected, and a group added later copies them.
  EXPECT_EQ(opt.defaults().lr(), 0.1);
  auto c = tensor({0.0}, kFloat64).requires_grad_();
  opt.add_param_group(OptimizerParamGroup({c}));
  EXPECT_EQ(opt.param_groups()[2].options().lr(), 0.1);
  EXPECT_EQ(opt.size(), 3u);
  EXPECT_EQ(opt.parameters().size(), 3u);
  auto d = tensor({0.0}, kFloat64).requires_grad_();
  opt.add_parameters({d});
  EXPECT_EQ(opt.param_groups()[0].params().size(), 2u);
}

TEST(Optimizer, OptionsChainAndCompare) {
  SGDOptions o = SGDOptions(0.1).momentum(0.9).dampening(0).weight_decay(1e-4).nesterov(true).lr(0.2);
  EXPECT_EQ(o.lr(), 0.2);
  EXPECT_EQ(o.momentum(), 0.9);
  EXPECT_TRUE(o.nesterov());
  AdamOptions a = AdamOptions(0.01).betas({0.8, 0.95}).eps(1e-6).amsgrad(true);
  EXPECT_EQ(std::get<0>(a.betas()), 0.8);
  EXPECT_EQ(std::get<1>(a.betas()), 0.95);
  EXPECT_EQ(AdamWOptions().weight_decay(), 1e-2);
  EXPECT_EQ(AdamOptions().weight_decay(), 0.0);
  EXPECT_EQ(RMSpropOptions().alpha(), 0.99);
  EXPECT_EQ(AdagradOptions().eps(), 1e-10);
  EXPECT_TRUE(a == *a.clone());
  EXPECT_FALSE(AdamOptions() == AdamWOptions());  // different types
  EXPECT_FALSE(AdamOptions() == AdamOptions().eps(1e-7));
}

TEST(Optimizer, ZeroGradSetToNoneVersusZeroing) {
  const Problem pb;
  auto p = pb.params();
  SGD opt(p, SGDOptions(0.1));
  pb.loss(p).backward();
  opt.zero_grad();  // set_to_none = true by default
  for (const auto& t : p) EXPECT_FALSE(t.grad().defined());

  pb.loss(p).backward();
  const Tensor g0 = p[0].grad();
  const std::vector<double> first = values(g0);
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(p[0].grad().defined());
  EXPECT_TRUE(p[0].grad().is_same(g0));  // zeroed in place
  for (const auto& t : p) EXPECT_EQ(values(t.grad()), std::vector<double>(static_cast<size_t>(t.numel()), 0.0));
  pb.loss(p).backward();  // accumulates into the zeroed buffer: the same gradient again
  EXPECT_TRUE(all_close(p[0].grad(), first, p[0].sizes().vec(), 1e-15, 1e-15));

  // A gradient that is part of a graph (create_graph) is detached before zeroing.
  opt.zero_grad();
  pb.loss(p).backward({}, std::nullopt, /*create_graph=*/true);
  ASSERT_TRUE(p[0].grad().requires_grad());
  opt.zero_grad(false);
  EXPECT_FALSE(p[0].grad().requires_grad());
  EXPECT_EQ(p[0].grad().grad_fn(), nullptr);
}

TEST(Optimizer, ParametersWithoutGradientAreSkipped) {
  auto a = tensor({1.0}, kFloat64).requires_grad_();
  auto b = tensor({2.0}, kFloat64).requires_grad_();
  Adam opt({a, b}, AdamOptions(0.1));
  a.mutable_grad() = tensor({1.0}, kFloat64);
  opt.step();
  EXPECT_NE(values(a)[0], 1.0);
  EXPECT_EQ(values(b)[0], 2.0);
  EXPECT_NE(opt.state_of(a), nullptr);
  EXPECT_EQ(opt.state_of(b), nullptr);
  EXPECT_EQ(static_cast<optim::AdamParamState*>(opt.state_of(a))->step(), 1);
}

TEST(Optimizer, StepRunsTheClosureAndReturnsItsLoss) {
  const Problem pb;
  auto p = pb.params();
  auto q = pb.params();
  SGD with_closure(p, SGDOptions(0.1).momentum(0.9));
  SGD plain(q, SGDOptions(0.1).momentum(0.9));
  for (int i = 0; i < 3; ++i) {
    Tensor loss = with_closure.step([&] {
      with_closure.zero_grad();
      Tensor l = pb.loss(p);
      l.backward();
      return l;
    });
    plain.zero_grad();
    Tensor l2 = pb.loss(q);
    l2.backward();
    plain.step();
    ASSERT_TRUE(loss.defined());
    EXPECT_EQ(loss.item<double>(), l2.item<double>());
  }
  for (size_t i = 0; i < p.size(); ++i) EXPECT_TRUE(equal(p[i], q[i]));
  EXPECT_FALSE(plain.step().defined());
}

TEST(Optimizer, UpdatesRunWithoutRecording) {
  auto w = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  SGD opt({w}, SGDOptions(0.5));
  w.mutable_grad() = tensor({1.0, 1.0}, kFloat64);
  opt.step();
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(w.grad_fn(), nullptr);
  EXPECT_TRUE(w.requires_grad());
}

TEST(Optimizer, StepBumpsTheVersionAndIsNamedInSavedTensorErrors) {
  auto w = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  SGD opt({w}, SGDOptions(0.5));
  Tensor y = (w * w).sum();  // saves w
  w.mutable_grad() = tensor({1.0, 1.0}, kFloat64);
  const auto v0 = w._version();
  opt.step();
  EXPECT_GT(w._version(), v0);
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"SGD.step"}));
}

TEST(Optimizer, NonContiguousParametersAreUpdatedInPlace) {
  Tensor base = arange(12, kFloat64).reshape({3, 4});
  Tensor w = base.t().detach().requires_grad_();  // a [4, 3] view with strides [1, 4]
  ASSERT_FALSE(w.is_contiguous());
  Tensor w_ref = w.detach().contiguous().clone().requires_grad_();
  Adam a({w}, AdamOptions(0.1).weight_decay(0.1));
  Adam b({w_ref}, AdamOptions(0.1).weight_decay(0.1));
  for (int i = 0; i < 3; ++i) {
    Tensor g = reshape(arange(12, kFloat64), {4, 3}) * 0.1 - 0.5;
    w.mutable_grad() = g.clone();
    w_ref.mutable_grad() = g.clone();
    a.step();
    b.step();
  }
  EXPECT_TRUE(equal(w, w_ref));
  EXPECT_TRUE(equal(base.t(), w_ref.detach()));  // written through to the base's storage
}

TEST(Optimizer, Float32ParametersUseFloat32Arithmetic) {
  // Adam on float32 against the same update computed here in float (PyTorch's float32 kernels cast
  // every scalar to float): one step from zero state.
  auto w = tensor({0.5f, -1.5f, 2.0f}).requires_grad_();
  Adam opt({w}, AdamOptions(0.1));
  const std::vector<float> g = {0.25f, -3.0f, 1e-3f};
  w.mutable_grad() = tensor({g[0], g[1], g[2]});
  opt.step();
  const double bc1 = 1 - 0.9, bc2_sqrt = std::sqrt(1 - 0.999);
  const float step_size = static_cast<float>(-(0.1 / bc1));
  std::vector<double> expected;
  const std::vector<float> w0 = {0.5f, -1.5f, 2.0f};
  for (size_t i = 0; i < 3; ++i) {
    const float m = std::fma(static_cast<float>(1 - 0.9), g[i], 0.0f * 0.9f);
    const float v = std::fma(static_cast<float>(1 - 0.999) * g[i], g[i], 0.0f * 0.999f);
    const float denom = std::sqrt(v) / static_cast<float>(bc2_sqrt) + 1e-8f;
    expected.push_back(w0[i] + (step_size * m) / denom);
  }
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_TRUE(all_close(w, expected, {3}, 0, 0));
  auto* st = static_cast<optim::AdamParamState*>(opt.state_of(w));
  EXPECT_EQ(st->exp_avg().dtype(), kFloat32);
}

// An optimiser written as in LibTorch: its own options and step().
class SignSGDOptions : public optim::OptimizerCloneableOptions<SignSGDOptions> {
 public:
  explicit SignSGDOptions(double lr) : OptimizerCloneableOptions(lr) {}
  void validate() const override {
    GRAFT_CHECK(lr() >= 0, "SignSGD", "a learning rate >= 0", std::to_string(lr()), "");
  }
  const char* optimizer_name() const override { return "SignSGD"; }
};

class SignSGD : public optim::Optimizer {
 public:
  SignSGD(const std::vector<Tensor>& params, const SignSGDOptions& o)
      : Optimizer({OptimizerParamGroup(params)}, o.clone()) {}
  Tensor step(optim::LossClosure closure = nullptr) override {
    Tensor loss = closure ? closure() : Tensor();
    NoGradGuard no_grad;
    for (auto& g : param_groups())
      for (auto& p : g.params())
        if (p.grad().defined()) p.sub_(p.grad().sign() * g.options().lr());
    return loss;
  }
};

TEST(Optimizer, CustomOptimizerWithItsOwnStep) {
  auto w = tensor({1.0, -1.0}, kFloat64).requires_grad_();
  SignSGD opt({w}, SignSGDOptions(0.25));
  w.mutable_grad() = tensor({3.0, -0.5}, kFloat64);
  opt.step();
  EXPECT_TRUE(all_close(w, {0.75, -0.75}, {2}, 0, 0));
  auto sd = opt.state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"param_groups.0.lr", "param_groups.0.params"}));
  sd.insert("state.0.step", tensor(1.0, kFloat64));
  EXPECT_TRUE(throws_error([&] { opt.load_state_dict(sd); }, {"SignSGD keeps none", "state for id 0"}));
  EXPECT_TRUE(throws_error([&] { SignSGD({w}, SignSGDOptions(-1)); }, {"SignSGD", "a learning rate >= 0"}));
}

TEST(OptimizerErrors, BadOptions) {
  auto w = zeros({2}, kFloat64).requires_grad_();
  EXPECT_TRUE(throws_error([&] { SGD({w}, SGDOptions(-0.1)); }, {"SGD", "a learning rate >= 0", "lr = -0.1"}));
  EXPECT_TRUE(throws_error([&] { Adam({w}, AdamOptions(-1)); }, {"Adam", "lr = -1"}));
  EXPECT_TRUE(throws_error([&] { AdamW({w}, AdamWOptions(-1)); }, {"AdamW", "lr = -1"}));
  EXPECT_TRUE(throws_error([&] { RMSprop({w}, RMSpropOptions(-1)); }, {"RMSprop", "lr = -1"}));
  EXPECT_TRUE(throws_error([&] { Adagrad({w}, AdagradOptions(-1)); }, {"Adagrad", "lr = -1"}));
  EXPECT_TRUE(throws_error([&] { Adam({w}, AdamOptions().betas({1.0, 0.999})); },
                           {"Adam", "betas in [0, 1)", "betas = (1, 0.999)"}));
  EXPECT_TRUE(throws_error([&] { AdamW({w}, AdamWOptions().betas({0.9, -0.1})); },
                           {"AdamW", "betas in [0, 1)", "betas = (0.9, -0.1)"}));
  EXPECT_TRUE(throws_error([&] { Adam({w}, AdamOptions().eps(-1e-8)); }, {"eps >= 0", "eps = -1e-08"}));
  EXPECT_TRUE(throws_error([&] { Adam({w}, AdamOptions().weight_decay(-0.1)); }, {"weight_decay >= 0"}));
  EXPECT_TRUE(throws_error([&] { SGD({w}, SGDOptions(0.1).momentum(-0.5)); }, {"momentum >= 0"}));
  EXPECT_TRUE(throws_error([&] { SGD({w}, SGDOptions(0.1).nesterov(true)); },
                           {"Nesterov", "momentum = 0, dampening = 0"}));
  EXPECT_TRUE(throws_error([&] { SGD({w}, SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)); },
                           {"Nesterov", "dampening = 0.1"}));
  EXPECT_TRUE(throws_error([&] { RMSprop({w}, RMSpropOptions().alpha(-0.5)); }, {"alpha >= 0"}));
  EXPECT_TRUE(throws_error([&] { Adagrad({w}, AdagradOptions().lr_decay(-1)); }, {"lr_decay >= 0"}));
  EXPECT_TRUE(throws_error([&] { Adagrad({w}, AdagradOptions().initial_accumulator_value(-1)); },
                           {"initial_accumulator_value >= 0"}));
  // A bad value set on a group later is caught at the next step.
  SGD opt({w}, SGDOptions(0.1));
  opt.param_groups()[0].options().set_lr(-0.5);
  EXPECT_TRUE(throws_error([&] { opt.step(); }, {"SGD", "lr = -0.5"}));
}

TEST(OptimizerErrors, BadParameters) {
  auto w = zeros({2}, kFloat64).requires_grad_();
  EXPECT_TRUE(throws_error([&] { SGD(std::vector<Tensor>{}, SGDOptions(0.1)); }, {"an empty parameter list"}));
  EXPECT_TRUE(throws_error([&] { SGD({zeros({2}, kInt64)}, SGDOptions(0.1)); },
                           {"floating-point parameters", "int64"}));
  Tensor non_leaf = w * 2;
  EXPECT_TRUE(throws_error([&] { SGD({non_leaf}, SGDOptions(0.1)); }, {"leaf tensors", "non-leaf"}));
  EXPECT_TRUE(throws_error([&] { SGD({w, w}, SGDOptions(0.1)); }, {"each parameter once", "listed twice"}));
  EXPECT_TRUE(throws_error([&] { SGD({OptimizerParamGroup({w}), OptimizerParamGroup({w})}, SGDOptions(0.1)); },
                           {"more than one parameter group"}));
  EXPECT_TRUE(throws_error([&] { SGD({OptimizerParamGroup({w}, AdamOptions())}, SGDOptions(0.1)); },
                           {"options of this optimiser (SGDOptions)", "options of Adam"}));
  SGD opt({w}, SGDOptions(0.1));
  EXPECT_TRUE(throws_error([&] { opt.add_parameters({w}); }, {"SGD.add_parameters", "already in a group"}));
  w.mutable_grad() = zeros({3}, kFloat64);
  EXPECT_TRUE(throws_error([&] { opt.step(); }, {"SGD.step", "shape [2]", "shape [3]"}));
}

}  // namespace
}  // namespace graft::test
