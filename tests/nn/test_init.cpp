// graft::nn::init: gains and fans against PyTorch (tests/fixtures/nn_fixtures.txt), and the
// empirical mean / std / bounds of large draws against the formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace init = graft::nn::init;

double mean_of(const Tensor& t) { return t.to(kFloat64).mean().item<double>(); }
double std_of(const Tensor& t) { return t.to(kFloat64).std().item<double>(); }
double min_of(const Tensor& t) { return t.min().item<double>(); }
double max_of(const Tensor& t) { return t.max().item<double>(); }

std::filesystem::path fixture_path() {
  return std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "nn_fixtures.txt";
}

TEST(Init, GainsAndFansMatchPyTorch) {
  std::ifstream in(fixture_path());
  ASSERT_TRUE(in.good());
  int gains = 0, fans = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "gain") {
      std::string name, param;
      double expected = 0;
      ls >> name >> param >> expected;
      const double got = param == "-" ? init::calculate_gain(name) : init::calculate_gain(name, std::stod(param));
      EXPECT_NEAR(got, expected, 1e-15) << name << " " << param;
      ++gains;
    } else if (kind == "fan") {
      int ndim = 0;
      ls >> ndim;
      std::vector<int64_t> shape(static_cast<size_t>(ndim));
      for (auto& s : shape) ls >> s;
      int64_t fan_in = 0, fan_out = 0;
      ls >> fan_in >> fan_out;
      auto [fi, fo] = init::calculate_fan_in_and_fan_out(graft::empty(shape));
      EXPECT_EQ(fi, fan_in) << line;
      EXPECT_EQ(fo, fan_out) << line;
      ++fans;
    }
  }
  EXPECT_EQ(gains, 15);
  EXPECT_EQ(fans, 6);
  // The enum spelling gives the same values.
  EXPECT_EQ(init::calculate_gain(kReLU), std::sqrt(2.0));
  EXPECT_EQ(init::calculate_gain(kTanh), 5.0 / 3.0);
  EXPECT_EQ(init::calculate_gain(kLeakyReLU, 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_EQ(init::calculate_gain(kSELU), 0.75);
  EXPECT_EQ(init::calculate_gain(kConv2D), 1.0);
  EXPECT_TRUE(throws_error([] { init::calculate_gain("swish"); }, {"calculate_gain", "'swish'", "leaky_relu"}));
  EXPECT_TRUE(throws_error([] { init::calculate_fan_in_and_fan_out(graft::empty({5})); }, {"at least 2 dims", "[5]"}));
  EXPECT_STREQ(nonlinearity_name(kConvTranspose2D), "conv_transpose2d");
}

TEST(Init, UniformNormalConstant) {
  manual_seed(1);
  Tensor w = graft::empty({1000, 1000});
  Tensor r = init::uniform_(w, -2, 3);
  EXPECT_TRUE(r.is_same(w));
  EXPECT_GE(min_of(w), -2);
  EXPECT_LT(max_of(w), 3);
  EXPECT_NEAR(mean_of(w), 0.5, 0.01);
  EXPECT_NEAR(std_of(w), 5 / std::sqrt(12.0), 0.005);
  init::normal_(w, 1.5, 0.5);
  EXPECT_NEAR(mean_of(w), 1.5, 0.002);
  EXPECT_NEAR(std_of(w), 0.5, 0.005);
  init::constant_(w, 0.25);
  EXPECT_EQ(min_of(w), 0.25);
  EXPECT_EQ(max_of(w), 0.25);
  init::zeros_(w);
  EXPECT_EQ(max_of(w.abs()), 0.0);
  init::ones_(w);
  EXPECT_EQ(min_of(w), 1.0);
  // A parameter (leaf requiring grad) is written under NoGradGuard and stays a leaf.
  Tensor p = graft::empty({3, 4}, requires_grad());
  init::normal_(p);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  // Views are written in place (a column of a matrix).
  Tensor m = graft::zeros({3, 4}, kFloat64);
  init::constant_(m.select(1, 2), 7);
  EXPECT_TRUE(all_close(m, {0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0}, {3, 4}, 0, 0));
  init::uniform_(m.t(), 5, 6);
  EXPECT_GE(min_of(m), 5);
  // A generator of its own gives repeatable draws.
  Generator g1(7), g2(7);
  Tensor a = init::normal_(graft::empty({10}), 0, 1, &g1), b = init::normal_(graft::empty({10}), 0, 1, &g2);
  EXPECT_TRUE(graft::equal(a, b));
  EXPECT_TRUE(throws_error([] { init::uniform_(graft::empty({2}), 1, 0); }, {"uniform_", "low <= high"}));
  EXPECT_TRUE(throws_error([] { init::normal_(graft::zeros({2}, kInt64)); }, {"normal_", "floating-point", "int64"}));
  EXPECT_TRUE(throws_error([] { init::normal_(graft::empty({2}), 0, -1); }, {"normal_", "std >= 0"}));
}

TEST(Init, EyeAndDirac) {
  Tensor e = init::eye_(graft::empty({2, 3}));
  EXPECT_TRUE(all_close(e, {1, 0, 0, 0, 1, 0}, {2, 3}, 0, 0));
  EXPECT_TRUE(throws_error([] { init::eye_(graft::empty({2, 2, 2})); }, {"eye_", "2-D", "[2, 2, 2]"}));
  // dirac_: conv with this weight passes channels through: w[o, o, center...] = 1.
  Tensor d = init::dirac_(graft::empty({3, 2, 3}));
  std::vector<double> expected(18, 0.0);
  expected[0 * 6 + 0 * 3 + 1] = 1;
  expected[1 * 6 + 1 * 3 + 1] = 1;
  EXPECT_TRUE(all_close(d, expected, {3, 2, 3}, 0, 0));
  Tensor d2 = init::dirac_(graft::empty({4, 2, 3, 3}), 2);  // two groups of 2 output channels
  auto v = values(d2);
  double total = 0;
  for (double x : v) total += x;
  EXPECT_EQ(total, 4.0);
  EXPECT_EQ(v[0 * 18 + 0 * 9 + 4], 1.0);
  EXPECT_EQ(v[1 * 18 + 1 * 9 + 4], 1.0);
  EXPECT_EQ(v[2 * 18 + 0 * 9 + 4], 1.0);
  EXPECT_EQ(v[3 * 18 + 1 * 9 + 4], 1.0);
  EXPECT_TRUE(throws_error([] { init::dirac_(graft::empty({3, 3, 3}), 2); }, {"dirac_", "groups"}));
}

TEST(Init, XavierMatchesFormula) {
  manual_seed(2);
  Tensor w = graft::empty({600, 400});
  init::xavier_uniform_(w);
  const double a = std::sqrt(6.0 / 1000.0);
  EXPECT_LE(max_of(w.abs()), a);
  EXPECT_GT(max_of(w.abs()), 0.999 * a);
  EXPECT_NEAR(std_of(w), a / std::sqrt(3.0), 0.01 * a / std::sqrt(3.0));
  init::xavier_normal_(w, init::calculate_gain("tanh"));
  const double s = 5.0 / 3.0 * std::sqrt(2.0 / 1000.0);
  EXPECT_NEAR(std_of(w), s, 0.01 * s);
  EXPECT_NEAR(mean_of(w), 0, 0.01 * s);
  // Conv-shaped weight: fans include the receptive field (fan_in 16*9, fan_out 32*9).
  Tensor c = graft::empty({32, 16, 3, 3});
  init::xavier_uniform_(c, 2.0);
  const double ac = 2.0 * std::sqrt(6.0 / (144.0 + 288.0));
  EXPECT_LE(max_of(c.abs()), ac);
  EXPECT_GT(max_of(c.abs()), 0.99 * ac);
  EXPECT_TRUE(throws_error([] { init::xavier_uniform_(graft::empty({4})); }, {"at least 2 dims"}));
}

TEST(Init, KaimingMatchesFormula) {
  manual_seed(3);
  Tensor w = graft::empty({1000, 1000});
  init::kaiming_normal_(w, 0, kFanIn, kReLU);
  const double s = std::sqrt(2.0 / 1000.0);
  EXPECT_NEAR(std_of(w), s, 0.01 * s);
  EXPECT_NEAR(mean_of(w), 0, 0.01 * s);
  // fan_out on a conv weight (64, 16, 3, 3): fan_out = 64 * 9; the string spelling works too.
  Tensor c = graft::empty({64, 16, 3, 3});
  init::kaiming_normal_(c, 0, "fan_out", "relu");
  const double sc = std::sqrt(2.0 / (64.0 * 9.0));
  EXPECT_NEAR(std_of(c), sc, 0.03 * sc);
  // Uniform: bound = gain * sqrt(3 / fan); default nonlinearity leaky_relu with a = 0 is relu's gain.
  init::kaiming_uniform_(c);
  const double b = std::sqrt(2.0) * std::sqrt(3.0 / 144.0);
  EXPECT_LE(max_of(c.abs()), b);
  EXPECT_GT(max_of(c.abs()), 0.99 * b);
  EXPECT_NEAR(std_of(c), b / std::sqrt(3.0), 0.03 * b / std::sqrt(3.0));
  // a = sqrt(5) with leaky_relu: bound 1 / sqrt(fan_in), PyTorch's Linear/Conv default.
  init::kaiming_uniform_(w, std::sqrt(5.0));
  EXPECT_LE(max_of(w.abs()), 1.0 / std::sqrt(1000.0));
  EXPECT_GT(max_of(w.abs()), 0.999 / std::sqrt(1000.0));
  init::kaiming_uniform_(w, 0.0, kFanOut, kTanh);
  const double bt = 5.0 / 3.0 * std::sqrt(3.0 / 1000.0);
  EXPECT_LE(max_of(w.abs()), bt);
  EXPECT_GT(max_of(w.abs()), 0.999 * bt);
  EXPECT_TRUE(throws_error([] { init::kaiming_normal_(graft::empty({4, 4}), 0, "fan_avg"); }, {"'fan_avg'", "fan_in"}));
  // Zero-element tensors are left alone.
  EXPECT_EQ(init::kaiming_uniform_(graft::empty({0, 4})).numel(), 0);
}

void expect_orthonormal_rows(const Tensor& w2d, double tol) {
  Tensor w = w2d.to(kFloat64);
  const int64_t r = w.size(0);
  Tensor prod = graft::matmul(w, w.t());
  EXPECT_TRUE(all_close(prod, graft::eye(r, kFloat64), tol, 0));
}

TEST(Init, OrthogonalRowsOrColumns) {
  manual_seed(4);
  // Wide (rows < cols): orthonormal rows.
  Tensor wide = init::orthogonal_(graft::empty({50, 120}, kFloat64));
  expect_orthonormal_rows(wide, 1e-10);
  // Tall (rows > cols): orthonormal columns.
  Tensor tall = init::orthogonal_(graft::empty({120, 50}, kFloat64));
  expect_orthonormal_rows(tall.t(), 1e-10);
  // Square float32 with a gain: W W^T = gain^2 I.
  Tensor sq = init::orthogonal_(graft::empty({100, 100}), 2.0);
  EXPECT_TRUE(all_close(graft::matmul(sq.to(kFloat64), sq.to(kFloat64).t()), graft::eye(100, kFloat64) * 4, 1e-5, 0));
  EXPECT_TRUE(all_close(graft::matmul(sq.to(kFloat64).t(), sq.to(kFloat64)), graft::eye(100, kFloat64) * 4, 1e-5, 0));
  // More than 2 dims: flattened to size(0) x rest.
  Tensor conv = init::orthogonal_(graft::empty({8, 2, 3, 3}, kFloat64));
  expect_orthonormal_rows(conv.reshape({8, 18}), 1e-10);
  // Draws differ from call to call and look like a random rotation (entries ~ 1/sqrt(n)).
  Tensor again = init::orthogonal_(graft::empty({100, 100}), 2.0);
  EXPECT_FALSE(graft::equal(sq, again));
  EXPECT_NEAR(std_of(sq / 2), 0.1, 0.01);
  EXPECT_TRUE(throws_error([] { init::orthogonal_(graft::empty({5})); }, {"orthogonal_", "[5]"}));
}

TEST(Init, TruncNormalBoundsAndMoments) {
  manual_seed(5);
  // Standard normal on [-2, 2]: the truncated std is sqrt(1 - 2 * 2 * phi(2) / (Phi(2) - Phi(-2))).
  Tensor w = init::trunc_normal_(graft::empty({400, 500}));
  const double phi2 = std::exp(-2.0) / std::sqrt(2 * M_PI);
  const double mass = std::erf(2 / std::sqrt(2.0));
  const double s = std::sqrt(1 - 4 * phi2 / mass);
  EXPECT_GE(min_of(w), -2);
  EXPECT_LE(max_of(w), 2);
  EXPECT_NEAR(std_of(w), s, 0.01 * s);
  EXPECT_NEAR(mean_of(w), 0, 0.01);
  // Mean/std with absolute bounds (as PyTorch's trunc_normal_): N(1, 0.5^2) cut to [0.5, 3].
  Tensor v = init::trunc_normal_(graft::empty({200000}, kFloat64), 1.0, 0.5, 0.5, 3.0);
  EXPECT_GE(min_of(v), 0.5);
  EXPECT_LE(max_of(v), 3.0);
  // Truncated mean: mu + sigma (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha)), alpha = -1, beta = 4.
  auto pdf = [](double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); };
  auto cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  const double m = 1.0 + 0.5 * (pdf(-1) - pdf(4)) / (cdf(4) - cdf(-1));
  EXPECT_NEAR(mean_of(v), m, 0.005);
  // A far tail, [3, 4] standard units (the inverse-CDF path): every value inside, mean as the formula.
  Tensor tail = init::trunc_normal_(graft::empty({100000}, kFloat64), 0, 1, 3, 4);
  EXPECT_GE(min_of(tail), 3);
  EXPECT_LE(max_of(tail), 4);
  const double mt = (pdf(3) - pdf(4)) / (cdf(4) - cdf(3));
  EXPECT_NEAR(mean_of(tail), mt, 0.01);
  // And its mirror image.
  Tensor neg = init::trunc_normal_(graft::empty({100000}, kFloat64), 0, 1, -4, -3);
  EXPECT_LE(max_of(neg), -3);
  EXPECT_NEAR(mean_of(neg), -mt, 0.01);
  EXPECT_TRUE(throws_error([] { init::trunc_normal_(graft::empty({2}), 0, 1, 2, -2); }, {"trunc_normal_", "a < b"}));
  EXPECT_TRUE(throws_error([] { init::trunc_normal_(graft::empty({2}), 0, 0); }, {"trunc_normal_", "std > 0"}));
}

TEST(Init, ApplyWithHeInit) {
  // The seed document's pattern: model.apply(he_init).
  namespace nn = graft::nn;
  manual_seed(6);
  nn::Sequential model(nn::Linear(500, 400), nn::ReLU(), nn::Linear(400, 10));
  model->apply([](nn::Module& m) {
    if (auto* fc = m.as<nn::LinearImpl>()) {
      init::kaiming_normal_(fc->weight, 0, kFanIn, kReLU);
      init::zeros_(fc->bias);
    }
  });
  auto& first = model->at<nn::LinearImpl>(0);
  const double s = std::sqrt(2.0 / 500.0);
  EXPECT_NEAR(std_of(first.weight), s, 0.02 * s);
  EXPECT_EQ(max_of(first.bias.abs()), 0.0);
  EXPECT_TRUE(first.weight.requires_grad());
  EXPECT_TRUE(first.weight.is_leaf());
}

}  // namespace
}  // namespace graft::test
