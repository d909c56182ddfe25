// graft::memory counters, the caching allocator, and the BLAS / thread settings.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

bool caching_on() {
  const char* v = std::getenv("GRAFT_ALLOCATOR");
  return !(v && std::strcmp(v, "system") == 0);
}

TEST(Memory, CountsLiveBytesExactly) {
  const auto before = memory::stats();
  {
    Tensor a = empty({1000}, kFloat32);  // 4000 bytes
    Tensor b = empty({10, 10}, kFloat64);  // 800 bytes
    auto now = memory::stats();
    EXPECT_EQ(now.allocated_bytes - before.allocated_bytes, 4800);
    EXPECT_EQ(now.allocations - before.allocations, 2);
    // views share storage: nothing new is counted
    Tensor v = a.view({10, 100}).narrow(0, 2, 3);
    Tensor t = b.t();
    EXPECT_EQ(memory::stats().allocated_bytes - before.allocated_bytes, 4800);
  }
  EXPECT_EQ(memory::stats().allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(memory::stats().allocations, before.allocations);
}

TEST(Memory, PeakFollowsTheHighestPointSinceReset) {
  memory::reset_peak_stats();
  const int64_t base = memory::stats().allocated_bytes;
  EXPECT_EQ(memory::stats().peak_allocated_bytes, base);
  {
    Tensor big = empty({25000}, kFloat32);  // 100,000 bytes
    Tensor small = empty({100}, kFloat64);  // 800 bytes
  }
  { Tensor mid = empty({1000}, kFloat32); }
  EXPECT_EQ(memory::stats().peak_allocated_bytes, base + 100800);
  memory::reset_peak_stats();
  EXPECT_EQ(memory::stats().peak_allocated_bytes, memory::stats().allocated_bytes);
}

TEST(Memory, BackwardReleasesSavedTensors) {
  // y = exp(x) saves its output (16 floats); after backward the graph and its saved output are gone.
  Tensor x = ones({16}).requires_grad_();
  const int64_t base = memory::stats().allocated_bytes;
  {
    Tensor y = exp(x).sum();
    EXPECT_GE(memory::stats().allocated_bytes - base, 16 * 4);
    y.backward();
  }
  // only x.grad (16 floats) remains
  EXPECT_EQ(memory::stats().allocated_bytes - base, 16 * 4);
}

TEST(Memory, CachingAllocatorReusesFreedBlocksAndEmptiesOnRequest) {
  void* first = nullptr;
  {
    Tensor a = empty({1 << 20}, kFloat32);
    first = a.data_ptr();
  }
  if (!caching_on()) {
    EXPECT_EQ(memory::stats().cached_bytes, 0);
    GTEST_SKIP() << "GRAFT_ALLOCATOR=system: no cache";
  }
  EXPECT_GE(memory::stats().cached_bytes, int64_t{4} << 20);
  {
    Tensor b = empty({1 << 20}, kFloat32);  // same size class: the same block again
    EXPECT_EQ(b.data_ptr(), first);
    Tensor c = empty({(1 << 20) - 100}, kFloat32);  // same class, block in use: a new one
    EXPECT_NE(c.data_ptr(), first);
  }
  memory::empty_cache();
  EXPECT_EQ(memory::stats().cached_bytes, 0);
}

TEST(Runtime, ThreadsAndBlasCore) {
  const int before = get_num_threads();
  EXPECT_GE(before, 1);
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  set_num_threads(before);
  EXPECT_TRUE(throws_error([] { set_num_threads(0); }, {"set_num_threads", "at least 1", "0"}));
  // Note [OpenBLAS core type]: on a processor with AVX-512, OpenBLAS runs AVX-512 kernels.
  const char* choice = std::getenv("GRAFT_BLAS_CORETYPE");
#if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
  const bool avx512 = false;
#endif
  const std::string core = blas_core_name();
  if (avx512 && !choice) {
    EXPECT_TRUE(core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids") << core;
  }
  // and a product computed with those kernels is right: (2x3) @ (3x2) by hand
  const Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}).to(kFloat32), b = make({7, 8, 9, 10, 11, 12}, {3, 2}).to(kFloat32);
  EXPECT_TRUE(all_close(matmul(a, b), {58, 64, 139, 154}, {2, 2}));
}

}  // namespace
}  // namespace graft::test
