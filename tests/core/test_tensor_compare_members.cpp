// LibTorch's Tensor members allclose, isclose, equal and is_same_size (issue 32), against values
// worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

TEST(TensorCompareMembers, AllcloseIscloseEqualAndIsSameSize) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = tensor({1.0, 100.0, inf, nan}, kFloat64);
  // |1 - 1.000005| = 5e-6 <= 1e-8 + 1e-5 * 1.000005; |100 - 100.002| = 2e-3 > 1e-8 + 1e-5 * 100.002.
  const Tensor b = tensor({1.000005, 100.002, inf, nan}, kFloat64);
  const Tensor close = a.isclose(b);
  ASSERT_EQ(close.dtype(), kBool);
  EXPECT_TRUE(close[0].item<bool>());
  EXPECT_FALSE(close[1].item<bool>());
  EXPECT_TRUE(close[2].item<bool>());   // equal infinities are close
  EXPECT_FALSE(close[3].item<bool>());  // NaN only with equal_nan
  EXPECT_TRUE(a.isclose(b, 1e-5, 1e-8, /*equal_nan=*/true)[3].item<bool>());
  EXPECT_TRUE(a.isclose(b, 1e-4)[1].item<bool>());  // 2e-3 <= 1e-4 * 100.002
  EXPECT_FALSE(a.allclose(b));
  EXPECT_TRUE(a.allclose(b, 1e-4, 1e-8, true));
  EXPECT_TRUE(a.slice(0, 0, 1).allclose(b.slice(0, 0, 1)));
  const Tensor c = tensor({1.0, 2.0}, kFloat32);
  EXPECT_TRUE(c.equal(tensor({1.0, 2.0}, kFloat32)));
  EXPECT_FALSE(c.equal(tensor({1.0, 2.5}, kFloat32)));
  EXPECT_FALSE(c.equal(tensor({1.0, 2.0, 3.0}, kFloat32)));
  EXPECT_TRUE(c.is_same_size(zeros({2})));
  EXPECT_FALSE(c.is_same_size(zeros({2, 1})));
  EXPECT_TRUE(throws_error([&] { (void)c.isclose(zeros({3})); }, {"isclose", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error([&] { (void)c.allclose(c, -1.0); }, {"allclose", "rtol"}));
}

}  // namespace
}  // namespace graft::test
