// Storage and the default CPU allocator.
#include "graft/core/storage.h"

#include <cstdlib>
#include <new>

#include "graft/core/error.h"

namespace graft {

namespace {
// Plain aligned malloc/free. The caching allocator of the memory issue replaces this behind the
// same interface.
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const size_t rounded = (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) {
      throw Error("allocate", std::to_string(nbytes) + " bytes of CPU memory",
                  "an allocation failure", "reduce the batch size or free tensors you no longer need");
    }
    return p;
  }
  void deallocate(void* ptr, size_t) noexcept override { std::free(ptr); }
};
}  // namespace

Allocator* cpu_allocator() {
  // Never destroyed: tensors with static storage duration may be freed after every other static.
  static CpuAllocator* alloc = new CpuAllocator;
  return alloc;
}

Storage::Storage(size_t n, Allocator* alloc) : data(alloc->allocate(n)), nbytes(n), allocator(alloc) {}

Storage::Storage(void* d, size_t n, void (*del)(void*, void*), void* ctx)
    : data(d), nbytes(n), deleter(del), deleter_ctx(ctx) {}

Storage::~Storage() {
  if (allocator) allocator->deallocate(data, nbytes);
  else if (deleter) deleter(data, deleter_ctx);
}

}  // namespace graft
