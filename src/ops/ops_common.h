// Internal helpers shared by the op families (not installed).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/type_promotion.h"
#include "graft/autograd/node.h"
#include "graft/core/factory.h"
#include "graft/ops/op_list.h"
#include "graft/ops/ops.h"

namespace graft {

using ops::OpId;

// make_node for an op of GRAFT_FORALL_OPS: the node records the op's OpId and its name in the list
// (Note [Forward op of a node] in graft/autograd/node.h). Nodes of no listed op (double-backward
// nodes) call autograd::make_node with autograd::ForwardOp::unlisted("avg_pool2d_backward").
constexpr autograd::ForwardOp forward_op(OpId id) { return {static_cast<int>(id), ops::op_name(id)}; }

template <class F>
std::shared_ptr<autograd::Node> make_node(const char* name, OpId op, std::initializer_list<const Tensor*> inputs,
                                          F&& fn) {
  return autograd::make_node(name, forward_op(op), inputs, std::forward<F>(fn));
}

template <class F>
std::shared_ptr<autograd::Node> make_node(const char* name, OpId op, const TensorList& inputs, F&& fn) {
  return autograd::make_node(name, forward_op(op), inputs, std::forward<F>(fn));
}

// A tensor sharing x's storage with the given geometry (no autograd recording).
Tensor make_view(const Tensor& x, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
// Gradient of x.slice(dim, start, end, step) with respect to x (differentiable).
Tensor slice_backward(const Tensor& g, IntArrayRef input_sizes, int64_t dim, int64_t start, int64_t end,
                      int64_t step);

namespace detail {
// What a fused op's backward returns on meta (Note [Meta device]): for each input i that takes a
// gradient, an empty tensor of inputs[i]'s shape and dtype, as the kernel would allocate; no kernel.
inline TensorList meta_input_grads(const autograd::Node& n, const TensorList& inputs) {
  TensorList grads(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && n.needs_input_grad(i))
      grads[i] = make_empty(inputs[i].sizes(), inputs[i].dtype(), inputs[i].device());
  return grads;
}

// dst[...] = src broadcast to dst's shape, converting dtypes. No autograd, no version bump.
void copy_into(Tensor& dst, const Tensor& src);

// The input gradients of four activations, as their backward nodes compute them: one fused pass
// without create_graph, differentiable graft ops with it (elementwise.cpp). s is what each node
// saves: the output y (relu, sigmoid, tanh) or the input x (gelu). Shared with fused_linear.
Tensor relu_backward(const Tensor& g, const Tensor& y);
Tensor sigmoid_backward(const Tensor& g, const Tensor& y);
Tensor tanh_backward(const Tensor& g, const Tensor& y);
Tensor gelu_backward(const Tensor& g, const Tensor& s, bool use_tanh);


// A 0-dim tensor holding s.
Tensor scalar_to_tensor(const Scalar& s, DType dtype);

// x converted to dtype (x itself when it already has it). Differentiable.
inline Tensor cast(const Tensor& x, DType dtype) { return x.dtype() == dtype ? x : x.to(dtype); }

// Rejects in-place writes that autograd cannot record (see Note [In-place ops] in copy.cpp) and
// writes to expanded tensors whose elements alias each other.
void check_inplace(const Tensor& self, const char* op, bool records_grad);

// Reductions: the sorted, unique, wrapped dims (all dims when `dims` is empty), and the output
// shape with or without the reduced dims kept as size 1.
std::vector<int64_t> reduction_dims(const Tensor& x, IntArrayRef dims, const char* op);
Shape reduced_shape(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
// g of a keepdim=false reduction unsqueezed back to rank, so it broadcasts against the input.
Tensor unsqueeze_reduced(const Tensor& g, const std::vector<int64_t>& dims, int64_t input_dim, bool keepdim);

// A size argument of a 2-D op (conv2d's stride, a pool's kernel_size, ...) as ATen takes it: one
// value for both dims, or {height, width}.
inline std::array<int64_t, 2> expand_pair(IntArrayRef v, const char* op, const char* name) {
  GRAFT_CHECK(v.size() == 1 || v.size() == 2, op, std::string(name) + " of 1 or 2 values (both dims, or {height, width})",
              std::string(name) + " of " + std::to_string(v.size()) + " values",
              "pass one value for both dims or {height, width}");
  return v.size() == 1 ? std::array<int64_t, 2>{v[0], v[0]} : std::array<int64_t, 2>{v[0], v[1]};
}

// {height, width} as messages write it: "(3, 2)".
inline std::string pair_str(const std::array<int64_t, 2>& a) {
  // Appended piece by piece: GCC 12 warns (-Warray-bounds, a false positive) on the inlined
  // "(" + std::string concatenation here.
  std::string s = "(";
  s += std::to_string(a[0]);
  s += ", ";
  s += std::to_string(a[1]);
  s += ")";
  return s;
}
}  // namespace detail

}  // namespace graft

namespace graft::detail {

// x in `dtype` without recording (for kernels; the engine casts gradients back to input dtypes).
inline Tensor as_dtype(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  NoGradGuard ng;
  return x.detach().to(dtype);
}

// Note [Narrow integer dtypes]
// int32, int16, int8 and uint8 (kInt, kShort, kChar, kByte) are whole dtypes for storage, copies,
// conversions, factories, printing, files and type promotion (promote_types, result_type), but each
// op keeps one integer kernel: int64. An op whose computation dtype is a narrow integer computes in
// int64 from widened operands and narrows the result once. For +, -, * and negation that is exactly
// the narrow type's wrapping arithmetic (both are arithmetic modulo 2^bits, and C++20 converts to a
// narrower integer modulo 2^bits), so the values are PyTorch's; comparisons, min/max, selection and
// masking are exact; sums and products give int64 as in PyTorch. The cost is one widening copy,
// which is fine for the integer tensors training code holds (labels, masks, indices, counts).
//
// Note [Half-precision compute]
// float16 and bfloat16 are the same kind of dtype for the ops: storage, conversions and a few
// kernels of their own (relu, the matrix products under autocast). An elementwise op whose
// computation dtype is one of them widens its operands to float32, computes there and rounds the
// result once to the half dtype: what PyTorch's CPU kernels compute for these dtypes (each element
// converted to float, the function evaluated in float, the result rounded), so a single op gives
// PyTorch's value. The widening and the rounding are recorded (ToCopyBackward0), so a half input's
// gradient is computed in float32 and comes back rounded to its dtype. Comparisons, min/max,
// selection and masking are exact. The arithmetic ops go through widen() below; the floating
// functions (exp, the activations) through through_float(). One difference from PyTorch: an op
// whose backward reads its output (tanh, sigmoid) reads the float32 output, where PyTorch reads
// the output rounded to the half dtype, so graft's gradient is the closer to the exact derivative
// (for x = 7 in bfloat16, tanh'(x) is 3.3e-6 here and 0 in PyTorch, which rounded tanh(7) to 1).
inline bool is_narrow_int(DType t) { return t == kInt32 || t == kInt16 || t == kInt8 || t == kUInt8; }
inline bool is_half(DType t) { return t == kFloat16 || t == kBFloat16; }
// A dtype some ops compute in a wider one (the two notes above).
inline bool is_reduced(DType t) { return is_narrow_int(t) || is_half(t); }
inline DType compute_dtype(DType t) { return is_narrow_int(t) ? kInt64 : is_half(t) ? kFloat32 : t; }
// x in its computation dtype; a half tensor's conversion is recorded (its gradient flows back).
inline Tensor widen(const Tensor& x) { return is_reduced(x.dtype()) ? x.to(compute_dtype(x.dtype())) : x; }
// A number meeting a tensor of computation dtype `dt`: in a half dtype, the number rounded to it
// first, as PyTorch 1.13 does (x * 0.3 in bfloat16 multiplies by 0.30078125).
Scalar half_scalar(const Scalar& s, DType dt);
// op(x) for a half x: op computed on x in float32, the result rounded to x's dtype.
template <class Op>
Tensor through_float(const Tensor& x, Op&& op) {
  return op(x.to(kFloat32)).to(x.dtype());
}

// An in-place op may not change the tensor's dtype (PyTorch's can_cast rule, simplified: a
// floating result cannot be written into an integer or bool tensor, nor an integer into bool).
void check_inplace_dtype(const Tensor& self, DType result, const char* op);

// See Note [In-place ops] in copy.cpp. `direct()` writes into self's memory; `out_of_place(old)`
// computes the recorded result from `old`, a clone of self's previous value.
template <class Direct, class OutOfPlace>
Tensor& inplace_op(Tensor& self, const char* op, std::initializer_list<const Tensor*> others, Direct&& direct,
                   OutOfPlace&& out_of_place) {
  const bool record = GradMode::is_enabled() && (self.requires_grad() || autograd::any_requires_grad(others));
  check_inplace(self, op, record);
  if (!record) {
    direct();
    self.impl().storage->bump_version(op);
    return self;
  }
  Tensor old = self.clone();
  Tensor result = out_of_place(old);
  {
    NoGradGuard ng;
    copy_into(self, result);
  }
  self.impl().storage->bump_version(op);
  autograd::set_history(self, result.grad_fn());  // moves a retain_grad() along (node.cpp)
  return self;
}

}  // namespace graft::detail
