// Distance modules: CosineSimilarity and PairwiseDistance, forward(x1, x2) forwarding to
// graft::nn::functional with their options (LibTorch's CosineSimilarityOptions, PairwiseDistanceOptions).
#pragma once

#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

using CosineSimilarityOptions = functional::CosineSimilarityFuncOptions;
using PairwiseDistanceOptions = functional::PairwiseDistanceFuncOptions;

class CosineSimilarityImpl : public Cloneable<CosineSimilarityImpl> {
 public:
  explicit CosineSimilarityImpl(const CosineSimilarityOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  std::string extra_repr() const override;
  CosineSimilarityOptions options;
};
GRAFT_MODULE(CosineSimilarity);

class PairwiseDistanceImpl : public Cloneable<PairwiseDistanceImpl> {
 public:
  explicit PairwiseDistanceImpl(const PairwiseDistanceOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  std::string extra_repr() const override;
  PairwiseDistanceOptions options;
};
GRAFT_MODULE(PairwiseDistance);

}  // namespace graft::nn
