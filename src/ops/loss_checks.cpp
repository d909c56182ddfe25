// The losses' shared argument checks (loss_checks.h).
#include "loss_checks.h"

#include <algorithm>
#include <string>

#include "../kernels/values.h"
#include "graft/autograd/grad_mode.h"
#include "core/format.h"
#include "ops_common.h"

namespace graft::detail::loss {

std::string num(double v) { return significant(v, 6); }

kernels::loss::Reduce kernel_reduce(Reduction r) {
  switch (r) {
    case Reduction::None: return kernels::loss::Reduce::None;
    case Reduction::Mean: return kernels::loss::Reduce::Mean;
    case Reduction::Sum: return kernels::loss::Reduce::Sum;
  }
  return kernels::loss::Reduce::None;
}

// Reduction of per-element losses: none keeps them, mean averages over all elements, sum adds.
Tensor apply_reduction(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::None: return loss;
    case Reduction::Sum: return loss.sum();
    case Reduction::Mean: return loss.mean();
  }
  return loss;
}

void check_reduction(Reduction r, const char* op) {
  GRAFT_CHECK(r == Reduction::None || r == Reduction::Mean || r == Reduction::Sum, op,
              "reduction kNone, kMean or kSum", "reduction value " + std::to_string(static_cast<int>(r)),
              "pass graft::kNone, graft::kMean or graft::kSum");
}

void check_defined(const Tensor& t, const char* op, const char* what) {
  GRAFT_CHECK(t.defined(), op, std::string("a defined ") + what + " tensor", "an undefined tensor",
              "pass a tensor (only the optional weights may be left undefined)");
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  check_defined(t, op, what);
  GRAFT_CHECK(t.is_floating_point(), op, std::string("a floating-point ") + what,
              std::string(what) + " of dtype " + dtype_name(t.dtype()) + " and shape " + shape_str(t.sizes()),
              std::string("convert it first: ") + what + ".to(graft::kFloat32)");
}

// For the elementwise losses: input and target must broadcast together.
Shape check_broadcast(const Tensor& input, const Tensor& target, const char* op) {
  check_floating(input, op, "input");
  check_defined(target, op, "target");
  const IntArrayRef a = input.sizes(), b = target.sizes();
  const size_t n = std::max(a.size(), b.size());
  bool ok = true;
  for (size_t i = 0; i < n && ok; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ok = da == db || da == 1 || db == 1;
  }
  GRAFT_CHECK(ok, op, "input and target shapes that broadcast together",
              "input of shape " + shape_str(a) + " and target of shape " + shape_str(b),
              "give the target the input's shape (sizes must match or be 1 in every trailing dimension)");
  return broadcast_shapes(a, b, op);
}

std::vector<double> read_values(const Tensor& t) {
  NoGradGuard ng;
  if (t.is_meta()) return {};  // Note [Meta device]: value checks need values
  return kernels::to_doubles(t);
}
std::vector<int64_t> read_indices(const Tensor& t) {
  NoGradGuard ng;
  if (t.is_meta()) return {};  // Note [Meta device]: value checks need values
  return kernels::to_int64s(t);
}

}  // namespace graft::detail::loss
