// The memory accounting's entry points for Storage, SavedTensor and the allocator (not installed).
// See Note [Memory categories] and Note [Memory limit] in graft/core/memory.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "graft/core/dtype.h"
#include "graft/core/memory.h"
#include "graft/core/shape.h"

namespace graft::memory::detail {

// Before an allocation of `nbytes`: throws OutOfMemoryError when it would pass the limit.
void check_limit(size_t nbytes);
// The allocator could not provide `nbytes`: throws OutOfMemoryError.
[[noreturn]] void throw_system_oom(size_t nbytes);

// An owned storage was allocated (counted as Other) / is being freed.
void on_alloc(Storage& s);
void on_free(Storage& s);

// A graph node starts / stops holding `s` for backward. `sizes`/`dtype` describe the saved view;
// `produced_by` is the forward op that made it ("tanh"; null for inputs and leaves), as autograd
// records it on the op's node (Note [Forward op of a node]); `saved_by` is the node saving it
// ("TanhBackward0"). Both are static strings.
void on_saved(Storage& s, IntArrayRef sizes, DType dtype, const char* produced_by, const char* saved_by);
void on_unsaved(Storage& s);

// The memory history (Note [Memory history]) of the meta device instead of the CPU's: while it is
// on, the events are meta storages' (their totals the meta counters'), and the CPU's are not
// recorded; history() returns them and record_history(false) or record_meta_history(false) ends
// it. The planner on shapes alone (memory::plan on a meta model) pairs these events.
void record_meta_history(bool enabled, size_t max_events);
void record_history_of(bool meta, bool enabled, size_t max_events);
// reset_peak_stats() for the meta device's counters alone (the planner's, which must not move the
// CPU's peaks).
void reset_meta_peak_stats();

// The caching allocator (storage.cpp).
int64_t allocator_cached_bytes();
// The bytes a block of `nbytes` takes from the CPU allocator in use: its size class (Note [Caching
// allocator]), or 64-byte rounding with GRAFT_ALLOCATOR=system; 0 for 0.
int64_t allocator_block_bytes(size_t nbytes);
void allocator_release_cache();
// The CPU's live tensors in the allocator's blocks (Stats::rounded_bytes), for the cache to stay
// within the limit (Note [The cache under a limit] in storage.cpp).
int64_t live_block_bytes();
// The CPU allocator took `delta` bytes from the system (negative: gave them back): Stats::reserved_bytes.
void on_reserved(int64_t delta);

}  // namespace graft::memory::detail
