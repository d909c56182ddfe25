// Storage and the default CPU allocator.
#include "graft/core/storage.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>
#include <new>

#include <sys/mman.h>

#include "graft/core/error.h"
#include "core/memory_internal.h"
#include "graft/core/memory.h"

namespace graft {

namespace {

// Null when the system refuses (Storage reports it as memory::OutOfMemoryError).
void* system_allocate(size_t nbytes) {
  const size_t rounded = (nbytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p) memory::detail::on_reserved(static_cast<int64_t>(rounded));
  return p;
}

// GRAFT_ALLOCATOR=system: every allocation straight from aligned_alloc, every free straight back
// (what the sanitizer build uses, so ASan sees each buffer's true lifetime).
class SystemAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override { return nbytes == 0 ? nullptr : system_allocate(nbytes); }
  void deallocate(void* ptr, size_t nbytes) noexcept override {
    if (!ptr) return;
    std::free(ptr);
    memory::detail::on_reserved(-static_cast<int64_t>((nbytes + 63) / 64 * 64));
  }
};

// Note [Caching allocator]
// A training step allocates the same sizes every iteration: activations, gradients, temporaries.
// Large blocks from the system are fresh mappings, and the first write to each page faults, so
// without a cache a step spends a fifth of its time in the kernel zeroing pages. Freed blocks are
// kept on a free list per size class and handed out again. Size classes: 64-byte multiples up to
// 1 KiB, then four classes per power of two (sizes 1, 1.25, 1.5, 1.75 x 2^k), so a block is at most
// 25% larger than asked. A mutex guards the lists (uncontended: a few tens of nanoseconds). At most
// kMaxCachedBytes stay cached; beyond that, frees go back to the system. memory::empty_cache()
// releases everything cached.
//
// Note [The cache under a limit]
// What the process holds for tensors is the live blocks plus the cached ones, so a cache that only
// grows would let the resident memory pass a memory limit (memory::set_limit, --memory-budget) that
// the live bytes keep: a run of issue 31's GPT under a 512 MiB limit held 436 MiB of free blocks
// beside 295 MiB of live ones. With a limit set, before a block is taken from the system the cache
// gives back its largest free blocks until the live blocks, the cached ones and the new one fit in
// the limit (as PyTorch's CUDA allocator frees its cache before it reports out of memory). And
// blocks of kMapThreshold or more are mappings of their own (mmap/munmap), so a block given back
// leaves the resident memory at once: glibc's malloc would keep such a block in its heap, where
// only the top can be trimmed, and its mmap threshold rises with every large free.
class CachingAllocator final : public Allocator {
 public:
  static constexpr size_t kMaxCachedBytes = size_t(2) << 30;
  static constexpr size_t kMapThreshold = size_t(256) << 10;  // a page multiple: classes >= 1 KiB step by 2^k / 4

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
      if (const int64_t limit = memory::get_limit(); limit > 0)
        trim_locked(limit - std::min(limit, memory::detail::live_block_bytes() + static_cast<int64_t>(cls)));
    }
    if (void* p = block_allocate(cls)) return p;
    release_all();  // give the cache back and try once more before failing
    return block_allocate(cls);
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
    block_free(ptr, cls);
  }

  void release_all() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    trim_locked(0);
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
  static void* block_allocate(size_t cls) {
    void* p = nullptr;
    if (cls < kMapThreshold) {
      p = std::aligned_alloc(64, cls);
    } else {
      p = mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);  // page-aligned
      if (p == MAP_FAILED) p = nullptr;
    }
    if (p) memory::detail::on_reserved(static_cast<int64_t>(cls));
    return p;
  }
  static void block_free(void* p, size_t cls) noexcept {
    if (cls < kMapThreshold) std::free(p);
    else munmap(p, cls);
    memory::detail::on_reserved(-static_cast<int64_t>(cls));
  }

  // Gives cached blocks back to the system, the largest first, until at most `keep` bytes stay cached.
  void trim_locked(int64_t keep) noexcept {
    for (auto it = free_.rbegin(); it != free_.rend() && static_cast<int64_t>(cached_) > keep; ++it) {
      std::vector<void*>& list = it->second;
      while (!list.empty() && static_cast<int64_t>(cached_) > keep) {
        block_free(list.back(), it->first);
        list.pop_back();
        cached_ -= it->first;
      }
    }
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // by size class, ordered so that trimming frees the largest first
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

namespace {
// Never asked for memory: a meta storage's constructor does not call it (Note [Meta device]).
class MetaAllocator final : public Allocator {
 public:
  void* allocate(size_t) override { return nullptr; }
  void deallocate(void*, size_t) noexcept override {}
};
}  // namespace

Allocator* meta_allocator() {
  static Allocator* alloc = new MetaAllocator;
  return alloc;
}

Allocator* cpu_allocator() {
  static Allocator* alloc = caching_allocator() ? static_cast<Allocator*>(caching_allocator())
                                                : static_cast<Allocator*>(new SystemAllocator);
  return alloc;
}

namespace memory::detail {
int64_t allocator_cached_bytes() {
  CachingAllocator* c = caching_allocator();
  return c ? static_cast<int64_t>(c->cached_bytes()) : 0;
}
int64_t allocator_block_bytes(size_t nbytes) {
  if (nbytes == 0) return 0;
  return static_cast<int64_t>(caching_allocator() ? CachingAllocator::size_class(nbytes) : (nbytes + 63) / 64 * 64);
}
void allocator_release_cache() {
  if (CachingAllocator* c = caching_allocator()) c->release_all();
}
}  // namespace memory::detail

// Note [Memory limit]: the limit is checked, and a refused allocation reported, before anything is
// counted, so a failed allocation leaves every counter as it was.
Storage::Storage(size_t n, Allocator* alloc) : nbytes(n), allocator(alloc) {
  memory::detail::check_limit(n);
  if (n > 0) {
    data = alloc->allocate(n);
    if (!data) memory::detail::throw_system_oom(n);
  }
  memory::detail::on_alloc(*this);
}

Storage::Storage(size_t n, Device dev) : nbytes(n), device(dev) {
  GRAFT_CHECK(dev.is_cpu() || dev.is_meta(), "empty", "a CPU device or the meta device", dev.str(),
              "graft runs on the CPU and on meta tensors so far; the CUDA device is planned");
  if (dev.is_meta()) {
    allocator = meta_allocator();  // counted (allocator set), never allocated
  } else {
    allocator = cpu_allocator();
    memory::detail::check_limit(n);
    if (n > 0) {
      data = allocator->allocate(n);
      if (!data) memory::detail::throw_system_oom(n);
    }
  }
  memory::detail::on_alloc(*this);
}

Storage::Storage(void* d, size_t n, void (*del)(void*, void*), void* ctx)
    : data(d), nbytes(n), deleter(del), deleter_ctx(ctx) {}

Storage::~Storage() {
  if (allocator) {
    allocator->deallocate(data, nbytes);
    memory::detail::on_free(*this);
  }
  else if (deleter) deleter(data, deleter_ctx);
}

}  // namespace graft
