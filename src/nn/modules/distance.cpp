// Distance modules.
#include "graft/nn/modules/distance.h"

#include "../../core/format.h"

namespace graft::nn {

namespace F = functional;

Tensor CosineSimilarityImpl::forward(const Tensor& x1, const Tensor& x2) { return F::cosine_similarity(x1, x2, options); }
std::string CosineSimilarityImpl::extra_repr() const {
  return "dim=" + std::to_string(options.dim()) + ", eps=" + graft::detail::py_repr(options.eps());
}

Tensor PairwiseDistanceImpl::forward(const Tensor& x1, const Tensor& x2) { return F::pairwise_distance(x1, x2, options); }
std::string PairwiseDistanceImpl::extra_repr() const {
  return "p=" + graft::detail::py_repr(options.p()) + ", eps=" + graft::detail::py_repr(options.eps()) +
         (options.keepdim() ? ", keepdim=True" : "");
}

}  // namespace graft::nn
