// graft::nn::functional: each function unpacks its option struct into the positional arguments of
// the graft op of the same name (graft/ops/ops.h), as LibTorch's torch::nn::functional wraps ATen.
// Nothing else belongs here: formulas, kernels and argument checks live with the ops in src/ops,
// so an error names the op and reads the same from either spelling.
#include "graft/nn/functional.h"

#include "graft/ops/ops.h"

namespace graft::nn::functional {

// ---- activations ----
Tensor relu(const Tensor& x) { return graft::relu(x); }
Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& options) {
  return graft::leaky_relu(x, options.negative_slope());
}
Tensor gelu(const Tensor& x, const GELUFuncOptions& options) { return graft::gelu(x, options.approximate()); }
Tensor silu(const Tensor& x) { return graft::silu(x); }
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& options) {
  return graft::softplus(x, options.beta(), options.threshold());
}
Tensor elu(const Tensor& x, const ELUFuncOptions& options) { return graft::elu(x, options.alpha()); }
Tensor sigmoid(const Tensor& x) { return graft::sigmoid(x); }
Tensor tanh(const Tensor& x) { return graft::tanh(x); }
Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& options) {
  return graft::softmax(x, options.dim(), options.dtype());
}
Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& options) {
  return graft::log_softmax(x, options.dim(), options.dtype());
}

// ---- layers ----
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return graft::linear(input, weight, bias);
}
Tensor fused_linear(const Tensor& input, const Tensor& weight, const Tensor& bias, FusedActivation activation) {
  return graft::fused_linear(input, weight, bias, activation);
}
// LibTorch's argument order (input, weight); ATen's op takes (weight, indices).
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options) {
  return graft::embedding(weight, input, options.padding_idx());
}
Tensor one_hot(const Tensor& input, int64_t num_classes) { return graft::one_hot(input, num_classes); }

// ---- convolution, pooling, normalisation ----
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options) {
  return graft::conv2d(input, weight, options.bias(), *options.stride(), *options.padding(), *options.dilation(),
                       options.groups());
}
// The one check of this file: it is about the options struct itself, which the op never sees.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dFuncOptions& options) {
  GRAFT_CHECK(!(bias.defined() && options.bias().defined()), "conv2d", "the bias given once",
              "a bias argument and options.bias()", "pass the bias either as an argument or in the options");
  return graft::conv2d(input, weight, bias.defined() ? bias : options.bias(), *options.stride(), *options.padding(),
                       *options.dilation(), options.groups());
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options) {
  return graft::conv_transpose2d(input, weight, options.bias(), *options.stride(), *options.padding(),
                                 *options.output_padding(), options.groups(), *options.dilation());
}
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return graft::max_pool2d(input, *options.kernel_size(), *options.stride(), *options.padding(), *options.dilation(),
                           options.ceil_mode());
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return graft::max_pool2d_with_indices(input, *options.kernel_size(), *options.stride(), *options.padding(),
                                        *options.dilation(), options.ceil_mode());
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options) {
  return graft::avg_pool2d(input, *options.kernel_size(), *options.stride(), *options.padding(), options.ceil_mode(),
                           options.count_include_pad(), options.divisor_override());
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options) {
  return graft::adaptive_avg_pool2d(input, *options.output_size());
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options) {
  return graft::conv1d(input, weight, options.bias(), *options.stride(), *options.padding(), *options.dilation(),
                       options.groups());
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options) {
  return graft::conv3d(input, weight, options.bias(), *options.stride(), *options.padding(), *options.dilation(),
                       options.groups());
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& options) {
  return graft::conv_transpose1d(input, weight, options.bias(), *options.stride(), *options.padding(),
                                 *options.output_padding(), options.groups(), *options.dilation());
}
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options) {
  return graft::max_pool1d(input, *options.kernel_size(), *options.stride(), *options.padding(), *options.dilation(),
                           options.ceil_mode());
}
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options) {
  return graft::avg_pool1d(input, *options.kernel_size(), *options.stride(), *options.padding(), options.ceil_mode(),
                           options.count_include_pad());
}
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options) {
  return graft::adaptive_avg_pool1d(input, *options.output_size());
}
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options) {
  return std::get<0>(graft::adaptive_max_pool2d(input, *options.output_size()));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options) {
  return graft::adaptive_max_pool2d(input, *options.output_size());
}
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options) {
  return graft::batch_norm(input, options.weight(), options.bias(), running_mean, running_var, options.training(),
                           options.momentum(), options.eps());
}
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options) {
  return graft::layer_norm(input, options.normalized_shape(), options.weight(), options.bias(), options.eps());
}

// ---- dropout ----
Tensor dropout(Tensor input, const DropoutFuncOptions& options) {
  if (options.inplace()) return graft::dropout_(input, options.p(), options.training());
  return graft::dropout(input, options.p(), options.training());
}
Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options) {
  if (options.inplace()) return graft::dropout2d_(input, options.p(), options.training());
  return graft::dropout2d(input, options.p(), options.training());
}

// ---- losses ----
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  return graft::cross_entropy(input, target, options.weight(), options.reduction(), options.ignore_index(),
                              options.label_smoothing());
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
  return graft::nll_loss(input, target, options.weight(), options.reduction(), options.ignore_index());
}
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  return graft::mse_loss(input, target, options.reduction());
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  return graft::l1_loss(input, target, options.reduction());
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options) {
  return graft::smooth_l1_loss(input, target, options.reduction(), options.beta());
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  return graft::binary_cross_entropy(input, target, options.weight(), options.reduction());
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  return graft::binary_cross_entropy_with_logits(input, target, options.weight(), options.pos_weight(),
                                                 options.reduction());
}

}  // namespace graft::nn::functional
