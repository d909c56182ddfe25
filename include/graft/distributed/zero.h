// graft::optim::ZeroRedundancyOptimizer: ZeRO (Rajbhandari et al., 2020) on DistributedDataParallel.
//
//   nn::parallel::DistributedDataParallel ddp(model);
//   optim::ZeroRedundancyOptimizer opt(
//       ddp.parameters(), [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p,
//       optim::AdamOptions(1e-3)); }, optim::ZeroRedundancyOptions().stage(2), &ddp.reducer());
//   ... loss.backward(); opt.step(); opt.zero_grad();
//
// Note [ZeRO shards]
// The parameters (one floating dtype) are laid end to end in the order of DDP's buckets, N elements
// in all; rank r owns the elements [r C, (r + 1) C) with C = ceil(N / world_size) (the last rank
// fewer; distributed::FlatShards below, which every use of these numbers goes through: the
// optimiser's shard, its all-gathers, stage 2's reduce-scatter counts per bucket), so every rank
// holds the same share up to rounding. The inner optimiser (made by the
// factory) sees one parameter: this rank's shard, a flat copy of those elements, whose .grad is the
// shard of the averaged gradient. Its state (Adam's two moments) is thus 1/N of a full optimiser's.
// step() copies the current parameter values into the shard, steps it, and all-gathers the shards
// so that every rank ends with the same updated parameters. Stage 1 takes the shard's gradient from
// the all-reduced buckets after backward; stage 2 registers a communication hook that
// reduce-scatters each bucket straight into it (Note [DDP communication hooks]), so no rank keeps the
// full gradient between steps. clip_grad_norm_ and
// GradAccumulator's rescaling act on the shard, the norm all-reduced over the ranks, so clipping
// is the global one. Per-element optimisers only (SGD, Adam, AdamW, Adagrad, RMSprop: an update that
// needs a whole tensor, as a per-layer trust ratio, would see pieces), one parameter group.
// state_dict() is this rank's shard; consolidate_state_dict() gathers the full one on a rank.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "graft/distributed/ddp.h"
#include "graft/optim/optimizer.h"

namespace graft::distributed {

// Note [ZeRO shards]'s arithmetic, the one place it is written: `numel` elements laid end to end
// over `world` ranks, rank r owning [begin(r), end(r)) with chunk = ceil(numel / world); the last
// ranks own fewer (none, when numel < world ranks' worth), nothing is padded.
struct FlatShards {
  int64_t numel = 0, world = 1, chunk = 0;
  FlatShards() = default;
  FlatShards(int64_t numel_, int64_t world_) : numel(numel_), world(world_), chunk((numel_ + world_ - 1) / world_) {}
  int64_t begin(int64_t rank) const noexcept { return std::min(numel, rank * chunk); }
  int64_t end(int64_t rank) const noexcept { return std::min(numel, (rank + 1) * chunk); }
  int64_t count(int64_t rank) const noexcept { return end(rank) - begin(rank); }
  // count(r) for every rank (an all-gather of the shards).
  std::vector<int64_t> counts() const { return counts_in(0, numel); }
  // The flat indices [lo, hi) of [offset, offset + n) that rank owns (lo >= hi: none).
  struct Range {
    int64_t lo = 0, hi = 0;
    int64_t size() const noexcept { return std::max<int64_t>(0, hi - lo); }
  };
  Range overlap(int64_t rank, int64_t offset, int64_t n) const noexcept {
    return {std::max(offset, begin(rank)), std::min(offset + n, end(rank))};
  }
  // overlap(r, offset, n).size() for every rank (a bucket's reduce-scatter counts).
  std::vector<int64_t> counts_in(int64_t offset, int64_t n) const {
    std::vector<int64_t> c(static_cast<size_t>(world));
    for (int64_t r = 0; r < world; ++r) c[static_cast<size_t>(r)] = overlap(r, offset, n).size();
    return c;
  }
};

}  // namespace graft::distributed

namespace graft::optim {

struct ZeroRedundancyOptions {
  GRAFT_ARG(int, stage) = 1;  // 1: optimiser state sharded; 2: gradients too
};

class ZeroRedundancyOptimizer final : public Optimizer {
 public:
  using Factory = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;
  ZeroRedundancyOptimizer(std::vector<Tensor> params, Factory make_optimizer, ZeroRedundancyOptions options,
                          nn::parallel::Reducer* reducer);
  ~ZeroRedundancyOptimizer() override;

  Tensor step(LossClosure closure = nullptr) override;
  void zero_grad(bool set_to_none = true) override;
  double clip_grad_norm_(double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false) override;

  // This rank's share of the N elements (C, or fewer on the last ranks).
  int64_t shard_numel() const noexcept { return shard_.numel(); }
  int64_t chunk() const noexcept { return shards_.chunk; }
  int64_t gradient_shard_bytes() const noexcept { return static_cast<int64_t>(shard_grad_.nbytes()); }
  Optimizer& inner() noexcept { return *inner_; }
  // Stage 2: every parameter's .grad from the ranks' shards (an all-gather; every rank must call it),
  // for what needs whole gradients now and then, as a gradient monitor's sampled steps; the
  // gradients are views of one flat buffer until release_gathered_gradients() (or zero_grad()).
  void gather_gradients();
  void release_gathered_gradients();

  // The state dict a single-process optimiser of the inner kind over the model's parameters would
  // have (Note [Optimizer state dict]), on rank `to` (empty elsewhere), for a checkpoint that loads
  // into one process or into any number of ranks. Every rank must call it; `to` outside [0, world
  // size) is an error.
  OrderedDict<std::string, Tensor> consolidate_state_dict(int to = 0);
  // Loads such a state dict (from a single process, or consolidated at another world size): each
  // rank takes its shard. A parameter without state in it (one that never had a gradient) keeps
  // none: its elements start from zero.
  void load_consolidated_state_dict(const OrderedDict<std::string, Tensor>& state_dict);

 private:
  struct Layout {
    std::vector<Tensor> params;
    std::vector<int64_t> offsets;
    distributed::FlatShards shards;
    Tensor shard;
    std::unique_ptr<Optimizer> inner;
  };
  static Layout build(const std::vector<Tensor>& params, const Factory& make_optimizer,
                      const ZeroRedundancyOptions& options, nn::parallel::Reducer* reducer);
  ZeroRedundancyOptimizer(Layout&& layout, ZeroRedundancyOptions options, nn::parallel::Reducer* reducer);
  void gather_gradient_shard();  // stage 1: from the buckets

  std::vector<Tensor> params_;
  std::vector<int64_t> flat_offset_;  // of each parameter in the flat order
  nn::parallel::Reducer* reducer_;
  ZeroRedundancyOptions options_;
  distributed::FlatShards shards_;
  int64_t rank_ = 0;
  Tensor shard_;       // leaf: this rank's elements
  Tensor shard_grad_;  // its gradient (shard_.grad())
  std::unique_ptr<Optimizer> inner_;
};

}  // namespace graft::optim
