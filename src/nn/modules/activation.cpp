// Activation modules.
#include "graft/nn/modules/activation.h"

#include <cmath>
#include <sstream>
#include <utility>

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

Tensor LeakyReLUImpl::forward(Tensor input) {
  return F::leaky_relu(std::move(input),
                       F::LeakyReLUFuncOptions().negative_slope(options.negative_slope()).inplace(options.inplace()));
}
std::string LeakyReLUImpl::libtorch_repr() const {
  std::ostringstream s;
  s << "graft::nn::LeakyReLU(negative_slope=" << options.negative_slope() << (options.inplace() ? ", inplace=true" : "")
    << ")";
  return s.str();
}
std::string LeakyReLUImpl::extra_repr() const {
  return "negative_slope=" + graft::detail::py_repr(options.negative_slope()) +
         (options.inplace() ? ", inplace=True" : "");
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

Tensor ELUImpl::forward(Tensor input) {
  return F::elu(std::move(input), F::ELUFuncOptions().alpha(options.alpha()).inplace(options.inplace()));
}
std::string ELUImpl::libtorch_repr() const {
  std::ostringstream s;  // LibTorch streams the double: alpha=1, alpha=42.42
  s << "graft::nn::ELU(alpha=" << options.alpha() << (options.inplace() ? ", inplace=true" : "") << ")";
  return s.str();
}
std::string ELUImpl::extra_repr() const {
  return "alpha=" + graft::detail::py_repr(options.alpha()) + (options.inplace() ? ", inplace=True" : "");
}

Tensor SoftmaxImpl::forward(const Tensor& input) { return F::softmax(input, options.dim()); }
std::string SoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

Tensor LogSoftmaxImpl::forward(const Tensor& input) { return F::log_softmax(input, options.dim()); }
std::string LogSoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

Tensor Softmax2dImpl::forward(const Tensor& input) {
  GRAFT_CHECK(input.dim() == 3 || input.dim() == 4, "Softmax2d", "an image batch (N, C, H, W) or an image (C, H, W)",
              "a " + std::to_string(input.dim()) + "-dim input " + shape_str(input.sizes()),
              "Softmax2d normalises over the channels (dim -3); use Softmax(dim) for other shapes");
  return F::softmax(input, -3);
}

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
              "max_val must be greater than min_val: give a lower min_val than max_val");
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
