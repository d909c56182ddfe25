// graft::memory::plan: predictions against the peak a real step at full size measures.
//
// The reference is a measurement: the same step run at the planned batch size, with
// memory::reset_peak_stats() before it and the allocator's exact peak after.
#include <gtest/gtest.h>

#include <cmath>

#include "graft/graft.h"
#include "graft/diagnostics/memory_plan.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

// The planner's step, written out: forward, loss, zero_grad, backward, step (graft train's order).
int64_t measured_peak(nn::Sequential& model, optim::Optimizer& opt, std::vector<int64_t> shape,
                      const std::function<Tensor(const Tensor&)>& forward = nullptr) {
  auto step = [&] {
    Tensor x = randn(shape);
    Tensor out = forward ? forward(x) : model->forward(x);
    Tensor loss = F::cross_entropy(out, zeros({shape[0]}, kInt64));
    out = Tensor();
    opt.zero_grad();
    loss.backward();
    loss = Tensor();
    opt.step();
  };
  step();  // steady state: optimiser state and gradients exist
  memory::reset_peak_stats();
  step();
  return memory::stats().peak_allocated_bytes;
}

double rel_error(int64_t predicted, int64_t measured) {
  return std::abs(static_cast<double>(predicted - measured)) / static_cast<double>(measured);
}

TEST(MemoryPlan, PredictsTheMlpStepPeakExactly) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(64, 256), nn::Tanh(), nn::Linear(256, 256), nn::ReLU(), nn::Linear(256, 10));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  const auto p = memory::plan(*model.ptr(), {512, 64}, &opt);
  EXPECT_TRUE(p.exact);
  const int64_t measured = measured_peak(model, opt, {512, 64});
  EXPECT_EQ(p.predicted_peak_bytes, measured) << p.table();
  // The breakdown adds up, and parameters are what the model holds.
  int64_t total = 0;
  for (int64_t v : p.at_peak) total += v;
  EXPECT_EQ(total, p.predicted_peak_bytes);
  EXPECT_GE(p.at_peak[static_cast<size_t>(memory::Category::Parameters)],
            (64 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10) * 4);
  // One momentum buffer per parameter (the only optimiser alive in this test).
  EXPECT_EQ(p.category_peak[static_cast<size_t>(memory::Category::OptimizerState)],
            (64 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10) * 4);
}

TEST(MemoryPlan, PredictsACnnWithBatchNormWithinOnePercent) {
  manual_seed(1);
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                       nn::MaxPool2d(2), nn::Flatten(), nn::Linear(8 * 14 * 14, 10));
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
  const auto p = memory::plan(*model.ptr(), {96, 1, 28, 28}, &opt);
  const int64_t measured = measured_peak(model, opt, {96, 1, 28, 28});
  EXPECT_LE(rel_error(p.predicted_peak_bytes, measured), 0.01) << p.table() << "measured " << measured;
}

TEST(MemoryPlan, TheLargestBatchUnderABudgetFitsAndOneMoreDoesNot) {
  manual_seed(2);
  nn::Sequential model(nn::Linear(32, 128), nn::Tanh(), nn::Linear(128, 10));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  const auto p = memory::plan(*model.ptr(), {64, 32}, &opt);
  const int64_t budget = memory::stats().allocated_bytes + (3 << 20);
  const int64_t b = p.max_batch_size(budget);
  ASSERT_GT(b, 64);
  EXPECT_LE(measured_peak(model, opt, {b, 32}), budget);
  EXPECT_GT(measured_peak(model, opt, {b + 1, 32}), budget);
}

TEST(MemoryPlan, PlansCheckpointedForwardsAndPredictsTheirLowerPeak) {
  manual_seed(3);
  nn::Sequential model;
  for (int i = 0; i < 8; ++i) {
    model->push_back(nn::Linear(128, 128));
    model->push_back(nn::Tanh());
  }
  model->push_back(nn::Linear(128, 10));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  auto ckpt = [&](const Tensor& x) { return checkpoint_sequential(model, 4, x); };
  memory::PlanOptions o;
  o.forward = ckpt;
  const auto with = memory::plan(*model.ptr(), {1024, 128}, &opt, o);
  const auto without = memory::plan(*model.ptr(), {1024, 128}, &opt);
  EXPECT_LT(with.predicted_peak_bytes, without.predicted_peak_bytes);
  EXPECT_LE(rel_error(with.predicted_peak_bytes, measured_peak(model, opt, {1024, 128}, ckpt)), 0.01) << with.table();
  EXPECT_LE(rel_error(without.predicted_peak_bytes, measured_peak(model, opt, {1024, 128})), 0.01) << without.table();
}

TEST(MemoryPlan, LeavesTheModelOptimiserAndGeneratorAsTheyWere) {
  manual_seed(4);
  nn::Sequential model(nn::Linear(8, 16), nn::BatchNorm1d(16), nn::Tanh(), nn::Linear(16, 3));
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.1));
  // One real step so that there are gradients and optimiser state to keep.
  F::cross_entropy(model->forward(randn({4, 8})), zeros({4}, kInt64)).backward();
  opt.step();
  std::vector<Tensor> values, grads;
  for (const auto& t : model->state_dict()) values.push_back(t.value().clone());
  for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
  std::vector<Tensor> state;
  for (const auto& t : opt.state_dict()) state.push_back(t.value().clone());
  const Generator::State rng = default_generator().state();

  memory::plan(*model.ptr(), {32, 8}, &opt);

  size_t i = 0;
  for (const auto& t : model->state_dict()) EXPECT_TRUE(equal(t.value(), values[i++])) << t.key();
  i = 0;
  for (const auto& p : model->parameters()) EXPECT_TRUE(equal(p.grad(), grads[i++]));
  i = 0;
  for (const auto& t : opt.state_dict()) EXPECT_TRUE(equal(t.value(), state[i++])) << t.key();
  const Generator::State after = default_generator().state();
  EXPECT_TRUE(after == rng);
}

TEST(MemoryPlan, RejectsBadArguments) {
  nn::Sequential model(nn::Linear(4, 2));
  EXPECT_THROW(memory::plan(*model.ptr(), {0, 4}, nullptr), Error);
  memory::PlanOptions o;
  o.loss = "hinge";
  EXPECT_THROW(memory::plan(*model.ptr(), {8, 4}, nullptr, o), Error);
  nn::Linear lin(4, 2);
  EXPECT_THROW(memory::plan(*lin.ptr(), {8, 4}, nullptr), Error);  // not a Sequential, no forward
}

}  // namespace
}  // namespace graft::test
