// PyTorch's type promotion between operands (Note [Type promotion] in src/core/type_promotion.h).
#include "core/type_promotion.h"

namespace graft::detail {

DType result_type(const Tensor& a, const Tensor& b) {
  auto category = [](DType t) { return t == kBool ? 0 : (is_integral(t, false) ? 1 : 2); };
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  const Tensor& dimmed = a0 ? b : a;
  const Tensor& zero = a0 ? a : b;
  if (category(zero.dtype()) > category(dimmed.dtype())) return promote_types(dimmed.dtype(), zero.dtype());
  return dimmed.dtype();
}

DType result_type(const Tensor& a, const Scalar& s) {
  const DType t = a.dtype();
  if (s.is_floating_point() && !is_floating_point(t)) return get_default_dtype();
  if (s.is_integral() && t == kBool) return kInt64;
  return t;
}

}  // namespace graft::detail
