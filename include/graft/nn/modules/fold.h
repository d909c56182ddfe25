// Fold and Unfold (issue 32), LibTorch 1.13's modules over F::fold / F::unfold (graft::fold /
// graft::unfold in graft/ops/ops.h), with no parameters. Their options are the functionals':
// nn::FoldOptions is F::FoldFuncOptions, as in LibTorch (where it is the other way round).
#pragma once

#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"
// (Unflatten is in graft/nn/modules/flatten.h.)

namespace graft::nn {

using FoldOptions = functional::FoldFuncOptions;
using UnfoldOptions = functional::UnfoldFuncOptions;

// (N, C kH kW, L) or (C kH kW, L) -> (N, C, output_size...) or (C, output_size...), overlapping
// blocks summed.
class FoldImpl : public Cloneable<FoldImpl> {
 public:
  FoldImpl(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : FoldImpl(FoldOptions(output_size, kernel_size)) {}
  explicit FoldImpl(const FoldOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  // Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)
  std::string extra_repr() const override;
  // graft::nn::Fold(output_size=[4, 5], kernel_size=[2, 2], dilation=[1, 1], padding=[0, 0], stride=[1, 1])
  std::string libtorch_repr() const override;

  FoldOptions options;
};
GRAFT_MODULE(Fold);

// (N, C, H, W) or (C, H, W) -> (N, C kH kW, L) or (C kH kW, L): one column per sliding block.
class UnfoldImpl : public Cloneable<UnfoldImpl> {
 public:
  UnfoldImpl(ExpandingArray<2> kernel_size) : UnfoldImpl(UnfoldOptions(kernel_size)) {}  // NOLINT
  explicit UnfoldImpl(const UnfoldOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  // Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)
  std::string extra_repr() const override;
  // graft::nn::Unfold(kernel_size=[2, 3], dilation=[1, 1], padding=[0, 0], stride=[1, 1])
  std::string libtorch_repr() const override;

  UnfoldOptions options;
};
GRAFT_MODULE(Unfold);

}  // namespace graft::nn
