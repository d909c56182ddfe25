// dropout, feature_dropout and dropout2d: x * keep / (1 - p), a composition of ops (bernoulli_, div, mul),
// so autograd records MulBackward0 (MulBackward0 in place for the _ forms) and the gradient is the
// scaled mask.
#include <string>
#include <vector>

#include "../core/format.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"

namespace graft {
namespace {

enum class Kind { kElement, kChannel, kImage };

// The mask 1 / (1 - p) with probability 1 - p, else 0: one value per element (kElement), per
// (n, c) of an input (N, C, *) (kChannel), or per channel of an image batch / image (kImage).
// Undefined when the input passes unchanged (eval, p = 0).
Tensor scaled_keep(const Tensor& x, double p, bool train, Kind kind, const char* op) {
  GRAFT_CHECK(p >= 0.0 && p <= 1.0, op, "a probability p in [0, 1]", "p = " + detail::py_repr(p),
              "p is the probability of zeroing an element");
  if (kind == Kind::kImage)
    GRAFT_CHECK(x.dim() == 3 || x.dim() == 4, op, "an image batch (N, C, H, W) or an image (C, H, W)",
                "a " + std::to_string(x.dim()) + "-dim input " + shape_str(x.sizes()),
                "dropout2d zeroes whole channels of images; use dropout for other shapes");
  if (kind == Kind::kChannel)
    GRAFT_CHECK(x.dim() >= 2, op, "an input (N, C, *) of at least 2 dims", shape_str(x.sizes()),
                "channels are dim 1; unsqueeze(0) an unbatched input");
  if (!train || p == 0.0) return {};
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input",
              std::string("a ") + dtype_name(x.dtype()) + " tensor", "convert it: input.to(graft::kFloat32)");
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  // Channels are dim 1, or dim 0 of an unbatched image (C, H, W).
  const size_t first_spatial = kind == Kind::kImage && x.dim() == 3 ? 1 : 2;
  if (kind != Kind::kElement)
    for (size_t d = first_spatial; d < shape.size(); ++d) shape[d] = 1;
  // keep ~ bernoulli(1 - p), drawn as PyTorch draws it (Note [PyTorch's random streams]), so a
  // seeded LibTorch program drops the same elements; p = 1 zeroes everything.
  if (p == 1.0) return zeros(shape, x.dtype());
  Tensor keep = empty(shape, x.dtype());
  keep.bernoulli_(1.0 - p);
  return keep / (1.0 - p);
}

Tensor apply(const Tensor& x, double p, bool train, Kind kind, const char* op) {
  detail::MetaOpScope meta_scope(op, {&x});  // Note [Meta device]: a meta mask, no random draw
  const Tensor mask = scaled_keep(x, p, train, kind, op);
  return mask.defined() ? x * mask : x;
}

Tensor& apply_(Tensor& x, double p, bool train, Kind kind, const char* op) {
  detail::MetaOpScope meta_scope(op, {&x});  // Note [Meta device]: a meta mask, no random draw
  const Tensor mask = scaled_keep(x, p, train, kind, op);
  if (mask.defined()) x.mul_(mask);
  return x;
}

}  // namespace

Tensor dropout(const Tensor& input, double p, bool train) { return apply(input, p, train, Kind::kElement, "dropout"); }
Tensor feature_dropout(const Tensor& input, double p, bool train) {
  return apply(input, p, train, Kind::kChannel, "feature_dropout");
}
Tensor dropout2d(const Tensor& input, double p, bool train) {
  return apply(input, p, train, Kind::kImage, "dropout2d");
}
Tensor& dropout_(Tensor& input, double p, bool train) { return apply_(input, p, train, Kind::kElement, "dropout_"); }
Tensor& feature_dropout_(Tensor& input, double p, bool train) {
  return apply_(input, p, train, Kind::kChannel, "feature_dropout_");
}
Tensor& dropout2d_(Tensor& input, double p, bool train) {
  return apply_(input, p, train, Kind::kImage, "dropout2d_");
}

}  // namespace graft
