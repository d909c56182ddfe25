// STUB: to be replaced by the real implementation of this op family.
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "graft/nn/functional.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

const char* reduction_name(Reduction r) { throw Error("reduction_name", "is not implemented yet"); }
Tensor nn::functional::cross_entropy(const Tensor& input, const Tensor& target, const nn::functional::CrossEntropyFuncOptions& options) { throw Error("cross_entropy", "is not implemented yet"); }
Tensor nn::functional::nll_loss(const Tensor& input, const Tensor& target, const nn::functional::NLLLossFuncOptions& options) { throw Error("nll_loss", "is not implemented yet"); }
Tensor nn::functional::mse_loss(const Tensor& input, const Tensor& target, const nn::functional::MSELossFuncOptions& options) { throw Error("mse_loss", "is not implemented yet"); }
Tensor nn::functional::l1_loss(const Tensor& input, const Tensor& target, const nn::functional::L1LossFuncOptions& options) { throw Error("l1_loss", "is not implemented yet"); }
Tensor nn::functional::smooth_l1_loss(const Tensor& input, const Tensor& target, const nn::functional::SmoothL1LossFuncOptions& options) { throw Error("smooth_l1_loss", "is not implemented yet"); }
Tensor nn::functional::binary_cross_entropy(const Tensor& input, const Tensor& target, const nn::functional::BinaryCrossEntropyFuncOptions& options) { throw Error("binary_cross_entropy", "is not implemented yet"); }
Tensor nn::functional::binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const nn::functional::BinaryCrossEntropyWithLogitsFuncOptions& options) { throw Error("binary_cross_entropy_with_logits", "is not implemented yet"); }

}  // namespace graft
