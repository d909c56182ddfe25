// BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm, InstanceNorm1d and InstanceNorm2d.
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

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  GRAFT_ARG(int64_t, num_groups);
  GRAFT_ARG(int64_t, num_channels);
  GRAFT_ARG(double, eps) = 1e-5;
  GRAFT_ARG(bool, affine) = true;
};

// Input (N, C, *): num_groups groups of C / num_groups channels, each normalised over its channels
// and *; weight (ones) and bias (zeros) of shape (C) when affine. Same in train and eval.
class GroupNormImpl : public Cloneable<GroupNormImpl> {
 public:
  explicit GroupNormImpl(const GroupNormOptions& options);
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  GroupNormOptions options;
  Tensor weight, bias;
};
GRAFT_MODULE(GroupNorm);

struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  GRAFT_ARG(int64_t, num_features);
  GRAFT_ARG(double, eps) = 1e-5;
  GRAFT_ARG(double, momentum) = 0.1;
  GRAFT_ARG(bool, affine) = false;
  GRAFT_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;

// InstanceNorm (PyTorch's semantics): each (sample, channel) normalised over its spatial dims. With
// track_running_stats, training updates the buffers running_mean / running_var (averaged over the
// batch; num_batches_tracked is registered but, as in PyTorch, not counted) and eval normalises with
// them; without, both modes use the instance statistics. affine adds weight (ones) and bias (zeros).
// Input of D spatial dims: (N, C, *) with D dims, or unbatched (C, *).
template <class Derived, int64_t D>
class InstanceNormImplBase : public Cloneable<Derived> {
 public:
  explicit InstanceNormImplBase(const InstanceNormOptions& options) : options(options) {}
  void reset() override;
  void reset_running_stats();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  bool uses_batch_statistics() const noexcept override { return false; }

  InstanceNormOptions options;
  Tensor weight, bias;                                      // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;   // undefined unless track_running_stats
};

// Input (N, C, L) or (C, L).
class InstanceNorm1dImpl : public InstanceNormImplBase<InstanceNorm1dImpl, 1> {
 public:
  explicit InstanceNorm1dImpl(const InstanceNormOptions& options) : InstanceNormImplBase(options) { reset(); }
};
GRAFT_MODULE(InstanceNorm1d);

// Input (N, C, H, W) or (C, H, W).
class InstanceNorm2dImpl : public InstanceNormImplBase<InstanceNorm2dImpl, 2> {
 public:
  explicit InstanceNorm2dImpl(const InstanceNormOptions& options) : InstanceNormImplBase(options) { reset(); }
};
GRAFT_MODULE(InstanceNorm2d);

extern template class InstanceNormImplBase<InstanceNorm1dImpl, 1>;
extern template class InstanceNormImplBase<InstanceNorm2dImpl, 2>;

// ---- BatchNorm3d, InstanceNorm3d, LocalResponseNorm, CrossMapLRN2d (src/nn/modules/norm3d.cpp) ----

using BatchNorm3dOptions = BatchNormOptions;

// Input (N, C, D, H, W).
class BatchNorm3dImpl : public BatchNormImplBase<BatchNorm3dImpl> {
 public:
  explicit BatchNorm3dImpl(const BatchNormOptions& options) : BatchNormImplBase(options) { reset(); }
  std::string libtorch_repr() const override;

 protected:
  void check_input_dim(const Tensor& input) const override;
};
GRAFT_MODULE(BatchNorm3d);

extern template class BatchNormImplBase<BatchNorm3dImpl>;

using InstanceNorm3dOptions = InstanceNormOptions;

// Input (N, C, D, H, W) or unbatched (C, D, H, W).
class InstanceNorm3dImpl : public InstanceNormImplBase<InstanceNorm3dImpl, 3> {
 public:
  explicit InstanceNorm3dImpl(const InstanceNormOptions& options) : InstanceNormImplBase(options) { reset(); }
};
GRAFT_MODULE(InstanceNorm3d);
extern template class InstanceNormImplBase<InstanceNorm3dImpl, 3>;

// LocalResponseNormOptions (size, alpha, beta, k) is declared with F::local_response_norm in
// graft/nn/functional.h. Input (N, C, *) with at least 3 dims: each value divided by (k + alpha *
// mean of x^2 over a window of `size` channels around it)^beta (PyTorch's LocalResponseNorm).
class LocalResponseNormImpl : public Cloneable<LocalResponseNormImpl> {
 public:
  LocalResponseNormImpl(int64_t size) : LocalResponseNormImpl(LocalResponseNormOptions(size)) {}  // NOLINT
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options);
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  LocalResponseNormOptions options;
};
GRAFT_MODULE(LocalResponseNorm);

struct CrossMapLRN2dOptions {
  CrossMapLRN2dOptions(int64_t size) : size_(size) {}  // NOLINT
  GRAFT_ARG(int64_t, size);
  GRAFT_ARG(double, alpha) = 1e-4;
  GRAFT_ARG(double, beta) = 0.75;
  GRAFT_ARG(int64_t, k) = 1;  // an integer, as in LibTorch
};

// LibTorch's (and Lua Torch's) legacy cross-map LRN. Input (N, C, H, W) only: out = x * scale^-beta
// with scale = k + alpha / size * (sum of x^2 over the channel window). Trap, kept for
// compatibility: the window of channel c is [c - h, c + h] (h = (size - 1) / 2, clipped to the
// channels) plus channel 0 always, which the legacy running-sum forward never subtracts. The
// gradient is the exact derivative of this forward (LibTorch's hand-written backward is not, and
// differs from it).
class CrossMapLRN2dImpl : public Cloneable<CrossMapLRN2dImpl> {
 public:
  CrossMapLRN2dImpl(int64_t size) : CrossMapLRN2dImpl(CrossMapLRN2dOptions(size)) {}  // NOLINT
  explicit CrossMapLRN2dImpl(const CrossMapLRN2dOptions& options);
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  CrossMapLRN2dOptions options;
};
GRAFT_MODULE(CrossMapLRN2d);

}  // namespace graft::nn
