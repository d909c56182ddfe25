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

// Note [The cache under a limit]: reserved bytes are the live blocks plus the cached ones, each a
// size class (sizes 1, 1.25, 1.5, 1.75 x 2^k above 1 KiB); with a limit set, the cache gives blocks
// back before the allocator takes a new one that would pass it, so what the process holds for tensors
// stays within the limit; without one, the cache keeps them.
TEST(Memory, TheCacheStaysWithinTheLimit) {
  if (!caching_on()) GTEST_SKIP() << "GRAFT_ALLOCATOR=system: no cache";
  memory::empty_cache();
  const int64_t base = memory::stats().reserved_bytes;
  EXPECT_EQ(base, memory::stats().rounded_bytes) << "with the cache empty, the live blocks are all that is held";
  constexpr int64_t MiB = int64_t{1} << 20;
  {
    // 1.1 MiB asks for the 1.25 MiB class (2^20 + 2^18): by hand, not from the allocator's own table.
    Tensor a = empty({(MiB + MiB / 10) / 4}, kFloat32);
    EXPECT_EQ(memory::stats().reserved_bytes - base, MiB + MiB / 4);
    Tensor b = empty({2 * MiB / 4}, kFloat32);  // exactly 2 MiB: its own class
    EXPECT_EQ(memory::stats().reserved_bytes - base, MiB + MiB / 4 + 2 * MiB);
  }
  // Freed: both blocks cached, still held.
  EXPECT_EQ(memory::stats().cached_bytes, MiB + MiB / 4 + 2 * MiB);
  EXPECT_EQ(memory::stats().reserved_bytes - base, MiB + MiB / 4 + 2 * MiB);
  {
    // A limit with room for the live blocks, a 3 MiB block and 1.375 MiB more, not for the whole
    // cache: the new block (a class the cache has none of) makes the cache give blocks back, the
    // largest (2 MiB) first, which is enough.
    const int64_t limit = memory::stats().rounded_bytes + 3 * MiB + MiB + MiB / 4 + MiB / 8;
    memory::set_limit(limit);
    Tensor c = empty({3 * MiB / 4}, kFloat32);
    const memory::Stats st = memory::stats();
    memory::set_limit(0);
    EXPECT_EQ(st.cached_bytes, MiB + MiB / 4) << "the 2 MiB block must have been given back, the 1.25 MiB one kept";
    EXPECT_EQ(st.reserved_bytes - base, MiB + MiB / 4 + 3 * MiB);
    EXPECT_LE(st.reserved_bytes, limit);
  }
  memory::empty_cache();
  EXPECT_EQ(memory::stats().reserved_bytes, base);
}

// Issue 34, item 11: GRAFT_MEMORY_LIMIT=0.4 or 1e-3 (bytes: no unit) rounded to 0, which is no limit, without
// a word. parse_bytes refuses a positive count that rounds to 0 bytes; the start-up reading of the variable
// says so on stderr and sets no limit, as for any value parse_bytes refuses.
TEST(Memory, ALimitThatRoundsToZeroBytesIsRefused) {
  // By hand: 0.4 B and 1e-3 B round to 0; 0.5 B rounds to 1; 1e-9 GiB is 1.07 B, 1; zeros are 0.
  EXPECT_TRUE(throws_error([] { memory::parse_bytes("0.4"); }, {"parse_bytes", "'0.4'", "0.4 bytes", "rounds to 0"}));
  EXPECT_TRUE(throws_error([] { memory::parse_bytes("1e-3"); }, {"'1e-3'", "0.001 bytes", "rounds to 0", "1e-3GiB"}));
  EXPECT_TRUE(throws_error([] { memory::parse_bytes("0.4B"); }, {"'0.4B'", "0.4 bytes", "rounds to 0"}));
  EXPECT_EQ(memory::parse_bytes("0.5"), 1);
  EXPECT_EQ(memory::parse_bytes("1e-9GiB"), 1);
  EXPECT_EQ(memory::parse_bytes("0"), 0);
  EXPECT_EQ(memory::parse_bytes("0GiB"), 0);

  // The variable is read once per process, at the first allocation: each value is tried in a fresh
  // process (a "threadsafe" death test runs this binary again, with the environment set here). The
  // child exits 0 when it has no limit; its stderr must name the variable, the value and the unit.
  const char* env = std::getenv("GRAFT_MEMORY_LIMIT");
  const bool was_set = env != nullptr;
  const std::string saved = was_set ? env : "";
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto exit_with_limit = [] { std::exit(memory::get_limit() == 0 ? 0 : memory::get_limit() == 1 << 30 ? 2 : 1); };
  for (const std::string& v : {std::string("0.4"), std::string("1e-3")}) {
    setenv("GRAFT_MEMORY_LIMIT", v.c_str(), 1);
    EXPECT_EXIT(exit_with_limit(), testing::ExitedWithCode(0),
                "ignoring GRAFT_MEMORY_LIMIT=" + v + " \\(no limit is set\\).*'" + v + "'.* bytes, which rounds to 0")
        << v;
  }
  setenv("GRAFT_MEMORY_LIMIT", "1GiB", 1);  // a valid value is the limit (2^30 bytes: exit status 2)
  EXPECT_EXIT(exit_with_limit(), testing::ExitedWithCode(2), "");
  GTEST_FLAG_SET(death_test_style, style);
  if (was_set) setenv("GRAFT_MEMORY_LIMIT", saved.c_str(), 1);
  else unsetenv("GRAFT_MEMORY_LIMIT");
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
