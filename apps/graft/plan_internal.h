// What `graft plan` (plan.cpp) and --memory-budget's choice (budget.cpp) share: the data a plan
// stands on and the prediction of one configuration of graft train's run on shapes alone; and the
// plan of each rank of an mpirun run, with stand-ins for DDP's and ZeRO's memory on meta (Note
// [Planning a rank]). Internal to apps/graft.
#pragma once

#include <graft/graft.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "run_setup.h"
#include "task.h"

namespace graft::cli {

struct BudgetChoice;  // plan.h

// What every plan of one data set stands on: the data, loaded once (a budget's search plans many
// configurations of it), and what loading it cost.
struct PlanInputs {
  TaskData d;
  int64_t loading_peak = 0;
  memory::Stats loaded;  // the CPU's counters after loading: the data set, live through the run
};


struct Prediction {
  memory::Plan step;        // the training step's, the data set included
  int64_t eval_peak = 0;    // evaluation's
  int64_t eval_batch = 0;   // held-out examples per evaluation batch
  int64_t setup_peak = 0;   // one rank's: while DDP and ZeRO are built (0 in one process without them)
  int64_t run_peak = 0;     // the most of the step's, the loading's, the setup's and evaluation's
  // Live after a step and its evaluation, by memory category (the figures graft train prints per
  // rank at the end): the parameters, gradients and optimiser state between steps.
  std::array<int64_t, memory::kNumCategories> between_steps{};
};

// One rank of a data-parallel run (Note [Planning a rank] below): `world` ranks, this one
// `rank`, ZeRO stage `zero` (0: DDP alone). world 1 with zero 0 is the one-process run.
struct RankSpec {
  int64_t world = 1, rank = 0;
  int zero = 0;
  bool distributed() const noexcept { return world > 1 || zero > 0; }
};

// Loads the data set as graft train does, measuring its bytes and its loading's peak.
PlanInputs load_inputs(const TrainConfig& cfg, const Task& task);

// The run of `cfg` on shapes alone (Note [What graft plan counts] in plan.cpp); with a distributed
// `rank`, that rank's run under mpirun (Note [Planning a rank] below).
Prediction predict(const TrainConfig& cfg, const Task& task, const PlanInputs& in, const RankSpec& rank = {});

// The modules checkpoint_sequential may split graft train's model into (with --chunked-loss, less
// the output layer, which runs outside the segments).
int64_t segmentable_modules(const TrainConfig& cfg, const Task& task, const TaskData& d);

// --memory-budget's choice for `given` (Note [Memory budget] in budget.cpp); graft::Error naming
// `command` when nothing fits.
BudgetChoice choose_for_budget(const TrainConfig& given, const Task& task, const PlanInputs& in,
                               const std::string& command);

// Note [Planning a rank]
// Under mpirun (Note [graft train under mpirun] in train.cpp) each rank runs graft train's step on
// its share of the data with DistributedDataParallel around the model and, with --zero, a
// ZeroRedundancyOptimizer, and these hold memory of their own, at moments of their own:
//  - DDP's buckets (Note [DDP buckets]): a flat buffer per bucket, the gradients' bytes in all, made
//    when DDP is built and live for the whole run (the gradients are views of them): from the start
//    of backward the gradients are whole, and each parameter's gradient, as backward makes it, is
//    copied into its slot and freed;
//  - ZeRO (Note [ZeRO shards]): this rank's shard of the flat parameters and the shard's gradient,
//    live for the whole run, the inner optimiser's state at the shard's size, and in each step a
//    buffer of all the parameters, the all-gather of the updated shards;
//  - ZeRO stage 2: no buckets between steps; a bucket is made in backward when its first gradient
//    arrives, then this rank's piece of its reduce-scatter, and both live to the end of backward.
// The plan runs the step on meta with stand-ins (PlannedReducer, PlannedZero) that allocate what
// these allocate, when they do, with the library's own bucket assignment
// (nn::parallel::assign_buckets) and shards (distributed::FlatShards): the sizes are the run's. The
// ranks differ only in their shards (the last ones are smaller when the parameter count does not
// divide; at stage 2 a bucket's piece is the part of it in the rank's shard), so every rank is
// planned, ranks with the same pieces once; the largest rank's peak is the run's (GRAFT_MEMORY_LIMIT
// holds each rank to it). Each rank loads the whole data set and evaluates on every held-out example
// as one process does; its loader's batches ahead are its share's (ceil(examples / ranks)), the
// last one at its own size when the first step's batches ahead reach it (a share of 600 in batches
// of 500: a batch of 100 being built, not 500; one process's plan counts a whole batch there, as
// its --budget search extrapolates it to other batch sizes). One process's savings (checkpoint
// segments, the chunked loss, the step in backward, micro-batches, a memory budget's choice) are
// refused, as graft train refuses them under mpirun. tests/cli/test_plan_ranks.sh runs the plan
// against mpirun -np 2 graft train.

// DDP's reducer on meta (Note [Planning a rank]): the Reducer's buckets, filled by the same
// post-accumulate-grad hooks at the same moments; no collective moves anything here.
class PlannedReducer {
 public:
  explicit PlannedReducer(std::vector<Tensor> params) : params_(std::move(params)) {
    const auto assigned = nn::parallel::assign_buckets(params_, nn::parallel::DistributedDataParallelOptions());
    bucket_of_.assign(params_.size(), 0);
    offset_of_.assign(params_.size(), 0);
    for (size_t b = 0; b < assigned.size(); ++b) {
      Bucket bucket;
      bucket.dtype = assigned[b].dtype;
      bucket.flat_offset = numel_;
      for (const size_t p : assigned[b].params) {
        bucket.params.push_back(p);
        bucket_of_[p] = b;
        offset_of_[p] = bucket.numel;
        bucket.numel += params_[p].numel();
      }
      numel_ += bucket.numel;
      bucket.buffer = new_buffer(bucket);
      buckets_.push_back(std::move(bucket));
    }
    pending_.assign(buckets_.size(), 0);
    for (size_t p = 0; p < params_.size(); ++p)
      hooks_.push_back(params_[p].register_post_accumulate_grad_hook([this, p](const Tensor&) { on_grad_ready(p); }));
  }
  ~PlannedReducer() {
    for (auto& h : hooks_) h.remove();
  }
  PlannedReducer(const PlannedReducer&) = delete;
  PlannedReducer& operator=(const PlannedReducer&) = delete;

  int64_t flat_numel() const noexcept { return numel_; }

  // ZeRO stage 2's consuming communication hook: the buckets go and the gradients with them; from
  // now on each bucket lives only during backward and hands `rank`'s piece of it to a reduce-scatter.
  void consume(const distributed::FlatShards& shards, int64_t rank) {
    consumes_ = true;
    for (Bucket& b : buckets_) {
      b.piece_numel = shards.overlap(rank, b.flat_offset, b.numel).size();
      b.buffer = Tensor();
    }
    for (Tensor& p : params_) p.mutable_grad() = Tensor();
  }

 private:
  struct Bucket {
    std::vector<size_t> params;
    int64_t numel = 0, flat_offset = 0;  // its elements, and where they start in the flat order (ZeRO's)
    DType dtype = kFloat32;
    Tensor buffer;  // stage 2: only during backward
    Tensor piece;   // stage 2: this rank's part of its reduce-scatter, to the end of backward
    int64_t piece_numel = 0;
  };

  static Tensor new_buffer(const Bucket& b) {
    Tensor t = zeros({b.numel}, TensorOptions().dtype(b.dtype).device(kMeta));
    memory::set_category(*t.impl().storage, memory::Category::Gradients);
    return t;
  }
  // Reducer::on_grad_ready's memory: the gradient into its slot (.grad a view of it), or at stage 2
  // into a bucket made now; a bucket whose gradients are all in is launched (stage 2: its piece).
  void on_grad_ready(size_t p) {
    if (!in_backward_) {
      in_backward_ = true;
      for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = static_cast<int64_t>(buckets_[b].params.size());
      next_launch_ = 0;
      autograd::queue_callback([this] { finalize(); });
    }
    NoGradGuard no_grad;
    Bucket& bucket = buckets_[bucket_of_[p]];
    if (!bucket.buffer.defined()) bucket.buffer = new_buffer(bucket);
    params_[p].mutable_grad() =
        consumes_ ? Tensor() : bucket.buffer.narrow(0, offset_of_[p], params_[p].numel()).view(params_[p].sizes());
    --pending_[bucket_of_[p]];
    while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
      Bucket& b = buckets_[next_launch_++];
      if (consumes_) b.piece = empty({b.piece_numel}, TensorOptions().dtype(b.dtype).device(kMeta));
    }
  }
  // The end of backward (Reducer::finalize): stage 2's pieces go as their reduce-scatters are
  // waited for, then the buckets.
  void finalize() {
    in_backward_ = false;
    if (!consumes_) return;
    for (Bucket& b : buckets_) b.piece = Tensor();
    for (Bucket& b : buckets_) b.buffer = Tensor();
  }

  std::vector<Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<int64_t> offset_of_;  // of each parameter's slot in its bucket
  std::vector<int64_t> pending_;
  std::vector<HookHandle> hooks_;
  int64_t numel_ = 0;
  size_t next_launch_ = 0;
  bool in_backward_ = false, consumes_ = false;
};

// What one rank holds beside its model, on meta, built in graft train's order: DDP's buckets, then
// the optimiser.
struct PlannedRank {
  std::shared_ptr<PlannedReducer> reducer;  // DDP's buckets and the hooks that fill them
  std::unique_ptr<optim::Optimizer> opt;    // what graft train steps: the model's, or ZeRO's stand-in
  optim::Optimizer* state = nullptr;        // whose state memory::plan saves and restores between probes
};

// Ranks [first, last] of a run, planned alike.
struct RankRange {
  int64_t first = 0, last = 0;
  Prediction pred;
};

// ZeroRedundancyOptimizer on meta (Note [Planning a rank]): the shard (the inner optimiser's one
// parameter) and its gradient; step() steps the inner optimiser and holds the all-gather's buffer.
class PlannedZero final : public optim::Optimizer {
 public:
  PlannedZero(Tensor shard, std::unique_ptr<optim::Optimizer> inner, std::vector<Tensor> params, int64_t flat_numel)
      : Optimizer({optim::OptimizerParamGroup(std::vector<Tensor>{shard})}, inner->defaults().clone()),
        params_(std::move(params)),
        shard_(std::move(shard)),
        inner_(std::move(inner)),
        flat_numel_(flat_numel) {
    shard_grad_ = zeros({shard_.numel()}, TensorOptions().dtype(shard_.dtype()).device(kMeta));
    memory::set_category(*shard_grad_.impl().storage, memory::Category::Gradients);
    shard_.mutable_grad() = shard_grad_;
  }
  Tensor step(optim::LossClosure) override {
    NoGradGuard no_grad;
    shard_.mutable_grad() = shard_grad_;
    inner_->step();
    const Tensor gathered = empty({flat_numel_}, TensorOptions().dtype(shard_.dtype()).device(kMeta));
    ++steps_taken_;
    return {};
  }
  void zero_grad(bool set_to_none) override {
    NoGradGuard no_grad;
    for (Tensor& p : params_) {
      if (!p.grad().defined()) continue;
      if (set_to_none) p.mutable_grad() = Tensor();
      else p.mutable_grad().zero_();
    }
    shard_grad_.zero_();
    shard_.mutable_grad() = shard_grad_;
  }
  optim::Optimizer& inner() noexcept { return *inner_; }

 private:
  std::vector<Tensor> params_;
  Tensor shard_, shard_grad_;
  std::unique_ptr<optim::Optimizer> inner_;
  int64_t flat_numel_;
};

inline PlannedRank plan_rank(const TrainConfig& cfg, nn::Sequential& model, const RankSpec& spec) {
  PlannedRank r;
  std::vector<Tensor> params;
  for (const Tensor& p : model->parameters())
    if (p.requires_grad()) params.push_back(p);
  r.reducer = std::make_shared<PlannedReducer>(params);
  if (spec.zero == 0) {
    r.opt = make_optimizer(cfg, model->parameters());
    r.state = r.opt.get();
    return r;
  }
  const distributed::FlatShards shards(r.reducer->flat_numel(), spec.world);
  Tensor shard = empty({shards.count(spec.rank)}, TensorOptions().dtype(params.front().dtype()).device(kMeta));
  shard.requires_grad_(true);
  std::unique_ptr<optim::Optimizer> inner = make_optimizer(cfg, {shard});
  r.state = inner.get();
  r.opt = std::make_unique<PlannedZero>(shard, std::move(inner), params, shards.numel);
  if (spec.zero == 2) r.reducer->consume(shards, spec.rank);
  return r;
}


// Every rank of `world` at ZeRO stage `zero`: consecutive ranks with the same shard pieces in one
// range, and each different set of pieces planned once.
inline std::vector<RankRange> plan_ranks(const TrainConfig& cfg, const Task& task, const PlanInputs& in, int64_t world,
                                         int zero) {
  // The buckets' extents in the flat order (ZeRO's), from the model's parameters on meta.
  std::vector<std::pair<int64_t, int64_t>> extents;  // (flat offset, elements)
  int64_t numel = 0;
  {
    DefaultDeviceGuard on_meta(kMeta);
    const nn::Sequential model = make_model(cfg, task, in.d);
    std::vector<Tensor> params;
    for (const Tensor& p : model->parameters())
      if (p.requires_grad()) params.push_back(p);
    for (const auto& bucket : nn::parallel::assign_buckets(params, nn::parallel::DistributedDataParallelOptions())) {
      int64_t n = 0;
      for (const size_t p : bucket.params) n += params[p].numel();
      extents.emplace_back(numel, n);
      numel += n;
    }
  }
  const distributed::FlatShards shards(numel, world);
  GRAFT_CHECK(zero == 0 || shards.count(world - 1) > 0, "graft plan --zero", "at least one element per rank",
              std::to_string(numel) + " elements over " + std::to_string(world) + " ranks",
              "use fewer ranks or a larger model (ZeroRedundancyOptimizer refuses an empty shard)");
  auto pieces = [&](int64_t r) {
    std::vector<int64_t> v;
    if (zero > 0) v.push_back(shards.count(r));
    if (zero == 2)
      for (const auto& [offset, n] : extents) v.push_back(shards.overlap(r, offset, n).size());
    return v;
  };
  std::map<std::vector<int64_t>, Prediction> planned;
  std::vector<RankRange> ranges;
  std::vector<int64_t> previous;
  for (int64_t r = 0; r < world; ++r) {
    std::vector<int64_t> mine = pieces(r);
    if (!ranges.empty() && mine == previous) {
      ranges.back().last = r;
      continue;
    }
    auto it = planned.find(mine);
    if (it == planned.end()) it = planned.emplace(mine, predict(cfg, task, in, RankSpec{world, r, zero})).first;
    ranges.push_back({r, r, it->second});
    previous = std::move(mine);
  }
  return ranges;
}

}  // namespace graft::cli
