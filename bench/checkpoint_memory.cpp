// Activation checkpointing: peak memory and time of a training step (forward, backward, SGD step)
// with and without graft::checkpoint_sequential, on tanh MLPs (graft only; BENCHMARKS.md,
// "Checkpointing: memory vs time").
//
//   build-b/bench/graft_checkpoint_memory [reps]          (default 7 timed reps per row)
//
// Peak: graft::memory::stats().peak_allocated_bytes over the step after reset_peak_stats(): exact
// tensor bytes, parameters and the input batch included. Floor: the peak of an ideal step with the
// same segments, where only the unavoidable tensors exist (floor_bytes below: parameters, input,
// kept segment inputs, one segment's activations, the gradients produced so far, one gradient in
// flight). Time: median over the reps, the plain and checkpointed steps interleaved so
// that drift on a shared machine hits both alike.
#include <graft/graft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace nn = graft::nn;

struct Config {
  const char* name;
  int64_t depth, width, batch, segments;
  double peak_target;  // plain / checkpointed peak at least this (0: no target)
};

struct Result {
  int64_t peak = 0, floor = 0;
  double ms = 0;
};

nn::Sequential make_mlp(const Config& c) {
  graft::manual_seed(0);
  nn::Sequential seq;
  for (int64_t i = 0; i < c.depth; ++i) {
    seq->push_back(nn::Linear(c.width, c.width));
    seq->push_back(nn::Tanh());
  }
  return seq;
}

double mib(int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

// The floor for `segments` (1: the plain run): the most bytes live at any point of an ideal step,
// one in which only the unavoidable tensors exist. Always live: the parameters and the input. In the
// forward: the kept segment inputs and the last segment's activations. In backward, at module m of
// segment k: the inputs of segments 1..k (still held by their nodes), the activations of segment k
// below m (recomputed), the gradients of every parameter from m up, and one gradient in flight.
// A kept activation is a Tanh output (Tanh keeps its output, the next Linear its input; a Linear's
// output is only a temporary). Temporaries, the loss and the SGD step cost nothing here.
int64_t floor_bytes(const Config& c, int64_t segments) {
  const int64_t a = c.batch * c.width * 4;
  const int64_t p = (c.width * c.width + c.width) * 4;
  const int64_t modules = 2 * c.depth;
  auto kept = [&](int64_t j) { return j % 2 == 1 ? a : 0; };  // modules alternate Linear, Tanh
  // The split checkpoint_sequential makes: as even as possible, earlier segments one longer.
  std::vector<int64_t> begin(static_cast<size_t>(segments) + 1, 0);
  for (int64_t k = 0; k < segments; ++k)
    begin[static_cast<size_t>(k) + 1] = begin[static_cast<size_t>(k)] + modules / segments + (k < modules % segments);
  const int64_t always = c.depth * p + a;
  int64_t best = always + (segments - 1) * a;
  for (int64_t j = begin[static_cast<size_t>(segments) - 1]; j < modules; ++j) best += kept(j);
  int64_t grads = 0;
  for (int64_t k = segments - 1; k >= 0; --k) {
    const int64_t b = begin[static_cast<size_t>(k)], e = begin[static_cast<size_t>(k) + 1];
    for (int64_t m = e - 1; m >= b; --m) {
      int64_t below = 0;
      for (int64_t j = b; j < m; ++j) below += kept(j);
      if (m % 2 == 0) grads += p;  // a Linear's weight and bias gradients
      best = std::max(best, always + k * a + below + grads + a);
    }
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  graft::set_num_threads(1);
  const std::vector<Config> configs = {
      {"depth 32, width 256, batch 4096", 32, 256, 4096, 6, 2.0},
      {"depth 64, width 256, batch 4096", 64, 256, 4096, 8, 3.0},
      {"depth 16, width 1024, batch 256 (parameter-dominated)", 16, 1024, 256, 4, 0.0},
  };
  std::printf("tanh MLPs, float32, SGD (lr 0.01), loss = mean(out^2), 1 thread, median of %d steps\n\n", reps);
  std::printf("| model | segments | peak (MiB) | plain / this | floor (MiB) | peak / floor | step (ms) | "
              "this / plain |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  std::vector<std::string> verdicts;
  for (const Config& c : configs) {
    nn::Sequential seq = make_mlp(c);
    graft::optim::SGD opt(seq->parameters(), graft::optim::SGDOptions(0.01));
    graft::manual_seed(1);
    const graft::Tensor x = graft::randn({c.batch, c.width});
    auto step = [&](int64_t segments) {
      opt.zero_grad();  // gradients to undefined: the step allocates them, and they count
      graft::Tensor out = segments == 1 ? seq->forward(x) : graft::checkpoint_sequential(seq, segments, x);
      graft::Tensor loss = out.pow(2).mean();
      out = graft::Tensor();
      loss.backward();
      opt.step();
    };
    const int64_t modes[2] = {1, c.segments};
    Result res[2];
    std::vector<double> times[2];
    for (int m = 0; m < 2; ++m) step(modes[m]);  // warm-up: caches, allocator blocks
    for (int r = 0; r < reps; ++r) {
      for (int m = 0; m < 2; ++m) {
        opt.zero_grad();
        graft::memory::reset_peak_stats();
        const auto t0 = std::chrono::steady_clock::now();
        step(modes[m]);
        times[m].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        res[m].peak = std::max(res[m].peak, graft::memory::stats().peak_allocated_bytes);
      }
    }
    for (int m = 0; m < 2; ++m) {
      std::sort(times[m].begin(), times[m].end());
      res[m].ms = times[m][times[m].size() / 2];
      res[m].floor = floor_bytes(c, modes[m]);
    }
    const double peak_ratio = static_cast<double>(res[0].peak) / static_cast<double>(res[1].peak);
    const double time_ratio = res[1].ms / res[0].ms;
    for (int m = 0; m < 2; ++m) {
      std::printf("| %s | %lld | %.1f | %.2f | %.1f | %.2f | %.0f | %.2f |\n", c.name, static_cast<long long>(modes[m]),
                  mib(res[m].peak), m == 0 ? 1.0 : peak_ratio, mib(res[m].floor),
                  static_cast<double>(res[m].peak) / static_cast<double>(res[m].floor), res[m].ms,
                  m == 0 ? 1.0 : time_ratio);
    }
    char line[256];
    if (c.peak_target > 0) {
      std::snprintf(line, sizeof line,
                    "%s, %lld segments: peak %.2fx lower (target >= %.0fx), time %.2fx (target <= 1.4x): %s",
                    c.name, static_cast<long long>(c.segments), peak_ratio, c.peak_target, time_ratio,
                    peak_ratio >= c.peak_target && time_ratio <= 1.4 ? "met" : "MISSED");
    } else {
      std::snprintf(line, sizeof line, "%s, %lld segments: peak %.2fx of the plain run's (%s), time %.2fx", c.name,
                    static_cast<long long>(c.segments), 1.0 / peak_ratio,
                    peak_ratio > 1.05 ? "lower" : "checkpointing does not lower it", time_ratio);
    }
    verdicts.push_back(line);
  }
  std::printf("\n");
  for (const auto& v : verdicts) std::printf("%s\n", v.c_str());
  return 0;
}
