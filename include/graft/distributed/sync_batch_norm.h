// graft::nn::SyncBatchNorm: batch normalisation whose batch statistics are those of the global
// batch, over every rank (PyTorch's torch.nn.SyncBatchNorm).
//
// Note [SyncBatchNorm]
// In training, with more than one rank, the mean and the (biased) variance per channel are the
// global batch's: the ranks all-reduce the per-channel sums and element counts, then the sums of
// squared deviations from that mean (two passes, as numerically safe as one process's). The
// all-reduces are differentiable: the backward of y = sum over ranks of x_r is the sum over ranks of
// the gradients, so autograd gives every rank exactly its share of the one-process gradient. The
// running statistics move as BatchNorm's do, with the global mean and the unbiased global variance,
// so every rank keeps the same ones. In eval, or on one rank, it is BatchNorm. Input (N, C, *).
#pragma once

#include <memory>

#include "graft/nn/module.h"
#include "graft/nn/modules/normalization.h"

namespace graft::nn {

using SyncBatchNormOptions = BatchNormOptions;

// On BatchNorm's base, as LibTorch's BatchNorm1d/2d/3d are: the options, weight, bias, running
// statistics, reset(), reset_parameters(), reset_running_stats() and the printed line are
// BatchNorm's; forward differs only in training on more than one rank.
class SyncBatchNormImpl : public BatchNormImplBase<SyncBatchNormImpl> {
 public:
  explicit SyncBatchNormImpl(const SyncBatchNormOptions& options) : BatchNormImplBase(options) { reset(); }
  Tensor forward(const Tensor& input);

  // Replaces every BatchNorm1d / BatchNorm2d of `module` (itself included when it is one) by a
  // SyncBatchNorm with its options, parameters and running statistics (PyTorch's
  // SyncBatchNorm.convert_sync_batchnorm) and returns the result: use it in place of `module`. A
  // Sequential comes back as a new Sequential (its entries, which its forward runs, are fixed at
  // construction); other modules are changed in place and returned.
  static std::shared_ptr<Module> convert_sync_batchnorm(std::shared_ptr<Module> module);

 protected:
  // Input (N, C, *) with C = num_features.
  void check_input_dim(const Tensor& input) const override;
};
GRAFT_MODULE(SyncBatchNorm);

extern template class BatchNormImplBase<SyncBatchNormImpl>;

}  // namespace graft::nn
