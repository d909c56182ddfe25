// The op name table generated from GRAFT_FORALL_OPS.
#include "graft/ops/op_list.h"

#include <array>

namespace graft::ops {

namespace {
constexpr std::array kNames = {
#define GRAFT_OP_NAME(name) std::string_view(#name),
    GRAFT_FORALL_OPS(GRAFT_OP_NAME)
#undef GRAFT_OP_NAME
};
static_assert(kNames.size() == static_cast<size_t>(OpId::kCount), "op table and enum disagree");
}  // namespace

std::span<const std::string_view> op_names() { return kNames; }

}  // namespace graft::ops
