// The cost of graft's memory accounting per allocation, with the allocation history off and on
// (BENCHMARKS.md, "Caching allocator and memory accounting").
//
//   build-bench/bench/graft_alloc_accounting
//
// Times `graft::empty({64})` plus its free, 200,000 times per round, 9 rounds; prints the medians.
#include <graft/graft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

int main() {
  auto round = [] {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200000; ++i) {
      graft::Tensor t = graft::empty({64});
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / 200000;
  };
  std::vector<double> off, on;
  for (int r = 0; r < 9; ++r) {
    off.push_back(round());
    graft::memory::record_history(true, 1 << 16);
    on.push_back(round());
    graft::memory::record_history(false);
  }
  std::sort(off.begin(), off.end());
  std::sort(on.begin(), on.end());
  std::printf("empty({64}) + free: %.1f ns with the history off, %.1f ns with it on (medians of 9 x 200,000)\n", off[4],
              on[4]);
}
