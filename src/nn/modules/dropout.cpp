// Dropout modules: options, checks and printing; the masking is graft::dropout / graft::dropout2d
// (src/ops/dropout.cpp), reached through nn::functional.
#include "graft/nn/modules/dropout.h"

#include <utility>

#include "../../core/format.h"

namespace graft::nn {

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

}  // namespace graft::nn
