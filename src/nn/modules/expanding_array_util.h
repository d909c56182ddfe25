// Helpers on ExpandingArray shared by the modules' printers (conv.cpp, print_libtorch.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "graft/nn/functional.h"

namespace graft::nn::detail {

// Whether every value of `a` is `v` (the printers' "is this the default" test).
template <size_t D>
bool all_equal(const ExpandingArray<D>& a, int64_t v) {
  for (int64_t x : a)
    if (x != v) return false;
  return true;
}

}  // namespace graft::nn::detail
