// Dropout, built from graft ops so that its gradient is the mask's: x * mask / (1 - p).
#include "graft/nn/modules/dropout.h"

#include <utility>

#include "../../core/format.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"

namespace graft::nn {

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) { reset(); }

void DropoutImpl::reset() {
  GRAFT_CHECK(options.p() >= 0.0 && options.p() <= 1.0, "Dropout", "a probability p in [0, 1]",
              "p = " + graft::detail::py_repr(options.p()), "p is the probability of zeroing an element");
}

Tensor DropoutImpl::forward(const Tensor& input) {
  const double p = options.p();
  if (!is_training() || p == 0.0) return input;
  GRAFT_CHECK(input.is_floating_point(), "Dropout", "a floating-point input",
              std::string("a ") + dtype_name(input.dtype()) + " tensor", "convert it: input.to(graft::kFloat32)");
  // keep = U[0, 1) >= p: kept with probability 1 - p; p = 1 zeroes everything.
  Tensor scaled_mask = p == 1.0 ? graft::zeros_like(input)
                                : graft::rand(input.sizes(), input.dtype()).ge(p).to(input.dtype()) / (1.0 - p);
  if (options.inplace()) {
    Tensor out = input;
    return out.mul_(scaled_mask);
  }
  return input * scaled_mask;
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

}  // namespace graft::nn
