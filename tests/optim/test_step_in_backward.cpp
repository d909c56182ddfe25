// StepInBackward (Note [Optimizer step in backward]): for SGD (momentum, Nesterov, weight decay),
// Adam, Adam with AMSGrad, AdamW, RMSprop and Adagrad, a float64 MLP (two linear layers and tanh,
// two param groups with different learning rates, an ExponentialLR schedule) trained with the
// updates inside backward ends every step with the parameters of the plain loop (zero_grad,
// backward, step), to 1e-12; the gradients are gone after backward and the gradient memory of a
// step is the largest parameter's instead of the sum of all (worked out from the shapes);
// per-parameter clipping equals clipping each gradient before a plain step; the combinations that
// need every gradient (global clipping, GradAccumulator, step()) and the unsupported ones are
// errors; a deeper float32 model's peak memory with and without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;
using optim::StepInBackward;
using optim::StepInBackwardOptions;

namespace sib {

// out = tanh(x w1^T + b1) w2^T + b2 on 16 rows of 6 features, mse against 8 targets. Parameter
// shapes (float64): w1 [32, 6] = 1536 B, b1 [32] = 256 B, w2 [8, 32] = 2048 B, b2 [8] = 64 B;
// all gradients 3904 B, the largest 2048 B.
constexpr int64_t kAllGradBytes = (32 * 6 + 32 + 8 * 32 + 8) * 8;
constexpr int64_t kLargestGradBytes = 8 * 32 * 8;

struct Mlp {
  Tensor x, y;
  std::vector<Tensor> init;
  Mlp() {
    Generator g(17);
    x = randn({16, 6}, kFloat64, &g);
    y = randn({16, 8}, kFloat64, &g);
    init = {randn({32, 6}, kFloat64, &g) * 0.5, randn({32}, kFloat64, &g) * 0.5, randn({8, 32}, kFloat64, &g) * 0.5,
            randn({8}, kFloat64, &g) * 0.5};
  }
  std::vector<Tensor> params() const {
    std::vector<Tensor> p;
    for (const Tensor& t : init) p.push_back(t.clone().requires_grad_());
    return p;
  }
  // Step k sees its own data (the inputs scaled), so each step's gradient differs.
  Tensor loss(const std::vector<Tensor>& p, int k) const {
    const Tensor xs = x * (1.0 + 0.1 * k);
    return F::mse_loss(F::linear(F::tanh(F::linear(xs, p[0], p[1])), p[2], p[3]), y);
  }
};

// Two groups: {w1, b1} with `o`, {w2, b2} with half its learning rate.
template <class Opt, class O>
std::unique_ptr<optim::Optimizer> two_groups(const std::vector<Tensor>& p, const O& o) {
  O half = o;
  half.lr(o.lr() * 0.5);
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{p[0], p[1]});
  groups.emplace_back(std::vector<Tensor>{p[2], p[3]}, half);
  return std::make_unique<Opt>(std::move(groups), o);
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(const std::vector<Tensor>&)>;

double largest_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<double> va = values(a[i]), vb = values(b[i]);
    for (size_t j = 0; j < va.size(); ++j) d = std::max(d, std::fabs(va[j] - vb[j]));
  }
  return d;
}

// N steps of the plain loop and N of step-in-backward from the same weights: equal after each.
void expect_same_trajectory(const MakeOptimizer& make, int steps = 6) {
  const Mlp mlp;
  std::vector<Tensor> plain = mlp.params(), inside = mlp.params();
  auto plain_opt = make(plain);
  auto inside_opt = make(inside);
  optim::ExponentialLR plain_sched(*plain_opt, 0.9), inside_sched(*inside_opt, 0.9);
  StepInBackward step_in_backward(*inside_opt);
  for (int k = 0; k < steps; ++k) {
    plain_opt->zero_grad();
    mlp.loss(plain, k).backward();
    plain_opt->step();
    plain_sched.step();

    inside_opt->zero_grad();  // finds no gradient: a no-op
    mlp.loss(inside, k).backward();
    inside_sched.step();
    for (const Tensor& p : inside) EXPECT_FALSE(p.grad().defined()) << "step " << k;
    EXPECT_LE(largest_difference(plain, inside), 1e-12) << "step " << k;
    EXPECT_EQ(inside_opt->steps_taken(), k + 1);
  }
  // Not vacuous: every parameter moved.
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_GT(largest_difference({plain[i]}, {mlp.init[i]}), 1e-3) << i;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// An optimiser that updates in step() itself and has no step_group() (as ZeroRedundancyOptimizer).
struct WholeStepOnly : optim::Optimizer {
  explicit WholeStepOnly(const std::vector<Tensor>& p)
      : optim::Optimizer({optim::OptimizerParamGroup(p)}, optim::SGDOptions(0.1).clone()) {}
  Tensor step(optim::LossClosure) override { return {}; }
};

}  // namespace sib

TEST(StepInBackward, SgdMomentumNesterovWeightDecayMatchesThePlainLoop) {
  sib::expect_same_trajectory([](const std::vector<Tensor>& p) {
    return sib::two_groups<optim::SGD>(p, optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-2));
  });
}

TEST(StepInBackward, AdamMatchesThePlainLoop) {
  sib::expect_same_trajectory([](const std::vector<Tensor>& p) {
    return sib::two_groups<optim::Adam>(p, optim::AdamOptions(1e-2).weight_decay(1e-2));
  });
}

TEST(StepInBackward, AdamAmsgradMatchesThePlainLoop) {
  sib::expect_same_trajectory([](const std::vector<Tensor>& p) {
    return sib::two_groups<optim::Adam>(p, optim::AdamOptions(1e-2).amsgrad(true));
  });
}

TEST(StepInBackward, AdamWMatchesThePlainLoop) {
  sib::expect_same_trajectory([](const std::vector<Tensor>& p) {
    return sib::two_groups<optim::AdamW>(p, optim::AdamWOptions(1e-2).weight_decay(0.1));
  });
}

TEST(StepInBackward, RmspropMatchesThePlainLoop) {
  sib::expect_same_trajectory([](const std::vector<Tensor>& p) {
    return sib::two_groups<optim::RMSprop>(p, optim::RMSpropOptions(1e-2).momentum(0.5).centered(true));
  });
}

TEST(StepInBackward, AdagradMatchesThePlainLoop) {
  sib::expect_same_trajectory([](const std::vector<Tensor>& p) {
    return sib::two_groups<optim::Adagrad>(p, optim::AdagradOptions(0.1).lr_decay(1e-3));
  });
}

// The peak of the Gradients category over a training step: the sum of every parameter's bytes
// for the plain loop, the largest parameter's with step-in-backward (backward frees each gradient
// once its parameter is updated, before the next one is written).
TEST(StepInBackward, GradientMemoryOfAStepIsTheLargestParameterNotTheSum) {
  const sib::Mlp mlp;
  auto peak_of_step = [&](bool inside) {
    std::vector<Tensor> p = mlp.params();
    optim::Adam opt(p, optim::AdamOptions(1e-2));
    std::unique_ptr<StepInBackward> attached;
    if (inside) attached = std::make_unique<StepInBackward>(opt);
    int64_t peak = 0;
    for (int k = 0; k < 2; ++k) {  // the second step runs with the optimiser state in place
      opt.zero_grad();
      memory::reset_peak_stats();
      const int64_t before = memory::stats()[memory::Category::Gradients].current_bytes;
      mlp.loss(p, k).backward();
      if (!inside) opt.step();
      peak = memory::stats()[memory::Category::Gradients].peak_bytes - before;
      for (const Tensor& t : p) EXPECT_EQ(t.grad().defined(), !inside);
    }
    return peak;
  };
  EXPECT_EQ(peak_of_step(false), sib::kAllGradBytes);
  const int64_t inside = peak_of_step(true);
  EXPECT_GT(inside, 0);
  EXPECT_LE(inside, sib::kLargestGradBytes);
}

// Per-parameter clipping in the hook equals clipping each gradient before a plain step.
TEST(StepInBackward, PerParameterClippingEqualsClippingEachGradientBeforeAPlainStep) {
  const sib::Mlp mlp;
  for (const bool by_value : {true, false}) {
    SCOPED_TRACE(by_value ? "clip_grad_value" : "max_grad_norm");
    const double limit = by_value ? 0.05 : 0.1;
    std::vector<Tensor> plain = mlp.params(), inside = mlp.params();
    optim::SGD plain_opt(plain, optim::SGDOptions(0.1).momentum(0.9));
    optim::SGD inside_opt(inside, optim::SGDOptions(0.1).momentum(0.9));
    StepInBackward step_in_backward(inside_opt, by_value ? StepInBackwardOptions().clip_grad_value(limit)
                                                         : StepInBackwardOptions().max_grad_norm(limit));
    int clipped = 0;  // gradients the clipping changed (so that the comparison is not vacuous)
    for (int k = 0; k < 4; ++k) {
      plain_opt.zero_grad();
      mlp.loss(plain, k).backward();
      for (const Tensor& p : plain) {
        const std::vector<double> g = values(p.grad());
        double largest = 0, sq = 0;
        for (double v : g) largest = std::max(largest, std::fabs(v)), sq += v * v;
        if (by_value) {
          clipped += largest > limit;
          nn::utils::clip_grad_value_(p, limit);
        } else {
          clipped += std::sqrt(sq) > limit;
          nn::utils::clip_grad_norm_(p, limit);  // one parameter: its own norm
        }
      }
      plain_opt.step();
      mlp.loss(inside, k).backward();
      EXPECT_LE(sib::largest_difference(plain, inside), 1e-12) << "step " << k;
    }
    EXPECT_GT(clipped, 4);
  }
}

TEST(StepInBackward, GlobalClippingAfterABackwardThatSteppedIsAnError) {
  const sib::Mlp mlp;
  std::vector<Tensor> p = mlp.params();
  optim::SGD opt(p, optim::SGDOptions(0.1));
  {
    StepInBackward step_in_backward(opt);
    mlp.loss(p, 0).backward();
    for (const std::string& msg :
         {error_message([&] { nn::utils::clip_grad_norm_(p, 1.0); }), error_message([&] { opt.clip_grad_norm_(1.0); }),
          error_message([&] { nn::utils::clip_grad_value_(p, 1.0); })}) {
      EXPECT_TRUE(sib::contains(msg, "StepInBackward")) << msg;
      EXPECT_TRUE(sib::contains(msg, "clip_grad_value")) << msg;
      EXPECT_TRUE(sib::contains(msg, "max_grad_norm")) << msg;
    }
  }
  // Detached: clipping parameters without gradients is 0 again, as in PyTorch.
  EXPECT_EQ(nn::utils::clip_grad_norm_(p, 1.0), 0.0);
}

TEST(StepInBackward, GradAccumulatorWithAStepInBackwardIsAnError) {
  const sib::Mlp mlp;
  std::vector<Tensor> p = mlp.params();
  optim::SGD opt(p, optim::SGDOptions(0.1));
  optim::GradAccumulator made_before(opt, {.steps = 2});
  StepInBackward step_in_backward(opt);
  const std::string at_construction = error_message([&] { optim::GradAccumulator acc(opt, {.steps = 2}); });
  EXPECT_TRUE(sib::contains(at_construction, "GradAccumulator")) << at_construction;
  EXPECT_TRUE(sib::contains(at_construction, "StepInBackward")) << at_construction;
  const std::string at_backward = error_message([&] { made_before.backward(mlp.loss(p, 0)); });
  EXPECT_TRUE(sib::contains(at_backward, "StepInBackward")) << at_backward;
  EXPECT_LE(sib::largest_difference(p, mlp.init), 0.0);  // nothing ran
}

TEST(StepInBackward, StepWhileAttachedIsAnErrorAndTheLoopIsBackwardAlone) {
  const sib::Mlp mlp;
  std::vector<Tensor> p = mlp.params();
  optim::SGD opt(p, optim::SGDOptions(0.1));
  {
    StepInBackward step_in_backward(opt);
    EXPECT_TRUE(opt.steps_in_backward());
    const std::string msg = error_message([&] { opt.step(); });
    EXPECT_TRUE(sib::contains(msg, "SGD.step")) << msg;
    EXPECT_TRUE(sib::contains(msg, "StepInBackward")) << msg;
    EXPECT_LE(sib::largest_difference(p, mlp.init), 0.0);
    // One per optimiser; no new parameters while attached.
    EXPECT_TRUE(sib::contains(error_message([&] { StepInBackward second(opt); }), "attached already"));
    Tensor extra = zeros({3}, kFloat64).requires_grad_();
    EXPECT_TRUE(sib::contains(error_message([&] { opt.add_param_group(optim::OptimizerParamGroup({extra})); }),
                              "StepInBackward"));
    EXPECT_TRUE(sib::contains(error_message([&] { opt.add_parameters({extra}); }), "StepInBackward"));
  }
  // Detached: the hooks are gone, backward leaves the gradients and step() works.
  EXPECT_FALSE(opt.steps_in_backward());
  mlp.loss(p, 0).backward();
  for (const Tensor& t : p) EXPECT_TRUE(t.grad().defined());
  EXPECT_LE(sib::largest_difference(p, mlp.init), 0.0);
  opt.step();
  EXPECT_GT(sib::largest_difference(p, mlp.init), 0.0);
}

TEST(StepInBackward, UnsupportedOptimisersAndParametersAreRefused) {
  Tensor w = make({1.0, 2.0}, {2}).requires_grad_();
  sib::WholeStepOnly whole({w});
  const std::string msg = error_message([&] { StepInBackward s(whole); });
  EXPECT_TRUE(sib::contains(msg, "step_group")) << msg;
  EXPECT_FALSE(whole.steps_in_backward());

  // A parameter with a post-accumulate-grad hook already (DistributedDataParallel's).
  Tensor v = make({1.0, 2.0}, {2}).requires_grad_();
  auto handle = v.register_post_accumulate_grad_hook([](const Tensor&) {});
  optim::SGD opt({v}, optim::SGDOptions(0.1));
  EXPECT_TRUE(sib::contains(error_message([&] { StepInBackward s(opt); }), "post-accumulate-grad"));
  handle.remove();
  StepInBackward s(opt);  // fine once it is gone

  // Frozen parameters are skipped.
  Tensor frozen = make({1.0}, {1});
  Tensor live = make({3.0}, {1}).requires_grad_();
  optim::SGD mixed({live, frozen}, optim::SGDOptions(0.5));
  StepInBackward partial(mixed);
  EXPECT_EQ(partial.parameters().size(), 1u);
  (live * live).sum().backward();                   // d/dlive = 2 * live = 6
  EXPECT_EQ(values(live), std::vector<double>{0.0});  // 3 - 0.5 * 6
}

// Every pass that writes .grad updates; autograd::grad writes none and updates nothing; a second
// pass through a retained graph sees the weights it saved modified in place (an error).
TEST(StepInBackward, PassesThatWriteGradUpdateAndRetainedGraphsRefuseASecondPass) {
  const sib::Mlp mlp;
  std::vector<Tensor> p = mlp.params();
  optim::SGD opt(p, optim::SGDOptions(0.1));
  StepInBackward step_in_backward(opt);
  Tensor loss = mlp.loss(p, 0);
  const TensorList g = autograd::grad({loss}, {p[0]}, {}, /*retain_graph=*/true);
  EXPECT_TRUE(g[0].defined());
  EXPECT_LE(sib::largest_difference(p, mlp.init), 0.0);
  EXPECT_EQ(opt.steps_taken(), 0);
  loss.backward({}, /*retain_graph=*/true);
  EXPECT_GT(sib::largest_difference(p, mlp.init), 0.0);
  EXPECT_EQ(opt.steps_taken(), 1);
  EXPECT_THROW(loss.backward(), Error);
}

// With checkpoint_sequential (each segment's parameters used in that segment only), the
// recomputation of a segment runs before any of its parameters is updated: the trajectory is the
// plain loop's, to 1e-12.
TEST(StepInBackward, CheckpointSequentialMatchesThePlainLoop) {
  auto build = [] {
    manual_seed(9);
    nn::Sequential seq;
    for (int i = 0; i < 4; ++i) {
      seq->push_back(nn::Linear(nn::LinearOptions(6, 6)));
      seq->push_back(nn::Tanh());
    }
    seq->to(kFloat64);
    return seq;
  };
  nn::Sequential plain = build(), inside = build();
  Generator gen(4);
  const Tensor x = randn({5, 6}, kFloat64, &gen);
  optim::Adam plain_opt(plain->parameters(), optim::AdamOptions(1e-2));
  optim::Adam inside_opt(inside->parameters(), optim::AdamOptions(1e-2));
  StepInBackward step_in_backward(inside_opt);
  const std::vector<Tensor> start = [&] {
    std::vector<Tensor> c;
    for (const Tensor& t : plain->parameters()) c.push_back(t.detach().clone());
    return c;
  }();
  for (int k = 0; k < 3; ++k) {
    plain_opt.zero_grad();
    checkpoint_sequential(plain, 3, x * (1.0 + k)).square().mean().backward();
    plain_opt.step();
    checkpoint_sequential(inside, 3, x * (1.0 + k)).square().mean().backward();
    EXPECT_LE(sib::largest_difference(plain->parameters(), inside->parameters()), 1e-12) << k;
  }
  EXPECT_GT(sib::largest_difference(plain->parameters(), start), 1e-3);
}

// A parameter used outside and inside a checkpointed segment gets its gradient in two passes (the
// recomputation's and the outer one): an error, never an update with half a gradient.
TEST(StepInBackward, AGradientWrittenTwiceInOnePassIsAnError) {
  Generator gen(5);
  const Tensor x = randn({4, 3}, kFloat64, &gen);
  Tensor w = randn({3}, kFloat64, &gen).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  StepInBackward step_in_backward(opt);
  auto forward = [&] {
    const Tensor h = x + w;  // saves nothing: the second write, not a saved weight, is what fails
    return checkpoint([&](const Tensor& a) { return F::tanh(a) * w; }, h).square().mean();
  };
  const std::string msg = error_message([&] { forward().backward(); });
  EXPECT_TRUE(sib::contains(msg, "once per backward pass")) << msg;
  EXPECT_FALSE(w.grad().defined());  // the second part is dropped, not left for the next pass
  // The pass that threw has ended: the next passes update once each.
  const int64_t before = opt.steps_taken();
  for (int k = 0; k < 2; ++k) {
    const std::vector<double> w0 = values(w);
    (x + w).square().mean().backward();  // d/dw_j = sum_i 2 (x_ij + w_j) / 12, by hand below
    const std::vector<double> xs = values(x);
    for (size_t j = 0; j < 3; ++j) {
      double g = 0;
      for (size_t i = 0; i < 4; ++i) g += 2 * (xs[i * 3 + j] + w0[j]) / 12;
      EXPECT_NEAR(values(w)[j], w0[j] - 0.1 * g, 1e-14) << k << " " << j;
    }
  }
  EXPECT_EQ(opt.steps_taken(), before + 2);
}

// Issue 31's measurement: 8 Linear(512, 512) layers with tanh, batch 64, float32, Adam; the peak
// of live tensor bytes over one training step (the second: Adam's state in place) with and
// without step-in-backward. The gradients are 8 x (512 x 512 + 512) x 4 B = 8.02 MiB in all, the
// largest 1 MiB: step-in-backward must save at least the difference less one layer's.
TEST(StepInBackward, PeakMemoryOfADeeperModel) {
  constexpr int64_t kLayers = 8, kWidth = 512, kBatch = 64;
  const int64_t layer_bytes = (kWidth * kWidth + kWidth) * 4;
  struct Figures {
    int64_t above = 0;      // the step's peak above what was live when it started
    int64_t state = 0;      // live when it started: parameters, Adam's moments, the input
    int64_t gradients = 0;  // the Gradients category's peak
  };
  auto measure = [&](bool inside) {
    manual_seed(3);
    nn::Sequential model;
    for (int64_t i = 0; i < kLayers; ++i) {
      model->push_back(nn::Linear(kWidth, kWidth));
      model->push_back(nn::Tanh());
    }
    optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
    std::unique_ptr<StepInBackward> attached;
    if (inside) attached = std::make_unique<StepInBackward>(opt);
    const Tensor x = randn({kBatch, kWidth});
    Figures f;
    for (int k = 0; k < 2; ++k) {  // the second step: Adam's state in place
      opt.zero_grad();
      memory::reset_peak_stats();
      const memory::Stats before = memory::stats();
      model->forward(x).square().mean().backward();
      if (!inside) opt.step();
      const memory::Stats after = memory::stats();
      f.above = after.peak_allocated_bytes - before.allocated_bytes;
      f.state = before.allocated_bytes;
      f.gradients = after[memory::Category::Gradients].peak_bytes - before[memory::Category::Gradients].current_bytes;
    }
    return f;
  };
  const Figures plain = measure(false), inside = measure(true);
  const double mib = 1048576.0;
  std::printf("[ figures  ] 8 x Linear(512, 512), batch 64, float32, Adam; one step's peak of live tensor bytes: "
              "plain %.2f MiB, step-in-backward %.2f MiB (of which live before the step %.2f / %.2f MiB; "
              "gradients' peak %.2f / %.2f MiB)\n",
              (plain.state + plain.above) / mib, (inside.state + inside.above) / mib, plain.state / mib,
              inside.state / mib, plain.gradients / mib, inside.gradients / mib);
  EXPECT_EQ(plain.gradients, kLayers * layer_bytes);
  EXPECT_LE(inside.gradients, kWidth * kWidth * 4);
  EXPECT_LE(inside.above, plain.above - (kLayers - 2) * layer_bytes);
}

}  // namespace
}  // namespace graft::test
