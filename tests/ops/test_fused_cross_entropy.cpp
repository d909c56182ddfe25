// The fused cross-entropy (Note [Fused cross-entropy] in src/ops/loss.cpp) against values worked
// out independently: a plain double loop for the loss, central finite differences in float64 for
// the gradient, and the composite route (taken when class weights are given: all-ones weights give
// the same loss) for double backward.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// -log softmax(x)[t] per row, in double, by hand; ignored rows give nothing.
std::vector<double> reference_losses(const std::vector<double>& x, int64_t N, int64_t C, const std::vector<int64_t>& t,
                                     int64_t ignore) {
  std::vector<double> out;
  for (int64_t i = 0; i < N; ++i) {
    if (t[static_cast<size_t>(i)] == ignore) continue;
    double m = -INFINITY;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x[static_cast<size_t>(i * C + c)]);
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(x[static_cast<size_t>(i * C + c)] - m);
    out.push_back(m + std::log(s) - x[static_cast<size_t>(i * C + t[static_cast<size_t>(i)])]);
  }
  return out;
}

TEST(FusedCrossEntropy, LossMatchesAPlainLoopForEveryReduction) {
  const int64_t N = 7, C = 5;
  const Tensor x = uniform_sample({N, C}, 3, -4, 4);
  const std::vector<int64_t> tv = {0, 4, 2, -100, 1, 3, 4};
  const Tensor t = tensor<int64_t>(tv);
  const std::vector<double> ref = reference_losses(values(x), N, C, tv, -100);
  double sum = 0;
  for (double v : ref) sum += v;
  EXPECT_NEAR(F::cross_entropy(x, t).item<double>(), sum / 6.0, 1e-12);
  EXPECT_NEAR(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().reduction(Reduction::Sum)).item<double>(), sum, 1e-12);
  const std::vector<double> none = values(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().reduction(Reduction::None)));
  ASSERT_EQ(none.size(), 7u);
  EXPECT_EQ(none[3], 0.0);  // the ignored row
  EXPECT_NEAR(none[0], ref[0], 1e-12);
  EXPECT_NEAR(none[6], ref[5], 1e-12);
  // float32 agrees with the double loop to float precision.
  EXPECT_NEAR(F::cross_entropy(x.to(kFloat32), t).item<float>(), sum / 6.0, 1e-5);
  // Every row ignored: mean is 0 / 0.
  EXPECT_TRUE(std::isnan(F::cross_entropy(x, full({N}, -100, kInt64)).item<double>()));
  // Huge logits do not overflow (the max is subtracted first).
  const Tensor big = tensor<float>({{1000.0f, 0.0f}, {0.0f, -1000.0f}});
  EXPECT_NEAR(F::cross_entropy(big, tensor<int64_t>({1, 1})).item<float>(), (1000.0f + 1000.0f) / 2, 1e-3);
}

TEST(FusedCrossEntropy, GradientMatchesFiniteDifferences) {
  const int64_t N = 6, C = 4;
  const std::vector<int64_t> tv = {3, 0, -100, 2, 1, 3};
  const Tensor t = tensor<int64_t>(tv);
  for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    Tensor x = uniform_sample({N, C}, 11, -2, 2).requires_grad_();
    const Tensor w = uniform_sample({N}, 12, 0.5, 1.5);  // weights the rows for reduction none
    auto loss_of = [&](const Tensor& in) {
      Tensor l = F::cross_entropy(in, t, F::CrossEntropyFuncOptions().reduction(red));
      return red == Reduction::None ? (l * w).sum() : l;
    };
    loss_of(x).backward();
    EXPECT_EQ(F::cross_entropy(x, t).grad_fn()->name(), "NllLossBackward0");
    const std::vector<double> g = values(x.grad());
    const std::vector<double> x0 = values(x);
    const double h = 1e-6;
    for (size_t k = 0; k < x0.size(); ++k) {
      std::vector<double> xp = x0, xm = x0;
      xp[k] += h;
      xm[k] -= h;
      NoGradGuard ng;
      const double fd =
          (loss_of(make(xp, {N, C})).item<double>() - loss_of(make(xm, {N, C})).item<double>()) / (2 * h);
      EXPECT_NEAR(g[k], fd, 1e-7) << "element " << k << " reduction " << reduction_name(red);
    }
  }
}

TEST(FusedCrossEntropy, DoubleBackwardMatchesTheCompositeRoute) {
  const int64_t N = 5, C = 3;
  const Tensor t = tensor<int64_t>({2, 0, 1, -100, 2});
  auto grad_of_grad_norm = [&](bool composite) {
    Tensor x = uniform_sample({N, C}, 21, -1, 1).requires_grad_();
    auto opts = F::CrossEntropyFuncOptions();
    if (composite) opts.weight(ones({C}, kFloat64));  // forces the composite route
    const Tensor loss = F::cross_entropy(x, t, opts);
    const Tensor gx = autograd::grad({loss}, {x}, {}, true, true)[0];
    (gx * gx).sum().backward();
    return std::make_pair(values(gx), values(x.grad()));
  };
  const auto fused = grad_of_grad_norm(false), composite = grad_of_grad_norm(true);
  for (size_t k = 0; k < fused.first.size(); ++k) {
    EXPECT_NEAR(fused.first[k], composite.first[k], 1e-12) << k;
    EXPECT_NEAR(fused.second[k], composite.second[k], 1e-12) << k;
  }
}

}  // namespace
}  // namespace graft::test
