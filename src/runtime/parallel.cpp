// parallel_for's implementation (see include/graft/core/parallel.h). Serial for now: the pool comes
// next.
#include "graft/core/parallel.h"

namespace graft::detail {

void parallel_for_impl(int64_t begin, int64_t end, int64_t /*grain*/, RangeFn f) { f(begin, end); }

}  // namespace graft::detail
