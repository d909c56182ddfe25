// The process group: a communication thread that owns MPI (Note [Communication thread] in
// graft/distributed/process_group.h), or a one-process group without a launcher or without MPI.
#include "graft/distributed/process_group.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <thread>

#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/half.h"
#include "graft/core/shape.h"

#if GRAFT_WITH_MPI
#include <mpi.h>
#endif

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

// The collectives, as the signature of Note [Collective checks] numbers them.
enum OpCode : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kReduceScatter, kBarrier, kGatherStrings, kSend, kRecv };
[[maybe_unused]] const char* op_code_name(int64_t code) {
  switch (code) {
    case kAllReduce: return "all_reduce";
    case kBroadcast: return "broadcast";
    case kAllGather: return "all_gather";
    case kReduceScatter: return "reduce_scatter";
    case kBarrier: return "barrier";
    case kGatherStrings: return "all_gather (strings)";
    case kSend: return "send";
    case kRecv: return "recv";
  }
  return "?";
}

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

// The average: the sum divided by the world size, in place.
[[maybe_unused]] void divide(void* data, DType d, int64_t n, int world) {
  if (d == kFloat32) {
    auto* p = static_cast<float*>(data);
    const float w = static_cast<float>(world);
    for (int64_t i = 0; i < n; ++i) p[i] /= w;
  } else {
    auto* p = static_cast<double*>(data);
    const double w = world;
    for (int64_t i = 0; i < n; ++i) p[i] /= w;
  }
}

int check_rank_arg(const char* op, int r, int world, const char* what) {
  GRAFT_CHECK(r >= 0 && r < world, op, std::string("a ") + what + " rank in [0, " + std::to_string(world) + ")",
              std::to_string(r), "ranks are numbered 0 .. world_size - 1 (get_world_size())");
  return r;
}

// ---- the group ----

// One queued operation: `run` starts it and polls it to the end on the communication thread.
struct Job {
  WorkPtr work;
  int64_t code = 0;
  std::vector<int64_t> signature;  // empty: no check (point to point)
  std::function<void()> run;
};

class Group;
Group* g_group = nullptr;
std::mutex g_group_mutex;

class Group {
 public:
  Group(ProcessGroupOptions options) : options_(options) {}
  virtual ~Group() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  const ProcessGroupOptions& options() const { return options_; }
  virtual WorkPtr submit(Job job) = 0;
  virtual void shutdown() = 0;

 protected:
  ProcessGroupOptions options_;
  int rank_ = 0, size_ = 1;
};

// One process: every collective's result is its input.
class LocalGroup final : public Group {
 public:
  using Group::Group;
  WorkPtr submit(Job job) override {
    job.work->mark_started();
    try {
      job.run();
      job.work->finish(nullptr);
    } catch (...) {
      job.work->finish(std::current_exception());
    }
    return job.work;
  }
  void shutdown() override {}
};

#if GRAFT_WITH_MPI

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int32: return MPI_INT32_T;
    case DType::Int64: return MPI_INT64_T;
    case DType::UInt8: return MPI_UINT8_T;
    case DType::Int8: return MPI_INT8_T;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int16: return MPI_UINT16_T;  // moved as bits, never reduced (check_tensor)
    case DType::Bool: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}
MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return MPI_SUM;
    case ReduceOp::MAX: return MPI_MAX;
    case ReduceOp::MIN: return MPI_MIN;
  }
  return MPI_SUM;
}
// ReduceOp::SUM of bfloat16 (check_tensor allows no other reduction of it): each partial sum in
// float32, rounded to bfloat16 (MPI has no bfloat16 type; the elements travel as 16-bit integers).
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = float_to_bfloat16_bits(bfloat16_bits_to_float(a[i]) + bfloat16_bits_to_float(b[i]));
}
int mpi_count(const char* op, int64_t n) {
  GRAFT_CHECK(n <= INT32_MAX, op, "at most 2^31 - 1 elements per collective", std::to_string(n),
              "split the tensor (DistributedDataParallel's buckets are far smaller)");
  return static_cast<int>(n);
}

class MpiGroup final : public Group {
 public:
  explicit MpiGroup(ProcessGroupOptions options) : Group(options) {
    std::promise<void> ready;
    auto started = ready.get_future();
    thread_ = std::thread([this, &ready] { main(ready); });
    try {
      started.get();
    } catch (...) {
      thread_.join();
      throw;
    }
  }
  ~MpiGroup() override { shutdown(); }

  WorkPtr submit(Job job) override {
    WorkPtr work = job.work;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) {
        work->finish(std::make_exception_ptr(Error(op_code_name(job.code), "the process group was destroyed")));
        return work;
      }
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    return work;
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) {
        if (thread_.joinable()) thread_.join();
        return;
      }
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  // ---- on the communication thread ----

  // Polls until every request completes, or fails at the deadline (Note [Communication thread]).
  // spin: how long to poll without sleeping. The collective check waits for the other ranks (still
  // computing, say): it spins only briefly, so that it does not take a core from their work (two
  // ranks on two cores); a data transfer, whose copies happen inside MPI_Test, spins long.
  void poll(MPI_Request* requests, int n, const Job& job,
            std::chrono::microseconds spin = std::chrono::milliseconds(200)) {
    const auto started = std::chrono::steady_clock::now();
    const auto deadline = started + options_.timeout;
    for (;;) {
      int done = 0;
      check(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE), job);
      if (done) return;
      if (std::chrono::steady_clock::now() > deadline) {
        const double secs = std::chrono::duration<double>(options_.timeout).count();
        throw Error(op_code_name(job.code),
                    "timed out after " + format_seconds(secs) + " on rank " + std::to_string(rank_) + " of " +
                        std::to_string(size_) + " (" + job.work->description() +
                        "). Hint: another rank may have died, thrown, or issued a different collective; every "
                        "rank must issue the same collectives in the same order. The process group is broken "
                        "and must be destroyed");
      }
      // Progress happens only inside MPI calls (the shared-memory transport copies the data from
      // within MPI_Test): poll without sleeping for `spin`, yielding the core to any thread that
      // wants it, then every 50 microseconds (a peer that is late, or gone).
      if (std::chrono::steady_clock::now() - started < spin) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }
  void check(int rc, const Job& job) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw Error(op_code_name(job.code), "MPI failed on rank " + std::to_string(rank_) + " (" + job.work->description() +
                                            "): " + std::string(text, static_cast<size_t>(len)));
  }
  void wait_one(MPI_Request request, const Job& job) { poll(&request, 1, job); }
  // Whether every rank is known to be at this collective: the collective check (which waits for them
  // all, under the timeout) has just passed. The data then moves with MPI's blocking collective,
  // whose algorithms are faster than the non-blocking ones (Note [Communication thread]).
  bool rendezvous() const { return options_.check_collectives; }
  MPI_Op reduction(ReduceOp op, DType d) const { return d == kBFloat16 ? bf16_sum_ : mpi_op(op); }

 private:
  static std::string format_seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g s", s);
    return buf;
  }

  void main(std::promise<void>& ready) {
    int provided = 0;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      ready.set_exception(std::make_exception_ptr(Error("init_process_group", "MPI_Init_thread failed")));
      return;
    }
    owns_mpi_ = !initialized;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Op_create(&bf16_sum, /*commute=*/1, &bf16_sum_);
    ready.set_value();

    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) break;  // stopping, and everything queued has run
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      if (broken_) {
        job.work->finish(broken_);
        continue;
      }
      job.work->mark_started();
      try {
        if (options_.check_collectives && !job.signature.empty()) check_signature(job);
        current_ = &job;
        job.run();
        current_ = nullptr;
        // The tensors the job holds go before the caller learns it is done (so that its memory
        // accounting right after wait() is exact).
        job.run = nullptr;
        job.work->finish(nullptr);
      } catch (const Error& e) {
        current_ = nullptr;
        auto error = std::current_exception();
        // A mismatch leaves MPI consistent (every rank saw it); a timeout or an MPI error does not.
        const bool broke = !mismatch_;
        if (broke) broken_ = std::make_exception_ptr(Error(e.op(), std::string("earlier failure: ") + e.what()));
        mismatch_ = false;
        WorkPtr work = job.work;
        // MPI may still write into the buffers of a collective that timed out: keep them alive.
        if (broke) abandoned().push_back(std::move(job));
        else job.run = nullptr;
        work->finish(error);
      } catch (...) {
        current_ = nullptr;
        job.run = nullptr;
        job.work->finish(std::current_exception());
      }
    }
    if (!broken_) {
      MPI_Op_free(&bf16_sum_);
      MPI_Comm_free(&comm_);
      if (owns_mpi_) MPI_Finalize();
    }
  }

  // The jobs of a broken group, never freed (reachable, so not reported as leaks).
  static std::vector<Job>& abandoned() {
    static auto* jobs = new std::vector<Job>();
    return *jobs;
  }

  // Note [Collective checks]: every rank's signature, compared.
  void check_signature(Job& job) {
    std::vector<int64_t> sig = job.signature;
    sig.push_back(sequence_++);
    const int k = static_cast<int>(sig.size());
    std::vector<int64_t> all(static_cast<size_t>(k) * static_cast<size_t>(size_));
    MPI_Request req;
    check(MPI_Iallgather(sig.data(), k, MPI_INT64_T, all.data(), k, MPI_INT64_T, comm_, &req), job);
    poll(&req, 1, job, std::chrono::microseconds(50));
    bool same = true;
    for (int r = 1; r < size_ && same; ++r)
      same = std::equal(all.begin(), all.begin() + k, all.begin() + static_cast<std::ptrdiff_t>(r) * k);
    if (same) return;
    std::string ranks;
    for (int r = 0; r < size_; ++r) {
      const int64_t* s = all.data() + static_cast<std::ptrdiff_t>(r) * k;
      ranks += "; rank " + std::to_string(r) + ": " + op_code_name(s[0]) + " of " + std::to_string(s[1]) + " " +
               dtype_name(static_cast<DType>(s[2])) + " elements (collective #" + std::to_string(s[k - 1]) + ")";
    }
    mismatch_ = true;
    throw Error(op_code_name(job.code), "the ranks issued different collectives (this is rank " + std::to_string(rank_) +
                                            ", " + job.work->description() + ")" + ranks +
                                            ". Hint: every rank must issue the same collectives, on tensors of the "
                                            "same size and dtype, in the same order");
  }

 public:
  MPI_Comm comm_ = MPI_COMM_NULL;
  const Job* current_ = nullptr;

 private:
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  bool owns_mpi_ = false;
  std::exception_ptr broken_;
  bool mismatch_ = false;
  MPI_Op bf16_sum_ = MPI_OP_NULL;
  int64_t sequence_ = 0;
};

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

#endif  // GRAFT_WITH_MPI

Group& group(const char* op) {
  GRAFT_CHECK(g_group != nullptr, op, "an initialised process group", "none",
              "call graft::distributed::init_process_group() first (under mpirun for several ranks)");
  return *g_group;
}

WorkPtr finish_sync(WorkPtr work, bool async_op) {
  if (!async_op) work->wait();
  return work;
}

std::vector<int64_t> signature(int64_t code, int64_t count, DType d, int64_t arg) {
  return {code, count, static_cast<int64_t>(d), arg};
}

// Builds and queues a job whose MPI part is `mpi_run(MpiGroup&, const Job&)` and whose one-process
// part is `local_run()`.
template <class MpiRun, class LocalRun>
WorkPtr queue(const char* op, int64_t code, std::vector<int64_t> sig, std::string description, MpiRun&& mpi_run,
              LocalRun&& local_run) {
  Group& g = group(op);
  Job job;
  job.work = std::make_shared<Work>(std::move(description));
  job.code = code;
  job.signature = std::move(sig);
#if GRAFT_WITH_MPI
  if (auto* m = dynamic_cast<MpiGroup*>(&g)) {
    job.run = [m, fn = std::forward<MpiRun>(mpi_run)] { fn(*m, *m->current_); };
    (void)local_run;
    return g.submit(std::move(job));
  }
#else
  (void)mpi_run;
#endif
  job.run = std::forward<LocalRun>(local_run);
  return g.submit(std::move(job));
}

[[maybe_unused]] std::vector<int64_t> displacements(const std::vector<int64_t>& counts) {
  std::vector<int64_t> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
}

}  // namespace

// ---- the group's lifetime ----

bool is_mpi_available() { return GRAFT_WITH_MPI != 0; }

void init_process_group(const std::string& backend, ProcessGroupOptions options) {
  std::lock_guard lock(g_group_mutex);
  GRAFT_CHECK(backend == "mpi", "init_process_group", "backend \"mpi\"", "\"" + backend + "\"",
              "graft's process group runs on MPI (gloo and nccl are PyTorch's other backends)");
  GRAFT_CHECK(g_group == nullptr, "init_process_group", "a single initialisation", "a second call",
              "call destroy_process_group() before initialising again");
  if (const char* t = std::getenv("GRAFT_DIST_TIMEOUT")) {
    char* end = nullptr;
    const double s = std::strtod(t, &end);
    GRAFT_CHECK(end != t && *end == '\0' && s > 0, "init_process_group", "GRAFT_DIST_TIMEOUT in seconds (> 0)",
                std::string("\"") + t + "\"", "e.g. GRAFT_DIST_TIMEOUT=60");
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
  }
  GRAFT_CHECK(options.timeout.count() > 0, "init_process_group", "a timeout > 0",
              std::to_string(options.timeout.count()) + " ms", "pass e.g. std::chrono::seconds(60)");
#if GRAFT_WITH_MPI
  if (launched_by_mpi()) {
    g_group = new MpiGroup(options);
    return;
  }
#endif
  g_group = new LocalGroup(options);
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
  const int64_t n = t.numel();
  return queue(
      "all_reduce", kAllReduce, signature(kAllReduce, n, t.dtype(), static_cast<int64_t>(op)), std::move(label),
      [t, op, n](auto& m, const Job& job) {
#if GRAFT_WITH_MPI
        if (m.rendezvous()) {
          m.check(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), mpi_count("all_reduce", n), mpi_type(t.dtype()),
                                m.reduction(op, t.dtype()), m.comm_),
                  job);
        } else {
          MPI_Request req;
          m.check(MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), mpi_count("all_reduce", n), mpi_type(t.dtype()),
                                 m.reduction(op, t.dtype()), m.comm_, &req),
                  job);
          m.wait_one(req, job);
        }
        if (op == ReduceOp::AVG) divide(t.data_ptr(), t.dtype(), n, m.size());
#endif
      },
      [] {});
}

WorkPtr broadcast(const Tensor& t, int src, std::string label) {
  check_tensor("broadcast", t, false);
  check_rank_arg("broadcast", src, get_world_size(), "source");
  const int64_t n = t.numel();
  return queue(
      "broadcast", kBroadcast, signature(kBroadcast, n, t.dtype(), src), std::move(label),
      [t, src, n](auto& m, const Job& job) {
#if GRAFT_WITH_MPI
        if (m.rendezvous()) {
          m.check(MPI_Bcast(t.data_ptr(), mpi_count("broadcast", n), mpi_type(t.dtype()), src, m.comm_), job);
        } else {
          MPI_Request req;
          m.check(MPI_Ibcast(t.data_ptr(), mpi_count("broadcast", n), mpi_type(t.dtype()), src, m.comm_, &req), job);
          m.wait_one(req, job);
        }
#endif
      },
      [] {});
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
  return queue(
      "reduce_scatter", kReduceScatter, signature(kReduceScatter, input.numel(), input.dtype(), static_cast<int64_t>(op)),
      std::move(label),
      [output, input, counts, op](auto& m, const Job& job) {
#if GRAFT_WITH_MPI
        std::vector<int> c(counts.size());
        for (size_t i = 0; i < counts.size(); ++i) c[i] = mpi_count("reduce_scatter", counts[i]);
        if (m.rendezvous()) {
          m.check(MPI_Reduce_scatter(input.data_ptr(), output.data_ptr(), c.data(), mpi_type(input.dtype()),
                                     m.reduction(op, input.dtype()), m.comm_),
                  job);
        } else {
          MPI_Request req;
          m.check(MPI_Ireduce_scatter(input.data_ptr(), output.data_ptr(), c.data(), mpi_type(input.dtype()),
                                      m.reduction(op, input.dtype()), m.comm_, &req),
                  job);
          m.wait_one(req, job);
        }
        if (op == ReduceOp::AVG) divide(output.data_ptr(), output.dtype(), output.numel(), m.size());
#endif
      },
      [output, input] { std::memcpy(output.data_ptr(), input.data_ptr(), output.nbytes()); });
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
  return queue(
      "all_gather", kAllGather, signature(kAllGather, output.numel(), input.dtype(), 0), std::move(label),
      [output, input, counts](auto& m, const Job& job) {
#if GRAFT_WITH_MPI
        std::vector<int> c(counts.size()), d(counts.size());
        const auto disp = displacements(counts);
        for (size_t i = 0; i < counts.size(); ++i) {
          c[i] = mpi_count("all_gather", counts[i]);
          d[i] = mpi_count("all_gather", disp[i]);
        }
        if (m.rendezvous()) {
          m.check(MPI_Allgatherv(input.data_ptr(), c[static_cast<size_t>(m.rank())], mpi_type(input.dtype()),
                                 output.data_ptr(), c.data(), d.data(), mpi_type(input.dtype()), m.comm_),
                  job);
        } else {
          MPI_Request req;
          m.check(MPI_Iallgatherv(input.data_ptr(), c[static_cast<size_t>(m.rank())], mpi_type(input.dtype()),
                                  output.data_ptr(), c.data(), d.data(), mpi_type(input.dtype()), m.comm_, &req),
                  job);
          m.wait_one(req, job);
        }
#endif
      },
      [output, input] { std::memcpy(output.data_ptr(), input.data_ptr(), output.nbytes()); });
}

std::vector<std::string> all_gather_strings(const std::string& mine) {
  auto result = std::make_shared<std::vector<std::string>>();
  queue(
      "all_gather", kGatherStrings, signature(kGatherStrings, 0, kUInt8, 0), "all_gather of strings",
      [mine, result](auto& m, const Job& job) {
#if GRAFT_WITH_MPI
        const int world = m.size();
        int len = static_cast<int>(mine.size());
        std::vector<int> lens(static_cast<size_t>(world));
        MPI_Request req;
        m.check(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, m.comm_, &req), job);
        m.wait_one(req, job);
        std::vector<int> disp(static_cast<size_t>(world), 0);
        for (int r = 1; r < world; ++r) disp[r] = disp[r - 1] + lens[r - 1];
        std::vector<char> all(static_cast<size_t>(disp[world - 1] + lens[world - 1]) + 1);
        m.check(MPI_Iallgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), disp.data(), MPI_CHAR, m.comm_, &req),
                job);
        m.wait_one(req, job);
        for (int r = 0; r < world; ++r) result->emplace_back(all.data() + disp[r], static_cast<size_t>(lens[r]));
#endif
      },
      [mine, result] { result->push_back(mine); })
      ->wait();
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
  return queue(
      op, is_send ? kSend : kRecv, {}, what,
      [t, peer, tag, is_send](auto& m, const Job& job) {
#if GRAFT_WITH_MPI
        MPI_Request req;
        const int n = mpi_count(is_send ? "send" : "recv", t.numel());
        if (is_send) {
          m.check(MPI_Isend(t.data_ptr(), n, mpi_type(t.dtype()), peer, tag, m.comm_, &req), job);
        } else {
          m.check(MPI_Irecv(t.data_ptr(), n, mpi_type(t.dtype()), peer, tag, m.comm_, &req), job);
        }
        m.wait_one(req, job);
#endif
      },
      [] {});
}
}  // namespace

void send(const Tensor& tensor, int dst, int tag) { point_to_point(tensor, dst, tag, true)->wait(); }
void recv(const Tensor& tensor, int src, int tag) { point_to_point(tensor, src, tag, false)->wait(); }
WorkPtr isend(const Tensor& tensor, int dst, int tag) { return point_to_point(tensor, dst, tag, true); }
WorkPtr irecv(const Tensor& tensor, int src, int tag) { return point_to_point(tensor, src, tag, false); }

void barrier() {
  queue(
      "barrier", kBarrier, signature(kBarrier, 0, kUInt8, 0), "barrier",
      [](auto& m, const Job& job) {
#if GRAFT_WITH_MPI
        MPI_Request req;
        m.check(MPI_Ibarrier(m.comm_, &req), job);
        m.wait_one(req, job);
#endif
      },
      [] {})
      ->wait();
}

}  // namespace graft::distributed
