// Unflatten (issue 32): LibTorch 1.13's module that splits one dim of its input into several, the
// inverse of Flatten (graft/nn/modules/linear.h). LibTorch's named-tensor form
// (UnflattenOptions("B", {{"B1", 2}, {"B2", 2}})) is not offered: graft tensors have no dim names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graft/nn/module.h"

namespace graft::nn {

struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  GRAFT_ARG(int64_t, dim);  // negative counts from the end
  // The sizes dim is split into; their product is dim's size (one of them may be -1, inferred).
  GRAFT_ARG(std::vector<int64_t>, sizes);
};

// (*, S, *) -> (*, sizes..., *), a view of the input.
class UnflattenImpl : public Cloneable<UnflattenImpl> {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(UnflattenOptions options);
  void reset() override;  // checks sizes: non-empty, at most one -1, the rest >= 0
  Tensor forward(const Tensor& input);
  // Unflatten(dim=0, unflattened_size=(2, 2))
  std::string extra_repr() const override;
  // graft::nn::Unflatten(dim=0, unflattened_size={2, 2})
  std::string libtorch_repr() const override;

  UnflattenOptions options;
};
GRAFT_MODULE(Unflatten);

}  // namespace graft::nn
