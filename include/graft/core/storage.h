// Storage: one reference-counted buffer from an Allocator, shared by a tensor and all its views.
//
// Note [Version counter]
// Every in-place write bumps `version` and records the op's name in `last_writer`. Views share the
// storage, so they share the counter. A tensor saved for backward remembers the version it was saved
// at; the engine compares on use and, when they differ, names the in-place op that changed it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "graft/core/dtype.h"
#include "graft/core/shape.h"

namespace graft {

// Every byte of tensor memory is obtained through an Allocator (see docs/ARCHITECTURE.md).
// allocate() returns null when the system has no memory left (Storage turns that into
// memory::OutOfMemoryError); it is never called with 0 bytes.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) noexcept = 0;
};

// The CPU allocator in use (64-byte aligned blocks).
Allocator* cpu_allocator();
// The meta device's allocator: it never allocates (meta storages have no memory).
Allocator* meta_allocator();

struct Storage;

namespace detail {
// Internal bookkeeping of the memory registry (src/core/memory.cpp), not part of graft's API. While
// a storage is saved for backward (saved_count > 0): how the first saver described its bytes, for
// memory::largest_saved_activations, and the links of the registry's intrusive list of saved
// storages, so that saving a tensor allocates nothing. All six are guarded by the registry's lock.
// It sits in this public header only because Storage must be a complete type for Tensor's inline
// accessors (data_ptr, _version, device) in graft/core/tensor.h.
struct SavedLink {
  Storage* prev = nullptr;
  Storage* next = nullptr;
  Shape sizes;
  DType dtype = DType::Float32;
  const char* produced_by = nullptr;
  const char* saved_by = nullptr;
};
}  // namespace detail

struct Storage {
  Storage(size_t nbytes, Allocator* alloc);
  // A storage on `device`: the CPU's allocator, or on kMeta no memory at all (data stays null, the
  // bytes are counted in the meta counters: Note [Meta device] in graft/core/dtype.h).
  Storage(size_t nbytes, Device device);
  // Wraps memory owned elsewhere (from_blob); `deleter` is called on destruction when non-null.
  Storage(void* data, size_t nbytes, void (*deleter)(void*, void*), void* deleter_ctx);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data = nullptr;
  size_t nbytes = 0;
  Allocator* allocator = nullptr;  // null for borrowed memory
  void (*deleter)(void*, void*) = nullptr;
  void* deleter_ctx = nullptr;
  Device device;
  std::atomic<uint32_t> version{0};
  const char* last_writer = nullptr;  // name of the last in-place op ("add_"), for error messages
  // Note [Memory categories] (graft/core/memory.h): what holds these bytes (a memory::Category),
  // how many graph nodes hold them for backward, and the op that allocated them.
  std::atomic<uint8_t> category{4};  // memory::Category::Other
  std::atomic<int32_t> saved_count{0};
  const char* allocated_by = nullptr;
  // Internal to the memory registry (src/core/memory.cpp), not API: see detail::SavedLink.
  detail::SavedLink saved_link;

  void bump_version(const char* op) {
    version.fetch_add(1, std::memory_order_relaxed);
    last_writer = op;
  }
};

}  // namespace graft
