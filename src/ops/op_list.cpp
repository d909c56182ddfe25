// The op name table generated from GRAFT_FORALL_OPS.
#include "graft/ops/op_list.h"

#include <array>

namespace graft::ops {

namespace {
constexpr std::array<std::string_view, kNumOps> make_names() {
  std::array<std::string_view, kNumOps> names{};
  for (size_t i = 0; i < kNumOps; ++i) names[i] = kOpNames[i];
  return names;
}
constexpr std::array<std::string_view, kNumOps> kNames = make_names();
}  // namespace

std::span<const std::string_view> op_names() { return kNames; }

}  // namespace graft::ops
