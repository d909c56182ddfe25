// graft::nn::functional: each function unpacks its option struct into the positional arguments of
// the graft op of the same name (graft/ops/ops.h), as LibTorch's torch::nn::functional wraps ATen.
// Nothing else belongs here: formulas, kernels and argument checks live with the ops in src/ops,
// so an error names the op and reads the same from either spelling.
#include "graft/nn/functional.h"

#include <cmath>
#include <vector>

#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/nn/init.h"
#include "graft/ops/ops.h"
#include "ops/linear_cross_entropy.h"
#include "nn/maybe_inplace.h"
#include "nn/modules/embedding_internal.h"

namespace graft::nn::functional {

// ---- activations ----
Tensor relu(const Tensor& x) { return graft::relu(x); }
Tensor leaky_relu(Tensor x, const LeakyReLUFuncOptions& options) {
  const double slope = options.negative_slope();
  return detail::maybe_inplace(x, options.inplace(), [slope](const Tensor& t) { return graft::leaky_relu(t, slope); });
}
Tensor gelu(const Tensor& x, const GELUFuncOptions& options) { return graft::gelu(x, options.approximate()); }
Tensor silu(const Tensor& x) { return graft::silu(x); }
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& options) {
  return graft::softplus(x, options.beta(), options.threshold());
}
Tensor elu(Tensor x, const ELUFuncOptions& options) {
  const double alpha = options.alpha();
  return detail::maybe_inplace(x, options.inplace(), [alpha](const Tensor& t) { return graft::elu(t, alpha); });
}
Tensor sigmoid(const Tensor& x) { return graft::sigmoid(x); }
Tensor tanh(const Tensor& x) { return graft::tanh(x); }
Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& options) {
  return graft::softmax(x, options.dim(), options.dtype());
}
Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& options) {
  return graft::log_softmax(x, options.dim(), options.dtype());
}

// ---- activations: selu, mish, hardswish, hardsigmoid, hardtanh, relu6, glu, softmin ----
using detail::maybe_inplace;  // nn/maybe_inplace.h
Tensor selu(Tensor input, const SELUFuncOptions& options) {
  return maybe_inplace(input, options.inplace(), [](const Tensor& x) { return graft::selu(x); });
}
Tensor mish(const Tensor& input) { return graft::mish(input); }
Tensor hardswish(const Tensor& input) { return graft::hardswish(input); }
Tensor hardsigmoid(const Tensor& input) { return graft::hardsigmoid(input); }
Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options) {
  return maybe_inplace(input, options.inplace(),
                       [&](const Tensor& x) { return graft::hardtanh(x, options.min_val(), options.max_val()); });
}
Tensor relu6(Tensor input, const ReLU6FuncOptions& options) {
  return maybe_inplace(input, options.inplace(), [](const Tensor& x) { return graft::relu6(x); });
}
Tensor glu(const Tensor& input, const GLUFuncOptions& options) { return graft::glu(input, options.dim()); }
Tensor softmin(const Tensor& input, const SoftminFuncOptions& options) {
  return graft::softmax(-input, options.dim(), options.dtype());
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
  GRAFT_CHECK(!options.sparse(), "embedding", "sparse = false", "sparse = true",
              "graft has no sparse gradients: leave sparse unset (the gradient is dense)");
  if (options.max_norm())
    nn::detail::embedding_renorm_(weight, input, *options.max_norm(), options.norm_type(), "embedding");
  const Tensor out = graft::embedding(weight, input, options.padding_idx());
  if (!options.scale_grad_by_freq() || !GradMode::is_enabled() || !out.requires_grad()) return out;
  // scale_grad_by_freq: the same values, but each lookup's gradient is divided by its index's count
  // in input, so that a row's gradient is the mean of its lookups' (PyTorch's embedding_backward).
  // (out - out.detach()) is exactly 0 forward, and carries the gradient times 1 / count.
  const Tensor ids = input.reshape({-1}).to(kInt64);
  const Tensor counts = zeros({weight.size(0)}, weight.dtype()).index_add(0, ids, ones({ids.numel()}, weight.dtype()));
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape.push_back(1);
  const Tensor inv = counts.index_select(0, ids).reciprocal().reshape(shape);
  return out.detach() + (out - out.detach()) * inv;
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
  return graft::adaptive_avg_pool2d(input, options.output_size().sizes_for(input.sizes()));
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
  return std::get<0>(graft::adaptive_max_pool2d(input, options.output_size().sizes_for(input.sizes())));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options) {
  return graft::adaptive_max_pool2d(input, options.output_size().sizes_for(input.sizes()));
}
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options) {
  return graft::batch_norm(input, options.weight(), options.bias(), running_mean, running_var, options.training(),
                           options.momentum(), options.eps());
}
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options) {
  return graft::layer_norm(input, options.normalized_shape(), options.weight(), options.bias(), options.eps());
}

// ---- group / instance normalisation, resampling, padding ----
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options) {
  return graft::group_norm(input, options.num_groups(), options.weight(), options.bias(), options.eps());
}
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options) {
  return graft::instance_norm(input, options.weight(), options.bias(), options.running_mean(), options.running_var(),
                              options.use_input_stats(), options.momentum(), options.eps());
}
// LibTorch's F::interpolate: checks the options (they are not the op's), turns scale_factor into
// the output size (floor(size * scale)) and passes the scales on unless recompute_scale_factor.
// The mode picks the op by the input's rank: 3-D (N, C, W) kNearest / kLinear, 4-D (N, C, H, W)
// kNearest / kBilinear / kBicubic, 5-D (N, C, D, H, W) kNearest / kTrilinear; kNearestExact and
// kArea (adaptive average pooling to the output size, the scales unused, as in PyTorch) take any.
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options) {
  const char* op = "interpolate";
  const auto& size = options.size();
  const auto& scale = options.scale_factor();
  const InterpolateMode m = options.mode();
  const char* mode = interpolate_mode_name(m);
  GRAFT_CHECK(input.defined(), op, "a defined input", "an undefined tensor", "");
  GRAFT_CHECK(size.has_value() != scale.has_value(), op, "exactly one of size and scale_factor",
              size ? "both size and scale_factor" : "neither size nor scale_factor", "set one of them");
  GRAFT_CHECK(!(size && options.recompute_scale_factor().value_or(false)), op,
              "recompute_scale_factor only with a scale_factor", "recompute_scale_factor with an explicit size", "");
  GRAFT_CHECK(!options.antialias(), op, "antialias=false", "antialias=true", "graft has no antialiased interpolation");
  const bool linear = m == InterpolateMode::Linear || m == kBilinear || m == kBicubic || m == kTrilinear;
  GRAFT_CHECK(linear || !options.align_corners().has_value(), op,
              "align_corners only with the linear modes (linear, bilinear, bicubic, trilinear)",
              std::string("align_corners with mode ") + mode, "leave align_corners unset for this mode");
  const std::string got = "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) +
                          "-D) and mode " + mode;
  GRAFT_CHECK(input.dim() >= 3 && input.dim() <= 5, op,
              "a 3-D (N, C, W), 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input", got,
              input.dim() == 2 ? "add a batch dim with input.unsqueeze(0)" : "");
  const int64_t spatial = input.dim() - 2;
  const bool fits = m == kNearest || m == kNearestExact || m == kArea || (spatial == 1 && m == InterpolateMode::Linear) ||
                    (spatial == 2 && (m == kBilinear || m == kBicubic)) || (spatial == 3 && m == kTrilinear);
  static const char* const kRankModes[] = {"", "a 3-D input with mode kNearest, kNearestExact, kLinear or kArea",
                                           "a 4-D input with mode kNearest, kNearestExact, kBilinear, kBicubic or kArea",
                                           "a 5-D input with mode kNearest, kNearestExact, kTrilinear or kArea"};
  GRAFT_CHECK(fits, op, std::string(kRankModes[spatial]) + " (the mode sets the input's rank)", got,
              std::string("kLinear takes a 3-D input, kBilinear and kBicubic 4-D, kTrilinear 5-D"));
  static const char* const kSizes[] = {"", "{oW}", "{oH, oW}", "{oD, oH, oW}"};
  static const char* const kScales[] = {"", "{sW}", "{sH, sW}", "{sD, sH, sW}"};
  const std::string for_rank = " for a " + std::to_string(input.dim()) + "-D input";
  std::vector<int64_t> out;
  std::vector<std::optional<double>> sc(static_cast<size_t>(spatial));
  if (size) {
    out = *size;
    GRAFT_CHECK(static_cast<int64_t>(out.size()) == spatial, op,
                "size of " + std::to_string(spatial) + " values " + kSizes[spatial] + for_rank,
                "size of " + std::to_string(out.size()) + " values (input of shape " + shape_str(input.sizes()) + ")", "");
  } else {
    GRAFT_CHECK(static_cast<int64_t>(scale->size()) == spatial, op,
                "scale_factor of " + std::to_string(spatial) + " values " + kScales[spatial] + for_rank,
                "scale_factor of " + std::to_string(scale->size()) + " values (input of shape " +
                    shape_str(input.sizes()) + ")",
                "");
    for (double f : *scale)
      GRAFT_CHECK(std::isfinite(f) && f > 0, op, "positive finite scale factors",
                  "scale_factor " + std::to_string(f), "");
    for (size_t i = 0; i < static_cast<size_t>(spatial); ++i)
      out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(input.size(static_cast<int64_t>(i) + 2)) * (*scale)[i])));
    if (!options.recompute_scale_factor().value_or(false))
      for (size_t i = 0; i < sc.size(); ++i) sc[i] = (*scale)[i];
  }
  const bool align = options.align_corners().value_or(false);
  if (m == kArea) {
    if (spatial == 1) return graft::adaptive_avg_pool1d(input, out);
    if (spatial == 2) return graft::adaptive_avg_pool2d(input, out);
    // 3-D: the average over a box is the average over D of the averages over (H, W), so pool
    // (H, W) with the 2-D op, then D with the 1-D op (graft has no adaptive_avg_pool3d).
    const int64_t N = input.size(0), C = input.size(1), D = input.size(2);
    GRAFT_CHECK(out[0] > 0 && out[1] > 0 && out[2] > 0, op, "output sizes greater than 0",
                "output size (" + std::to_string(out[0]) + ", " + std::to_string(out[1]) + ", " +
                    std::to_string(out[2]) + ")", "");
    const Tensor hw = graft::adaptive_avg_pool2d(input.reshape({N, C * D, input.size(3), input.size(4)}), {out[1], out[2]});
    const Tensor d = graft::adaptive_avg_pool1d(hw.reshape({N * C, D, out[1] * out[2]}).transpose(1, 2), {out[0]});
    return d.transpose(1, 2).reshape({N, C, out[0], out[1], out[2]});
  }
  if (m == kNearestExact) {
    if (spatial == 1) return graft::_upsample_nearest_exact1d(input, out, sc[0]);
    if (spatial == 2) return graft::_upsample_nearest_exact2d(input, out, sc[0], sc[1]);
    return graft::_upsample_nearest_exact3d(input, out, sc[0], sc[1], sc[2]);
  }
  if (spatial == 1) {
    if (m == kNearest) return graft::upsample_nearest1d(input, out, sc[0]);
    return graft::upsample_linear1d(input, out, align, sc[0]);
  }
  if (spatial == 2) {
    if (m == kNearest) return graft::upsample_nearest2d(input, out, sc[0], sc[1]);
    if (m == kBicubic) return graft::upsample_bicubic2d(input, out, align, sc[0], sc[1]);
    return graft::upsample_bilinear2d(input, out, align, sc[0], sc[1]);
  }
  if (m == kNearest) return graft::upsample_nearest3d(input, out, sc[0], sc[1], sc[2]);
  return graft::upsample_trilinear3d(input, out, align, sc[0], sc[1], sc[2]);
}
// LibTorch's torch::kLinear is graft's init Nonlinearity (graft/nn/init.h); as an interpolation
// mode it means InterpolateMode::Linear, any other nonlinearity is an error.
InterpolateFuncOptions& InterpolateFuncOptions::mode(Nonlinearity m) {
  GRAFT_CHECK(m == Nonlinearity::Linear, "InterpolateFuncOptions::mode", "an interpolation mode (kLinear of the nonlinearities)",
              "another nonlinearity", "pass kNearest, kLinear, kBilinear, kBicubic, kTrilinear or kArea");
  mode_ = InterpolateMode::Linear;
  return *this;
}
// As LibTorch's F::pad: the value belongs to kConstant; a non-zero one with another mode is an error (the op's).
Tensor pad(const Tensor& input, const PadFuncOptions& options) {
  const bool constant = options.mode() == kConstant;
  return graft::pad(input, options.pad(), pad_mode_name(options.mode()),
                    constant || options.value() != 0 ? std::optional<double>(options.value()) : std::nullopt);
}
Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options) {
  return graft::pixel_shuffle(input, options.upscale_factor());
}
Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options) {
  return graft::pixel_unshuffle(input, options.downscale_factor());
}

}  // namespace graft::nn::functional

namespace graft {
const char* interpolate_mode_name(InterpolateMode m) {
  switch (m) {
    case InterpolateMode::Nearest: return "nearest";
    case InterpolateMode::Linear: return "linear";
    case InterpolateMode::Bilinear: return "bilinear";
    case InterpolateMode::Bicubic: return "bicubic";
    case InterpolateMode::Trilinear: return "trilinear";
    case InterpolateMode::Area: return "area";
    case InterpolateMode::NearestExact: return "nearest-exact";
  }
  return "?";
}
const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::Constant: return "constant";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
    case PadMode::Circular: return "circular";
  }
  return "?";
}
}  // namespace graft

namespace graft::nn::functional {

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
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options, double beta) {
  return graft::smooth_l1_loss(input, target, options.reduction(), beta);
}
Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& target,
                            const LinearCrossEntropyFuncOptions& options) {
  return graft::linear_cross_entropy(input, weight, bias, target, options.reduction(), options.ignore_index(),
                                     options.label_smoothing(), options.chunk_size());
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  return graft::binary_cross_entropy(input, target, options.weight(), options.reduction());
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  return graft::binary_cross_entropy_with_logits(input, target, options.weight(), options.pos_weight(),
                                                 options.reduction());
}

// ---- losses: huber, kl_div, cosine embedding, margin ranking, triplet margin; distances; normalize ----
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
  return graft::huber_loss(input, target, options.reduction(), options.delta());
}
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options) {
  const KLDivReduction& r = options.reduction();
  Tensor out = graft::kl_div(input, target, r.reduction(), options.log_target());
  // kBatchMean: the sum over the batch size (a 0-dim input is its own batch of one)
  if (r.batch_mean() && input.dim() > 0) out = out / static_cast<double>(input.size(0));
  return out;
}
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options) {
  return graft::cosine_embedding_loss(input1, input2, target, options.margin(), options.reduction());
}
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options) {
  return graft::margin_ranking_loss(input1, input2, target, options.margin(), options.reduction());
}
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options) {
  return graft::triplet_margin_loss(anchor, positive, negative, options.margin(), options.p(), options.eps(),
                                    options.swap(), options.reduction());
}
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options) {
  return graft::cosine_similarity(x1, x2, options.dim(), options.eps());
}
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& options) {
  return graft::pairwise_distance(x1, x2, options.p(), options.eps(), options.keepdim());
}
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options) {
  // ||input||_p along dim, by pairwise_distance's p-norm (its gradient is 0, not nan, at a zero
  // vector) over the last dim with eps 0: dim is moved last and the kept size-1 dim moved back.
  GRAFT_CHECK(input.dim() > 0, "normalize", "a tensor of at least 1 dim", "a 0-dim tensor", "normalize works along dim");
  const int64_t d = wrap_dim(options.dim(), input.dim(), "normalize");
  const Tensor moved = input.transpose(d, -1);
  const Tensor norm = graft::pairwise_distance(moved, graft::zeros({}, input.dtype()), options.p(), 0.0, true);
  return input / clamp_min(norm.transpose(d, -1), options.eps());
}

}  // namespace graft::nn::functional
