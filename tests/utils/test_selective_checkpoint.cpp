// Selective recomputation (CheckpointPolicy::kSaveMatmuls, Note [Selective recomputation]): the
// gradients equal the plain run's (an independent computation: the recorded graph of addmm/matmul
// nodes, no recompute, no kept outputs), the peak memory falls between the plain run's and full
// recomputation's, and a recompute that runs other linears is reported.
#include <gtest/gtest.h>

#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace nn = graft::nn;

TensorList grads_of(const TensorList& params) {
  TensorList g;
  for (const Tensor& p : params) {
    g.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    const_cast<Tensor&>(p).mutable_grad() = Tensor();
  }
  return g;
}

void expect_close(const TensorList& a, const TensorList& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].defined() && b[i].defined()) << "gradient " << i;
    EXPECT_TRUE(allclose(a[i], b[i], 1e-12, 1e-12)) << "gradient " << i;
  }
}

TEST(SelectiveCheckpoint, TransformerLayerGradientsEqualThePlainRun) {
  manual_seed(3);
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  layer->to(kFloat64);
  const Tensor x = randn({5, 3, 8}, kFloat64).requires_grad_();
  TensorList params = layer->parameters();
  params.push_back(x);
  auto loss = [](const Tensor& y) { return (y * y.sin()).sum(); };

  loss(layer->forward(x)).backward();
  const TensorList plain = grads_of(params);
  for (CheckpointPolicy policy : {CheckpointPolicy::kSaveMatmuls, CheckpointPolicy::kRecomputeAll}) {
    loss(checkpoint([&](const TensorList& in) { return layer->forward(in[0]); }, {x}, policy)).backward();
    expect_close(grads_of(params), plain);
  }
}

TEST(SelectiveCheckpoint, SequentialSegmentsAndBiasShapesEqualThePlainRun) {
  manual_seed(5);
  nn::Sequential seq(nn::Linear(6, 12), nn::GELU(), nn::Linear(12, 6), nn::LayerNorm(nn::LayerNormOptions({6})),
                     nn::Linear(6, 12), nn::Tanh(), nn::Linear(nn::LinearOptions(12, 4).bias(false)));
  seq->to(kFloat64);
  const Tensor x = randn({2, 3, 6}, kFloat64).requires_grad_();
  // A broadcast bias of one value and a plain weight through graft::linear directly.
  const Tensor w = randn({5, 4}, kFloat64).requires_grad_(), b1 = randn({1}, kFloat64).requires_grad_();
  TensorList params = seq->parameters();
  params.insert(params.end(), {x, w, b1});
  auto model = [&](const Tensor& h) { return linear(h, w, b1); };

  model(seq->forward(x)).pow(2).sum().backward();
  const TensorList plain = grads_of(params);
  model(checkpoint_sequential(seq, 3, x, CheckpointPolicy::kSaveMatmuls)).pow(2).sum().backward();
  expect_close(grads_of(params), plain);
  checkpoint([&](const TensorList& in) { return model(seq->forward(in[0])); }, {x}, CheckpointPolicy::kSaveMatmuls)
      .pow(2)
      .sum()
      .backward();
  expect_close(grads_of(params), plain);
}

// Peak tensor bytes of one forward + backward above what was live before.
template <class F>
int64_t step_peak(F&& forward, const Tensor& x) {
  const int64_t base = memory::stats().allocated_bytes;
  memory::reset_peak_stats();
  forward(x).pow(2).mean().backward();
  return memory::stats().peak_allocated_bytes - base;
}

TEST(SelectiveCheckpoint, PeakFallsBetweenThePlainRunAndFullRecomputation) {
  // Eight blocks x -> x + W2 gelu(W1 layer_norm(x)) of width 64 and 256 hidden on 512 rows: the
  // plain block keeps its input, the norm's output, W1's output and gelu's output (1 + 1 + 4 + 4
  // widths a row); kept products are 4 + 1 widths a row beside the block's input.
  manual_seed(7);
  const int64_t d = 64, depth = 8;
  std::vector<nn::Sequential> blocks;
  for (int64_t i = 0; i < depth; ++i) {
    blocks.emplace_back(nn::LayerNorm(nn::LayerNormOptions({d})), nn::Linear(d, 4 * d), nn::GELU(), nn::Linear(4 * d, d));
  }
  const Tensor x = randn({512, d}).requires_grad_();
  auto run = [&](CheckpointPolicy policy, bool plain) {
    return [&blocks, policy, plain](const Tensor& in) {
      Tensor h = in;
      for (auto& b : blocks) {
        if (plain) h = h + b->forward(h);
        else h = h + checkpoint([&b](const TensorList& t) { return b->forward(t[0]); }, {h}, policy);
      }
      return h;
    };
  };
  const int64_t plain = step_peak(run(CheckpointPolicy::kRecomputeAll, true), x);
  const int64_t selective = step_peak(run(CheckpointPolicy::kSaveMatmuls, false), x);
  const int64_t full = step_peak(run(CheckpointPolicy::kRecomputeAll, false), x);
  EXPECT_LT(full, selective);
  EXPECT_LT(selective, plain);
  // Kept per block: 5 widths a row of 512 x 64 float32 (640 KiB), against the plain block's 10.
  const int64_t row_width_bytes = 512 * d * 4;
  EXPECT_GE(plain - selective, (depth - 1) * 4 * row_width_bytes);
}

TEST(SelectiveCheckpoint, ARecomputeThatRunsOtherLinearsIsReported) {
  nn::Linear a(3, 3), b(3, 3);
  const Tensor x = randn({2, 3}).requires_grad_();
  const Tensor y = checkpoint(
      [&](const TensorList& in) {
        Tensor h = a->forward(in[0]);
        if (autograd::is_checkpoint_recompute()) h = b->forward(h);  // one linear more than the forward ran
        return h.tanh();
      },
      {x}, CheckpointPolicy::kSaveMatmuls);
  EXPECT_TRUE(throws_error([&] { y.sum().backward(); }, {"checkpoint", "linears", "same order"}));
}

}  // namespace
}  // namespace graft::test
