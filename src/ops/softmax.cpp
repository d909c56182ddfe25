// STUB: to be replaced by the real implementation of this op family.
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "graft/nn/functional.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) { throw Error("softmax", "is not implemented yet"); }
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) { throw Error("log_softmax", "is not implemented yet"); }
Tensor nn::functional::softmax(const Tensor& x, const nn::functional::SoftmaxFuncOptions& options) { throw Error("softmax", "is not implemented yet"); }
Tensor nn::functional::log_softmax(const Tensor& x, const nn::functional::LogSoftmaxFuncOptions& options) { throw Error("log_softmax", "is not implemented yet"); }

}  // namespace graft
