// Kernel benchmark: elementwise and reduction throughput, matrix products, conv2d forward +
// backward, optimiser steps and clip_grad_norm_ over 10M parameters, graft vs LibTorch (and, for
// matmul, OpenBLAS's cblas_sgemm called directly) in one process. Part of the suite that
// bench/run_suite.sh runs; the cases are listed in kernels_common.h.
//
//   graft_kernels [--threads=1,2] [--reps=9] [--min_time=0.05] [--settle_ms=150] [--filter=SUBSTRING]
//                 [--json=FILE]
//
// For each thread count and case: every library builds its inputs (the same values), runs the
// case once and the results are compared (a wrong set-up would otherwise go unnoticed); then, after
// a warm-up run, each repetition times a block of runs of each library in turn (alternating which
// goes first), the block long enough to last about min_time seconds. Each library sets its thread
// count before its block: graft::set_num_threads, torch::set_num_threads plus
// openblas_set_num_threads (LibTorch's matrix products run on OpenBLAS's own pool), and
// openblas_set_num_threads for the direct calls. The JSON holds every repetition's ms per run.
// At more than one thread, each block starts after a pause of settle_ms: OpenBLAS's own threads
// (which LibTorch's products and the direct calls use) spin for about 0.1 s after a call before
// they sleep (OPENBLAS_THREAD_TIMEOUT), so without the pause a block that follows theirs runs
// against two spinning threads on two cores. The pause gives every block, of every library, idle
// cores to start on; each library's own threads start or wake inside its block, and are timed.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.h"
#include "kernels_common.h"

namespace {

using namespace kbench;

using bench::arg_str;
using bench::parse_args;

// C = A B by cblas_sgemm on OpenBLAS's own threads: the best a matrix product can do with this BLAS.
class OpenBlasMatmul : public Runner {
 public:
  explicit OpenBlasMatmul(int64_t n)
      : n_(n), a_(values(n * n, 21, -1, 1)), b_(values(n * n, 22, -1, 1)), c_(static_cast<size_t>(n * n)) {}
  void run() override {
    const auto n = static_cast<blasint>(n_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a_.data(), n, b_.data(), n, 0.0f, c_.data(), n);
  }
  double checksum() override {
    double s = 0;
    for (float v : c_) s += v;
    return s;
  }

 private:
  int64_t n_;
  std::vector<float> a_, b_, c_;
};

struct Lib {
  std::string name;
  std::unique_ptr<Runner> runner;
  void (*set_threads)(int);
};

void openblas_threads(int n) { openblas_set_num_threads(n); }
#ifdef KERNELS_HAVE_TORCH
void torch_threads(int n) {
  openblas_set_num_threads(n);
  torch_set_threads(n);
}
#endif

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string json_list(const std::vector<double>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + "]";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

}  // namespace

int main(int argc, char** argv) {
  const auto a = parse_args(argc, argv);
  const int reps = std::atoi(arg_str(a, "reps", "9").c_str());
  const double min_time = std::atof(arg_str(a, "min_time", "0.05").c_str());
  const int settle_ms = std::atoi(arg_str(a, "settle_ms", "150").c_str());
  const std::string filter = arg_str(a, "filter", "");
  std::vector<int> thread_counts;
  {
    std::istringstream in(arg_str(a, "threads", "1,2"));
    std::string tok;
    while (std::getline(in, tok, ',')) thread_counts.push_back(std::atoi(tok.c_str()));
  }
  const char* core_before = openblas_get_corename();
  std::printf("openblas_get_corename() = %s before graft's check, %s after; OPENBLAS_CORETYPE=%s OMP_WAIT_POLICY=%s\n",
              core_before, graft_blas_core().c_str(), std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "(unset)",
              std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "(unset)");
#ifdef KERNELS_HAVE_TORCH
  std::printf("%s\n", torch_version().c_str());
#endif
  std::ostringstream js;
  js << "{\"context\": {\"reps\": " << reps << ", \"min_time\": " << min_time << ", \"corename\": \"" << graft_blas_core()
     << "\"}, \"results\": [\n";
  bool first_row = true;
  int mismatches = 0;
  for (int threads : thread_counts) {
    for (const std::string& name : all_cases()) {
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      std::vector<Lib> libs;
      libs.push_back({"graft", make_graft_runner(name), graft_set_threads});
#ifdef KERNELS_HAVE_TORCH
      libs.push_back({"torch", make_torch_runner(name), torch_threads});
#endif
      if (case_op(name) == "matmul") libs.push_back({"openblas", std::make_unique<OpenBlasMatmul>(size_of(case_arg(name))), openblas_threads});
      // 1. Same results: one run each from the same inputs.
      std::vector<double> sums;
      for (Lib& l : libs) {
        l.set_threads(threads);
        l.runner->run();
        sums.push_back(l.runner->checksum());
      }
      std::string check = "ok";
      for (size_t i = 1; i < sums.size(); ++i) {
        const double rel = std::fabs(sums[i] - sums[0]) / std::max(1.0, std::fabs(sums[0]));
        if (!(rel <= 2e-3)) {
          check = "MISMATCH " + libs[i].name + " " + std::to_string(sums[i]) + " vs graft " + std::to_string(sums[0]);
          ++mismatches;
        }
      }
      // 2. Calibrate the block length on a warm run.
      std::vector<int> iters;
      for (Lib& l : libs) {
        l.set_threads(threads);
        l.runner->run();
        const auto t0 = std::chrono::steady_clock::now();
        l.runner->run();
        const double t = seconds_since(t0);
        iters.push_back(std::max(1, static_cast<int>(min_time / std::max(t, 1e-9))));
      }
      // 3. Repetitions, libraries interleaved.
      std::vector<std::vector<double>> ms(libs.size());
      for (int r = 0; r < reps; ++r)
        for (size_t k = 0; k < libs.size(); ++k) {
          const size_t i = (k + static_cast<size_t>(r)) % libs.size();
          Lib& l = libs[i];
          l.set_threads(threads);
          if (threads > 1 && settle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
          const auto t0 = std::chrono::steady_clock::now();
          for (int it = 0; it < iters[i]; ++it) l.runner->run();
          ms[i].push_back(1e3 * seconds_since(t0) / iters[i]);
        }
      std::printf("%-22s t%d", name.c_str(), threads);
      for (size_t i = 0; i < libs.size(); ++i) std::printf("  %s %.4f ms", libs[i].name.c_str(), median(ms[i]));
      if (libs.size() > 1) std::printf("  ratio %.2f", median(ms[0]) / median(ms[1]));
      std::printf("  %s\n", check.c_str());
      std::fflush(stdout);
      js << (first_row ? "" : ",\n") << "  {\"case\": \"" << name << "\", \"threads\": " << threads << ", \"check\": \""
         << check << "\"";
      for (size_t i = 0; i < libs.size(); ++i) js << ", \"" << libs[i].name << "_ms\": " << json_list(ms[i]);
      js << "}";
      first_row = false;
    }
  }
  js << "\n]}\n";
  const std::string out = arg_str(a, "json", "");
  if (!out.empty()) std::ofstream(out) << js.str();
  if (mismatches) std::fprintf(stderr, "%d case(s) computed different results in graft and LibTorch\n", mismatches);
  return mismatches ? 1 : 0;
}
