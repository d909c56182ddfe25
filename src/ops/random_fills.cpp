// Tensor::uniform_, normal_, bernoulli_ and random_: LibTorch's in-place random fills, drawn with
// graft's factories (rand, randn, randint) and copied in.
#include <cmath>
#include <string>

#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"

namespace graft {

// ---- random fills: drawn into a new tensor, then copied in (not recorded, as in LibTorch) ----
namespace {
Tensor& fill_from(const Tensor& self, const Tensor& values, const char* op) {
  GRAFT_CHECK(!(GradMode::is_enabled() && self.is_leaf() && self.requires_grad()), op,
              "a tensor that is not a leaf requiring grad", "a leaf that requires grad",
              "a leaf Variable that requires grad is being used in an in-place operation; wrap it in "
              "graft::NoGradGuard (as nn::init does)");
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

Tensor& Tensor::uniform_(double from, double to, Generator* generator) const {
  check_floating(*this, "uniform_");
  GRAFT_CHECK(from <= to, "uniform_", "from <= to", "from " + std::to_string(from) + ", to " + std::to_string(to),
              "swap the bounds");
  if (is_meta()) return fill_from(*this, *this, "uniform_");  // Note [Meta device]: no draw
  Tensor u = graft::rand(sizes(), kFloat64, generator);  // [0, 1)
  Tensor v = u * (to - from) + from;
  // float rounding of from + (to - from) u must not reach `to`
  if (from < to) v = graft::clamp(v, from, std::nextafter(static_cast<double>(static_cast<float>(to)), from));
  return fill_from(*this, v, "uniform_");
}
Tensor& Tensor::normal_(double mean, double std, Generator* generator) const {
  check_floating(*this, "normal_");
  GRAFT_CHECK(std >= 0, "normal_", "std >= 0", "std " + std::to_string(std), "pass std >= 0");
  if (is_meta()) return fill_from(*this, *this, "normal_");  // Note [Meta device]: no draw
  return fill_from(*this, graft::randn(sizes(), kFloat64, generator) * std + mean, "normal_");
}
Tensor& Tensor::bernoulli_(double p, Generator* generator) const {
  GRAFT_CHECK(p >= 0 && p <= 1, "bernoulli_", "a probability p in [0, 1]", "p " + std::to_string(p), "");
  if (is_meta()) return fill_from(*this, *this, "bernoulli_");  // Note [Meta device]: no draw
  return fill_from(*this, graft::lt(graft::rand(sizes(), kFloat64, generator), p), "bernoulli_");
}
Tensor& Tensor::random_(int64_t from, int64_t to, Generator* generator) const {
  GRAFT_CHECK(from < to, "random_", "from < to", "from " + std::to_string(from) + ", to " + std::to_string(to), "");
  if (is_meta()) return fill_from(*this, *this, "random_");  // Note [Meta device]: no draw
  Tensor r = graft::randint(from, to, sizes(), kInt64, generator);
  return fill_from(*this, r, "random_");
}
Tensor& Tensor::random_(int64_t to, Generator* generator) const { return random_(0, to, generator); }

}  // namespace graft
