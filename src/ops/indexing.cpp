// STUB: to be replaced by the real implementation of this op family.
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "graft/nn/functional.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

Tensor cat(const TensorList& tensors, int64_t dim) { throw Error("cat", "is not implemented yet"); }
Tensor stack(const TensorList& tensors, int64_t dim) { throw Error("stack", "is not implemented yet"); }
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) { throw Error("index_select", "is not implemented yet"); }
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { throw Error("gather", "is not implemented yet"); }
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) { throw Error("scatter_add", "is not implemented yet"); }
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) { throw Error("index_add", "is not implemented yet"); }
Tensor nn::functional::embedding(const Tensor& input, const Tensor& weight, const nn::functional::EmbeddingFuncOptions& options) { throw Error("embedding", "is not implemented yet"); }
Tensor nn::functional::one_hot(const Tensor& input, int64_t num_classes) { throw Error("one_hot", "is not implemented yet"); }

}  // namespace graft
