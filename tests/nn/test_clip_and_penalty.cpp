// nn::utils: clip_grad_norm_ / clip_grad_value_ against norms worked out by hand, the penalty
// helpers, and coupled (SGD, Adam) versus decoupled (AdamW) weight decay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace utils = graft::nn::utils;
namespace F = graft::nn::functional;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A leaf parameter holding `value`, with gradient `grad` (both float64 unless told).
Tensor param_with_grad(const std::vector<double>& value, const std::vector<double>& grad, DType dtype = kFloat64) {
  Tensor p = make(value, {static_cast<int64_t>(value.size())}, dtype).requires_grad_();
  p.mutable_grad() = make(grad, {static_cast<int64_t>(grad.size())}, dtype);
  return p;
}

void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-15) {
  const std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

// ---- clip_grad_norm_ ----

TEST(ClipGradNorm, TwoNormOverAllParametersAtOnce) {
  // ||(3, 4)|| = 5 and ||(12)|| = 12, so the total is ||(5, 12)|| = 13.
  Tensor w = param_with_grad({1, 1}, {3, 4});
  Tensor b = param_with_grad({1}, {12});
  const double total = utils::clip_grad_norm_({w, b}, 6.5);
  EXPECT_DOUBLE_EQ(total, 13.0);
  const double coef = 6.5 / (13.0 + 1e-6);  // ~0.5
  expect_values(w.grad(), {3 * coef, 4 * coef});
  expect_values(b.grad(), {12 * coef});
  expect_values(w, {1, 1});  // parameters are untouched
}

TEST(ClipGradNorm, OneNormInfNormAndAnyP) {
  {
    Tensor w = param_with_grad({0, 0}, {3, -4});
    Tensor b = param_with_grad({0}, {-12});
    const double total = utils::clip_grad_norm_({w, b}, 1.0, 1.0);
    EXPECT_DOUBLE_EQ(total, 19.0);  // (3 + 4) + 12
    const double coef = 1.0 / (19.0 + 1e-6);
    expect_values(w.grad(), {3 * coef, -4 * coef});
    expect_values(b.grad(), {-12 * coef});
  }
  {
    Tensor w = param_with_grad({0, 0}, {3, -4});
    Tensor b = param_with_grad({0}, {-12});
    const double total = utils::clip_grad_norm_({w, b}, 6.0, kInf);
    EXPECT_DOUBLE_EQ(total, 12.0);  // max |g|
    const double coef = 6.0 / (12.0 + 1e-6);
    expect_values(w.grad(), {3 * coef, -4 * coef});
    expect_values(b.grad(), {-12 * coef});
  }
  {
    // p = 3: ||(3, -4)||_3 = 91^(1/3); the norm of (91^(1/3), 12) is (91 + 1728)^(1/3) = 1819^(1/3).
    Tensor w = param_with_grad({0, 0}, {3, -4});
    Tensor b = param_with_grad({0}, {-12});
    const double total = utils::clip_grad_norm_({w, b}, 1.0, 3.0);
    EXPECT_NEAR(total * total * total, 1819.0, 1e-10);
    const double coef = 1.0 / (std::cbrt(1819.0) + 1e-6);
    expect_values(w.grad(), {3 * coef, -4 * coef}, 1e-14);
    expect_values(b.grad(), {-12 * coef}, 1e-14);
  }
}

TEST(ClipGradNorm, CoefficientIsClampedToOne) {
  // max_norm above the norm: PyTorch multiplies by min(clip_coef, 1) = 1, so nothing changes.
  Tensor w = param_with_grad({0, 0}, {0.3, -0.4});
  const double total = utils::clip_grad_norm_(w, 100.0);
  EXPECT_DOUBLE_EQ(total, 0.5);
  expect_values(w.grad(), {0.3, -0.4}, 0.0);
}

TEST(ClipGradNorm, SkipsParametersWithoutGradAndEmptyLists) {
  Tensor w = param_with_grad({0, 0}, {6, 8});
  Tensor no_grad = make({5, 5}, {2}).requires_grad_();
  const double total = utils::clip_grad_norm_({no_grad, w}, 5.0);
  EXPECT_DOUBLE_EQ(total, 10.0);
  EXPECT_FALSE(no_grad.grad().defined());
  expect_values(w.grad(), {6 * 5.0 / (10.0 + 1e-6), 8 * 5.0 / (10.0 + 1e-6)});

  EXPECT_EQ(utils::clip_grad_norm_(std::vector<Tensor>{no_grad}, 1.0), 0.0);
  EXPECT_EQ(utils::clip_grad_norm_(std::vector<Tensor>{}, 1.0), 0.0);
}

TEST(ClipGradNorm, Float32RoundsTheNormAndComputesTheCoefficientInFloat32) {
  Tensor w = param_with_grad({0, 0}, {3, 4}, kFloat32);
  Tensor b = param_with_grad({0}, {12}, kFloat32);
  const double total = utils::clip_grad_norm_({w, b}, 1.0);
  EXPECT_EQ(total, 13.0);
  // The norm of float32 gradients is a float32 value, as PyTorch's 0-dim float32 tensor holds it.
  Tensor v = param_with_grad({0}, {0.1}, kFloat32);
  EXPECT_EQ(utils::clip_grad_norm_(v, 1.0), static_cast<double>(0.1f));
  // PyTorch: clip_coef = (13f + 1e-6f).reciprocal() * 1f, in float32.
  const float coef = (1.0f / (13.0f + 1e-6f)) * 1.0f;
  EXPECT_EQ(w.grad().data_ptr<float>()[0], 3.0f * coef);
  EXPECT_EQ(w.grad().data_ptr<float>()[1], 4.0f * coef);
  EXPECT_EQ(b.grad().data_ptr<float>()[0], 12.0f * coef);
}

TEST(ClipGradNorm, NonContiguousGradientsAreReadAndScaledInPlace) {
  Tensor w = make({0, 0, 0, 0, 0, 0}, {3, 2}).requires_grad_();
  // grad = [[1, 2], [3, 4], [5, 6]] stored transposed: ||.|| = sqrt(91).
  w.mutable_grad() = make({1, 3, 5, 2, 4, 6}, {2, 3}).t();
  ASSERT_FALSE(w.grad().is_contiguous());
  const double total = utils::clip_grad_norm_(w, 1.0);
  EXPECT_NEAR(total, std::sqrt(91.0), 1e-14);
  const double coef = 1.0 / (std::sqrt(91.0) + 1e-6);
  expect_values(w.grad(), {1 * coef, 2 * coef, 3 * coef, 4 * coef, 5 * coef, 6 * coef});
}

TEST(ClipGradNorm, IsNotRecordedByAutograd) {
  Tensor w = param_with_grad({1, 2}, {3, 4});
  utils::clip_grad_norm_(w, 1.0);
  EXPECT_FALSE(w.grad().requires_grad());
}

TEST(ClipGradNorm, NonFiniteNormRaisesWhenAsked) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor w = param_with_grad({0, 0}, {nan, 1});
  Tensor b = param_with_grad({0}, {2});
  const std::string msg = error_message([&] { utils::clip_grad_norm_({w, b}, 1.0, 2.0, true); });
  EXPECT_NE(msg.find("clip_grad_norm_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nan"), std::string::npos) << msg;
  EXPECT_NE(msg.find("error_if_nonfinite"), std::string::npos) << msg;  // the hint
  EXPECT_EQ(values(b.grad()), std::vector<double>({2}));  // nothing scaled

  Tensor i = param_with_grad({0}, {kInf});
  const std::string inf_msg = error_message([&] { utils::clip_grad_norm_(i, 1.0, kInf, true); });
  EXPECT_NE(inf_msg.find("inf"), std::string::npos) << inf_msg;

  // Without the flag, PyTorch scales anyway: a nan norm makes every gradient nan.
  const double total = utils::clip_grad_norm_({w, b}, 1.0);
  EXPECT_TRUE(std::isnan(total));
  EXPECT_TRUE(std::isnan(values(b.grad())[0]));
}

// Every order torch.norm takes, as in LibTorch (values by hand, and from PyTorch 1.13's
// torch.nn.utils.clip_grad_norm_ on the same gradients): per-parameter norms, then the norm of them.
TEST(ClipGradNorm, AnyNormType) {
  struct Case {
    double p;
    double total;
  };
  // Gradients {3, -4} and {0.5}.
  const std::vector<Case> cases = {
      {-1.0, 12.0 / 31.0},  // 1 / (1/3 + 1/4 + 1/0.5)
      {-0.5, 0.16108532003065917},  // (3^-0.5 + 4^-0.5 + 0.5^-0.5)^-2 (PyTorch)
      {-kInf, 0.5},  // min |g|
      {0.0, 2.0},  // the count of nonzero per-parameter counts (2 and 1)
      {3.0, 4.5},  // (27 + 64 + 0.125)^(1/3)
  };
  for (const Case& c : cases) {
    Tensor w = param_with_grad({0, 0}, {3, -4});
    Tensor b = param_with_grad({0}, {0.5});
    const double total = utils::clip_grad_norm_({w, b}, 1.0, c.p);
    EXPECT_NEAR(total, c.total, 1e-15) << "p = " << c.p;
    const double coef = std::min(1.0, 1.0 / (c.total + 1e-6));
    expect_values(w.grad(), {3 * coef, -4 * coef}, 1e-12);
    expect_values(b.grad(), {0.5 * coef}, 1e-12);
  }
  // A zero element makes a negative-order norm 0 (its |g|^p is inf), and then the total.
  Tensor z = param_with_grad({0, 0}, {3, 0});
  Tensor h = param_with_grad({0}, {0.5});
  EXPECT_EQ(utils::clip_grad_norm_({z, h}, 1.0, -2.0, true), 0.0);
  expect_values(z.grad(), {3, 0});  // clip_coef clamps to 1
  // An inf element adds 0 to a negative-order sum: 1 / (0 + 1/2) = 2, finite.
  Tensor i = param_with_grad({0, 0}, {kInf, 2});
  EXPECT_EQ(utils::clip_grad_norm_(i, 1.0, -1.0, true), 2.0);
  // Overflow of 2e200^-2 to 0: the total is inf, an error with error_if_nonfinite.
  Tensor big = param_with_grad({0, 0}, {2e200, -2e200});
  EXPECT_TRUE(throws_error([&] { utils::clip_grad_norm_(big, 1.0, -2.0, true); },
                           {"clip_grad_norm_", "total norm of order -2 = inf"}));
  // Count: p = 0 stays finite with an inf or nan gradient.
  Tensor n = param_with_grad({0, 0}, {std::numeric_limits<double>::quiet_NaN(), 0});
  EXPECT_EQ(utils::clip_grad_norm_(n, 1.0, 0.0, true), 1.0);
}

TEST(ClipGradNorm, RejectsANanNormType) {
  Tensor w = param_with_grad({0}, {1});
  EXPECT_TRUE(throws_error([&] { utils::clip_grad_norm_(w, 1.0, std::numeric_limits<double>::quiet_NaN()); },
                           {"clip_grad_norm_", "norm_type = nan"}));
}

// ---- clip_grad_value_ ----

TEST(ClipGradValue, ClampsEachGradientInPlace) {
  Tensor w = param_with_grad({0, 0, 0}, {-3, 0.5, 4});
  Tensor b = param_with_grad({0}, {-0.25});
  Tensor none = make({1}, {1}).requires_grad_();
  utils::clip_grad_value_({w, b, none}, 1.0);
  expect_values(w.grad(), {-1, 0.5, 1}, 0.0);
  expect_values(b.grad(), {-0.25}, 0.0);
  EXPECT_FALSE(none.grad().defined());
  utils::clip_grad_value_(w, 0.1);
  expect_values(w.grad(), {-0.1, 0.1, 0.1}, 0.0);
  EXPECT_NE(error_message([&] { utils::clip_grad_value_(w, -1.0); }).find("clip_value"), std::string::npos);
}

// ---- penalties ----

TEST(Penalty, L1AndL2ValuesAndGradients) {
  Tensor w = make({1, -2}, {2}).requires_grad_();
  Tensor b = make({3}, {1}).requires_grad_();
  const Tensor l1 = utils::l1_penalty({w, b});
  const Tensor l2 = utils::l2_penalty({w, b});
  EXPECT_EQ(l1.dim(), 0);
  EXPECT_DOUBLE_EQ(l1.item<double>(), 6.0);   // 1 + 2 + 3
  EXPECT_DOUBLE_EQ(l2.item<double>(), 14.0);  // 1 + 4 + 9 (no 1/2)
  (l1 + l2).backward();
  expect_values(w.grad(), {1 + 2 * 1.0, -1 + 2 * -2.0});  // sign(w) + 2w
  expect_values(b.grad(), {1 + 2 * 3.0});
  EXPECT_EQ(utils::l2_penalty({}).item<double>(), 0.0);
}

// A small float64 regression model, trained with the decay in the optimiser or in the loss.
struct Mlp {
  Tensor x, y, w1, b1, w2, b2;
  Mlp() {
    Generator g(11);
    x = randn({8, 3}, kFloat64, &g);
    y = randn({8, 2}, kFloat64, &g);
    w1 = randn({4, 3}, kFloat64, &g);
    b1 = randn({4}, kFloat64, &g);
    w2 = randn({2, 4}, kFloat64, &g);
    b2 = randn({2}, kFloat64, &g);
  }
  std::vector<Tensor> params() const {
    return {w1.clone().requires_grad_(), b1.clone().requires_grad_(), w2.clone().requires_grad_(),
            b2.clone().requires_grad_()};
  }
  Tensor loss(const std::vector<Tensor>& p) const {
    return F::mse_loss(F::linear(F::tanh(F::linear(x, p[0], p[1])), p[2], p[3]), y);
  }
};

TEST(WeightDecay, SgdCoupledDecayEqualsHalfWdTimesL2PenaltyInTheLoss) {
  const Mlp m;
  const double wd = 0.05;
  auto pa = m.params();
  optim::SGD a(pa, optim::SGDOptions(0.1).momentum(0.9).weight_decay(wd));
  auto pb = m.params();
  optim::SGD b(pb, optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 5; ++step) {
    a.zero_grad();
    m.loss(pa).backward();
    a.step();
    b.zero_grad();
    (m.loss(pb) + 0.5 * wd * utils::l2_penalty(pb)).backward();
    b.step();
  }
  double moved = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    const auto va = values(pa[i]), vb = values(pb[i]), v0 = values(m.params()[i]);
    for (size_t j = 0; j < va.size(); ++j) {
      EXPECT_NEAR(va[j], vb[j], 1e-12) << "param " << i << " element " << j;
      moved = std::max(moved, std::fabs(va[j] - v0[j]));
    }
  }
  EXPECT_GT(moved, 1e-2);  // the trajectory went somewhere
}

// One step from p0 = 2 with loss = sum(c * p), c = (0, 1, 1000): the gradient is c.
//   Adam (coupled): g' = c + wd p0; m_hat = g', sqrt(v_hat) = |g'|, so
//                   p1 = p0 - lr g' / (|g'| + eps): the decay is divided by the adaptive denominator.
//   AdamW:          p1 = p0 (1 - lr wd) - lr c / (|c| + eps): the decay is lr wd p0, whatever c is.
TEST(WeightDecay, AdamCoupledDecayIsRescaledAdamWDecoupledIsNot) {
  const double lr = 0.1, wd = 0.1, eps = 1e-8, p0 = 2.0;
  const std::vector<double> c = {0, 1, 1000};
  const Tensor coeff = make(c, {3});
  auto one_step = [&](optim::Optimizer& opt, const Tensor& p) {
    opt.zero_grad();
    (p * coeff).sum().backward();
    opt.step();
    return values(p);
  };
  Tensor pa = make({p0, p0, p0}, {3}).requires_grad_();
  optim::Adam adam({pa}, optim::AdamOptions(lr).weight_decay(wd).eps(eps));
  const auto adam_p = one_step(adam, pa);
  Tensor pw = make({p0, p0, p0}, {3}).requires_grad_();
  optim::AdamW adamw({pw}, optim::AdamWOptions(lr).weight_decay(wd).eps(eps));
  const auto adamw_p = one_step(adamw, pw);
  Tensor pn = make({p0, p0, p0}, {3}).requires_grad_();
  optim::Adam plain({pn}, optim::AdamOptions(lr).eps(eps));
  const auto plain_p = one_step(plain, pn);

  for (size_t i = 0; i < c.size(); ++i) {
    const double g = c[i] + wd * p0;
    const double adam_expected = p0 - lr * g / (std::fabs(g) + eps);
    const double adamw_expected = p0 * (1 - lr * wd) - lr * c[i] / (std::fabs(c[i]) + eps);
    const double plain_expected = p0 - lr * c[i] / (std::fabs(c[i]) + eps);
    EXPECT_NEAR(adam_p[i], adam_expected, 1e-12) << "c = " << c[i];
    EXPECT_NEAR(adamw_p[i], adamw_expected, 1e-12) << "c = " << c[i];
    EXPECT_NEAR(plain_p[i], plain_expected, 1e-12) << "c = " << c[i];
    // AdamW's decay moves every parameter by lr * wd * p0 = 0.02 beyond the plain Adam step.
    EXPECT_NEAR(plain_p[i] - adamw_p[i], lr * wd * p0, 1e-12) << "c = " << c[i];
  }
  // Adam's decay depends on the gradient: with no gradient it is the whole (sign-like) step lr = 0.1,
  // with a gradient it almost vanishes (the step is ~lr either way).
  EXPECT_NEAR(plain_p[0] - adam_p[0], 0.1, 1e-7);
  EXPECT_LT(std::fabs(plain_p[1] - adam_p[1]), 1e-7);
  EXPECT_LT(std::fabs(plain_p[2] - adam_p[2]), 1e-7);
}

}  // namespace
}  // namespace graft::test


namespace graft::test {
namespace {

// The 2-norm's fast path (Note [Fast gradient norms] in src/nn/utils.cpp) against a plain loop in
// double: gradients longer than one block (2^15 elements) and of odd lengths, one of them
// non-contiguous; the norm must not depend on the thread count, and every gradient must be
// scaled exactly as g * float(coef).
TEST(ClipGradNormFastPath, MatchesAPlainDoubleLoopAtOneAndTwoThreads) {
  const int threads_before = get_num_threads();
  manual_seed(7);
  const std::vector<int64_t> sizes = {1, 17, 32768, 32769, 300007};
  std::vector<Tensor> params;
  for (int64_t n : sizes) params.push_back(zeros({n}).requires_grad_());
  params.push_back(zeros({301, 7}).requires_grad_());
  std::vector<Tensor> originals;
  for (Tensor& p : params) {
    Tensor g = randn(p.sizes());
    if (p.dim() == 2) g = randn({7, 301}).t();  // a transposed (non-contiguous) gradient
    originals.push_back(g.clone());
  }
  // Reference: per gradient the norm in double rounded to float, then the norm of the norms.
  double total_sq = 0;
  for (const Tensor& g : originals) {
    const Tensor c = g.contiguous();
    double s = 0;
    for (int64_t i = 0; i < c.numel(); ++i) s += static_cast<double>(c.data_ptr<float>()[i]) * c.data_ptr<float>()[i];
    const float norm = static_cast<float>(std::sqrt(s));
    total_sq += static_cast<double>(norm) * norm;
  }
  const float total = static_cast<float>(std::sqrt(total_sq));
  const float coef = std::min(1.0f, (1.0f / (total + 1e-6f)) * 0.5f);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (size_t k = 0; k < params.size(); ++k) params[k].mutable_grad() = originals[k].clone();
    const double norm = nn::utils::clip_grad_norm_(params, 0.5);
    EXPECT_EQ(norm, static_cast<double>(total)) << "threads " << threads;
    for (size_t k = 0; k < params.size(); ++k) {
      const Tensor want = originals[k].contiguous();
      const Tensor got = params[k].grad().contiguous();
      for (int64_t i = 0; i < want.numel(); ++i)
        ASSERT_EQ(got.data_ptr<float>()[i], want.data_ptr<float>()[i] * coef) << "gradient " << k << " element " << i;
    }
  }
  // NaN and infinity reach the norm (and, with error_if_nonfinite, the error).
  params[2].mutable_grad().data_ptr<float>()[5] = INFINITY;
  EXPECT_TRUE(std::isinf(nn::utils::clip_grad_norm_(params, 0.5)));
  params[3].mutable_grad().data_ptr<float>()[32768] = NAN;
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_(params, 0.5)));
  EXPECT_THROW(nn::utils::clip_grad_norm_(params, 0.5, 2.0, true), Error);
  set_num_threads(threads_before);
}

}  // namespace
}  // namespace graft::test
