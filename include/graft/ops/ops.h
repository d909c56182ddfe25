// graft's ops as free functions (graft::exp(x), graft::matmul(a, b), ...), LibTorch's names and
// argument order. Each is differentiable where PyTorch's is; the derivative of each sits under its
// forward in src/ops/<family>.cpp.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "graft/core/tensor.h"

namespace graft {

// ---- arithmetic (NumPy broadcasting, PyTorch type promotion) ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a + alpha * b
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a - alpha * b
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor rsub(const Tensor& a, const Scalar& b);                           // b - a
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor rdiv(const Tensor& a, const Scalar& b);                           // b / a
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& base, const Tensor& exponent);
Tensor pow(const Tensor& base, const Scalar& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
Tensor square(const Tensor& a);
Tensor reciprocal(const Tensor& a);

// ---- elementwise math ----
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp_min(const Tensor& x, const Scalar& min);
Tensor clamp_max(const Tensor& x, const Scalar& max);
Tensor maximum(const Tensor& a, const Tensor& b);  // ties split the gradient equally
Tensor minimum(const Tensor& a, const Tensor& b);

// ---- comparisons and selection (comparisons give bool tensors and no gradient) ----
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor logical_not(const Tensor& a);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
bool equal(const Tensor& a, const Tensor& b);  // same shape and exactly the same values
// Elementwise |a - b| <= atol + rtol * |b| (equal values, infinities included, are close; NaNs
// only with equal_nan): a bool tensor of the broadcast shape, as PyTorch's isclose.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
// Whether every (any) element is nonzero: a bool tensor, 0-dim over all elements, or reduced over
// `dim` (PyTorch's all/any; an empty tensor is all-true and any-false).
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);

// ---- reductions: dim = {} means all dims ----
Tensor sum(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor sum(const Tensor& x, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
// var/std over all dims take `unbiased` as a bool only: var(x, {1}) must mean dim 1, so the
// all-dims overloads are templates that a braced list cannot select.
Tensor var_all(const Tensor& x, bool unbiased);
Tensor std_all(const Tensor& x, bool unbiased);
inline Tensor var(const Tensor& x) { return var_all(x, true); }
template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
Tensor var(const Tensor& x, B unbiased) { return var_all(x, unbiased); }
Tensor var(const Tensor& x, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
inline Tensor std(const Tensor& x) { return std_all(x, true); }
template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
Tensor std(const Tensor& x, B unbiased) { return std_all(x, unbiased); }
Tensor std(const Tensor& x, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
Tensor prod(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor max(const Tensor& x);  // ties share the gradient evenly
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);  // (values, indices)
Tensor min(const Tensor& x);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
// LibTorch's binary max(a, b) and min(a, b) are maximum and minimum.
inline Tensor max(const Tensor& a, const Tensor& b) { return maximum(a, b); }
inline Tensor min(const Tensor& a, const Tensor& b) { return minimum(a, b); }
Tensor amax(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false);  // ties share the gradient evenly
Tensor amin(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor logsumexp(const Tensor& x, IntArrayRef dim, bool keepdim = false);
// Sums `x` down to `shape` (the reverse of broadcasting); used by every broadcasting backward.
Tensor sum_to(const Tensor& x, IntArrayRef shape);
// Running sum (product) along dim; integer and bool inputs accumulate in int64 unless dtype says.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

// ---- linear algebra (OpenBLAS) ----
Tensor matmul(const Tensor& a, const Tensor& b);  // 1-D, 2-D, and batched with broadcasting
Tensor mm(const Tensor& a, const Tensor& b);      // (n, k) @ (k, m)
Tensor bmm(const Tensor& a, const Tensor& b);     // (B, n, k) @ (B, k, m)
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);            // beta * input + alpha * (mat1 @ mat2)

// ---- softmax (fused, numerically stable) ----
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

// ---- attention (PyTorch 2.x's torch.nn.functional.scaled_dot_product_attention) ----
// softmax(query key^T * scale + mask) value over the last two dims: query (..., L, E), key
// (..., S, E), value (..., S, Ev) -> (..., L, Ev), the leading dims equal. attn_mask is bool (true:
// the key takes part) or of query's dtype (added to the scores), broadcastable to (..., L, S);
// is_causal masks key j > query i (and excludes attn_mask); scale defaults to 1 / sqrt(E);
// dropout_p applies to the probabilities whenever it is > 0 (pass 0 in evaluation). A row whose
// keys are all masked gives 0. Runs the memory-efficient kernel (O(L E) saved, not O(L S)) or the
// plain formula: graft/ops/attention.h, Note [Memory-efficient attention].
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask = std::nullopt, double dropout_p = 0.0,
                                    bool is_causal = false, std::optional<double> scale = std::nullopt);

// ---- neural-network ops (ATen's positional arguments; graft::nn::functional takes the same ops
// with LibTorch's option structs: F::gelu(x, F::GELUFuncOptions().approximate("tanh")) is
// graft::gelu(x, "tanh")) ----
// Activations (elementwise.cpp); relu, sigmoid and tanh are above.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor gelu(const Tensor& x, std::string_view approximate = "none");  // "none" or "tanh"
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);  // linear where beta x > threshold
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor selu(const Tensor& x);  // scale * elu(x, alpha) with SELU's two constants
Tensor mish(const Tensor& x);  // x * tanh(softplus(x))
Tensor hardswish(const Tensor& x);  // x * relu6(x + 3) / 6
Tensor hardsigmoid(const Tensor& x);  // relu6(x + 3) / 6
Tensor hardtanh(const Tensor& x, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor relu6(const Tensor& x);
// a * sigmoid(b) for the two halves (a, b) of x along dim (whose size must be even).
Tensor glu(const Tensor& x, int64_t dim = -1);

// y = x @ weight^T + bias; x (*, in), weight (out, in), bias (out) or undefined.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// act(linear(input, weight, bias)) as one op: the bias and the activation are applied in one pass
// over the product, and the backward computes the activation's derivative and the bias gradient in
// one pass (Note [Fused linear + activation] in src/ops/linalg.cpp). The values are those of the
// two ops; the graph has one node (FusedLinear<Act>Backward0) instead of two. nn::Sequential calls
// it for a Linear followed by one of these activations (SequentialImpl::set_fusion).
enum class FusedActivation { ReLU, GELU, GELUTanh, Sigmoid, Tanh };
Tensor fused_linear(const Tensor& input, const Tensor& weight, const Tensor& bias, FusedActivation activation);
// Rows of `weight` (num, dim) picked by int64 `indices` of any shape: result indices.shape + [dim].
// The row padding_idx (negative counts from the end) gets no gradient.
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx = std::nullopt);
// int64 (*,) -> int64 (*, num_classes); num_classes = -1 means max(input) + 1.
Tensor one_hot(const Tensor& input, int64_t num_classes = -1);
// Bilinear and bags of embeddings (issue 32; both in src/ops/embedding_bag.cpp, composites of
// recorded ops, so double backward comes with them).
// y = x1^T A x2 + b per output feature: input1 (..., in1), input2 (..., in2) with the same leading
// dims, weight (out, in1, in2), bias (out) or undefined -> (..., out).
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = {});
// Sums (mode 0), means (1) or maxima (2) of bags of rows of weight (num, dim), ATen's arguments:
// indices int64 / int32, 1-D with offsets (bag b starts at offsets[b], offsets[0] == 0,
// non-decreasing, <= indices' length; include_last_offset: offsets has one more entry, the end
// of the last bag) or 2-D (B, L): B bags of L, offsets undefined. Entries equal to padding_idx
// (negative counts from the end) are left out (and from a mean's count); an empty bag gives 0.
// per_sample_weights (indices' shape, weight's dtype; mode 0 only) scale each row. mode 2's gradient
// goes to each bag's first maximum per feature. scale_grad_by_freq divides a row's gradient by its
// index's count in indices (not with mode 2). sparse must be false (graft has no sparse tensors).
// Returns the output (B, dim) only, where ATen returns (output, offset2bag, bag_size, max_indices).
Tensor embedding_bag(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                     bool scale_grad_by_freq = false, int64_t mode = 0, bool sparse = false,
                     const Tensor& per_sample_weights = {}, bool include_last_offset = false,
                     std::optional<int64_t> padding_idx = std::nullopt);

// Convolution, pooling (input (N, C, H, W), or (C, H, W) unbatched; each size is one value for both
// dims or {height, width}, as in ATen) and normalisation (conv.cpp, pooling.cpp, normalization.cpp).
// weight (out_channels, in_channels / groups, kH, kW); bias (out_channels) or undefined.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
// The adjoint of conv2d (Note [Transposed convolution] in conv.cpp), ATen's argument order: weight
// (in_channels, out_channels / groups, kH, kW); output size (H - 1) stride - 2 padding +
// dilation (kH - 1) + output_padding + 1.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
// The 1-D and 3-D convolutions: input (N, C, L) / (N, C, D, H, W) (or unbatched without N), weight
// (O, C / groups, kL) / (O, C / groups, kD, kH, kW).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
// stride {} means stride = kernel_size.
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
// (output, indices): indices (int64) of each maximum within its input plane (h * W + w).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
// (output, indices), indices within each input plane as max_pool2d_with_indices gives them.
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
// 1-D pooling of (N, C, L) or (C, L).
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size);
// input (N, C, *). training: normalise with the batch statistics and update running_mean /
// running_var in place (when defined) with the unbiased variance and momentum; else use the
// running statistics. weight, bias, running_mean and running_var may be undefined.
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, std::optional<double> momentum, double eps);
// Normalises over the last normalized_shape.size() dims, which must equal normalized_shape.
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

// input (N, C, *): channels in num_groups groups, each normalised over its channels and *, then
// scaled and shifted per channel by weight and bias (C) when defined.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, bool cudnn_enabled = true);
// input (N, C, *): each (sample, channel) normalised over *. use_input_stats: normalise with the
// instance statistics (and update the running statistics, averaged over the batch, when defined);
// else with running_mean / running_var.
Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool use_input_stats, double momentum, double eps,
                     bool cudnn_enabled = true);

// Resampling and padding (resample.cpp). input (N, C, W), (N, C, H, W) or (N, C, D, H, W) for the
// 1d, 2d and 3d ops; output_size {oW}, {oH, oW} or {oD, oH, oW}; the scales, when given, map output
// to input coordinates as in ATen (src = dst / scale).
Tensor upsample_nearest1d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales = std::nullopt);
Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_h = std::nullopt,
                          std::optional<double> scales_w = std::nullopt);
Tensor upsample_nearest3d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_d = std::nullopt,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
// nearest-exact: source index floor((o + 1/2) in / out), where nearest takes floor(o in / out).
Tensor _upsample_nearest_exact1d(const Tensor& input, IntArrayRef output_size,
                                 std::optional<double> scales = std::nullopt);
Tensor _upsample_nearest_exact2d(const Tensor& input, IntArrayRef output_size,
                                 std::optional<double> scales_h = std::nullopt,
                                 std::optional<double> scales_w = std::nullopt);
Tensor _upsample_nearest_exact3d(const Tensor& input, IntArrayRef output_size,
                                 std::optional<double> scales_d = std::nullopt,
                                 std::optional<double> scales_h = std::nullopt,
                                 std::optional<double> scales_w = std::nullopt);
Tensor upsample_linear1d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                         std::optional<double> scales = std::nullopt);
Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h = std::nullopt,
                           std::optional<double> scales_w = std::nullopt);
Tensor upsample_trilinear3d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                            std::optional<double> scales_d = std::nullopt, std::optional<double> scales_h = std::nullopt,
                            std::optional<double> scales_w = std::nullopt);
Tensor upsample_bicubic2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
// pad lists (before, after) pairs from the last dim backwards, as F::pad does; negative amounts crop.
Tensor constant_pad_nd(const Tensor& input, IntArrayRef pad, const Scalar& value = 0);
Tensor reflection_pad1d(const Tensor& input, IntArrayRef padding);   // (N, C, W), padding {l, r}
Tensor reflection_pad2d(const Tensor& input, IntArrayRef padding);   // (N, C, H, W), {l, r, t, b}
Tensor replication_pad1d(const Tensor& input, IntArrayRef padding);
Tensor replication_pad2d(const Tensor& input, IntArrayRef padding);
// mode "constant", "reflect", "replicate" or "circular"; value only for "constant".
Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode = "constant",
           std::optional<double> value = std::nullopt);
// (N, C r^2, H, W) <-> (N, C, H r, W r).
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);
// Sliding blocks (fold.cpp; F::unfold / F::fold and nn::Unfold / nn::Fold, ATen's im2col / col2im):
// unfold: input (N, C, H, W) or (C, H, W) -> (N, C kH kW, L) or (C kH kW, L), column l holding
// block l's values (row (c kH + i) kW + j: channel c, kernel tap (i, j); 0 in the padding), L the
// blocks' count oH oW. fold, its adjoint: (N, C kH kW, L) or (C kH kW, L) -> (N, C, H, W) or
// (C, H, W) with (H, W) = output_size, overlapping blocks summed. Each size is one value or
// {height, width}. Float32 / float64; each is the other's backward.
Tensor unfold(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
              IntArrayRef stride);
Tensor fold(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
            IntArrayRef padding, IntArrayRef stride);

// Distances (distance.cpp): cos of the angle between x1 and x2 along dim (broadcast), each norm clamped
// to at least eps; the p-norm of x1 - x2 + eps along the last dim.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2, double eps = 1e-6, bool keepdim = false);

// Losses (loss.cpp), each reduced by `reduction`.
enum class Reduction { None, Mean, Sum };
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
const char* reduction_name(Reduction r);
// input (N, C) or (N, C, d1, ...) or (C); target int64 class indices (N) / (N, d1, ...) / (), or
// class probabilities of the input's shape.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     Reduction reduction = kMean, int64_t ignore_index = -100, double label_smoothing = 0.0);
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {}, Reduction reduction = kMean,
                int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean, double beta = 1.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = kMean);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const Tensor& pos_weight = {}, Reduction reduction = kMean);
// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), d = input - target.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean, double delta = 1.0);
// input holds log-probabilities; target probabilities (or log-probabilities with log_target):
// target (log target - input) pointwise. kMean averages over every element, as ATen does.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = kMean, bool log_target = false);
// target +1 / -1: 1 - cos(x1, x2), or max(0, cos(x1, x2) - margin), per row of (N, D).
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                             Reduction reduction = kMean);
// max(0, -target (input1 - input2) + margin).
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                           Reduction reduction = kMean);
// max(d(a, p) - d(a, n) + margin, 0) with pairwise_distance d; swap uses min(d(a, n), d(p, n)).
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin = 1.0,
                           double p = 2, double eps = 1e-6, bool swap = false, Reduction reduction = kMean);

// The losses of issue 32 (loss2.cpp), composites of recorded ops as ATen's are, with PyTorch 1.13's
// formulas; each reduced by `reduction` (kMean: over every element, or over the samples for the
// per-sample losses multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss).
// A target that is not floating-point is converted to the input's dtype (PyTorch's promotion),
// except the class-index targets of the two margin losses, which must be int64.
// log(1 + exp(-target input)), target +1 / -1.
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean);
// -mean over the last dim C of weight (target log sigmoid(input) + (1 - target) log sigmoid(-input)):
// one loss per sample (input (N, C) or (C)); weight broadcasts to the input (C, or (N, C)).
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                   Reduction reduction = kMean);
// input where target != -1, plus max(0, margin - input) where target != 1 (so input for target 1,
// max(0, margin - input) for -1), as ATen writes it.
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            Reduction reduction = kMean);
// log_input: exp(input) - target input; else input - target log(input + eps). full adds Stirling's
// target log(target) - target + 0.5 log(2 pi target) where target > 1.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true, bool full = false,
                        double eps = 1e-8, Reduction reduction = kMean);
// 0.5 (log(v) + (input - target)^2 / v) (+ 0.5 log(2 pi) with full), v = max(var, eps) with the
// clamp outside the graph (PyTorch's no_grad clamp_: var's gradient is taken at v). var has the
// input's shape, or its shape without the last dim, or that with a last dim of 1; var >= 0.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full = false,
                         double eps = 1e-6, Reduction reduction = kMean);
// input (N, C) or (C), target int64 class indices (N) or 0-dim / (1): per sample,
// sum over j != y of weight[y] max(0, margin - input[y] + input[j])^p / C; p is 1 or 2.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p = 1, double margin = 1.0,
                         const Tensor& weight = {}, Reduction reduction = kMean);
// input (N, C) or (C), target int64 of the input's shape: class indices up to the first -1 (the
// sample's targets). Per sample, sum over its targets j and non-targets k of
// max(0, 1 - (input[j] - input[k])) / C.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean);

// Dropout (dropout.cpp), built from ops so that the gradient is the mask's: with train = true,
// x * keep / (1 - p) with keep drawn from the default generator (graft::manual_seed makes it
// repeatable), keep = (U[0, 1) >= p); with train = false or p = 0, x itself. p must be in [0, 1];
// p = 1 gives zeros. dropout draws one keep per element; feature_dropout one per channel of an
// input (N, C, *) (keep shaped (N, C, 1, ...), so whole channels are zeroed), as nn::Dropout2d uses.
// dropout2d: feature_dropout of an image batch (N, C, H, W) or of one image (C, H, W) (as PyTorch 2.x
// reads a 3-dim input). The _ forms multiply input in place (by the same mask) and return it.
Tensor dropout(const Tensor& input, double p, bool train);
Tensor feature_dropout(const Tensor& input, double p, bool train);
Tensor dropout2d(const Tensor& input, double p, bool train);
Tensor& dropout_(Tensor& input, double p, bool train);
Tensor& feature_dropout_(Tensor& input, double p, bool train);
Tensor& dropout2d_(Tensor& input, double p, bool train);

// ---- joining, splitting, indexing ----
Tensor cat(const TensorList& tensors, int64_t dim = 0);
Tensor stack(const TensorList& tensors, int64_t dim = 0);
TensorList split(const Tensor& x, int64_t split_size, int64_t dim = 0);
TensorList split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);

// ---- views and copies (also Tensor methods) ----
Tensor reshape(const Tensor& x, IntArrayRef shape);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, IntArrayRef dims);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor clone(const Tensor& x);

// ---- triangles and linear interpolation (triangular_lerp.cpp; also Tensor methods) ----
// triu / tril: x with the elements below / above a diagonal of its last two dims set to 0, each
// matrix of a batch alike; diagonal 0 is the main one, > 0 above it, < 0 below it (any value).
// Every dtype; x must have at least 2 dims. Differentiable (the gradient's same triangle).
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
// start + weight * (end - start), rounded as PyTorch's CPU kernel rounds it (from end when
// weight >= 0.5). Floating dtypes; start, end and a tensor weight have one dtype and broadcast
// together. Differentiable in all three.
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);

}  // namespace graft
