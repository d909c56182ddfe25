// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d,
// AdaptiveMaxPool2d, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d,
// MaxUnpool1d/2d/3d, LPPool1d/2d: modules around the functional pools (no parameters).
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

using MaxPool2dOptions = functional::MaxPool2dFuncOptions;
using AvgPool2dOptions = functional::AvgPool2dFuncOptions;
using AdaptiveAvgPool2dOptions = functional::AdaptiveAvgPool2dFuncOptions;

class MaxPool2dImpl : public Cloneable<MaxPool2dImpl> {
 public:
  explicit MaxPool2dImpl(const MaxPool2dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  // (output, indices), like LibTorch's forward_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;

  MaxPool2dOptions options;
};
GRAFT_MODULE(MaxPool2d);

class AvgPool2dImpl : public Cloneable<AvgPool2dImpl> {
 public:
  explicit AvgPool2dImpl(const AvgPool2dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  AvgPool2dOptions options;
};
GRAFT_MODULE(AvgPool2d);

class AdaptiveAvgPool2dImpl : public Cloneable<AdaptiveAvgPool2dImpl> {
 public:
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;  // "[5, None]" with its Nones

  AdaptiveAvgPool2dOptions options;
};
GRAFT_MODULE(AdaptiveAvgPool2d);

// ---- MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, AdaptiveMaxPool2d ----
using MaxPool1dOptions = functional::MaxPool1dFuncOptions;
using AvgPool1dOptions = functional::AvgPool1dFuncOptions;
using AdaptiveAvgPool1dOptions = functional::AdaptiveAvgPool1dFuncOptions;
using AdaptiveMaxPool2dOptions = functional::AdaptiveMaxPool2dFuncOptions;

class MaxPool1dImpl : public Cloneable<MaxPool1dImpl> {
 public:
  explicit MaxPool1dImpl(const MaxPool1dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  // (output, indices), like LibTorch's forward_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;

  MaxPool1dOptions options;
};
GRAFT_MODULE(MaxPool1d);

class AvgPool1dImpl : public Cloneable<AvgPool1dImpl> {
 public:
  explicit AvgPool1dImpl(const AvgPool1dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  AvgPool1dOptions options;
};
GRAFT_MODULE(AvgPool1d);

class AdaptiveAvgPool1dImpl : public Cloneable<AdaptiveAvgPool1dImpl> {
 public:
  explicit AdaptiveAvgPool1dImpl(const AdaptiveAvgPool1dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  AdaptiveAvgPool1dOptions options;
};
GRAFT_MODULE(AdaptiveAvgPool1d);

class AdaptiveMaxPool2dImpl : public Cloneable<AdaptiveMaxPool2dImpl> {
 public:
  explicit AdaptiveMaxPool2dImpl(const AdaptiveMaxPool2dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  // (output, indices), like LibTorch's forward_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;  // "[5, None]" with its Nones

  AdaptiveMaxPool2dOptions options;
};
GRAFT_MODULE(AdaptiveMaxPool2d);

// ---- MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d (issue 32) ----
// Printed as PyTorch's repr and LibTorch's pretty_print (libtorch_repr: sizes as lists, "[2, 2, 2]").
using MaxPool3dOptions = functional::MaxPool3dFuncOptions;
using AvgPool3dOptions = functional::AvgPool3dFuncOptions;
using AdaptiveAvgPool3dOptions = functional::AdaptiveAvgPool3dFuncOptions;
using AdaptiveMaxPool1dOptions = functional::AdaptiveMaxPool1dFuncOptions;
using AdaptiveMaxPool3dOptions = functional::AdaptiveMaxPool3dFuncOptions;

class MaxPool3dImpl : public Cloneable<MaxPool3dImpl> {
 public:
  explicit MaxPool3dImpl(const MaxPool3dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  // (output, indices), like LibTorch's forward_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  MaxPool3dOptions options;
};
GRAFT_MODULE(MaxPool3d);

class AvgPool3dImpl : public Cloneable<AvgPool3dImpl> {
 public:
  explicit AvgPool3dImpl(const AvgPool3dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  AvgPool3dOptions options;
};
GRAFT_MODULE(AvgPool3d);

class AdaptiveAvgPool3dImpl : public Cloneable<AdaptiveAvgPool3dImpl> {
 public:
  explicit AdaptiveAvgPool3dImpl(const AdaptiveAvgPool3dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  AdaptiveAvgPool3dOptions options;
};
GRAFT_MODULE(AdaptiveAvgPool3d);

class AdaptiveMaxPool1dImpl : public Cloneable<AdaptiveMaxPool1dImpl> {
 public:
  explicit AdaptiveMaxPool1dImpl(const AdaptiveMaxPool1dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  // (output, indices), like LibTorch's forward_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  AdaptiveMaxPool1dOptions options;
};
GRAFT_MODULE(AdaptiveMaxPool1d);

class AdaptiveMaxPool3dImpl : public Cloneable<AdaptiveMaxPool3dImpl> {
 public:
  explicit AdaptiveMaxPool3dImpl(const AdaptiveMaxPool3dOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  // (output, indices), like LibTorch's forward_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  AdaptiveMaxPool3dOptions options;
};
GRAFT_MODULE(AdaptiveMaxPool3d);

// ---- MaxUnpool1d/2d/3d, LPPool1d/2d (issue 32), printed in both styles as the 3-D pools ----
template <size_t D>
struct MaxUnpoolOptions {
  // From an ExpandingArray only (5 converts through it), so that the module's own constructor from
  // kernel_size (MaxUnpool2d(5), MaxUnpool2d(std::vector<int64_t>{5, 6})) is the one match.
  MaxUnpoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<D>, kernel_size);
  GRAFT_ARG(ExpandingArray<D>, stride);  // kernel_size unless set
  GRAFT_ARG(ExpandingArray<D>, padding) = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;

// F::max_unpool{D}d with the options and the call's output_size.
template <size_t D, class Derived>
class MaxUnpoolImplBase : public Cloneable<Derived> {
 public:
  explicit MaxUnpoolImplBase(const MaxUnpoolOptions<D>& options) : options(options) {}
  explicit MaxUnpoolImplBase(ExpandingArray<D> kernel_size) : options(kernel_size) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  MaxUnpoolOptions<D> options;
};

class MaxUnpool1dImpl : public MaxUnpoolImplBase<1, MaxUnpool1dImpl> {
 public:
  using MaxUnpoolImplBase::MaxUnpoolImplBase;
};
GRAFT_MODULE(MaxUnpool1d);
class MaxUnpool2dImpl : public MaxUnpoolImplBase<2, MaxUnpool2dImpl> {
 public:
  using MaxUnpoolImplBase::MaxUnpoolImplBase;
};
GRAFT_MODULE(MaxUnpool2d);
class MaxUnpool3dImpl : public MaxUnpoolImplBase<3, MaxUnpool3dImpl> {
 public:
  using MaxUnpoolImplBase::MaxUnpoolImplBase;
};
GRAFT_MODULE(MaxUnpool3d);

template <size_t D>
using LPPoolOptions = functional::LPPoolFuncOptions<D>;
using LPPool1dOptions = LPPoolOptions<1>;
using LPPool2dOptions = LPPoolOptions<2>;

template <size_t D, class Derived>
class LPPoolImplBase : public Cloneable<Derived> {
 public:
  explicit LPPoolImplBase(const LPPoolOptions<D>& options) : options(options) {}
  LPPoolImplBase(double norm_type, ExpandingArray<D> kernel_size) : options(norm_type, kernel_size) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  LPPoolOptions<D> options;
};

class LPPool1dImpl : public LPPoolImplBase<1, LPPool1dImpl> {
 public:
  using LPPoolImplBase::LPPoolImplBase;
};
GRAFT_MODULE(LPPool1d);
class LPPool2dImpl : public LPPoolImplBase<2, LPPool2dImpl> {
 public:
  using LPPoolImplBase::LPPoolImplBase;
};
GRAFT_MODULE(LPPool2d);

}  // namespace graft::nn
