// Loss modules: CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, BCELoss,
// BCEWithLogitsLoss, HuberLoss, KLDivLoss, CosineEmbeddingLoss, MarginRankingLoss, TripletMarginLoss,
// SoftMarginLoss, MultiLabelSoftMarginLoss, HingeEmbeddingLoss, PoissonNLLLoss, GaussianNLLLoss,
// MultiMarginLoss, MultiLabelMarginLoss, TripletMarginWithDistanceLoss.
// Their options are graft::nn::functional's (CrossEntropyLossOptions is CrossEntropyFuncOptions);
// class weights are registered as buffers ("weight", "pos_weight"), so module.to(dtype) converts them.
// forward(input, target) (or the loss's inputs) forwards to the functional.
#pragma once

#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

using CrossEntropyLossOptions = functional::CrossEntropyFuncOptions;
using NLLLossOptions = functional::NLLLossFuncOptions;
using MSELossOptions = functional::MSELossFuncOptions;
using L1LossOptions = functional::L1LossFuncOptions;
using SmoothL1LossOptions = functional::SmoothL1LossFuncOptions;
using BCELossOptions = functional::BinaryCrossEntropyFuncOptions;
using BCEWithLogitsLossOptions = functional::BinaryCrossEntropyWithLogitsFuncOptions;

class CrossEntropyLossImpl : public Cloneable<CrossEntropyLossImpl> {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& target);
  CrossEntropyLossOptions options;
  Tensor weight;
};
GRAFT_MODULE(CrossEntropyLoss);

class NLLLossImpl : public Cloneable<NLLLossImpl> {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& target);
  NLLLossOptions options;
  Tensor weight;
};
GRAFT_MODULE(NLLLoss);

class MSELossImpl : public Cloneable<MSELossImpl> {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target);
  MSELossOptions options;
};
GRAFT_MODULE(MSELoss);

class L1LossImpl : public Cloneable<L1LossImpl> {
 public:
  explicit L1LossImpl(const L1LossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target);
  L1LossOptions options;
};
GRAFT_MODULE(L1Loss);

class SmoothL1LossImpl : public Cloneable<SmoothL1LossImpl> {
 public:
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target);
  SmoothL1LossOptions options;
};
GRAFT_MODULE(SmoothL1Loss);

class BCELossImpl : public Cloneable<BCELossImpl> {
 public:
  explicit BCELossImpl(const BCELossOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& target);
  BCELossOptions options;
  Tensor weight;
};
GRAFT_MODULE(BCELoss);

class BCEWithLogitsLossImpl : public Cloneable<BCEWithLogitsLossImpl> {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& target);
  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;
};
GRAFT_MODULE(BCEWithLogitsLoss);

// ---- HuberLoss, KLDivLoss, CosineEmbeddingLoss, MarginRankingLoss, TripletMarginLoss ----
using HuberLossOptions = functional::HuberLossFuncOptions;
using KLDivLossOptions = functional::KLDivFuncOptions;
using CosineEmbeddingLossOptions = functional::CosineEmbeddingLossFuncOptions;
using MarginRankingLossOptions = functional::MarginRankingLossFuncOptions;
using TripletMarginLossOptions = functional::TripletMarginLossFuncOptions;

class HuberLossImpl : public Cloneable<HuberLossImpl> {
 public:
  explicit HuberLossImpl(const HuberLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target);
  HuberLossOptions options;
};
GRAFT_MODULE(HuberLoss);

class KLDivLossImpl : public Cloneable<KLDivLossImpl> {
 public:
  explicit KLDivLossImpl(const KLDivLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target);
  KLDivLossOptions options;
};
GRAFT_MODULE(KLDivLoss);

class CosineEmbeddingLossImpl : public Cloneable<CosineEmbeddingLossImpl> {
 public:
  explicit CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  CosineEmbeddingLossOptions options;
};
GRAFT_MODULE(CosineEmbeddingLoss);

class MarginRankingLossImpl : public Cloneable<MarginRankingLossImpl> {
 public:
  explicit MarginRankingLossImpl(const MarginRankingLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  MarginRankingLossOptions options;
};
GRAFT_MODULE(MarginRankingLoss);

class TripletMarginLossImpl : public Cloneable<TripletMarginLossImpl> {
 public:
  explicit TripletMarginLossImpl(const TripletMarginLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  TripletMarginLossOptions options;
};
GRAFT_MODULE(TripletMarginLoss);

// ---- SoftMarginLoss, MultiLabelSoftMarginLoss, HingeEmbeddingLoss, PoissonNLLLoss, GaussianNLLLoss,
// MultiMarginLoss, MultiLabelMarginLoss (issue 32; src/nn/modules/loss2.cpp) ----
using SoftMarginLossOptions = functional::SoftMarginLossFuncOptions;
using MultiLabelSoftMarginLossOptions = functional::MultilabelSoftMarginLossFuncOptions;
using HingeEmbeddingLossOptions = functional::HingeEmbeddingLossFuncOptions;
using PoissonNLLLossOptions = functional::PoissonNLLLossFuncOptions;
using GaussianNLLLossOptions = functional::GaussianNLLLossFuncOptions;
using MultiMarginLossOptions = functional::MultiMarginLossFuncOptions;
using MultiLabelMarginLossOptions = functional::MultilabelMarginLossFuncOptions;

class SoftMarginLossImpl : public Cloneable<SoftMarginLossImpl> {
 public:
  explicit SoftMarginLossImpl(const SoftMarginLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target);
  SoftMarginLossOptions options;
};
GRAFT_MODULE(SoftMarginLoss);

class MultiLabelSoftMarginLossImpl : public Cloneable<MultiLabelSoftMarginLossImpl> {
 public:
  explicit MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& target);
  MultiLabelSoftMarginLossOptions options;
  Tensor weight;  // the buffer "weight" (undefined when not given)
};
GRAFT_MODULE(MultiLabelSoftMarginLoss);

class HingeEmbeddingLossImpl : public Cloneable<HingeEmbeddingLossImpl> {
 public:
  explicit HingeEmbeddingLossImpl(const HingeEmbeddingLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target);
  std::string libtorch_repr() const override;  // graft::nn::HingeEmbeddingLoss(margin=1)
  HingeEmbeddingLossOptions options;
};
GRAFT_MODULE(HingeEmbeddingLoss);

class PoissonNLLLossImpl : public Cloneable<PoissonNLLLossImpl> {
 public:
  explicit PoissonNLLLossImpl(const PoissonNLLLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& log_input, const Tensor& target);
  PoissonNLLLossOptions options;
};
GRAFT_MODULE(PoissonNLLLoss);

class GaussianNLLLossImpl : public Cloneable<GaussianNLLLossImpl> {
 public:
  explicit GaussianNLLLossImpl(const GaussianNLLLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var);
  GaussianNLLLossOptions options;
};
GRAFT_MODULE(GaussianNLLLoss);

class MultiMarginLossImpl : public Cloneable<MultiMarginLossImpl> {
 public:
  explicit MultiMarginLossImpl(const MultiMarginLossOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& target);
  // graft::nn::MultiMarginLoss(p=1, margin=1, weight=[ Tensor (undefined) ], reduction=kMean)
  std::string libtorch_repr() const override;
  MultiMarginLossOptions options;
  Tensor weight;  // the buffer "weight" (undefined when not given)
};
GRAFT_MODULE(MultiMarginLoss);

class MultiLabelMarginLossImpl : public Cloneable<MultiLabelMarginLossImpl> {
 public:
  explicit MultiLabelMarginLossImpl(const MultiLabelMarginLossOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input, const Tensor& target);
  MultiLabelMarginLossOptions options;
};
GRAFT_MODULE(MultiLabelMarginLoss);

using TripletMarginWithDistanceLossOptions = functional::TripletMarginWithDistanceLossFuncOptions;
class TripletMarginWithDistanceLossImpl : public Cloneable<TripletMarginWithDistanceLossImpl> {
 public:
  explicit TripletMarginWithDistanceLossImpl(const TripletMarginWithDistanceLossOptions& options = {})
      : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  // graft::nn::TripletMarginWithDistanceLoss(margin=1, swap=false)
  std::string libtorch_repr() const override;
  TripletMarginWithDistanceLossOptions options;
};
GRAFT_MODULE(TripletMarginWithDistanceLoss);

}  // namespace graft::nn
