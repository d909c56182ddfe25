// Dropout: in training mode, zeroes each element with probability p (a mask drawn from the default
// generator, so graft::manual_seed makes it repeatable) and scales the rest by 1 / (1 - p); in eval
// mode it returns its input.
#pragma once

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: Dropout(0.2), as LibTorch
  GRAFT_ARG(double, p);
  GRAFT_ARG(bool, inplace) = false;
};

class DropoutImpl : public Cloneable<DropoutImpl> {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  DropoutOptions options;
};
GRAFT_MODULE(Dropout);

// Dropout2d: in training mode, zeroes whole channels of an image batch (N, C, H, W) (or of one image
// (C, H, W)), each with probability p, and scales the rest by 1 / (1 - p); identity in eval mode.
using Dropout2dOptions = DropoutOptions;

class Dropout2dImpl : public Cloneable<Dropout2dImpl> {
 public:
  explicit Dropout2dImpl(const Dropout2dOptions& options = {});
  void reset() override;
  Tensor forward(Tensor input);
  std::string extra_repr() const override;

  Dropout2dOptions options;
};
GRAFT_MODULE(Dropout2d);

}  // namespace graft::nn
