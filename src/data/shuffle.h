// Fisher-Yates shuffles driven by a graft::Generator, shared by DataLoader and RandomSampler.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "graft/core/generator.h"

namespace graft::data::detail {

// Uniform in [0, bound) without modulo bias.
inline uint64_t below(Generator& g, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    const uint64_t r = g.next_u64();
    if (r >= threshold) return r % bound;
  }
}

// A uniformly random permutation of v in place.
template <typename T>
void shuffle(std::vector<T>& v, Generator& g) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(g, i)]);
}

}  // namespace graft::data::detail
