// STUB: to be replaced by the real implementation of this op family.
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "graft/nn/functional.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

Tensor var(const Tensor& x, bool unbiased) { throw Error("var", "is not implemented yet"); }
Tensor var(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim) { throw Error("var", "is not implemented yet"); }
Tensor std(const Tensor& x, bool unbiased) { throw Error("std", "is not implemented yet"); }
Tensor std(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim) { throw Error("std", "is not implemented yet"); }
Tensor prod(const Tensor& x, std::optional<DType> dtype) { throw Error("prod", "is not implemented yet"); }
Tensor prod(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) { throw Error("prod", "is not implemented yet"); }
Tensor max(const Tensor& x) { throw Error("max", "is not implemented yet"); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) { throw Error("max", "is not implemented yet"); }
Tensor min(const Tensor& x) { throw Error("min", "is not implemented yet"); }
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) { throw Error("min", "is not implemented yet"); }
Tensor amax(const Tensor& x, IntArrayRef dim, bool keepdim) { throw Error("amax", "is not implemented yet"); }
Tensor amin(const Tensor& x, IntArrayRef dim, bool keepdim) { throw Error("amin", "is not implemented yet"); }
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { throw Error("argmax", "is not implemented yet"); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { throw Error("argmin", "is not implemented yet"); }
Tensor logsumexp(const Tensor& x, IntArrayRef dim, bool keepdim) { throw Error("logsumexp", "is not implemented yet"); }

}  // namespace graft
