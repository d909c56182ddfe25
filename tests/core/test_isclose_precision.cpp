// isclose/allclose compute |a - b| <= atol + rtol * |b| in the tensors' dtype, as PyTorch does
// (float32 arithmetic for float32 tensors, the default dtype for integer ones). Values by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

TEST(IsclosePrecision, Float32ComparesInFloat32) {
  // 0.1f - 0 = 0.1f, and atol + rtol * 0 = 0.1 rounded to float32 = 0.1f: close in float32.
  const Tensor a = full({1}, 0.1, kFloat32), zero = zeros({1}, kFloat32);
  EXPECT_TRUE(allclose(a, zero, 1.1, 0.1));
  EXPECT_TRUE(isclose(a, zero, 1.1, 0.1).item<bool>());
  // The same numbers in float64: 0.100000001490116... > 0.1, not close.
  const Tensor a64 = a.to(kFloat64), zero64 = zero.to(kFloat64);
  EXPECT_FALSE(allclose(a64, zero64, 1.1, 0.1));
  // Mixed float32 and float64 promote to float64.
  EXPECT_FALSE(allclose(a, zero64, 1.1, 0.1));
  // Integers: the error |3 - 1| = 2 against atol + rtol * |1| = 1 + 1 = 2 (close), 2.5 with rtol 1.5.
  const Tensor i3 = full({1}, 3, kInt64), i1 = full({1}, 1, kInt64);
  EXPECT_TRUE(allclose(i3, i1, 1.0, 1.0));
  EXPECT_FALSE(allclose(i3, i1, 0.5, 1.0));
}

TEST(IsclosePrecision, InfinitiesAndNan) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = tensor({-inf, inf, 1.0, nan}, kFloat32);
  EXPECT_EQ(values(isclose(x, x).to(kFloat64)), (std::vector<double>{1, 1, 1, 0}));
  EXPECT_EQ(values(isclose(x, x, 1e-5, 1e-8, true).to(kFloat64)), (std::vector<double>{1, 1, 1, 1}));
  // inf against a finite value: an infinite error, never close, whatever the tolerances.
  EXPECT_FALSE(allclose(tensor({inf}, kFloat32), tensor({1e30}, kFloat32), 10.0, 1e30));
}

}  // namespace
}  // namespace graft::test
