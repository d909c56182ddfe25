// STUB: printing, to be replaced.
#include <ostream>

#include "graft/core/tensor.h"

namespace graft {
std::string Tensor::toString() const { return "tensor(...)"; }
std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.toString(); }
}  // namespace graft
