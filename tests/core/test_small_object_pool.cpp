// The small-object pool (Note [Small-object pool]): blocks are reused per size class on the thread
// that freed them, large requests bypass it, blocks freed on another thread are safe to reuse or
// release, and tensors built on it behave as before.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "graft/core/small_object_pool.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

bool pool_bypassed() {
  const char* v = std::getenv("GRAFT_ALLOCATOR");
  return v && std::strcmp(v, "system") == 0;
}

TEST(SmallObjectPool, AFreedBlockIsReusedForTheSameSizeClass) {
  if (pool_bypassed()) GTEST_SKIP() << "GRAFT_ALLOCATOR=system bypasses the pool";
  void* a = detail::pool_allocate(200);
  std::memset(a, 0xab, 200);  // the whole request is usable
  detail::pool_deallocate(a, 200);
  void* b = detail::pool_allocate(193);  // same 32-byte class (193..224)
  EXPECT_EQ(a, b);
  detail::pool_deallocate(b, 193);
  void* c = detail::pool_allocate(100);  // another class: not the cached block
  EXPECT_NE(c, b);
  detail::pool_deallocate(c, 100);
}

TEST(SmallObjectPool, LargeRequestsAndCrossThreadFreesAreSafe) {
  void* big = detail::pool_allocate(5000);  // above kMaxPooledBytes: operator new
  std::memset(big, 1, 5000);
  detail::pool_deallocate(big, 5000);
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(detail::pool_allocate(64));
  std::thread t([&] {  // freed on another thread: joins that thread's cache, released at its exit
    for (void* p : blocks) detail::pool_deallocate(p, 64);
  });
  t.join();
  std::vector<Tensor> made;
  std::thread maker([&] {  // tensors made on one thread, freed on another
    for (int i = 0; i < 100; ++i) made.push_back(ones({3}) * static_cast<double>(i));
  });
  maker.join();
  double total = 0;
  for (const Tensor& x : made) total += sum(x).item<double>();
  EXPECT_EQ(total, 3.0 * (99.0 * 100.0 / 2.0));
  made.clear();
}

TEST(SmallObjectPool, GraphsBuiltOnPooledNodesStillDifferentiate) {
  Tensor x = full({4}, 2.0, TensorOptions().requires_grad(true));
  Tensor y = x;
  for (int i = 0; i < 1000; ++i) y = y * 1.001;
  y.sum().backward();
  EXPECT_NEAR(x.grad().data_ptr<float>()[0], std::pow(1.001, 1000), 1e-3);
}

}  // namespace
}  // namespace graft::test
