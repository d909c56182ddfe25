// Argument checks and helpers shared by the losses of loss.cpp and loss2.cpp (internal to
// src/ops). Each check throws graft::Error naming the op, what was expected, what was got and a
// hint. The value readers return nothing on meta tensors (Note [Meta device]): value checks need
// values, and the losses' composites run on shapes alone there.
#pragma once

#include <string>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/ops/ops.h"
#include "../kernels/loss.h"

namespace graft::detail::loss {

// Reduction of per-element losses: none keeps them, mean averages over all elements, sum adds.
Tensor apply_reduction(const Tensor& loss, Reduction r);

void check_reduction(Reduction r, const char* op);
void check_defined(const Tensor& t, const char* op, const char* what);
// Defined and of a floating dtype; `what` names the argument ("input", "target", ...).
void check_floating(const Tensor& t, const char* op, const char* what);

// The elementwise losses' input (floating) and target (defined): their shapes must broadcast
// together. Returns the broadcast shape.
Shape check_broadcast(const Tensor& input, const Tensor& target, const char* op);

// A double as a user would write it (6 significant digits: 1.5, -0.25, nan), for messages.
std::string num(double v);

// The kernels' spelling of a reduction.
kernels::loss::Reduce kernel_reduce(Reduction r);

// Values of `t`, read without recording, for argument checks only; empty on meta tensors.
std::vector<double> read_values(const Tensor& t);
std::vector<int64_t> read_indices(const Tensor& t);

}  // namespace graft::detail::loss
