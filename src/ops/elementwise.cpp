// STUB: to be replaced by the real implementation of this op family.
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "graft/nn/functional.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

Tensor pow(const Tensor& base, const Tensor& exponent) { throw Error("pow", "is not implemented yet"); }
Tensor pow(const Tensor& base, const Scalar& exponent) { throw Error("pow", "is not implemented yet"); }
Tensor pow(const Scalar& base, const Tensor& exponent) { throw Error("pow", "is not implemented yet"); }
Tensor square(const Tensor& a) { throw Error("square", "is not implemented yet"); }
Tensor reciprocal(const Tensor& a) { throw Error("reciprocal", "is not implemented yet"); }
Tensor exp(const Tensor& x) { throw Error("exp", "is not implemented yet"); }
Tensor log(const Tensor& x) { throw Error("log", "is not implemented yet"); }
Tensor log1p(const Tensor& x) { throw Error("log1p", "is not implemented yet"); }
Tensor sqrt(const Tensor& x) { throw Error("sqrt", "is not implemented yet"); }
Tensor rsqrt(const Tensor& x) { throw Error("rsqrt", "is not implemented yet"); }
Tensor abs(const Tensor& x) { throw Error("abs", "is not implemented yet"); }
Tensor sign(const Tensor& x) { throw Error("sign", "is not implemented yet"); }
Tensor sin(const Tensor& x) { throw Error("sin", "is not implemented yet"); }
Tensor cos(const Tensor& x) { throw Error("cos", "is not implemented yet"); }
Tensor erf(const Tensor& x) { throw Error("erf", "is not implemented yet"); }
Tensor tanh(const Tensor& x) { throw Error("tanh", "is not implemented yet"); }
Tensor sigmoid(const Tensor& x) { throw Error("sigmoid", "is not implemented yet"); }
Tensor relu(const Tensor& x) { throw Error("relu", "is not implemented yet"); }
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) { throw Error("clamp", "is not implemented yet"); }
Tensor clamp_min(const Tensor& x, const Scalar& min) { throw Error("clamp_min", "is not implemented yet"); }
Tensor clamp_max(const Tensor& x, const Scalar& max) { throw Error("clamp_max", "is not implemented yet"); }
Tensor maximum(const Tensor& a, const Tensor& b) { throw Error("maximum", "is not implemented yet"); }
Tensor minimum(const Tensor& a, const Tensor& b) { throw Error("minimum", "is not implemented yet"); }
Tensor& Tensor::relu_() { throw Error("relu_", "is not implemented yet"); }
Tensor& Tensor::sigmoid_() { throw Error("sigmoid_", "is not implemented yet"); }
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) { throw Error("clamp_", "is not implemented yet"); }
Tensor nn::functional::relu(const Tensor& x) { throw Error("relu", "is not implemented yet"); }
Tensor nn::functional::leaky_relu(const Tensor& x, const nn::functional::LeakyReLUFuncOptions& options) { throw Error("leaky_relu", "is not implemented yet"); }
Tensor nn::functional::gelu(const Tensor& x, const nn::functional::GELUFuncOptions& options) { throw Error("gelu", "is not implemented yet"); }
Tensor nn::functional::silu(const Tensor& x) { throw Error("silu", "is not implemented yet"); }
Tensor nn::functional::softplus(const Tensor& x, const nn::functional::SoftplusFuncOptions& options) { throw Error("softplus", "is not implemented yet"); }
Tensor nn::functional::elu(const Tensor& x, const nn::functional::ELUFuncOptions& options) { throw Error("elu", "is not implemented yet"); }
Tensor nn::functional::sigmoid(const Tensor& x) { throw Error("sigmoid", "is not implemented yet"); }
Tensor nn::functional::tanh(const Tensor& x) { throw Error("tanh", "is not implemented yet"); }

}  // namespace graft
