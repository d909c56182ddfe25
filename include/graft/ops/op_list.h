// The list of graft's user-facing ops. The op test table (tests/ops/) must hold a record for every
// name here; OpCoverage (tests/ops/test_op_table.cpp) fails when one is missing, so an op cannot be
// half-added.
#pragma once

#include <span>
#include <string_view>

#define GRAFT_FORALL_OPS(X)                                                                        \
  /* arithmetic */ X(add) X(sub) X(mul) X(div) X(neg) X(pow)                                        \
  /* unary math */ X(exp) X(log) X(log1p) X(sqrt) X(rsqrt) X(abs) X(sign) X(sin) X(cos) X(erf)      \
  /* activations */ X(tanh) X(sigmoid) X(relu) X(leaky_relu) X(gelu) X(silu) X(softplus) X(elu)     \
  /* selection */ X(clamp) X(maximum) X(minimum) X(where) X(masked_fill)                           \
  /* comparisons */ X(gt) X(lt) X(ge) X(le) X(eq) X(ne)                                             \
  /* reductions */ X(sum) X(mean) X(var) X(std) X(prod) X(max) X(min) X(amax) X(amin) X(argmax)    \
      X(argmin) X(logsumexp)                                                                        \
  /* linear algebra */ X(matmul) X(mm) X(bmm) X(addmm) X(linear)                                   \
  /* softmax */ X(softmax) X(log_softmax)                                                           \
  /* convolution, pooling, normalisation */ X(conv2d) X(max_pool2d) X(avg_pool2d)                  \
      X(adaptive_avg_pool2d) X(batch_norm) X(layer_norm)                                            \
  /* joining and indexing */ X(cat) X(stack) X(split) X(chunk) X(index_select) X(gather)            \
      X(scatter_add) X(index_add) X(embedding) X(one_hot)                                           \
  /* losses */ X(cross_entropy) X(nll_loss) X(mse_loss) X(l1_loss) X(smooth_l1_loss)               \
      X(binary_cross_entropy) X(binary_cross_entropy_with_logits)                                   \
  /* views */ X(view) X(reshape) X(transpose) X(permute) X(narrow) X(slice) X(select) X(expand)     \
      X(squeeze) X(unsqueeze) X(flatten) X(contiguous) X(clone) X(to)                               \
  /* in-place */ X(add_) X(sub_) X(mul_) X(div_) X(relu_) X(sigmoid_) X(zero_) X(fill_) X(copy_)   \
      X(clamp_) X(masked_fill_)

namespace graft::ops {

enum class OpId {
#define GRAFT_OP_ENUM(name) name,
  GRAFT_FORALL_OPS(GRAFT_OP_ENUM)
#undef GRAFT_OP_ENUM
  kCount
};

// All op names, in list order.
std::span<const std::string_view> op_names();

}  // namespace graft::ops
