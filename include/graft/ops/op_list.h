// The list of graft's user-facing ops: every public op of graft/ops/ops.h and
// graft/nn/functional.h (and the Tensor methods that are ops) has one entry. The op test table
// (tests/ops/records_*.cpp) must hold a record, with an error case, for every name here;
// OpCoverage in tests/ops/test_op_table.cpp fails when one is missing, so an op cannot be
// half-added. Each backward node an op records carries its OpId (Note [Forward op of a node] in
// graft/autograd/node.h), which is how errors name the forward op.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#define GRAFT_FORALL_OPS(X)                                                                        \
  /* arithmetic */ X(add) X(sub) X(rsub) X(mul) X(div) X(rdiv) X(neg) X(pow) X(square)             \
      X(reciprocal)                                                                                \
  /* unary math */ X(exp) X(log) X(log1p) X(sqrt) X(rsqrt) X(abs) X(sign) X(sin) X(cos) X(erf)     \
  /* activations */ X(tanh) X(sigmoid) X(relu) X(leaky_relu) X(gelu) X(silu) X(softplus) X(elu)    \
      X(selu) X(mish) X(hardswish) X(hardsigmoid) X(hardtanh) X(relu6) X(glu)                      \
      X(prelu) X(rrelu) X(celu) X(threshold) X(hardshrink) X(softshrink) X(log_sigmoid)           \
      X(logsigmoid) X(softsign) X(tanhshrink)                                                      \
  /* selection */ X(clamp) X(clamp_min) X(clamp_max) X(maximum) X(minimum) X(where) X(masked_fill) \
  /* comparisons */ X(gt) X(lt) X(ge) X(le) X(eq) X(ne) X(logical_not) X(logical_and)              \
      X(logical_or) X(isnan) X(isinf) X(isfinite) X(all) X(any) X(allclose) X(isclose) X(equal)    \
  /* reductions */ X(sum) X(mean) X(var) X(std) X(prod) X(max) X(min) X(amax) X(amin) X(argmax)    \
      X(argmin) X(logsumexp) X(sum_to) X(cumsum) X(cumprod)                                        \
  /* linear algebra */ X(matmul) X(mm) X(bmm) X(addmm) X(linear) X(fused_linear)                   \
  /* softmax, attention */ X(softmax) X(log_softmax) X(scaled_dot_product_attention)                \
  /* recurrent layers */ X(rnn_layer)                                                                \
  /* convolution */ X(conv1d) X(conv2d) X(conv3d) X(conv_transpose1d) X(conv_transpose2d)          \
  /* pooling */ X(max_pool1d) X(max_pool2d) X(max_pool2d_with_indices) X(avg_pool1d) X(avg_pool2d) \
      X(adaptive_avg_pool1d) X(adaptive_avg_pool2d) X(adaptive_max_pool2d)                         \
  /* normalisation */ X(batch_norm) X(layer_norm) X(group_norm) X(instance_norm)                   \
  /* resampling, padding */ X(upsample_nearest2d) X(upsample_bilinear2d) X(constant_pad_nd)        \
      X(reflection_pad1d) X(reflection_pad2d) X(replication_pad1d) X(replication_pad2d) X(pad)     \
      X(pixel_shuffle) X(pixel_unshuffle) X(upsample_nearest1d) X(upsample_nearest3d)              \
      X(upsample_linear1d) X(upsample_trilinear3d) X(upsample_bicubic2d)                           \
      X(_upsample_nearest_exact1d) X(_upsample_nearest_exact2d) X(_upsample_nearest_exact3d)       \
  /* sliding blocks */ X(unfold) X(fold)                                                           \
  /* joining and indexing */ X(cat) X(stack) X(split) X(split_with_sizes) X(chunk) X(index_select) \
      X(gather) X(scatter_add) X(index_add) X(embedding) X(one_hot)                                \
  /* bilinear, bags of embeddings */ X(bilinear) X(embedding_bag)                                  \
  /* distances */ X(cosine_similarity) X(pairwise_distance)                                        \
  /* losses */ X(cross_entropy) X(nll_loss) X(mse_loss) X(l1_loss) X(smooth_l1_loss)               \
      X(binary_cross_entropy) X(binary_cross_entropy_with_logits) X(huber_loss) X(kl_div)          \
      X(cosine_embedding_loss) X(margin_ranking_loss) X(triplet_margin_loss)                       \
      X(linear_cross_entropy) X(soft_margin_loss) X(multilabel_soft_margin_loss)                   \
      X(hinge_embedding_loss) X(poisson_nll_loss) X(gaussian_nll_loss) X(multi_margin_loss)        \
      X(multilabel_margin_loss)                                                                    \
  /* dropout */ X(dropout) X(feature_dropout) X(dropout2d)                                         \
  /* views */ X(view) X(reshape) X(transpose) X(permute) X(narrow) X(slice) X(select) X(expand)    \
      X(squeeze) X(unsqueeze) X(flatten) X(contiguous) X(clone) X(to)                              \
  /* in-place */ X(add_) X(sub_) X(mul_) X(div_) X(relu_) X(sigmoid_) X(zero_) X(fill_) X(copy_)   \
      X(clamp_) X(masked_fill_) X(dropout_) X(feature_dropout_) X(dropout2d_)                      \
  /* triangles, interpolation */ X(triu) X(tril) X(lerp) X(triu_) X(tril_) X(lerp_)

namespace graft::ops {

enum class OpId {
#define GRAFT_OP_ENUM(name) name,
  GRAFT_FORALL_OPS(GRAFT_OP_ENUM)
#undef GRAFT_OP_ENUM
  kCount
};

inline constexpr size_t kNumOps = static_cast<size_t>(OpId::kCount);

// The op's name as written in the list ("log1p"): a static string, so nodes can keep the pointer.
inline constexpr const char* kOpNames[] = {
#define GRAFT_OP_NAME(name) #name,
    GRAFT_FORALL_OPS(GRAFT_OP_NAME)
#undef GRAFT_OP_NAME
};
constexpr const char* op_name(OpId id) { return kOpNames[static_cast<size_t>(id)]; }

// All op names, in list order.
std::span<const std::string_view> op_names();

}  // namespace graft::ops
