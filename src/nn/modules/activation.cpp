// Activation modules.
#include "graft/nn/modules/activation.h"

#include <cmath>

#include "../../core/format.h"

namespace graft::nn {

namespace F = functional;

namespace {
// Python prints the defaults of Softplus as ints (beta=1, threshold=20): integral values without ".0".
std::string py_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return graft::detail::py_repr(v);
}
}  // namespace

Tensor ReLUImpl::forward(const Tensor& input) {
  if (options.inplace()) {
    Tensor out = input;
    return out.relu_();
  }
  return F::relu(input);
}
std::string ReLUImpl::extra_repr() const { return options.inplace() ? "inplace=True" : ""; }

Tensor LeakyReLUImpl::forward(const Tensor& input) {
  return F::leaky_relu(input, F::LeakyReLUFuncOptions().negative_slope(options.negative_slope()));
}
std::string LeakyReLUImpl::extra_repr() const {
  return "negative_slope=" + graft::detail::py_repr(options.negative_slope());
}

Tensor SigmoidImpl::forward(const Tensor& input) { return F::sigmoid(input); }
Tensor TanhImpl::forward(const Tensor& input) { return F::tanh(input); }
Tensor SiLUImpl::forward(const Tensor& input) { return F::silu(input); }

GELUImpl::GELUImpl(const GELUOptions& options_) : options(options_) { reset(); }
void GELUImpl::reset() {
  GRAFT_CHECK(options.approximate() == "none" || options.approximate() == "tanh", "GELU",
              "approximate 'none' or 'tanh'", "'" + options.approximate() + "'",
              "use \"none\" for the exact erf form or \"tanh\" for the tanh approximation");
}
Tensor GELUImpl::forward(const Tensor& input) {
  return F::gelu(input, F::GELUFuncOptions().approximate(options.approximate()));
}
std::string GELUImpl::extra_repr() const { return "approximate='" + options.approximate() + "'"; }

Tensor SoftplusImpl::forward(const Tensor& input) {
  return F::softplus(input, F::SoftplusFuncOptions().beta(options.beta()).threshold(options.threshold()));
}
std::string SoftplusImpl::extra_repr() const {
  return "beta=" + py_number(options.beta()) + ", threshold=" + py_number(options.threshold());
}

Tensor ELUImpl::forward(const Tensor& input) { return F::elu(input, F::ELUFuncOptions().alpha(options.alpha())); }
std::string ELUImpl::extra_repr() const { return "alpha=" + graft::detail::py_repr(options.alpha()); }

Tensor SoftmaxImpl::forward(const Tensor& input) { return F::softmax(input, options.dim()); }
std::string SoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

Tensor LogSoftmaxImpl::forward(const Tensor& input) { return F::log_softmax(input, options.dim()); }
std::string LogSoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

// ---- SELU, Mish, Hardswish, Hardsigmoid, Hardtanh, ReLU6, GLU, Softmin ----
Tensor SELUImpl::forward(Tensor input) { return F::selu(std::move(input), options); }
std::string SELUImpl::extra_repr() const { return options.inplace() ? "inplace=True" : ""; }
Tensor MishImpl::forward(const Tensor& input) { return F::mish(input); }
Tensor HardswishImpl::forward(const Tensor& input) { return F::hardswish(input); }
Tensor HardsigmoidImpl::forward(const Tensor& input) { return F::hardsigmoid(input); }

HardtanhImpl::HardtanhImpl(const HardtanhOptions& options_) : options(options_) { reset(); }
void HardtanhImpl::reset() {
  GRAFT_CHECK(options.max_val() > options.min_val(), "Hardtanh", "max_val > min_val",
              "min_val " + graft::detail::py_repr(options.min_val()) + ", max_val " +
                  graft::detail::py_repr(options.max_val()),
              "give a lower min_val than max_val");
}
Tensor HardtanhImpl::forward(Tensor input) { return F::hardtanh(std::move(input), options); }
std::string HardtanhImpl::extra_repr() const {
  return "min_val=" + graft::detail::py_repr(options.min_val()) + ", max_val=" +
         graft::detail::py_repr(options.max_val()) + (options.inplace() ? ", inplace=True" : "");
}

Tensor ReLU6Impl::forward(Tensor input) { return F::relu6(std::move(input), options); }
std::string ReLU6Impl::extra_repr() const { return options.inplace() ? "inplace=True" : ""; }

Tensor GLUImpl::forward(const Tensor& input) { return F::glu(input, options); }
std::string GLUImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

Tensor SoftminImpl::forward(const Tensor& input) { return F::softmin(input, options.dim()); }
std::string SoftminImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

}  // namespace graft::nn
