// Counters of the tensor memory graft's allocator has handed out.
//
//   graft::memory::reset_peak_stats();
//   train_step();
//   std::cout << graft::memory::stats().peak_allocated_bytes;
//
// Every byte counted here is a tensor's storage (from_blob memory, owned by the caller, is not);
// the counters are process-wide and exact: allocated_bytes is the sum of the nbytes of every live
// Storage that graft allocated.
#pragma once

#include <cstdint>

namespace graft::memory {

struct Stats {
  int64_t allocated_bytes = 0;       // live now
  int64_t peak_allocated_bytes = 0;  // the most live at once since start or reset_peak_stats()
  int64_t allocations = 0;           // number of live allocations
  int64_t cached_bytes = 0;          // freed blocks the caching allocator keeps for reuse
};

Stats stats();
// Sets the peak to what is live now.
void reset_peak_stats();
// Returns the blocks the caching allocator keeps to the system (Note [Caching allocator]).
// GRAFT_ALLOCATOR=system turns the cache off altogether.
void empty_cache();

}  // namespace graft::memory
