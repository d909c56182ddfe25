// Distances: cosine_similarity and pairwise_distance, composites of recorded ops (as ATen's are),
// so backward and double backward come from those ops.
//
// cosine_similarity(x1, x2, dim, eps) = sum_dim (x1 / max(||x1||, eps)) * (x2 / max(||x2||, eps)),
// x1 and x2 broadcast first; each norm is clamped on its own (PyTorch 1.13's formula, better
// conditioned than dividing by sqrt(||x1||^2 ||x2||^2)). Where a norm is below eps, PyTorch clamps
// it in place under no_grad, so its gradient still flows through the norm's backward, which reads
// the clamped value: d||x||/dx = x / eps there. clamped_norm gives that value and that derivative.
// pairwise_distance(x1, x2, p, eps, keepdim) = ||x1 - x2 + eps||_p over the last dim of the broadcast.
#include <cmath>
#include <limits>
#include <string>

#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

namespace {

void check_floating_pair(const Tensor& x1, const Tensor& x2, const char* op) {
  GRAFT_CHECK(x1.defined() && x2.defined(), op, "two defined tensors", "an undefined tensor", "pass both inputs");
  GRAFT_CHECK(x1.is_floating_point() && x2.is_floating_point(), op, "floating-point inputs",
              std::string("x1 of dtype ") + dtype_name(x1.dtype()) + " and x2 of dtype " + dtype_name(x2.dtype()),
              "convert them with .to(graft::kFloat32)");
}

// sqrt(s) with a zero gradient where s = 0 (instead of inf * 0 = nan; Note [Where instead of kinks]
// in loss.cpp): the p-norm's gradient at 0 is 0, as ATen's norm backward masks it.
Tensor safe_root(const Tensor& s, double p) {
  const Tensor pos = gt(s, Scalar(0.0));
  const Tensor safe = where(pos, s, Scalar(1.0));
  const Tensor root = p == 2.0 ? sqrt(safe) : pow(safe, 1.0 / p);
  return where(pos, root, Scalar(0.0));
}

// The p-norm of d over dim: p = 2 and 1 directly, inf as the largest |d|, 0 as the count of non-zeros.
Tensor p_norm(const Tensor& d, double p, int64_t dim, bool keepdim, const char* op) {
  GRAFT_CHECK(p >= 0.0, op, "p >= 0", "p " + std::to_string(p), "use p = 2 (Euclidean) or 1 (Manhattan)");
  if (p == 2.0) return safe_root((d * d).sum({dim}, keepdim), 2.0);
  if (p == 1.0) return abs(d).sum({dim}, keepdim);
  if (std::isinf(p)) return amax(abs(d), {dim}, keepdim);
  if (p == 0.0) return ne(d, Scalar(0.0)).to(d.dtype()).sum({dim}, keepdim);
  return safe_root(pow(abs(d), p).sum({dim}, keepdim), p);
}

// max(||x||, eps) over dim (kept) with PyTorch's derivative: x / ||x||, and x / eps where clamped.
Tensor clamped_norm(const Tensor& x, int64_t dim, double eps) {
  const Tensor s = (x * x).sum({dim}, true);
  const Tensor small = lt(s, Scalar(eps * eps));
  // value eps, derivative d(s / (2 eps))/dx = x / eps
  const Tensor at_eps = (s - s.detach()) * (0.5 / eps) + eps;
  return where(small, at_eps, safe_root(where(small, Scalar(1.0), s), 2.0));
}

}  // namespace

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  const char* op = "cosine_similarity";
  check_floating_pair(x1, x2, op);
  const Shape shape = broadcast_shapes(x1.sizes(), x2.sizes(), op);
  GRAFT_CHECK(!shape.empty(), op, "inputs of at least 1 dim", "0-dim inputs", "cosine_similarity reduces along dim");
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(shape.size()), op);
  const Tensor a = x1.expand(shape), b = x2.expand(shape);
  const Tensor na = clamped_norm(a, d, eps), nb = clamped_norm(b, d, eps);
  return ((a / na) * (b / nb)).sum({d});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  const char* op = "pairwise_distance";
  check_floating_pair(x1, x2, op);
  const Shape shape = broadcast_shapes(x1.sizes(), x2.sizes(), op);
  const Tensor diff = x1 - x2 + eps;
  if (shape.empty()) return p_norm(diff.reshape({1}), p, 0, false, op).reshape(keepdim ? Shape{1} : Shape{});
  return p_norm(diff, p, static_cast<int64_t>(shape.size()) - 1, keepdim, op);
}

}  // namespace graft
