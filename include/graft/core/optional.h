// graft::optional / graft::nullopt: LibTorch's c10::optional, renamed by the port (docs/porting.md),
// is std::optional in graft.
#pragma once

#include <optional>

namespace graft {

using std::make_optional;
using std::nullopt;
using std::nullopt_t;
using std::optional;

}  // namespace graft
