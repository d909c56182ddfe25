// Storage and the default CPU allocator.
#include "graft/core/storage.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>
#include <new>

#include "graft/core/error.h"
#include "graft/core/memory.h"

namespace graft {

namespace {

void* system_allocate(size_t nbytes) {
  const size_t rounded = (nbytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) {
    throw Error("allocate", std::to_string(nbytes) + " bytes of CPU memory", "an allocation failure",
                "reduce the batch size or free tensors you no longer need");
  }
  return p;
}

// GRAFT_ALLOCATOR=system: every allocation straight from aligned_alloc, every free straight back
// (what the sanitizer build uses, so ASan sees each buffer's true lifetime).
class SystemAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override { return nbytes == 0 ? nullptr : system_allocate(nbytes); }
  void deallocate(void* ptr, size_t) noexcept override { std::free(ptr); }
};

// Note [Caching allocator]
// A training step allocates the same sizes every iteration: activations, gradients, temporaries.
// Large blocks from aligned_alloc are fresh mmaps, and the first write to each page faults, so
// without a cache a step spends a fifth of its time in the kernel zeroing pages. Freed blocks are
// kept on a free list per size class and handed out again. Size classes: 64-byte multiples up to
// 1 KiB, then four classes per power of two (sizes 1, 1.25, 1.5, 1.75 x 2^k), so a block is at most
// 25% larger than asked. A mutex guards the lists (uncontended: a few tens of nanoseconds). At most
// kMaxCachedBytes stay cached; beyond that, frees go back to the system. memory::empty_cache()
// releases everything cached.
class CachingAllocator final : public Allocator {
 public:
  static constexpr size_t kMaxCachedBytes = size_t(2) << 30;

  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const size_t cls = size_class(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= cls;
        return p;
      }
    }
    try {
      return system_allocate(cls);
    } catch (const Error&) {
      release_all();  // give the cache back and try once more before failing
      return system_allocate(cls);
    }
  }

  void deallocate(void* ptr, size_t nbytes) noexcept override {
    if (!ptr) return;
    const size_t cls = size_class(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + cls <= kMaxCachedBytes) {
        try {
          free_[cls].push_back(ptr);
          cached_ += cls;
          return;
        } catch (...) {  // no memory for the list itself: free the block instead
        }
      }
    }
    std::free(ptr);
  }

  void release_all() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [cls, list] : free_)
      for (void* p : list) std::free(p);
    free_.clear();
    cached_ = 0;
  }

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

  static size_t size_class(size_t n) {
    if (n <= 1024) return (n + 63) / 64 * 64;
    const int top = 63 - __builtin_clzll(n);         // 2^top <= n < 2^(top+1)
    const size_t quarter = size_t(1) << (top - 2);   // classes step by a quarter of 2^top
    return (n + quarter - 1) / quarter * quarter;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

bool use_system_allocator() {
  const char* v = std::getenv("GRAFT_ALLOCATOR");
  return v && std::strcmp(v, "system") == 0;
}

CachingAllocator* caching_allocator() {
  // Never destroyed: tensors with static storage duration may be freed after every other static.
  static CachingAllocator* alloc = use_system_allocator() ? nullptr : new CachingAllocator;
  return alloc;
}

}  // namespace

Allocator* cpu_allocator() {
  static Allocator* alloc = caching_allocator() ? static_cast<Allocator*>(caching_allocator())
                                                : static_cast<Allocator*>(new SystemAllocator);
  return alloc;
}

namespace {
// Note [Memory counters]: updated on every allocation and free of an owned Storage; relaxed atomics,
// since the counters order nothing. The peak is raised with a compare-exchange loop.
std::atomic<int64_t> g_allocated{0}, g_peak{0}, g_count{0};

void count_allocation(int64_t n) {
  const int64_t now = g_allocated.fetch_add(n, std::memory_order_relaxed) + n;
  g_count.fetch_add(1, std::memory_order_relaxed);
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
void count_free(int64_t n) {
  g_allocated.fetch_sub(n, std::memory_order_relaxed);
  g_count.fetch_sub(1, std::memory_order_relaxed);
}
}  // namespace

namespace memory {
Stats stats() {
  Stats st{g_allocated.load(std::memory_order_relaxed), g_peak.load(std::memory_order_relaxed),
           g_count.load(std::memory_order_relaxed), 0};
  if (CachingAllocator* c = caching_allocator()) st.cached_bytes = static_cast<int64_t>(c->cached_bytes());
  return st;
}
void empty_cache() {
  if (CachingAllocator* c = caching_allocator()) c->release_all();
}
void reset_peak_stats() { g_peak.store(g_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed); }
}  // namespace memory

Storage::Storage(size_t n, Allocator* alloc) : data(alloc->allocate(n)), nbytes(n), allocator(alloc) {
  count_allocation(static_cast<int64_t>(n));
}

Storage::Storage(void* d, size_t n, void (*del)(void*, void*), void* ctx)
    : data(d), nbytes(n), deleter(del), deleter_ctx(ctx) {}

Storage::~Storage() {
  if (allocator) {
    allocator->deallocate(data, nbytes);
    count_free(static_cast<int64_t>(nbytes));
  }
  else if (deleter) deleter(data, deleter_ctx);
}

}  // namespace graft
