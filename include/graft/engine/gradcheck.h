// gradcheck and gradgradcheck: compare analytical gradients with central finite differences.
//
// Inputs should be float64 (a graft::Error says so otherwise). Tolerances are PyTorch's defaults:
// eps = 1e-6, atol = 1e-5, rtol = 1e-3; an entry passes when |analytic - numeric| <= atol + rtol*|numeric|.
#pragma once

#include <functional>
#include <string>

#include "graft/core/tensor.h"

namespace graft::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool raise_exception = true;  // false: return false instead of throwing
};

using TestFunction = std::function<Tensor(const TensorList&)>;

// Checks d fn(inputs) / d inputs for every input with requires_grad. Throws a graft::Error naming
// the input, the output element, the analytical and the numerical value on a mismatch.
bool gradcheck(const TestFunction& fn, const TensorList& inputs, const GradcheckOptions& opts = {});

// Checks second derivatives: gradcheck of (inputs, v) -> grad(fn(inputs), inputs, v, create_graph).
bool gradgradcheck(const TestFunction& fn, const TensorList& inputs, const GradcheckOptions& opts = {});

}  // namespace graft::autograd
