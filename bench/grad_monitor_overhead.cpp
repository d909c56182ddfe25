// What the gradient-health monitor (graft::diagnostics::GradMonitor, sampling every step) adds to
// the MLP training step: 784-512-256-10, ReLU, batch 128, cross-entropy, SGD (lr 0.01, momentum
// 0.9), float32, graft::set_num_threads(1). See BENCHMARKS.md, "Gradient-health monitor overhead".
//
//   graft_grad_monitor_bench [--reps=21] [--steps=30] [--warmup=3] [--every=1] [--jsonl=PATH]
//
// Two identical models (same seed, same data), one without and one with a monitor. Each
// repetition times `steps` steps of each (after `warmup` untimed ones), alternating which goes
// first; the program reports the median ms/step of each, the median of the per-repetition
// ratios, and the time spent inside the monitor's two calls. The monitor writes its JSON Lines
// to PATH (default: a file in the temporary directory, removed at the end); --jsonl= (empty)
// keeps the records in memory only.
#include <graft/graft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace nn = graft::nn;
namespace F = graft::nn::functional;
using Clock = std::chrono::steady_clock;

std::map<std::string, std::string> parse_args(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) continue;
    const auto eq = s.find('=');
    if (eq == std::string::npos) a[s.substr(2)] = std::string(1, '1');  // (not "1": a g++ 12 -Wrestrict false positive)
    else a[s.substr(2, eq - 2)] = s.substr(eq + 1);
  }
  return a;
}

int arg_int(const std::map<std::string, std::string>& a, const std::string& k, int fallback) {
  const auto it = a.find(k);
  return it == a.end() ? fallback : std::atoi(it->second.c_str());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nn::Sequential mlp() {
  graft::manual_seed(0);
  return nn::Sequential(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(), nn::Linear(256, 10));
}

struct Run {
  nn::Sequential model = mlp();
  graft::optim::SGD opt{model->parameters(), graft::optim::SGDOptions(0.01).momentum(0.9)};
  std::unique_ptr<graft::diagnostics::GradMonitor> monitor;
  int64_t step = 0;
  double monitor_seconds = 0;  // inside after_backward + after_step
  double backward_call_seconds = 0, step_call_seconds = 0;
  int64_t monitored_steps = 0;

  void one_step(const graft::Tensor& x, const graft::Tensor& y) {
    opt.zero_grad();
    F::cross_entropy(model->forward(x), y).backward();
    if (monitor) {
      const auto t0 = Clock::now();
      monitor->after_backward(step);
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      monitor_seconds += dt;
      backward_call_seconds += dt;
    }
    opt.step();
    if (monitor) {
      const auto t0 = Clock::now();
      monitor->after_step();
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      monitor_seconds += dt;
      step_call_seconds += dt;
      ++monitored_steps;
    }
    ++step;
  }

  // ms per step over `steps` timed steps.
  double time(const graft::Tensor& x, const graft::Tensor& y, int warmup, int steps) {
    for (int i = 0; i < warmup; ++i) one_step(x, y);
    const double before = monitor_seconds;
    const int64_t counted_before = monitored_steps;
    const auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i) one_step(x, y);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / steps;
    timed_monitor_ms += (monitor_seconds - before) * 1e3;
    timed_monitor_steps += monitored_steps - counted_before;
    return ms;
  }
  double timed_monitor_ms = 0;
  int64_t timed_monitor_steps = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const auto args = parse_args(argc, argv);
  const int reps = arg_int(args, "reps", 21), steps = arg_int(args, "steps", 30), warmup = arg_int(args, "warmup", 3);
  const int every = arg_int(args, "every", 1);
  const bool default_path = args.find("jsonl") == args.end();
  const std::string path = default_path
                               ? (std::filesystem::temp_directory_path() / "graft_grad_monitor_bench.jsonl").string()
                               : args.at("jsonl");
  graft::set_num_threads(1);

  graft::Generator gen(1);
  const graft::Tensor x = graft::randn({128, 784}, graft::kFloat32, &gen);
  const graft::Tensor y = graft::randint(0, 10, {128}, graft::kInt64, &gen);

  Run plain, watched;
  // --fused=1 (the default): the monitor gets the optimiser and takes the update ratios from SGD's
  // loop (Note [Update statistics]); --fused=0: it keeps weight snapshots itself.
  const bool fused = arg_int(args, "fused", 1) != 0;
  watched.monitor = std::make_unique<graft::diagnostics::GradMonitor>(
      *watched.model, graft::diagnostics::GradMonitorOptions{
                          .every = every, .jsonl_path = path, .optimizer = fused ? &watched.opt : nullptr});

  std::vector<double> plain_ms, watched_ms, ratios;
  for (int r = 0; r < reps; ++r) {
    double a, b;
    if (r % 2 == 0) {
      a = plain.time(x, y, warmup, steps);
      b = watched.time(x, y, warmup, steps);
    } else {
      b = watched.time(x, y, warmup, steps);
      a = plain.time(x, y, warmup, steps);
    }
    plain_ms.push_back(a);
    watched_ms.push_back(b);
    ratios.push_back(b / a);
  }
  const double mp = median(plain_ms), mw = median(watched_ms), mr = median(ratios);
  const double inside = watched.timed_monitor_ms / static_cast<double>(watched.timed_monitor_steps);
  std::printf("MLP 784-512-256-10, batch 128, float32, SGD momentum 0.9, 1 thread; %d repetitions x %d steps; every = %d; %s\n",
              reps, steps, every, fused ? "fused with SGD's update loop" : "weight snapshots");
  std::printf("jsonl: %s\n", path.empty() ? "(in memory only)" : path.c_str());
  std::printf("without monitor: median %.3f ms/step (fastest %.3f)\n", mp,
              *std::min_element(plain_ms.begin(), plain_ms.end()));
  std::printf("with monitor:    median %.3f ms/step (fastest %.3f)\n", mw,
              *std::min_element(watched_ms.begin(), watched_ms.end()));
  std::printf("inside the monitor's calls: %.3f ms/step (%.1f%% of the step without it): after_backward %.3f, "
              "after_step %.3f (means over all steps)\n",
              inside, 100 * inside / mp, 1e3 * watched.backward_call_seconds / static_cast<double>(watched.monitored_steps),
              1e3 * watched.step_call_seconds / static_cast<double>(watched.monitored_steps));
  std::printf("overhead: %.1f%% (median of per-repetition ratios); %.1f%% (ratio of medians)\n", 100 * (mr - 1),
              100 * (mw / mp - 1));
  std::printf("records kept: %zu, flags: %zu\n", watched.monitor->records().size(), watched.monitor->flags().size());
  watched.monitor.reset();
  if (default_path) std::filesystem::remove(path);
  return 0;
}
