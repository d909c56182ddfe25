// graft::nn::functional: activations, linear, embedding, softmax, convolution, pooling,
// normalisation and losses, with LibTorch's option structs: namespace F = graft::nn::functional;
// F::cross_entropy(x, y, F::CrossEntropyFuncOptions().ignore_index(0).label_smoothing(0.1)).
// Each is the op of the same name in graft/ops/ops.h (graft::cross_entropy(x, y, {}, graft::kMean,
// 0, 0.1)) with the options unpacked into its positional arguments (src/nn/functional.cpp), as
// LibTorch's torch::nn::functional wraps ATen; the formulas and argument checks are the ops'.
#pragma once

#include <array>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/ops/ops.h"

// GRAFT_ARG(type, name): a chainable setter `name(v)` and a getter `name()`, like LibTorch's TORCH_ARG.
#define GRAFT_ARG(T, name)                                        \
 public:                                                          \
  auto& name(const T& v) { name##_ = v; return *this; }           \
  const T& name() const { return name##_; }                       \
                                                                  \
 private:                                                         \
  T name##_

namespace graft {

// Reduction (kNone, kMean, kSum) and FusedActivation are the ops' (graft/ops/ops.h).

// kl_div's batch-mean reduction (LibTorch's torch::kBatchMean): see nn::functional::KLDivReduction.
struct BatchMeanReduction {};
inline constexpr BatchMeanReduction kBatchMean{};

// D int64 values given either as one value (used for all D) or as a list of exactly D, like
// LibTorch's ExpandingArray: .stride(2) means {2, 2}, .stride({2, 1}) means height 2, width 1.
template <size_t D>
class ExpandingArray {
 public:
  ExpandingArray(int64_t v) { values_.fill(v); }  // NOLINT
  ExpandingArray(std::initializer_list<int64_t> list) { assign(list.begin(), list.size()); }
  ExpandingArray(const std::vector<int64_t>& list) { assign(list.data(), list.size()); }  // NOLINT
  ExpandingArray(const std::array<int64_t, D>& a) : values_(a) {}  // NOLINT
  ExpandingArray(IntArrayRef list) { assign(list.data(), list.size()); }  // NOLINT: Unfold(IntArrayRef({2, 4}))
  int64_t operator[](size_t i) const { return values_[i]; }
  static constexpr size_t size() { return D; }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + D; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  const std::array<int64_t, D>& operator*() const { return values_; }

 private:
  void assign(const int64_t* p, size_t n) {
    GRAFT_CHECK(n == D, "ExpandingArray", "a list of " + std::to_string(D) + " values (or a single value)",
                "a list of " + std::to_string(n) + " values", "");
    for (size_t i = 0; i < D; ++i) values_[i] = p[i];
  }
  std::array<int64_t, D> values_{};
};

// LibTorch's ExpandingArrayWithOptionalElem, the adaptive 2-D / 3-D pools' output_size: D sizes,
// each a value or None (graft::nullopt: that dim keeps the input's size), one value for all dims or
// a list of D: {3, graft::nullopt}. It is the ExpandingArray<D> of the values (a None read as 0) so
// that code taking an ExpandingArray<D> still takes it; has_value(i) and sizes_for(input) tell the
// Nones apart (the functionals resolve them with sizes_for).
template <size_t D>
class ExpandingArrayWithOptionalElem : public ExpandingArray<D> {
 public:
  ExpandingArrayWithOptionalElem(int64_t v) : ExpandingArray<D>(v) { present_.fill(true); }  // NOLINT
  ExpandingArrayWithOptionalElem(std::initializer_list<int64_t> list) : ExpandingArray<D>(list) { present_.fill(true); }
  ExpandingArrayWithOptionalElem(const std::vector<int64_t>& list) : ExpandingArray<D>(list) { present_.fill(true); }  // NOLINT
  ExpandingArrayWithOptionalElem(const ExpandingArray<D>& a) : ExpandingArray<D>(a) { present_.fill(true); }  // NOLINT
  ExpandingArrayWithOptionalElem(std::initializer_list<std::optional<int64_t>> list)
      : ExpandingArray<D>(values_of(list)) {
    size_t i = 0;
    for (const auto& v : list) present_[i++] = v.has_value();
  }
  bool has_value(size_t i) const { return present_[i]; }
  // The sizes, a None taken from the matching one of the last D dims of `input_sizes`.
  std::array<int64_t, D> sizes_for(IntArrayRef input_sizes) const {
    std::array<int64_t, D> out{};
    for (size_t i = 0; i < D; ++i) {
      out[i] = (*this)[i];
      if (!present_[i] && input_sizes.size() >= D) out[i] = input_sizes[input_sizes.size() - D + i];
    }
    return out;
  }

 private:
  static std::vector<int64_t> values_of(std::initializer_list<std::optional<int64_t>> list) {
    std::vector<int64_t> v;
    for (const auto& x : list) v.push_back(x.value_or(0));
    return v;  // ExpandingArray checks the count
  }
  std::array<bool, D> present_{};
};

// An ExpandingArray<D> object (not a braced list, which the ExpandingArrayWithOptionalElem
// constructor takes) converts to the options too: two user conversions, so a constructor of its own.
#define GRAFT_OPTIONAL_SIZE_FROM_EXPANDING_ARRAY(Options, D)                                              \
  template <class A, std::enable_if_t<std::is_same_v<A, ExpandingArray<D>>, int> = 0>                  \
  Options(const A& output_size) : output_size_(output_size) {} /* NOLINT */

namespace nn::functional {

// inplace (LibTorch's option): the input takes the result and is returned (src/nn/maybe_inplace.h).
struct LeakyReLUFuncOptions {
  GRAFT_ARG(double, negative_slope) = 0.01;
  GRAFT_ARG(bool, inplace) = false;
};
struct GELUFuncOptions { GRAFT_ARG(std::string, approximate) = "none"; };  // "none" or "tanh"
struct SoftplusFuncOptions { GRAFT_ARG(double, beta) = 1.0; GRAFT_ARG(double, threshold) = 20.0; };
struct ELUFuncOptions {
  GRAFT_ARG(double, alpha) = 1.0;
  GRAFT_ARG(bool, inplace) = false;
};
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
  GRAFT_ARG(std::optional<DType>, dtype) = std::nullopt;
};
struct LogSoftmaxFuncOptions {
  LogSoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
  GRAFT_ARG(std::optional<DType>, dtype) = std::nullopt;
};
struct DropoutFuncOptions {
  GRAFT_ARG(double, p) = 0.5;
  GRAFT_ARG(bool, training) = true;
  GRAFT_ARG(bool, inplace) = false;
};
using Dropout2dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;
// LibTorch's alpha dropout options: training is false by default (unlike DropoutFuncOptions).
struct AlphaDropoutFuncOptions {
  GRAFT_ARG(double, p) = 0.5;
  GRAFT_ARG(bool, training) = false;
  GRAFT_ARG(bool, inplace) = false;
};
using FeatureAlphaDropoutFuncOptions = AlphaDropoutFuncOptions;
struct EmbeddingFuncOptions {
  GRAFT_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  // Looked-up rows whose norm_type-norm exceeds max_norm are scaled down to it, in place in weight.
  GRAFT_ARG(std::optional<double>, max_norm) = std::nullopt;
  GRAFT_ARG(double, norm_type) = 2.;
  // Each row's gradient divided by how often input names it.
  GRAFT_ARG(bool, scale_grad_by_freq) = false;
  GRAFT_ARG(bool, sparse) = false;  // true is refused: graft has no sparse gradients
};

struct CrossEntropyFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(int64_t, ignore_index) = -100;
  GRAFT_ARG(Reduction, reduction) = kMean;
  GRAFT_ARG(double, label_smoothing) = 0.0;
};
// linear_cross_entropy (below): cross_entropy's options without class weights, and the rows per
// chunk (0: as many as keep one chunk's logits within 16 MiB; Note [Linear cross-entropy in chunks]).
struct LinearCrossEntropyFuncOptions {
  GRAFT_ARG(int64_t, ignore_index) = -100;
  GRAFT_ARG(Reduction, reduction) = kMean;
  GRAFT_ARG(double, label_smoothing) = 0.0;
  GRAFT_ARG(int64_t, chunk_size) = 0;
};
struct NLLLossFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(int64_t, ignore_index) = -100;
  GRAFT_ARG(Reduction, reduction) = kMean;
};
// As LibTorch's, these three are made from a reduction too: F::mse_loss(x, y, torch::kSum).
struct MSELossFuncOptions {
  MSELossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT(google-explicit-constructor)
  GRAFT_ARG(Reduction, reduction);
};
struct L1LossFuncOptions {
  L1LossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT(google-explicit-constructor)
  GRAFT_ARG(Reduction, reduction);
};
struct SmoothL1LossFuncOptions {
  SmoothL1LossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT(google-explicit-constructor)
  GRAFT_ARG(Reduction, reduction);
  GRAFT_ARG(double, beta) = 1.0;
};
struct BinaryCrossEntropyFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct BinaryCrossEntropyWithLogitsFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(Reduction, reduction) = kMean;
  GRAFT_ARG(Tensor, pos_weight) = {};
};

// Convolution, pooling and normalisation (graft::conv2d, max_pool2d, ..., in src/ops/conv.cpp,
// pooling.cpp, normalization.cpp).
struct Conv2dFuncOptions {
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(ExpandingArray<2>, stride) = 1;
  GRAFT_ARG(ExpandingArray<2>, padding) = 0;
  GRAFT_ARG(ExpandingArray<2>, dilation) = 1;
  GRAFT_ARG(int64_t, groups) = 1;
};
struct ConvTranspose2dFuncOptions {
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(ExpandingArray<2>, stride) = 1;
  GRAFT_ARG(ExpandingArray<2>, padding) = 0;
  GRAFT_ARG(ExpandingArray<2>, output_padding) = 0;
  GRAFT_ARG(int64_t, groups) = 1;
  GRAFT_ARG(ExpandingArray<2>, dilation) = 1;
};
struct MaxPool2dFuncOptions {
  MaxPool2dFuncOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  MaxPool2dFuncOptions(int64_t kernel_size) : MaxPool2dFuncOptions(ExpandingArray<2>(kernel_size)) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<2>, kernel_size);
  GRAFT_ARG(ExpandingArray<2>, stride);  // defaults to kernel_size
  GRAFT_ARG(ExpandingArray<2>, padding) = 0;
  GRAFT_ARG(ExpandingArray<2>, dilation) = 1;
  GRAFT_ARG(bool, ceil_mode) = false;
};
struct AvgPool2dFuncOptions {
  AvgPool2dFuncOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  AvgPool2dFuncOptions(int64_t kernel_size) : AvgPool2dFuncOptions(ExpandingArray<2>(kernel_size)) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<2>, kernel_size);
  GRAFT_ARG(ExpandingArray<2>, stride);  // defaults to kernel_size
  GRAFT_ARG(ExpandingArray<2>, padding) = 0;
  GRAFT_ARG(bool, ceil_mode) = false;
  GRAFT_ARG(bool, count_include_pad) = true;
  GRAFT_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
struct AdaptiveAvgPool2dFuncOptions {
  AdaptiveAvgPool2dFuncOptions(ExpandingArrayWithOptionalElem<2> output_size) : output_size_(output_size) {}  // NOLINT
  AdaptiveAvgPool2dFuncOptions(int64_t output_size) : output_size_(output_size) {}  // NOLINT
  GRAFT_OPTIONAL_SIZE_FROM_EXPANDING_ARRAY(AdaptiveAvgPool2dFuncOptions, 2)
  GRAFT_ARG(ExpandingArrayWithOptionalElem<2>, output_size);  // a None keeps the input's size
};
struct BatchNormFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(bool, training) = false;
  GRAFT_ARG(std::optional<double>, momentum) = 0.1;  // needed to update running stats
  GRAFT_ARG(double, eps) = 1e-5;
};
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  GRAFT_ARG(std::vector<int64_t>, normalized_shape);
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(double, eps) = 1e-5;
};

// ---- activations ----
Tensor relu(const Tensor& x);
Tensor leaky_relu(Tensor x, const LeakyReLUFuncOptions& options = {});
Tensor gelu(const Tensor& x, const GELUFuncOptions& options = {});
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& options = {});
Tensor elu(Tensor x, const ELUFuncOptions& options = {});
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& options);
Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& options);
// PyTorch 2.x's F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale), the op
// itself (graft/ops/ops.h; the backends: graft/ops/attention.h).
using graft::scaled_dot_product_attention;

// ---- activations: selu, mish, hardswish, hardsigmoid, hardtanh, relu6, glu, softmin ----
// (LibTorch 1.13 has no F::hardswish / F::hardsigmoid; graft adds them, as torch::hardswish is ATen's.)
// With inplace(true) the input is overwritten with the result and returned, as LibTorch's selu_ etc.
struct SELUFuncOptions {
  SELUFuncOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  GRAFT_ARG(bool, inplace);
};
struct HardtanhFuncOptions {
  GRAFT_ARG(double, min_val) = -1.0;
  GRAFT_ARG(double, max_val) = 1.0;
  GRAFT_ARG(bool, inplace) = false;
};
struct ReLU6FuncOptions {
  ReLU6FuncOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  GRAFT_ARG(bool, inplace);
};
struct GLUFuncOptions {
  GLUFuncOptions(int64_t dim = -1) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
};
struct SoftminFuncOptions {
  SoftminFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
  GRAFT_ARG(std::optional<DType>, dtype) = std::nullopt;
};
Tensor selu(Tensor input, const SELUFuncOptions& options = {});
Tensor mish(const Tensor& input);
Tensor hardswish(const Tensor& input);
Tensor hardsigmoid(const Tensor& input);
Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options = {});
Tensor relu6(Tensor input, const ReLU6FuncOptions& options = {});
Tensor glu(const Tensor& input, const GLUFuncOptions& options = {});  // a * sigmoid(b), halves a, b along dim
Tensor softmin(const Tensor& input, const SoftminFuncOptions& options);  // softmax(-input)

// ---- activations: prelu, rrelu, celu, softsign, tanhshrink, threshold, softshrink, hardshrink,
// logsigmoid (issue 32): the ops of graft/ops/activation2.h (graft::prelu, graft::rrelu, ...),
// implemented in src/nn/modules/activation2.cpp. inplace(true) overwrites the input, as above.
struct RReLUFuncOptions {
  GRAFT_ARG(double, lower) = 1.0 / 8.0;
  GRAFT_ARG(double, upper) = 1.0 / 3.0;
  GRAFT_ARG(bool, training) = false;  // false: leaky_relu with slope (lower + upper) / 2
  GRAFT_ARG(bool, inplace) = false;
};
struct CELUFuncOptions {
  GRAFT_ARG(double, alpha) = 1.0;
  GRAFT_ARG(bool, inplace) = false;
};
struct ThresholdFuncOptions {
  ThresholdFuncOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  GRAFT_ARG(double, threshold);
  GRAFT_ARG(double, value);
  GRAFT_ARG(bool, inplace) = false;
};
struct SoftshrinkFuncOptions {
  SoftshrinkFuncOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  GRAFT_ARG(double, lambda);
};
struct HardshrinkFuncOptions {
  HardshrinkFuncOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  GRAFT_ARG(double, lambda);
};
// weight: 1 value, or one per channel (dim 1 of input).
Tensor prelu(const Tensor& input, const Tensor& weight);
Tensor rrelu(Tensor input, const RReLUFuncOptions& options = {});
Tensor celu(Tensor input, const CELUFuncOptions& options = {});
Tensor softsign(const Tensor& input);    // input / (1 + |input|)
Tensor tanhshrink(const Tensor& input);  // input - tanh(input)
Tensor threshold(Tensor input, const ThresholdFuncOptions& options);  // value where input <= threshold
Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& options = {});
Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& options = {});
Tensor logsigmoid(const Tensor& input);

// ---- layers ----
// y = x @ weight^T + bias; x (*, in), weight (out, in), bias (out) or undefined.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// act(linear(input, weight, bias)) as one op (graft::fused_linear: Note [Fused linear + activation]
// in src/ops/linalg.cpp). nn::Sequential calls it for a Linear followed by one of these activations
// (SequentialImpl::set_fusion).
using graft::FusedActivation;
Tensor fused_linear(const Tensor& input, const Tensor& weight, const Tensor& bias, FusedActivation activation);
// Rows of `weight` (num, dim) picked by int64 `input` of any shape: result input.shape + [dim].
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options = {});
// int64 (*,) -> int64 (*, num_classes); num_classes = -1 means max(input) + 1.
Tensor one_hot(const Tensor& input, int64_t num_classes = -1);

// ---- convolution, pooling, normalisation (input (N, C, H, W), or (C, H, W) unbatched) ----
// weight (out_channels, in_channels / groups, kH, kW); bias (out_channels) from options.bias().
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {});
// As above with the bias given explicitly (undefined for none); options.bias() must then be unset.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dFuncOptions& options = {});
// weight (in_channels, out_channels / groups, kH, kW); bias (out_channels) from options.bias().
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options = {});
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
// (output, indices): indices (int64) of each maximum within its input plane (h * W + w).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& options);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options);
// 1-D and 3-D convolution, 1-D pooling, adaptive max pooling (graft::conv1d, ..., as above).
// input (N, C, L) / (N, C, D, H, W) or unbatched; weight (out_channels, in_channels / groups, kL) /
// (..., kD, kH, kW); conv_transpose1d's weight (in_channels, out_channels / groups, kL).
struct Conv1dFuncOptions {
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(ExpandingArray<1>, stride) = 1;
  GRAFT_ARG(ExpandingArray<1>, padding) = 0;
  GRAFT_ARG(ExpandingArray<1>, dilation) = 1;
  GRAFT_ARG(int64_t, groups) = 1;
};
struct Conv3dFuncOptions {
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(ExpandingArray<3>, stride) = 1;
  GRAFT_ARG(ExpandingArray<3>, padding) = 0;
  GRAFT_ARG(ExpandingArray<3>, dilation) = 1;
  GRAFT_ARG(int64_t, groups) = 1;
};
struct ConvTranspose1dFuncOptions {
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(ExpandingArray<1>, stride) = 1;
  GRAFT_ARG(ExpandingArray<1>, padding) = 0;
  GRAFT_ARG(ExpandingArray<1>, output_padding) = 0;
  GRAFT_ARG(int64_t, groups) = 1;
  GRAFT_ARG(ExpandingArray<1>, dilation) = 1;
};
struct MaxPool1dFuncOptions {
  MaxPool1dFuncOptions(ExpandingArray<1> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  MaxPool1dFuncOptions(int64_t kernel_size) : MaxPool1dFuncOptions(ExpandingArray<1>(kernel_size)) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<1>, kernel_size);
  GRAFT_ARG(ExpandingArray<1>, stride);  // defaults to kernel_size
  GRAFT_ARG(ExpandingArray<1>, padding) = 0;
  GRAFT_ARG(ExpandingArray<1>, dilation) = 1;
  GRAFT_ARG(bool, ceil_mode) = false;
};
struct AvgPool1dFuncOptions {
  AvgPool1dFuncOptions(ExpandingArray<1> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  AvgPool1dFuncOptions(int64_t kernel_size) : AvgPool1dFuncOptions(ExpandingArray<1>(kernel_size)) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<1>, kernel_size);
  GRAFT_ARG(ExpandingArray<1>, stride);  // defaults to kernel_size
  GRAFT_ARG(ExpandingArray<1>, padding) = 0;
  GRAFT_ARG(bool, ceil_mode) = false;
  GRAFT_ARG(bool, count_include_pad) = true;
};
struct AdaptiveAvgPool1dFuncOptions {
  AdaptiveAvgPool1dFuncOptions(ExpandingArray<1> output_size) : output_size_(output_size) {}  // NOLINT
  AdaptiveAvgPool1dFuncOptions(int64_t output_size) : output_size_(output_size) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<1>, output_size);
};
struct AdaptiveMaxPool2dFuncOptions {
  AdaptiveMaxPool2dFuncOptions(ExpandingArrayWithOptionalElem<2> output_size) : output_size_(output_size) {}  // NOLINT
  AdaptiveMaxPool2dFuncOptions(int64_t output_size) : output_size_(output_size) {}  // NOLINT
  GRAFT_OPTIONAL_SIZE_FROM_EXPANDING_ARRAY(AdaptiveMaxPool2dFuncOptions, 2)
  GRAFT_ARG(ExpandingArrayWithOptionalElem<2>, output_size);  // a None keeps the input's size
};
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options = {});
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options = {});
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& options = {});
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options);
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options);
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options);
// The output only, as LibTorch's F::adaptive_max_pool2d; _with_indices gives (output, indices), the
// op graft::adaptive_max_pool2d (indices within each input plane, h * W + w).
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options);

// ---- 3-D pooling, 1-D and 3-D adaptive max pooling, max_pool1d's indices (issue 32; defined in
// src/nn/modules/pooling.cpp). Compositions of the 2-D ops above, exact in values, indices, ties and
// gradients (Note [3-D pooling from the 2-D ops] there). input (N, C, D, H, W) or (C, D, H, W);
// (N, C, L) or (C, L) for the 1-D ones. Indices are flat within each input plane: (d H + h) W + w,
// or l, as PyTorch's.
struct MaxPool3dFuncOptions {
  MaxPool3dFuncOptions(ExpandingArray<3> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  MaxPool3dFuncOptions(int64_t kernel_size) : MaxPool3dFuncOptions(ExpandingArray<3>(kernel_size)) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<3>, kernel_size);
  GRAFT_ARG(ExpandingArray<3>, stride);  // defaults to kernel_size
  GRAFT_ARG(ExpandingArray<3>, padding) = 0;
  GRAFT_ARG(ExpandingArray<3>, dilation) = 1;
  GRAFT_ARG(bool, ceil_mode) = false;
};
struct AvgPool3dFuncOptions {
  AvgPool3dFuncOptions(ExpandingArray<3> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  AvgPool3dFuncOptions(int64_t kernel_size) : AvgPool3dFuncOptions(ExpandingArray<3>(kernel_size)) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<3>, kernel_size);
  GRAFT_ARG(ExpandingArray<3>, stride);  // defaults to kernel_size
  GRAFT_ARG(ExpandingArray<3>, padding) = 0;
  GRAFT_ARG(bool, ceil_mode) = false;
  GRAFT_ARG(bool, count_include_pad) = true;
  GRAFT_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
struct AdaptiveAvgPool3dFuncOptions {
  AdaptiveAvgPool3dFuncOptions(ExpandingArrayWithOptionalElem<3> output_size) : output_size_(output_size) {}  // NOLINT
  AdaptiveAvgPool3dFuncOptions(int64_t output_size) : output_size_(output_size) {}  // NOLINT
  GRAFT_OPTIONAL_SIZE_FROM_EXPANDING_ARRAY(AdaptiveAvgPool3dFuncOptions, 3)
  GRAFT_ARG(ExpandingArrayWithOptionalElem<3>, output_size);  // a None keeps the input's size
};
struct AdaptiveMaxPool1dFuncOptions {
  AdaptiveMaxPool1dFuncOptions(ExpandingArray<1> output_size) : output_size_(output_size) {}  // NOLINT
  AdaptiveMaxPool1dFuncOptions(int64_t output_size) : output_size_(output_size) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<1>, output_size);
};
struct AdaptiveMaxPool3dFuncOptions {
  AdaptiveMaxPool3dFuncOptions(ExpandingArrayWithOptionalElem<3> output_size) : output_size_(output_size) {}  // NOLINT
  AdaptiveMaxPool3dFuncOptions(int64_t output_size) : output_size_(output_size) {}  // NOLINT
  GRAFT_OPTIONAL_SIZE_FROM_EXPANDING_ARRAY(AdaptiveMaxPool3dFuncOptions, 3)
  GRAFT_ARG(ExpandingArrayWithOptionalElem<3>, output_size);  // a None keeps the input's size
};
Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& options);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& options);
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& options);
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& options);
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& options);
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options);
Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool3dFuncOptions& options);

// ---- max unpooling and power-average pooling (issue 32; defined in src/nn/modules/pooling.cpp) ----
// max_unpool{1,2,3}d: input (N, C, *D) or (C, *D) and int64 indices of its shape, as the max pools'
// _with_indices give them (flat within each (n, c) plane of the output); the output is zeros with
// each input value at its index (Note [Max unpooling]). Its size per dim is (in - 1) stride +
// kernel_size - 2 padding unless output_size gives it (D values, or N, C and D values; each within
// stride of the default).
template <size_t D>
struct MaxUnpoolFuncOptions {
  MaxUnpoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  MaxUnpoolFuncOptions(int64_t kernel_size) : MaxUnpoolFuncOptions(ExpandingArray<D>(kernel_size)) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<D>, kernel_size);
  GRAFT_ARG(ExpandingArray<D>, stride);  // kernel_size unless set
  GRAFT_ARG(ExpandingArray<D>, padding) = 0;
  GRAFT_ARG(std::optional<std::vector<int64_t>>, output_size) = std::nullopt;
};
using MaxUnpool1dFuncOptions = MaxUnpoolFuncOptions<1>;
using MaxUnpool2dFuncOptions = MaxUnpoolFuncOptions<2>;
using MaxUnpool3dFuncOptions = MaxUnpoolFuncOptions<3>;
Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& options);
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& options);
Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& options);

// lp_pool{1,2}d: (sum over each window of x^p)^(1/p), as PyTorch: avg_pool(x^p) (no padding) times
// the window's numel, negative sums clamped to 0 (sign(s) relu(|s|)), to the power 1/p.
template <size_t D>
struct LPPoolFuncOptions {
  LPPoolFuncOptions(double norm_type, ExpandingArray<D> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  GRAFT_ARG(double, norm_type);
  GRAFT_ARG(ExpandingArray<D>, kernel_size);
  GRAFT_ARG(ExpandingArray<D>, stride);  // kernel_size unless set
  GRAFT_ARG(bool, ceil_mode) = false;
};
using LPPool1dFuncOptions = LPPoolFuncOptions<1>;
using LPPool2dFuncOptions = LPPoolFuncOptions<2>;
Tensor lp_pool1d(const Tensor& input, const LPPool1dFuncOptions& options);
Tensor lp_pool2d(const Tensor& input, const LPPool2dFuncOptions& options);
// input (N, C, *). training: normalise with the batch statistics and update running_mean /
// running_var in place (when defined) with the unbiased variance; else use the running statistics.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options = {});
// Normalises over the last normalized_shape.size() dims, which must equal normalized_shape.
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);

// ---- group / instance normalisation, resampling, padding (src/ops/normalization.cpp, resample.cpp) ----
}  // namespace nn::functional

// The mode enums, spelt as LibTorch's torch::kNearest, torch::kReflect, ... (one enum per option
// here, where LibTorch has a tag type per name and variants of them; kLinear is init's
// Nonlinearity, which the interpolation options' mode() setters also take for InterpolateMode::Linear).
enum class InterpolateMode { Nearest, Linear, Bilinear, Bicubic, Trilinear, Area, NearestExact };
enum class Nonlinearity : uint8_t;  // graft/nn/init.h
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;
inline constexpr InterpolateMode kBicubic = InterpolateMode::Bicubic;
inline constexpr InterpolateMode kTrilinear = InterpolateMode::Trilinear;
inline constexpr InterpolateMode kArea = InterpolateMode::Area;
inline constexpr InterpolateMode kNearestExact = InterpolateMode::NearestExact;
const char* interpolate_mode_name(InterpolateMode m);  // "nearest", "bilinear", ...
enum class PadMode { Constant, Reflect, Replicate, Circular };
inline constexpr PadMode kConstant = PadMode::Constant;
inline constexpr PadMode kReflect = PadMode::Reflect;
inline constexpr PadMode kReplicate = PadMode::Replicate;
inline constexpr PadMode kCircular = PadMode::Circular;
const char* pad_mode_name(PadMode m);  // "constant", "reflect", "replicate", "circular"

namespace nn::functional {

struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
  GRAFT_ARG(int64_t, num_groups);
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(double, eps) = 1e-5;
};
struct InstanceNormFuncOptions {
  GRAFT_ARG(Tensor, running_mean) = {};
  GRAFT_ARG(Tensor, running_var) = {};
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(Tensor, bias) = {};
  GRAFT_ARG(bool, use_input_stats) = true;
  GRAFT_ARG(double, momentum) = 0.1;
  GRAFT_ARG(double, eps) = 1e-5;
};
struct InterpolateFuncOptions {
  using mode_t = InterpolateMode;
  // mode(kLinear): LibTorch's torch::kLinear, graft's Nonlinearity::Linear, is InterpolateMode::Linear.
  InterpolateFuncOptions& mode(Nonlinearity m);
  GRAFT_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  GRAFT_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  GRAFT_ARG(mode_t, mode) = kNearest;
  GRAFT_ARG(std::optional<bool>, align_corners) = std::nullopt;  // linear modes only; unset means false
  GRAFT_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  GRAFT_ARG(bool, antialias) = false;  // not supported: must stay false
};
struct PadFuncOptions {
  using mode_t = PadMode;
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT
  GRAFT_ARG(std::vector<int64_t>, pad);  // (before, after) pairs from the last dim backwards
  GRAFT_ARG(mode_t, mode) = kConstant;
  GRAFT_ARG(double, value) = 0;          // kConstant only
};
struct PixelShuffleFuncOptions {
  PixelShuffleFuncOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  GRAFT_ARG(int64_t, upscale_factor);
};
struct PixelUnshuffleFuncOptions {
  PixelUnshuffleFuncOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}  // NOLINT
  GRAFT_ARG(int64_t, downscale_factor);
};

// input (N, C, *): num_groups groups of channels, each normalised over its channels and *.
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options);
// input (N, C, *): each (sample, channel) normalised over *; use_input_stats=false normalises with
// the running statistics, true updates them (when given) with momentum.
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options = {});
// input (N, C, W) with mode kLinear, (N, C, H, W) with kBilinear or kBicubic, (N, C, D, H, W) with
// kTrilinear, any of them with kNearest, kNearestExact or kArea (adaptive average pooling);
// exactly one of size (a value per spatial dim) and scale_factor (output floor(size * scale)); the
// scale factors reach the op unless recompute_scale_factor.
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options = {});
// kConstant pads any trailing dims (negative amounts crop); kReflect, kReplicate and kCircular pad
// 1 spatial dim ({l, r}; (C, W) or (N, C, W)), 2 ({l, r, t, b}; (C, H, W) or (N, C, H, W)) or 3
// ({l, r, t, b, front, back}; (C, D, H, W) or (N, C, D, H, W)).
Tensor pad(const Tensor& input, const PadFuncOptions& options);
// (*, C r^2, H, W) <-> (*, C, H r, W r).
Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options);
Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options);

// ---- dropout ----
// input (N, C, H, W) or (C, H, W) for dropout2d. With inplace, input is multiplied in place and returned.
Tensor dropout(Tensor input, const DropoutFuncOptions& options = {});
Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options = {});
// (issue 32; defined in src/nn/modules/dropout.cpp.) dropout3d: whole channels of a volume batch
// (N, C, D, H, W) or of one volume (C, D, H, W). alpha_dropout (SELU networks): dropped elements
// take SELU's negative saturation -alpha' (alpha' = 1.7580993408473766), then an affine map a x + b
// keeps mean 0 and variance 1: with keep ~ Bernoulli(1 - p), a = 1 / sqrt((alpha'^2 p + 1)(1 - p)),
// out = keep ? a x + alpha' a p : alpha' a (p - 1); p = 1 gives zeros, eval or p = 0 the input.
// feature_alpha_dropout draws keep per channel (N, C, 1, ...) of an input of at least 2 dims.
Tensor dropout3d(Tensor input, const Dropout3dFuncOptions& options = {});
Tensor alpha_dropout(Tensor input, const AlphaDropoutFuncOptions& options = {});
Tensor feature_alpha_dropout(Tensor input, const FeatureAlphaDropoutFuncOptions& options = {});

// ---- losses ----
// input (N, C) or (N, C, d1, ...) or (C); target int64 class indices (N) / (N, d1, ...) / ().
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
// cross_entropy(linear(input, weight, bias), target) without ever holding the (N, V) logits: input
// (N, in) or (*, in), weight (V, in), bias (V) or undefined, target int64 (N) or (*); the rows go
// through in chunks and backward recomputes each chunk's logits (Note [Linear cross-entropy in
// chunks] in src/ops/linear_cross_entropy.cpp). kNone gives the target's shape.
Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& target,
                            const LinearCrossEntropyFuncOptions& options = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options = {});
// LibTorch 1.13's four-argument spelling: the beta given here is the one used. (LibTorch 1.13's
// functional reads only this argument, 1 when left out, and never options.beta(); graft's
// three-argument form reads options.beta(), as PyTorch's F.smooth_l1_loss(beta=...) and both
// libraries' SmoothL1Loss module do.)
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options, double beta);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options = {});

// ---- losses: huber, kl_div, cosine embedding, margin ranking, triplet margin; distances; normalize ----
struct HuberLossFuncOptions {
  HuberLossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  GRAFT_ARG(Reduction, reduction);
  GRAFT_ARG(double, delta) = 1.0;
};
// kl_div's reduction: kNone, kMean (over every element), kSum, or kBatchMean (the sum divided by the
// batch size input.size(0), KL divergence's definition), as LibTorch's KLDivLossOptions::reduction_t.
class KLDivReduction {
 public:
  KLDivReduction(Reduction r) : reduction_(r) {}  // NOLINT
  KLDivReduction(BatchMeanReduction) : reduction_(kSum), batch_mean_(true) {}  // NOLINT
  Reduction reduction() const { return reduction_; }  // kSum for kBatchMean
  bool batch_mean() const { return batch_mean_; }

 private:
  Reduction reduction_ = kMean;
  bool batch_mean_ = false;
};
struct KLDivFuncOptions {
  KLDivFuncOptions(KLDivReduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  GRAFT_ARG(KLDivReduction, reduction);
  GRAFT_ARG(bool, log_target) = false;
};
struct CosineEmbeddingLossFuncOptions {
  GRAFT_ARG(double, margin) = 0.0;
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct MarginRankingLossFuncOptions {
  GRAFT_ARG(double, margin) = 0.0;
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct TripletMarginLossFuncOptions {
  GRAFT_ARG(double, margin) = 1.0;
  GRAFT_ARG(double, p) = 2.0;
  GRAFT_ARG(double, eps) = 1e-6;
  GRAFT_ARG(bool, swap) = false;
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct CosineSimilarityFuncOptions {
  GRAFT_ARG(int64_t, dim) = 1;
  GRAFT_ARG(double, eps) = 1e-8;
};
struct PairwiseDistanceFuncOptions {
  GRAFT_ARG(double, p) = 2.0;
  GRAFT_ARG(double, eps) = 1e-6;
  GRAFT_ARG(bool, keepdim) = false;
};
// LibTorch's `out` option is left out: the result is returned.
struct NormalizeFuncOptions {
  GRAFT_ARG(double, p) = 2.0;
  GRAFT_ARG(int64_t, dim) = 1;
  GRAFT_ARG(double, eps) = 1e-12;
};
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options = {});
// input log-probabilities, target probabilities (log-probabilities with log_target).
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {});
// input1, input2 (N, D) and target (N) of +1 / -1, or (D), (D) and a 0-dim target.
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options = {});
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options = {});
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options = {});
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options = {});
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& options = {});
// input / max(||input||_p, eps), the norm along dim.
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options = {});

// ---- losses of issue 32: soft margin, multilabel soft margin, hinge embedding, Poisson NLL,
// Gaussian NLL, multi margin, multilabel margin: the ops of graft/ops/ops.h (graft::soft_margin_loss,
// ...; formulas and checks there), the modules' and functionals' in src/nn/modules/loss2.cpp.
// The option names are LibTorch 1.13's (MultilabelSoftMarginLossFuncOptions with a lower-case l,
// as LibTorch spells the functional's); LibTorch 1.13 has no GaussianNLLLoss: its options are
// PyTorch's (full, eps, reduction).
struct SoftMarginLossFuncOptions {
  SoftMarginLossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  GRAFT_ARG(Reduction, reduction);
};
struct MultilabelSoftMarginLossFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};  // broadcasts to the input: one per class (C)
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct HingeEmbeddingLossFuncOptions {
  GRAFT_ARG(double, margin) = 1.0;
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct PoissonNLLLossFuncOptions {
  GRAFT_ARG(bool, log_input) = true;  // the input is log(rate): exp(input) - target input
  GRAFT_ARG(bool, full) = false;      // add Stirling's term
  GRAFT_ARG(double, eps) = 1e-8;      // log(input + eps) when !log_input
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct GaussianNLLLossFuncOptions {
  GRAFT_ARG(bool, full) = false;   // add 0.5 log(2 pi)
  GRAFT_ARG(double, eps) = 1e-6;   // var is clamped to at least eps
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct MultiMarginLossFuncOptions {
  GRAFT_ARG(int64_t, p) = 1;  // 1 or 2
  GRAFT_ARG(double, margin) = 1.0;
  GRAFT_ARG(Tensor, weight) = {};  // (C): one per class, or undefined
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct MultilabelMarginLossFuncOptions {
  MultilabelMarginLossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  GRAFT_ARG(Reduction, reduction);
};
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& options = {});
// input (N, C) or (C): one loss per sample, averaged over the classes.
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options = {});
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& options = {});
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& options = {});
// var: the input's shape, or without its last dim, or with a last dim of 1; var >= 0.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         const GaussianNLLLossFuncOptions& options = {});
// input (N, C) or (C), target int64 (N) or 0-dim.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& options = {});
// input (N, C) or (C), target int64 of the input's shape: class indices, padded with -1.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options = {});

// LibTorch's TripletMarginWithDistanceLossOptions: the distance a user gives (any
// Tensor(const Tensor&, const Tensor&), such as 1 - cosine_similarity; pairwise_distance when none),
// the margin, swap (the negative's distance is min(d(a, n), d(p, n))) and the reduction.
struct TripletMarginWithDistanceLossFuncOptions {
  using distance_function_t = std::function<Tensor(const Tensor&, const Tensor&)>;
  using reduction_t = Reduction;  // LibTorch's variant of kNone, kMean, kSum
  GRAFT_ARG(std::optional<distance_function_t>, distance_function) = std::nullopt;
  GRAFT_ARG(double, margin) = 1.0;
  GRAFT_ARG(bool, swap) = false;
  GRAFT_ARG(Reduction, reduction) = kMean;
};
// max(d(a, p) - d(a, n) + margin, 0), reduced: PyTorch's composition (a composite of listed ops, so
// its gradient is theirs; the distance function's, for a custom one).
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& options = {});

// ---- local response normalisation (issue 32; defined in src/nn/modules/norm3d.cpp) ----
}  // namespace nn::functional
namespace nn {
// The options of nn::LocalResponseNorm and F::local_response_norm (LibTorch's LocalResponseNormOptions).
struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}  // NOLINT
  GRAFT_ARG(int64_t, size);
  GRAFT_ARG(double, alpha) = 1e-4;
  GRAFT_ARG(double, beta) = 0.75;
  GRAFT_ARG(double, k) = 1.0;
};
}  // namespace nn
namespace nn::functional {
using LocalResponseNormFuncOptions = LocalResponseNormOptions;
// input (N, C, *), at least 3 dims: input / (k + alpha * avg of input^2 over the channels
// [c - size/2, c + (size-1)/2], zeros outside, always divided by size)^beta, as PyTorch.
Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options);

// ---- Fold / Unfold (issue 32): LibTorch 1.13's FoldOptions / UnfoldOptions (nn::FoldOptions and
// nn::UnfoldOptions are these, as LibTorch's FoldFuncOptions are its FoldOptions) and the
// functionals over graft::fold / graft::unfold (graft/ops/ops.h: shapes, checks, gradients). F::unfold
// also takes an unbatched (C, H, W) input, as PyTorch 1.13's F.unfold does; LibTorch 1.13's C++
// F::unfold takes 4-D inputs only.
struct FoldFuncOptions {
  FoldFuncOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  GRAFT_ARG(ExpandingArray<2>, output_size);  // the image's (H, W)
  GRAFT_ARG(ExpandingArray<2>, kernel_size);
  GRAFT_ARG(ExpandingArray<2>, dilation) = 1;
  GRAFT_ARG(ExpandingArray<2>, padding) = 0;  // zeros on both sides of each dim
  GRAFT_ARG(ExpandingArray<2>, stride) = 1;
};
struct UnfoldFuncOptions {
  UnfoldFuncOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<2>, kernel_size);
  GRAFT_ARG(ExpandingArray<2>, dilation) = 1;
  GRAFT_ARG(ExpandingArray<2>, padding) = 0;
  GRAFT_ARG(ExpandingArray<2>, stride) = 1;
};
// (N, C kH kW, L) or (C kH kW, L) -> (N, C, H, W) or (C, H, W), overlapping blocks summed.
inline Tensor fold(const Tensor& input, const FoldFuncOptions& options) {
  return graft::fold(input, *options.output_size(), *options.kernel_size(), *options.dilation(), *options.padding(),
                     *options.stride());
}
// (N, C, H, W) or (C, H, W) -> (N, C kH kW, L) or (C kH kW, L): one column per sliding block.
inline Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options) {
  return graft::unfold(input, *options.kernel_size(), *options.dilation(), *options.padding(), *options.stride());
}

// ---- bilinear, embedding_bag (issue 32; src/nn/modules/bilinear.cpp, embedding_bag.cpp) ----
// F::bilinear(input1, input2, weight, bias) is the op graft::bilinear (graft/ops/ops.h).
using graft::bilinear;
}  // namespace nn::functional

// EmbeddingBag's mode: kSum or kMean (the Reductions of those names; kNone is an error) or kMax,
// spelt as LibTorch's torch::kSum / kMean / kMax (one type here, where LibTorch has a variant of
// three tag types).
struct MaxMode {};
inline constexpr MaxMode kMax{};
class EmbeddingBagMode {
 public:
  enum class Kind { Sum, Mean, Max };  // in ATen's order: mode 0, 1, 2
  EmbeddingBagMode(Reduction reduction);  // NOLINT(google-explicit-constructor)
  EmbeddingBagMode(MaxMode) : kind_(Kind::Max) {}  // NOLINT(google-explicit-constructor)
  Kind kind() const { return kind_; }
  int64_t aten_mode() const { return static_cast<int64_t>(kind_); }
  const char* name() const;  // PyTorch's "sum", "mean", "max"
  bool operator==(const EmbeddingBagMode& other) const = default;

 private:
  Kind kind_ = Kind::Mean;
};

namespace nn::functional {
struct EmbeddingBagFuncOptions {
  GRAFT_ARG(Tensor, offsets) = {};  // 1-D input only: where each bag starts
  GRAFT_ARG(std::optional<double>, max_norm) = std::nullopt;
  GRAFT_ARG(double, norm_type) = 2.;
  GRAFT_ARG(bool, scale_grad_by_freq) = false;
  GRAFT_ARG(EmbeddingBagMode, mode) = kMean;
  GRAFT_ARG(bool, sparse) = false;  // must stay false: graft has no sparse gradients
  GRAFT_ARG(Tensor, per_sample_weights) = {};
  GRAFT_ARG(bool, include_last_offset) = false;
  GRAFT_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};
// input int64 / int32, 1-D with offsets or 2-D (B, L) without; weight (num, dim) -> (B, dim): the
// op graft::embedding_bag (its rules there). max_norm first renormalises, in place and without
// recording, the rows of weight that input names whose norm_type-norm exceeds max_norm (to
// max_norm / (norm + 1e-7) times themselves), as PyTorch's F.embedding_bag.
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options = {});

}  // namespace nn::functional
}  // namespace graft
