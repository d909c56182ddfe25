// Activation checkpointing (graft/utils/checkpoint.h): gradients equal the plain run's, dropout
// masks replay, BatchNorm statistics move once, the generator ends where it would without
// checkpointing, the peak memory drops, and misuse is reported.
//
// The reference for every gradient is the same model run without checkpointing (an independent
// computation: a recorded graph backpropagated by the engine, no recompute, no replay); the
// running statistics are also checked against the momentum formula evaluated by hand.
#include <gtest/gtest.h>

#include "../support/test_util.h"

namespace graft::test {

namespace {

namespace nn = graft::nn;

constexpr double kTol = 1e-12;

Generator::State rng_state() { return default_generator().state(); }

bool same_state(const Generator::State& a, const Generator::State& b) { return a == b; }

// The gradients of `params` (cloned), then cleared to undefined.
TensorList take_grads(const TensorList& params) {
  TensorList g;
  for (const Tensor& p : params) {
    g.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    const_cast<Tensor&>(p).mutable_grad() = Tensor();
  }
  return g;
}

void expect_grads_equal(const TensorList& actual, const TensorList& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_TRUE(actual[i].defined()) << "gradient " << i << " missing";
    ASSERT_TRUE(expected[i].defined()) << "reference gradient " << i << " missing";
    EXPECT_TRUE(all_close(actual[i], expected[i], kTol, kTol)) << "gradient " << i;
  }
}

Tensor input64(IntArrayRef shape, uint64_t seed, bool requires_grad) {
  Tensor x = uniform_sample(shape, seed, -1.0, 1.0);
  if (requires_grad) x.requires_grad_(true);
  return x;
}

nn::Sequential mlp(const std::vector<int64_t>& widths, bool dropout = false, bool batch_norm = false) {
  nn::Sequential seq;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    seq->push_back(nn::Linear(widths[i], widths[i + 1]));
    if (i + 2 == widths.size()) break;
    if (batch_norm) seq->push_back(nn::BatchNorm1d(widths[i + 1]));
    seq->push_back(nn::Tanh());
    if (dropout) seq->push_back(nn::Dropout(i % 2 == 0 ? 0.5 : 0.25));
  }
  seq->to(kFloat64);
  return seq;
}

// One step's gradients (the input's, then every parameter's) and the loss, with `forward`.
struct Step {
  TensorList grads;
  double loss = 0;
  Generator::State rng_after;
};

template <class F>
Step run_step(nn::Sequential& seq, const Tensor& x, F&& forward, uint64_t seed = 7) {
  manual_seed(seed);
  Tensor loss = forward(x).pow(2).mean();
  loss.backward();
  Step s;
  s.rng_after = rng_state();
  s.loss = loss.item<double>();
  TensorList all{x};
  for (const Tensor& p : seq->parameters()) all.push_back(p);
  s.grads = take_grads(all);
  return s;
}

}  // namespace

TEST(Checkpoint, MlpTanhGradientsMatchThePlainRun) {
  manual_seed(1);
  nn::Sequential seq = mlp({8, 16, 16, 16, 4});
  Tensor x = input64({5, 8}, 11, true);
  auto plain = [&](const Tensor& in) { return seq->forward(in); };
  // The middle of the network checkpointed: a segment between two recorded parts.
  auto ckpt = [&](const Tensor& in) {
    Tensor h = seq[0]->as<nn::LinearImpl>()->forward(in);
    h = checkpoint(
        [&](const Tensor& a) {
          Tensor t = graft::tanh(a);
          t = seq[2]->as<nn::LinearImpl>()->forward(t);
          t = graft::tanh(t);
          return seq[4]->as<nn::LinearImpl>()->forward(t);
        },
        h);
    EXPECT_EQ(h.grad_fn()->name(), "CheckpointBackward0");
    Tensor t = graft::tanh(h);
    return seq[6]->as<nn::LinearImpl>()->forward(t);
  };
  Step ref = run_step(seq, x, plain);
  Step got = run_step(seq, x, ckpt);
  EXPECT_NEAR(got.loss, ref.loss, kTol);
  expect_grads_equal(got.grads, ref.grads);
  // The whole network as one checkpoint, input to output.
  Step whole = run_step(seq, x, [&](const Tensor& in) { return checkpoint(plain, in); });
  expect_grads_equal(whole.grads, ref.grads);
}

TEST(Checkpoint, SeveralInputsVariadicAndTensorList) {
  Tensor a = input64({4, 3}, 1, true), b = input64({3, 5}, 2, true), c = input64({5}, 3, false);
  auto f = [](const Tensor& p, const Tensor& q, const Tensor& r) { return graft::tanh(p.matmul(q) + r).exp(); };
  (f(a, b, c) * 1.5).sum().backward();
  TensorList ref = take_grads({a, b});

  (checkpoint(f, a, b, c) * 1.5).sum().backward();
  expect_grads_equal(take_grads({a, b}), ref);

  (checkpoint([&](const TensorList& in) { return f(in[0], in[1], in[2]); }, {a, b, c}) * 1.5).sum().backward();
  expect_grads_equal(take_grads({a, b}), ref);
  EXPECT_FALSE(c.grad().defined());
}

TEST(Checkpoint, InputUsedTwiceAndIdentity) {
  Tensor x = input64({6}, 4, true);
  (x * x.sin()).sum().backward();
  TensorList ref = take_grads({x});
  checkpoint([](const Tensor& p, const Tensor& q) { return p * q.sin(); }, x, x).sum().backward();
  expect_grads_equal(take_grads({x}), ref);

  // fn returns its input: the input keeps its own history (a leaf stays a leaf).
  Tensor y = checkpoint([](const Tensor& p) { return p; }, x);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  (y * 3.0).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), std::vector<double>(6, 3.0), {6}, kTol, kTol));
}

TEST(Checkpoint, RecomputeRunsWithGradModeOnAndTheFlagSet) {
  Tensor x = input64({3}, 5, true);
  std::vector<std::pair<bool, bool>> calls;  // (grad mode, is_checkpoint_recompute) per call of fn
  Tensor y = checkpoint(
      [&](const Tensor& in) {
        calls.emplace_back(GradMode::is_enabled(), autograd::is_checkpoint_recompute());
        return in.exp();
      },
      x);
  ASSERT_EQ(calls.size(), 1u);
  // Grad mode on in the forward too, so that its saves can be compared with the recompute's; they are
  // measured, not kept (Note [Checkpointing], "Same saved tensors").
  EXPECT_TRUE(calls[0].first) << "the forward runs with grad mode on, as the recompute does";
  EXPECT_FALSE(calls[0].second);
  EXPECT_TRUE(y.requires_grad());
  y.sum().backward();  // the node's apply runs a backward pass of its own (reentrant)
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(calls[1].first) << "the recompute records a graph";
  EXPECT_TRUE(calls[1].second);
  EXPECT_FALSE(autograd::is_checkpoint_recompute()) << "the flag is restored after backward";
  EXPECT_TRUE(GradMode::is_enabled()) << "grad mode is restored after backward";
  EXPECT_TRUE(all_close(x.grad(), x.detach().exp(), kTol, kTol));
}

TEST(Checkpoint, NestedCheckpointsAndRetainGraph) {
  manual_seed(3);
  nn::Sequential seq = mlp({6, 8, 8, 8, 3}, /*dropout=*/true);
  Tensor x = input64({4, 6}, 6, true);
  auto plain = [&](const Tensor& in) { return seq->forward(in); };
  auto nested = [&](const Tensor& in) {
    return checkpoint(
        [&](const Tensor& a) {
          Tensor h = checkpoint([&](const Tensor& b) { return checkpoint_sequential(seq, 2, b); }, a);
          return h * 2.0;
        },
        in);
  };
  Step ref = run_step(seq, x, [&](const Tensor& in) { return plain(in) * 2.0; });
  Step got = run_step(seq, x, nested);
  expect_grads_equal(got.grads, ref.grads);
  EXPECT_TRUE(same_state(got.rng_after, ref.rng_after));

  // retain_graph: a second backward recomputes again, with the same masks: gradients double.
  manual_seed(7);
  Tensor loss = nested(x).pow(2).mean();
  loss.backward({}, true);
  const Generator::State after_first = rng_state();
  loss.backward();
  EXPECT_TRUE(same_state(rng_state(), after_first));
  TensorList all{x};
  for (const Tensor& p : seq->parameters()) all.push_back(p);
  TensorList twice = take_grads(all);
  for (size_t i = 0; i < twice.size(); ++i)
    EXPECT_TRUE(all_close(twice[i], ref.grads[i] * 2.0, kTol, kTol)) << "gradient " << i;
}

TEST(Checkpoint, DropoutMasksReplayAndTheGeneratorEndsWhereThePlainRunDoes) {
  manual_seed(2);
  nn::Sequential seq = mlp({10, 32, 32, 32, 32, 5}, /*dropout=*/true);
  Tensor x = input64({16, 10}, 7, true);
  Step ref = run_step(seq, x, [&](const Tensor& in) { return seq->forward(in); });
  const Generator::State before = [&] { manual_seed(7); return rng_state(); }();
  ASSERT_FALSE(same_state(ref.rng_after, before)) << "the model draws random numbers";
  for (int64_t segments : {2, 3, 5}) {
    Step got = run_step(seq, x, [&](const Tensor& in) { return checkpoint_sequential(seq, segments, in); });
    EXPECT_NEAR(got.loss, ref.loss, kTol) << segments << " segments";
    expect_grads_equal(got.grads, ref.grads);
    EXPECT_TRUE(same_state(got.rng_after, ref.rng_after)) << segments << " segments: the generator moved differently";
  }
  // The dropout gradient is the mask: with the whole network checkpointed, each input element's
  // gradient is only right if the recompute drew the forward's masks.
  Tensor z = input64({64}, 8, true);
  nn::Dropout drop(0.5);
  manual_seed(9);
  Tensor out = checkpoint([&](const Tensor& in) { return drop(in); }, z);
  out.sum().backward();
  // out = z * mask / 0.5, so the mask is recoverable from the forward's output.
  const std::vector<double> zv = values(z), ov = values(out), gv = values(z.grad());
  for (size_t i = 0; i < zv.size(); ++i) EXPECT_NEAR(gv[i], ov[i] / zv[i], kTol) << i;
}

TEST(Checkpoint, BatchNormRunningStatisticsMoveOnce) {
  for (std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    manual_seed(4);
    auto make = [&] {
      manual_seed(4);
      nn::Sequential s(nn::Linear(6, 8), nn::BatchNorm1d(nn::BatchNormOptions(8).momentum(momentum)), nn::Tanh(),
                       nn::Linear(8, 8), nn::BatchNorm1d(nn::BatchNormOptions(8).momentum(momentum)), nn::Tanh(),
                       nn::Linear(8, 2));
      s->to(kFloat64);
      return s;
    };
    nn::Sequential ref_seq = make(), seq = make();
    Tensor x = input64({12, 6}, 9, true);
    Step ref = run_step(ref_seq, x, [&](const Tensor& in) { return ref_seq->forward(in); });
    Step got = run_step(seq, x, [&](const Tensor& in) { return checkpoint_sequential(seq, 3, in); });
    expect_grads_equal(got.grads, ref.grads);
    for (size_t idx : {1u, 4u}) {
      auto& bn = seq->at<nn::BatchNorm1dImpl>(idx);
      auto& rb = ref_seq->at<nn::BatchNorm1dImpl>(idx);
      EXPECT_TRUE(all_close(bn.running_mean, rb.running_mean, kTol, kTol)) << "BatchNorm " << idx;
      EXPECT_TRUE(all_close(bn.running_var, rb.running_var, kTol, kTol)) << "BatchNorm " << idx;
      EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1) << "counted once, not once per run of the segment";
    }
    // The first BatchNorm by hand: its input is Linear 0's output h; one update from (mean 0,
    // var 1) with factor m (momentum, or 1 / 1 for the cumulative average) gives m * mean(h) and
    // (1 - m) + m * var_unbiased(h). A second update (what the recompute would add without the
    // flag) gives (1 - (1 - m)^2) * mean(h) instead: different whenever mean(h) is not 0.
    Tensor h;
    {
      NoGradGuard ng;
      h = seq[0]->as<nn::LinearImpl>()->forward(x);
    }
    const std::vector<double> hv = values(h);
    const double m = momentum.value_or(1.0);
    std::vector<double> want_mean(8), want_var(8);
    double largest_mean = 0;
    for (int c = 0; c < 8; ++c) {
      double s = 0, ss = 0;
      for (int r = 0; r < 12; ++r) s += hv[static_cast<size_t>(r * 8 + c)];
      const double mean = s / 12;
      for (int r = 0; r < 12; ++r) {
        const double d = hv[static_cast<size_t>(r * 8 + c)] - mean;
        ss += d * d;
      }
      want_mean[static_cast<size_t>(c)] = m * mean;
      want_var[static_cast<size_t>(c)] = (1 - m) + m * ss / 11;
      largest_mean = std::max(largest_mean, std::abs(mean));
    }
    auto& bn0 = seq->at<nn::BatchNorm1dImpl>(1);
    EXPECT_TRUE(all_close(bn0.running_mean, want_mean, {8}, kTol, kTol));
    EXPECT_TRUE(all_close(bn0.running_var, want_var, {8}, kTol, kTol));
    if (momentum) {
      // The check has teeth: a double update would be off by far more than the tolerance.
      EXPECT_GT((1 - (1 - m) * (1 - m) - m) * largest_mean, 1e-3);
    }
  }
}

TEST(Checkpoint, WithoutTheFlagTheRecomputeWouldUpdateTwice) {
  // The mutation check: the same segment run a second time outside a recompute (what backward
  // would do without is_checkpoint_recompute()) moves the statistics again; inside a
  // CheckpointRecomputeGuard it does not.
  nn::BatchNorm1d bn(nn::BatchNormOptions(3));
  bn->to(kFloat64);
  Tensor x = uniform_sample({5, 3}, 10, 1.0, 2.0);  // mean about 1.5 per channel
  bn(x);
  const std::vector<double> once = values(bn->running_mean);
  {
    autograd::CheckpointRecomputeGuard g;
    bn(x);
  }
  EXPECT_EQ(values(bn->running_mean), once);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  bn(x);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
  const std::vector<double> twice = values(bn->running_mean);
  for (size_t c = 0; c < 3; ++c) EXPECT_NEAR(twice[c], once[c] * 1.9, kTol);  // 0.1 m -> 0.19 m
}

TEST(Checkpoint, InputsWithoutGradStillGiveParametersTheirGradients) {
  manual_seed(5);
  nn::Sequential seq = mlp({4, 8, 8, 2});
  Tensor x = input64({3, 4}, 12, false);
  Step ref = run_step(seq, x, [&](const Tensor& in) { return seq->forward(in); });
  Step got = run_step(seq, x, [&](const Tensor& in) {
    Tensor y = checkpoint([&](const Tensor& a) { return seq->forward(a); }, in);
    EXPECT_TRUE(y.requires_grad());
    return y;
  });
  ASSERT_EQ(got.grads.size(), ref.grads.size());
  EXPECT_FALSE(got.grads[0].defined()) << "x does not require grad";
  const TensorList ref_params(ref.grads.begin() + 1, ref.grads.end());
  expect_grads_equal(TensorList(got.grads.begin() + 1, got.grads.end()), ref_params);
  // Same through checkpoint_sequential, whose first segment takes the data.
  Step seq_got = run_step(seq, x, [&](const Tensor& in) { return checkpoint_sequential(seq, 3, in); });
  expect_grads_equal(TensorList(seq_got.grads.begin() + 1, seq_got.grads.end()), ref_params);
}

TEST(Checkpoint, OutputsWithoutGradNoGradModeAndIntegers) {
  Tensor x = input64({4}, 13, true);
  // fn's output does not depend differentiably on x: only the direct path carries a gradient.
  Tensor y = checkpoint([](const Tensor& a) { return a.detach() * 2.0; }, x);
  (y + x).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), std::vector<double>(4, 1.0), {4}, kTol, kTol));

  // Under NoGradGuard: fn is simply called, once.
  int calls = 0;
  {
    NoGradGuard ng;
    Tensor z = checkpoint([&](const Tensor& a) { ++calls; return a * 2.0; }, x);
    EXPECT_FALSE(z.requires_grad());
    EXPECT_EQ(z.grad_fn(), nullptr);
  }
  EXPECT_EQ(calls, 1);

  // An integer output carries no gradient.
  Tensor idx = checkpoint([](const Tensor& a) { return a.argmax(0); }, x);
  EXPECT_FALSE(idx.requires_grad());
}

TEST(Checkpoint, GradAndBackwardWithInputs) {
  manual_seed(6);
  nn::Sequential seq = mlp({5, 7, 3});
  Tensor x = input64({2, 5}, 14, true);
  Tensor ref = autograd::grad({seq->forward(x).pow(2).sum()}, {x})[0];
  // grad(): the input's gradient, and no .grad written anywhere (inside the segment neither).
  Tensor got = autograd::grad({checkpoint([&](const Tensor& a) { return seq->forward(a); }, x).pow(2).sum()}, {x})[0];
  EXPECT_TRUE(all_close(got, ref, kTol, kTol));
  for (const Tensor& p : seq->parameters()) EXPECT_FALSE(p.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  // backward(inputs={x}): only x's .grad.
  checkpoint([&](const Tensor& a) { return seq->forward(a); }, x).pow(2).sum().backward({}, std::nullopt, false, TensorList{x});
  EXPECT_TRUE(all_close(x.grad(), ref, kTol, kTol));
  for (const Tensor& p : seq->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Checkpoint, Errors) {
  Tensor x = input64({3}, 15, true);
  EXPECT_TRUE(throws_error([&] { checkpoint(CheckpointFunction(), {x}); }, {"checkpoint", "empty std::function"}));
  EXPECT_TRUE(throws_error([&] { checkpoint([](const TensorList& in) { return in[0]; }, {x, Tensor()}); },
                           {"checkpoint", "undefined tensor at input 1"}));
  EXPECT_TRUE(throws_error([&] { checkpoint([](const Tensor&) { return Tensor(); }, x); },
                           {"checkpoint", "undefined Tensor"}));
  // Double backward is refused.
  Tensor y = checkpoint([](const Tensor& a) { return a.pow(3); }, x);
  EXPECT_TRUE(throws_error([&] { autograd::grad({y.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true); },
                           {"checkpoint", "create_graph"}));
  // An input changed in place before backward: the recompute would start from the new value.
  Tensor a = input64({3}, 16, false) + 0.0;
  Tensor w = input64({3}, 17, true);
  Tensor z = checkpoint([](const Tensor& p, const Tensor& q) { return p * q; }, a, w);
  a.add_(1.0);
  EXPECT_TRUE(throws_error([&] { z.sum().backward(); }, {"CheckpointBackward0", "modified by an inplace operation"}));
  // A recompute with another shape.
  int n = 3;
  Tensor v = checkpoint([&](const Tensor& p) { return p.narrow(0, 0, n); }, x);
  n = 2;
  EXPECT_TRUE(throws_error([&] { v.sum().backward(); }, {"checkpoint", "the forward's shape [3]", "[2]"}));
}

// Issue 34, item 11: a recompute that saves other tensors than the forward did (another shape, another
// dtype, another number of them) is an error naming the saved tensor, as PyTorch's checkpoint raises
// "Recomputed values ... have different metadata than during the forward pass"; the output's shape
// alone (scalar here) cannot tell. Without the check, the gradient of the 2-row recompute came back.
TEST(Checkpoint, ARecomputeThatSavesOtherTensorsIsAnError) {
  Tensor x = input64({3, 4}, 21, true);
  int calls = 0;  // captured by reference: the forward slices 3 rows, the recompute 2
  Tensor y = checkpoint(
      [&calls](const Tensor& a) { return a.narrow(0, 0, calls++ == 0 ? 3 : 2).exp().sum(); }, x);
  EXPECT_TRUE(throws_error([&] { y.backward(); },
                           {"checkpoint", "saved tensor 0", "[3, 4], float64", "[2, 4], float64",
                            "must not depend on state"}));
  EXPECT_EQ(calls, 2);

  // Another dtype: exp saves its output, float64 in the forward and float32 in the recompute.
  calls = 0;
  y = checkpoint([&calls](const Tensor& a) { return (calls++ == 0 ? a : a.to(kFloat32)).exp().sum().to(kFloat64); },
                 x);
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"checkpoint", "saved tensor 0", "float64", "float32"}));

  // One more op in the recompute: a second saved tensor the forward did not have.
  calls = 0;
  y = checkpoint(
      [&calls](const Tensor& a) {
        Tensor h = a.exp();
        if (calls++ > 0) h = h.exp();
        return h.sum();
      },
      x);
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"checkpoint", "1 tensors for backward", "saved tensor 1"}));
  // One fewer: counted once the recompute is done.
  calls = 0;
  y = checkpoint(
      [&calls](const Tensor& a) {
        Tensor h = a.exp();
        if (calls++ == 0) h = h.exp();
        return h.sum();
      },
      x);
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"checkpoint", "2 tensors for backward", "1 saved tensors"}));

  // The same function twice: the gradient of sum(exp(x)) is exp(x).
  x.mutable_grad() = Tensor();
  y = checkpoint([](const Tensor& a) { return a.exp().sum(); }, x);
  y.backward();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_NEAR(x.grad()[i][j].item<double>(), std::exp(x[i][j].item<double>()), kTol);
}

TEST(CheckpointSequential, SegmentCountsGiveThePlainGradients) {
  manual_seed(8);
  nn::Sequential seq = mlp({6, 12, 12, 12, 12, 12, 3}, /*dropout=*/true, /*batch_norm=*/false);
  const int64_t n = static_cast<int64_t>(seq->size());
  Tensor x = input64({9, 6}, 18, true);
  Step ref = run_step(seq, x, [&](const Tensor& in) { return seq->forward(in); });
  for (int64_t segments : {int64_t{1}, int64_t{2}, int64_t{4}, n - 1, n}) {
    Step got = run_step(seq, x, [&](const Tensor& in) { return checkpoint_sequential(seq, segments, in); });
    EXPECT_NEAR(got.loss, ref.loss, kTol) << segments;
    expect_grads_equal(got.grads, ref.grads);
    EXPECT_TRUE(same_state(got.rng_after, ref.rng_after)) << segments;
  }
  // One segment is a plain forward: the output's node is the last module's, not a checkpoint.
  EXPECT_NE(checkpoint_sequential(seq, 1, x).grad_fn()->name(), "CheckpointBackward0");
  // Two: the first run is checkpointed.
  {
    NoGradGuard ng;
    EXPECT_EQ(checkpoint_sequential(seq, 2, x).grad_fn(), nullptr);
  }
}

TEST(CheckpointSequential, Errors) {
  nn::Sequential seq = mlp({3, 4, 2});  // 3 modules
  Tensor x = input64({2, 3}, 19, true);
  EXPECT_TRUE(throws_error([&] { checkpoint_sequential(seq, 0, x); },
                           {"checkpoint_sequential", "segments = 0", "between 1 and"}));
  EXPECT_TRUE(throws_error([&] { checkpoint_sequential(seq, 4, x); },
                           {"checkpoint_sequential", "segments = 4", "(3)"}));
  EXPECT_TRUE(throws_error([&] { checkpoint_sequential(seq, -1, x); }, {"segments = -1"}));
  nn::Sequential empty;
  EXPECT_TRUE(throws_error([&] { checkpoint_sequential(empty, 1, x); }, {"an empty Sequential"}));
  EXPECT_TRUE(throws_error([&] { plan_checkpoint_sequential(seq, CheckpointBudget{0}, x); },
                           {"a positive byte budget"}));
  EXPECT_TRUE(throws_error([&] { checkpoint_sequential(seq, CheckpointBudget{16}, x); },
                           {"plan_checkpoint_sequential", "smallest predicted peak", "raise the budget"}));
}

namespace {

// Peak tensor bytes of one forward + backward, above what was live before.
template <class F>
int64_t step_peak(F&& forward, const Tensor& x, nn::Sequential& seq) {
  seq->zero_grad();
  const int64_t base = memory::stats().allocated_bytes;
  memory::reset_peak_stats();
  forward(x).pow(2).mean().backward();
  const int64_t peak = memory::stats().peak_allocated_bytes - base;
  seq->zero_grad();
  return peak;
}

nn::Sequential deep_tanh(int64_t depth, int64_t width) {
  nn::Sequential seq;
  for (int64_t i = 0; i < depth; ++i) {
    seq->push_back(nn::Linear(width, width));
    seq->push_back(nn::Tanh());
  }
  seq->to(kFloat64);
  return seq;
}

}  // namespace

TEST(CheckpointSequential, PeakMemoryDropsForAnActivationDominatedModel) {
  manual_seed(10);
  // 32 layers of width 32 on a batch of 512: each kept activation is 128 KiB, all the parameters
  // 264 KiB. Plain: 32 kept Tanh outputs plus the loss's backward (4 more at the start of backward).
  nn::Sequential seq = deep_tanh(32, 32);
  Tensor x = input64({512, 32}, 20, false);
  const int64_t act = 512 * 32 * 8;
  const int64_t plain = step_peak([&](const Tensor& in) { return seq->forward(in); }, x, seq);
  EXPECT_GE(plain, 32 * act);
  for (int64_t segments : {4, 6, 8}) {
    const int64_t ckpt = step_peak([&](const Tensor& in) { return checkpoint_sequential(seq, segments, in); }, x, seq);
    EXPECT_LT(ckpt * 2, plain) << "plain " << plain << ", " << segments << " segments " << ckpt;
    // At most: the kept segment inputs, the widest segment's Tanh outputs (half its modules, the
    // 64 modules split S ways and rounded up, plus one), the gradients and a working set of six
    // activations (the loss's backward takes four; an unfused tanh backward three plus its input).
    const int64_t widest = (64 + segments - 1) / segments / 2 + 1;
    EXPECT_LE(ckpt, (segments - 1 + widest + 6) * act + 32 * (32 * 32 + 32) * 8) << segments << " segments";
  }
}

TEST(CheckpointSequential, BudgetPlanFitsAndIsAnUpperBound) {
  manual_seed(11);
  nn::Sequential seq = deep_tanh(12, 32);
  Tensor x = input64({256, 32}, 21, false);
  const Generator::State before = rng_state();
  const std::vector<double> w0 = values(seq->parameters()[0]);
  CheckpointPlan big = plan_checkpoint_sequential(seq, CheckpointBudget{int64_t{1} << 40}, x);
  EXPECT_EQ(big.segments, 1);
  EXPECT_TRUE(same_state(rng_state(), before));
  // The probe's findings for Linear -> Tanh: Linear keeps its input, Tanh its output.
  EXPECT_TRUE(big.keeps_in[0]);
  EXPECT_FALSE(big.keeps_out[0]);
  EXPECT_FALSE(big.keeps_in[1]);
  EXPECT_TRUE(big.keeps_out[1]);
  EXPECT_EQ(big.out[0], 256 * 32 * 8);
  EXPECT_EQ(big.param_grad_bytes, 12 * (32 * 32 + 32) * 8);
  const int64_t plain = step_peak([&](const Tensor& in) { return seq->forward(in); }, x, seq);
  EXPECT_LE(plain, big.predicted_by_segments[0]) << big.str();
  EXPECT_GE(plain, big.predicted_by_segments[0] * 9 / 10) << big.str();
  // A budget between the smallest prediction and the plain one: the plan fits it, measured.
  const int64_t smallest = *std::min_element(big.predicted_by_segments.begin(), big.predicted_by_segments.end());
  const int64_t budget = (smallest + big.predicted_by_segments[0]) / 2;
  CheckpointPlan plan = plan_checkpoint_sequential(seq, CheckpointBudget{budget}, x);
  EXPECT_GT(plan.segments, 1);
  EXPECT_LE(plan.predicted_peak_bytes, budget);
  EXPECT_GT(plan.predicted_by_segments[static_cast<size_t>(plan.segments - 2)], budget) << "the fewest segments";
  const int64_t measured =
      step_peak([&](const Tensor& in) { return checkpoint_sequential(seq, CheckpointBudget{budget}, in); }, x, seq);
  EXPECT_LE(measured, budget) << plan.str();
  EXPECT_GE(measured, plan.predicted_peak_bytes * 85 / 100) << plan.str();
  EXPECT_EQ(values(seq->parameters()[0]), w0);
}

}  // namespace graft::test
