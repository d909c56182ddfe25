// The losses of issue 32 that LibTorch 1.13 has and graft lacked: soft_margin_loss,
// multilabel_soft_margin_loss, hinge_embedding_loss, poisson_nll_loss, gaussian_nll_loss,
// multi_margin_loss, multilabel_margin_loss.
//
// Like those of loss.cpp, each is a composite of recorded graft ops (log_sigmoid, where, gather,
// ...), so backward and double backward come from those ops' formulas, with PyTorch 1.13's
// semantics (checked against tests/fixtures/loss2_fixtures.txt, written by PyTorch). Only the
// argument checks read values, and they are skipped on meta tensors (Note [Meta device]), where
// the composites run on shapes alone: the targets' class masks are built from ops too
// (eq against arange), never from values read here.
//
// Kinks: ATen's multi_margin and multilabel_margin backwards pass the gradient where the hinge
// term z is > 0 (strictly), so the hinges are where(z > 0, z, 0), whose gradient is 0 at z = 0;
// hinge_embedding_loss is ATen's composite (clamp_min), so its kink follows clamp_min as ATen's.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../kernels/values.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/ops/activation2.h"
#include "graft/ops/ops.h"
#include "loss_checks.h"
#include "ops_common.h"

namespace graft {

namespace {

using detail::cast;
using namespace detail::loss;  // the checks shared with loss.cpp

std::string loss2_str(const char* s) { return s; }

// The elementwise losses' input (floating) and target (any dtype, converted to the input's, as
// PyTorch promotes), which must broadcast together.
Tensor loss2_elementwise_target(const Tensor& input, const Tensor& target, const char* op) {
  check_broadcast(input, target, op);
  return target.is_floating_point() ? target : cast(target, input.dtype());
}

// The class-index losses' input: (N, C), (C) or 0-dim (one class), non-empty.
void loss2_check_class_input(const Tensor& input, const char* op) {
  check_floating(input, op, "input");
  const int64_t nd = input.dim();
  GRAFT_CHECK((nd == 2 && input.size(1) != 0) || (nd == 1 && input.size(0) != 0) || nd == 0, op,
              "a non-empty vector (C) or matrix (N, C) input", "input of shape " + shape_str(input.sizes()),
              "give one row of class scores per sample");
}

void loss2_check_index_target(const Tensor& target, const char* op) {
  check_defined(target, op, "target");
  GRAFT_CHECK(target.dtype() == kInt64, op, "an int64 target of class indices",
              "target of dtype " + loss2_str(dtype_name(target.dtype())) + " and shape " + shape_str(target.sizes()),
              "class indices are int64: target.to(graft::kInt64)");
}

}  // namespace

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const detail::MetaOpScope meta_scope("soft_margin_loss", {&input, &target});  // Note [Meta device]
  const char* op = "soft_margin_loss";
  check_reduction(reduction, op);
  const Tensor y = loss2_elementwise_target(input, target, op);
  // log(1 + exp(-y x)) = -log_sigmoid(y x): ATen's log1p(exp(.)) without its overflow to inf
  // (where ATen gives inf and a nan gradient for -y x above ~710 in float64, this is finite).
  return apply_reduction(-log_sigmoid(input * y), reduction);
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   Reduction reduction) {
  const detail::MetaOpScope meta_scope("multilabel_soft_margin_loss",
                                       {&input, &target, &weight});  // Note [Meta device]
  const char* op = "multilabel_soft_margin_loss";
  check_reduction(reduction, op);
  const Tensor y = loss2_elementwise_target(input, target, op);
  GRAFT_CHECK(input.dim() >= 1, op, "an input of at least 1 dim (C) or (N, C)", "a 0-dim input",
              "the last dim holds the classes");
  Tensor loss = -(y * log_sigmoid(input) + (1.0 - y) * log_sigmoid(-input));
  if (weight.defined()) {
    check_floating(weight, op, "weight");
    loss = loss * cast(weight, input.dtype());  // broadcasts as PyTorch's loss * weight does
  }
  const int64_t class_dim = input.dim() - 1;
  loss = loss.sum({class_dim}) / static_cast<double>(input.size(class_dim));
  return apply_reduction(loss, reduction);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin, Reduction reduction) {
  const detail::MetaOpScope meta_scope("hinge_embedding_loss", {&input, &target});  // Note [Meta device]
  const char* op = "hinge_embedding_loss";
  check_reduction(reduction, op);
  const Tensor y = loss2_elementwise_target(input, target, op);
  // ATen's composite: where(y != 1, max(0, margin - x), 0) + where(y != -1, x, 0).
  const Tensor margin_clamp = clamp_min(margin - input, 0.0);
  const Tensor loss =
      where(ne(y, Scalar(1.0)), margin_clamp, Scalar(0.0)) + where(ne(y, Scalar(-1.0)), input, Scalar(0.0));
  return apply_reduction(loss, reduction);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        Reduction reduction) {
  const detail::MetaOpScope meta_scope("poisson_nll_loss", {&input, &target});  // Note [Meta device]
  const char* op = "poisson_nll_loss";
  check_reduction(reduction, op);
  const Tensor y = loss2_elementwise_target(input, target, op);
  Tensor loss = log_input ? exp(input) - y * input : input - y * log(input + eps);
  if (full) {
    // Stirling's approximation of log(target!) where target > 1, 0 elsewhere; the logs of a safe
    // value (2 where target <= 1), so no nan reaches a gradient (Note [Where instead of kinks] in
    // loss.cpp) where ATen's masked_fill of nan values would.
    const Tensor big = gt(y, Scalar(1.0));
    const Tensor ys = where(big, y, Scalar(2.0));
    const Tensor stirling = ys * log(ys) - ys + 0.5 * log(ys * (2.0 * M_PI));
    loss = loss + where(big, stirling, Scalar(0.0));
  }
  return apply_reduction(loss, reduction);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full, double eps,
                         Reduction reduction) {
  const detail::MetaOpScope meta_scope("gaussian_nll_loss", {&input, &target, &var});  // Note [Meta device]
  const char* op = "gaussian_nll_loss";
  check_reduction(reduction, op);
  const Tensor y = loss2_elementwise_target(input, target, op);
  check_floating(var, op, "var");
  // PyTorch's shape rules: var of the input's shape; or the input's without its last dim
  // (unsqueezed to broadcast); or that with a last dim of 1.
  Tensor v = var;
  const IntArrayRef is = input.sizes(), vs = var.sizes();
  if (!vs.equals(is)) {
    const bool drop_last = !is.empty() && vs.size() + 1 == is.size() && std::equal(vs.begin(), vs.end(), is.begin());
    const bool last_one =
        !is.empty() && vs.size() == is.size() && vs.back() == 1 && std::equal(vs.begin(), vs.end() - 1, is.begin());
    GRAFT_CHECK(
        drop_last || last_one, op,
        "var of the input's shape " + shape_str(is) + ", or of that shape without its last dim or with a last dim of 1",
        "var of shape " + shape_str(vs), "var is of incorrect size (PyTorch's ValueError)");
    if (drop_last) v = var.unsqueeze(-1);
  }
  for (double x : read_values(var))
    GRAFT_CHECK(!(x < 0), op, "var >= 0 everywhere", "a negative entry " + std::to_string(x),
                "var has negative entry/entries (PyTorch's ValueError): it is a variance");
  // PyTorch clamps var to eps in place under no_grad: the value is max(var, eps) and the gradient
  // flows to var as if there were no clamp (so d/dvar is taken at the clamped value).
  Tensor vc;
  {
    NoGradGuard ng;
    vc = clamp_min(v, eps) - v;
  }
  vc = v + vc;
  const Tensor d = input - y;
  Tensor loss = 0.5 * (log(vc) + d * d / vc);
  if (full) loss = loss + 0.5 * std::log(2.0 * M_PI);
  return apply_reduction(loss, reduction);
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p, double margin, const Tensor& weight,
                         Reduction reduction) {
  const detail::MetaOpScope meta_scope("multi_margin_loss", {&input, &target, &weight});  // Note [Meta device]
  const char* op = "multi_margin_loss";
  check_reduction(reduction, op);
  GRAFT_CHECK(p == 1 || p == 2, op, "p 1 or 2", "p " + std::to_string(p), "only p == 1 and p == 2 supported");
  loss2_check_class_input(input, op);
  loss2_check_index_target(target, op);
  const int64_t nframe = input.dim() <= 1 ? 1 : input.size(0);
  const int64_t C = input.dim() == 0 ? 1 : input.size(input.dim() - 1);
  GRAFT_CHECK(target.dim() <= 1 && target.numel() == nframe, op,
              "a target of " + std::to_string(nframe) + " class indices (one per sample)",
              "target of shape " + shape_str(target.sizes()) + " for input of shape " + shape_str(input.sizes()),
              "inconsistent target size: input (N, C) takes target (N); input (C) a 0-dim target");
  if (weight.defined()) {
    check_floating(weight, op, "weight");
    GRAFT_CHECK(weight.dim() == 1 && weight.numel() == C, op,
                "a 1-D weight of " + std::to_string(C) + " values (one per class)",
                "weight of shape " + shape_str(weight.sizes()), "weight must be one-dimensional, one value per class");
  }
  for (int64_t t : read_indices(target))
    GRAFT_CHECK(t >= 0 && t < C, op, "class indices in [0, " + std::to_string(C) + ")", "target " + std::to_string(t),
                "target out of range");
  const Tensor x = input.reshape({nframe, C});
  const Tensor t = target.reshape({nframe, 1});
  const Tensor x_y = gather(x, 1, t);  // (N, 1)
  Tensor z = (margin - x_y) + x;
  z = where(gt(z, Scalar(0.0)), z, Scalar(0.0));  // strict: ATen's backward passes z > 0 only
  if (p == 2) z = z * z;
  if (weight.defined()) z = z * index_select(cast(weight, input.dtype()), 0, t.reshape({nframe})).unsqueeze(1);
  // the term j == y is left out
  const Tensor is_y = eq(t, arange(C, TensorOptions(kInt64)).unsqueeze(0));  // (N, C)
  z = where(is_y, Scalar(0.0), z);
  Tensor loss = z.sum({1}) / static_cast<double>(C);  // (N)
  if (reduction == Reduction::None && target.dim() == 0) loss = loss.reshape({});
  return apply_reduction(loss, reduction);
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const detail::MetaOpScope meta_scope("multilabel_margin_loss", {&input, &target});  // Note [Meta device]
  const char* op = "multilabel_margin_loss";
  check_reduction(reduction, op);
  loss2_check_class_input(input, op);
  loss2_check_index_target(target, op);
  const int64_t nd = input.dim();
  const int64_t nframe = nd <= 1 ? 1 : input.size(0);
  const int64_t C = nd == 0 ? 1 : input.size(nd - 1);
  const bool ok = nd <= 1 ? target.dim() <= 1 && target.numel() == C : target.sizes().equals(input.sizes());
  GRAFT_CHECK(ok, op, "a target of the input's shape " + shape_str(input.sizes()),
              "target of shape " + shape_str(target.sizes()),
              "inconsistent target size: one row of class indices per sample, padded with -1");
  for (int64_t t : read_indices(target))
    GRAFT_CHECK(t >= -1 && t < C, op, "class indices in [-1, " + std::to_string(C) + ")", "target " + std::to_string(t),
                "target out of range: a sample's targets end at its first -1");
  const Tensor x = input.reshape({nframe, C});
  const Tensor t = target.reshape({nframe, C});
  const DType dt = input.dtype();
  // valid[n, i]: entry i comes before the row's first -1 (no -1 among entries 0..i).
  const Tensor valid = eq(cumsum(cast(eq(t, Scalar(int64_t{-1})), dt), 1), Scalar(0.0));
  // count[n, c]: how often class c is among the row's targets (ATen loops over the target entries,
  // so a repeated class counts again); non[n, c]: c is not a target.
  const Tensor hits =
      logical_and(eq(t.unsqueeze(2), arange(C, TensorOptions(kInt64)).reshape({1, 1, C})), valid.unsqueeze(2));
  const Tensor count = cast(hits, dt).sum({1});  // (N, C)
  const Tensor non = cast(eq(count, Scalar(0.0)), dt);
  // z[n, j, k] = 1 - (x[n, j] - x[n, k]) for target j and non-target k: O(N C^2) memory.
  Tensor z = 1.0 - x.unsqueeze(2) + x.unsqueeze(1);
  z = where(gt(z, Scalar(0.0)), z, Scalar(0.0));  // strict: ATen's backward passes z > 0 only
  z = z * count.unsqueeze(2) * non.unsqueeze(1);
  Tensor loss = z.sum({1, 2}) / static_cast<double>(C);  // (N)
  if (reduction == Reduction::None && nd <= 1) loss = loss.reshape({});
  return apply_reduction(loss, reduction);
}

}  // namespace graft
