// The shuffle behind DataLoader and RandomSampler: torch::randperm's, draw for draw (Note
// [PyTorch's random streams] in src/core/random_fill.h), so a seeded LibTorch RandomSampler and
// graft's visit a dataset in the same order.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "graft/core/generator.h"

namespace graft::data::detail {

// Permutes v in place: for i < n - 1, swap v[i] with v[i + random() % (n - i)]. The modulo of a
// 32-bit draw is PyTorch's; its bias is below n / 2^32.
template <typename T>
void shuffle(std::vector<T>& v, Generator& g) {
  const uint64_t n = v.size();
  for (uint64_t i = 0; i + 1 < n; ++i) std::swap(v[i], v[i + g.random() % (n - i)]);
}

}  // namespace graft::data::detail
