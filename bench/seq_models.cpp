// Sequence models, side by side (BENCHMARKS.md, "Sequence models"): attention, a Transformer encoder
// layer and an LSTM, each a training step's forward + backward. Written in LibTorch's spelling and
// built twice (bench/CMakeLists.txt): torch_seq_models against LibTorch, graft_seq_models (ported by
// tools/port-from-libtorch.sh) against graft. One process measures one case at one thread count.
//
//   {torch,graft}_seq_models --case=attention|encoder|lstm [--t=1024] [--threads=1] [--steps=5]
//
// Cases:
//   attention  nn::MultiheadAttention(512, 8) self-attention, batch 4, 8 heads of 64, a causal float
//              mask, need_weights = false, sequence length --t (256, 1024, 4096): LibTorch 1.13's
//              path materialises the (T, T) scores; graft's runs the memory-efficient kernel
//   encoder    nn::TransformerEncoderLayer(512, 8, ff 2048, dropout 0), T 512, batch 8; with
//              --recompute=1 (graft only) the attention core is recomputed in backward
//              (graft::checkpoint_attention)
//   lstm       nn::LSTM(512, 512, 2 layers), T 128, batch 32
//   gpt        a GPT-style language model's training step: byte embedding (256) + learned positions,
//              nn::TransformerEncoder of --depth (4) layers of width --width (512), --heads (8)
//              heads, ff 4 x width, GELU, dropout 0, a causal mask, final LayerNorm, Linear to 256
//              logits, cross_entropy against random bytes, Adam (lr 3e-4); context --t (128), batch
//              --batch (8). The parameter count is graft train --model gpt's at the same flags
//              (51,042,560 at width 1024, depth 4, context 128), whose blocks are pre-norm.
// Prints one JSON line: the median step time (ms) over --steps timed steps after one warm-up, the
// peak resident memory the steps added above what was resident before the first one (MiB, from
// /proc/self/status VmHWM - VmRSS: each library's allocator and caches included), and the
// process's whole peak resident memory (VmHWM: model, data, program and libraries too).
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <cstdio>
#include <string>
#include <vector>

#include "harness.h"

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(argc, argv);
  const std::string which = bench::arg_str(a, "case", "attention");
  const int threads = bench::arg_int(a, "threads", 1);
  const int steps = bench::arg_int(a, "steps", 5);
  torch::set_num_threads(threads);
  torch::manual_seed(0);

  int64_t T = 0, N = 0;
  int64_t width = 512, depth = 1, heads = 8;  // reported in the JSON line (the suite's report keys on them)
  std::function<torch::Tensor()> step;
  std::vector<torch::Tensor> params;
  torch::nn::MultiheadAttention mha = nullptr;
  torch::nn::TransformerEncoderLayer enc = nullptr;
  torch::nn::LSTM lstm = nullptr;
  torch::nn::Embedding embed = nullptr;
  torch::nn::TransformerEncoder trunk = nullptr;
  torch::nn::LayerNorm final_norm = nullptr;
  torch::nn::Linear head = nullptr;
  std::unique_ptr<torch::optim::Adam> adam;
  torch::Tensor x, mask, pos, targets;
  if (which == "attention") {
    T = bench::arg_int(a, "t", 1024), N = 4;
    mha = torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(512, 8));
    x = torch::randn({T, N, 512}).requires_grad_();
    mask = torch::nn::TransformerImpl::generate_square_subsequent_mask(T);
    params = mha->parameters();
    step = [&] {
      auto out = std::get<0>(mha->forward(x, x, x, {}, /*need_weights=*/false, mask));
      return out.sum();
    };
  } else if (which == "encoder") {
    T = 512, N = 8;
    enc = torch::nn::TransformerEncoderLayer(torch::nn::TransformerEncoderLayerOptions(512, 8).dim_feedforward(2048).dropout(0.0));
    x = torch::randn({T, N, 512});
    params = enc->parameters();
    if (bench::arg_int(a, "recompute", 0) != 0) {
#ifdef GRAFT_PORTED
      torch::checkpoint_attention(*enc);
#else
      std::fprintf(stderr, "--recompute is graft's (checkpoint_attention); LibTorch has no such option\n");
      return 2;
#endif
    }
    step = [&] { return enc->forward(x).sum(); };
  } else if (which == "lstm") {
    T = 128, N = 32, depth = 2, heads = 0;
    lstm = torch::nn::LSTM(torch::nn::LSTMOptions(512, 512).num_layers(2));
    x = torch::randn({T, N, 512});
    params = lstm->parameters();
    step = [&] { return std::get<0>(lstm->forward(x)).sum(); };
  } else if (which == "gpt") {
    T = bench::arg_int(a, "t", 128), N = bench::arg_int(a, "batch", 8);
    width = bench::arg_int(a, "width", 512), depth = bench::arg_int(a, "depth", 4);
    heads = bench::arg_int(a, "heads", 8);
    embed = torch::nn::Embedding(256, width);
    pos = (0.02 * torch::randn({T, 1, width})).requires_grad_();
    trunk = torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
        torch::nn::TransformerEncoderLayerOptions(width, heads).dim_feedforward(4 * width).dropout(0.0).activation(torch::kGELU),
        depth));
    final_norm = torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}));
    head = torch::nn::Linear(width, 256);
    for (auto* m : {static_cast<torch::nn::Module*>(embed.get()), static_cast<torch::nn::Module*>(trunk.get()),
                    static_cast<torch::nn::Module*>(final_norm.get()), static_cast<torch::nn::Module*>(head.get())})
      for (auto& p : m->parameters()) params.push_back(p);
    params.push_back(pos);
    adam = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(3e-4));
    x = torch::randint(0, 256, {T, N});
    targets = torch::randint(0, 256, {T * N});
    mask = torch::nn::TransformerImpl::generate_square_subsequent_mask(T);
    step = [&] {
      auto h = trunk->forward(embed->forward(x) + pos, mask);
      auto logits = head->forward(final_norm->forward(h)).reshape({T * N, 256});
      return torch::nn::functional::cross_entropy(logits, targets);
    };
  } else {
    std::fprintf(stderr, "unknown --case=%s (attention, encoder, lstm, gpt)\n", which.c_str());
    return 2;
  }
  auto run = [&] {
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    step().backward();
    if (adam) adam->step();
  };
  const long rss0 = bench::proc_status_kb("VmRSS");
  run();  // warm-up (counted in the peak: both libraries' first step allocates what the others reuse)
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const long hwm = bench::proc_status_kb("VmHWM");
  int64_t parameters = 0;
  for (const auto& p : params) parameters += p.numel();
  std::printf("{\"library\": \"%s\", \"case\": \"%s\", \"t\": %lld, \"batch\": %lld, \"threads\": %d, "
              "\"width\": %lld, \"depth\": %lld, \"heads\": %lld, \"recompute\": %d, \"parameters\": %lld, "
              "\"median_ms\": %.3f, \"peak_mib\": %.1f, "
              "\"vmhwm_mib\": %.1f, \"ms\": %s}\n",
              bench::kLibrary, which.c_str(), static_cast<long long>(T), static_cast<long long>(N), threads,
              static_cast<long long>(width), static_cast<long long>(depth), static_cast<long long>(heads),
              bench::arg_int(a, "recompute", 0), static_cast<long long>(parameters), bench::median(ms),
              static_cast<double>(hwm - rss0) / 1024.0, static_cast<double>(hwm) / 1024.0, bench::json_list(ms).c_str());
  return 0;
}
