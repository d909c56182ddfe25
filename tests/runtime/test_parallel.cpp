// graft's thread pool (src/runtime/parallel.cpp, Note [graft's thread pool]) through parallel_for:
// every index covered exactly once, chunk sizes, nesting, exceptions, thread-count changes between
// calls, and two user threads calling at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

// Runs parallel_for over [begin, end) and checks that the chunks are disjoint, cover the range once,
// number at most get_num_threads(), and (when there is more than one) are each at least `grain`
// long but possibly the last.
void check_cover(int64_t begin, int64_t end, int64_t grain) {
  const int64_t n = std::max<int64_t>(end - begin, 0);
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    {
      std::lock_guard<std::mutex> lk(m);
      chunks.emplace_back(b, e);
    }
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i - begin)].fetch_add(1, std::memory_order_relaxed);
  });
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << begin + i << " of [" << begin << ", " << end
                                                      << ") grain " << grain;
  if (n == 0) {
    EXPECT_TRUE(chunks.empty());
    return;
  }
  EXPECT_LE(static_cast<int64_t>(chunks.size()), std::max(1, get_num_threads()));
  if (chunks.size() > 1) {
    std::sort(chunks.begin(), chunks.end());
    for (size_t c = 0; c + 1 < chunks.size(); ++c)
      EXPECT_GE(chunks[c].second - chunks[c].first, std::max<int64_t>(grain, 1));
  }
}

TEST(Parallel, CoversEveryIndexOnce) {
  ThreadCount keep;
  for (int threads : {1, 2, 3, 4, 7}) {
    set_num_threads(threads);
    for (int64_t begin : {int64_t{0}, int64_t{-5}, int64_t{1000}})
      for (int64_t len : {0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 4097})
        for (int64_t grain : {-1, 0, 1, 2, 3, 16, 100, 5000}) check_cover(begin, begin + len, grain);
  }
}

TEST(Parallel, EmptyAndReversedRangesDoNothing) {
  int calls = 0;
  parallel_for(5, 5, 1, [&](int64_t, int64_t) { ++calls; });
  parallel_for(7, 3, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(Parallel, UsesSeveralThreadsForLargeRanges) {
  ThreadCount keep;
  set_num_threads(2);
  std::mutex m;
  std::set<std::thread::id> ids;
  // Each chunk waits (bounded) until two threads have joined, so a second thread must take part.
  std::atomic<int> arrived{0};
  parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lk(m);
      ids.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    for (int spin = 0; spin < 2000 && arrived.load() < 2; ++spin) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  EXPECT_EQ(ids.size(), 2u);
}

TEST(Parallel, NestedCallsRunInline) {
  ThreadCount keep;
  set_num_threads(3);
  std::atomic<int64_t> total{0};
  std::atomic<int> nested_chunks{0};
  parallel_for(0, 6, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const auto outer = std::this_thread::get_id();
      parallel_for(0, 100, 1, [&](int64_t nb, int64_t ne) {
        EXPECT_EQ(std::this_thread::get_id(), outer);  // on the same thread
        EXPECT_EQ(nb, 0);
        EXPECT_EQ(ne, 100);  // as one chunk
        nested_chunks.fetch_add(1);
        total.fetch_add(ne - nb);
      });
    }
  });
  EXPECT_EQ(nested_chunks.load(), 6);
  EXPECT_EQ(total.load(), 600);
}

TEST(Parallel, FirstExceptionIsRethrownAfterAllChunks) {
  ThreadCount keep;
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    std::atomic<int> ran{0};
    EXPECT_THROW(parallel_for(0, 64, 1,
                              [&](int64_t b, int64_t e) {
                                ran.fetch_add(static_cast<int>(e - b));
                                if (b <= 10 && 10 < e) throw std::runtime_error("chunk failed");
                              }),
                 std::runtime_error);
    EXPECT_EQ(ran.load(), 64) << "every chunk runs, threads " << threads;
    // Every chunk throwing: one exception comes out, and the pool still works afterwards.
    EXPECT_THROW(parallel_for(0, 64, 1, [](int64_t, int64_t) { throw std::logic_error("all"); }), std::logic_error);
    check_cover(0, 1000, 10);
  }
}

TEST(Parallel, ThreadCountChangesBetweenCalls) {
  ThreadCount keep;
  for (int round = 0; round < 3; ++round)
    for (int threads : {1, 4, 2, 3, 1, 2}) {
      set_num_threads(threads);
      EXPECT_EQ(get_num_threads(), threads);
      check_cover(0, 10000, 100);
      std::atomic<int> chunks{0};
      parallel_for(0, 10000, 100, [&](int64_t, int64_t) { chunks.fetch_add(1); });
      EXPECT_EQ(chunks.load(), threads);  // 100 grains, so exactly `threads` chunks
    }
}

TEST(Parallel, ConcurrentCallersEachCoverTheirRange) {
  ThreadCount keep;
  set_num_threads(2);
  constexpr int kCallers = 4, kRounds = 200;
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        const int64_t n = 100 + 37 * c + r;
        std::vector<int> hits(static_cast<size_t>(n), 0);  // each index written by one chunk only
        parallel_for(0, n, 8, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        });
        for (int h : hits)
          if (h != 1) failures.fetch_add(1);
      }
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Parallel, SetNumThreadsWhileAnotherThreadRunsJobs) {
  ThreadCount keep;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread worker([&] {
    while (!stop.load()) {
      std::vector<int> hits(5000, 0);
      parallel_for(0, 5000, 50, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
      });
      for (int h : hits)
        if (h != 1) failures.fetch_add(1);
    }
  });
  for (int i = 0; i < 200; ++i) set_num_threads(1 + i % 4);
  stop.store(true);
  worker.join();
  EXPECT_EQ(failures.load(), 0);
}

// OpenBLAS's own thread count (graft links OpenBLAS; its header is private to graft).
extern "C" int openblas_get_num_threads(void);
extern "C" void openblas_set_num_threads(int);

TEST(Parallel, SetNumThreadsPutsOpenBlasBackAtOneThread) {
  // Other code in the process (LibTorch) may raise OpenBLAS's count; graft's split products would
  // then each run on a multi-threaded OpenBLAS, threads x threads on the cores.
  ThreadCount keep;
  set_num_threads(2);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  openblas_set_num_threads(2);
  set_num_threads(2);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  // Products still right afterwards (a 2-thread split, as Note [Splitting a matrix product] cuts it).
  const Tensor a = ones({256, 256}), b = full({256, 256}, 0.5);
  EXPECT_EQ(mm(a, b).max().item<float>(), 128.0f);
  EXPECT_EQ(mm(a, b).min().item<float>(), 128.0f);
}

}  // namespace
}  // namespace graft::test
