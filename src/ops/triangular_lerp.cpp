// triu / tril (the upper / lower triangle of the last two dims) and lerp (linear interpolation), as
// LibTorch 1.13 spells them: torch::triu(t, diagonal), t.triu_(d), torch::lerp(start, end, weight)
// with a Scalar or a Tensor weight, start.lerp_(end, w) (issue 32). Each op's checks, forward
// kernel and backward are here; the backward formulas are graft ops, so gradients of gradients work.
// Their records: tests/ops/records_triangular_lerp.cpp; PyTorch's values:
// tests/ops/test_triu_lerp.cpp.
#include <cmath>
#include <string>

#include "../core/dispatch.h"
#include "../kernels/loops.h"
#include "../kernels/triangle.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::Node;
using autograd::set_history;

// ---- triu, tril ----
// Element (..., i, j) is kept when j - i >= diagonal (triu) or j - i <= diagonal (tril), and is 0
// elsewhere; any diagonal is allowed (past the matrix's edge everything or nothing is kept). The
// kernels move whole elements as bytes and write zero bytes, which is 0 (+0.0, false) in every dtype
// graft stores, so one loop serves them all. The gradient is the same triangle of the gradient.
namespace {

enum class Triangle { Upper, Lower };

const char* triangle_op(Triangle which, bool in_place) {
  if (which == Triangle::Upper) return in_place ? "triu_" : "triu";
  return in_place ? "tril_" : "tril";
}

void check_matrix(const Tensor& x, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined tensor", "an undefined tensor", "pass a tensor of at least 2 dims");
  GRAFT_CHECK(x.dim() >= 2, op, "a tensor of at least 2 dims (the last two are the matrix)",
              "a tensor of " + std::to_string(x.dim()) + " dims, shape " + shape_str(x.sizes()),
              "view a vector as a row or a column first (x.unsqueeze(0) or x.unsqueeze(1)), as PyTorch's " +
                  std::string(op) + " also asks");
}

Tensor triangle(const Tensor& x, int64_t diagonal, Triangle which) {
  const char* op = triangle_op(which, false);
  check_matrix(x, op);
  memory::OpScope op_scope(op);  // names the allocation in the memory report
  const Device device = kernels::loop_device({&x});
  Tensor y = make_empty(x.sizes(), x.dtype(), device);
  if (!device.is_meta() && y.numel() > 0) {  // Note [Meta device]: the shape only, no data
    kernels::triangle::copy(x, y, diagonal, which == Triangle::Upper);
  }
  const OpId id = which == Triangle::Upper ? OpId::triu : OpId::tril;
  if (auto node = make_node(which == Triangle::Upper ? "TriuBackward0" : "TrilBackward0", id, {&x},
                            [diagonal, which](Node&, const Tensor& g) -> TensorList {
                              return {triangle(g, diagonal, which)};
                            }))
    set_history(y, node);
  return y;
}

// Zeroes self's elements outside the triangle, in place (self's own strides).
void zero_outside(Tensor& self, int64_t diagonal, Triangle which) {
  if (kernels::loop_device({&self}).is_meta() || self.numel() == 0) return;
  kernels::triangle::zero_outside(self, diagonal, which == Triangle::Upper);
}

Tensor& triangle_(Tensor& self, int64_t diagonal, Triangle which) {
  const char* op = triangle_op(which, true);
  check_matrix(self, op);
  return detail::inplace_op(
      self, op, {}, [&] { zero_outside(self, diagonal, which); },
      [diagonal, which](const Tensor& old) { return triangle(old, diagonal, which); });
}

}  // namespace

Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, Triangle::Upper); }
Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, Triangle::Lower); }
Tensor& Tensor::triu_(int64_t diagonal) const { return triangle_(mut(), diagonal, Triangle::Upper); }
Tensor& Tensor::tril_(int64_t diagonal) const { return triangle_(mut(), diagonal, Triangle::Lower); }

// ---- lerp ----
// start + weight (end - start), rounded as ATen 1.13's CPU kernel rounds it (its vectorised loop,
// lerp_vec, which every contiguous tensor takes, tails included): for w < 0.5 (signed: -0.7 too)
// fma(w, end - start, start), otherwise fma(w - 1, end - start, end), so that weight 1 gives end
// exactly. Measured against torch.lerp in float32 on both sides of 0.5, negative and above 1: the
// same bits (ATen's scalar formula, |w| < 0.5 and no fma, is a unit in the last place off in about
// half of the elements). In the tensor's dtype (float32 in float32). Floating dtypes only, start,
// end and a tensor weight of one dtype; the three broadcast together. Gradients: start (1 - w) g,
// end w g, weight (end - start) g, each summed to its input's shape.
namespace {

template <class T>
T lerp_value(T s, T e, T w) {
  const T d = e - s;
  return w < T(0.5) ? std::fma(w, d, s) : std::fma(w - T(1), d, e);
}

void check_lerp(const Tensor& start, const Tensor& end, const Tensor* weight, const char* op) {
  GRAFT_CHECK(start.defined() && end.defined() && (!weight || weight->defined()), op, "defined tensors",
              "an undefined tensor", "pass start, end (and a tensor weight) with values");
  GRAFT_CHECK(start.is_floating_point(), op, "a floating-point start (float32 or float64)",
              std::string("a ") + dtype_name(start.dtype()) + " tensor",
              "lerp interpolates floating-point values: convert with .to(graft::kFloat32)");
  GRAFT_CHECK(end.dtype() == start.dtype(), op, std::string("end of start's dtype ") + dtype_name(start.dtype()),
              std::string("end of dtype ") + dtype_name(end.dtype()), "convert end with .to(start.dtype())");
  if (weight)
    GRAFT_CHECK(weight->dtype() == start.dtype(), op, std::string("a weight of start's dtype ") + dtype_name(start.dtype()),
                std::string("a weight of dtype ") + dtype_name(weight->dtype()),
                "convert the weight with .to(start.dtype()), or pass a number");
}

// An in-place lerp writes into self: the broadcast shape of its operands must be self's.
void check_lerp_inplace_shape(const Tensor& self, const Shape& shape) {
  GRAFT_CHECK(IntArrayRef(shape).equals(self.sizes()), "lerp_",
              "operands that broadcast to self's shape " + shape_str(self.sizes()),
              "the broadcast shape " + shape_str(shape),
              "an in-place op cannot grow self; use the out-of-place graft::lerp");
}

Tensor sum_grad_to(const Tensor& g, const Shape& shape) {
  return g.sizes().equals(shape) ? g : graft::sum_to(g, shape);
}

Shape lerp_shape(const Tensor& start, const Tensor& end, const Tensor* weight, const char* op) {
  Shape shape = broadcast_shapes(start.sizes(), end.sizes(), op);
  if (weight) shape = broadcast_shapes(shape, weight->sizes(), op);
  return shape;
}

}  // namespace

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  check_lerp(start, end, nullptr, "lerp");
  const Shape shape = lerp_shape(start, end, nullptr, "lerp");
  const DType dt = start.dtype();
  Tensor y = kernels::dispatch_floating(dt, "lerp", [&]<class T>() {
    const T w = weight.to<T>();
    return kernels::map<T, T, T>(dt, shape, [w](T s, T e) { return lerp_value(s, e, w); }, start, end);
  });
  const double w = weight.to<double>();
  if (auto node = make_node("LerpBackward0", OpId::lerp, {&start, &end},
                            [w, ss = Shape(start.sizes()), es = Shape(end.sizes())](Node& n, const Tensor& g) -> TensorList {
                              return {n.needs_input_grad(0) ? sum_grad_to(g * (1.0 - w), ss) : Tensor(),
                                      n.needs_input_grad(1) ? sum_grad_to(g * w, es) : Tensor()};
                            }))
    set_history(y, node);
  return y;
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  check_lerp(start, end, &weight, "lerp");
  const Shape shape = lerp_shape(start, end, &weight, "lerp");
  const DType dt = start.dtype();
  Tensor y = kernels::dispatch_floating(dt, "lerp", [&]<class T>() {
    return kernels::map<T, T, T, T>(dt, shape, [](T s, T e, T w) { return lerp_value(s, e, w); }, start, end, weight);
  });
  if (auto node = make_node("LerpBackward1", OpId::lerp, {&start, &end, &weight},
                            [ss = Shape(start.sizes()), es = Shape(end.sizes()),
                             ws = Shape(weight.sizes())](Node& n, const Tensor& g) -> TensorList {
                              const Tensor s = n.saved(0), e = n.saved(1), w = n.saved(2);
                              return {n.needs_input_grad(0) ? sum_grad_to(g * (1.0 - w), ss) : Tensor(),
                                      n.needs_input_grad(1) ? sum_grad_to(g * w, es) : Tensor(),
                                      n.needs_input_grad(2) ? sum_grad_to(g * (e - s), ws) : Tensor()};
                            })) {
    node->save(start);
    node->save(end);
    node->save(weight);
    set_history(y, node);
  }
  return y;
}

Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight) const {
  Tensor& self = mut();
  check_lerp(self, end, nullptr, "lerp_");
  check_lerp_inplace_shape(self, lerp_shape(self, end, nullptr, "lerp_"));
  return detail::inplace_op(
      self, "lerp_", {&end},
      [&] {
        const Tensor e = end.is_alias_of(self) ? end.clone() : end;
        kernels::dispatch_floating(self.dtype(), "lerp_", [&]<class T>() {
          const T w = weight.to<T>();
          kernels::apply_inplace<T, T>(self, [w](T s, T ev) { return lerp_value(s, ev, w); }, e);
        });
      },
      [&](const Tensor& old) { return graft::lerp(old, end, weight); });
}

Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight) const {
  Tensor& self = mut();
  check_lerp(self, end, &weight, "lerp_");
  check_lerp_inplace_shape(self, lerp_shape(self, end, &weight, "lerp_"));
  return detail::inplace_op(
      self, "lerp_", {&end, &weight},
      [&] {
        const Tensor e = end.is_alias_of(self) ? end.clone() : end;
        const Tensor w = weight.is_alias_of(self) ? weight.clone() : weight;
        kernels::dispatch_floating(self.dtype(), "lerp_", [&]<class T>() {
          kernels::apply_inplace<T, T, T>(self, [](T s, T ev, T wv) { return lerp_value(s, ev, wv); }, e, w);
        });
      },
      [&](const Tensor& old) { return graft::lerp(old, end, weight); });
}

}  // namespace graft
