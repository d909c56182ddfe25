// A per-thread cache of small heap blocks for graft's bookkeeping objects (TensorImpl, Storage and
// autograd nodes, with their shared_ptr control blocks).
//
// Note [Small-object pool]
// A recorded op creates a Storage, a TensorImpl and a Node, each one heap block; freeing a graph
// frees thousands of them at once. glibc caches only 7 freed blocks per size per thread, so the
// rest go through its bins and consolidation: about 40% of the instructions of the per-op overhead
// chains were malloc and free (callgrind; BENCHMARKS.md, "Per-op overhead"). This pool keeps freed
// blocks of up to kMaxPooledBytes on a per-thread free list per 32-byte size class (at most
// kMaxBlocksPerClass each; beyond that, and after the thread's cache is gone, blocks go back to
// operator delete). A block freed on another thread joins that thread's list: blocks are plain
// operator-new memory, so any thread may reuse or release them. GRAFT_ALLOCATOR=system (the
// sanitizer runs) bypasses the pool, so AddressSanitizer sees every object's true lifetime.
// Used through std::allocate_shared with PoolAllocator<T>.
#pragma once

#include <cstddef>
#include <new>

namespace graft::detail {

inline constexpr size_t kMaxPooledBytes = 1024;

void* pool_allocate(size_t nbytes);
void pool_deallocate(void* p, size_t nbytes) noexcept;

template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "pooled objects use operator new's alignment");
    return static_cast<T*>(pool_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { pool_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace graft::detail
