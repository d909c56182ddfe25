// STUB: to be replaced by the real implementation of this op family.
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "graft/nn/functional.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

Tensor gt(const Tensor& a, const Tensor& b) { throw Error("gt", "is not implemented yet"); }
Tensor gt(const Tensor& a, const Scalar& b) { throw Error("gt", "is not implemented yet"); }
Tensor lt(const Tensor& a, const Tensor& b) { throw Error("lt", "is not implemented yet"); }
Tensor lt(const Tensor& a, const Scalar& b) { throw Error("lt", "is not implemented yet"); }
Tensor ge(const Tensor& a, const Tensor& b) { throw Error("ge", "is not implemented yet"); }
Tensor ge(const Tensor& a, const Scalar& b) { throw Error("ge", "is not implemented yet"); }
Tensor le(const Tensor& a, const Tensor& b) { throw Error("le", "is not implemented yet"); }
Tensor le(const Tensor& a, const Scalar& b) { throw Error("le", "is not implemented yet"); }
Tensor eq(const Tensor& a, const Tensor& b) { throw Error("eq", "is not implemented yet"); }
Tensor eq(const Tensor& a, const Scalar& b) { throw Error("eq", "is not implemented yet"); }
Tensor ne(const Tensor& a, const Tensor& b) { throw Error("ne", "is not implemented yet"); }
Tensor ne(const Tensor& a, const Scalar& b) { throw Error("ne", "is not implemented yet"); }
Tensor logical_not(const Tensor& a) { throw Error("logical_not", "is not implemented yet"); }
Tensor logical_and(const Tensor& a, const Tensor& b) { throw Error("logical_and", "is not implemented yet"); }
Tensor logical_or(const Tensor& a, const Tensor& b) { throw Error("logical_or", "is not implemented yet"); }
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) { throw Error("where", "is not implemented yet"); }
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b) { throw Error("where", "is not implemented yet"); }
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) { throw Error("where", "is not implemented yet"); }
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) { throw Error("masked_fill", "is not implemented yet"); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) { throw Error("masked_fill_", "is not implemented yet"); }
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) { throw Error("allclose", "is not implemented yet"); }
bool equal(const Tensor& a, const Tensor& b) { throw Error("equal", "is not implemented yet"); }
Tensor isnan(const Tensor& x) { throw Error("isnan", "is not implemented yet"); }
Tensor isinf(const Tensor& x) { throw Error("isinf", "is not implemented yet"); }
Tensor isfinite(const Tensor& x) { throw Error("isfinite", "is not implemented yet"); }

}  // namespace graft
