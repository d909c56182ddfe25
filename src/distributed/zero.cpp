// ZeroRedundancyOptimizer (Note [ZeRO shards] in graft/distributed/zero.h).
#include "graft/distributed/zero.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "graft/distributed/process_group.h"

namespace graft::optim {

namespace {

// Calls fn(i, [lo, hi) in parameter i's flat elements, [lo, hi) in the shard) for every parameter
// whose elements overlap rank's shard.
template <class F>
void for_each_overlap(const std::vector<Tensor>& params, const std::vector<int64_t>& offsets,
                      const distributed::FlatShards& shards, int64_t rank, F&& fn) {
  for (size_t i = 0; i < params.size(); ++i) {
    const auto r = shards.overlap(rank, offsets[i], params[i].numel());
    if (r.size() > 0) fn(i, r.lo - offsets[i], r.lo - shards.begin(rank), r.size());
  }
}

}  // namespace

ZeroRedundancyOptimizer::Layout ZeroRedundancyOptimizer::build(const std::vector<Tensor>& params, const Factory& make_optimizer,
                                                                const ZeroRedundancyOptions& options,
                                                                nn::parallel::Reducer* reducer) {
  const char* op = "ZeroRedundancyOptimizer";
  GRAFT_CHECK(options.stage() == 1 || options.stage() == 2, op, "stage 1 or 2", std::to_string(options.stage()),
              "1 shards the optimiser state, 2 the gradients too");
  GRAFT_CHECK(reducer != nullptr, op, "the DistributedDataParallel reducer (&ddp.reducer())", "null",
              "wrap the model in nn::parallel::DistributedDataParallel first; the shards follow its buckets");
  GRAFT_CHECK(make_optimizer != nullptr, op, "an optimiser factory", "null",
              "pass e.g. [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p); }");
  // The flat order is the buckets' (Reducer::Sharding).
  const auto& rp = reducer->parameters();
  std::unordered_map<const TensorImpl*, size_t> index;
  for (size_t i = 0; i < rp.size(); ++i) index[&rp[i].impl()] = i;
  size_t given = 0;
  for (const Tensor& p : params)
    if (p.requires_grad()) {
      ++given;
      GRAFT_CHECK(index.count(&p.impl()), op, "the parameters of the DDP model", "a tensor that is not one of them",
                  "pass ddp.parameters()");
    }
  GRAFT_CHECK(given == rp.size() && !rp.empty(), op, std::to_string(rp.size()) + " parameters (the DDP model's)",
              std::to_string(given), "pass ddp.parameters()");
  Layout l;
  l.params.assign(rp.size(), Tensor());
  l.offsets.assign(rp.size(), 0);
  const auto& buckets = reducer->buckets();
  for (size_t b = 0; b < buckets.size(); ++b)
    for (size_t j = 0; j < buckets[b].params.size(); ++j) {
      const size_t p = buckets[b].params[j];
      l.params[p] = rp[p];
      l.offsets[p] = reducer->bucket_flat_offset(b) + buckets[b].offsets[j];
    }
  const DType dtype = rp[0].dtype();
  for (const Tensor& p : rp)
    GRAFT_CHECK(p.dtype() == dtype, op, "parameters of one dtype", std::string(dtype_name(dtype)) + " and " + dtype_name(p.dtype()),
                "convert the model to one dtype (model->to(...))");
  const int64_t world = distributed::get_world_size(), rank = distributed::get_rank();
  l.shards = distributed::FlatShards(reducer->flat_numel(), world);
  const int64_t mine = l.shards.count(rank);
  GRAFT_CHECK(mine > 0, op, "at least one element per rank", std::to_string(l.shards.numel) + " elements over " + std::to_string(world) + " ranks",
              "use fewer ranks or a larger model");
  l.shard = empty({mine}, TensorOptions().dtype(dtype));
  {
    NoGradGuard no_grad;
    for_each_overlap(l.params, l.offsets, l.shards, rank, [&](size_t i, int64_t at, int64_t in_shard, int64_t n) {
      l.shard.narrow(0, in_shard, n).copy_(l.params[i].view({-1}).narrow(0, at, n));
    });
  }
  l.shard.requires_grad_(true);
  l.inner = make_optimizer({l.shard});
  GRAFT_CHECK(l.inner != nullptr && l.inner->param_groups().size() == 1, op, "a factory returning an optimiser of one group",
              l.inner ? std::to_string(l.inner->param_groups().size()) + " groups" : "null",
              "build the optimiser from the list it is given");
  return l;
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, Factory make_optimizer,
                                                 ZeroRedundancyOptions options, nn::parallel::Reducer* reducer)
    : ZeroRedundancyOptimizer(build(params, make_optimizer, options, reducer), options, reducer) {}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(Layout&& l, ZeroRedundancyOptions options, nn::parallel::Reducer* reducer)
    // This optimiser's one parameter is the shard too (GradAccumulator rescales and clips it).
    : Optimizer({OptimizerParamGroup(std::vector<Tensor>{l.shard})}, l.inner->defaults().clone()),
      params_(std::move(l.params)),
      flat_offset_(std::move(l.offsets)),
      reducer_(reducer),
      options_(options),
      shards_(l.shards),
      rank_(distributed::get_rank()),
      shard_(std::move(l.shard)),
      inner_(std::move(l.inner)) {
  shard_grad_ = zeros({shard_.numel()}, TensorOptions().dtype(shard_.dtype()));
  memory::set_category(*shard_grad_.impl().storage, memory::Category::Gradients);
  shard_.mutable_grad() = shard_grad_;
  if (options_.stage() == 1) {
    reducer_->attach_sharded_optimizer([this] { gather_gradient_shard(); });
    return;
  }
  // Stage 2: each bucket reduce-scattered (AVG), this rank's part added into the gradient shard
  // (Note [DDP communication hooks]). The hook holds the shard's gradient, not this optimiser.
  reducer_->attach_sharded_optimizer(nullptr);
  Tensor shard_grad = shard_grad_;
  reducer_->register_comm_hook(
      [shards = shards_, rank = rank_, shard_grad](distributed::GradBucket& bucket) {
        const int64_t a = bucket.flat_offset(), n = bucket.buffer().numel();
        const std::vector<int64_t> counts = shards.counts_in(a, n);
        Tensor piece = empty({counts[static_cast<size_t>(rank)]}, TensorOptions().dtype(bucket.buffer().dtype()));
        const int64_t lo = shards.overlap(rank, a, n).lo - shards.begin(rank);
        auto work = distributed::detail::reduce_scatter_v(piece, bucket.buffer(), counts, distributed::ReduceOp::AVG,
                                                          "reduce_scatter of " + bucket.label());
        return distributed::Work::then(
            std::move(work),
            [shard_grad, piece, lo](const Tensor&) {
              NoGradGuard no_grad;
              if (piece.numel() > 0) shard_grad.narrow(0, lo, piece.numel()).add_(piece);
              return Tensor();  // consumed: the reducer reads no result
            },
            "ZeRO stage 2 reduce_scatter of " + bucket.label());
      },
      distributed::CommHookOptions().consumes_gradients(true));
}

ZeroRedundancyOptimizer::~ZeroRedundancyOptimizer() = default;

void ZeroRedundancyOptimizer::gather_gradient_shard() {
  NoGradGuard no_grad;
  shard_grad_.zero_();
  for_each_overlap(params_, flat_offset_, shards_, rank_, [&](size_t i, int64_t at, int64_t in_shard, int64_t n) {
    const Tensor& g = params_[i].grad();
    if (g.defined()) shard_grad_.narrow(0, in_shard, n).copy_(g.reshape({-1}).narrow(0, at, n));
  });
}

Tensor ZeroRedundancyOptimizer::step(LossClosure closure) {
  Tensor loss;
  if (closure) {
    EnableGradGuard enable;
    loss = closure();
  }
  NoGradGuard no_grad;
  // The shard from the parameters as they are now (a load_state_dict or a manual edit included).
  for_each_overlap(params_, flat_offset_, shards_, rank_, [&](size_t i, int64_t at, int64_t in_shard, int64_t n) {
    shard_.narrow(0, in_shard, n).copy_(params_[i].view({-1}).narrow(0, at, n));
  });
  shard_.mutable_grad() = shard_grad_;
  // Schedulers set this optimiser's options (lr; OneCycleLR also momentum or betas): the inner one
  // steps with them.
  inner_->param_groups()[0].set_options(param_groups_[0].options().clone());
  inner_->step();
  // Every rank's updated shard, into every parameter.
  Tensor flat = empty({shards_.numel}, TensorOptions().dtype(shard_.dtype()));
  distributed::detail::all_gather_v(flat, shard_, shards_.counts(), "all_gather of the ZeRO parameter shards")->wait();
  for (size_t i = 0; i < params_.size(); ++i)
    params_[i].view({-1}).copy_(flat.narrow(0, flat_offset_[i], params_[i].numel()));
  ++steps_taken_;
  return loss;
}

void ZeroRedundancyOptimizer::gather_gradients() {
  NoGradGuard no_grad;
  Tensor flat = empty({shards_.numel}, TensorOptions().dtype(shard_grad_.dtype()));
  memory::set_category(*flat.impl().storage, memory::Category::Gradients);
  distributed::detail::all_gather_v(flat, shard_grad_, shards_.counts(), "all_gather of the ZeRO gradient shards")
      ->wait();
  for (size_t i = 0; i < params_.size(); ++i)
    params_[i].mutable_grad() = flat.narrow(0, flat_offset_[i], params_[i].numel()).view(params_[i].sizes());
}

void ZeroRedundancyOptimizer::release_gathered_gradients() {
  if (options_.stage() != 2) return;
  for (Tensor& p : params_) p.mutable_grad() = Tensor();
}

void ZeroRedundancyOptimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (Tensor& p : params_) {
    if (!p.grad().defined()) continue;
    if (set_to_none) p.mutable_grad() = Tensor();
    else p.mutable_grad().zero_();
  }
  shard_grad_.zero_();  // kept allocated: it is the reduce-scatter's destination
  shard_.mutable_grad() = shard_grad_;
}

double ZeroRedundancyOptimizer::clip_grad_norm_(double max_norm, double norm_type, bool error_if_nonfinite) {
  NoGradGuard no_grad;
  GRAFT_CHECK(norm_type > 0, "clip_grad_norm_", "norm_type > 0 or infinity", std::to_string(norm_type),
              "use 2 (Euclidean), 1 or infinity");
  const bool inf = std::isinf(norm_type);
  const Tensor g = shard_grad_.to(kFloat64);
  double local = 0;
  if (shard_grad_.numel() > 0) {
    if (inf) local = g.abs().max().item<double>();
    else if (norm_type == 2.0) local = (g * g).sum().item<double>();
    else local = g.abs().pow(norm_type).sum().item<double>();
  }
  Tensor t = full({1}, local, TensorOptions().dtype(kFloat64));
  distributed::detail::all_reduce(t, inf ? distributed::ReduceOp::MAX : distributed::ReduceOp::SUM,
                                  "all_reduce of the gradient norm")
      ->wait();
  double total = inf ? t.item<double>() : std::pow(t.item<double>(), 1.0 / norm_type);
  if (shard_grad_.dtype() == kFloat32) total = static_cast<double>(static_cast<float>(total));
  GRAFT_CHECK(!error_if_nonfinite || std::isfinite(total), "clip_grad_norm_", "a finite total norm of the gradients",
              std::to_string(total), "a gradient holds nan or inf; pass error_if_nonfinite = false to scale anyway");
  double coef = (1.0 / (total + 1e-6)) * max_norm;
  if (coef > 1.0) coef = 1.0;
  if (coef < 1.0) shard_grad_.mul_(coef);
  return total;
}

// Note [Optimizer state dict] keys of the shard's optimiser ("state.0.exp_avg", "param_groups.0.lr")
// become a single-process optimiser's over the model's parameters ("state.<i>.exp_avg", ...): a
// per-element state tensor is gathered and cut into the parameters' shapes; a 0-dim one (Adam's
// step) is the same for every parameter.
OrderedDict<std::string, Tensor> ZeroRedundancyOptimizer::consolidate_state_dict(int to) {
  const int64_t world = shards_.world;
  GRAFT_CHECK(to >= 0 && to < world, "ZeroRedundancyOptimizer.consolidate_state_dict",
              "to, the rank that receives the state dict, in [0, " + std::to_string(world - 1) + "] (a world of " +
                  std::to_string(world) + (world == 1 ? " rank)" : " ranks)"),
              "to = " + std::to_string(to), "pass a rank of this world, e.g. 0");
  const bool here = distributed::get_rank() == to;
  const auto counts = shards_.counts();
  const OrderedDict<std::string, Tensor> inner = inner_->state_dict();
  OrderedDict<std::string, Tensor> out;
  const std::string state_prefix = "state.0.", group_prefix = "param_groups.0.";
  for (const auto& item : inner) {
    const std::string& key = item.key();
    if (key.rfind(state_prefix, 0) == 0) {
      const std::string name = key.substr(state_prefix.size());
      const Tensor& t = item.value();
      if (t.dim() == 1 && t.numel() == shard_.numel()) {
        Tensor flat = empty({shards_.numel}, TensorOptions().dtype(t.dtype()));
        distributed::detail::all_gather_v(flat, t.contiguous(), counts, "all_gather of ZeRO state " + name)->wait();
        if (here)
          for (size_t i = 0; i < params_.size(); ++i)
            out.insert("state." + std::to_string(i) + "." + name,
                       flat.narrow(0, flat_offset_[i], params_[i].numel()).reshape(params_[i].sizes()).clone());
      } else if (here) {
        for (size_t i = 0; i < params_.size(); ++i) out.insert("state." + std::to_string(i) + "." + name, t.clone());
      }
    }
  }
  // The group's options are this optimiser's: the inner one gets them only at the next step (a
  // scheduler has changed the lr since), and initial_lr lives here.
  if (here)
    for (const auto& item : Optimizer::state_dict())
      if (item.key().rfind(group_prefix, 0) == 0)
        out.insert(item.key(), item.key() == group_prefix + "params"
                                   ? arange(static_cast<int64_t>(params_.size()), TensorOptions().dtype(kInt64))
                                   : item.value().clone());
  return out;
}

void ZeroRedundancyOptimizer::load_consolidated_state_dict(const OrderedDict<std::string, Tensor>& full) {
  const char* op = "ZeroRedundancyOptimizer.load_consolidated_state_dict";
  const int64_t lo = shards_.begin(rank_);
  // The state names are those of every parameter ("state.<i>.<name>"): a single-process optimiser
  // keeps none for a parameter that never had a gradient, parameter 0 included.
  std::vector<std::string> names;
  for (const auto& item : full) {
    const std::string& key = item.key();
    const size_t dot = key.find('.', 6);
    size_t i = 0;
    if (key.rfind("state.", 0) != 0 || dot == std::string::npos) continue;
    const auto parsed = std::from_chars(key.data() + 6, key.data() + dot, i);
    if (parsed.ec != std::errc() || parsed.ptr != key.data() + dot || i >= params_.size()) continue;
    const std::string name = key.substr(dot + 1);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  OrderedDict<std::string, Tensor> inner;
  for (const std::string& name : names) {
    // The first parameter with this state tells a per-element tensor from a scalar (Adam's step,
    // the same for every parameter).
    size_t first = 0;
    while (!full.contains("state." + std::to_string(first) + "." + name)) ++first;
    const Tensor& t0 = full["state." + std::to_string(first) + "." + name];
    if (t0.numel() == params_[first].numel() && t0.dim() > 0) {
      // This rank's elements of every parameter's state tensor; a parameter without one keeps none
      // (its elements zero, as for a parameter that never had a gradient).
      Tensor shard = zeros({shard_.numel()}, TensorOptions().dtype(t0.dtype()));
      for (size_t i = 0; i < params_.size(); ++i) {
        const std::string k = "state." + std::to_string(i) + "." + name;
        if (!full.contains(k)) continue;
        const Tensor& t = full[k];
        GRAFT_CHECK(t.numel() == params_[i].numel(), op,
                    "state " + k + " of " + std::to_string(params_[i].numel()) + " elements",
                    std::to_string(t.numel()), "the checkpoint is of another model");
        const auto r = shards_.overlap(rank_, flat_offset_[i], params_[i].numel());
        if (r.size() > 0)
          shard.narrow(0, r.lo - lo, r.size()).copy_(t.reshape({-1}).narrow(0, r.lo - flat_offset_[i], r.size()));
      }
      inner.insert("state.0." + name, shard);
    } else {
      inner.insert("state.0." + name, t0.clone());
    }
  }
  for (const auto& item : full) {
    const std::string& key = item.key();
    if (key == "param_groups.0.params") {
      GRAFT_CHECK(item.value().numel() == static_cast<int64_t>(params_.size()), op,
                  "a state dict over the model's " + std::to_string(params_.size()) + " parameters",
                  key + " of " + std::to_string(item.value().numel()), "the checkpoint is of another model");
      inner.insert(key, zeros({1}, TensorOptions().dtype(kInt64)));
    } else if (key.rfind("param_groups.0.", 0) == 0) {
      inner.insert(key, item.value());
    }
  }
  inner_->load_state_dict(inner);
  // The saved options (lr, initial_lr) are this optimiser's, which the schedule reads.
  param_groups_[0].set_options(inner_->param_groups()[0].options().clone());
  param_groups_[0].initial_lr() = inner_->param_groups()[0].initial_lr();
}

}  // namespace graft::optim
