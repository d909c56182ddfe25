// kernels::compare::all_true (src/kernels/compare.h), allclose's and equal's whole-tensor test,
// against its definition: true exactly when no element is false, true for an empty tensor.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../../src/kernels/compare.h"
#include "../support/test_util.h"

namespace graft::test {

TEST(CompareKernels, AllTrue) {
  using kernels::compare::all_true;
  EXPECT_TRUE(all_true(make({}, {0}, kBool)));
  EXPECT_TRUE(all_true(make({1}, {1}, kBool)));
  EXPECT_FALSE(all_true(make({0}, {1}, kBool)));
  for (int64_t n : {7, 64, 1000}) {
    std::vector<double> v(static_cast<size_t>(n), 1.0);
    EXPECT_TRUE(all_true(make(v, {n}, kBool))) << n;
    for (int64_t k : {int64_t{0}, n / 2, n - 1}) {  // one false element anywhere
      v[static_cast<size_t>(k)] = 0.0;
      EXPECT_FALSE(all_true(make(v, {n}, kBool))) << n << " " << k;
      v[static_cast<size_t>(k)] = 1.0;
    }
  }
}

}  // namespace graft::test
