// The per-thread small-block cache (Note [Small-object pool] in graft/core/small_object_pool.h).
#include "graft/core/small_object_pool.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace graft::detail {
namespace {

constexpr size_t kClassBytes = 32;
constexpr size_t kClasses = kMaxPooledBytes / kClassBytes;
constexpr size_t kMaxBlocksPerClass = 16384;

bool pool_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("GRAFT_ALLOCATOR");
    return !(v && std::strcmp(v, "system") == 0);
  }();
  return enabled;
}

struct ThreadCache {
  std::vector<void*> free[kClasses];
  ~ThreadCache();
};

// Trivially destructible, so it can be read during and after thread exit, when `cache` is gone.
thread_local bool t_cache_alive = false;

ThreadCache& cache() {
  thread_local ThreadCache c;
  t_cache_alive = true;
  return c;
}

ThreadCache::~ThreadCache() {
  t_cache_alive = false;
  for (auto& list : free)
    for (void* p : list) ::operator delete(p);
}

size_t class_of(size_t nbytes) { return (nbytes + kClassBytes - 1) / kClassBytes - 1; }

}  // namespace

void* pool_allocate(size_t nbytes) {
  if (nbytes == 0 || nbytes > kMaxPooledBytes || !pool_enabled()) return ::operator new(nbytes);
  const size_t k = class_of(nbytes);
  auto& list = cache().free[k];
  if (!list.empty()) {
    void* p = list.back();
    list.pop_back();
    return p;
  }
  return ::operator new((k + 1) * kClassBytes);
}

void pool_deallocate(void* p, size_t nbytes) noexcept {
  if (!p) return;
  if (nbytes == 0 || nbytes > kMaxPooledBytes || !pool_enabled()) return ::operator delete(p);
  if (t_cache_alive) {
    auto& list = cache().free[class_of(nbytes)];
    if (list.size() < kMaxBlocksPerClass) {
      try {
        list.push_back(p);
        return;
      } catch (...) {  // the list could not grow: release the block instead
      }
    }
  }
  ::operator delete(p);
}

}  // namespace graft::detail
