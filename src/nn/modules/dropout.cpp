// Dropout modules: options, checks and printing; the masking is graft::dropout / graft::dropout2d /
// graft::feature_dropout (src/ops/dropout.cpp), reached through nn::functional. Also
// functional::dropout3d, alpha_dropout and feature_alpha_dropout (issue 32), compositions of ops
// (bernoulli_, mul, add), so autograd records their MulBackward0 / AddBackward0.
#include "graft/nn/modules/dropout.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../../core/format.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"

namespace graft::nn {

namespace functional {
namespace {

void check_dropout_probability(double p, const char* op) {
  GRAFT_CHECK(p >= 0.0 && p <= 1.0, op, "a probability p in [0, 1]", "p = " + graft::detail::py_repr(p),
              "p is the probability of dropping an element");
}

void check_dropout_floating(const Tensor& x, const char* op) {
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input",
              std::string("a ") + dtype_name(x.dtype()) + " tensor", "convert it: input.to(graft::kFloat32)");
}

// keep ~ Bernoulli(1 - p) as 1 / 0 in x's dtype, drawn as graft::dropout and PyTorch draw it:
// one value per element, or per (n, c) of an input (N, C, *) when per_channel (shape (N, C, 1, ...)).
Tensor bernoulli_keep(const Tensor& x, double p, bool per_channel) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  if (per_channel)
    for (size_t d = 2; d < shape.size(); ++d) shape[d] = 1;
  Tensor keep = empty(shape, x.dtype());
  keep.bernoulli_(1.0 - p);
  return keep;
}

Tensor alpha_dropout_impl(Tensor input, double p, bool training, bool inplace, bool per_channel, const char* op) {
  check_dropout_probability(p, op);
  // As ATen: an identity (in evaluation, p = 0, no elements) returns before the channel check
  if (!training || p == 0.0 || input.numel() == 0) return input;
  if (per_channel)
    GRAFT_CHECK(input.dim() >= 2, op, "an input (N, C, *) of at least 2 dims", shape_str(input.sizes()),
                "Feature dropout requires at least 2 dimensions in the input: channels are dim 1; unsqueeze(0) an "
                "unbatched input");
  check_dropout_floating(input, op);
  if (p == 1.0) {  // PyTorch multiplies by 0 (no affine shift): all zeros
    const Tensor zero = zeros({}, input.dtype());
    if (inplace) return input.mul_(zero);
    return input * zero;
  }
  // SELU's alpha * scale: the value SELU saturates to is -kAlpha (PyTorch's constant).
  constexpr double kAlpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1.0) * (1.0 - p));
  const Tensor keep = bernoulli_keep(input, p, per_channel);
  const Tensor scale = keep * a;                                        // a where kept, 0 where dropped
  // ATen's order of operations, so the roundings are its own: alpha a p kept, alpha a (p - 1) dropped
  const Tensor shift = (keep - 1.0) * (kAlpha * a) + kAlpha * a * p;
  if (inplace) {
    input.mul_(scale);
    return input.add_(shift);
  }
  return input * scale + shift;
}

}  // namespace

Tensor dropout3d(Tensor input, const Dropout3dFuncOptions& options) {
  const double p = options.p();
  check_dropout_probability(p, "dropout3d");
  GRAFT_CHECK(input.dim() == 4 || input.dim() == 5, "dropout3d",
              "a volume batch (N, C, D, H, W) or a volume (C, D, H, W)",
              "a " + std::to_string(input.dim()) + "-dim input " + shape_str(input.sizes()),
              "dropout3d zeroes whole channels of volumes; use dropout for other shapes");
  if (input.dim() == 5) {
    if (options.inplace()) return graft::feature_dropout_(input, p, options.training());
    return graft::feature_dropout(input, p, options.training());
  }
  // One volume (C, D, H, W): the channels are dim 0; one keep per channel, shaped (C, 1, 1, 1).
  if (!options.training() || p == 0.0) return input;
  check_dropout_floating(input, "dropout3d");
  const Tensor mask = p == 1.0 ? zeros({input.size(0), 1, 1, 1}, input.dtype())
                               : bernoulli_keep(input.unsqueeze(0), p, true).squeeze(0) / (1.0 - p);
  if (options.inplace()) return input.mul_(mask);
  return input * mask;
}

Tensor alpha_dropout(Tensor input, const AlphaDropoutFuncOptions& options) {
  return alpha_dropout_impl(std::move(input), options.p(), options.training(), options.inplace(), false,
                            "alpha_dropout");
}

Tensor feature_alpha_dropout(Tensor input, const FeatureAlphaDropoutFuncOptions& options) {
  return alpha_dropout_impl(std::move(input), options.p(), options.training(), options.inplace(), true,
                            "feature_alpha_dropout");
}

}  // namespace functional

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) { reset(); }

void DropoutImpl::reset() {
  GRAFT_CHECK(options.p() >= 0.0 && options.p() <= 1.0, "Dropout", "a probability p in [0, 1]",
              "p = " + graft::detail::py_repr(options.p()), "p is the probability of zeroing an element");
}

Tensor DropoutImpl::forward(const Tensor& input) {
  // The module names itself in the one message it owns; the mask is graft::dropout's (ops/dropout.cpp).
  if (is_training() && options.p() != 0.0)
    GRAFT_CHECK(input.is_floating_point(), "Dropout", "a floating-point input",
                std::string("a ") + dtype_name(input.dtype()) + " tensor", "convert it: input.to(graft::kFloat32)");
  const auto func_options =
      functional::DropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace());
  return functional::dropout(input, func_options);
}

std::string DropoutImpl::extra_repr() const {
  return "p=" + graft::detail::py_repr(options.p()) + ", inplace=" + graft::detail::py_bool(options.inplace());
}

Dropout2dImpl::Dropout2dImpl(const Dropout2dOptions& options_) : options(options_) { reset(); }

void Dropout2dImpl::reset() {
  GRAFT_CHECK(options.p() >= 0.0 && options.p() <= 1.0, "Dropout2d", "a probability p in [0, 1]",
              "p = " + graft::detail::py_repr(options.p()), "p is the probability of zeroing a channel");
}

Tensor Dropout2dImpl::forward(Tensor input) {
  const auto func_options =
      functional::Dropout2dFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace());
  return functional::dropout2d(std::move(input), func_options);
}

std::string Dropout2dImpl::extra_repr() const {
  return "p=" + graft::detail::py_repr(options.p()) + ", inplace=" + graft::detail::py_bool(options.inplace());
}

namespace {

void check_module_p(double p, const char* module) {
  GRAFT_CHECK(p >= 0.0 && p <= 1.0, module, "a probability p in [0, 1]", "p = " + graft::detail::py_repr(p),
              "p is the probability of dropping an element or channel");
}

std::string dropout_repr(const DropoutOptions& o) {
  return "p=" + graft::detail::py_repr(o.p()) + ", inplace=" + graft::detail::py_bool(o.inplace());
}

}  // namespace

Dropout3dImpl::Dropout3dImpl(const Dropout3dOptions& options_) : options(options_) { reset(); }
void Dropout3dImpl::reset() { check_module_p(options.p(), "Dropout3d"); }
Tensor Dropout3dImpl::forward(Tensor input) {
  return functional::dropout3d(
      std::move(input),
      functional::Dropout3dFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}
std::string Dropout3dImpl::extra_repr() const { return dropout_repr(options); }

AlphaDropoutImpl::AlphaDropoutImpl(const AlphaDropoutOptions& options_) : options(options_) { reset(); }
void AlphaDropoutImpl::reset() { check_module_p(options.p(), "AlphaDropout"); }
Tensor AlphaDropoutImpl::forward(Tensor input) {
  return functional::alpha_dropout(
      std::move(input),
      functional::AlphaDropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}
std::string AlphaDropoutImpl::extra_repr() const { return dropout_repr(options); }

FeatureAlphaDropoutImpl::FeatureAlphaDropoutImpl(const FeatureAlphaDropoutOptions& options_) : options(options_) {
  reset();
}
void FeatureAlphaDropoutImpl::reset() { check_module_p(options.p(), "FeatureAlphaDropout"); }
Tensor FeatureAlphaDropoutImpl::forward(Tensor input) {
  return functional::feature_alpha_dropout(
      std::move(input),
      functional::FeatureAlphaDropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}
std::string FeatureAlphaDropoutImpl::extra_repr() const { return dropout_repr(options); }

}  // namespace graft::nn
