// STUB: to be replaced by the real implementation of this op family.
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "graft/nn/functional.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

Tensor matmul(const Tensor& a, const Tensor& b) { throw Error("matmul", "is not implemented yet"); }
Tensor mm(const Tensor& a, const Tensor& b) { throw Error("mm", "is not implemented yet"); }
Tensor bmm(const Tensor& a, const Tensor& b) { throw Error("bmm", "is not implemented yet"); }
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) { throw Error("addmm", "is not implemented yet"); }
Tensor nn::functional::linear(const Tensor& input, const Tensor& weight, const Tensor& bias) { throw Error("linear", "is not implemented yet"); }

}  // namespace graft
