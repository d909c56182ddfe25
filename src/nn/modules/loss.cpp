// Loss modules: thin wrappers over graft::nn::functional whose weights are buffers.
#include "graft/nn/modules/loss.h"

namespace graft::nn {

namespace F = functional;

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options_) : options(options_) { reset(); }
void CrossEntropyLossImpl::reset() { weight = register_buffer("weight", options.weight()); }
Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  CrossEntropyLossOptions o = options;
  return F::cross_entropy(input, target, o.weight(weight));
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& options_) : options(options_) { reset(); }
void NLLLossImpl::reset() { weight = register_buffer("weight", options.weight()); }
Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  NLLLossOptions o = options;
  return F::nll_loss(input, target, o.weight(weight));
}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) { return F::mse_loss(input, target, options); }
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) { return F::l1_loss(input, target, options); }
Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::smooth_l1_loss(input, target, options);
}

BCELossImpl::BCELossImpl(const BCELossOptions& options_) : options(options_) { reset(); }
void BCELossImpl::reset() { weight = register_buffer("weight", options.weight()); }
Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  BCELossOptions o = options;
  return F::binary_cross_entropy(input, target, o.weight(weight));
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options_) : options(options_) { reset(); }
void BCEWithLogitsLossImpl::reset() {
  weight = register_buffer("weight", options.weight());
  pos_weight = register_buffer("pos_weight", options.pos_weight());
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  BCEWithLogitsLossOptions o = options;
  return F::binary_cross_entropy_with_logits(input, target, o.weight(weight).pos_weight(pos_weight));
}

// ---- HuberLoss, KLDivLoss, CosineEmbeddingLoss, MarginRankingLoss, TripletMarginLoss ----
Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::huber_loss(input, target, options);
}
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) { return F::kl_div(input, target, options); }
Tensor CosineEmbeddingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return F::cosine_embedding_loss(input1, input2, target, options);
}
Tensor MarginRankingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return F::margin_ranking_loss(input1, input2, target, options);
}
Tensor TripletMarginLossImpl::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
  return F::triplet_margin_loss(anchor, positive, negative, options);
}

}  // namespace graft::nn
