// Shared between the graft and LibTorch sides of the per-op overhead benchmark.
//
// The two sides live in separate translation units (graft needs C++20, LibTorch 1.13's headers are
// built as C++17), so this header includes neither library: each side exposes a factory that
// returns a Runner for a case, and the drivers (overhead_main.cpp, alloc_main.cpp) only see Runner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace overhead {

// Every chain has this many elementwise ops, alternating y = y * kMul and y = y + kAdd.
inline constexpr int kChainLen = 1000;
inline constexpr float kMul = 0.999f;
inline constexpr float kAdd = 0.001f;
inline constexpr float kInit = 0.5f;

enum class Mode {
  FwdGrad,  // (a) forward with grad recording: the input requires grad, the graph is built
  FwdBwd,   // (b) forward + backward(ones) into the input's .grad (reset every chain)
  NoGrad,   // (c) forward under NoGradGuard (input still requires grad)
};
enum class Operand {
  Scalar,  // y * 0.999, y + 0.001 (Scalar overloads)
  Tensor,  // y * cm, y + ca with cm, ca tensors of y's size that do not require grad
};

struct Case {
  Mode mode;
  Operand operand;
  int64_t n;  // elements of every tensor in the chain
};

inline const char* mode_name(Mode m) {
  switch (m) {
    case Mode::FwdGrad: return "fwd_grad";
    case Mode::FwdBwd: return "fwd_bwd";
    case Mode::NoGrad: return "no_grad";
  }
  return "?";
}
inline const char* operand_name(Operand o) { return o == Operand::Scalar ? "scalar" : "tensor"; }
inline std::string case_name(const Case& c) {
  return std::string(mode_name(c.mode)) + "/" + operand_name(c.operand) + "/n" + std::to_string(c.n);
}

inline std::vector<Case> all_cases() {
  std::vector<Case> cs;
  for (Mode m : {Mode::FwdGrad, Mode::FwdBwd, Mode::NoGrad})
    for (Operand o : {Operand::Scalar, Operand::Tensor})
      for (int64_t n : {1, 64}) cs.push_back({m, o, n});
  return cs;
}

// One side's state for one case: step() runs one whole chain (kChainLen ops) in the case's mode,
// including, for FwdBwd, the backward pass, and the destruction of the graph it built.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual void step() = 0;
  // The chain's output values followed (FwdBwd only) by the input's gradient, after one step().
  virtual std::vector<float> result() = 0;
};

std::unique_ptr<Runner> make_graft_runner(const Case& c);
#ifdef OVERHEAD_HAVE_TORCH
std::unique_ptr<Runner> make_torch_runner(const Case& c);
// "LibTorch 1.13.1", intra-op/inter-op thread counts, and a setter for the intra-op count.
std::string torch_version();
int torch_num_threads();
int torch_num_interop_threads();
void torch_set_num_threads(int n);
#endif

}  // namespace overhead
