// The member definitions of nn::BatchNormImplBase<Derived>, for the files that instantiate it:
// BatchNorm1d and BatchNorm2d (normalization.cpp) and SyncBatchNorm
// (src/distributed/sync_batch_norm.cpp), which derives from the same base as LibTorch's BatchNorm
// classes do and replaces only the training forward's statistics.
#pragma once

#include <string>

#include "core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/nn/init.h"
#include "graft/nn/modules/normalization.h"

namespace graft::nn {

namespace detail {
// The state of a normalisation over C channels, as LibTorch's NormImplBase::reset registers it:
// weight and bias (affine), running_mean, running_var and num_batches_tracked (track_running_stats).
// Shared by BatchNormImplBase and InstanceNormImplBase; `m` is the module, `hint` ends the error.
template <class M>
void register_norm_state(M& m, const char* hint) {
  const int64_t C = m.options.num_features();
  GRAFT_CHECK(C > 0, m.name(), "a positive num_features", "num_features " + std::to_string(C), hint);
  const bool affine = m.options.affine(), track = m.options.track_running_stats();
  m.weight = m.register_parameter("weight", affine ? graft::empty({C}) : Tensor(), affine);
  m.bias = m.register_parameter("bias", affine ? graft::empty({C}) : Tensor(), affine);
  m.running_mean = m.register_buffer("running_mean", track ? graft::zeros({C}) : Tensor());
  m.running_var = m.register_buffer("running_var", track ? graft::ones({C}) : Tensor());
  m.num_batches_tracked = m.register_buffer("num_batches_tracked", track ? graft::zeros({}, kInt64) : Tensor());
}
}  // namespace detail

template <class Derived>
void BatchNormImplBase<Derived>::reset() {
  detail::register_norm_state(*this, "pass num_features = the input's channel count, input.size(1)");
  reset_parameters();
}

template <class Derived>
void BatchNormImplBase<Derived>::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard ng;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

template <class Derived>
void BatchNormImplBase<Derived>::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

template <class Derived>
Tensor BatchNormImplBase<Derived>::forward(const Tensor& input) {
  check_input_dim(input);
  const bool training = this->is_training();
  // A checkpointed segment's forward runs twice (forward, then recompute in backward): the running
  // statistics and the batch counter move only in the first run (Note [Checkpointing] in
  // src/utils/checkpoint.cpp). The recompute still normalises with the batch statistics.
  const bool update_stats =
      training && options.track_running_stats() && !autograd::is_checkpoint_recompute();
  // PyTorch's exponential_average_factor: momentum, or 1 / num_batches_tracked without one.
  double factor = options.momentum().value_or(0.0);
  if (update_stats) {
    {
      NoGradGuard ng;
      num_batches_tracked.add_(1);
    }
    if (!options.momentum()) factor = 1.0 / static_cast<double>(num_batches_tracked.template item<int64_t>());
  }
  // Batch statistics in training, and in eval when there are no running statistics.
  const bool use_batch_stats = training || !running_mean.defined();
  // Running statistics go in to be used (eval) or updated (training, first run only).
  const bool pass_stats = !training || update_stats;
  return functional::batch_norm(input, pass_stats ? running_mean : Tensor(), pass_stats ? running_var : Tensor(),
                                functional::BatchNormFuncOptions()
                                    .weight(weight)
                                    .bias(bias)
                                    .training(use_batch_stats)
                                    .momentum(factor)
                                    .eps(options.eps()));
}

template <class Derived>
std::string BatchNormImplBase<Derived>::extra_repr() const {
  return std::to_string(options.num_features()) + ", eps=" + graft::detail::py_repr(options.eps()) +
         ", momentum=" + (options.momentum() ? graft::detail::py_repr(*options.momentum()) : std::string("None")) +
         ", affine=" + graft::detail::py_bool(options.affine()) +
         ", track_running_stats=" + graft::detail::py_bool(options.track_running_stats());
}

}  // namespace graft::nn
