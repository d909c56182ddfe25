// float32 tanh without libm (Note [Fast float32 tanh] in src/kernels/vec_f32.h): within 2 ulp of
// tanh computed in double and rounded, over a dense sweep, tiny values and the special values; the
// vectorised array kernel and the scalar loop agree bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../support/test_util.h"

namespace graft::test {

namespace {

// Distance in units in the last place between two finite floats of the same sign.
int64_t ulp_distance(float a, float b) {
  if (a == b) return 0;
  if (std::signbit(a) != std::signbit(b)) return std::numeric_limits<int64_t>::max();
  return std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(a)) - static_cast<int64_t>(std::bit_cast<int32_t>(b)));
}

}  // namespace

TEST(TanhFloat32, WithinTwoUlpOfTheCorrectlyRoundedValue) {
  std::vector<float> xs;
  const int n = 2000000;
  for (int i = 0; i <= n; ++i) xs.push_back(-12.0f + 24.0f * static_cast<float>(i) / n);
  for (float v = 1e-30f; v < 2.0f; v *= 1.01f) {  // tiny to moderate, both signs
    xs.push_back(v);
    xs.push_back(-v);
  }
  for (float v : {0.55f, std::nextafter(0.55f, 0.0f), 9.0f, std::nextafter(9.0f, 10.0f), 20.0f, 1e30f}) {
    xs.push_back(v);
    xs.push_back(-v);
  }
  Tensor x = tensor(std::vector<double>(xs.begin(), xs.end())).to(kFloat32);
  Tensor y = graft::tanh(x);
  ASSERT_EQ(y.dtype(), kFloat32);
  const float* py = y.data_ptr<float>();
  int64_t worst = 0;
  float worst_at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = static_cast<float>(std::tanh(static_cast<double>(xs[i])));
    const int64_t d = ulp_distance(py[i], want);
    if (d > worst) worst = d, worst_at = xs[i];
  }
  EXPECT_LE(worst, 2) << "at x = " << worst_at;
  // A strided input takes the scalar loop, a contiguous one the array kernel built for this
  // processor's vector width: the same bits either way.
  Tensor strided = graft::tanh(non_contiguous(x));
  ASSERT_FALSE(non_contiguous(x).is_contiguous());
  EXPECT_EQ(values(strided), values(y));
}

TEST(TanhFloat32, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = tensor(std::vector<double>{0.0, -0.0, inf, -inf, std::nan("")}).to(kFloat32);
  Tensor y = graft::tanh(x);
  const float* py = y.data_ptr<float>();
  EXPECT_EQ(py[0], 0.0f);
  EXPECT_FALSE(std::signbit(py[0]));
  EXPECT_EQ(py[1], 0.0f);
  EXPECT_TRUE(std::signbit(py[1])) << "tanh(-0) is -0";
  EXPECT_EQ(py[2], 1.0f);
  EXPECT_EQ(py[3], -1.0f);
  EXPECT_TRUE(std::isnan(py[4]));
}

}  // namespace graft::test
