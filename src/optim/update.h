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
#include "graft/optim/state_precision.h"
#include "../kernels/quantize.h"

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

// ---- compact state (Note [Compact optimizer state]) ----

// The form `param`'s state takes under `precision`: compact only for float32 parameters, and 8-bit
// only from kInt8StateMinNumel values up.
inline StatePrecision effective_precision(StatePrecision precision, const Tensor& param) {
  if (param.dtype() != DType::Float32) return StatePrecision::Full;
  if (precision == StatePrecision::Int8 && param.numel() < kInt8StateMinNumel) return StatePrecision::Full;
  return precision;
}

// The form a state buffer is held in now: uint8 codes (Int8), bfloat16, or full (any other dtype).
inline StatePrecision held_precision(const Tensor& values) {
  if (values.dtype() == DType::UInt8) return StatePrecision::Int8;
  if (values.dtype() == DType::BFloat16) return StatePrecision::BFloat16;
  return StatePrecision::Full;
}

inline Tensor& as_state(Tensor& t) {
  memory::set_category(*t.impl().storage, memory::Category::OptimizerState);
  return t;
}

// Makes a state buffer of `param` (zeros) in `form` when it is undefined; converts it to `form`
// when it is held in another (the group's precision changed, or a state dict saved at another
// precision was loaded); checks a loaded compact state's shapes. `is_signed`: the 8-bit map (signed
// for a first moment or momentum, unsigned for a second moment). `absmax` holds the 8-bit scales,
// and is undefined in every other form. Leaves both contiguous.
inline void prepare_state(Tensor& values, Tensor& absmax, const Tensor& param, StatePrecision form, bool is_signed,
                          const char* op) {
  const int64_t n = param.numel(), blocks = (n + kernels::kQuantBlock - 1) / kernels::kQuantBlock;
  if (!values.defined()) {
    if (form == StatePrecision::Full) {
      values = make_buffer(param);
    } else if (form == StatePrecision::BFloat16) {
      values = make_empty(param.sizes(), kBFloat16, param.device());
      values.fill_(0.0);
    } else {
      values = make_empty(param.sizes(), kUInt8, param.device());
      values.fill_(static_cast<double>(kernels::dynamic_map_zero_code(is_signed)));
      absmax = make_empty({blocks}, kFloat32, param.device());
      absmax.fill_(0.0);
      as_state(absmax);
    }
    as_state(values);
    if (form != StatePrecision::Int8) absmax = Tensor();
    return;
  }
  const StatePrecision held = held_precision(values);
  GRAFT_CHECK(values.sizes() == param.sizes(), op,
              "optimiser state of its parameter's shape " + shape_str(param.sizes()),
              "state of shape " + shape_str(values.sizes()), "load a state dict saved for this model's parameters");
  GRAFT_CHECK(held != StatePrecision::Int8 || (absmax.defined() && absmax.dtype() == DType::Float32 &&
                                               absmax.dim() == 1 && absmax.numel() == blocks),
              op, "8-bit state with a float32 scale per block of 2048 (" + std::to_string(blocks) + " scales)",
              absmax.defined() ? std::string("scales of dtype ") + dtype_name(absmax.dtype()) + " and shape " +
                                     shape_str(absmax.sizes())
                               : std::string("no scales"),
              "a state dict holding uint8 state (state.<id>.<name>) needs its <name>_absmax too");
  if (held == form && (form != StatePrecision::Full || values.dtype() == param.dtype())) {
    contiguous_buffer(values);
    if (form == StatePrecision::Int8) contiguous_buffer(absmax);
    else absmax = Tensor();
    return;
  }
  // Another form: through float32 (or the full values themselves) into the wanted one.
  const Tensor wide = held == StatePrecision::Int8 ? kernels::dequantize_blockwise(values, absmax, is_signed) : values;
  absmax = Tensor();
  if (form == StatePrecision::Full) values = wide.to(param.dtype(), /*non_blocking=*/false, /*copy=*/true).contiguous();
  else if (form == StatePrecision::BFloat16) values = wide.to(kBFloat16, /*non_blocking=*/false, /*copy=*/true).contiguous();
  else values = kernels::quantize_blockwise(wide.to(kFloat32), is_signed, absmax);
  as_state(values);
  if (absmax.defined()) as_state(absmax);
}

// A compact state buffer of a float32 parameter as the update loops see it: read block by block
// into float32 and written back (Note [Compact optimizer state]).
struct CompactState {
  StatePrecision form = StatePrecision::Full;
  BFloat16* bf16 = nullptr;
  uint8_t* codes = nullptr;
  float* absmax = nullptr;
  const float* map = nullptr;

  CompactState() = default;
  CompactState(Tensor& values, Tensor& scales, bool is_signed) : form(held_precision(values)) {
    if (form == StatePrecision::BFloat16) bf16 = values.data_ptr<BFloat16>();
    if (form == StatePrecision::Int8) {
      codes = values.data_ptr<uint8_t>();
      absmax = scales.data_ptr<float>();
      map = kernels::dynamic_map(is_signed);
    }
  }
  // Values [s, s + len) of block k (s = k * kQuantBlock) into out, and back.
  void load(int64_t k, int64_t s, int64_t len, float* out) const {
    if (form == StatePrecision::BFloat16) kernels::bfloat16_to_float(bf16 + s, len, out);
    else kernels::dequantize_block(codes + s, absmax[k], len, map, out);
  }
  void store(int64_t k, int64_t s, int64_t len, const float* in) const {
    if (form == StatePrecision::BFloat16) kernels::float_to_bfloat16(in, len, bf16 + s);
    else absmax[k] = kernels::quantize_block(in, len, map, codes + s);
  }
};

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
