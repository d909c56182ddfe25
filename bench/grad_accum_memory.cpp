// Peak memory of one optimiser step over an effective batch of 4096 images (MLP 784-512-256-10,
// SGD with momentum), taken as one batch or as K micro-batches through
// graft::optim::GradAccumulator: the peak follows the micro-batch, not the effective batch.
// graft only: graft::memory counts tensor bytes exactly, so "step peak" is the most tensor memory
// live during the step above what was live before it (parameters, optimiser state and the data
// set are in the baseline; gradients, one micro-batch's activations and temporaries are not).
//
//   build-bench/bench/graft_grad_accum_memory        (results: BENCHMARKS.md)
#include <graft/graft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

int main() {
  namespace nn = graft::nn;
  graft::set_num_threads(1);
  const int64_t effective = 4096;
  graft::manual_seed(1);
  const graft::Tensor x = graft::randn({effective, 1, 28, 28});
  const graft::Tensor y = graft::randint(0, 10, {effective});

  std::printf("effective batch %lld; MLP 784-512-256-10, SGD momentum 0.9, float32, 1 thread\n",
              static_cast<long long>(effective));
  std::printf("| micro-batch | K | step peak above baseline (MiB) | ms per optimiser step |\n|---:|---:|---:|---:|\n");
  for (int64_t micro : {4096, 1024, 256, 64, 16}) {
    graft::manual_seed(0);
    nn::Sequential model(nn::Flatten(), nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(),
                         nn::Linear(256, 10));
    graft::optim::SGD opt(model->parameters(), graft::optim::SGDOptions(0.01).momentum(0.9));
    graft::optim::GradAccumulator acc(opt, model.ptr(), {.steps = effective / micro});
    auto group = [&] {
      for (int64_t start = 0; start < effective; start += micro) {
        const graft::Tensor loss =
            nn::functional::cross_entropy(model->forward(x.narrow(0, start, micro)), y.narrow(0, start, micro));
        acc.backward(loss, micro);
      }
    };
    group();  // warm-up: the momentum buffers exist from here on (they are in the baseline)
    std::vector<double> peaks, times;
    for (int rep = 0; rep < 3; ++rep) {
      graft::memory::reset_peak_stats();
      const int64_t base = graft::memory::stats().allocated_bytes;
      const auto t0 = std::chrono::steady_clock::now();
      group();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      peaks.push_back(static_cast<double>(graft::memory::stats().peak_allocated_bytes - base) / (1 << 20));
    }
    std::sort(times.begin(), times.end());
    std::printf("| %lld | %lld | %.2f | %.1f |\n", static_cast<long long>(micro),
                static_cast<long long>(effective / micro), peaks[1], times[1]);
  }
  return 0;
}
