// The per-processor clones give the same bits (Note [Clones give the same bits] in
// src/kernels/vector_clones.h): this program runs every float32 kernel compiled per vector width
// (GRAFT_VEC_CLONES: the x86-64 baseline, x86-64-v3 with AVX2 + FMA, x86-64-v4 with AVX-512) on
// fixed inputs, through the public ops and their backward, and prints one FNV-1a hash of the
// result's bytes per line. compare_clone_bits.sh (beside this file) runs it on this processor and
// under QEMU's emulation of processors without AVX-512 (Haswell: the AVX2 clones) and without AVX
// (Nehalem: the baseline clones), and fails when any line differs: each run computes the values
// itself, and the three runs take different code.
//
// OpenBLAS's kernel families sum in other orders, and the same bits across them are not promised
// (Note [Splitting a matrix product] in src/runtime/blas.cpp), so the script pins one family that
// every x86-64 processor runs (GRAFT_BLAS_CORETYPE=Nehalem) for all three runs: the products are
// then the same code everywhere, and the ops built on them (fused linear, attention, LSTM, GRU)
// can be compared too. Inputs come from an integer generator, not graft's randn.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace {

using graft::Tensor;

// Values in [lo, hi) with 20 significant bits, from a 32-bit LCG: exact in float32.
Tensor fixed_values(std::vector<int64_t> shape, uint32_t seed, float lo, float hi, bool requires_grad = false) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t state = seed * 2654435761u + 1u;
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    x = lo + (hi - lo) * static_cast<float>(state >> 12) / 1048576.0f;
  }
  Tensor t = graft::from_blob(v.data(), shape, graft::TensorOptions().dtype(graft::kFloat32)).clone();
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

uint64_t fnv1a(const Tensor& t_) {
  const Tensor t = t_.contiguous();
  const auto* p = static_cast<const unsigned char*>(t.data_ptr());
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < static_cast<size_t>(t.numel()) * t.element_size(); ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

void print(const std::string& name, const Tensor& t) {
  std::printf("%-34s %016llx\n", name.c_str(), static_cast<unsigned long long>(fnv1a(t)));
}

// y = f(x) on a large contiguous array (the vectorised path, split over threads), and x's gradient
// for a fixed upstream gradient.
template <class F>
void unary(const std::string& name, F f, float lo, float hi, uint32_t seed) {
  const Tensor x = fixed_values({3, 40001}, seed, lo, hi, true);  // odd sizes: vector tails too
  const Tensor y = f(x);
  y.backward(fixed_values(y.sizes().vec(), seed + 1, -1.0f, 1.0f));
  print(name, y);
  print(name + " backward", x.grad());
}

const char* variant() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return "x86-64-v4 (AVX-512)";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "x86-64-v3 (AVX2 + FMA)";
#endif
  return "baseline (SSE2)";
}

}  // namespace

int run() {
  namespace F = graft::nn::functional;
  graft::set_num_threads(2);
  std::printf("clones: %s\n", variant());

  unary("exp", [](const Tensor& x) { return graft::exp(x); }, -80.0f, 80.0f, 1);
  unary("sigmoid", [](const Tensor& x) { return graft::sigmoid(x); }, -30.0f, 30.0f, 2);
  unary("tanh", [](const Tensor& x) { return graft::tanh(x); }, -12.0f, 12.0f, 3);
  unary("gelu", [](const Tensor& x) { return graft::gelu(x); }, -12.0f, 12.0f, 4);
  unary("gelu tanh", [](const Tensor& x) { return graft::gelu(x, "tanh"); }, -12.0f, 12.0f, 5);
  unary("relu", [](const Tensor& x) { return graft::relu(x); }, -2.0f, 2.0f, 6);
  unary("softmax", [](const Tensor& x) { return graft::softmax(x, -1); }, -20.0f, 20.0f, 7);
  unary("log_softmax", [](const Tensor& x) { return graft::log_softmax(x, -1); }, -20.0f, 20.0f, 8);
  unary("sum", [](const Tensor& x) { return graft::sum(x); }, -1.0f, 1.0f, 9);
  unary("mean rows", [](const Tensor& x) { return graft::mean(x, {1}); }, -1.0f, 1.0f, 10);

  {  // add, sub, mul, div: same shape, scalar, row bias
    const Tensor a = fixed_values({257, 515}, 11, -3.0f, 3.0f), b = fixed_values({257, 515}, 12, 0.5f, 2.0f);
    const Tensor bias = fixed_values({515}, 13, -1.0f, 1.0f);
    print("add", a + b);
    print("sub", a - b);
    print("mul", a * b);
    print("div", a / b);
    print("add scalar", a + 0.37f);
    print("mul scalar", a * 1.7f);
    print("add row", a + bias);
    print("mul row", a * bias);
  }
  {  // layer_norm and batch_norm, forward and backward
    const Tensor x = fixed_values({64, 771}, 14, -4.0f, 4.0f, true);
    const Tensor w = fixed_values({771}, 15, 0.5f, 1.5f, true), b = fixed_values({771}, 16, -0.5f, 0.5f, true);
    const Tensor y = graft::layer_norm(x, {771}, w, b);
    y.backward(fixed_values({64, 771}, 17, -1.0f, 1.0f));
    print("layer_norm", y);
    print("layer_norm backward x", x.grad());
    print("layer_norm backward weight", w.grad());
    print("layer_norm backward bias", b.grad());
  }
  {
    const Tensor x = fixed_values({37, 19, 9, 11}, 18, -4.0f, 4.0f, true);
    const Tensor w = fixed_values({19}, 19, 0.5f, 1.5f, true), b = fixed_values({19}, 20, -0.5f, 0.5f, true);
    Tensor rm = graft::zeros({19}), rv = graft::ones({19});
    const Tensor y = graft::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5);
    y.backward(fixed_values({37, 19, 9, 11}, 21, -1.0f, 1.0f));
    print("batch_norm", y);
    print("batch_norm running_var", rv);
    print("batch_norm backward x", x.grad());
    print("batch_norm backward weight", w.grad());
  }
  {  // cross_entropy on (N, C) logits, max_pool2d
    const Tensor logits = fixed_values({129, 1001}, 22, -10.0f, 10.0f, true);
    std::vector<int64_t> classes(129);
    for (size_t i = 0; i < classes.size(); ++i) classes[i] = static_cast<int64_t>(i * 37 % 1001);
    const Tensor target = graft::from_blob(classes.data(), {129}, graft::TensorOptions().dtype(graft::kInt64)).clone();
    const Tensor loss = graft::cross_entropy(logits, target);
    loss.backward();
    print("cross_entropy", loss);
    print("cross_entropy backward", logits.grad());
    const Tensor img = fixed_values({8, 16, 34, 34}, 23, -3.0f, 3.0f, true);
    const Tensor pooled = graft::max_pool2d(img, {2, 2}, {2, 2});
    pooled.backward(fixed_values({8, 16, 17, 17}, 24, -1.0f, 1.0f));
    print("max_pool2d", pooled);
    print("max_pool2d backward", img.grad());
  }
  {  // the fused linear epilogues, forward and backward
    const graft::FusedActivation acts[] = {graft::FusedActivation::ReLU, graft::FusedActivation::GELU,
                                           graft::FusedActivation::GELUTanh, graft::FusedActivation::Sigmoid,
                                           graft::FusedActivation::Tanh};
    const char* names[] = {"relu", "gelu", "gelu tanh", "sigmoid", "tanh"};
    for (int i = 0; i < 5; ++i) {
      const Tensor x = fixed_values({129, 300}, 60 + i, -2.0f, 2.0f, true);
      const Tensor w = fixed_values({257, 300}, 70 + i, -0.2f, 0.2f, true);
      const Tensor b = fixed_values({257}, 80 + i, -1.0f, 1.0f, true);
      const Tensor y = F::fused_linear(x, w, b, acts[i]);
      y.backward(fixed_values({129, 257}, 90 + i, -1.0f, 1.0f));
      print(std::string("fused_linear ") + names[i], y);
      print(std::string("fused_linear ") + names[i] + " backward x", x.grad());
      print(std::string("fused_linear ") + names[i] + " backward bias", b.grad());
    }
  }
  {  // the attention kernel's row loops (masked by is_causal), forward and backward
    const Tensor q = fixed_values({2, 3, 77, 32}, 100, -1.0f, 1.0f, true);
    const Tensor k = fixed_values({2, 3, 77, 32}, 101, -1.0f, 1.0f, true);
    const Tensor v = fixed_values({2, 3, 77, 32}, 102, -1.0f, 1.0f, true);
    const Tensor y = graft::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
    y.backward(fixed_values({2, 3, 77, 32}, 103, -1.0f, 1.0f));
    print("attention", y);
    print("attention backward q", q.grad());
    print("attention backward k", k.grad());
    print("attention backward v", v.grad());
  }
  {  // the LSTM and GRU cell loops, forward and backward through time
    graft::nn::LSTM lstm(graft::nn::LSTMOptions(24, 40).batch_first(true));
    graft::nn::GRU gru(graft::nn::GRUOptions(24, 40).batch_first(true));
    {
      graft::NoGradGuard no_grad;
      uint32_t seed = 110;
      for (Tensor& p : lstm->parameters()) p.copy_(fixed_values(p.sizes().vec(), seed++, -0.3f, 0.3f));
      for (Tensor& p : gru->parameters()) p.copy_(fixed_values(p.sizes().vec(), seed++, -0.3f, 0.3f));
    }
    const Tensor x = fixed_values({5, 33, 24}, 130, -1.0f, 1.0f, true);
    const Tensor hl = std::get<0>(lstm->forward(x));
    const Tensor hg = std::get<0>(gru->forward(x));
    (hl.sum() + (hg * hg).sum()).backward();
    print("lstm", hl);
    print("gru", hg);
    print("lstm + gru backward x", x.grad());
    print("lstm weight_hh_l0 grad", lstm->named_parameters()["weight_hh_l0"].grad());
    print("gru weight_hh_l0 grad", gru->named_parameters()["weight_hh_l0"].grad());
  }
  {  // the optimisers' update loops and gradient clipping
    for (int which = 0; which < 4; ++which) {
      Tensor p = fixed_values({100003}, 30 + which, -1.0f, 1.0f, true);
      std::vector<Tensor> params{p};
      std::unique_ptr<graft::optim::Optimizer> opt;
      if (which == 0) opt = std::make_unique<graft::optim::SGD>(params, graft::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-2));
      if (which == 1) opt = std::make_unique<graft::optim::SGD>(params, graft::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
      if (which == 2) opt = std::make_unique<graft::optim::Adam>(params, graft::optim::AdamOptions(1e-3).weight_decay(1e-2));
      if (which == 3) opt = std::make_unique<graft::optim::AdamW>(params, graft::optim::AdamWOptions(1e-3));
      for (int step = 0; step < 3; ++step) {
        p.mutable_grad() = fixed_values({100003}, 40 + step, -1.0f, 1.0f);
        opt->step();
      }
      static const char* names[] = {"sgd momentum weight_decay", "sgd nesterov", "adam weight_decay", "adamw"};
      print(names[which], p);
    }
    Tensor p = fixed_values({70001}, 50, -1.0f, 1.0f, true);
    p.mutable_grad() = fixed_values({70001}, 51, -3.0f, 3.0f);
    const double norm = graft::nn::utils::clip_grad_norm_(std::vector<Tensor>{p}, 1.0);
    print("clip_grad_norm_ grad", p.grad());
    print("clip_grad_norm_ norm", graft::tensor({norm}, graft::TensorOptions().dtype(graft::kFloat64)));
  }
  return 0;
}

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graft_clone_bits: %s\n", e.what());
    return 1;
  }
}
