// The losses of issue 32 (SoftMarginLoss, MultiLabelSoftMarginLoss, HingeEmbeddingLoss,
// PoissonNLLLoss, GaussianNLLLoss, MultiMarginLoss, MultiLabelMarginLoss,
// TripletMarginWithDistanceLoss): their functionals
// (the options unpacked into the ops of src/ops/loss2.cpp, as LibTorch's wrap ATen's) and their
// modules, thin wrappers whose class weights are buffers, as those of loss.cpp.
#include <sstream>
#include <string>

#include "graft/nn/modules/loss.h"

namespace graft::nn {

namespace functional {

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& options) {
  return graft::soft_margin_loss(input, target, options.reduction());
}
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options) {
  return graft::multilabel_soft_margin_loss(input, target, options.weight(), options.reduction());
}
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& options) {
  return graft::hinge_embedding_loss(input, target, options.margin(), options.reduction());
}
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& options) {
  return graft::poisson_nll_loss(input, target, options.log_input(), options.full(), options.eps(),
                                 options.reduction());
}
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         const GaussianNLLLossFuncOptions& options) {
  return graft::gaussian_nll_loss(input, target, var, options.full(), options.eps(), options.reduction());
}
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& options) {
  return graft::multi_margin_loss(input, target, options.p(), options.margin(), options.weight(), options.reduction());
}
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options) {
  return graft::multilabel_margin_loss(input, target, options.reduction());
}
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& options) {
  const auto& custom = options.distance_function();
  const auto distance = [&custom](const Tensor& x1, const Tensor& x2) {
    return custom ? (*custom)(x1, x2) : graft::pairwise_distance(x1, x2);
  };
  const Tensor dist_pos = distance(anchor, positive);
  Tensor dist_neg = distance(anchor, negative);
  if (options.swap()) dist_neg = graft::minimum(dist_neg, distance(positive, negative));
  // PyTorch's order of operations (d_pos - d_neg + margin), so the rounding is its.
  const Tensor loss = graft::clamp_min(dist_pos - dist_neg + options.margin(), 0.0);
  switch (options.reduction()) {
    case Reduction::None: return loss;
    case Reduction::Mean: return loss.mean();
    case Reduction::Sum: return loss.sum();
  }
  return loss;
}

}  // namespace functional

namespace F = functional;

Tensor SoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::soft_margin_loss(input, target, options);
}

MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& options_)
    : options(options_) {
  reset();
}
void MultiLabelSoftMarginLossImpl::reset() { weight = register_buffer("weight", options.weight()); }
Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  MultiLabelSoftMarginLossOptions o = options;
  return F::multilabel_soft_margin_loss(input, target, o.weight(weight));
}

Tensor HingeEmbeddingLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::hinge_embedding_loss(input, target, options);
}
std::string HingeEmbeddingLossImpl::libtorch_repr() const {
  std::ostringstream s;
  s << "graft::nn::HingeEmbeddingLoss(margin=" << options.margin() << ")";
  return s.str();
}

Tensor PoissonNLLLossImpl::forward(const Tensor& log_input, const Tensor& target) {
  return F::poisson_nll_loss(log_input, target, options);
}

Tensor GaussianNLLLossImpl::forward(const Tensor& input, const Tensor& target, const Tensor& var) {
  return F::gaussian_nll_loss(input, target, var, options);
}

MultiMarginLossImpl::MultiMarginLossImpl(const MultiMarginLossOptions& options_) : options(options_) { reset(); }
void MultiMarginLossImpl::reset() { weight = register_buffer("weight", options.weight()); }
Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  MultiMarginLossOptions o = options;
  return F::multi_margin_loss(input, target, o.weight(weight));
}
std::string MultiMarginLossImpl::libtorch_repr() const {
  // LibTorch writes every option, the weight as its operator<< prints a tensor, the reduction by
  // its enum's name.
  std::ostringstream s;
  s << "graft::nn::MultiMarginLoss(p=" << options.p() << ", margin=" << options.margin() << ", weight=";
  if (weight.defined()) s << weight;
  else s << "[ Tensor (undefined) ]";
  const Reduction r = options.reduction();
  s << ", reduction=" << (r == kNone ? "kNone" : r == kSum ? "kSum" : "kMean") << ")";
  return s.str();
}

Tensor MultiLabelMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multilabel_margin_loss(input, target, options);
}

Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& anchor, const Tensor& positive,
                                                  const Tensor& negative) {
  return F::triplet_margin_with_distance_loss(anchor, positive, negative, options);
}
std::string TripletMarginWithDistanceLossImpl::libtorch_repr() const {
  std::ostringstream s;
  s << "graft::nn::TripletMarginWithDistanceLoss(margin=" << options.margin() << std::boolalpha
    << ", swap=" << options.swap() << ")";
  return s.str();
}

}  // namespace graft::nn
