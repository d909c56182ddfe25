// DistributedDataParallel's reducer (Note [DDP buckets] in graft/distributed/ddp.h).
#include "graft/distributed/ddp.h"

#include <unordered_set>

#include "graft/autograd/grad_mode.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "graft/core/shape.h"
#include "graft/engine/engine.h"

namespace graft::distributed {

std::vector<Tensor> GradBucket::gradients() const {
  std::vector<Tensor> out;
  for (size_t i = 0; i < parameters_.size(); ++i)
    out.push_back(buffer_.narrow(0, offsets_[i], parameters_[i].numel()).view(parameters_[i].sizes()));
  return out;
}

namespace ddp_comm_hooks {

WorkPtr allreduce_hook(std::nullptr_t, GradBucket& bucket) {
  return detail::all_reduce(bucket.buffer(), ReduceOp::AVG, "all_reduce of " + bucket.label());
}

WorkPtr bf16_compress_hook(std::nullptr_t, GradBucket& bucket) {
  NoGradGuard no_grad;
  // Divided before the sum, as PyTorch's hook (the sum of N quotients cannot overflow where the
  // sum of N gradients would).
  // The quotient computed in float32 and rounded to bfloat16, as PyTorch's bfloat16 div_ does
  // (graft's div_ has no bfloat16 kernel).
  Tensor compressed =
      bucket.buffer().to(kBFloat16).to(kFloat32).div_(static_cast<double>(get_world_size())).to(kBFloat16);
  WorkPtr work = detail::all_reduce(compressed, ReduceOp::SUM, "all_reduce (bfloat16) of " + bucket.label());
  const DType dtype = bucket.buffer().dtype();
  return Work::then(
      std::move(work),
      [compressed, dtype](const Tensor&) {
        NoGradGuard guard;
        return compressed.to(dtype);
      },
      "bf16_compress_hook of " + bucket.label());
}

}  // namespace ddp_comm_hooks

}  // namespace graft::distributed

namespace graft::nn::parallel {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string describe_parameters(const std::vector<std::string>& names, const std::vector<Tensor>& params) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += names[i] + " " + dtype_name(params[i].dtype()) + " " + shape_str(params[i].sizes()) + "\n";
  return s;
}

// The first line where two descriptions differ (for the construction check's error).
std::string first_difference(const std::string& a, const std::string& b) {
  size_t ia = 0, ib = 0;
  for (;;) {
    const size_t ea = a.find('\n', ia), eb = b.find('\n', ib);
    const std::string la = ea == std::string::npos ? "" : a.substr(ia, ea - ia);
    const std::string lb = eb == std::string::npos ? "" : b.substr(ib, eb - ib);
    if (la != lb) return "\"" + (la.empty() ? std::string("(no more parameters)") : la) + "\" against \"" +
                         (lb.empty() ? std::string("(no more parameters)") : lb) + "\"";
    if (ea == std::string::npos || eb == std::string::npos) return "";
    ia = ea + 1;
    ib = eb + 1;
  }
}

std::string list_names(const std::vector<std::string>& names, const std::vector<size_t>& which) {
  std::string s;
  for (size_t k = 0; k < which.size(); ++k) {
    if (k == 8) {
      s += ", and " + std::to_string(which.size() - 8) + " more";
      break;
    }
    s += (k ? ", " : "") + names[which[k]];
  }
  return s;
}

}  // namespace

std::vector<BucketAssignment> assign_buckets(const std::vector<Tensor>& params, const DistributedDataParallelOptions& options) {
  struct Open {
    DType dtype;
    std::vector<size_t> params;
    int64_t bytes = 0;
  };
  std::vector<Open> open;
  std::vector<BucketAssignment> closed;
  auto limit = [&] {
    return static_cast<int64_t>((closed.empty() ? options.first_bucket_cap_mb() : options.bucket_cap_mb()) * kMiB);
  };
  for (size_t k = params.size(); k-- > 0;) {
    const DType d = params[k].dtype();
    auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) { return o.dtype == d; });
    if (it == open.end()) it = open.insert(open.end(), Open{d, {}, 0});
    it->params.push_back(k);
    it->bytes += static_cast<int64_t>(params[k].nbytes());
    if (it->bytes >= limit()) {
      closed.push_back({std::move(it->params), d});
      open.erase(it);
    }
  }
  for (auto& o : open) closed.push_back({std::move(o.params), o.dtype});
  return closed;
}

Reducer::Reducer(std::shared_ptr<Module> module, DistributedDataParallelOptions options)
    : module_(std::move(module)), options_(options) {
  GRAFT_CHECK(module_ != nullptr, "DistributedDataParallel", "a module", "null", "pass the model to replicate");
  GRAFT_CHECK(options_.bucket_cap_mb() > 0 && options_.first_bucket_cap_mb() > 0, "DistributedDataParallel",
              "bucket_cap_mb > 0 and first_bucket_cap_mb > 0",
              std::to_string(options_.bucket_cap_mb()) + " and " + std::to_string(options_.first_bucket_cap_mb()),
              "PyTorch's defaults are 25 and 1 (MiB)");
  GRAFT_CHECK(distributed::is_initialized(), "DistributedDataParallel", "an initialised process group", "none",
              "call graft::distributed::init_process_group() before wrapping the model");
  for (auto& item : module_->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    names_.push_back(item.key());
    params_.push_back(item.value());
  }
  for (auto& item : module_->named_buffers()) buffers_.push_back(item.value());

  // Every rank must hold the same model (Note [DDP buckets]); every rank learns what differs.
  const std::string mine = describe_parameters(names_, params_);
  const auto all = distributed::detail::all_gather_strings(mine);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    throw Error("DistributedDataParallel", "the same parameters (names, dtypes, shapes) on every rank",
                "rank 0 and rank " + std::to_string(r) + " differ: " + first_difference(all[0], all[r]) +
                    " (this is rank " + std::to_string(distributed::get_rank()) + ")",
                "construct the same model on every rank (the same code, options and dtype)");
  }
  for (const Tensor& p : params_)
    GRAFT_CHECK(p.is_contiguous(), "DistributedDataParallel", "contiguous parameters",
                "one with strides " + shape_str(p.strides()), "make the parameter contiguous before wrapping");

  // Rank 0's values everywhere.
  {
    NoGradGuard no_grad;
    std::vector<distributed::WorkPtr> works;
    for (size_t i = 0; i < params_.size(); ++i)
      works.push_back(distributed::detail::broadcast(params_[i], 0, "broadcast of parameter " + names_[i]));
    for (const Tensor& b : buffers_)
      if (b.defined() && b.is_contiguous()) works.push_back(distributed::detail::broadcast(b, 0, "broadcast of a buffer"));
    for (auto& w : works) w->wait();
  }

  // Buckets: reverse registration order, by dtype, the first one small.
  const std::vector<BucketAssignment> assigned = assign_buckets(params_, options_);
  bucket_of_.assign(params_.size(), 0);
  position_of_.assign(params_.size(), 0);
  for (size_t b = 0; b < assigned.size(); ++b) {
    Bucket bucket;
    int64_t n = 0;
    for (size_t j = 0; j < assigned[b].params.size(); ++j) {
      const size_t p = assigned[b].params[j];
      bucket.params.push_back(p);
      bucket.offsets.push_back(n);
      bucket_of_[p] = b;
      position_of_[p] = j;
      n += params_[p].numel();
    }
    bucket.numel = n;
    bucket.dtype = assigned[b].dtype;
    bucket.buffer = zeros({n}, TensorOptions().dtype(assigned[b].dtype));
    memory::set_category(*bucket.buffer.impl().storage, memory::Category::Gradients);
    buckets_.push_back(std::move(bucket));
  }
  // Gradients that exist already move into their slots.
  if (options_.gradient_as_bucket_view()) {
    NoGradGuard no_grad;
    for (size_t p = 0; p < params_.size(); ++p) {
      if (!params_[p].grad().defined()) continue;
      Tensor s = slot(p);
      s.copy_(params_[p].grad());
      params_[p].mutable_grad() = s;
    }
  }
  ready_.assign(params_.size(), 0);
  locally_used_.assign(params_.size(), 1);
  pending_.assign(buckets_.size(), 0);
  works_.assign(buckets_.size(), nullptr);
  for (size_t p = 0; p < params_.size(); ++p)
    hooks_.push_back(params_[p].register_post_accumulate_grad_hook([this, p](const Tensor&) { on_grad_ready(p); }));
}

Reducer::~Reducer() {
  for (auto& h : hooks_) h.remove();
  wait_launched();
}

void Reducer::wait_launched() noexcept {
  for (auto& w : works_) {
    if (!w) continue;
    try {
      w->wait();
    } catch (...) {
    }
    w.reset();
  }
  if (used_work_) {
    try {
      used_work_->wait();
    } catch (...) {
    }
    used_work_.reset();
  }
}

Tensor Reducer::slot(size_t p) const {
  const Bucket& b = buckets_[bucket_of_[p]];
  return b.buffer.narrow(0, b.offsets[position_of_[p]], params_[p].numel()).view(params_[p].sizes());
}

void Reducer::record(ReducerEvent::Kind kind, int64_t index) {
  events_.push_back({kind, index, std::chrono::steady_clock::now()});
}

void Reducer::prepare_forward() {
  if (expect_ && callback_queued_) {
    // A backward began but never reached its end (it threw): start over.
    wait_launched();
  } else if (expect_ && std::any_of(ready_.begin(), ready_.end(), [](char r) { return r != 0; })) {
    std::vector<size_t> missing;
    for (size_t p = 0; p < ready_.size(); ++p)
      if (!ready_[p]) missing.push_back(p);
    wait_launched();
    expect_ = false;
    throw Error("DistributedDataParallel.forward",
                "the previous iteration's gradient reduction to have finished before a new forward",
                "parameters that received no gradient: " + list_names(names_, missing),
                "with find_unused_parameters(true) DDP marks parameters that the forward did not use; or make "
                "every parameter take part in the loss");
  } else {
    wait_launched();
  }
  expect_ = false;
  callback_queued_ = false;
  if (options_.broadcast_buffers() && distributed::get_world_size() > 1 && !buffers_.empty()) {
    NoGradGuard no_grad;
    std::vector<distributed::WorkPtr> works;
    for (const Tensor& b : buffers_)
      if (b.defined() && b.is_contiguous()) works.push_back(distributed::detail::broadcast(b, 0, "broadcast of a buffer"));
    for (auto& w : works) w->wait();
  }
}

void Reducer::after_forward(const std::vector<Tensor>& outputs) {
  if (!GradMode::is_enabled()) return;
  expect_ = true;
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(locally_used_.begin(), locally_used_.end(), 1);
  if (!options_.find_unused_parameters()) return;
  GRAFT_CHECK(!outputs.empty(), "DistributedDataParallel.forward",
              "a forward that returns tensors (a Tensor, a tuple or a vector of them) with find_unused_parameters",
              "an output with no tensor in it", "return the tensors the loss is computed from");
  // The parameters whose AccumulateGrad the outputs' graph reaches.
  std::unordered_set<const TensorImpl*> reached;
  std::unordered_set<const autograd::Node*> seen;
  std::vector<autograd::Node*> stack;
  for (const Tensor& t : outputs) {
    if (!t.defined() || !t.requires_grad()) continue;
    if (t.is_leaf()) {
      reached.insert(&t.impl());
      continue;
    }
    if (auto* fn = t.grad_fn().get(); fn && seen.insert(fn).second) stack.push_back(fn);
  }
  while (!stack.empty()) {
    autograd::Node* n = stack.back();
    stack.pop_back();
    if (n->is_accumulate_grad()) reached.insert(static_cast<autograd::AccumulateGrad*>(n)->leaf().get());
    for (auto& e : n->next_edges)
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }
  for (size_t p = 0; p < params_.size(); ++p) locally_used_[p] = reached.count(&params_[p].impl()) ? 1 : 0;
}

int64_t Reducer::bucket_flat_offset(size_t bucket) const {
  int64_t a = 0;
  for (size_t b = 0; b < bucket; ++b) a += buckets_[b].numel;
  return a;
}

int64_t Reducer::flat_numel() const { return bucket_flat_offset(buckets_.size()); }

void Reducer::attach_sharded_optimizer(std::function<void()> on_synced) {
  GRAFT_CHECK(!sharded_, "ZeroRedundancyOptimizer", "one sharded optimiser per DistributedDataParallel", "a second one",
              "construct one ZeroRedundancyOptimizer for the model");
  sharded_ = true;
  on_synced_ = std::move(on_synced);
}

void Reducer::register_comm_hook(distributed::CommHook hook, distributed::CommHookOptions options) {
  const char* op = "DistributedDataParallel.register_comm_hook";
  GRAFT_CHECK(hook != nullptr, op, "a hook", "null", "pass a function (GradBucket&) -> WorkPtr");
  GRAFT_CHECK(comm_hook_ == nullptr, op, "one communication hook per model", "a second one",
              "register the hook once (ZeroRedundancyOptimizer stage 2 registers its reduce-scatter as one)");
  GRAFT_CHECK(!expect_ && !callback_queued_, op, "a hook registered between iterations",
              "a registration after a forward whose backward has not run", "register the hook before training");
  comm_hook_ = std::move(hook);
  hook_consumes_ = options.consumes_gradients();
  if (hook_consumes_) {
    // Only what the hook keeps lives between steps: the buckets go, and so do the full gradients.
    for (auto& b : buckets_) b.buffer = Tensor();
    for (Tensor& p : params_) p.mutable_grad() = Tensor();
  }
}

distributed::WorkPtr Reducer::launch(size_t b, const std::string& what) {
  const Bucket& bucket = buckets_[b];
  std::vector<Tensor> params;
  for (size_t p : bucket.params) params.push_back(params_[p]);
  distributed::GradBucket grad_bucket(b, buckets_.size(), bucket.buffer, std::move(params), bucket.offsets,
                                      bucket_flat_offset(b), what);
  if (!comm_hook_) return distributed::ddp_comm_hooks::allreduce_hook(nullptr, grad_bucket);
  distributed::WorkPtr work = comm_hook_(grad_bucket);
  GRAFT_CHECK(work != nullptr, "DistributedDataParallel comm hook", "a Work (the reduced buffer as its result)",
              "null for " + what, "return the Work of the collective (or Work::then of it)");
  return work;
}

void Reducer::take_result(size_t b, const distributed::Work& work) {
  if (hook_consumes_) return;
  const Bucket& bucket = buckets_[b];
  const Tensor r = work.result();
  if (!r.defined()) return;  // reduced in place (allreduce_hook)
  GRAFT_CHECK(r.numel() == bucket.numel && r.dtype() == bucket.dtype, "DistributedDataParallel comm hook",
              "a Work whose result is the reduced bucket (" + std::to_string(bucket.numel) + " " +
                  dtype_name(bucket.dtype) + " elements)",
              std::to_string(r.numel()) + " " + dtype_name(r.dtype()) + " elements",
              "return the collective's Work, or Work::then(work, f) with f returning the buffer's new values");
  if (r.data_ptr() == bucket.buffer.data_ptr()) return;
  NoGradGuard no_grad;
  bucket.buffer.copy_(r.reshape({-1}));
}

void Reducer::on_grad_ready(size_t p) {
  if (!expect_ || (!sync_enabled_ && !hook_consumes_)) return;
  if (!callback_queued_) {
    // The first gradient of this backward: the iteration starts.
    callback_queued_ = true;
    events_.clear();
    for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = static_cast<int64_t>(buckets_[b].params.size());
    next_launch_ = 0;
    autograd::queue_callback([this] { finalize(); });
    if (options_.find_unused_parameters()) {
      // Which parameters any rank used (to leave .grad alone where none did).
      used_map_ = empty({static_cast<int64_t>(params_.size())}, TensorOptions().dtype(kInt32));
      auto* u = used_map_.data_ptr<int32_t>();
      for (size_t q = 0; q < params_.size(); ++q) u[q] = locally_used_[q];
      used_work_ = distributed::detail::all_reduce(used_map_, distributed::ReduceOp::MAX, "all_reduce of the used-parameter map");
      for (size_t q = 0; q < params_.size(); ++q)
        if (!locally_used_[q]) {
          Bucket& bucket = buckets_[bucket_of_[q]];
          if (!bucket.buffer.defined()) {
            bucket.buffer = zeros({bucket.numel}, TensorOptions().dtype(bucket.dtype));
            memory::set_category(*bucket.buffer.impl().storage, memory::Category::Gradients);
          }
          slot(q).zero_();
          mark_ready(q);
        }
    }
  }
  GRAFT_CHECK(!ready_[p], "DistributedDataParallel", "each parameter's gradient once per backward",
              "a second gradient for " + names_[p],
              "a parameter whose AccumulateGrad runs twice in one backward (two backward calls through one forward, "
              "or a reentrant backward) cannot be all-reduced once; run one backward per forward");
  {
    NoGradGuard no_grad;
    Bucket& bucket = buckets_[bucket_of_[p]];
    if (!bucket.buffer.defined()) {  // a consuming hook's: a bucket for this backward only
      bucket.buffer = zeros({bucket.numel}, TensorOptions().dtype(bucket.dtype));
      memory::set_category(*bucket.buffer.impl().storage, memory::Category::Gradients);
    }
    const Tensor& g = params_[p].grad();
    Tensor s = slot(p);
    if (g.defined() && g.data_ptr() != s.data_ptr()) s.copy_(g);
    if (!g.defined()) s.zero_();
    if (hook_consumes_) {
      params_[p].mutable_grad() = Tensor();  // the bucket holds it until the hook has taken it
    } else if (options_.gradient_as_bucket_view()) {
      params_[p].mutable_grad() = s;
    }
  }
  record(ReducerEvent::Kind::kGradReady, static_cast<int64_t>(p));
  mark_ready(p);
}

void Reducer::mark_ready(size_t p) {
  ready_[p] = 1;
  --pending_[bucket_of_[p]];
  launch_ready_buckets();
}

void Reducer::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
    const size_t b = next_launch_++;
    const std::string what = "DDP bucket " + std::to_string(b) + " (" + std::to_string(buckets_[b].numel) + " " +
                             dtype_name(buckets_[b].dtype) + ": " + list_names(names_, buckets_[b].params) + ")";
    works_[b] = launch(b, what);
    record(ReducerEvent::Kind::kBucketQueued, static_cast<int64_t>(b));
  }
}

void Reducer::finalize() {
  record(ReducerEvent::Kind::kBackwardEnd, -1);
  const bool complete = next_launch_ == buckets_.size();
  std::vector<size_t> missing;
  for (size_t p = 0; p < ready_.size(); ++p)
    if (!ready_[p]) missing.push_back(p);
  const auto wait_start = std::chrono::steady_clock::now();
  std::exception_ptr error;
  for (size_t b = 0; b < works_.size(); ++b) {
    if (!works_[b]) continue;
    try {
      works_[b]->wait();
      if (!error) take_result(b, *works_[b]);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  comm_seconds_ = 0;
  for (size_t b = 0; b < works_.size(); ++b) {
    if (!works_[b]) continue;
    comm_seconds_ += std::chrono::duration<double>(works_[b]->completed_at() - works_[b]->started_at()).count();
    events_.push_back({ReducerEvent::Kind::kBucketDone, static_cast<int64_t>(b), works_[b]->completed_at()});
    works_[b].reset();
  }
  expect_ = false;
  callback_queued_ = false;
  if (error) {
    if (used_work_) {
      try {
        used_work_->wait();
      } catch (...) {
      }
      used_work_.reset();
    }
    std::rethrow_exception(error);
  }
  if (!complete) {
    wait_launched();
    throw Error("DistributedDataParallel", "a gradient for every parameter in each backward",
                "parameters that received none: " + list_names(names_, missing) + " (rank " +
                    std::to_string(distributed::get_rank()) + ")",
                "pass DistributedDataParallelOptions().find_unused_parameters(true) when some parameters do not take "
                "part in every forward, or make every output take part in the loss");
  }
  std::vector<char> globally_used(params_.size(), 1);
  if (used_work_) {
    used_work_->wait();
    used_work_.reset();
    const auto* u = used_map_.data_ptr<int32_t>();
    for (size_t p = 0; p < params_.size(); ++p) globally_used[p] = u[p] != 0;
  }
  if (hook_consumes_) {
    for (auto& b : buckets_) b.buffer = Tensor();  // the hook has what it keeps
    return;
  }
  deliver(globally_used);
}

void Reducer::sync_now() {
  if (hook_consumes_) return;  // every backward's hook already took its gradients
  // The gradients as they are (accumulated under no_sync), every bucket at once.
  wait_launched();
  {
    NoGradGuard no_grad;
    for (size_t p = 0; p < params_.size(); ++p) {
      const Tensor& g = params_[p].grad();
      Tensor s = slot(p);
      if (!g.defined()) s.zero_();
      else if (g.data_ptr() != s.data_ptr()) s.copy_(g);
    }
  }
  for (size_t b = 0; b < buckets_.size(); ++b) works_[b] = launch(b, "DDP bucket " + std::to_string(b) + " (sync_now)");
  std::exception_ptr error;
  for (size_t b = 0; b < works_.size(); ++b) {
    try {
      works_[b]->wait();
      if (!error) take_result(b, *works_[b]);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
    works_[b].reset();
  }
  if (error) std::rethrow_exception(error);
  deliver(std::vector<char>(params_.size(), 1));
}

void Reducer::deliver(const std::vector<char>& used) {
  NoGradGuard no_grad;
  for (size_t p = 0; p < params_.size(); ++p) {
    if (!used[p]) continue;  // no rank used it: .grad stays as it was (PyTorch)
    if (options_.gradient_as_bucket_view()) {
      params_[p].mutable_grad() = slot(p);
    } else {
      Tensor& g = params_[p].mutable_grad();
      if (g.defined()) g.copy_(slot(p));
      else g = slot(p).clone();
    }
  }
  if (on_synced_) on_synced_();
}

}  // namespace graft::nn::parallel
