// Helpers shared by the nn module tests (tests/nn): a module's state_dict keys and repr, and
// float32 samples.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft::test {

// The keys of m.state_dict(), in order.
inline std::vector<std::string> keys(const nn::Module& m) {
  std::vector<std::string> k;
  for (const auto& item : m.state_dict()) k.push_back(item.key());
  return k;
}

// How m prints (PyTorch's repr of the module).
inline std::string repr(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

// Uniform in [-2, 2), drawn in float64 from a Generator seeded with `seed`, then cast to `dt`.
inline Tensor rnd(IntArrayRef shape, uint64_t seed, DType dt = kFloat32) {
  Generator g(seed);
  return (rand(shape, kFloat64, &g) * 4 - 2).to(dt);
}

}  // namespace graft::test
