// LR schedulers: behaviour around the sequences the fixtures check (initial_lr, get_last_lr,
// momentum cycling, state dicts) and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace optim = graft::optim;
using optim::OptimizerParamGroup;

std::vector<OptimizerParamGroup> groups_with_lrs(const std::vector<double>& lrs) {
  std::vector<OptimizerParamGroup> g;
  for (double lr : lrs) g.emplace_back(std::vector<Tensor>{zeros({1}, kFloat64).requires_grad_()}, optim::SGDOptions(lr));
  return g;
}

TEST(LRScheduler, ConstructionPerformsTheInitialStep) {
  optim::SGD opt(groups_with_lrs({0.1, 0.02}), optim::SGDOptions(0.1));
  optim::LinearLR sched(opt, 0.5, 1.0, 4);
  EXPECT_EQ(sched.last_epoch(), 0);
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{0.05, 0.01}));
  EXPECT_EQ(sched.base_lrs(), (std::vector<double>{0.1, 0.02}));
  EXPECT_EQ(opt.param_groups()[0].initial_lr(), 0.1);
  for (int i = 0; i < 10; ++i) sched.step();
  EXPECT_EQ(sched.last_epoch(), 10);
  EXPECT_NEAR(sched.get_last_lr()[0], 0.1, 1e-15);
}

TEST(LRScheduler, LaterSchedulersStartFromInitialLr) {
  // As in PyTorch: the second scheduler's base lr is the group's initial_lr, not the lr the first
  // scheduler has already lowered.
  optim::SGD opt(groups_with_lrs({0.1}), optim::SGDOptions(0.1));
  optim::LinearLR warmup(opt, 0.1, 1.0, 5);
  EXPECT_NEAR(opt.param_groups()[0].options().lr(), 0.01, 1e-17);
  optim::LambdaLR lambda(opt, [](int64_t e) { return 1.0 / static_cast<double>(e + 1); });
  EXPECT_EQ(lambda.base_lrs(), std::vector<double>{0.1});
  EXPECT_EQ(opt.param_groups()[0].options().lr(), 0.1);  // LambdaLR's closed form: base * f(0)
  // The initial lr is saved with the optimiser's state and restored.
  auto sd = opt.state_dict();
  ASSERT_TRUE(sd.contains("param_groups.0.initial_lr"));
  optim::SGD other(groups_with_lrs({0.5}), optim::SGDOptions(0.5));
  other.load_state_dict(sd);
  EXPECT_EQ(other.param_groups()[0].initial_lr(), 0.1);
}

TEST(LRScheduler, OneCycleCyclesAdamBeta1) {
  optim::Adam opt({zeros({1}, kFloat64).requires_grad_()}, optim::AdamOptions(0.001).betas({0.9, 0.99}));
  optim::OneCycleLR sched(opt, optim::OneCycleLROptions(0.01, 10).base_momentum(0.8).max_momentum(0.9));
  auto beta1 = [&] { return std::get<0>(static_cast<optim::AdamOptions&>(opt.param_groups()[0].options()).betas()); };
  auto beta2 = [&] { return std::get<1>(static_cast<optim::AdamOptions&>(opt.param_groups()[0].options()).betas()); };
  EXPECT_EQ(beta1(), 0.9);
  EXPECT_NEAR(opt.param_groups()[0].options().lr(), 0.01 / 25, 1e-18);
  for (int i = 0; i < 2; ++i) sched.step();  // the peak (step 0.3 * 10 - 1): lr = max_lr, beta1 = base_momentum
  EXPECT_NEAR(opt.param_groups()[0].options().lr(), 0.01, 1e-15);
  EXPECT_NEAR(beta1(), 0.8, 1e-15);
  EXPECT_EQ(beta2(), 0.99);
}

TEST(LRScheduler, ReduceLROnPlateauCountsBadEpochs) {
  optim::SGD opt(groups_with_lrs({1.0, 0.5}), optim::SGDOptions(1.0));
  optim::ReduceLROnPlateau sched(opt, optim::ReduceLROnPlateau::min, 0.5, /*patience=*/2, 1e-4,
                                 optim::ReduceLROnPlateau::rel, /*cooldown=*/1, {0.0, 0.3});
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{1.0, 0.5}));
  for (double m : {1.0, 0.9, 0.9, 0.9}) sched.step(m);  // improvement, then 2 bad epochs: not yet
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{1.0, 0.5}));
  EXPECT_EQ(sched.num_bad_epochs(), 2);
  sched.step(0.95);  // the third bad epoch: reduce (group 1 stops at its min_lr)
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{0.5, 0.3}));
  EXPECT_EQ(sched.cooldown_counter(), 1);
  EXPECT_EQ(sched.best(), 0.9);
  for (int i = 0; i < 3; ++i) sched.step(0.95);  // cooldown swallows one bad epoch
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{0.5, 0.3}));
  sched.step(0.95);
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{0.25, 0.3}));
}

// Resuming from the optimiser's and the scheduler's state dicts continues the same lr sequence.
TEST(LRScheduler, StateDictRoundTrip) {
  using Make = std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)>;
  const std::vector<std::pair<const char*, Make>> kinds = {
      {"StepLR", [](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 3, 0.5); }},
      {"CosineAnnealingLR", [](optim::Optimizer& o) { return std::make_unique<optim::CosineAnnealingLR>(o, 5, 0.01); }},
      {"LinearLR", [](optim::Optimizer& o) { return std::make_unique<optim::LinearLR>(o, 0.2, 1.0, 10); }},
      {"OneCycleLR", [](optim::Optimizer& o) { return std::make_unique<optim::OneCycleLR>(o, 0.5, 20); }},
  };
  for (const auto& [name, make] : kinds) {
    SCOPED_TRACE(name);
    optim::SGD a(groups_with_lrs({0.1, 0.05}), optim::SGDOptions(0.1).momentum(0.9));
    auto sa = make(a);
    for (int i = 0; i < 17; ++i) sa->step();

    optim::SGD b(groups_with_lrs({0.1, 0.05}), optim::SGDOptions(0.1).momentum(0.9));
    auto sb = make(b);
    for (int i = 0; i < 7; ++i) sb->step();
    const auto opt_sd = b.state_dict();
    const auto sched_sd = sb->state_dict();
    EXPECT_EQ(sched_sd["last_epoch"].item<int64_t>(), 7);

    optim::SGD c(groups_with_lrs({0.1, 0.05}), optim::SGDOptions(0.1).momentum(0.9));
    auto sc = make(c);
    c.load_state_dict(opt_sd);
    sc->load_state_dict(sched_sd);
    for (int i = 0; i < 10; ++i) sc->step();
    EXPECT_EQ(sc->last_epoch(), 17);
    EXPECT_EQ(sc->get_last_lr(), sa->get_last_lr());
    for (size_t g = 0; g < 2; ++g) {
      EXPECT_EQ(c.param_groups()[g].options().lr(), a.param_groups()[g].options().lr());
      EXPECT_EQ(static_cast<optim::SGDOptions&>(c.param_groups()[g].options()).momentum(),
                static_cast<optim::SGDOptions&>(a.param_groups()[g].options()).momentum());
    }
  }
  // ReduceLROnPlateau keeps its counters.
  const std::vector<double> metrics = {1, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85};
  optim::SGD a(groups_with_lrs({0.1}), optim::SGDOptions(0.1));
  optim::ReduceLROnPlateau pa(a, optim::ReduceLROnPlateau::min, 0.5, 2);
  for (double m : metrics) pa.step(m);
  optim::SGD b(groups_with_lrs({0.1}), optim::SGDOptions(0.1));
  optim::ReduceLROnPlateau pb(b, optim::ReduceLROnPlateau::min, 0.5, 2);
  for (size_t i = 0; i < 8; ++i) pb.step(metrics[i]);
  optim::SGD c(groups_with_lrs({0.1}), optim::SGDOptions(0.1));
  optim::ReduceLROnPlateau pc(c, optim::ReduceLROnPlateau::min, 0.5, 2);
  c.load_state_dict(b.state_dict());
  pc.load_state_dict(pb.state_dict());
  for (size_t i = 8; i < metrics.size(); ++i) pc.step(metrics[i]);
  EXPECT_EQ(pc.get_last_lr(), pa.get_last_lr());
  EXPECT_EQ(pc.best(), pa.best());
  EXPECT_EQ(pc.num_bad_epochs(), pa.num_bad_epochs());
  EXPECT_EQ(pc.last_epoch(), pa.last_epoch());
  EXPECT_LT(pa.get_last_lr()[0], 0.1);

  // Mismatches are errors.
  optim::SGD three(groups_with_lrs({0.1, 0.1, 0.1}), optim::SGDOptions(0.1));
  optim::StepLR s3(three, 2);
  optim::SGD one(groups_with_lrs({0.1}), optim::SGDOptions(0.1));
  optim::StepLR s1(one, 2);
  EXPECT_TRUE(throws_error([&] { s3.load_state_dict(s1.state_dict()); },
                           {"base_lrs with one value per param group (3)", "shape [1]"}));
  EXPECT_TRUE(throws_error([&] { s1.load_state_dict(pa.state_dict()); }, {"unexpected key 'best'"}));
}

TEST(LRSchedulerErrors, BadArguments) {
  optim::SGD opt(groups_with_lrs({0.1, 0.2}), optim::SGDOptions(0.1));
  EXPECT_TRUE(throws_error([&] { optim::StepLR(opt, 0); }, {"StepLR", "step_size >= 1", "step_size = 0"}));
  EXPECT_TRUE(throws_error([&] { optim::CosineAnnealingLR(opt, 0); }, {"CosineAnnealingLR", "T_max >= 1"}));
  EXPECT_TRUE(throws_error([&] { optim::LinearLR(opt, 1.5); }, {"LinearLR", "start_factor in (0, 1]", "1.5"}));
  EXPECT_TRUE(throws_error([&] { optim::LinearLR(opt, 0.5, -0.1); }, {"end_factor in [0, 1]"}));
  EXPECT_TRUE(throws_error([&] { optim::ConstantLR(opt, 2.0); }, {"ConstantLR", "factor in (0, 1]"}));
  EXPECT_TRUE(throws_error([&] { optim::LambdaLR(opt, std::vector<optim::LambdaLR::Lambda>(1, [](int64_t) { return 1.0; })); },
                           {"LambdaLR", "2 lr_lambdas"}));
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(opt, 0.1, 0); }, {"OneCycleLR", "total_steps = 0"}));
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(opt, optim::OneCycleLROptions(0.1, 10).pct_start(1.5)); },
                           {"pct_start in [0, 1]"}));
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(opt, optim::OneCycleLROptions({0.1, 0.2, 0.3}, 10)); },
                           {"one max_lr, or one per param group (2)", "3 values"}));
  EXPECT_TRUE(throws_error([&] { optim::ReduceLROnPlateau(opt, optim::ReduceLROnPlateau::min, 1.0); },
                           {"ReduceLROnPlateau", "factor < 1", "factor = 1"}));
  EXPECT_TRUE(throws_error(
      [&] {
        optim::ReduceLROnPlateau(opt, optim::ReduceLROnPlateau::min, 0.1, 10, 1e-4, optim::ReduceLROnPlateau::rel, 0,
                                 {0.1, 0.2, 0.3});
      },
      {"one min_lr, or one per param group (2)"}));

  optim::Adagrad adagrad({zeros({1}, kFloat64).requires_grad_()}, optim::AdagradOptions());
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(adagrad, 0.1, 10); },
                           {"OneCycleLR", "momentum or betas", "Adagrad", "cycle_momentum(false)"}));
  EXPECT_NO_THROW(optim::OneCycleLR(adagrad, optim::OneCycleLROptions(0.1, 10).cycle_momentum(false)));
}

TEST(LRSchedulerErrors, OneCycleStepsPastTotalSteps) {
  optim::SGD opt(groups_with_lrs({0.1}), optim::SGDOptions(0.1).momentum(0.9));
  optim::OneCycleLR sched(opt, 1.0, 10);
  for (int i = 0; i < 10; ++i) sched.step();  // last_epoch == total_steps is still allowed
  EXPECT_TRUE(throws_error([&] { sched.step(); }, {"Tried to step 12 times", "total steps is 10"}));
}

TEST(LRSchedulerErrors, GroupsAddedAfterTheScheduler) {
  optim::SGD opt(groups_with_lrs({0.1}), optim::SGDOptions(0.1));
  optim::StepLR sched(opt, 2);
  opt.add_param_group(OptimizerParamGroup({zeros({1}, kFloat64).requires_grad_()}));
  EXPECT_TRUE(throws_error([&] { sched.step(); }, {"1 param group(s)", "2 param group(s)", "after adding"}));
}

}  // namespace
}  // namespace graft::test
