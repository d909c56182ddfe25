// linear_cross_entropy: cross_entropy(linear(x, W, b), target) as one op that never holds the
// (N, V) logits. The loops are src/kernels/linear_cross_entropy.cpp.
//
// Note [Linear cross-entropy in chunks]
// A language model's output layer turns N positions of width `in` into logits over V classes and
// takes their cross-entropy; composed, the logits (N, V) live from the forward to the backward and
// their gradient (N, V) is written next to them: for N = 2048, V = 8192 in float32, 2 x 64 MiB,
// more than the rest of a small model's step. As "Cut Your Losses in Large-Vocabulary Language
// Models" (Wijmans et al., 2024) does, the rows go through in chunks of c (chunk_size), and only
// one chunk's logits (c, V) exist at a time:
//   forward, per chunk:   L = x_c W^T + b (gemm), lse_i = m_i + log sum_v exp(L_iv - m_i),
//                         loss_i = lse_i - (1 - eps) L_{i, t_i} - eps / V sum_v L_iv
//                         (0 where t_i = ignore_index; eps = label_smoothing, PyTorch's formula);
//                         mean divides the sum by the counted rows, as cross_entropy;
//   backward, per chunk:  L again (one more gemm: the price of not keeping it), then in place
//                         G_iv = g_i / D (exp(L_iv - lse_i) - (1 - eps) [v = t_i] - eps / V),
//                         0 on ignored rows (D: the counted rows for mean, else 1), and
//                         gx_c = G_c W,  gW += G_c^T x_c,  gb += sum_i G_i.
// Saved: x, W, b and the target (the inputs, alive anyway in a model) and lse (N values). Peak
// extra memory: lse and one chunk's (c, V) scratch, forward and backward alike, besides the
// gradients themselves. chunk_size 0 picks c so that the scratch takes at most kAutoChunkBytes.
// The op allocates every tensor it uses (outputs, lse, the scratch, the gradients) and the kernels
// write into them, so on meta tensors it allocates the same tensors in the same order and runs no
// kernel (Note [Meta device]): a plan on shapes alone sees the same peak.
// Under create_graph the backward differentiates the composition cross_entropy(linear(x, W, b), t)
// recomputed from the saved inputs (Note [The create_graph policy]): that holds the full logits,
// as create_graph does anyway. float16 / bfloat16 operands, and autocast's lower precision products,
// take the composition itself (the product rounded as linear rounds it), without the saving.
#include "linear_cross_entropy.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "../autograd/composite_backward.h"
#include "../kernels/linear_cross_entropy.h"
#include "../kernels/values.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "loss_checks.h"
#include "ops/autocast_internal.h"
#include "ops_common.h"

namespace graft {

namespace {

using autograd::Node;
using autograd::set_history;
using detail::loss::kernel_reduce;
using detail::loss::num;

constexpr const char* kLinearCrossEntropyOp = "linear_cross_entropy";
// chunk_size 0: as many rows as keep one chunk's logits within this many bytes (at least one row).
constexpr int64_t kAutoChunkBytes = int64_t{16} << 20;


// The op's composite definition: its specification, and what its backward differentiates under
// create_graph (Note [The create_graph policy]). x (N, in), t (N).
Tensor composite_linear_cross_entropy(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& t, Reduction red,
                                      int64_t ignore_index, double eps) {
  return cross_entropy(linear(x, w, b), t, Tensor(), red, ignore_index, eps);
}

void check_args(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& target, Reduction red,
                double eps, int64_t chunk_size) {
  GRAFT_CHECK(red == Reduction::None || red == Reduction::Mean || red == Reduction::Sum, kLinearCrossEntropyOp,
              "reduction kNone, kMean or kSum", "reduction value " + std::to_string(static_cast<int>(red)),
              "pass graft::kNone, graft::kMean or graft::kSum");
  GRAFT_CHECK(input.defined() && weight.defined() && target.defined(), kLinearCrossEntropyOp, "defined input, weight and target",
              "an undefined tensor", "only the bias may be left undefined");
  GRAFT_CHECK(input.is_floating_point(), kLinearCrossEntropyOp, "a floating-point input",
              std::string("input of dtype ") + dtype_name(input.dtype()) + " and shape " + shape_str(input.sizes()),
              "convert it first: input.to(graft::kFloat32)");
  GRAFT_CHECK(weight.dim() == 2, kLinearCrossEntropyOp, "weight to be a 2-D tensor (V, in_features)",
              "weight of shape " + shape_str(weight.sizes()), "the output layer's weight is (classes, in_features)");
  GRAFT_CHECK(input.dim() >= 1 && input.size(-1) == weight.size(1), kLinearCrossEntropyOp,
              "input of shape (*, in_features) with in_features = weight.size(1) = " + std::to_string(weight.size(1)),
              "input " + shape_str(input.sizes()) + " and weight " + shape_str(weight.sizes()),
              "the input's last dim holds the features; weight is (classes, in_features)");
  GRAFT_CHECK(weight.dtype() == input.dtype() && (!bias.defined() || bias.dtype() == input.dtype()), kLinearCrossEntropyOp,
              "input, weight and bias of one dtype",
              std::string("input ") + dtype_name(input.dtype()) + ", weight " + dtype_name(weight.dtype()) +
                  (bias.defined() ? std::string(", bias ") + dtype_name(bias.dtype()) : std::string()),
              "convert them to one dtype, e.g. weight.to(input.dtype())");
  if (bias.defined()) {
    GRAFT_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), kLinearCrossEntropyOp,
                "bias of shape [" + std::to_string(weight.size(0)) + "] (one per class)",
                "bias of shape " + shape_str(bias.sizes()), "pass one bias value per class, or leave bias undefined");
  }
  const IntArrayRef lead(input.sizes().data(), static_cast<size_t>(input.dim() - 1));
  GRAFT_CHECK(target.sizes().equals(lead), kLinearCrossEntropyOp,
              "target of shape " + shape_str(lead) + " for input of shape " + shape_str(input.sizes()),
              "target of shape " + shape_str(target.sizes()),
              "one class index per row: the target has the input's shape without its last (feature) dim");
  GRAFT_CHECK(target.dtype() == kInt64, kLinearCrossEntropyOp, "int64 class indices as target",
              std::string("target of dtype ") + dtype_name(target.dtype()) + " and shape " + shape_str(target.sizes()),
              "convert it with target.to(graft::kInt64)");
  GRAFT_CHECK(eps >= 0.0 && eps <= 1.0, kLinearCrossEntropyOp, "label_smoothing in [0, 1]", "label_smoothing " + num(eps),
              "0 disables smoothing; 0.1 is a common choice");
  GRAFT_CHECK(chunk_size >= 0, kLinearCrossEntropyOp, "chunk_size >= 0 (rows per chunk; 0 picks it)",
              "chunk_size " + std::to_string(chunk_size), "pass a positive number of rows, or 0");
}

// Class indices in [0, V) or ignore_index (CPU only: a meta tensor has no values, Note [Meta device]).
void check_target_values(const Tensor& t, int64_t V, int64_t ignore_index) {
  if (t.is_meta()) return;
  NoGradGuard ng;
  for (int64_t v : kernels::to_int64s(t)) {
    GRAFT_CHECK(
        v == ignore_index || (v >= 0 && v < V), kLinearCrossEntropyOp,
        "target values in [0, " + std::to_string(V) + ") or ignore_index (" + std::to_string(ignore_index) + ")",
        "target value " + std::to_string(v),
        "class indices must be smaller than the number of classes V = weight.size(0) = " + std::to_string(V));
  }
}

Tensor contiguous(const Tensor& t) { return !t.defined() || t.is_contiguous() ? t : t.contiguous(); }

}  // namespace

Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& target,
                            Reduction reduction, int64_t ignore_index, double label_smoothing, int64_t chunk_size) {
  const detail::MetaOpScope meta_scope(kLinearCrossEntropyOp, {&input, &weight, &bias, &target});  // Note [Meta device]
  memory::OpScope op_scope(kLinearCrossEntropyOp);  // names its allocations in the memory report
  check_args(input, weight, bias, target, reduction, label_smoothing, chunk_size);
  const int64_t in = weight.size(1), V = weight.size(0);
  check_target_values(target, V, ignore_index);
  const Reduction red = reduction;
  const double eps = label_smoothing;
  const DType dt = input.dtype();
  // (*, in) -> (N, in) rows, target (*) -> (N).
  const Tensor x = contiguous(input.dim() == 2 ? input : input.reshape({-1, in}));
  const Tensor t = contiguous(target.dim() == 1 ? target : target.reshape({-1}));
  const int64_t N = x.size(0);
  auto to_target_shape = [&](const Tensor& loss) {
    return red == Reduction::None && target.dim() != 1 ? loss.reshape(target.sizes()) : loss;
  };
  if ((dt != kFloat32 && dt != kFloat64) || detail::lowp_dtype({&input, &weight, &bias}))  // the composition
    return to_target_shape(composite_linear_cross_entropy(x, weight, bias, t, red, ignore_index, eps));

  const Tensor w = contiguous(weight), b = contiguous(bias);
  const Device device = detail::op_device(kLinearCrossEntropyOp, {&x, &w, &b, &t});
  kernels::loss::LinearCrossEntropyShape s;
  s.rows = N;
  s.in = in;
  s.vocab = V;
  const int64_t row_bytes = std::max<int64_t>(1, V * static_cast<int64_t>(element_size(dt)));
  s.chunk = chunk_size > 0 ? chunk_size : std::max<int64_t>(1, kAutoChunkBytes / row_bytes);
  s.chunk = std::max<int64_t>(1, std::min(s.chunk, N));
  s.ignore_index = ignore_index;
  s.label_smoothing = eps;
  s.red = kernel_reduce(red);

  Tensor lse = make_empty({N}, dt, device);
  Tensor out = make_empty(red == Reduction::None ? Shape{N} : Shape{}, dt, device);
  int64_t counted = 0;
  {
    Tensor logits = make_empty({std::min(s.chunk, N), V}, dt, device);  // one chunk's scratch
    if (!device.is_meta()) {                                            // Note [Meta device]: no kernel
      NoGradGuard ng;
      counted = kernels::loss::linear_cross_entropy_forward(s, x.detach(), w.detach(), b.defined() ? b.detach() : b, t,
                                                            logits, lse, out);
    }
  }
  const bool has_bias = b.defined();
  if (auto node = make_node(
          "LinearCrossEntropyBackward0", OpId::linear_cross_entropy, {&x, &w, &b},
          [s, red, eps, counted, has_bias](Node& n, const Tensor& g) -> TensorList {
            const Tensor xs = n.saved(0), ws = n.saved(1), ts = n.saved(2), ls = n.saved(3);
            const Tensor bs = has_bias ? n.saved(4) : Tensor();
            if (GradMode::is_enabled())  // Note [The create_graph policy]
              return autograd::differentiate_composite(
                  n, {xs, ws, bs},
                  [&](const TensorList& a) {
                    return composite_linear_cross_entropy(a[0], a[1], a[2], ts, red, s.ignore_index, eps);
                  },
                  g);
            const Device dev = xs.device();
            const DType dtype = xs.dtype();
            Tensor gx, gw, gb;
            if (n.needs_input_grad(0)) gx = make_empty({s.rows, s.in}, dtype, dev);
            if (n.needs_input_grad(1)) gw = make_empty({s.vocab, s.in}, dtype, dev);
            if (has_bias && n.needs_input_grad(2)) gb = make_empty({s.vocab}, dtype, dev);
            const Tensor gc = contiguous(g);
            Tensor logits = make_empty({std::min(s.chunk, s.rows), s.vocab}, dtype, dev);
            if (!dev.is_meta()) {  // Note [Meta device]: no kernel
              const double denom = red == Reduction::Mean ? static_cast<double>(counted) : 1.0;
              kernels::loss::linear_cross_entropy_backward(s, xs, ws, bs, ts, ls, gc, denom, logits, gx, gw, gb);
            }
            return {gx, gw, gb};  // an undefined bias has an empty edge
          })) {
    node->save(x);
    node->save(w);
    node->save(t);
    node->save(lse);
    if (has_bias) node->save(b);
    set_history(out, node);
  }
  return to_target_shape(out);
}

}  // namespace graft
