// graft::nn::utils: gradient clipping (PyTorch's torch.nn.utils.clip_grad_norm_ / clip_grad_value_,
// LibTorch's torch::nn::utils) and L1/L2 penalty helpers for the loss. See docs/gradients.md.
//
//   loss.backward();
//   double norm = graft::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//   optimizer.step();
//
// Note [Gradient clipping]
// clip_grad_norm_ treats the gradients of all `parameters` as one vector, exactly as PyTorch 1.13:
//   total_norm = || (||g_1||_p, ||g_2||_p, ...) ||_p        (p = inf: max |g_ij|)
//   clip_coef  = max_norm / (total_norm + 1e-6)
//   g_i       *= min(clip_coef, 1)                          (every gradient, in place)
// Parameters without a gradient are skipped. Each gradient is read once to compute its norm (a
// plain loop, accumulated in double and rounded to the gradient's dtype), then scaled in place;
// nothing is recorded by autograd. The total norm comes back as a double, as LibTorch returns it
// (Python returns a 0-dim tensor): the norm rounded to the gradients' dtype (float32 for float32
// gradients; the promoted dtype when they differ; 0 when no parameter has a gradient). clip_coef
// is computed in that dtype too, as PyTorch computes it on the 0-dim norm tensor (max_norm / t is
// t.reciprocal() * max_norm there, and so here).
// norm_type may be any order torch.norm takes, as in LibTorch: p > 0, infinity (max |g|), negative
// p ((sum |g|^p)^(1/p), 0 when an element is 0), -infinity (min |g|) or 0 (the count of nonzero
// elements); not nan.
// error_if_nonfinite = true throws graft::Error when the total norm is nan or inf (and leaves the
// gradients untouched); with false, the gradients are scaled anyway, and a nan norm makes them nan,
// as in PyTorch.
#pragma once

#include <vector>

#include "graft/core/tensor.h"

namespace graft::nn::utils {

// Scales the gradients of `parameters` in place so that their joint p-norm is at most max_norm
// (see Note [Gradient clipping]); returns the total norm before clipping.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient of `parameters` in place to [-clip_value, clip_value] (clip_value >= 0).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

namespace detail {
// optim::StepInBackward (Note [Optimizer step in backward], graft/optim/step_in_backward.h) marks
// the parameters whose gradients it consumes during backward (marks nest: one per call with true,
// undone by one with false). clip_grad_norm_ and clip_grad_value_ refuse a list that holds a marked
// parameter without a gradient (updated and freed in backward): skipping it would silently change
// the result.
void set_grad_consumed_in_backward(const Tensor& param, bool consumed);
bool grad_consumed_in_backward(const Tensor& param);
}  // namespace detail

// Penalties to add to the loss; both are recorded by autograd (differentiable) and return a 0-dim
// tensor (float32 0 for an empty list; the promoted dtype of the parameters otherwise).
//   l1_penalty(ps) = sum_i sum_j |w_ij|          (gradient sign(w); 0 at w = 0, as abs's is)
//   l2_penalty(ps) = sum_i sum_j w_ij^2          (no 1/2: the gradient is 2 w)
// PyTorch's weight_decay = wd in SGD and Adam (coupled decay) adds wd * w to the gradient, which is
// the gradient of 0.5 * wd * l2_penalty(ps): `loss + 0.5 * wd * l2_penalty(ps)` with weight_decay 0
// gives the same SGD trajectory as weight_decay = wd. AdamW's decoupled decay is not a penalty on
// the loss at all (docs/gradients.md, "Regularisation").
Tensor l1_penalty(const std::vector<Tensor>& parameters);
Tensor l2_penalty(const std::vector<Tensor>& parameters);

}  // namespace graft::nn::utils
