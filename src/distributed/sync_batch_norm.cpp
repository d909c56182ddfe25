// SyncBatchNorm (Note [SyncBatchNorm] in graft/distributed/sync_batch_norm.h).
#include "graft/distributed/sync_batch_norm.h"

#include "graft/autograd/function.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/shape.h"
#include "graft/distributed/process_group.h"
#include "graft/nn/modules/container.h"
#include "nn/modules/batch_norm_base.h"

namespace graft::nn {

namespace {

// y = the sum over ranks of x; dx = the sum over ranks of dy.
struct AllReduceSum : autograd::Function<AllReduceSum> {
  static Tensor forward(autograd::AutogradContext*, Tensor x) {
    Tensor y = x.contiguous().clone();
    distributed::detail::all_reduce(y, distributed::ReduceOp::SUM, "all_reduce of SyncBatchNorm statistics")->wait();
    return y;
  }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list grads) {
    Tensor g = grads[0].contiguous().clone();
    distributed::detail::all_reduce(g, distributed::ReduceOp::SUM, "all_reduce of SyncBatchNorm gradients")->wait();
    return {g};
  }
};

template <class BN>
std::shared_ptr<Module> convert_one(const std::shared_ptr<Module>& m) {
  auto* bn = dynamic_cast<BN*>(m.get());
  if (!bn) return nullptr;
  auto sync = std::make_shared<SyncBatchNormImpl>(bn->options);
  const Tensor& like = bn->weight.defined() ? bn->weight : bn->running_mean;
  if (like.defined()) sync->to(like.dtype());
  NoGradGuard no_grad;
  if (bn->weight.defined()) {
    sync->weight.copy_(bn->weight);
    sync->bias.copy_(bn->bias);
  }
  if (bn->running_mean.defined()) {
    sync->running_mean.copy_(bn->running_mean);
    sync->running_var.copy_(bn->running_var);
    sync->num_batches_tracked.copy_(bn->num_batches_tracked);
  }
  sync->train(bn->is_training());
  return sync;
}

std::shared_ptr<Module> converted(const std::shared_ptr<Module>& m) {
  if (auto s = convert_one<BatchNorm1dImpl>(m)) return s;
  return convert_one<BatchNorm2dImpl>(m);
}

}  // namespace

template class BatchNormImplBase<SyncBatchNormImpl>;

void SyncBatchNormImpl::check_input_dim(const Tensor& x) const {
  const int64_t C = options.num_features();
  GRAFT_CHECK(x.dim() >= 2 && x.size(1) == C, "SyncBatchNorm", "an input (N, " + std::to_string(C) + ", *)",
              shape_str(x.sizes()), "the channel dimension is dim 1 and must equal num_features");
}

Tensor SyncBatchNormImpl::forward(const Tensor& x) {
  // BatchNorm's forward in eval and on one rank.
  if (!is_training() || distributed::get_world_size() == 1) return BatchNormImplBase::forward(x);
  check_input_dim(x);
  const int64_t C = options.num_features();
  std::vector<int64_t> dims{0}, shape(static_cast<size_t>(x.dim()), 1);
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  shape[1] = C;
  Tensor count = full({1}, static_cast<double>(x.numel() / C), TensorOptions().dtype(kFloat64));
  distributed::detail::all_reduce(count, distributed::ReduceOp::SUM, "all_reduce of SyncBatchNorm counts")->wait();
  const double n = count.item<double>();
  GRAFT_CHECK(n > 1, "SyncBatchNorm", "more than one value per channel over all ranks", std::to_string(n),
              "use a larger batch");
  const Tensor mean = AllReduceSum::apply(x.sum(dims)) / n;
  const Tensor centred = x - mean.view(shape);
  const Tensor var = AllReduceSum::apply((centred * centred).sum(dims)) / n;  // biased, for normalising
  Tensor y = centred * (var + options.eps()).rsqrt().view(shape);
  if (options.affine()) y = y * weight.view(shape) + bias.view(shape);
  if (options.track_running_stats() && !autograd::is_checkpoint_recompute()) {
    NoGradGuard ng;
    num_batches_tracked.add_(1);
    const double f = options.momentum() ? *options.momentum() : 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
    running_mean.mul_(1 - f).add_(mean.detach().to(running_mean.dtype()) * f);
    running_var.mul_(1 - f).add_(var.detach().to(running_var.dtype()) * (f * n / (n - 1)));
  }
  return y;
}

std::shared_ptr<Module> SyncBatchNormImpl::convert_sync_batchnorm(std::shared_ptr<Module> module) {
  if (auto s = converted(module)) return s;
  if (auto* seq = dynamic_cast<SequentialImpl*>(module.get())) {
    // A Sequential runs its entries, not its registry: a new Sequential with the entries converted.
    auto out = std::make_shared<SequentialImpl>();
    const auto names = seq->named_children();
    for (size_t i = 0; i < seq->size(); ++i) {
      const std::string name = i < names.size() ? names[i].key() : std::to_string(i);
      auto child = convert_sync_batchnorm(seq->ptr(i));
      if (child == seq->ptr(i)) {
        out->push_back(name, seq->entries()[i]);
      } else if (auto sync = std::dynamic_pointer_cast<SyncBatchNormImpl>(child)) {
        out->push_back(name, sync);
      } else {
        out->push_back(name, std::dynamic_pointer_cast<SequentialImpl>(child));
      }
    }
    out->train(seq->is_training());
    return out;
  }
  for (const auto& item : module->named_children()) {
    auto child = convert_sync_batchnorm(item.value());
    if (child != item.value()) module->replace_module(item.key(), child);
  }
  return module;
}

}  // namespace graft::nn
