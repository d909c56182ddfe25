// Per-op overhead: chains of kChainLen elementwise ops on tiny float32 tensors (BENCHMARKS.md,
// "Per-op overhead"; bench/run_suite.sh runs it). Written in LibTorch's spelling and built twice
// (bench/CMakeLists.txt): as torch_overhead against LibTorch, and ported by
// tools/port-from-libtorch.sh as graft_overhead against graft; each process measures one library.
//
//   {torch,graft}_overhead [--threads=N] [--check=FILE] [google benchmark flags]
//   {torch,graft}_overhead_allocs [--threads=N] [--json=FILE]
//
// --threads=N: torch::set_num_threads(N) before anything runs (default 1: tiny ops never reach the
// parallel grain size, so one thread only removes pool bookkeeping; 0 keeps the default).
// Timing: every case is registered as "<mode>/<operand>/n<size>/<library>" (library "libtorch" or
// "graft"). --check=FILE writes each case's chain output (and, for fwd_bwd, the input's gradient)
// as JSON instead of timing: bench/suite_report.py compares the two libraries' files.
// The *_allocs builds (BENCH_COUNT_ALLOCS, linked with alloc_count.cpp) count heap allocations per
// op instead of timing.
#include <torch/torch.h>

#ifndef BENCH_COUNT_ALLOCS
#include <benchmark/benchmark.h>
#else
#include "alloc_count.h"
#endif

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace {

// Every chain has this many elementwise ops, alternating y = y * kMul and y = y + kAdd.
constexpr int kChainLen = 1000;
constexpr float kMul = 0.999f;
constexpr float kAdd = 0.001f;
constexpr float kInit = 0.5f;

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

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::FwdGrad: return "fwd_grad";
    case Mode::FwdBwd: return "fwd_bwd";
    case Mode::NoGrad: return "no_grad";
  }
  return "?";
}
std::string case_name(const Case& c) {
  return std::string(mode_name(c.mode)) + "/" + (c.operand == Operand::Scalar ? "scalar" : "tensor") + "/n" +
         std::to_string(c.n);
}

std::vector<Case> all_cases() {
  std::vector<Case> cs;
  for (Mode m : {Mode::FwdGrad, Mode::FwdBwd, Mode::NoGrad})
    for (Operand o : {Operand::Scalar, Operand::Tensor})
      for (int64_t n : {1, 64}) cs.push_back({m, o, n});
  return cs;
}

// One case's state: step() runs one whole chain (kChainLen ops) in the case's mode, including, for
// FwdBwd, the backward pass, and the destruction of the graph it built.
class Runner {
 public:
  explicit Runner(const Case& c) : c_(c) {
    x_ = torch::full({c.n}, kInit, torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true));
    cm_ = torch::full({c.n}, kMul, torch::TensorOptions().dtype(torch::kFloat32));
    ca_ = torch::full({c.n}, kAdd, torch::TensorOptions().dtype(torch::kFloat32));
    ones_ = torch::ones({c.n}, torch::TensorOptions().dtype(torch::kFloat32));
  }

  // Kept out of line so that a profiler can attribute to it (callgrind --toggle-collect='*chain*').
  [[gnu::noinline]] torch::Tensor chain(const torch::Tensor& x) {
    torch::Tensor y = x;
    if (c_.operand == Operand::Scalar) {
      for (int i = 0; i < kChainLen / 2; ++i) {
        y = y * kMul;
        y = y + kAdd;
      }
    } else {
      for (int i = 0; i < kChainLen / 2; ++i) {
        y = y * cm_;
        y = y + ca_;
      }
    }
    return y;
  }

  void step() {
    switch (c_.mode) {
      case Mode::FwdGrad: {
        last_ = chain(x_);
        last_ = torch::Tensor();  // frees the graph inside the timed region
        break;
      }
      case Mode::FwdBwd: {
        torch::Tensor y = chain(x_);
        y.backward(ones_);
        x_.mutable_grad() = torch::Tensor();
        break;
      }
      case Mode::NoGrad: {
        torch::NoGradGuard ng;
        last_ = chain(x_);
        last_ = torch::Tensor();
        break;
      }
    }
  }

  // The chain's output values followed (FwdBwd only) by the input's gradient, after one step.
  std::vector<double> result() {
    torch::Tensor y;
    if (c_.mode == Mode::NoGrad) {
      torch::NoGradGuard ng;
      y = chain(x_);
    } else {
      y = chain(x_);
    }
    const float* p = y.data_ptr<float>();
    std::vector<double> out(p, p + y.numel());
    if (c_.mode == Mode::FwdBwd) {
      x_.mutable_grad() = torch::Tensor();
      y.backward(ones_);
      const float* g = x_.grad().data_ptr<float>();
      out.insert(out.end(), g, g + x_.numel());
      x_.mutable_grad() = torch::Tensor();
    }
    return out;
  }

 private:
  Case c_;
  torch::Tensor x_, cm_, ca_, ones_, last_;
};

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) std::perror(path.c_str());
  return static_cast<bool>(f);
}

// --check=FILE: {"library": ..., "cases": {"<case>": [values...]}}.
int write_check(const std::string& path) {
  std::ostringstream js;
  js << "{\"library\": \"" << bench::kLibrary << "\", \"cases\": {";
  bool first = true;
  for (const Case& c : all_cases()) {
    Runner r(c);
    js << (first ? "" : ",") << "\n  \"" << case_name(c) << "\": " << bench::json_list(r.result());
    first = false;
  }
  js << "\n}}\n";
  return write_file(path, js.str()) ? 0 : 1;
}

#ifndef BENCH_COUNT_ALLOCS
void run_case(benchmark::State& state, Case c) {
  Runner runner(c);
  runner.step();  // warm-up outside the timed loop
  for (auto _ : state) {
    runner.step();
    benchmark::ClobberMemory();
  }
  state.counters["per_op"] = benchmark::Counter(static_cast<double>(kChainLen),
                                                benchmark::Counter::kIsIterationInvariantRate |
                                                    benchmark::Counter::kInvert);
}
#else
// Allocations and frees per op over 20 chains, after one warm-up chain (first-use allocations).
void count_allocs(const Case& c, double& allocs, double& frees) {
  constexpr int kSteps = 20;
  Runner r(c);
  r.step();
  bench::alloc_counting(true);
  for (int i = 0; i < kSteps; ++i) r.step();
  bench::alloc_counting(false);
  const double ops = double(kSteps) * kChainLen;
  allocs = double(bench::alloc_count()) / ops;
  frees = double(bench::free_count()) / ops;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  std::string check, json;
  std::vector<char*> rest;  // Google Benchmark's flags
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
    else if (std::strncmp(argv[i], "--check=", 8) == 0) check = argv[i] + 8;
    else if (std::strncmp(argv[i], "--json=", 7) == 0) json = argv[i] + 7;
    else rest.push_back(argv[i]);
  }
  const int default_threads = torch::get_num_threads();
  if (threads > 0) torch::set_num_threads(threads);
  std::printf("%s (default intra-op threads %d); chain length %d ops\n",
              bench::describe_process(torch::get_num_threads()).c_str(), default_threads, kChainLen);
  std::fflush(stdout);
  if (!check.empty()) return write_check(check);

#ifndef BENCH_COUNT_ALLOCS
  if (!json.empty()) {
    std::fprintf(stderr, "--json is for the *_allocs builds; use --benchmark_out=FILE here\n");
    return 2;
  }
  benchmark::AddCustomContext("library", bench::kLibrary);
  benchmark::AddCustomContext("chain_len", std::to_string(kChainLen));
  benchmark::AddCustomContext("openblas_corename", bench::openblas_corename());
  benchmark::AddCustomContext("num_threads", std::to_string(torch::get_num_threads()));
  benchmark::AddCustomContext("default_num_threads", std::to_string(default_threads));
  benchmark::AddCustomContext("env_OPENBLAS_CORETYPE", bench::env_or("OPENBLAS_CORETYPE", "(unset)"));
  benchmark::AddCustomContext("env_OMP_WAIT_POLICY", bench::env_or("OMP_WAIT_POLICY", "(unset)"));
  for (const Case& c : all_cases())
    benchmark::RegisterBenchmark((case_name(c) + "/" + bench::kLibrary).c_str(), run_case, c)
        ->Unit(benchmark::kMicrosecond);
  int nargs = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&nargs, rest.data());
  if (benchmark::ReportUnrecognizedArguments(nargs, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
#else
  if (rest.size() > 1) {
    std::fprintf(stderr, "usage: %s [--threads=N] [--json=FILE] [--check=FILE]\n", argv[0]);
    return 2;
  }
  std::ostringstream js;
  js << "{\"library\": \"" << bench::kLibrary << "\", \"chain_len\": " << kChainLen << ", \"cases\": {";
  std::printf("%-24s %14s %14s\n", "case", "allocs/op", "frees/op");
  bool first = true;
  for (const Case& c : all_cases()) {
    double allocs = 0, frees = 0;
    count_allocs(c, allocs, frees);
    std::printf("%-24s %14.2f %14.2f\n", case_name(c).c_str(), allocs, frees);
    js << (first ? "" : ",") << "\n  \"" << case_name(c) << "\": " << allocs;
    first = false;
  }
  js << "\n}}\n";
  return json.empty() || write_file(json, js.str()) ? 0 : 1;
#endif
}
