// The inplace option of LibTorch's activation functionals (F::selu, F::celu, ...), shared by the
// files that define them (internal to graft).
#pragma once

#include <utility>

#include "graft/core/tensor.h"

namespace graft::nn::functional::detail {

// inplace: the input takes the result. The op runs on a clone, so that what its backward saves is
// not the overwritten memory; the copy_ then records the result's history on the input.
template <class F>
Tensor maybe_inplace(Tensor& input, bool inplace, F&& op) {
  if (!inplace) return std::forward<F>(op)(input);
  input.copy_(std::forward<F>(op)(input.clone()));
  return input;
}

}  // namespace graft::nn::functional::detail
