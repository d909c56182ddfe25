// Where graft's tensor memory goes: exact counters by category, a readable summary, a memory limit
// with an out-of-memory report that explains itself, an opt-in history of allocation events, and a
// detector for graphs kept alive by accident.
//
//   graft::memory::reset_peak_stats();
//   train_step();
//   std::cout << graft::memory::memory_summary();
//
// Every byte counted here is a tensor's storage (from_blob memory, owned by the caller, is not). The
// counters are process-wide and exact: allocated_bytes is the sum of the nbytes of every live
// Storage that graft allocated, and each of those bytes is counted under exactly one Category.
//
// Note [Memory categories]
// A storage's category says what holds it, and changes as its role does:
//   Parameters        registered by a Module (register_parameter) or handed to an optimiser;
//   Gradients         stored in a leaf's .grad by backward (or by the user through mutable_grad());
//   OptimizerState    an optimiser's buffers (momentum, exp_avg, ...);
//   SavedActivations  held by the graph for backward (SavedTensor), and by nothing of the above;
//   Other             everything else: inputs, outputs, temporaries;
//   Data              a data set held in memory for a run (data::ByteImageDataset's bytes and labels).
// Parameters, gradients, optimiser state and data are explicit roles and stay; SavedActivations lasts while at least one graph node
// holds the storage (saving a parameter leaves it a parameter). A view shares its base's storage, so
// it is never counted twice. Moving a storage between categories moves its bytes; per-category peaks
// are the highest value each category's current count reached.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/core/error.h"

namespace graft {
struct Storage;
}

namespace graft::memory {

// Data comes last so that Other keeps its number (Storage's initial category).
enum class Category : uint8_t { Parameters, Gradients, OptimizerState, SavedActivations, Other, Data };
inline constexpr int kNumCategories = 6;
// "parameters", "gradients", "optimizer_state", "saved_activations", "other", "data".
const char* category_name(Category c);
// "parameters", "gradients", "optimizer state", "saved activations", "other", "data" (for tables).
const char* category_label(Category c);

struct CategoryStats {
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;
};

struct Stats {
  int64_t allocated_bytes = 0;       // live now
  int64_t peak_allocated_bytes = 0;  // the most live at once since start or reset_peak_stats()
  int64_t allocations = 0;           // number of live allocations
  int64_t cached_bytes = 0;          // freed blocks the caching allocator keeps for reuse
  int64_t limit_bytes = 0;           // set_limit() / GRAFT_MEMORY_LIMIT; 0: none
  // allocated_bytes with each storage rounded up to the block the CPU allocator hands out for it
  // (its size class, Note [Caching allocator]): what the process holds for the live tensors.
  int64_t rounded_bytes = 0;
  int64_t peak_rounded_bytes = 0;
  // What the CPU allocator holds from the system: the live tensors' blocks and the cached free ones
  // (PyTorch's reserved bytes). Under a limit it stays within the limit, or the live blocks when
  // their rounding passes it (Note [The cache under a limit] in src/core/storage.cpp).
  int64_t reserved_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  std::array<CategoryStats, kNumCategories> by_category{};

  const CategoryStats& operator[](Category c) const { return by_category[static_cast<size_t>(c)]; }
};

Stats stats();
// The counters of one device: kCPU (as stats()), or kMeta: the bytes meta tensors would take
// (Note [Meta device] in graft/core/dtype.h), by the same rules, with no cache and no limit.
Stats stats(Device device);
// Sets the peak (overall and per category) to what is live now.
void reset_peak_stats();
// Returns the blocks the caching allocator keeps to the system (Note [Caching allocator]).
// GRAFT_ALLOCATOR=system turns the cache off altogether.
void empty_cache();
// A table of current and peak bytes by category, the total, the cache and the limit.
std::string memory_summary();
// "1.50 MiB", "512 B", "2.00 GiB".
std::string format_bytes(int64_t bytes);
// Parses "2GiB", "512MiB", "64KiB", "1.5GB", "1000000" (bytes); throws graft::Error otherwise, and for a
// positive count that rounds to 0 bytes ("0.4", "1e-3"): only a zero ("0", "0GiB") is 0.
int64_t parse_bytes(std::string_view text);

// ---- limit and out-of-memory report ----
//
// Note [Memory limit]
// set_limit(bytes) caps the live tensor bytes (allocated_bytes; cached free blocks do not count).
// An allocation that would pass it, or that the system refuses, throws OutOfMemoryError before
// anything changes, so the program can catch it, lower the batch size and go on. The environment
// variable GRAFT_MEMORY_LIMIT (e.g. "2GiB") sets the limit at start-up. 0 removes it. A value parse_bytes
// refuses ("two gigs", or "0.4": 0.4 bytes, which would round to 0) sets no limit and says so on stderr.
void set_limit(int64_t bytes);
int64_t get_limit();

// One storage held by the graph for backward, for the out-of-memory report.
struct SavedActivation {
  int64_t bytes = 0;
  std::string shape;        // "[4096, 256]" (the view that was saved)
  std::string dtype;        // "float32"
  std::string produced_by;  // the forward op that made it ("tanh"), or "an input" for leaves
  std::string saved_by;     // the backward node holding it ("TanhBackward0")
};

class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(std::string op, int64_t requested, std::string message, Stats at_failure,
                   std::vector<SavedActivation> largest_saved);
  int64_t requested_bytes() const noexcept { return requested_; }
  const Stats& stats_at_failure() const noexcept { return stats_; }
  // The largest saved activations at the failure, largest first (at most 10).
  const std::vector<SavedActivation>& largest_saved() const noexcept { return saved_; }

 private:
  int64_t requested_ = 0;
  Stats stats_;
  std::vector<SavedActivation> saved_;
};

// The live saved activations, largest first (at most `max_count`).
std::vector<SavedActivation> largest_saved_activations(size_t max_count = 10);

// ---- categories (used by nn, optim and autograd; users rarely need them) ----
// Moves the tensor's storage to `c` (no-op for undefined tensors and borrowed memory).
void set_category(const Storage& storage, Category c);
Category category_of(const Storage& storage);

// ---- history of allocation events (snapshots) ----
//
// Note [Memory history]
// record_history(true) keeps the last `max_events` allocation, free and category-change events in
// a ring buffer; each holds the running totals by category after the event, so a timeline can be
// drawn from any window of it. Off (the default) it costs one relaxed atomic load per allocation.
struct Event {
  enum class Action : uint8_t { Alloc, Free, Move };
  uint64_t seq = 0;         // event number since recording started
  double time_ms = 0;       // since recording started
  Action action = Action::Alloc;
  int64_t bytes = 0;
  Category category = Category::Other;       // the category after the event (Free: the one freed from)
  Category from = Category::Other;           // Move: the category before
  const char* op = nullptr;                  // the op that allocated (see OpScope), or null
  int64_t step = 0;                          // set_step()'s value at the event
  std::array<int64_t, kNumCategories> totals{};  // current bytes by category after the event
};
void record_history(bool enabled, size_t max_events = 100000);
bool is_recording_history();
// The recorded events, oldest first.
std::vector<Event> history();
// {"events": [{"seq", "time_ms", "action", "bytes", "category", "from", "op", "step", "totals"}...],
//  "categories": [...]} as a JSON string.
std::string history_json();
// The training step events are stamped with (graft train and GradMonitor users set it).
void set_step(int64_t step);
int64_t current_step();

// Names the op on whose behalf tensors are allocated, for the OOM report and the history. The
// outermost scope on a thread wins (linear's name, not the addmm it calls).
class OpScope {
 public:
  explicit OpScope(const char* op) noexcept;
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  bool set_ = false;
};
const char* current_op() noexcept;

}  // namespace graft::memory
