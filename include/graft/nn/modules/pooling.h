// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d: modules around the functional pools (no parameters).
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

}  // namespace graft::nn
