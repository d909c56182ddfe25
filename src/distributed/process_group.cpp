// The process group's public API: the argument checks, the operations' names, and the group's
// lifetime. The data moves in a Group (src/distributed/group.h): mpi_group.cpp's, on a
// communication thread that owns MPI (Note [Communication thread] in
// graft/distributed/process_group.h), or the one-process group here, without a launcher or without
// MPI.
#include "graft/distributed/process_group.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "distributed/group.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/shape.h"

namespace graft::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::MAX: return "MAX";
    case ReduceOp::MIN: return "MIN";
  }
  return "?";
}

// ---- Work ----

void Work::wait() {
  if (before_) run_continuation();
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}
Tensor Work::result() const {
  std::lock_guard lock(mutex_);
  return result_;
}
void Work::set_result(Tensor result) {
  std::lock_guard lock(mutex_);
  result_ = std::move(result);  // never on the communication thread's Work (Work::result)
}
WorkPtr Work::then(WorkPtr before, std::function<Tensor(const Tensor&)> next, std::string description) {
  GRAFT_CHECK(before != nullptr && next != nullptr, "Work.then", "a Work and a continuation", "a null one",
              "pass the Work a collective returned and the function to run on its result");
  auto w = std::make_shared<Work>(std::move(description));
  w->before_ = std::move(before);
  w->next_ = std::move(next);
  return w;
}
void Work::run_continuation() {
  std::lock_guard once(continuation_mutex_);
  if (!next_) return;  // ran already
  auto next = std::move(next_);
  next_ = nullptr;
  try {
    before_->wait();
    set_result(next(before_->result()));
    finish(nullptr);
  } catch (...) {
    finish(std::current_exception());
  }
  const auto started = before_->started_at();
  std::lock_guard lock(mutex_);
  if (started != Clock::time_point{}) started_ = started;
}
bool Work::is_completed() const {
  std::lock_guard lock(mutex_);
  return done_;
}
bool Work::is_success() const {
  std::lock_guard lock(mutex_);
  return done_ && !error_;
}
Work::Clock::time_point Work::started_at() const {
  std::lock_guard lock(mutex_);
  return started_;
}
Work::Clock::time_point Work::completed_at() const {
  std::lock_guard lock(mutex_);
  return completed_;
}
void Work::mark_started() {
  std::lock_guard lock(mutex_);
  started_ = Clock::now();
}
void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    error_ = std::move(error);
    completed_ = Clock::now();
    if (started_ == Clock::time_point{}) started_ = completed_;
  }
  cv_.notify_all();
}

namespace {

std::string describe(const char* op, const Tensor& t) {
  return std::string(op) + " of " + dtype_name(t.dtype()) + " " + shape_str(t.sizes());
}

// allow_bf16_sum: DistributedDataParallel's hooks (detail::all_reduce) may sum bfloat16; the public
// collectives do not reduce it.
void check_tensor(const char* op, const Tensor& t, bool reduces, ReduceOp rop = ReduceOp::SUM,
                  bool allow_bf16_sum = false) {
  GRAFT_CHECK(t.defined(), op, "a defined tensor", "an undefined tensor", "pass the tensor to communicate");
  GRAFT_CHECK(t.is_contiguous(), op, "a contiguous tensor", "a tensor with strides " + shape_str(t.strides()),
              "call .contiguous() first (and copy the result back if the collective writes into it)");
  const DType d = t.dtype();
  const bool plain = d == kFloat32 || d == kFloat64 || d == kInt32 || d == kInt64 || d == kUInt8 || d == kInt8;
  const bool bits_only = d == kFloat16 || d == kBFloat16 || d == kInt16 || d == kBool;
  // bfloat16 sums (each partial sum rounded to bfloat16: bf16_compress_hook's all-reduce).
  const bool bf16_sum = allow_bf16_sum && d == kBFloat16 && rop == ReduceOp::SUM;
  GRAFT_CHECK(plain || (!reduces && bits_only) || (reduces && bf16_sum), op,
              !reduces         ? "a numeric or boolean dtype"
              : allow_bf16_sum ? "float32, float64, int32, int64, uint8 or int8 (or bfloat16 with ReduceOp::SUM)"
                               : "float32, float64, int32, int64, uint8 or int8",
              dtype_name(d) + (reduces ? std::string(" with ReduceOp::") + reduce_op_name(rop) : std::string()),
              "cast to float32 for the reduction, and back afterwards");
  GRAFT_CHECK(!(reduces && rop == ReduceOp::AVG && !is_floating_point(d)), op, "a floating dtype for ReduceOp::AVG",
              dtype_name(d), "use SUM and divide, or cast to float first");
}

int check_rank_arg(const char* op, int r, int world, const char* what) {
  GRAFT_CHECK(r >= 0 && r < world, op, std::string("a ") + what + " rank in [0, " + std::to_string(world) + ")",
              std::to_string(r), "ranks are numbered 0 .. world_size - 1 (get_world_size())");
  return r;
}

// ---- the groups ----

// One process: every collective's result is its input.
class LocalGroup final : public internal::Group {
 public:
  using Group::Group;
  WorkPtr all_reduce(const Tensor&, ReduceOp, std::string label) override {
    return run(std::move(label), [] {});
  }
  WorkPtr broadcast(const Tensor&, int, std::string label) override {
    return run(std::move(label), [] {});
  }
  WorkPtr reduce_scatter_v(const Tensor& output, const Tensor& input, std::vector<int64_t>, ReduceOp,
                           std::string label) override {
    return run(std::move(label), [&] { std::memcpy(output.data_ptr(), input.data_ptr(), output.nbytes()); });
  }
  WorkPtr all_gather_v(const Tensor& output, const Tensor& input, std::vector<int64_t>, std::string label) override {
    return run(std::move(label), [&] { std::memcpy(output.data_ptr(), input.data_ptr(), output.nbytes()); });
  }
  WorkPtr all_gather_strings(const std::string& mine, std::shared_ptr<std::vector<std::string>> out) override {
    return run("all_gather of strings", [&] { out->push_back(mine); });
  }
  // A one-process group has no other rank: point_to_point's checks refuse every peer first.
  WorkPtr send(const Tensor&, int, int, std::string label) override {
    return run(std::move(label), [] {});
  }
  WorkPtr recv(const Tensor&, int, int, std::string label) override {
    return run(std::move(label), [] {});
  }
  WorkPtr barrier() override {
    return run("barrier", [] {});
  }
  void shutdown() override {}

 private:
  template <class F> static WorkPtr run(std::string label, F&& f) {
    auto work = std::make_shared<Work>(std::move(label));
    work->mark_started();
    try {
      f();
      work->finish(nullptr);
    } catch (...) {
      work->finish(std::current_exception());
    }
    return work;
  }
};

// Note [The group outlives exit]
// A plain pointer, deleted only by destroy_process_group(), never by a static destructor: a rank
// that leaves main() without destroying the group (after an error, say) must not shut the MPI
// group down at exit, because MPI_Finalize waits for the other ranks, which may have failed or be
// stuck in a collective that will only time out; the rank would then hang at exit instead of
// ending with its error (tests/distributed/faults.sh, the "throw" case, caught it: 62 s).
internal::Group* g_group = nullptr;
std::mutex g_group_mutex;

internal::Group& group(const char* op) {
  GRAFT_CHECK(g_group != nullptr, op, "an initialised process group", "none",
              "call graft::distributed::init_process_group() first (under mpirun for several ranks)");
  return *g_group;
}

WorkPtr finish_sync(WorkPtr work, bool async_op) {
  if (!async_op) work->wait();
  return work;
}

}  // namespace

// ---- the group's lifetime ----

bool is_mpi_available() { return internal::mpi_built(); }

void init_process_group(const std::string& backend, ProcessGroupOptions options) {
  std::lock_guard lock(g_group_mutex);
  GRAFT_CHECK(backend == "mpi", "init_process_group", "backend \"mpi\"", "\"" + backend + "\"",
              "graft's process group runs on MPI (gloo and nccl are PyTorch's other backends)");
  GRAFT_CHECK(g_group == nullptr, "init_process_group", "a single initialisation", "a second call",
              "call destroy_process_group() before initialising again");
  // At most 30 days: a collective's deadline is its start plus the timeout on steady_clock, whose
  // nanosecond count overflows past about 9.2e9 s (and a non-finite value has no milliseconds).
  constexpr double kMaxTimeoutSeconds = 30.0 * 24 * 3600;
  if (const char* t = std::getenv("GRAFT_DIST_TIMEOUT")) {
    char* end = nullptr;
    const double s = std::strtod(t, &end);
    GRAFT_CHECK(end != t && *end == '\0' && std::isfinite(s) && s > 0 && s <= kMaxTimeoutSeconds, "init_process_group",
                "GRAFT_DIST_TIMEOUT in seconds, > 0 and at most 2592000 (30 days)", std::string("\"") + t + "\"",
                "e.g. GRAFT_DIST_TIMEOUT=60");
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
  }
  GRAFT_CHECK(options.timeout.count() > 0 && options.timeout <= std::chrono::hours(24 * 30), "init_process_group",
              "a timeout > 0 and at most 30 days", std::to_string(options.timeout.count()) + " ms",
              "pass e.g. std::chrono::seconds(60)");
  std::unique_ptr<internal::Group> made = internal::make_mpi_group(options);
  if (!made) made = std::make_unique<LocalGroup>(options);
  g_group = made.release();  // Note [The group outlives exit]
}

bool is_initialized() { return g_group != nullptr; }

void destroy_process_group() {
  std::lock_guard lock(g_group_mutex);
  if (!g_group) return;
  g_group->shutdown();
  delete g_group;
  g_group = nullptr;
}

int get_rank() { return g_group ? g_group->rank() : 0; }
int get_world_size() { return g_group ? g_group->size() : 1; }
std::chrono::milliseconds get_timeout() { return g_group ? g_group->options().timeout : ProcessGroupOptions{}.timeout; }

// ---- collectives ----

namespace detail {

WorkPtr all_reduce(const Tensor& t, ReduceOp op, std::string label) {
  check_tensor("all_reduce", t, true, op, /*allow_bf16_sum=*/true);
  return group("all_reduce").all_reduce(t, op, std::move(label));
}

WorkPtr broadcast(const Tensor& t, int src, std::string label) {
  check_tensor("broadcast", t, false);
  check_rank_arg("broadcast", src, get_world_size(), "source");
  return group("broadcast").broadcast(t, src, std::move(label));
}

WorkPtr reduce_scatter_v(const Tensor& output, const Tensor& input, std::vector<int64_t> counts, ReduceOp op,
                         std::string label) {
  check_tensor("reduce_scatter", output, true, op);
  check_tensor("reduce_scatter", input, true, op);
  const int world = get_world_size();
  GRAFT_CHECK(static_cast<int>(counts.size()) == world, "reduce_scatter", "one count per rank",
              std::to_string(counts.size()) + " counts for " + std::to_string(world) + " ranks", "pass world_size counts");
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  GRAFT_CHECK(total == input.numel() && counts[static_cast<size_t>(get_rank())] == output.numel() &&
                  input.dtype() == output.dtype(),
              "reduce_scatter", "an input of sum(counts) elements and an output of counts[rank], one dtype",
              std::to_string(input.numel()) + " and " + std::to_string(output.numel()) + " elements for counts summing to " +
                  std::to_string(total),
              "size the output to this rank's share");
  return group("reduce_scatter").reduce_scatter_v(output, input, std::move(counts), op, std::move(label));
}

WorkPtr all_gather_v(const Tensor& output, const Tensor& input, std::vector<int64_t> counts, std::string label) {
  check_tensor("all_gather", output, false);
  check_tensor("all_gather", input, false);
  const int world = get_world_size();
  GRAFT_CHECK(static_cast<int>(counts.size()) == world, "all_gather", "one count per rank",
              std::to_string(counts.size()) + " counts for " + std::to_string(world) + " ranks", "pass world_size counts");
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  GRAFT_CHECK(total == output.numel() && counts[static_cast<size_t>(get_rank())] == input.numel() &&
                  input.dtype() == output.dtype(),
              "all_gather", "an output of sum(counts) elements and an input of counts[rank], one dtype",
              std::to_string(output.numel()) + " and " + std::to_string(input.numel()) + " elements for counts summing to " +
                  std::to_string(total),
              "size the input to this rank's share");
  return group("all_gather").all_gather_v(output, input, std::move(counts), std::move(label));
}

std::vector<std::string> all_gather_strings(const std::string& mine) {
  auto result = std::make_shared<std::vector<std::string>>();
  group("all_gather").all_gather_strings(mine, result)->wait();
  return *result;
}

}  // namespace detail

WorkPtr all_reduce(const Tensor& tensor, ReduceOp op, bool async_op) {
  check_tensor("all_reduce", tensor, true, op);
  return finish_sync(detail::all_reduce(tensor, op, describe("all_reduce", tensor) + " (" + reduce_op_name(op) + ")"),
                     async_op);
}

WorkPtr broadcast(const Tensor& tensor, int src, bool async_op) {
  check_tensor("broadcast", tensor, false);
  return finish_sync(detail::broadcast(tensor, src, describe("broadcast", tensor) + " from rank " + std::to_string(src)),
                     async_op);
}

WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input, bool async_op) {
  const int world = get_world_size();
  check_tensor("all_gather_into_tensor", input, false);
  GRAFT_CHECK(output.defined() && output.numel() == world * input.numel() && output.dtype() == input.dtype(),
              "all_gather_into_tensor",
              "an output of world_size * input.numel() = " + std::to_string(world * input.numel()) + " " +
                  dtype_name(input.dtype()) + " elements",
              output.defined() ? std::to_string(output.numel()) + " " + dtype_name(output.dtype()) + " elements" : "undefined",
              "allocate the output as graft::empty({world_size * n}) of the input's dtype");
  return finish_sync(detail::all_gather_v(output, input, std::vector<int64_t>(static_cast<size_t>(world), input.numel()),
                                          describe("all_gather", input)),
                     async_op);
}

WorkPtr all_gather(const std::vector<Tensor>& output, const Tensor& input, bool async_op) {
  const int world = get_world_size();
  check_tensor("all_gather", input, false);
  GRAFT_CHECK(static_cast<int>(output.size()) == world, "all_gather", "one output tensor per rank (" + std::to_string(world) + ")",
              std::to_string(output.size()), "pass world_size tensors shaped like the input");
  for (size_t r = 0; r < output.size(); ++r) {
    check_tensor("all_gather", output[r], false);
    GRAFT_CHECK(output[r].sizes().equals(input.sizes()) && output[r].dtype() == input.dtype(), "all_gather",
                "outputs shaped like the input " + shape_str(input.sizes()) + " " + dtype_name(input.dtype()),
                "output " + std::to_string(r) + ": " + shape_str(output[r].sizes()) + " " + dtype_name(output[r].dtype()),
                "allocate each output like the input (graft::empty_like(input))");
  }
  Tensor flat = graft::empty({world * input.numel()}, TensorOptions().dtype(input.dtype()));
  auto work = all_gather_into_tensor(flat, input, /*async_op=*/false);
  const size_t bytes = input.nbytes();
  for (size_t r = 0; r < output.size(); ++r)
    std::memcpy(output[r].data_ptr(), static_cast<const char*>(flat.data_ptr()) + r * bytes, bytes);
  (void)async_op;  // the copy-out runs here, so the list form completes before it returns
  return work;
}

WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op, bool async_op) {
  const int world = get_world_size();
  check_tensor("reduce_scatter_tensor", output, true, op);
  GRAFT_CHECK(input.defined() && input.numel() == world * output.numel(), "reduce_scatter_tensor",
              "an input of world_size * output.numel() = " + std::to_string(world * output.numel()) + " elements",
              input.defined() ? std::to_string(input.numel()) : "undefined", "rank r receives block r of the input");
  return finish_sync(detail::reduce_scatter_v(output, input, std::vector<int64_t>(static_cast<size_t>(world), output.numel()),
                                              op, describe("reduce_scatter", input) + " (" + reduce_op_name(op) + ")"),
                     async_op);
}

WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& input_list, ReduceOp op, bool async_op) {
  const int world = get_world_size();
  GRAFT_CHECK(static_cast<int>(input_list.size()) == world, "reduce_scatter",
              "one input tensor per rank (" + std::to_string(world) + ")", std::to_string(input_list.size()),
              "pass world_size tensors shaped like the output");
  check_tensor("reduce_scatter", output, true, op);
  Tensor flat = graft::empty({world * output.numel()}, TensorOptions().dtype(output.dtype()));
  const size_t bytes = output.nbytes();
  for (size_t r = 0; r < input_list.size(); ++r) {
    check_tensor("reduce_scatter", input_list[r], true, op);
    GRAFT_CHECK(input_list[r].numel() == output.numel() && input_list[r].dtype() == output.dtype(), "reduce_scatter",
                "inputs shaped like the output " + shape_str(output.sizes()),
                "input " + std::to_string(r) + ": " + shape_str(input_list[r].sizes()), "allocate each like the output");
    std::memcpy(static_cast<char*>(flat.data_ptr()) + r * bytes, input_list[r].data_ptr(), bytes);
  }
  return reduce_scatter_tensor(output, flat, op, async_op);
}

namespace {
WorkPtr point_to_point(const Tensor& t, int peer, int tag, bool is_send) {
  const char* op = is_send ? "send" : "recv";
  check_tensor(op, t, false);
  const int world = get_world_size();
  check_rank_arg(op, peer, world, is_send ? "destination" : "source");
  GRAFT_CHECK(peer != get_rank(), op, "another rank", "this rank (" + std::to_string(peer) + ")",
              "a rank does not send to itself; copy the tensor instead");
  const std::string what = describe(op, t) + (is_send ? " to rank " : " from rank ") + std::to_string(peer);
  return is_send ? group(op).send(t, peer, tag, what) : group(op).recv(t, peer, tag, what);
}
}  // namespace

void send(const Tensor& tensor, int dst, int tag) { point_to_point(tensor, dst, tag, true)->wait(); }
void recv(const Tensor& tensor, int src, int tag) { point_to_point(tensor, src, tag, false)->wait(); }
WorkPtr isend(const Tensor& tensor, int dst, int tag) { return point_to_point(tensor, dst, tag, true); }
WorkPtr irecv(const Tensor& tensor, int src, int tag) { return point_to_point(tensor, src, tag, false); }

void barrier() { group("barrier").barrier()->wait(); }

}  // namespace graft::distributed
