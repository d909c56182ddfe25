// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d,
// AdaptiveMaxPool2d: modules around the functional pools (no parameters).
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

}  // namespace graft::nn
