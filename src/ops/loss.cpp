// Losses: cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss, binary_cross_entropy,
// binary_cross_entropy_with_logits, huber_loss, kl_div, cosine_embedding_loss, margin_ranking_loss,
// triplet_margin_loss, each with reduction none/mean/sum.
//
// Every loss is a composite of recorded graft ops (log_softmax, gather, index_select, where, log,
// exp, ...), so backward and double backward come from those ops' own formulas. The semantics are
// PyTorch's (1.13), checked against fixtures computed by PyTorch itself
// (tests/fixtures/gen_loss_fixtures.py). Only the argument checks read tensor values directly.
//
// Note [Where instead of kinks]
// A composite with abs/clamp/max has a kink whose one-sided derivative is arbitrary, and a
// `where` whose unselected branch is inf/nan poisons the gradient (0 * inf = nan). So:
//   * binary_cross_entropy_with_logits writes softplus(-x) = log1p(exp(-|x|)) + max(-x, 0) with
//     |x| and max(-x, 0) as `where(x < 0, ...)`: the two pieces' right derivatives at 0 add up to
//     the true derivative -sigmoid(-x) there, and nothing overflows (exp(-|x|) <= 1);
//   * binary_cross_entropy takes log of a safe value (1 where the input is 0, resp. 0 where it is
//     1) and selects PyTorch's clamp value -100 there, so the gradient is finite, never nan.
//     Gradients at input exactly 0 or 1 differ from PyTorch's fused backward (which divides by
//     max(x (1 - x), 1e-12)); the values do not.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "../autograd/composite_backward.h"
#include "../kernels/loss.h"
#include "../kernels/values.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/warning.h"
#include "graft/ops/ops.h"
#include "loss_checks.h"
#include "ops_common.h"

namespace graft {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
  }
  return "unknown";
}

namespace {

using autograd::Node;
using autograd::set_history;
using detail::cast;
using namespace detail::loss;  // the checks shared with loss2.cpp


// A weight tensor (`what`) that must broadcast to `shape` without enlarging it.
void check_weight_broadcasts_to(const Tensor& w, IntArrayRef shape, const char* op, const char* what) {
  if (!w.defined()) return;
  GRAFT_CHECK(w.is_floating_point(), op, std::string("a floating-point ") + what,
              std::string(what) + " of dtype " + dtype_name(w.dtype()), std::string("convert it first: ") + what + ".to(graft::kFloat32)");
  const IntArrayRef s = w.sizes();
  bool ok = s.size() <= shape.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i], t = shape[shape.size() - 1 - i];
    ok = d == t || d == 1;
  }
  GRAFT_CHECK(ok, op, std::string("a ") + what + " that broadcasts to the input's shape " + shape_str(shape),
              std::string(what) + " of shape " + shape_str(s),
              "its sizes must match the input's or be 1 in every trailing dimension");
}

// ---- class-index losses (nll_loss, cross_entropy) ----

int64_t class_dim_of(const Tensor& input) { return input.dim() == 1 ? 0 : 1; }

Shape class_target_shape(const Tensor& input) {
  Shape s;
  for (int64_t d = 0; d < input.dim(); ++d)
    if (d != 1) s.push_back(input.size(d));
  if (input.dim() == 1) s = Shape();
  return s;
}

void check_class_weight(const Tensor& weight, int64_t C, const char* op) {
  if (!weight.defined()) return;
  GRAFT_CHECK(weight.dim() == 1 && weight.size(0) == C, op,
              "weight of shape [" + std::to_string(C) + "] (one per class)",
              "weight of shape " + shape_str(weight.sizes()),
              "give one weight per class C = " + std::to_string(C) + ", or leave weight undefined");
  GRAFT_CHECK(weight.is_floating_point(), op, "a floating-point weight", std::string("weight of dtype ") + dtype_name(weight.dtype()),
              "convert it first: weight.to(graft::kFloat32)");
}

void check_class_input(const Tensor& input, const char* op) {
  check_floating(input, op, "input");
  GRAFT_CHECK(input.dim() >= 1, op, "input of shape (C), (N, C) or (N, C, d1, ...)",
              "input of shape " + shape_str(input.sizes()), "a 0-dim input has no class dimension");
}

// Target of class indices: int64, the input's shape without the class dim, values in [0, C) or
// ignore_index.
void check_class_target(const Tensor& input, const Tensor& target, int64_t ignore_index, const char* op) {
  check_defined(target, op, "target");
  const Shape expected = class_target_shape(input);
  const int64_t C = input.size(class_dim_of(input));
  GRAFT_CHECK(target.sizes().equals(expected), op,
              "target of shape " + shape_str(expected) + " for input of shape " + shape_str(input.sizes()),
              "target of shape " + shape_str(target.sizes()),
              "class-index targets have the input's shape without the class dim " +
                  std::to_string(class_dim_of(input)) + " (C = " + std::to_string(C) + ")" +
                  (std::string(op) == "cross_entropy" ? "; class-probability targets have the input's shape" : ""));
  GRAFT_CHECK(target.dtype() == kInt64, op, "int64 class indices as target",
              std::string("target of dtype ") + dtype_name(target.dtype()) + " and shape " + shape_str(target.sizes()),
              std::string("convert it with target.to(graft::kInt64)") +
                  (std::string(op) == "cross_entropy" ? " (or give class probabilities of the input's shape)" : ""));
  for (int64_t v : read_indices(target)) {
    GRAFT_CHECK(v == ignore_index || (v >= 0 && v < C), op,
                "target values in [0, " + std::to_string(C) + ") or ignore_index (" + std::to_string(ignore_index) + ")",
                "target value " + std::to_string(v),
                "class indices must be smaller than the number of classes C = " + std::to_string(C));
  }
}

// x (C), (N, C) or (N, C, d1, ...) as (M, C) rows, the class dim last, rows in target order.
Tensor to_rows(const Tensor& x, int64_t M) {
  const int64_t C = x.size(class_dim_of(x));
  if (x.dim() == 1) return x.unsqueeze(0);
  if (x.dim() == 2) return x;
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < x.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  return x.permute(perm).reshape({M, C});
}

// The pieces of nll_loss on log-probabilities `logp` (checked), shared with label smoothing.
struct NllParts {
  Tensor rows;    // (M, C) log-probabilities
  Tensor mask;    // (M) bool: target != ignore_index
  Tensor safe;    // (M) int64: target, 0 where ignored
  Tensor w;       // (M) weight of each row's class, 0 where ignored
  Tensor losses;  // (M) -w * logp[i, t_i], 0 where ignored
};

NllParts nll_parts(const Tensor& logp, const Tensor& target, const Tensor& weight, int64_t ignore_index) {
  NllParts p;
  const int64_t M = target.numel();
  p.rows = to_rows(logp, M);
  const Tensor t = target.dim() == 0 ? target.unsqueeze(0) : target.reshape({M});
  p.mask = ne(t, Scalar(ignore_index));
  p.safe = where(p.mask, t, Scalar(int64_t{0}));
  const Tensor picked = gather(p.rows, 1, p.safe.unsqueeze(1)).squeeze(1);
  const Tensor maskf = p.mask.to(logp.dtype());
  p.w = weight.defined() ? index_select(cast(weight, logp.dtype()), 0, p.safe) * maskf : maskf;
  p.losses = where(p.mask, -(picked * p.w), Scalar(0.0));
  return p;
}

// Per-row values (M) in the target's shape.
Tensor back_to_target_shape(const Tensor& rows, const Tensor& target) {
  return target.dim() == 0 ? rows.squeeze(0) : rows.reshape(target.sizes());
}

Tensor nll_reduce(const NllParts& p, const Tensor& target, Reduction r) {
  switch (r) {
    case Reduction::None: return back_to_target_shape(p.losses, target);
    case Reduction::Sum: return p.losses.sum();
    case Reduction::Mean: return p.losses.sum() / p.w.sum();  // nan when every target is ignored
  }
  return p.losses;
}

// weight (C) viewed to broadcast along the class dim of an input of `ndim` dims.
Tensor class_weight_view(const Tensor& weight, int64_t ndim, int64_t class_dim, DType dtype) {
  std::vector<int64_t> shape(static_cast<size_t>(ndim), 1);
  shape[static_cast<size_t>(class_dim)] = weight.size(0);
  return cast(weight, dtype).reshape(shape);
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction,
                int64_t ignore_index) {
  const detail::MetaOpScope meta_scope("nll_loss", {&input, &target, &weight});  // Note [Meta device]
  const char* op = "nll_loss";
  check_reduction(reduction, op);
  check_class_input(input, op);
  check_class_target(input, target, ignore_index, op);
  check_class_weight(weight, input.size(class_dim_of(input)), op);
  const NllParts p = nll_parts(input, target, weight, ignore_index);
  return nll_reduce(p, target, reduction);
}

// Note [Fused cross-entropy]
// cross_entropy of (N, C) float logits against class indices, without class weights or label
// smoothing (the common case, and the MLP's and CNN's loss), runs as one op instead of the
// composite's ten (log_softmax, gather, where, ...), each recorded and each allocating:
//   forward, one pass per row:  lse_i = m_i + log sum_c exp(x_ic - m_i), m_i = max_c x_ic;
//                               loss_i = lse_i - x_{i, t_i}, 0 where t_i = ignore_index;
//                               mean = sum_i loss_i / #counted rows (0 / 0 = nan, as PyTorch);
//   backward, one pass:         dx_ic = g_i (exp(x_ic - lse_i) - [c = t_i]) / D, 0 on ignored
//                               rows; D = #counted rows for mean, else 1; g_i = g for mean/sum.
// It saves the logits and lse (N values), where the composite saves log_softmax's (N, C) output.
// The node is named NllLossBackward0, as loss.grad_fn is in PyTorch (whose next function is
// LogSoftmaxBackward0; here it is the logits' own grad_fn). Under create_graph the backward
// differentiates composite_cross_entropy, the general route (Note [The create_graph policy]).
// Tested against the composite route and PyTorch's fixtures (tests/ops).
namespace {

// The fused op's composite (the general route's formula for its case): its specification, and what
// its backward differentiates under create_graph (Note [The create_graph policy]).
Tensor composite_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_index, Reduction red) {
  return nll_reduce(nll_parts(log_softmax(x, 1), t, Tensor(), ignore_index), t, red);
}

bool fused_cross_entropy_applies(const Tensor& input, const Tensor& target, const Tensor& weight,
                                 double label_smoothing) {
  return input.dim() == 2 && (input.dtype() == kFloat32 || input.dtype() == kFloat64) && target.dim() == 1 &&
         target.dtype() == kInt64 && target.size(0) == input.size(0) && !weight.defined() &&
         label_smoothing == 0.0;
}


Tensor fused_cross_entropy(const Tensor& input, const Tensor& target, int64_t ignore_index, Reduction red) {
  const Tensor x = input.is_contiguous() ? input : input.contiguous();
  const Tensor t = target.is_contiguous() ? target : target.contiguous();
  const int64_t N = x.size(0);
  Tensor lse = make_empty({N}, x.dtype(), x.device());
  Tensor out = make_empty(red == Reduction::None ? Shape{N} : Shape{}, x.dtype(), x.device());
  const int64_t counted =
      x.is_meta() ? 0 : kernels::loss::cross_entropy_forward(x, t, ignore_index, kernel_reduce(red), lse, out);
  if (auto node = make_node("NllLossBackward0", OpId::nll_loss, {&input}, [ignore_index, red, counted](Node& n, const Tensor& g)
                                                               -> TensorList {
        const Tensor xs = n.saved(0), ts = n.saved(1), ls = n.saved(2);
        const int64_t rows = xs.size(0), cols = xs.size(1);
        const double denom = red == Reduction::Mean ? static_cast<double>(counted) : 1.0;
        if (GradMode::is_enabled())  // Note [The create_graph policy]
          return autograd::differentiate_composite(
              n, {xs}, [&](const TensorList& in) { return composite_cross_entropy(in[0], ts, ignore_index, red); }, g);
        Tensor dx = make_empty({rows, cols}, xs.dtype(), xs.device());
        const Tensor gc = g.is_contiguous() ? g : g.contiguous();
        if (!xs.is_meta())
          kernels::loss::cross_entropy_backward(xs, ts, ls, gc, ignore_index, kernel_reduce(red), denom, dx);
        return {dx};
      })) {
    node->save(x);
    node->save(t);
    node->save(lse);
    set_history(out, node);
  }
  return out;
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction,
                     int64_t ignore_index, double label_smoothing) {
  const detail::MetaOpScope meta_scope("cross_entropy", {&input, &target, &weight});  // Note [Meta device]
  const char* op = "cross_entropy";
  check_reduction(reduction, op);
  check_class_input(input, op);
  check_defined(target, op, "target");
  const double eps = label_smoothing;
  GRAFT_CHECK(eps >= 0.0 && eps <= 1.0, op, "label_smoothing in [0, 1]", "label_smoothing " + num(eps),
              "0 disables smoothing; 0.1 is a common choice");
  const int64_t cdim = class_dim_of(input);
  const int64_t C = input.size(cdim);
  check_class_weight(weight, C, op);
  const Reduction red = reduction;

  if (target.sizes().equals(input.sizes())) {
    // Class probabilities: loss_i = -sum_c w_c * target[i, c] * logp[i, c].
    GRAFT_CHECK(target.is_floating_point(), op,
                "a floating-point target of class probabilities (target has the input's shape " +
                    shape_str(input.sizes()) + ")",
                std::string("target of dtype ") + dtype_name(target.dtype()) + " and shape " + shape_str(target.sizes()),
                "class-index targets have the input's shape without the class dim " + std::to_string(cdim));
    GRAFT_CHECK(ignore_index < 0, op, "no ignore_index with class-probability targets",
                "ignore_index " + std::to_string(ignore_index),
                "ignore_index applies to class-index targets only; leave it at its default -100");
    const Tensor logp = log_softmax(input, cdim);
    const Tensor tgt = eps > 0.0 ? target * (1.0 - eps) + eps / static_cast<double>(C) : target;
    Tensor prod = logp * tgt;
    if (weight.defined()) prod = prod * class_weight_view(weight, input.dim(), cdim, input.dtype());
    switch (red) {
      case Reduction::None: return -prod.sum(cdim);
      case Reduction::Sum: return -prod.sum();
      case Reduction::Mean:
        if (input.numel() == 0) return prod.sum() * std::nan("");
        return -prod.sum() / static_cast<double>(input.numel() / C);
    }
    return prod;
  }

  check_class_target(input, target, ignore_index, op);
  if (fused_cross_entropy_applies(input, target, weight, label_smoothing))  // Note [Fused cross-entropy]
    return fused_cross_entropy(input, target, ignore_index, red);
  const Tensor logp = log_softmax(input, cdim);
  const NllParts p = nll_parts(logp, target, weight, ignore_index);
  const Tensor nll = nll_reduce(p, target, red);
  if (eps <= 0.0) return nll;

  // Label smoothing (PyTorch's formula): (1 - eps) * nll + eps / C * smooth, where smooth_i =
  // -sum_c w_c logp[i, c] (0 for ignored targets), normalised like nll for mean.
  const Tensor rows = weight.defined() ? p.rows * cast(weight, input.dtype()).reshape({1, C}) : p.rows;
  const Tensor smooth = where(p.mask, -rows.sum(1), Scalar(0.0));
  Tensor ret;
  switch (red) {
    case Reduction::None: ret = back_to_target_shape(smooth, target); break;
    case Reduction::Sum: ret = smooth.sum(); break;
    case Reduction::Mean: ret = smooth.sum() / p.w.sum(); break;  // p.w = mask without weight
  }
  return nll * (1.0 - eps) + ret * (eps / static_cast<double>(C));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const detail::MetaOpScope meta_scope("mse_loss", {&input, &target});  // Note [Meta device]
  const char* op = "mse_loss";
  check_reduction(reduction, op);
  check_broadcast(input, target, op);
  const Tensor d = input - target;
  return apply_reduction(d * d, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const detail::MetaOpScope meta_scope("l1_loss", {&input, &target});  // Note [Meta device]
  const char* op = "l1_loss";
  check_reduction(reduction, op);
  check_broadcast(input, target, op);
  return apply_reduction(abs(input - target), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  const detail::MetaOpScope meta_scope("smooth_l1_loss", {&input, &target});  // Note [Meta device]
  const char* op = "smooth_l1_loss";
  check_reduction(reduction, op);
  GRAFT_CHECK(beta >= 0.0, op, "beta >= 0", "beta " + num(beta),
              "beta is the width of the quadratic zone; 0 gives l1_loss");
  check_broadcast(input, target, op);
  const Tensor z = abs(input - target);
  if (beta == 0.0) return apply_reduction(z, reduction);
  // 0.5 z^2 / beta inside the zone, z - beta / 2 outside (both continuous with slope 1 at z = beta).
  const Tensor loss = where(lt(z, Scalar(beta)), z * z * 0.5 / beta, z - 0.5 * beta);
  return apply_reduction(loss, reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  const detail::MetaOpScope meta_scope("binary_cross_entropy", {&input, &target, &weight});  // Note [Meta device]
  const char* op = "binary_cross_entropy";
  check_reduction(reduction, op);
  check_floating(input, op, "input");
  check_floating(target, op, "target");
  GRAFT_CHECK(target.sizes().equals(input.sizes()) || target.numel() == input.numel(), op,
              "target of the input's shape " + shape_str(input.sizes()), "target of shape " + shape_str(target.sizes()),
              "binary_cross_entropy does not broadcast input and target; reshape the target");
  // ATen pairs the elements of a target with the input's number of elements in order, with a
  // deprecation warning (LibTorch 1.13's DCGAN example relies on it: (N, 1, 1, 1) outputs, (N) labels).
  if (!target.sizes().equals(input.sizes())) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      GRAFT_WARN("binary_cross_entropy: using a target of shape " + shape_str(target.sizes()) +
                 " for an input of shape " + shape_str(input.sizes()) +
                 " pairs their elements in order; this is deprecated, reshape the target to the input's shape");
    return binary_cross_entropy(input, target.reshape(input.sizes()), weight, reduction);
  }
  check_weight_broadcasts_to(weight, input.sizes(), op, "weight");
  for (double v : read_values(input)) {
    GRAFT_CHECK(v >= 0.0 && v <= 1.0, op, "all elements of input between 0 and 1 (probabilities)",
                "an input element " + num(v),
                "apply graft::sigmoid first, or use binary_cross_entropy_with_logits on the logits");
  }
  // PyTorch: (t - 1) * max(log1p(-x), -100) - t * max(log(x), -100); see Note [Where instead of kinks].
  const Tensor pos = gt(input, Scalar(0.0)), below_one = lt(input, Scalar(1.0));
  const Tensor log_x = where(pos, clamp_min(log(where(pos, input, Scalar(1.0))), -100.0), Scalar(-100.0));
  const Tensor log_1mx =
      where(below_one, clamp_min(log1p(-where(below_one, input, Scalar(0.0))), -100.0), Scalar(-100.0));
  Tensor loss = (target - 1.0) * log_1mx - target * log_x;
  if (weight.defined()) loss = loss * cast(weight, input.dtype());
  return apply_reduction(loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction reduction) {
  const detail::MetaOpScope meta_scope("binary_cross_entropy_with_logits", {&input, &target, &weight});  // Note [Meta device]
  const char* op = "binary_cross_entropy_with_logits";
  check_reduction(reduction, op);
  check_floating(input, op, "input");
  check_floating(target, op, "target");
  GRAFT_CHECK(target.sizes().equals(input.sizes()), op,
              "target of the input's shape " + shape_str(input.sizes()),
              "target of shape " + shape_str(target.sizes()) + ". Target size (" + shape_str(target.sizes()) +
                  ") must be the same as input size (" + shape_str(input.sizes()) + ")",
              "binary_cross_entropy_with_logits does not broadcast input and target; reshape the target");
  check_weight_broadcasts_to(weight, input.sizes(), op, "weight");
  check_weight_broadcasts_to(pos_weight, input.sizes(), op, "pos_weight");
  // loss = (1 - t) x + (1 + (pw - 1) t) softplus(-x), softplus(-x) = log1p(exp(-|x|)) + max(-x, 0)
  // (Note [Where instead of kinks]).
  const Tensor neg = lt(input, Scalar(0.0));
  const Tensor abs_x = where(neg, -input, input);
  const Tensor max_negx = where(neg, -input, Scalar(0.0));
  const Tensor softplus_negx = log1p(exp(-abs_x)) + max_negx;
  const Tensor lin = (1.0 - target) * input;
  Tensor loss = pos_weight.defined()
                    ? lin + ((cast(pos_weight, input.dtype()) - 1.0) * target + 1.0) * softplus_negx
                    : lin + softplus_negx;
  if (weight.defined()) loss = loss * cast(weight, input.dtype());
  return apply_reduction(loss, reduction);
}

// ---- huber, kl_div, and the margin / embedding losses (composites, as ATen's are) ----

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  const detail::MetaOpScope meta_scope("huber_loss", {&input, &target});  // Note [Meta device]
  const char* op = "huber_loss";
  check_reduction(reduction, op);
  GRAFT_CHECK(delta > 0.0, op, "delta > 0", "delta " + num(delta), "delta is where the loss turns linear; 1 is the default");
  check_broadcast(input, target, op);
  const Tensor d = input - target;
  const Tensor z = abs(d);
  // 0.5 d^2 inside (written with d, not |d|: no kink at 0), delta (|d| - delta / 2) outside.
  const Tensor loss = where(lt(z, Scalar(delta)), d * d * 0.5, (z - 0.5 * delta) * delta);
  return apply_reduction(loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  const detail::MetaOpScope meta_scope("kl_div", {&input, &target});  // Note [Meta device]
  const char* op = "kl_div";
  check_reduction(reduction, op);
  check_broadcast(input, target, op);
  check_floating(target, op, "target");
  Tensor loss;
  if (log_target) {
    loss = exp(target) * (target - input);
  } else {
    // target log(target) - target input, with 0 log 0 = 0 (ATen's xlogy), written safely
    // (Note [Where instead of kinks]).
    const Tensor pos = gt(target, Scalar(0.0));
    const Tensor tlogt = where(pos, target * log(where(pos, target, Scalar(1.0))), Scalar(0.0));
    loss = tlogt - target * input;
  }
  return apply_reduction(loss, reduction);  // kMean: over every element (F::kl_div adds kBatchMean)
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             Reduction reduction) {
  const detail::MetaOpScope meta_scope("cosine_embedding_loss", {&input1, &input2, &target});  // Note [Meta device]
  const char* op = "cosine_embedding_loss";
  check_reduction(reduction, op);
  if ((is_integral(input1.dtype(), false) || is_integral(input2.dtype(), false)) && input1.defined() &&
      input2.defined()) {
    // Integer inputs give a floating loss, as in PyTorch (the magnitudes add a double epsilon):
    // computed in the default dtype, exact for the products and sums of ordinary integers.
    auto widen = [](const Tensor& x) { return is_integral(x.dtype(), false) ? x.to(get_default_dtype()) : x; };
    return cosine_embedding_loss(widen(input1), widen(input2), target, margin, reduction);
  }
  check_floating(input1, op, "input1");
  check_floating(input2, op, "input2");
  check_defined(target, op, "target");
  const int64_t tdim = target.dim();
  GRAFT_CHECK(tdim <= 1, op, "a 0-dim or 1-D target (one +1 / -1 per pair)", "target of shape " + shape_str(target.sizes()),
              "multi-target is not supported");
  const int64_t want = tdim + 1;
  GRAFT_CHECK(input1.dim() == want && input2.dim() == want, op,
              std::to_string(want) + "-D inputs for a " + std::to_string(tdim) + "-D target",
              "input1 of shape " + shape_str(input1.sizes()) + " and input2 of shape " + shape_str(input2.sizes()),
              "inputs (N, D) go with a target (N); inputs (D) with a 0-dim target");
  // cos = <x1, x2> / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12)), ATen's EPSILON
  constexpr double kEps = 1e-12;
  const Tensor prod = (input1 * input2).sum({tdim});
  const Tensor mag1 = (input1 * input1).sum({tdim}) + kEps, mag2 = (input2 * input2).sum({tdim}) + kEps;
  const Tensor cos = prod / sqrt(mag1 * mag2);
  // 1 - cos for target 1, max(0, cos - margin) for target -1, 0 for any other target value
  const Tensor loss = where(eq(target, Scalar(1.0)), 1.0 - cos, Scalar(0.0)) +
                      where(eq(target, Scalar(-1.0)), clamp_min(cos - margin, 0.0), Scalar(0.0));
  return apply_reduction(loss, reduction);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           Reduction reduction) {
  const detail::MetaOpScope meta_scope("margin_ranking_loss", {&input1, &input2, &target});  // Note [Meta device]
  const char* op = "margin_ranking_loss";
  check_reduction(reduction, op);
  check_floating(input1, op, "input1");
  check_floating(input2, op, "input2");
  check_defined(target, op, "target");
  broadcast_shapes(broadcast_shapes(input1.sizes(), input2.sizes(), op), target.sizes(), op);
  return apply_reduction(clamp_min(-target * (input1 - input2) + margin, 0.0), reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin, double p,
                           double eps, bool swap, Reduction reduction) {
  const detail::MetaOpScope meta_scope("triplet_margin_loss", {&anchor, &positive, &negative});  // Note [Meta device]
  const char* op = "triplet_margin_loss";
  check_reduction(reduction, op);
  check_floating(anchor, op, "anchor");
  check_floating(positive, op, "positive");
  check_floating(negative, op, "negative");
  GRAFT_CHECK(anchor.dim() == positive.dim() && positive.dim() == negative.dim(), op,
              "anchor, positive and negative of the same number of dims",
              "anchor " + shape_str(anchor.sizes()) + ", positive " + shape_str(positive.sizes()) + ", negative " +
                  shape_str(negative.sizes()),
              "give all three as (N, D) or all three as (D)");
  const Tensor d_pos = pairwise_distance(anchor, positive, p, eps);
  Tensor d_neg = pairwise_distance(anchor, negative, p, eps);
  if (swap) d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps));
  return apply_reduction(clamp_min(d_pos - d_neg + margin, 0.0), reduction);
}

}  // namespace graft
