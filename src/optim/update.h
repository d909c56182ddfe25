// Shared plumbing of the optimisers' update loops (internal to src/optim).
//
// Note [Optimizer update loops]
// The updates are plain loops over contiguous float/double data, written to round exactly as
// PyTorch 1.13's CPU kernels that its single-tensor optimisers call:
//   a.add_(b, alpha=s)        -> fma(s, b, a)            (ATen's vectorised add uses fmadd)
//   a.addcmul_(b, c, value=s) -> fma(s * b, c, a)
//   a.addcdiv_(b, c, value=s) -> a + (s * b) / c
//   a.mul_(s), a / s, sqrt    -> one rounding each
// Scalars are computed in double (as Python does) and cast to the parameter's dtype before use, as
// ATen casts a Python scalar to the tensor's dtype. std::fma rounds once on every machine, so
// results do not depend on whether the compiler contracts a * b + c.
#pragma once

#include <cmath>
#include <limits>

#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "graft/core/tensor.h"
#include "graft/optim/optimizer.h"

namespace graft::optim::detail {

// PyTorch's torch.maximum: NaN if either is NaN.
template <class T>
inline T nan_maximum(T a, T b) {
  if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
  return a > b ? a : b;
}

// A buffer of the parameter's shape and dtype, contiguous; `fill` is its initial value.
inline Tensor make_buffer(const Tensor& like, double fill = 0.0) {
  Tensor t = make_empty(like.sizes(), like.dtype(), like.device());
  t.fill_(fill);  // a no-op on meta (Note [Meta device])
  memory::set_category(*t.impl().storage, memory::Category::OptimizerState);
  return t;
}

// A state buffer ready for a raw loop: contiguous (a user may have replaced it with a view).
inline Tensor& contiguous_buffer(Tensor& buffer) {
  if (!buffer.is_contiguous()) {
    buffer = buffer.contiguous();
    memory::set_category(*buffer.impl().storage, memory::Category::OptimizerState);
  }
  return buffer;
}

// For each parameter of `group` that has a gradient: checks the gradient and calls
// f(param, work, grad), where `work` is the parameter itself when it is contiguous (else a
// contiguous copy that is copied back afterwards) and `grad` is a contiguous gradient. The
// parameter's version counter is bumped with `op` as the writer.
template <class F>
void for_each_param_with_grad(OptimizerParamGroup& group, const char* op, F&& f) {
  for (Tensor& param : group.params()) {
    const Tensor& grad = param.grad();
    if (!grad.defined()) continue;
    GRAFT_CHECK(grad.sizes() == param.sizes() && grad.dtype() == param.dtype(), op,
                "a gradient of the parameter's shape " + shape_str(param.sizes()) + " and dtype " +
                    dtype_name(param.dtype()),
                "a gradient of shape " + shape_str(grad.sizes()) + " and dtype " + dtype_name(grad.dtype()),
                "a .grad set by hand must match its parameter");
    // On meta parameters (Note [Meta device]) the state is created and counted, and each optimiser
    // skips its update loop; a meta gradient of a CPU parameter (or the reverse) is an error.
    const graft::detail::MetaOpScope meta_scope(op, {&param, &grad});
    const Tensor g = grad.is_contiguous() ? grad : grad.contiguous();
    if (param.is_contiguous()) {
      f(param, param, g);
      param.impl().storage->bump_version(op);
    } else {
      Tensor work = param.contiguous();
      f(param, work, g);
      param.copy_(work);
    }
  }
}

}  // namespace graft::optim::detail
