// BatchNorm1d, BatchNorm2d and LayerNorm.
//
// BatchNorm (PyTorch's semantics): in training mode it normalises with the batch statistics and,
// with track_running_stats, updates the buffers running_mean / running_var (unbiased variance) and
// counts num_batches_tracked; momentum = nullopt makes the running statistics a cumulative average
// (factor 1 / num_batches_tracked). In eval mode it normalises with the running statistics (or with
// the batch statistics when it tracks none). affine adds the parameters weight (ones) and bias (zeros).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  GRAFT_ARG(int64_t, num_features);
  GRAFT_ARG(double, eps) = 1e-5;
  GRAFT_ARG(std::optional<double>, momentum) = 0.1;
  GRAFT_ARG(bool, affine) = true;
  GRAFT_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

// The shared implementation; `dims` are the input ranks the subclass accepts.
template <class Derived>
class BatchNormImplBase : public Cloneable<Derived> {
 public:
  explicit BatchNormImplBase(const BatchNormOptions& options) : options(options) {}
  void reset() override;
  void reset_running_stats();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  bool uses_batch_statistics() const noexcept override { return this->is_training(); }

  BatchNormOptions options;
  Tensor weight, bias;                                      // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;   // undefined unless track_running_stats

 protected:
  virtual void check_input_dim(const Tensor& input) const = 0;
};

// Input (N, C) or (N, C, L).
class BatchNorm1dImpl : public BatchNormImplBase<BatchNorm1dImpl> {
 public:
  explicit BatchNorm1dImpl(const BatchNormOptions& options) : BatchNormImplBase(options) { reset(); }

 protected:
  void check_input_dim(const Tensor& input) const override;
};
GRAFT_MODULE(BatchNorm1d);

// Input (N, C, H, W).
class BatchNorm2dImpl : public BatchNormImplBase<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(const BatchNormOptions& options) : BatchNormImplBase(options) { reset(); }

 protected:
  void check_input_dim(const Tensor& input) const override;
};
GRAFT_MODULE(BatchNorm2d);

extern template class BatchNormImplBase<BatchNorm1dImpl>;
extern template class BatchNormImplBase<BatchNorm2dImpl>;

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  GRAFT_ARG(std::vector<int64_t>, normalized_shape);
  GRAFT_ARG(double, eps) = 1e-5;
  GRAFT_ARG(bool, elementwise_affine) = true;
};

// Normalises over the trailing normalized_shape dims; weight (ones) and bias (zeros) of that shape
// when elementwise_affine.
class LayerNormImpl : public Cloneable<LayerNormImpl> {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  LayerNormOptions options;
  Tensor weight, bias;
};
GRAFT_MODULE(LayerNorm);

}  // namespace graft::nn
