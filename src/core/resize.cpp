// Tensor::resize_ and resize_as_: change a tensor's sizes in place, growing its storage when needed.
//
// Note [resize_]
// As PyTorch 1.13's resize_: the tensor gets the new sizes with contiguous strides, at its storage
// offset; when the sizes equal the current ones nothing changes (not even non-contiguous strides).
// When offset + numel elements do not fit, the storage grows: a new block from the same allocator,
// the old bytes copied to its front (so the elements keep their values in flat storage order), the
// old block freed. PyTorch leaves the new elements uninitialised; graft fills them with zeros, so
// that reading them is never a read of uninitialised memory (ASan/MSan builds, reproducible tests).
// A storage never shrinks: a smaller size keeps every byte, and growing back shows the old values.
// The Storage object itself is kept (only its data pointer and byte count change), so every view of
// it, a view being resized included, sees the grown buffer, as in PyTorch, where a view's resize_
// grows the storage it shares with its base. What does not grow is memory graft does not own
// (from_blob: PyTorch's "Trying to resize storage that is not resizable"). A meta tensor's storage
// only changes its byte count. Errors, as PyTorch: a tensor that requires grad (whether or not grad
// mode is on: PyTorch's "cannot resize variables that require grad"), negative sizes, and a byte
// count that overflows int64. The version counter is not bumped (PyTorch's is not either).
// Memory accounting: the old block's bytes are freed and the new block's allocated in the counters
// (memory::stats), and the storage keeps its memory category and the op that first allocated it.
#include <cstring>
#include <string>

#include "core/memory_internal.h"
#include "graft/core/error.h"
#include "graft/core/memory.h"
#include "graft/core/tensor.h"

namespace graft {

namespace {

// Grows `s` to `n` bytes (n > s.nbytes), keeping its contents at the front and zeroing the rest.
void grow_storage(Storage& s, size_t n) {
  GRAFT_CHECK(s.allocator != nullptr, "resize_", "a tensor whose storage graft owns and can grow",
              "a storage of " + std::to_string(s.nbytes) + " bytes wrapping memory owned elsewhere (from_blob), asked to grow to " +
                  std::to_string(n) + " bytes",
              "Trying to resize storage that is not resizable: clone() the tensor first, or resize to at most " +
                  std::to_string(s.nbytes) + " bytes");
  const size_t old = s.nbytes;
  void* fresh = nullptr;
  if (!s.device.is_meta()) {
    memory::detail::check_limit(n - old);  // the accounted bytes grow by the difference
    fresh = s.allocator->allocate(n);
    if (!fresh) memory::detail::throw_system_oom(n);
    if (old > 0) std::memcpy(fresh, s.data, old);
    std::memset(static_cast<char*>(fresh) + old, 0, n - old);
  }
  // From here on nothing throws. on_free takes the old bytes out of the storage's category; on_alloc
  // counts the new ones as Other, so the category is stored back as Other and then moved to where
  // it was.
  const memory::Category category = memory::category_of(s);
  const char* allocated_by = s.allocated_by;
  memory::detail::on_free(s);
  if (!s.device.is_meta()) s.allocator->deallocate(s.data, old);
  s.data = fresh;
  s.nbytes = n;
  memory::detail::on_alloc(s);
  s.category.store(static_cast<uint8_t>(memory::Category::Other), std::memory_order_relaxed);
  memory::set_category(s, category);
  s.allocated_by = allocated_by;
}

}  // namespace

const Tensor& Tensor::resize_(IntArrayRef size) const {
  TensorImpl& self = impl();
  GRAFT_CHECK(!requires_grad(), "resize_", "a tensor that does not require grad",
              "a tensor of shape " + shape_str(sizes()) + " that requires grad",
              "cannot resize variables that require grad: resize a detach()ed tensor, or make a new one");
  GRAFT_CHECK(size.size() <= static_cast<size_t>(kMaxDims), "resize_",
              "at most " + std::to_string(kMaxDims) + " dimensions", std::to_string(size.size()) + " dimensions",
              "resize to fewer dimensions");
  int64_t numel = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    GRAFT_CHECK(size[i] >= 0, "resize_", "sizes >= 0", "size " + std::to_string(size[i]) + " at dim " + std::to_string(i) +
                " in " + shape_str(size), "resize_ takes the new sizes themselves; -1 is not inferred");
    GRAFT_CHECK(!__builtin_mul_overflow(numel, size[i], &numel), "resize_", "sizes whose product fits in int64",
                shape_str(size), "resize to fewer elements");
  }
  if (size.equals(self.sizes)) return *this;  // PyTorch keeps the strides when the sizes are unchanged
  int64_t bytes = 0;
  GRAFT_CHECK(!__builtin_add_overflow(self.offset, numel, &bytes) &&
                  !__builtin_mul_overflow(bytes, static_cast<int64_t>(graft::element_size(self.dtype)), &bytes),
              "resize_", "a byte count that fits in int64", shape_str(size) + " at storage offset " + std::to_string(self.offset),
              "resize to fewer elements");
  // numel 0 needs no storage at all, whatever the offset (PyTorch's rule too).
  if (numel > 0 && static_cast<size_t>(bytes) > self.storage->nbytes) grow_storage(*self.storage, static_cast<size_t>(bytes));
  self.sizes = Shape(size);
  self.strides = contiguous_strides(size);
  self.numel = numel;
  return *this;
}

const Tensor& Tensor::resize_as_(const Tensor& the_template) const { return resize_(the_template.sizes()); }

}  // namespace graft
