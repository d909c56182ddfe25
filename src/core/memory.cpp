// Memory accounting by category, the limit and out-of-memory report, the history of allocation
// events, and the summary table (see graft/core/memory.h).
#include "graft/core/memory.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/format.h"
#include "core/memory_internal.h"
#include "graft/core/storage.h"

namespace graft::memory {

namespace {

constexpr size_t idx(Category c) { return static_cast<size_t>(c); }

// Note [Memory counters]
// Updated on every allocation, free and category change of an owned
// Storage; relaxed atomics, since the counters order nothing. Peaks rise by compare-exchange.
struct Counters {
  std::atomic<int64_t> allocated{0}, peak{0}, count{0};
  std::atomic<int64_t> rounded{0}, rounded_peak{0};  // the allocator's block sizes (Stats::rounded_bytes)
  std::atomic<int64_t> reserved{0}, reserved_peak{0};  // taken from the system (Stats::reserved_bytes)
  std::array<std::atomic<int64_t>, kNumCategories> current{}, category_peak{};
  std::atomic<int64_t> limit{0};
};

Counters& counters() {
  static Counters* c = [] {
    auto* k = new Counters;  // never destroyed: storages with static lifetime are freed late
    if (const char* env = std::getenv("GRAFT_MEMORY_LIMIT"); env && *env) {
      try {
        k->limit.store(parse_bytes(env), std::memory_order_relaxed);
      } catch (const Error& e) {
        std::fprintf(stderr, "graft: ignoring GRAFT_MEMORY_LIMIT=%s (no limit is set): %s\n", env, e.what());
      }
    }
    return k;
  }();
  return *c;
}

// The meta device's counters (Note [Meta device]): the same bookkeeping for storages that have no
// memory, kept apart so that planning on meta tensors never moves the CPU's figures or its limit.
Counters& meta_counters() {
  static Counters* c = new Counters;  // never destroyed, as counters()
  return *c;
}
Counters& counters_of(const Storage& s) { return s.device.is_meta() ? meta_counters() : counters(); }

void raise_peak(std::atomic<int64_t>& peak, int64_t now) {
  int64_t p = peak.load(std::memory_order_relaxed);
  while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
}

void add_to(Counters& k, Category c, int64_t n) {
  const int64_t now = k.current[idx(c)].fetch_add(n, std::memory_order_relaxed) + n;
  if (n > 0) raise_peak(k.category_peak[idx(c)], now);
}

// ---- history (Note [Memory history]) ----
std::atomic<bool> g_recording{false};
// Which device's events the history records: the CPU's (record_history), or the meta device's
// (detail::record_meta_history, for the planner on shapes alone); never both at once.
std::atomic<bool> g_recording_meta{false};
std::atomic<int64_t> g_step{0};
thread_local const char* t_current_op = nullptr;

struct History {
  std::mutex mutex;
  std::vector<Event> ring;
  size_t capacity = 0, next = 0;
  uint64_t seq = 0;
  std::chrono::steady_clock::time_point start;
};
History& history_state() {
  static History* h = new History;
  return *h;
}

void record(Event::Action action, int64_t bytes, Category cat, Category from, bool meta) {
  if (!g_recording.load(std::memory_order_relaxed) || g_recording_meta.load(std::memory_order_relaxed) != meta) return;
  History& h = history_state();
  std::lock_guard<std::mutex> lock(h.mutex);
  if (h.capacity == 0) return;
  Event e;
  e.seq = h.seq++;
  e.time_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h.start).count();
  e.action = action;
  e.bytes = bytes;
  e.category = cat;
  e.from = from;
  e.op = t_current_op;
  e.step = g_step.load(std::memory_order_relaxed);
  const Counters& k = meta ? meta_counters() : counters();
  for (int i = 0; i < kNumCategories; ++i) e.totals[static_cast<size_t>(i)] = k.current[static_cast<size_t>(i)].load(std::memory_order_relaxed);
  if (h.ring.size() < h.capacity) {
    h.ring.push_back(e);
  } else {
    h.ring[h.next] = e;
  }
  h.next = (h.next + 1) % h.capacity;
}

// ---- the storages held by graph nodes, for the out-of-memory report ----
// An intrusive doubly-linked list through Storage::saved_link: linking and unlinking allocate
// nothing and cost a few stores under an uncontended lock (a hash map here cost a heap node per
// saved tensor on every recorded op).
using SavedEntry = graft::detail::SavedLink;
struct SavedRegistry {
  std::mutex mutex;
  Storage* head = nullptr;
};
SavedRegistry& saved_registry() {
  static SavedRegistry* r = new SavedRegistry;
  return *r;
}

std::string percent_of(int64_t part, int64_t whole) {
  if (whole <= 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.0f%%)", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

}  // namespace

const char* category_name(Category c) {
  switch (c) {
    case Category::Parameters: return "parameters";
    case Category::Gradients: return "gradients";
    case Category::OptimizerState: return "optimizer_state";
    case Category::SavedActivations: return "saved_activations";
    case Category::Other: return "other";
    case Category::Data: return "data";
  }
  return "other";
}

const char* category_label(Category c) {
  switch (c) {
    case Category::Parameters: return "parameters";
    case Category::Gradients: return "gradients";
    case Category::OptimizerState: return "optimizer state";
    case Category::SavedActivations: return "saved activations";
    case Category::Other: return "other";
    case Category::Data: return "data";
  }
  return "other";
}

// ---- stats ----

Stats stats() { return stats(Device(DeviceType::CPU)); }

Stats stats(Device device) {
  GRAFT_CHECK(device.is_cpu() || device.is_meta(), "memory::stats", "the CPU or the meta device", device.str(),
              "graft counts CPU memory and what meta tensors would take");
  auto& k = device.is_meta() ? meta_counters() : counters();
  Stats st;
  st.rounded_bytes = k.rounded.load(std::memory_order_relaxed);
  st.peak_rounded_bytes = std::max(k.rounded_peak.load(std::memory_order_relaxed), st.rounded_bytes);
  st.allocated_bytes = k.allocated.load(std::memory_order_relaxed);
  st.peak_allocated_bytes = k.peak.load(std::memory_order_relaxed);
  st.allocations = k.count.load(std::memory_order_relaxed);
  st.cached_bytes = device.is_meta() ? 0 : detail::allocator_cached_bytes();
  st.reserved_bytes = k.reserved.load(std::memory_order_relaxed);
  st.peak_reserved_bytes = std::max(k.reserved_peak.load(std::memory_order_relaxed), st.reserved_bytes);
  st.limit_bytes = k.limit.load(std::memory_order_relaxed);
  for (size_t i = 0; i < kNumCategories; ++i) {
    st.by_category[i].current_bytes = k.current[i].load(std::memory_order_relaxed);
    st.by_category[i].peak_bytes = std::max(k.category_peak[i].load(std::memory_order_relaxed), st.by_category[i].current_bytes);
  }
  return st;
}

namespace {
void reset_peaks(Counters& k) {
  k.peak.store(k.allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
  k.rounded_peak.store(k.rounded.load(std::memory_order_relaxed), std::memory_order_relaxed);
  k.reserved_peak.store(k.reserved.load(std::memory_order_relaxed), std::memory_order_relaxed);
  for (size_t i = 0; i < kNumCategories; ++i)
    k.category_peak[i].store(k.current[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
}
}  // namespace

void reset_peak_stats() {
  reset_peaks(counters());
  reset_peaks(meta_counters());
}

void detail::reset_meta_peak_stats() { reset_peaks(meta_counters()); }

void empty_cache() { detail::allocator_release_cache(); }

std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes < 0 ? -bytes : bytes);
  const char* sign = bytes < 0 ? "-" : "";
  char buf[48];
  if (b < 1024) std::snprintf(buf, sizeof buf, "%s%lld B", sign, static_cast<long long>(b));
  else if (b < 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%s%.2f KiB", sign, b / 1024);
  else if (b < 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%s%.2f MiB", sign, b / (1024.0 * 1024));
  else std::snprintf(buf, sizeof buf, "%s%.2f GiB", sign, b / (1024.0 * 1024 * 1024));
  return buf;
}

int64_t parse_bytes(std::string_view text) {
  const std::string s(text);
  const auto bad = [&] {
    return Error("parse_bytes", "a byte count such as 2GiB, 512MiB, 64KiB, 1.5GB or 1000000", "'" + s + "'",
                 "use a number followed by B, KB, MB, GB, KiB, MiB or GiB (or nothing, for bytes)");
  };
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(s, &pos);
  } catch (...) {
    throw bad();
  }
  std::string unit = s.substr(pos);
  unit.erase(0, unit.find_first_not_of(' '));
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<const char*, double> units[] = {
      {"", 1}, {"b", 1}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"k", 1024.0},
      {"kib", 1024.0}, {"m", 1048576.0}, {"mib", 1048576.0}, {"g", 1073741824.0}, {"gib", 1073741824.0},
      {"tib", 1099511627776.0}};
  for (const auto& [name, factor] : units) {
    if (unit == name) {
      const double bytes = value * factor;
      if (!std::isfinite(bytes) || bytes < 0 || bytes > 9.2e18) throw bad();
      // A positive count under half a byte ("0.4", "1e-3": no unit means bytes) would round to 0, which
      // means none (as a limit: no limit at all); only a literal zero may mean 0.
      const int64_t rounded = std::llround(bytes);
      GRAFT_CHECK(rounded > 0 || bytes == 0, "parse_bytes", "0 or a byte count that rounds to at least 1 byte",
                  "'" + s + "' (" + (unit.empty() ? "no unit: " : "") + graft::detail::shortest(bytes) +
                      " bytes, which rounds to 0)",
                  "give the unit, e.g. " + s.substr(0, pos) + "GiB; 0 alone means none");
      return rounded;
    }
  }
  throw bad();
}

std::string memory_summary() {
  const Stats st = stats();
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%-20s %14s %14s\n", "graft tensor memory", "current", "peak");
  out += line;
  for (int i = 0; i < kNumCategories; ++i) {
    const auto c = static_cast<Category>(i);
    std::snprintf(line, sizeof line, "  %-18s %14s %14s\n", category_label(c),
                  format_bytes(st[c].current_bytes).c_str(), format_bytes(st[c].peak_bytes).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-18s %14s %14s\n", "total", format_bytes(st.allocated_bytes).c_str(),
                format_bytes(st.peak_allocated_bytes).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  %-18s %14s\n", "cached (free)", format_bytes(st.cached_bytes).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  %-18s %14s\n", "limit",
                st.limit_bytes ? format_bytes(st.limit_bytes).c_str() : "none");
  out += line;
  std::snprintf(line, sizeof line, "  %-18s %14lld\n", "live allocations", static_cast<long long>(st.allocations));
  out += line;
  return out;
}

// ---- limit and out-of-memory ----

void set_limit(int64_t bytes) {
  GRAFT_CHECK(bytes >= 0, "memory::set_limit", "a limit in bytes >= 0 (0: none)", std::to_string(bytes),
              "pass the number of bytes, e.g. graft::memory::parse_bytes(\"2GiB\")");
  counters().limit.store(bytes, std::memory_order_relaxed);
}
int64_t get_limit() { return counters().limit.load(std::memory_order_relaxed); }

OutOfMemoryError::OutOfMemoryError(std::string op, int64_t requested, std::string message, Stats at_failure,
                                   std::vector<SavedActivation> largest_saved)
    : Error(std::move(op), std::move(message)),
      requested_(requested),
      stats_(at_failure),
      saved_(std::move(largest_saved)) {}

std::vector<SavedActivation> largest_saved_activations(size_t max_count) {
  struct Item {
    int64_t bytes;
    const Storage* storage;
    SavedEntry entry;
  };
  std::vector<Item> all;
  {
    // Sizes are read under the lock: a storage leaves the registry before it can be freed.
    auto& r = saved_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const Storage* s = r.head; s; s = s->saved_link.next)  // a saved parameter (or gradient) is not an activation
      if (category_of(*s) == Category::SavedActivations) all.push_back({static_cast<int64_t>(s->nbytes), s, s->saved_link});
  }
  std::sort(all.begin(), all.end(), [](const Item& a, const Item& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : std::less<const Storage*>()(a.storage, b.storage);
  });
  std::vector<SavedActivation> out;
  for (size_t i = 0; i < all.size() && i < max_count; ++i) {
    const Item& it = all[i];
    SavedActivation a;
    a.bytes = it.bytes;
    a.shape = shape_str(it.entry.sizes.ref());
    a.dtype = dtype_name(it.entry.dtype);
    a.produced_by = it.entry.produced_by ? it.entry.produced_by : "an input (no grad_fn)";
    a.saved_by = it.entry.saved_by ? it.entry.saved_by : "";
    out.push_back(std::move(a));
  }
  return out;
}

namespace {
[[noreturn]] void throw_oom(size_t nbytes, const std::string& reason) {
  const Stats st = stats();
  auto saved = largest_saved_activations(5);
  // t_current_op names the ops and the factories (empty, zeros, rand, ...; OpScope); what allocates
  // outside them is mostly a data loader, a file being read or a tensor built from values.
  const char* op = t_current_op ? t_current_op
                                : "an allocation made outside any graft op (by a data loader, a file being read or a "
                                  "tensor built from values, for example)";
  std::string msg = std::string("out of memory: ") + op + " asked for " + format_bytes(static_cast<int64_t>(nbytes)) +
                    " (" + std::to_string(nbytes) + " bytes); " + reason + ".\n";
  msg += "Tensor memory in use: " + format_bytes(st.allocated_bytes) + " in " + std::to_string(st.allocations) +
         " allocations:\n";
  for (int i = 0; i < kNumCategories; ++i) {
    const auto c = static_cast<Category>(i);
    char line[128];
    std::snprintf(line, sizeof line, "  %-18s %12s%s\n", category_label(c), format_bytes(st[c].current_bytes).c_str(),
                  percent_of(st[c].current_bytes, st.allocated_bytes).c_str());
    msg += line;
  }
  msg += "Cached but free (returned by graft::memory::empty_cache()): " + format_bytes(st.cached_bytes) + ".\n";
  if (!saved.empty()) {
    msg += "Largest saved activations (held by the graph for backward):\n";
    for (const auto& a : saved)
      msg += "  " + format_bytes(a.bytes) + "  " + a.shape + " " + a.dtype + ", produced by " + a.produced_by +
             ", saved by " + a.saved_by + "\n";
  }
  msg += "Hint: lower the batch size (or use optim::GradAccumulator for the same effective batch), "
         "checkpoint activations with graft::checkpoint, keep saved activations in bfloat16 "
         "(autograd::SaveInBFloat16), or raise the limit (graft::memory::set_limit / GRAFT_MEMORY_LIMIT).";
  throw OutOfMemoryError(op, static_cast<int64_t>(nbytes), std::move(msg), st, std::move(saved));
}
}  // namespace

// ---- categories ----

void set_category(const Storage& cs, Category c) {
  auto& s = const_cast<Storage&>(cs);
  if (!s.allocator) return;  // borrowed memory is not counted
  const auto old = static_cast<Category>(s.category.exchange(static_cast<uint8_t>(c), std::memory_order_relaxed));
  if (old == c) return;
  const auto n = static_cast<int64_t>(s.nbytes);
  add_to(counters_of(s), old, -n);
  add_to(counters_of(s), c, n);
  record(Event::Action::Move, n, c, old, s.device.is_meta());
}

Category category_of(const Storage& s) { return static_cast<Category>(s.category.load(std::memory_order_relaxed)); }

// ---- history ----

void record_history(bool enabled, size_t max_events) { detail::record_history_of(false, enabled, max_events); }

namespace detail {
void record_meta_history(bool enabled, size_t max_events) { record_history_of(true, enabled, max_events); }

void record_history_of(bool meta, bool enabled, size_t max_events) {
  History& h = history_state();
  std::lock_guard<std::mutex> lock(h.mutex);
  if (enabled) {
    GRAFT_CHECK(max_events > 0, "memory::record_history", "max_events > 0", "0",
                "pass the number of events the ring buffer keeps, e.g. 100000");
    h.ring.clear();
    h.ring.reserve(std::min<size_t>(max_events, 1 << 20));
    h.capacity = max_events;
    h.next = 0;
    h.seq = 0;
    h.start = std::chrono::steady_clock::now();
  }
  g_recording_meta.store(meta && enabled, std::memory_order_relaxed);
  g_recording.store(enabled, std::memory_order_relaxed);
}
}  // namespace detail

bool is_recording_history() { return g_recording.load(std::memory_order_relaxed); }

std::vector<Event> history() {
  History& h = history_state();
  std::lock_guard<std::mutex> lock(h.mutex);
  std::vector<Event> out;
  out.reserve(h.ring.size());
  if (h.ring.size() < h.capacity) return h.ring;
  for (size_t i = 0; i < h.ring.size(); ++i) out.push_back(h.ring[(h.next + i) % h.ring.size()]);
  return out;
}

std::string history_json() {
  nlohmann::json events = nlohmann::json::array();
  for (const Event& e : history()) {
    static const char* actions[] = {"alloc", "free", "move"};
    nlohmann::json totals = nlohmann::json::array();
    for (int64_t t : e.totals) totals.push_back(t);
    events.push_back({{"seq", e.seq},
                      {"time_ms", e.time_ms},
                      {"action", actions[static_cast<int>(e.action)]},
                      {"bytes", e.bytes},
                      {"category", category_name(e.category)},
                      {"from", category_name(e.from)},
                      {"op", e.op ? e.op : ""},
                      {"step", e.step},
                      {"totals", totals}});
  }
  nlohmann::json cats = nlohmann::json::array();
  for (int i = 0; i < kNumCategories; ++i) cats.push_back(category_name(static_cast<Category>(i)));
  return nlohmann::json{{"categories", cats}, {"events", events}}.dump();
}

void set_step(int64_t step) { g_step.store(step, std::memory_order_relaxed); }
int64_t current_step() { return g_step.load(std::memory_order_relaxed); }

OpScope::OpScope(const char* op) noexcept {
  if (t_current_op == nullptr) {
    t_current_op = op;
    set_ = true;
  }
}
OpScope::~OpScope() {
  if (set_) t_current_op = nullptr;
}
const char* current_op() noexcept { return t_current_op; }

// ---- the hooks Storage and SavedTensor call ----

namespace detail {

void check_limit(size_t nbytes) {
  auto& k = counters();
  const int64_t limit = k.limit.load(std::memory_order_relaxed);
  if (limit == 0) return;
  const int64_t now = k.allocated.load(std::memory_order_relaxed);
  if (now + static_cast<int64_t>(nbytes) > limit) {
    throw_oom(nbytes, "the limit is " + format_bytes(limit) + " and " + format_bytes(now) + " is in use, so " +
                          format_bytes(limit - now) + " is left");
  }
}

void on_reserved(int64_t delta) {
  Counters& k = counters();
  const int64_t now = k.reserved.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) raise_peak(k.reserved_peak, now);
}

int64_t live_block_bytes() { return counters().rounded.load(std::memory_order_relaxed); }

void throw_system_oom(size_t nbytes) { throw_oom(nbytes, "the system refused the allocation"); }

void on_alloc(Storage& s) {
  auto& k = counters_of(s);
  const auto n = static_cast<int64_t>(s.nbytes);
  s.allocated_by = t_current_op;
  const int64_t now = k.allocated.fetch_add(n, std::memory_order_relaxed) + n;
  k.count.fetch_add(1, std::memory_order_relaxed);
  raise_peak(k.peak, now);
  const int64_t block = allocator_block_bytes(s.nbytes);
  raise_peak(k.rounded_peak, k.rounded.fetch_add(block, std::memory_order_relaxed) + block);
  add_to(k, Category::Other, n);
  record(Event::Action::Alloc, n, Category::Other, Category::Other, s.device.is_meta());
}

void on_free(Storage& s) {
  auto& k = counters_of(s);
  const auto n = static_cast<int64_t>(s.nbytes);
  const Category c = category_of(s);
  k.allocated.fetch_sub(n, std::memory_order_relaxed);
  k.count.fetch_sub(1, std::memory_order_relaxed);
  k.rounded.fetch_sub(allocator_block_bytes(s.nbytes), std::memory_order_relaxed);
  add_to(k, c, -n);
  record(Event::Action::Free, n, c, c, s.device.is_meta());
}

void on_saved(Storage& s, IntArrayRef sizes, DType dtype, const char* produced_by, const char* saved_by) {
  if (!s.allocator) return;
  if (s.saved_count.fetch_add(1, std::memory_order_relaxed) != 0) return;
  if (category_of(s) == Category::Other) set_category(s, Category::SavedActivations);
  if (s.device.is_meta()) return;  // the registry serves the CPU's out-of-memory report
  auto& r = saved_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  SavedEntry& e = s.saved_link;
  e.sizes = Shape(sizes);
  e.dtype = dtype;
  e.produced_by = produced_by;
  e.saved_by = saved_by;
  e.prev = nullptr;
  e.next = r.head;
  if (r.head) r.head->saved_link.prev = &s;
  r.head = &s;
}

void on_unsaved(Storage& s) {
  if (!s.allocator) return;
  if (s.saved_count.fetch_sub(1, std::memory_order_relaxed) != 1) return;
  if (category_of(s) == Category::SavedActivations) set_category(s, Category::Other);
  if (s.device.is_meta()) return;
  auto& r = saved_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  SavedEntry& e = s.saved_link;
  if (e.prev) e.prev->saved_link.next = e.next;
  else r.head = e.next;
  if (e.next) e.next->saved_link.prev = e.prev;
  e.prev = e.next = nullptr;
}

}  // namespace detail

}  // namespace graft::memory
