// What core needs from the autograd layer above it, declared here and defined there
// (src/autograd/tensor_autograd.cpp), so that no core file includes an autograd header.
#pragma once

#include "graft/core/tensor.h"

namespace graft::detail {

// The name of t's grad_fn ("MulBackward0"), or null for a leaf or a tensor outside autograd.
const char* grad_fn_name(const Tensor& t);

}  // namespace graft::detail
