// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d,
// AdaptiveMaxPool2d, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d:
// modules around the functional pools (no parameters).
#pragma once

#include <string>
#include <tuple>

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

}  // namespace graft::nn
