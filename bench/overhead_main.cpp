// Per-op overhead benchmark: chains of kChainLen elementwise ops on tiny float32 tensors, graft and
// LibTorch side by side in one process (see BENCHMARKS.md; bench/run_suite.sh runs it).
//
//   graft_overhead [--torch_threads=N] [google benchmark flags]
//
// --torch_threads=N calls torch::set_num_threads(N) before anything runs (default 1: tiny ops never
// reach LibTorch's parallel grain size, so one thread only removes pool bookkeeping; 0 keeps
// LibTorch's default). Every case is registered as "<mode>/<operand>/n<size>/<library>".
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "overhead_common.h"

namespace {

using overhead::Case;
using overhead::Runner;

using Factory = std::unique_ptr<Runner> (*)(const Case&);

void run_case(benchmark::State& state, Factory make, Case c) {
  auto runner = make(c);
  runner->step();  // warm-up outside the timed loop
  for (auto _ : state) {
    runner->step();
    benchmark::ClobberMemory();
  }
  state.counters["per_op"] = benchmark::Counter(static_cast<double>(overhead::kChainLen),
                                                benchmark::Counter::kIsIterationInvariantRate |
                                                    benchmark::Counter::kInvert);
}

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// Both sides must compute the same chain: compare outputs (and gradients) once before timing.
#ifdef OVERHEAD_HAVE_TORCH
bool cross_check() {
  bool ok = true;
  for (const Case& c : overhead::all_cases()) {
    auto a = overhead::make_graft_runner(c)->result();
    auto b = overhead::make_torch_runner(c)->result();
    double worst = 0;
    bool same_size = a.size() == b.size();
    for (size_t i = 0; same_size && i < a.size(); ++i)
      worst = std::max(worst, std::abs(double(a[i]) - double(b[i])) / std::max(1e-6, std::abs(double(b[i]))));
    if (!same_size || worst > 1e-4) {
      std::fprintf(stderr, "cross-check FAILED for %s: %zu vs %zu values, max rel diff %g\n",
                   overhead::case_name(c).c_str(), a.size(), b.size(), worst);
      ok = false;
    }
  }
  return ok;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int torch_threads = 1;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--torch_threads=", 16) == 0) torch_threads = std::atoi(argv[i] + 16);
    else args.push_back(argv[i]);
  }
  int nargs = static_cast<int>(args.size());
  args.push_back(nullptr);

  const std::string corename = openblas_get_corename();
  benchmark::AddCustomContext("chain_len", std::to_string(overhead::kChainLen));
  benchmark::AddCustomContext("openblas_corename", corename);
  benchmark::AddCustomContext("openblas_num_threads", std::to_string(openblas_get_num_threads()));
  benchmark::AddCustomContext("env_OPENBLAS_CORETYPE", env_or("OPENBLAS_CORETYPE", "(unset)"));
  benchmark::AddCustomContext("env_OMP_WAIT_POLICY", env_or("OMP_WAIT_POLICY", "(unset)"));
  std::printf("chain length %d ops; openblas_get_corename() = %s; openblas threads = %d\n", overhead::kChainLen,
              corename.c_str(), openblas_get_num_threads());
  std::printf("OPENBLAS_CORETYPE=%s OMP_WAIT_POLICY=%s\n", env_or("OPENBLAS_CORETYPE", "(unset)"),
              env_or("OMP_WAIT_POLICY", "(unset)"));

#ifdef OVERHEAD_HAVE_TORCH
  const int default_threads = overhead::torch_num_threads();
  if (torch_threads > 0) overhead::torch_set_num_threads(torch_threads);
  std::printf("%s: intra-op threads %d (default %d), inter-op threads %d\n", overhead::torch_version().c_str(),
              overhead::torch_num_threads(), default_threads, overhead::torch_num_interop_threads());
  benchmark::AddCustomContext("torch_version", overhead::torch_version());
  benchmark::AddCustomContext("torch_default_num_threads", std::to_string(default_threads));
  benchmark::AddCustomContext("torch_num_threads", std::to_string(overhead::torch_num_threads()));
  benchmark::AddCustomContext("torch_num_interop_threads", std::to_string(overhead::torch_num_interop_threads()));
  if (!cross_check()) return 1;
  std::printf("cross-check: graft and LibTorch chains agree\n");
#else
  (void)torch_threads;
  std::printf("LibTorch not found at configure time: graft side only\n");
  benchmark::AddCustomContext("torch_version", "(not built)");
#endif
  std::fflush(stdout);

  for (const Case& c : overhead::all_cases()) {
    const std::string name = overhead::case_name(c);
    benchmark::RegisterBenchmark((name + "/graft").c_str(), run_case, &overhead::make_graft_runner, c)
        ->Unit(benchmark::kMicrosecond);
#ifdef OVERHEAD_HAVE_TORCH
    benchmark::RegisterBenchmark((name + "/libtorch").c_str(), run_case, &overhead::make_torch_runner, c)
        ->Unit(benchmark::kMicrosecond);
#endif
  }

  benchmark::Initialize(&nargs, args.data());
  if (benchmark::ReportUnrecognizedArguments(nargs, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
