// The MPI process group (Note [Communication thread] in graft/distributed/process_group.h): the
// only file that sees MPI. process_group.cpp checks the arguments and names the operations; this
// file runs them on MPI, one at a time, on a thread of its own, with the collective check of Note
// [Collective checks] before each.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <thread>

#include "distributed/group.h"
#include "graft/core/error.h"
#include "graft/core/half.h"

#if GRAFT_WITH_MPI
#include <mpi.h>
#endif

namespace graft::distributed::internal {

bool mpi_built() { return GRAFT_WITH_MPI != 0; }

#if GRAFT_WITH_MPI

namespace {

// The collectives, as the signature of Note [Collective checks] numbers them.
enum OpCode : int64_t {
  kAllReduce = 1,
  kBroadcast,
  kAllGather,
  kReduceScatter,
  kBarrier,
  kGatherStrings,
  kSend,
  kRecv
};
const char* op_code_name(int64_t code) {
  switch (code) {
    case kAllReduce:
      return "all_reduce";
    case kBroadcast:
      return "broadcast";
    case kAllGather:
      return "all_gather";
    case kReduceScatter:
      return "reduce_scatter";
    case kBarrier:
      return "barrier";
    case kGatherStrings:
      return "all_gather (strings)";
    case kSend:
      return "send";
    case kRecv:
      return "recv";
  }
  return "?";
}

std::vector<int64_t> signature(int64_t code, int64_t count, DType d, int64_t arg) {
  return {code, count, static_cast<int64_t>(d), arg};
}

// The average: the sum divided by the world size, in place.
void divide(void* data, DType d, int64_t n, int world) {
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

// One queued operation: `run` starts it and polls it to the end on the communication thread.
struct Job {
  WorkPtr work;
  int64_t code = 0;
  std::vector<int64_t> signature;  // empty: no check (point to point)
  std::function<void()> run;
};

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::UInt8:
      return MPI_UINT8_T;
    case DType::Int8:
      return MPI_INT8_T;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int16:
      return MPI_UINT16_T;  // moved as bits, never reduced (check_tensor)
    case DType::Bool:
      return MPI_UINT8_T;
  }
  return MPI_BYTE;
}
MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return MPI_SUM;
    case ReduceOp::MAX:
      return MPI_MAX;
    case ReduceOp::MIN:
      return MPI_MIN;
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
  explicit MpiGroup(const ProcessGroupOptions& options) : Group(options) {
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

  // Builds a job whose body is run(job) on the communication thread, and queues it.
  template <class Run> WorkPtr queue(int64_t code, std::vector<int64_t> sig, std::string label, Run&& run) {
    Job job;
    job.work = std::make_shared<Work>(std::move(label));
    job.code = code;
    job.signature = std::move(sig);
    job.run = [this, fn = std::forward<Run>(run)] { fn(*current_); };
    return submit(std::move(job));
  }

  WorkPtr submit(Job job) {
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

  // ---- the collectives (Group) ----

  WorkPtr all_reduce(const Tensor& t, ReduceOp op, std::string label) override {
    const int64_t n = t.numel();
    return queue(kAllReduce, signature(kAllReduce, n, t.dtype(), static_cast<int64_t>(op)), std::move(label),
                 [this, t, op, n](const Job& job) {
                   if (rendezvous()) {
                     check(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), mpi_count("all_reduce", n), mpi_type(t.dtype()),
                                         reduction(op, t.dtype()), comm_),
                           job);
                   } else {
                     MPI_Request req;
                     check(MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), mpi_count("all_reduce", n), mpi_type(t.dtype()),
                                          reduction(op, t.dtype()), comm_, &req),
                           job);
                     wait_one(req, job);
                   }
                   if (op == ReduceOp::AVG) divide(t.data_ptr(), t.dtype(), n, size_);
                 });
  }

  WorkPtr broadcast(const Tensor& t, int src, std::string label) override {
    const int64_t n = t.numel();
    return queue(
        kBroadcast, signature(kBroadcast, n, t.dtype(), src), std::move(label), [this, t, src, n](const Job& job) {
          if (rendezvous()) {
            check(MPI_Bcast(t.data_ptr(), mpi_count("broadcast", n), mpi_type(t.dtype()), src, comm_), job);
          } else {
            MPI_Request req;
            check(MPI_Ibcast(t.data_ptr(), mpi_count("broadcast", n), mpi_type(t.dtype()), src, comm_, &req), job);
            wait_one(req, job);
          }
        });
  }

  WorkPtr reduce_scatter_v(const Tensor& output, const Tensor& input, std::vector<int64_t> counts, ReduceOp op,
                           std::string label) override {
    return queue(kReduceScatter, signature(kReduceScatter, input.numel(), input.dtype(), static_cast<int64_t>(op)),
                 std::move(label), [this, output, input, counts = std::move(counts), op](const Job& job) {
                   std::vector<int> c(counts.size());
                   for (size_t i = 0; i < counts.size(); ++i) c[i] = mpi_count("reduce_scatter", counts[i]);
                   if (rendezvous()) {
                     check(MPI_Reduce_scatter(input.data_ptr(), output.data_ptr(), c.data(), mpi_type(input.dtype()),
                                              reduction(op, input.dtype()), comm_),
                           job);
                   } else {
                     MPI_Request req;
                     check(MPI_Ireduce_scatter(input.data_ptr(), output.data_ptr(), c.data(), mpi_type(input.dtype()),
                                               reduction(op, input.dtype()), comm_, &req),
                           job);
                     wait_one(req, job);
                   }
                   if (op == ReduceOp::AVG) divide(output.data_ptr(), output.dtype(), output.numel(), size_);
                 });
  }

  WorkPtr all_gather_v(const Tensor& output, const Tensor& input, std::vector<int64_t> counts,
                       std::string label) override {
    return queue(kAllGather, signature(kAllGather, output.numel(), input.dtype(), 0), std::move(label),
                 [this, output, input, counts = std::move(counts)](const Job& job) {
                   std::vector<int> c(counts.size()), d(counts.size());
                   int64_t offset = 0;
                   for (size_t i = 0; i < counts.size(); ++i) {
                     c[i] = mpi_count("all_gather", counts[i]);
                     d[i] = mpi_count("all_gather", offset);
                     offset += counts[i];
                   }
                   const int mine = c[static_cast<size_t>(rank_)];
                   if (rendezvous()) {
                     check(MPI_Allgatherv(input.data_ptr(), mine, mpi_type(input.dtype()), output.data_ptr(), c.data(),
                                          d.data(), mpi_type(input.dtype()), comm_),
                           job);
                   } else {
                     MPI_Request req;
                     check(MPI_Iallgatherv(input.data_ptr(), mine, mpi_type(input.dtype()), output.data_ptr(), c.data(),
                                           d.data(), mpi_type(input.dtype()), comm_, &req),
                           job);
                     wait_one(req, job);
                   }
                 });
  }

  WorkPtr all_gather_strings(const std::string& mine, std::shared_ptr<std::vector<std::string>> out) override {
    return queue(kGatherStrings, signature(kGatherStrings, 0, kUInt8, 0), "all_gather of strings",
                 [this, mine, out](const Job& job) {
                   const int world = size_;
                   int len = static_cast<int>(mine.size());
                   std::vector<int> lens(static_cast<size_t>(world));
                   MPI_Request req;
                   check(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_, &req), job);
                   wait_one(req, job);
                   std::vector<int> disp(static_cast<size_t>(world), 0);
                   for (int r = 1; r < world; ++r) disp[r] = disp[r - 1] + lens[r - 1];
                   std::vector<char> all(static_cast<size_t>(disp[world - 1] + lens[world - 1]) + 1);
                   check(MPI_Iallgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), disp.data(), MPI_CHAR,
                                         comm_, &req),
                         job);
                   wait_one(req, job);
                   for (int r = 0; r < world; ++r)
                     out->emplace_back(all.data() + disp[r], static_cast<size_t>(lens[r]));
                 });
  }

  WorkPtr send(const Tensor& t, int dst, int tag, std::string label) override {
    return queue(kSend, {}, std::move(label), [this, t, dst, tag](const Job& job) {
      MPI_Request req;
      check(MPI_Isend(t.data_ptr(), mpi_count("send", t.numel()), mpi_type(t.dtype()), dst, tag, comm_, &req), job);
      wait_one(req, job);
    });
  }

  WorkPtr recv(const Tensor& t, int src, int tag, std::string label) override {
    return queue(kRecv, {}, std::move(label), [this, t, src, tag](const Job& job) {
      MPI_Request req;
      check(MPI_Irecv(t.data_ptr(), mpi_count("recv", t.numel()), mpi_type(t.dtype()), src, tag, comm_, &req), job);
      wait_one(req, job);
    });
  }

  WorkPtr barrier() override {
    return queue(kBarrier, signature(kBarrier, 0, kUInt8, 0), "barrier", [this](const Job& job) {
      MPI_Request req;
      check(MPI_Ibarrier(comm_, &req), job);
      wait_one(req, job);
    });
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
    throw Error(op_code_name(job.code), "the ranks issued different collectives (this is rank " +
                                            std::to_string(rank_) + ", " + job.work->description() + ")" + ranks +
                                            ". Hint: every rank must issue the same collectives, on tensors of the "
                                            "same size and dtype, in the same order");
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  const Job* current_ = nullptr;
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

}  // namespace

std::unique_ptr<Group> make_mpi_group(const ProcessGroupOptions& options) {
  if (!launched_by_mpi()) return nullptr;
  return std::make_unique<MpiGroup>(options);
}

#else

std::unique_ptr<Group> make_mpi_group(const ProcessGroupOptions&) { return nullptr; }

#endif  // GRAFT_WITH_MPI

}  // namespace graft::distributed::internal
