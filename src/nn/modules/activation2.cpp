// The activations of issue 32: graft::nn::functional's prelu, rrelu, celu, softsign, tanhshrink,
// threshold, softshrink, hardshrink, logsigmoid (each the op of graft/ops/activation2.h with its
// options unpacked, as src/nn/functional.cpp does for the others) and their modules.
#include <string>

#include "../../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/nn/modules/activation.h"
#include "graft/ops/activation2.h"
#include "nn/maybe_inplace.h"

namespace graft::nn {

namespace functional {

using detail::maybe_inplace;  // nn/maybe_inplace.h

Tensor prelu(const Tensor& input, const Tensor& weight) { return graft::prelu(input, weight); }
Tensor rrelu(Tensor input, const RReLUFuncOptions& options) {
  return maybe_inplace(input, options.inplace(), [&](const Tensor& x) {
    return graft::rrelu(x, options.lower(), options.upper(), options.training());
  });
}
Tensor celu(Tensor input, const CELUFuncOptions& options) {
  return maybe_inplace(input, options.inplace(), [&](const Tensor& x) { return graft::celu(x, options.alpha()); });
}
Tensor softsign(const Tensor& input) { return graft::softsign(input); }
Tensor tanhshrink(const Tensor& input) { return graft::tanhshrink(input); }
Tensor threshold(Tensor input, const ThresholdFuncOptions& options) {
  return maybe_inplace(input, options.inplace(), [&](const Tensor& x) {
    return graft::threshold(x, options.threshold(), options.value());
  });
}
Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& options) {
  return graft::softshrink(input, options.lambda());
}
Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& options) {
  return graft::hardshrink(input, options.lambda());
}
Tensor logsigmoid(const Tensor& input) { return graft::log_sigmoid(input); }

}  // namespace functional

namespace F = functional;

namespace {
std::string inplace_str(bool inplace) { return inplace ? ", inplace=True" : ""; }
}  // namespace

// ---- PReLU ----
PReLUImpl::PReLUImpl(const PReLUOptions& options_) : options(options_) { reset(); }
void PReLUImpl::reset() {
  GRAFT_CHECK(options.num_parameters() >= 1, "PReLU", "num_parameters >= 1",
              "num_parameters " + std::to_string(options.num_parameters()),
              "use 1 (one slope for all channels) or the channel count");
  weight = register_parameter("weight", graft::empty({options.num_parameters()}));
  reset_parameters();
}
void PReLUImpl::reset_parameters() {
  NoGradGuard no_grad;
  weight.fill_(options.init());
}
Tensor PReLUImpl::forward(const Tensor& input) { return F::prelu(input, weight); }
std::string PReLUImpl::extra_repr() const { return "num_parameters=" + std::to_string(options.num_parameters()); }

// ---- RReLU ----
Tensor RReLUImpl::forward(Tensor input) {
  return F::rrelu(std::move(input), F::RReLUFuncOptions()
                                        .lower(options.lower())
                                        .upper(options.upper())
                                        .training(is_training())
                                        .inplace(options.inplace()));
}
std::string RReLUImpl::extra_repr() const {
  return "lower=" + graft::detail::py_repr(options.lower()) + ", upper=" + graft::detail::py_repr(options.upper()) +
         inplace_str(options.inplace());
}

// ---- CELU, Softsign, Tanhshrink, Threshold ----
Tensor CELUImpl::forward(Tensor input) { return F::celu(std::move(input), options); }
std::string CELUImpl::extra_repr() const {
  return "alpha=" + graft::detail::py_repr(options.alpha()) + inplace_str(options.inplace());
}
Tensor SoftsignImpl::forward(const Tensor& input) { return F::softsign(input); }
Tensor TanhshrinkImpl::forward(const Tensor& input) { return F::tanhshrink(input); }
Tensor ThresholdImpl::forward(Tensor input) { return F::threshold(std::move(input), options); }
std::string ThresholdImpl::extra_repr() const {
  return "threshold=" + graft::detail::py_repr(options.threshold()) +
         ", value=" + graft::detail::py_repr(options.value()) + inplace_str(options.inplace());
}

// ---- Softshrink, Hardshrink, LogSigmoid ----
Tensor SoftshrinkImpl::forward(const Tensor& input) { return F::softshrink(input, options); }
std::string SoftshrinkImpl::extra_repr() const { return graft::detail::py_repr(options.lambda()); }
Tensor HardshrinkImpl::forward(const Tensor& input) { return F::hardshrink(input, options); }
std::string HardshrinkImpl::extra_repr() const { return graft::detail::py_repr(options.lambda()); }
Tensor LogSigmoidImpl::forward(const Tensor& input) { return F::logsigmoid(input); }

}  // namespace graft::nn
