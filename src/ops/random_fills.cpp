// Tensor::uniform_, normal_, bernoulli_ and random_: LibTorch's in-place random fills.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"
#include "../core/random_fill.h"
#include "ops_common.h"

namespace graft {

// ---- random fills: drawn into a new tensor, then copied in (not recorded, as in LibTorch) ----
namespace {
void check_not_grad_leaf(const Tensor& self, const char* op) {
  GRAFT_CHECK(!(GradMode::is_enabled() && self.is_leaf() && self.requires_grad()), op,
              "a tensor that is not a leaf requiring grad", "a leaf that requires grad",
              "a leaf Variable that requires grad is being used in an in-place operation; wrap it in "
              "graft::NoGradGuard (as nn::init does)");
}
Tensor& fill_from(const Tensor& self, const Tensor& values, const char* op) {
  check_not_grad_leaf(self, op);
  NoGradGuard no_grad;
  Tensor& out = const_cast<Tensor&>(self);
  out.copy_(values);
  return out;
}
void check_floating(const Tensor& self, const char* op) {
  GRAFT_CHECK(self.is_floating_point(), op, "a floating-point tensor", std::string("a ") + dtype_name(self.dtype()) +
              " tensor", "use random_ for integer tensors");
}
}  // namespace

// PyTorch's distributions (Note [PyTorch's random streams] in src/core/random_fill.h), drawn into a
// contiguous tensor of self's dtype in element order, then copied in.
namespace {
template <class Fill>
Tensor& draw_into(const Tensor& self, const char* op, Generator* generator, Fill&& fill) {
  if (self.is_meta()) return fill_from(self, self, op);  // Note [Meta device]: no draw
  if (self.is_contiguous()) {
    // In place, as ATen: no second tensor of self's size (nn::init of a large embedding would
    // briefly hold it twice). The checks and the version bump are copy_'s, unrecorded.
    check_not_grad_leaf(self, op);
    detail::check_inplace(self, op, /*records_grad=*/false);
    fill(self, generator ? *generator : default_generator());
    self.impl().storage->bump_version(op);
    return const_cast<Tensor&>(self);
  }
  // A strided tensor: ATen fills in memory order (TensorIterator walks the largest stride outermost): the values are
  // drawn into a contiguous tensor of the dims sorted that way, then permuted back.
  std::vector<int64_t> perm(static_cast<size_t>(self.dim()));
  for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return self.stride(a) > self.stride(b); });
  std::vector<int64_t> sizes, inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    sizes.push_back(self.size(perm[d]));
    inverse[static_cast<size_t>(perm[d])] = static_cast<int64_t>(d);
  }
  Tensor values = graft::empty(sizes, self.dtype());
  fill(values, generator ? *generator : default_generator());
  return fill_from(self, values.permute(inverse), op);
}
}  // namespace

Tensor& Tensor::uniform_(double from, double to, Generator* generator) const {
  check_floating(*this, "uniform_");
  GRAFT_CHECK(from <= to, "uniform_", "from <= to", "from " + std::to_string(from) + ", to " + std::to_string(to),
              "swap the bounds");
  return draw_into(*this, "uniform_", generator,
                   [&](const Tensor& v, Generator& g) { detail::uniform_fill(v, from, to, g); });
}
Tensor& Tensor::normal_(double mean, double std, Generator* generator) const {
  check_floating(*this, "normal_");
  GRAFT_CHECK(std >= 0, "normal_", "std >= 0", "std " + std::to_string(std), "pass std >= 0");
  // PyTorch's block transform applies to contiguous tensors only; a strided one draws value by value.
  const bool contiguous = is_contiguous();
  return draw_into(*this, "normal_", generator,
                   [&](const Tensor& v, Generator& g) { detail::normal_fill(v, mean, std, contiguous, g); });
}
Tensor& Tensor::bernoulli_(double p, Generator* generator) const {
  GRAFT_CHECK(p >= 0 && p <= 1, "bernoulli_", "a probability p in [0, 1]", "p " + std::to_string(p), "");
  return draw_into(*this, "bernoulli_", generator,
                   [&](const Tensor& v, Generator& g) { detail::bernoulli_fill(v, p, g); });
}
Tensor& Tensor::random_(int64_t from, int64_t to, Generator* generator) const {
  GRAFT_CHECK(from < to, "random_", "from < to", "from " + std::to_string(from) + ", to " + std::to_string(to), "");
  GRAFT_CHECK(dtype() != kBool || (from >= 0 && to <= 2), "random_", "a range inside [0, 2) for a bool tensor",
              "from " + std::to_string(from) + ", to " + std::to_string(to), "");
  const uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  return draw_into(*this, "random_", generator,
                   [&](const Tensor& v, Generator& g) { detail::random_from_to_fill(v, range, from, g); });
}
Tensor& Tensor::random_(int64_t to, Generator* generator) const { return random_(0, to, generator); }

}  // namespace graft
