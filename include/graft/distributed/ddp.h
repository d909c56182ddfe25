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
#pragma once

#include <chrono>
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

namespace graft::nn::parallel {

struct DistributedDataParallelOptions {
  GRAFT_ARG(double, bucket_cap_mb) = 25.0;
  GRAFT_ARG(double, first_bucket_cap_mb) = 1.0;  // PyTorch's _DEFAULT_FIRST_BUCKET_BYTES
  GRAFT_ARG(bool, find_unused_parameters) = false;
  GRAFT_ARG(bool, broadcast_buffers) = true;
  // PyTorch's default is false (a second copy of every gradient); graft's is true.
  GRAFT_ARG(bool, gradient_as_bucket_view) = true;
};

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
    Tensor buffer;                 // flat, the bucket's dtype (stage 2: only during backward)
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

  // optim::ZeroRedundancyOptimizer's attachment (graft/distributed/zero.h). The flat order of the
  // gradients is the buckets' (bucket 0 first); rank r owns elements [r chunk, (r + 1) chunk).
  // Stage 1: on_synced runs after each synchronised backward (the all-reduced gradients are in the
  // buckets). Stage 2: each bucket is reduce-scattered (AVG) and this rank's part added into
  // shard_grad; the buckets exist only during backward and no parameter keeps a .grad, so between
  // steps a rank holds 1/N of the gradients. Stage 2 communicates every backward (no_sync would
  // need the whole gradient).
  struct Sharding {
    int stage = 0;
    int64_t chunk = 0;
    Tensor shard_grad;
    std::function<void()> on_synced;
  };
  void attach_sharding(Sharding sharding);
  int64_t bucket_flat_offset(size_t bucket) const;
  int64_t flat_numel() const;

 private:
  void on_grad_ready(size_t param);
  void mark_ready(size_t param);
  void launch_ready_buckets();
  void finalize();
  void wait_launched() noexcept;
  // The averaged gradients from the buckets into .grad (parameters `used` by some rank), then
  // ZeRO stage 1's hook.
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
  Sharding sharding_;
  std::vector<Tensor> scatter_out_;  // stage 2: this rank's part of each bucket
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
