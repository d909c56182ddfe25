// graft::nn::parallel::DistributedDataParallel: PyTorch's DDP on graft's process group.
//
//   graft::distributed::init_process_group();
//   auto model = std::make_shared<Net>();
//   graft::nn::parallel::DistributedDataParallel ddp(model);   // parameters broadcast from rank 0
//   graft::optim::SGD opt(ddp.parameters(), 0.1);
//   for (auto& batch : loader) {                                 // each rank its shard (DistributedSampler)
//     opt.zero_grad();
//     auto loss = graft::nn::functional::cross_entropy(ddp(batch.data), batch.target);
//     loss.backward();                                           // gradients averaged over the ranks
//     opt.step();
//   }
//
// Note [DDP buckets]
// At construction every rank checks that all ranks have the same parameter names, shapes and dtypes
// (a mismatch is an error on every rank naming the first difference), then rank 0's parameters and
// buffers are broadcast. The parameters that require grad, in reverse registration order (backward
// produces the last layer's gradients first), are grouped by dtype into buckets of at most
// first_bucket_cap_mb (1 MiB) for the first and bucket_cap_mb (25 MiB) after, each one flat buffer.
// A post-accumulate-grad hook on every parameter copies its new .grad into its slot of the bucket
// (no copy when .grad already is that slot) and, with gradient_as_bucket_view, makes .grad that
// slot: gradients live once, in the buckets, accounted as gradients. When a bucket's last gradient
// arrives the bucket's all-reduce (AVG) is queued on the communication thread, so it runs while
// backward computes the rest; buckets are queued strictly in order (bucket i after i - 1) so that
// every rank issues the same collectives in the same order. A callback at the end of backward waits
// for them all: when backward() returns, every rank holds the average gradient.
//
// A parameter that gets no gradient leaves its bucket unfinished. Without find_unused_parameters
// that is an error at the end of backward naming the parameters (PyTorch names indices); with it,
// DDP walks the graph from the forward's outputs and marks the parameters it does not reach as
// ready (their slots are zero), and an all-reduce of a used-parameter bitmap tells which were used
// on no rank: those keep their .grad as it was, as in PyTorch.
//
// no_sync() (and set_sync_enabled(false), which optim::GradAccumulator calls for all but the last
// micro-batch of a group) turns communication off: backward only accumulates into .grad, and the next
// synchronised backward all-reduces the sum. Buffers (BatchNorm's running statistics) are broadcast
// from rank 0 before each forward when broadcast_buffers is on.
//
// Note [What DDP checks]
// DDP checks what it must to run: at construction, the same parameters on every rank (names, dtypes,
// shapes, in order; the first difference is an error on every rank), then rank 0's parameters and
// buffers replace every other rank's; each bucket's collective goes through Note [Collective checks],
// so ranks whose backward produces other buckets, or that step a different number of times, fail
// with an error (or at the group's timeout) instead of mixing unrelated gradients. It cannot see
// the rest, which is the program's business: the optimiser, its learning rate and other
// hyperparameters; the data each rank trains on (DistributedSampler / DataLoaderOptions::distributed
// need the same seed and size on every rank, or the shards overlap); a dropout probability or other
// option that leaves the parameters' shapes alone; weights loaded after construction (a checkpoint
// loaded on each rank is not broadcast again: compare it, or load it before wrapping); what each
// rank prints or saves. graft train compares its flags and its resumed checkpoint across ranks
// itself (Note [Ranks that agree] in apps/graft/rank_agreement.h).
//
// Note [DDP communication hooks]
// What a bucket's reduction does is a communication hook (PyTorch's register_comm_hook): the
// reducer calls hook(bucket) when the bucket's last gradient arrives (and for every bucket in
// sync_now), with a GradBucket naming its flat buffer, its index and its parameters, and the hook
// returns a Work for the reduced buffer: either a collective's own Work (its result() undefined:
// the buffer was reduced in place) or one whose result() after wait is a tensor of the bucket's
// numel and dtype, which the reducer copies into the buffer before the gradients are delivered
// (Work::then's continuation returns it). Without a registered hook the reducer calls ddp_comm_hooks::allreduce_hook
// (an all_reduce with ReduceOp::AVG in place). Hooks run on the thread running backward and must issue the same
// collectives on every rank (Note [Collective checks] catches those that do not); work to do after the collective goes
// in Work::then (it runs when the reducer waits, at the end of backward). bf16_compress_hook halves the bytes moved:
// the bucket cast to bfloat16 and divided by the world size, summed in bfloat16, cast back (PyTorch's
// default_hooks.bf16_compress_hook; the average is then rounded to bfloat16's 8 significant bits). A hook registered
// with consumes_gradients keeps what it needs itself: ZeroRedundancyOptimizer stage 2 reduce-scatters each bucket into
// its shard (Note [ZeRO shards]); the buckets then exist only during backward, no parameter gets a .grad, and every
// backward communicates (no_sync has no full gradient to keep).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/distributed/process_group.h"
#include "graft/nn/functional.h"  // GRAFT_ARG
#include "graft/nn/module.h"
#include "graft/optim/grad_accumulator.h"

namespace graft::distributed {

// PyTorch's torch.distributed.GradBucket: what a communication hook is given (Note [DDP
// communication hooks]).
class GradBucket {
 public:
  GradBucket(size_t index, size_t num_buckets, Tensor buffer, std::vector<Tensor> parameters,
             std::vector<int64_t> offsets, int64_t flat_offset, std::string label)
      : index_(index),
        num_buckets_(num_buckets),
        buffer_(std::move(buffer)),
        parameters_(std::move(parameters)),
        offsets_(std::move(offsets)),
        flat_offset_(flat_offset),
        label_(std::move(label)) {}
  size_t index() const noexcept { return index_; }
  bool is_last() const noexcept { return index_ + 1 == num_buckets_; }
  // Flat, the bucket's dtype: the parameters' gradients end to end.
  const Tensor& buffer() const noexcept { return buffer_; }
  const std::vector<Tensor>& parameters() const noexcept { return parameters_; }
  // Views of buffer() shaped like the parameters.
  std::vector<Tensor> gradients() const;
  // Of each parameter's gradient in buffer(), and of buffer()'s first element in the flat order of
  // all buckets (bucket 0 first: the order of ZeRO's shards).
  const std::vector<int64_t>& offsets() const noexcept { return offsets_; }
  int64_t flat_offset() const noexcept { return flat_offset_; }
  // "DDP bucket 2 (4096 float32: fc2.weight, fc2.bias)", for the collectives' error messages.
  const std::string& label() const noexcept { return label_; }

 private:
  size_t index_, num_buckets_;
  Tensor buffer_;
  std::vector<Tensor> parameters_;
  std::vector<int64_t> offsets_;
  int64_t flat_offset_;
  std::string label_;
};

using CommHook = std::function<WorkPtr(GradBucket&)>;

struct CommHookOptions {
  // The hook keeps the reduced gradients itself (ZeroRedundancyOptimizer stage 2): its Work's result
  // is not read, buckets live only during backward, no .grad is set, no_sync does not apply.
  GRAFT_ARG(bool, consumes_gradients) = false;
};

// PyTorch's torch.distributed.algorithms.ddp_comm_hooks.default_hooks, in its (state, bucket)
// spelling: state is the process group, nullptr for the default (graft has one).
namespace ddp_comm_hooks {
// The reducer's own reduction: all_reduce (AVG) of the buffer in place.
WorkPtr allreduce_hook(std::nullptr_t process_group, GradBucket& bucket);
// The buffer cast to bfloat16 and divided by the world size (rounded to bfloat16), all-reduced
// (SUM, in bfloat16), cast back to the bucket's dtype.
WorkPtr bf16_compress_hook(std::nullptr_t process_group, GradBucket& bucket);
}  // namespace ddp_comm_hooks

}  // namespace graft::distributed

namespace graft::nn::parallel {

struct DistributedDataParallelOptions {
  GRAFT_ARG(double, bucket_cap_mb) = 25.0;
  GRAFT_ARG(double, first_bucket_cap_mb) = 1.0;  // PyTorch's _DEFAULT_FIRST_BUCKET_BYTES
  GRAFT_ARG(bool, find_unused_parameters) = false;
  GRAFT_ARG(bool, broadcast_buffers) = true;
  // PyTorch's default is false (a second copy of every gradient); graft's is true.
  GRAFT_ARG(bool, gradient_as_bucket_view) = true;
};

// Note [DDP buckets]'s assignment, the one place it is written (the Reducer builds its buckets with
// it, and graft plan plans a rank's memory with it): `params` (the parameters that require grad, in
// registration order; only their sizes and dtypes are read, so meta tensors do) taken in reverse
// order, grouped by dtype, a bucket closed once its bytes reach first_bucket_cap_mb (the first
// bucket closed) or bucket_cap_mb (every later one); the buckets still open at the end close in the
// order they were opened. Each bucket: its parameters' indices into `params`, in bucket order.
struct BucketAssignment {
  std::vector<size_t> params;
  DType dtype = kFloat32;
};
std::vector<BucketAssignment> assign_buckets(const std::vector<Tensor>& params, const DistributedDataParallelOptions& options);

// What the reducer did in the last synchronised iteration, in order (for overlap measurements).
struct ReducerEvent {
  enum class Kind { kGradReady, kBucketQueued, kBackwardEnd, kBucketDone };
  Kind kind;
  int64_t index;  // the parameter (kGradReady) or the bucket
  std::chrono::steady_clock::time_point at;
};

// The non-template core of DistributedDataParallel (Note [DDP buckets]).
class Reducer final : public optim::GradientSync {
 public:
  Reducer(std::shared_ptr<Module> module, DistributedDataParallelOptions options);
  ~Reducer() override;
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Before and after each forward (DistributedDataParallel::forward calls them).
  void prepare_forward();
  void after_forward(const std::vector<Tensor>& outputs);

  // optim::GradientSync
  void set_sync_enabled(bool enabled) override { sync_enabled_ = enabled; }
  bool sync_enabled() const override { return sync_enabled_; }
  void sync_now() override;

  struct Bucket {
    Tensor buffer;  // flat, the bucket's dtype (a consuming hook's: only during backward)
    int64_t numel = 0;
    DType dtype = kFloat32;
    std::vector<size_t> params;    // indices into parameter_names(), in bucket order
    std::vector<int64_t> offsets;  // of each parameter's slot in the buffer
  };
  const std::vector<Bucket>& buckets() const noexcept { return buckets_; }
  const std::vector<std::string>& parameter_names() const noexcept { return names_; }
  const std::vector<Tensor>& parameters() const noexcept { return params_; }  // those that require grad
  const std::vector<ReducerEvent>& last_events() const noexcept { return events_; }
  // Of the last synchronised backward: seconds the buckets' all-reduces ran, and seconds the end of
  // backward waited for them (communication not hidden behind computation).
  double last_communication_seconds() const noexcept { return comm_seconds_; }
  double last_wait_seconds() const noexcept { return wait_seconds_; }
  const DistributedDataParallelOptions& options() const noexcept { return options_; }

  // PyTorch's DistributedDataParallel.register_comm_hook(state, hook): hook(state, bucket) reduces
  // each bucket (Note [DDP communication hooks]); once per model, before the first backward.
  //   ddp.register_comm_hook(nullptr, graft::distributed::ddp_comm_hooks::bf16_compress_hook);
  template <class State, class Hook>
  requires std::is_invocable_r_v<distributed::WorkPtr, Hook&, State&, distributed::GradBucket&>
  void register_comm_hook(State state, Hook hook, distributed::CommHookOptions options = {}) {
    register_comm_hook(
        distributed::CommHook([state = std::move(state), hook = std::move(hook)](
                                  distributed::GradBucket& bucket) mutable { return hook(state, bucket); }),
        options);
  }
  void register_comm_hook(distributed::CommHook hook, distributed::CommHookOptions options = {});
  bool has_comm_hook() const noexcept { return comm_hook_ != nullptr; }

  // optim::ZeroRedundancyOptimizer's attachment (graft/distributed/zero.h), once per model:
  // on_synced (stage 1; null for stage 2, which registers a consuming hook) runs after each
  // synchronised backward, when the reduced gradients are in the buckets and .grad. The flat order
  // of the gradients is the buckets' (bucket 0 first; GradBucket::flat_offset).
  void attach_sharded_optimizer(std::function<void()> on_synced);
  int64_t bucket_flat_offset(size_t bucket) const;
  int64_t flat_numel() const;

 private:
  void on_grad_ready(size_t param);
  // Calls the hook on bucket b (the default: allreduce_hook); take_result copies what its Work
  // produced into the buffer (after wait()).
  distributed::WorkPtr launch(size_t b, const std::string& what);
  void take_result(size_t b, const distributed::Work& work);
  void mark_ready(size_t param);
  void launch_ready_buckets();
  void finalize();
  void wait_launched() noexcept;
  // The averaged gradients from the buckets into .grad (parameters `used` by some rank), then
  // ZeRO stage 1's callback.
  void deliver(const std::vector<char>& used);
  Tensor slot(size_t param) const;
  void record(ReducerEvent::Kind kind, int64_t index);

  std::shared_ptr<Module> module_;
  DistributedDataParallelOptions options_;
  std::vector<std::string> names_;
  std::vector<Tensor> params_;
  std::vector<Tensor> buffers_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;    // per parameter
  std::vector<size_t> position_of_;  // per parameter: its index within its bucket
  std::vector<HookHandle> hooks_;

  bool sync_enabled_ = true;
  // Per synchronised iteration:
  bool expect_ = false;         // a DDP forward ran with grad mode on and sync on
  bool callback_queued_ = false;
  std::vector<char> ready_;     // per parameter
  std::vector<char> locally_used_;
  std::vector<int64_t> pending_;  // per bucket: gradients still to come
  size_t next_launch_ = 0;
  std::vector<distributed::WorkPtr> works_;
  Tensor used_map_;               // find_unused_parameters: int32 per parameter, MAX-reduced
  distributed::WorkPtr used_work_;
  std::vector<ReducerEvent> events_;
  double comm_seconds_ = 0, wait_seconds_ = 0;
  distributed::CommHook comm_hook_;
  bool hook_consumes_ = false;  // CommHookOptions::consumes_gradients
  bool sharded_ = false;        // a ZeroRedundancyOptimizer is attached
  std::function<void()> on_synced_;
};

namespace detail {
inline void collect_tensors(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
inline void collect_tensors(const std::vector<Tensor>& ts, std::vector<Tensor>& out) {
  out.insert(out.end(), ts.begin(), ts.end());
}
template <class A, class B>
void collect_tensors(const std::pair<A, B>& p, std::vector<Tensor>& out);
template <class... Ts>
void collect_tensors(const std::tuple<Ts...>& t, std::vector<Tensor>& out) {
  std::apply([&](const auto&... e) { (collect_tensors(e, out), ...); }, t);
}
template <class A, class B>
void collect_tensors(const std::pair<A, B>& p, std::vector<Tensor>& out) {
  collect_tensors(p.first, out);
  collect_tensors(p.second, out);
}
template <class T>
void collect_tensors(const T&, std::vector<Tensor>&) {}  // not a tensor: nothing to follow

template <class M>
std::shared_ptr<Module> module_ptr(const std::shared_ptr<M>& m) { return m; }
template <class M>
std::shared_ptr<Module> module_ptr(const ModuleHolder<M>& m) { return m.ptr(); }
}  // namespace detail

// ModuleType: a ModuleHolder (nn::Sequential, a TORCH_MODULE-style holder) or a std::shared_ptr to
// a Module subclass; forward(args...) calls its forward.
template <class ModuleType>
class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(ModuleType module, DistributedDataParallelOptions options = {})
      : module_(std::move(module)), reducer_(std::make_unique<Reducer>(detail::module_ptr(module_), options)) {}

  template <class... Args>
  decltype(auto) forward(Args&&... args) {
    reducer_->prepare_forward();
    auto out = module_->forward(std::forward<Args>(args)...);
    std::vector<Tensor> outputs;
    detail::collect_tensors(out, outputs);
    reducer_->after_forward(outputs);
    return out;
  }
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }

  // PyTorch's `with ddp.no_sync():` as a scope guard.
  class NoSync {
   public:
    explicit NoSync(Reducer& r) : r_(&r), was_(r.sync_enabled()) { r.set_sync_enabled(false); }
    ~NoSync() { r_->set_sync_enabled(was_); }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    Reducer* r_;
    bool was_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*reducer_); }

  ModuleType& module() noexcept { return module_; }
  Reducer& reducer() noexcept { return *reducer_; }
  // PyTorch's ddp.register_comm_hook(state, hook) (Note [DDP communication hooks]).
  template <class State, class Hook>
  requires std::is_invocable_r_v<distributed::WorkPtr, Hook&, State&, distributed::GradBucket&>
  void register_comm_hook(State state, Hook hook) { reducer_->register_comm_hook(std::move(state), std::move(hook)); }
  std::vector<Tensor> parameters(bool recurse = true) const { return detail::module_ptr(module_)->parameters(recurse); }
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const {
    return detail::module_ptr(module_)->named_parameters(recurse);
  }
  void train(bool on = true) { detail::module_ptr(module_)->train(on); }
  void eval() { train(false); }

 private:
  ModuleType module_;
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace graft::nn::parallel
