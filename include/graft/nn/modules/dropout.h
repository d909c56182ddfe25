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

}  // namespace graft::nn
