// Models on the meta device (Note [Meta device] in graft/core/dtype.h): built under a
// DefaultDeviceGuard or moved with module->to(kMeta), trained one step (forward, backward, Adam)
// without allocating their parameters, gradients, optimizer state or activations. The expected
// bytes are worked out by hand from the layer shapes (PyTorch's parameter layout of each module).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "graft/graft.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace nn = graft::nn;
using memory::Category;

// The resident set size of this process, from /proc/self/status (kB -> bytes).
int64_t meta_test_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      int64_t kb = 0;
      f >> kb;
      return kb * 1024;
    }
    f.ignore(1 << 12, '\n');
  }
  return -1;
}

// A GPT-style decoder: token embedding, position embedding, `depth` pre-norm encoder layers under a
// causal mask (GELU, feed-forward 4 x width), final layer norm, a vocabulary head.
struct MetaGptImpl : nn::Module {
  MetaGptImpl(int64_t vocab, int64_t context, int64_t width, int64_t depth, int64_t heads)
      : tok(register_module("tok", nn::Embedding(vocab, width))),
        pos(register_module("pos", nn::Embedding(context, width))),
        blocks(register_module("blocks", nn::TransformerEncoder(nn::TransformerEncoderOptions(
                                                                nn::TransformerEncoderLayerOptions(width, heads)
                                                                    .dim_feedforward(4 * width)
                                                                    .dropout(0.0)
                                                                    .activation(graft::kGELU)
                                                                    .batch_first(true)
                                                                    .norm_first(true),
                                                                depth)))),
        norm(register_module("norm", nn::LayerNorm(nn::LayerNormOptions({width})))),
        head(register_module("head", nn::Linear(width, vocab))) {}
  Tensor forward(const Tensor& ids) {
    const Tensor positions = arange(ids.size(1), TensorOptions(kInt64).device(ids.device()));
    const Tensor h = blocks->forward(tok->forward(ids) + pos->forward(positions), {}, {}, /*is_causal=*/true);
    return head->forward(norm->forward(h));
  }
  nn::Embedding tok, pos;
  nn::TransformerEncoder blocks;
  nn::LayerNorm norm;
  nn::Linear head;
};
GRAFT_MODULE(MetaGpt);

// The parameter count of MetaGpt, by hand: per layer, the attention's in_proj (3 w^2 + 3 w) and
// out_proj (w^2 + w), the feed-forward (w f + f, f w + w) and two layer norms (4 w).
int64_t meta_gpt_layer_parameters(int64_t w) {
  const int64_t f = 4 * w;
  return (3 * w * w + 3 * w) + (w * w + w) + (w * f + f) + (f * w + w) + 4 * w;
}
int64_t meta_gpt_parameters(int64_t vocab, int64_t context, int64_t w, int64_t depth) {
  return vocab * w + context * w + depth * meta_gpt_layer_parameters(w) + 2 * w + (w * vocab + vocab);
}

TEST(MetaModels, TenBillionParameterTransformerTrainsAStepOnMeta) {
  const int64_t vocab = 256, context = 128, width = 4096, depth = 50, heads = 32, batch = 8;
  const int64_t n = meta_gpt_parameters(vocab, context, width, depth);
  ASSERT_GT(n, int64_t{10'000'000'000});  // 10.07 billion

  memory::reset_peak_stats();
  const memory::Stats cpu_before = memory::stats();
  const memory::Stats meta_before = memory::stats(kMeta);
  const int64_t rss_before = meta_test_rss_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  {
    MetaGpt model = nullptr;
    {
      DefaultDeviceGuard on_meta(kMeta);
      model = MetaGpt(vocab, context, width, depth, heads);
    }
    int64_t counted = 0;
    for (const Tensor& p : model->parameters()) {
      EXPECT_TRUE(p.is_meta());
      counted += p.numel();
    }
    EXPECT_EQ(counted, n);
    // The encoder's options keep the layer it was cloned from (as LibTorch's do): its parameters
    // exist too, and are counted, though the model does not train them.
    const int64_t held = n + meta_gpt_layer_parameters(width);
    EXPECT_EQ(memory::stats(kMeta)[Category::Parameters].current_bytes - meta_before[Category::Parameters].current_bytes,
              4 * held);

    optim::Adam adam(model->parameters(), optim::AdamOptions(1e-4));
    const Tensor ids = randint(0, vocab, {batch, context}, TensorOptions(kInt64).device(kMeta));
    const Tensor logits = model->forward(ids);
    EXPECT_TRUE(logits.is_meta());
    EXPECT_EQ(logits.sizes(), IntArrayRef({batch, context, vocab}));
    const Tensor loss = nn::functional::cross_entropy(logits.reshape({-1, vocab}), ids.reshape({-1}));
    EXPECT_EQ(loss.dim(), 0);
    // Saved for backward: at least each block's input, its two layer norms' inputs and the
    // feed-forward's hidden layer (batch x context x 4 width floats).
    const int64_t saved = memory::stats(kMeta)[Category::SavedActivations].current_bytes;
    EXPECT_GT(saved, depth * batch * context * 4 * width * 4);
    loss.backward();
    for (const Tensor& p : model->parameters()) {
      ASSERT_TRUE(p.grad().defined());
      EXPECT_TRUE(p.grad().is_meta());
    }
    const memory::Stats after_backward = memory::stats(kMeta);
    EXPECT_EQ(after_backward[Category::Gradients].current_bytes - meta_before[Category::Gradients].current_bytes, 4 * n);
    EXPECT_EQ(after_backward[Category::SavedActivations].current_bytes, meta_before[Category::SavedActivations].current_bytes);
    adam.step();
    const memory::Stats after_step = memory::stats(kMeta);
    // Adam's exp_avg and exp_avg_sq: two float32 buffers per parameter.
    EXPECT_EQ(after_step[Category::OptimizerState].current_bytes - meta_before[Category::OptimizerState].current_bytes,
              8 * n);
    std::printf("[ meta    ] %lld parameters trained; would take: parameters %s, gradients %s, optimizer state %s, "
                "saved activations (peak) %s, peak %s (%s in the allocator's blocks)\n",
                static_cast<long long>(n), memory::format_bytes(4 * held).c_str(),
                memory::format_bytes(after_step[Category::Gradients].current_bytes).c_str(),
                memory::format_bytes(after_step[Category::OptimizerState].current_bytes).c_str(),
                memory::format_bytes(after_step[Category::SavedActivations].peak_bytes).c_str(),
                memory::format_bytes(after_step.peak_allocated_bytes).c_str(),
                memory::format_bytes(after_step.peak_rounded_bytes).c_str());
    // Every byte is accounted: 4 + 4 + 8 bytes per parameter at least, at the peak.
    EXPECT_GE(after_step.peak_allocated_bytes, 16 * n);
    EXPECT_GE(after_step.peak_rounded_bytes, after_step.peak_allocated_bytes);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t rss_after = meta_test_rss_bytes();
  std::printf("[ meta    ] built, forward, backward and Adam step in %.2f s; RSS %+.1f MiB\n", seconds,
              static_cast<double>(rss_after - rss_before) / (1 << 20));
  // Nothing of it was allocated: the CPU counters never moved, and the process grew by a few MB
  // of bookkeeping (modules, nodes), not the 160 GB the step would take.
  EXPECT_EQ(memory::stats().peak_allocated_bytes, cpu_before.allocated_bytes);
  EXPECT_LT(rss_after - rss_before, int64_t{64} << 20);
  // And everything the model held on meta is released with it.
  const memory::Stats meta_after = memory::stats(kMeta);
  EXPECT_EQ(meta_after.allocated_bytes, meta_before.allocated_bytes);
}

TEST(MetaModels, ModuleToMetaKeepsShapesAndCategoriesAndFreesTheCpuBytes) {
  nn::Linear linear(300, 200);
  const int64_t bytes = (300 * 200 + 200) * 4;
  const Tensor& w = linear->weight;
  const int64_t cpu_before = memory::stats().allocated_bytes;
  const int64_t meta_params_before = memory::stats(kMeta)[Category::Parameters].current_bytes;
  linear->to(kMeta);
  EXPECT_TRUE(linear->weight.is_meta());
  EXPECT_TRUE(linear->bias.is_meta());
  EXPECT_TRUE(w.is_same(linear->weight));  // the same tensors, as to(dtype) keeps them
  EXPECT_EQ(linear->weight.sizes(), IntArrayRef({200, 300}));
  EXPECT_TRUE(linear->weight.requires_grad());
  EXPECT_EQ(memory::stats().allocated_bytes, cpu_before - bytes);
  EXPECT_EQ(memory::stats(kMeta)[Category::Parameters].current_bytes - meta_params_before, bytes);
  // A forward and backward on meta, with meta gradients of the parameters' shapes.
  const Tensor x = randn({7, 300}, TensorOptions().device(kMeta));
  linear->forward(x).sum().backward();
  EXPECT_TRUE(linear->weight.grad().is_meta());
  EXPECT_EQ(linear->weight.grad().sizes(), IntArrayRef({200, 300}));
  // Back to the CPU is refused: there are no values to bring back.
  EXPECT_TRUE(throws_error([&] { linear->to(kCPU); }, {"Module::to", "meta", "CPU"}));
}

TEST(MetaModels, DefaultDeviceGuardMakesFactoriesMetaAndRestoresTheCpu) {
  {
    DefaultDeviceGuard guard(kMeta);
    EXPECT_TRUE(zeros({3}).is_meta());
    EXPECT_TRUE(randn({3}).is_meta());
    EXPECT_FALSE(zeros({3}, TensorOptions().device(kCPU)).is_meta());  // a named device wins
  }
  EXPECT_TRUE(zeros({3}).is_cpu());
  EXPECT_TRUE(throws_error([] { DefaultDeviceGuard g(kCUDA); }, {"DefaultDeviceGuard", "cuda"}));
  // Printing shows the shape, not values; reading values is an error.
  const Tensor m = zeros({2, 3}, TensorOptions(kFloat64).device(kMeta));
  EXPECT_EQ(m.str(), "tensor(..., device='meta', size=(2, 3), dtype=graft.float64)");
  EXPECT_TRUE(throws_error([&] { (void)m.to(kCPU); }, {"meta", "CPU"}));
  EXPECT_TRUE(throws_error([&] { (void)m.data_ptr<double>(); }, {"meta"}));
}

}  // namespace
}  // namespace graft::test
