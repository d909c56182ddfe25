// GradAccumulator: in float64, K micro-batches through the accumulator give the gradients and the
// trajectory of one big batch (equal sizes, a short last group, unequal sizes weighted by sample
// count), to 1e-12; the naive loops do not; BatchNorm warning; errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;
namespace utils = graft::nn::utils;
using optim::GradAccumulator;
using optim::GradAccumulatorOptions;
using optim::Weighting;

// A float64 MLP regression problem without batch norm; rows of x/y are the samples.
struct AccumulationProblem {
  Tensor x, y, w1, b1, w2, b2;
  explicit AccumulationProblem(int64_t rows) {
    Generator g(3);
    x = randn({rows, 3}, kFloat64, &g);
    y = randn({rows, 2}, kFloat64, &g);
    w1 = randn({5, 3}, kFloat64, &g);
    b1 = randn({5}, kFloat64, &g);
    w2 = randn({2, 5}, kFloat64, &g);
    b2 = randn({2}, kFloat64, &g);
  }
  std::vector<Tensor> params() const {
    return {w1.clone().requires_grad_(), b1.clone().requires_grad_(), w2.clone().requires_grad_(),
            b2.clone().requires_grad_()};
  }
  // The mean loss over rows [start, start + n).
  Tensor loss(const std::vector<Tensor>& p, int64_t start, int64_t n) const {
    const Tensor xs = x.narrow(0, start, n), ys = y.narrow(0, start, n);
    return F::mse_loss(F::linear(F::tanh(F::linear(xs, p[0], p[1])), p[2], p[3]), ys);
  }
};

// SGD that keeps a copy of the gradients it steps with.
struct RecordingSGD : optim::SGD {
  using optim::SGD::SGD;
  std::vector<std::vector<Tensor>> seen;
  Tensor step(optim::LossClosure closure = nullptr) override {
    std::vector<Tensor> grads;
    for (const Tensor& p : parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    seen.push_back(grads);
    return optim::SGD::step(std::move(closure));
  }
};

double max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto va = values(a[i]), vb = values(b[i]);
    for (size_t j = 0; j < va.size(); ++j) d = std::max(d, std::fabs(va[j] - vb[j]));
  }
  return d;
}

void expect_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].defined() && b[i].defined()) << what << ": tensor " << i;
    const auto va = values(a[i]), vb = values(b[i]);
    ASSERT_EQ(va.size(), vb.size()) << what;
    for (size_t j = 0; j < va.size(); ++j)
      EXPECT_NEAR(va[j], vb[j], tol * std::max(1.0, std::fabs(vb[j]))) << what << ": tensor " << i << " element " << j;
  }
}

// The groups of a run: each group is a list of micro-batch sizes, taken from consecutive rows.
using Groups = std::vector<std::vector<int64_t>>;

int64_t total_rows(const Groups& groups) {
  int64_t n = 0;
  for (const auto& g : groups)
    for (int64_t s : g) n += s;
  return n;
}

// Reference: one big batch per group (the group's rows at once), clipped when asked, one step.
// Returns the gradients each step used (after clipping).
std::vector<std::vector<Tensor>> run_big_batches(const AccumulationProblem& pb, std::vector<Tensor>& p,
                                                 optim::Optimizer& opt, const Groups& groups,
                                                 std::optional<double> max_norm) {
  std::vector<std::vector<Tensor>> grads;
  int64_t row = 0;
  for (const auto& group : groups) {
    int64_t n = 0;
    for (int64_t s : group) n += s;
    opt.zero_grad();
    pb.loss(p, row, n).backward();
    if (max_norm) utils::clip_grad_norm_(p, *max_norm);
    std::vector<Tensor> g;
    for (const Tensor& t : p) g.push_back(t.grad().clone());
    grads.push_back(g);
    opt.step();
    row += n;
  }
  return grads;
}

// The same rows through the accumulator, micro-batch by micro-batch; a group shorter than K is
// ended by flush().
void run_accumulated(const AccumulationProblem& pb, const std::vector<Tensor>& p, GradAccumulator& acc,
                     const Groups& groups) {
  int64_t row = 0;
  for (const auto& group : groups) {
    for (size_t i = 0; i < group.size(); ++i) {
      const bool stepped = acc.backward(pb.loss(p, row, group[i]), group[i]);
      EXPECT_EQ(stepped, static_cast<int64_t>(i + 1) == acc.options().steps);
      row += group[i];
    }
    if (static_cast<int64_t>(group.size()) < acc.options().steps) {
      EXPECT_TRUE(acc.flush());
    }
    EXPECT_EQ(acc.pending(), 0);
  }
}

struct Case {
  std::string name;
  int64_t steps;
  Weighting weighting;
  Groups groups;
  std::optional<double> max_norm;
};

std::vector<Case> cases() {
  const Groups equal5 = {{3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}};
  // 5 steps; the last group is short (2 micro-batches of 3): ended by flush().
  const Groups short_last = {{3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3}};
  // Unequal micro-batches, and a short last group, weighted by sample count.
  const Groups unequal = {{5, 2, 3}, {4, 1, 6}, {2, 2, 7}, {1, 3, 2}, {6, 1}};
  return {
      {"equal_mean", 4, Weighting::kMean, equal5, std::nullopt},
      {"equal_mean_clipped", 4, Weighting::kMean, equal5, 0.3},
      {"equal_by_count", 4, Weighting::kBySampleCount, equal5, std::nullopt},
      {"short_last_mean", 4, Weighting::kMean, short_last, std::nullopt},
      {"short_last_by_count_clipped", 4, Weighting::kBySampleCount, short_last, 0.3},
      {"unequal_by_count", 3, Weighting::kBySampleCount, unequal, std::nullopt},
      {"unequal_by_count_clipped", 3, Weighting::kBySampleCount, unequal, 0.3},
  };
}

TEST(GradAccumulator, GradientsAndSgdMomentumTrajectoryEqualOneBigBatch) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AccumulationProblem pb(total_rows(c.groups));
    const auto opts = optim::SGDOptions(0.1).momentum(0.9);
    auto p_big = pb.params();
    RecordingSGD big(p_big, opts);
    const auto big_grads = run_big_batches(pb, p_big, big, c.groups, c.max_norm);

    auto p_acc = pb.params();
    RecordingSGD opt(p_acc, opts);
    GradAccumulator acc(opt, {.steps = c.steps, .weighting = c.weighting, .max_grad_norm = c.max_norm});
    run_accumulated(pb, p_acc, acc, c.groups);

    ASSERT_EQ(opt.seen.size(), c.groups.size());
    EXPECT_EQ(acc.steps_taken(), static_cast<int64_t>(c.groups.size()));
    for (size_t s = 0; s < c.groups.size(); ++s) expect_close(opt.seen[s], big_grads[s], 1e-12, "step " + std::to_string(s));
    expect_close(p_acc, p_big, 1e-12, "parameters after the run");
    EXPECT_GT(max_abs_diff(p_acc, pb.params()), 1e-2);  // the run moved the parameters
    if (c.max_norm) {
      // Clipping really happened: the accumulator reports the total norm before clipping.
      EXPECT_GT(*acc.last_grad_norm(), *c.max_norm);
    } else {
      EXPECT_FALSE(acc.last_grad_norm().has_value());
    }
  }
}

TEST(GradAccumulator, AdamTrajectoryEqualsOneBigBatch) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AccumulationProblem pb(total_rows(c.groups));
    const auto opts = optim::AdamOptions(0.05);
    auto p_big = pb.params();
    optim::Adam big(p_big, opts);
    run_big_batches(pb, p_big, big, c.groups, c.max_norm);

    auto p_acc = pb.params();
    optim::Adam opt(p_acc, opts);
    GradAccumulator acc(opt, {.steps = c.steps, .weighting = c.weighting, .max_grad_norm = c.max_norm});
    run_accumulated(pb, p_acc, acc, c.groups);
    expect_close(p_acc, p_big, 1e-12, "parameters after the run");
  }
}

// Note [Gradient accumulation]'s weights, by hand: with kMean a short group of k micro-batches is
// the mean of the k micro-batch gradients; with kBySampleCount each counts n_i / sum n.
TEST(GradAccumulator, WeightsOfAShortGroupByHand) {
  // loss_i = c_i * w (one parameter): the gradient of micro-batch i is c_i.
  const std::vector<double> c = {1.0, 10.0};
  for (Weighting weighting : {Weighting::kMean, Weighting::kBySampleCount}) {
    Tensor w = make({0.0}, {1}).requires_grad_();
    RecordingSGD opt({w}, optim::SGDOptions(1.0));
    GradAccumulator acc(opt, {.steps = 3, .weighting = weighting});
    EXPECT_FALSE(acc.backward((w * c[0]).sum(), 1));
    EXPECT_FALSE(acc.backward((w * c[1]).sum(), 3));
    EXPECT_EQ(acc.pending(), 2);
    EXPECT_TRUE(acc.flush());
    EXPECT_FALSE(acc.flush());  // nothing pending
    const double expected = weighting == Weighting::kMean ? (1.0 + 10.0) / 2 : (1 * 1.0 + 3 * 10.0) / 4;
    ASSERT_EQ(opt.seen.size(), 1u);
    EXPECT_DOUBLE_EQ(opt.seen[0][0].item<double>(), expected);
    EXPECT_DOUBLE_EQ(w.item<double>(), -expected);  // lr 1
    EXPECT_FALSE(w.grad().defined());               // zeroed after the step
  }
}

TEST(GradAccumulator, StaleGradientsDoNotLeakIntoAGroup) {
  Tensor w = make({0.0}, {1}).requires_grad_();
  RecordingSGD opt({w}, optim::SGDOptions(1.0));
  (w * 100.0).sum().backward();  // a stray backward before the accumulator starts
  GradAccumulator acc(opt, {.steps = 2});
  acc.backward((w * 2.0).sum());
  acc.backward((w * 4.0).sum());
  ASSERT_EQ(opt.seen.size(), 1u);
  EXPECT_DOUBLE_EQ(opt.seen[0][0].item<double>(), 3.0);
}

// The seed's loop, and the other classic mistake, are not the big batch (docs/gradients.md).
TEST(GradAccumulator, NaiveLoopsDoNotMatchOneBigBatch) {
  const int64_t K = 4, n = 3;
  const AccumulationProblem pb(K * n);
  auto p_big = pb.params();
  pb.loss(p_big, 0, K * n).backward();
  std::vector<Tensor> big;
  for (const Tensor& t : p_big) big.push_back(t.grad().clone());

  // Mistake 1 (the seed's loop): zero_grad() before every micro-batch, no scaling: only the last
  // micro-batch's gradient survives to the step.
  auto p1 = pb.params();
  optim::SGD opt1(p1, optim::SGDOptions(0.1));
  for (int64_t i = 0; i < K; ++i) {
    opt1.zero_grad();
    pb.loss(p1, i * n, n).backward();
  }
  std::vector<Tensor> g1, last;
  for (const Tensor& t : p1) g1.push_back(t.grad().clone());
  auto p_last = pb.params();
  pb.loss(p_last, (K - 1) * n, n).backward();
  for (const Tensor& t : p_last) last.push_back(t.grad().clone());
  EXPECT_GT(max_abs_diff(g1, big), 1e-3);
  expect_close(g1, last, 1e-15, "the naive loop's gradient is the last micro-batch's");

  // Mistake 2: accumulate without scaling: K times the big batch's gradient.
  auto p2 = pb.params();
  for (int64_t i = 0; i < K; ++i) pb.loss(p2, i * n, n).backward();
  std::vector<Tensor> g2, k_big;
  for (const Tensor& t : p2) g2.push_back(t.grad().clone());
  for (const Tensor& t : big) k_big.push_back(t * static_cast<double>(K));
  EXPECT_GT(max_abs_diff(g2, big), 1e-3);
  expect_close(g2, k_big, 1e-12, "unscaled accumulation is K times the mean gradient");
}

TEST(GradAccumulator, WarnsOnceAboutBatchNormInTrainMode) {
  nn::Sequential model(nn::Linear(3, 4), nn::BatchNorm1d(4));
  model->to(kFloat64);
  const Tensor x = randn({4, 3}, kFloat64);
  std::vector<std::string> warnings;
  auto collect = [&warnings](const std::string& m) { warnings.push_back(m); };
  {
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
    GradAccumulator acc(opt, model.ptr(), {.steps = 2, .on_warning = collect});
    for (int i = 0; i < 6; ++i) acc.backward(model->forward(x).sum());
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("BatchNorm"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("train mode"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("(1)"), std::string::npos) << warnings[0];  // names the layer: "1"
  }
  warnings.clear();
  {
    // steps = 1 is no accumulation: nothing to warn about; nor in eval mode.
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
    GradAccumulator one(opt, model.ptr(), {.steps = 1, .on_warning = collect});
    one.backward(model->forward(x).sum());
    model->eval();
    GradAccumulator evaluated(opt, model.ptr(), {.steps = 2, .on_warning = collect});
    evaluated.backward(model->forward(x).sum());
    evaluated.backward(model->forward(x).sum());
    EXPECT_TRUE(warnings.empty());
  }
}

TEST(GradAccumulator, Errors) {
  Tensor w = make({1.0, 2.0}, {2}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message([&] { GradAccumulator bad(opt, {.steps = 0}); }).find("steps >= 1"), std::string::npos);
  GradAccumulator acc(opt, {.steps = 2});
  EXPECT_NE(message([&] { acc.backward(w * 2.0); }).find("[2]"), std::string::npos);
  EXPECT_NE(message([&] { acc.backward(w.sum(), 0); }).find("count"), std::string::npos);
  EXPECT_EQ(acc.pending(), 0);

  // A nan gradient with error_if_nonfinite: the group is dropped, nothing is stepped.
  GradAccumulator strict(opt, {.steps = 1, .max_grad_norm = 1.0, .error_if_nonfinite = true});
  const std::string msg = message([&] { strict.backward((w * std::nan("")).sum()); });
  EXPECT_NE(msg.find("clip_grad_norm_"), std::string::npos) << msg;
  EXPECT_EQ(values(w), std::vector<double>({1.0, 2.0}));
  EXPECT_EQ(strict.pending(), 0);
  EXPECT_FALSE(w.grad().defined());
}

// Issue 14, item 15: an out-of-memory error in a micro-batch's backward may leave some parameters
// with gradients from it and others without. The accumulator drops the group (zeroes every
// gradient, pending() 0), so the next step's gradients are exactly those of a clean group.
TEST(GradAccumulator, AnOutOfMemoryErrorInBackwardDropsTheGroupSoPartialGradientsNeverJoinAStep) {
  // Six parameters (3 x 256, 256; 256 x 256, 256; 2 x 256, 2), float64; a 1024-row micro-batch
  // needs a few 2 MiB buffers in backward, the 8-row ones almost nothing.
  Generator g(5);
  const Tensor x = randn({1024 + 16, 3}, kFloat64, &g), y = randn({1024 + 16, 2}, kFloat64, &g);
  const std::vector<Tensor> init = {randn({256, 3}, kFloat64, &g), randn({256}, kFloat64, &g),
                                    0.05 * randn({256, 256}, kFloat64, &g), randn({256}, kFloat64, &g),
                                    0.05 * randn({2, 256}, kFloat64, &g), randn({2}, kFloat64, &g)};
  auto fresh = [&] {
    std::vector<Tensor> p;
    for (const Tensor& t : init) p.push_back(t.clone().requires_grad_());
    return p;
  };
  auto loss = [&](const std::vector<Tensor>& p, int64_t start, int64_t n) {
    const Tensor h = F::tanh(F::linear(F::tanh(F::linear(x.narrow(0, start, n), p[0], p[1])), p[2], p[3]));
    return F::mse_loss(F::linear(h, p[4], p[5]), y.narrow(0, start, n));
  };
  struct Limit {
    explicit Limit(int64_t bytes) { memory::set_limit(bytes); }
    ~Limit() { memory::set_limit(0); }
  };
  // Rows 0-7 are the first micro-batch, 8-1031 the one that runs out of memory, 1032-1039 two clean ones.
  // Find a limit (over what is live once the big micro-batch's graph is built) under which its
  // backward fails after writing some of the six gradients (the state the issue describes).
  int64_t limit_over = -1;
  for (int64_t over = 0; over <= (12 << 20) && limit_over < 0; over += 256 << 10) {
    std::vector<Tensor> p = fresh();
    loss(p, 0, 8).backward();
    std::vector<Tensor> before;
    for (const Tensor& t : p) before.push_back(t.grad().clone());
    Tensor big = loss(p, 8, 1024);
    bool oom = false;
    {
      Limit limit(memory::stats().allocated_bytes + over);
      try {
        big.backward();
      } catch (const memory::OutOfMemoryError&) {
        oom = true;
      }
    }
    int changed = 0;
    for (size_t i = 0; i < p.size(); ++i) changed += max_abs_diff({p[i].grad()}, {before[i]}) > 0;
    if (oom && changed > 0 && changed < 6) limit_over = over;
  }
  ASSERT_GE(limit_over, 0) << "no limit made the backward fail halfway";

  std::vector<Tensor> p = fresh();
  RecordingSGD opt(p, optim::SGDOptions(0.1));
  GradAccumulator acc(opt, {.steps = 2});
  EXPECT_FALSE(acc.backward(loss(p, 0, 8)));
  {
    Tensor big = loss(p, 8, 1024);
    Limit limit(memory::stats().allocated_bytes + limit_over);
    EXPECT_THROW(acc.backward(big), memory::OutOfMemoryError);
  }
  EXPECT_EQ(acc.pending(), 0);
  for (const Tensor& t : p) EXPECT_FALSE(t.grad().defined());  // nothing partial is left
  EXPECT_FALSE(acc.backward(loss(p, 1032, 4)));
  EXPECT_TRUE(acc.backward(loss(p, 1036, 4)));
  ASSERT_EQ(opt.seen.size(), 1u);

  // Reference: the clean group alone, by hand: the gradient of (L(1032..1035) + L(1036..1039)) / 2.
  std::vector<Tensor> q = fresh();
  ((loss(q, 1032, 4) + loss(q, 1036, 4)) / 2.0).backward();
  std::vector<Tensor> expect;
  for (const Tensor& t : q) expect.push_back(t.grad());
  expect_close(opt.seen[0], expect, 1e-12, "the step after the failed backward");
}

}  // namespace
}  // namespace graft::test
