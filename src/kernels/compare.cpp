// Whole-tensor tests: src/kernels/compare.h.
#include "compare.h"

#include <cstdint>

namespace graft::kernels::compare {

bool all_true(const Tensor& t) {
  const bool* p = t.data_ptr<bool>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!p[i]) return false;
  return true;
}

}  // namespace graft::kernels::compare
