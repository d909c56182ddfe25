// graft::distributed: a process group on MPI in the shape of PyTorch's torch.distributed.
//
//   graft::distributed::init_process_group();            // rank and world size from mpirun
//   int rank = graft::distributed::get_rank();
//   graft::distributed::all_reduce(t, graft::distributed::ReduceOp::SUM);
//   auto work = graft::distributed::all_reduce(t, ReduceOp::AVG, /*async_op=*/true);
//   ...                                                   // compute while it runs
//   work->wait();                                         // throws graft::Error on failure
//
// Note [Communication thread]
// MPI is initialised at MPI_THREAD_SERIALIZED on a thread of its own, and every MPI call is made
// there: the caller's thread queues a Work and goes on (async_op) or waits for it. Works run one at a
// time in the order they were queued, so ranks that queue collectives in the same order issue them
// in the same order (MPI's rule). The thread starts each collective non-blocking and polls it, so
// it can give up: a collective that does not complete within the group's timeout fails its Work
// with a graft::Error naming the operation, this rank and the tensor, and the group is then broken
// (MPI cannot cancel a collective): every later Work fails at once with the first error, and the
// group is torn down without MPI_Finalize. A rank that dies (or throws and leaves) thus makes the
// others fail at their next collective within the timeout, instead of hanging. With the collective
// check on (the default, Note [Collective checks]), the wait under the timeout is the check's, where
// every rank meets; the data then moves with MPI's blocking collective, which for large messages is
// up to twice as fast as the non-blocking one (libnbc's algorithms; BENCHMARKS.md, "Distributed data
// parallel"). A rank that dies in the middle of that transfer is then caught by mpirun, which ends
// the job; without the check, the data collective itself is polled against the timeout.
//
// Note [Collective checks]
// Ranks that issue different collectives, or the same one on different sizes or dtypes, make an
// erroneous MPI program (undefined behaviour: truncation, a crash, a hang). With check_collectives
// (on by default) each collective first all-gathers a 5-number signature (operation, element count,
// dtype, root or reduce op, sequence number) and, when the ranks disagree, fails on every rank with
// an error listing what each rank issued; the data collective is then not run and the group stays
// usable. The check costs one small all-gather per collective (tens of microseconds on one machine;
// docs/distributed.md); DistributedDataParallel issues one per bucket.
//
// Without an MPI launcher (no mpirun), or in a build without MPI (GRAFT_WITH_MPI off), the group is a
// single process: world size 1, rank 0, and every collective leaves its tensors as they are (the
// result of a collective over one rank).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::distributed {

// PyTorch's torch.distributed.ReduceOp. AVG divides the sum by the world size (floating types only).
enum class ReduceOp { SUM, AVG, MAX, MIN };
const char* reduce_op_name(ReduceOp op);

struct ProcessGroupOptions {
  // How long one collective may take before it fails (PyTorch's default: 30 minutes). The
  // environment variable GRAFT_DIST_TIMEOUT (seconds) overrides it.
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  bool check_collectives = true;  // Note [Collective checks]
};

// Whether this build of graft has MPI (GRAFT_WITH_MPI).
bool is_mpi_available();
// Joins the job mpirun started (rank and world size from the launcher), or makes a one-process
// group when there is none. backend: "mpi" (the only one). Calling it twice is an error.
void init_process_group(const std::string& backend = "mpi", ProcessGroupOptions options = {});
bool is_initialized();
// Waits for queued work, then ends the group (MPI_Finalize, unless the group broke).
void destroy_process_group();
int get_rank();        // 0 when no group is initialised
int get_world_size();  // 1 when no group is initialised
// The group's timeout (after GRAFT_DIST_TIMEOUT).
std::chrono::milliseconds get_timeout();

// The handle of one queued operation (c10d's Work).
class Work {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Work(std::string description) : description_(std::move(description)) {}
  // Blocks until the operation ends; throws its graft::Error if it failed.
  void wait();
  bool is_completed() const;
  bool is_success() const;
  // "all_reduce (SUM) of float32 [4, 3]", or the label a caller gave (DistributedDataParallel's
  // buckets name their parameters).
  const std::string& description() const noexcept { return description_; }
  // When the communication thread started and finished it (for overlap measurements).
  Clock::time_point started_at() const;
  Clock::time_point completed_at() const;
  // What a then() continuation returned, after wait(); undefined for the collectives themselves,
  // which write in place (into the tensor given, or the output). The communication thread's Works
  // hold no tensor, so the memory of a collective's tensors is the caller's alone once it returns.
  Tensor result() const;

  // c10d's Future::then: a Work that ends when `before` has ended and `next(before's result)` has
  // returned; its result is what next returned. next runs on the thread that first waits for the new
  // Work (never on the communication thread), once; an error of `before` or of next is the new
  // Work's error. started_at() is before's, completed_at() the moment next returned; is_completed()
  // is true once a wait() has run next.
  static std::shared_ptr<Work> then(std::shared_ptr<Work> before, std::function<Tensor(const Tensor&)> next,
                                    std::string description);

  // ---- for the communication thread ----
  void mark_started();
  void finish(std::exception_ptr error);

 private:
  void run_continuation();
  void set_result(Tensor result);

  std::string description_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  Tensor result_;
  Clock::time_point started_{}, completed_{};
  // then(): the Work waited for and the continuation (run once, under continuation_mutex_).
  std::shared_ptr<Work> before_;
  std::function<Tensor(const Tensor&)> next_;
  std::mutex continuation_mutex_;
};
using WorkPtr = std::shared_ptr<Work>;

// Collectives over every rank. Tensors must be contiguous; float32, float64, int32, int64, uint8,
// int8 (and float16 / bfloat16 where nothing is summed: broadcast, all_gather, send, recv). Each
// runs in place where PyTorch's does. With async_op the call returns at once; otherwise it returns a
// completed Work (or throws).
WorkPtr all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::SUM, bool async_op = false);
WorkPtr broadcast(const Tensor& tensor, int src, bool async_op = false);
// output[r] receives rank r's input (all the same shape and dtype).
WorkPtr all_gather(const std::vector<Tensor>& output, const Tensor& input, bool async_op = false);
// output (world_size * input.numel() elements) receives the inputs in rank order.
WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input, bool async_op = false);
// output receives the reduction over ranks of input_list[rank].
WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& input_list, ReduceOp op = ReduceOp::SUM,
                       bool async_op = false);
// input has world_size * output.numel() elements; rank r receives the reduction of block r.
WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::SUM,
                              bool async_op = false);
// Point to point (PyTorch's send/recv; isend/irecv are the async forms).
void send(const Tensor& tensor, int dst, int tag = 0);
void recv(const Tensor& tensor, int src, int tag = 0);
WorkPtr isend(const Tensor& tensor, int dst, int tag = 0);
WorkPtr irecv(const Tensor& tensor, int src, int tag = 0);
void barrier();

namespace detail {
// For DistributedDataParallel and ZeroRedundancyOptimizer: the same collectives with a label for
// errors (all_reduce also sums bfloat16 with ReduceOp::SUM, each partial sum rounded to bfloat16
// as NCCL sums it: bf16_compress_hook), and a reduce-scatter with a count per rank (MPI_Reduce_scatter): rank r
// receives counts[r] elements, the reduction of input[sum(counts[:r]) : sum(counts[:r+1])].
WorkPtr all_reduce(const Tensor& tensor, ReduceOp op, std::string label);
WorkPtr broadcast(const Tensor& tensor, int src, std::string label);
WorkPtr reduce_scatter_v(const Tensor& output, const Tensor& input, std::vector<int64_t> counts, ReduceOp op,
                         std::string label);
WorkPtr all_gather_v(const Tensor& output, const Tensor& input, std::vector<int64_t> counts, std::string label);
// Gathers every rank's string (for error messages that compare ranks).
std::vector<std::string> all_gather_strings(const std::string& mine);
}  // namespace detail

}  // namespace graft::distributed
