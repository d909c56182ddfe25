// Shared between the graft and LibTorch sides of the kernel benchmark (graft_kernels, part of the
// suite run by bench/run_suite.sh; see BENCHMARKS.md, "Suite: graft vs LibTorch").
//
// As in the other side-by-side benchmarks, graft (C++20) and LibTorch (its 1.13 headers build as
// C++17) live in separate translation units; this header includes neither. It names the cases,
// makes their input data (the same values on both sides) and declares the Runner each side builds.
//
// Cases ("op/size"):
//   add, mul, exp, tanh, gelu            elementwise on a contiguous float32 tensor of 1K, 64K, 4M
//                                        elements (add and mul: two tensors of that size)
//   sum_all, sum_last, softmax_last      the same tensor viewed as [n / 1024, 1024] ([1, 1024] at 1K):
//                                        sum of every element, sum over the last dim, softmax over it
//   matmul/128, /512, /2048              square float32 matrix product C = A B
//   conv2d/conv1, conv2d/conv2           forward + backward of the CNN's two convolutions:
//                                        conv1 (64,1,28,28) * (32,1,3,3), weight and bias grads;
//                                        conv2 (64,32,13,13) * (64,32,3,3), input, weight, bias grads
//   sgd_momentum/10M, adamw/10M          one optimiser step over 10 x ([1000, 1000] + [1000]) = 10.01M
//                                        parameters with fixed gradients (SGD lr 0.01 momentum 0.9;
//                                        AdamW lr 1e-3 weight decay 0.01)
//   clip_grad_norm/10M                   clip_grad_norm_(those parameters, 1.0): the first call scales
//                                        the gradients to norm 1, every later one by 1 / (1 + 1e-6),
//                                        so every call computes the norm and scales
// Elementwise and reduction cases run under no-grad (throughput, not autograd).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kbench {

inline const std::vector<std::string>& elementwise_ops() {
  static const std::vector<std::string> ops = {"add", "mul", "exp", "tanh", "gelu", "sum_all", "sum_last", "softmax_last"};
  return ops;
}

inline std::vector<std::string> all_cases() {
  std::vector<std::string> cases;
  for (const std::string& op : elementwise_ops())
    for (const char* size : {"1K", "64K", "4M"}) cases.push_back(op + "/" + size);
  for (const char* n : {"128", "512", "2048"}) cases.push_back(std::string("matmul/") + n);
  cases.push_back("conv2d/conv1");
  cases.push_back("conv2d/conv2");
  cases.push_back("sgd_momentum/10M");
  cases.push_back("adamw/10M");
  cases.push_back("clip_grad_norm/10M");
  return cases;
}

inline std::string case_op(const std::string& c) { return c.substr(0, c.find('/')); }
inline std::string case_arg(const std::string& c) { return c.substr(c.find('/') + 1); }

inline int64_t size_of(const std::string& arg) {
  if (arg == "1K") return 1024;
  if (arg == "64K") return 65536;
  if (arg == "4M") return 4194304;
  return std::stoll(arg);
}

// Deterministic values in [lo, hi) (splitmix64), so neither library's generator is involved.
inline std::vector<float> values(int64_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed;
  for (float& x : v) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    x = lo + (hi - lo) * static_cast<float>((z >> 40) * 0x1.0p-24);
  }
  return v;
}

// The optimiser cases' parameter shapes: 10 x ([1000, 1000], [1000]).
inline std::vector<std::vector<int64_t>> optimizer_shapes() {
  std::vector<std::vector<int64_t>> s;
  for (int i = 0; i < 10; ++i) {
    s.push_back({1000, 1000});
    s.push_back({1000});
  }
  return s;
}

// One library's side of one case. run() does the work once (outputs are kept until the next run,
// so both sides pay for allocating them); checksum() is a sum over the case's result after the
// runs so far, compared across the libraries after one run to make sure they compute the same.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual void run() = 0;
  virtual double checksum() = 0;
};

// graft side (kernels_graft.cpp).
std::unique_ptr<Runner> make_graft_runner(const std::string& name);
void graft_set_threads(int n);
std::string graft_blas_core();

#ifdef KERNELS_HAVE_TORCH
// LibTorch side (kernels_torch.cpp). torch_set_threads: at::set_num_interop_threads(1) on the first
// call, then torch::set_num_threads(n).
std::unique_ptr<Runner> make_torch_runner(const std::string& name);
void torch_set_threads(int n);
std::string torch_version();
#endif

}  // namespace kbench
