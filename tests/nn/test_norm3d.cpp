// BatchNorm3d, InstanceNorm3d, LocalResponseNorm / F::local_response_norm and CrossMapLRN2d (issue
// 32): values, gradients and running statistics against PyTorch 1.13 (tests/fixtures/
// norm3d_fixtures.txt, written by gen_norm3d_fixtures.py: this test only reads it), gradcheck /
// gradgradcheck in float64, the argument errors, the options, the state, and both print styles (the
// expected strings as PyTorch 1.13's repr and LibTorch 1.13's operator<< print them).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/fixture_file.h"
#include "../support/nn_util.h"
#include "../support/test_util.h"
#include "graft/engine/gradcheck.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

const std::vector<FixtureCase>& norm3d_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("norm3d_fixtures.txt");
  return cases;
}

constexpr double kTol = 1e-11;

// The module a norm case describes, in float64, with PyTorch's parameter values copied in.
template <class M, class Options>
M norm_module(const FixtureCase& c, Options o) {
  o.eps(c.number("eps")).affine(c.flag("affine")).track_running_stats(c.flag("track_running_stats"));
  M m(o);
  m->to(kFloat64);
  copy_parameters(*m, c);
  return m;
}

// Trains `steps` forwards on the input (the last one differentiated), then evaluates once, and
// compares everything the case recorded.
template <class M>
void check_norm_case(const FixtureCase& c, M m) {
  const Tensor x = c.tensor("input").clone().requires_grad_();
  const Tensor go = c.tensor("grad_output");
  m->train();
  for (int64_t s = 1; s < static_cast<int64_t>(c.number("steps")); ++s) m(x);
  const Tensor y = m(x);
  y.backward(go);
  EXPECT_TRUE(all_close(y, c.tensor("out"), kTol, kTol)) << "training output";
  EXPECT_TRUE(all_close(x.grad(), c.tensor("grad.input"), kTol, kTol)) << "training input gradient";
  expect_parameter_grads(*m, c, kTol);
  for (const char* b : {"running_mean", "running_var", "num_batches_tracked"}) {
    const bool tracked = m->named_buffers().contains(b);
    EXPECT_EQ(tracked, c.has(b)) << b;
    if (tracked && c.has(b)) {
      EXPECT_TRUE(all_close(m->named_buffers()[b], c.tensor(b), kTol, kTol)) << b;
    }
  }
  m->eval();
  const Tensor xe = c.tensor("input").clone().requires_grad_();
  const Tensor ye = m(xe);
  ye.backward(go);
  EXPECT_TRUE(all_close(ye, c.tensor("eval_out"), kTol, kTol)) << "eval output";
  EXPECT_TRUE(all_close(xe.grad(), c.tensor("grad.eval_input"), kTol, kTol)) << "eval input gradient";
}

TEST(Norm3dFixtures, FileLoads) {
  ASSERT_NO_THROW(norm3d_fixtures());
  std::map<std::string, int> per_kind;
  for (const auto& c : norm3d_fixtures()) ++per_kind[c.kind];
  for (const char* k : {"batch_norm3d", "instance_norm3d", "local_response_norm", "cross_map_lrn2d"})
    EXPECT_GE(per_kind[k], 4) << "too few fixtures for " << k;
}

class Norm3dFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(Norm3dFixture, MatchesPyTorch) {
  const FixtureCase& c = norm3d_fixtures()[GetParam()];
  try {
    if (c.kind == "batch_norm3d") {
      nn::BatchNorm3dOptions o(static_cast<int64_t>(c.number("num_features")));
      if (c.param("momentum") == "None") o.momentum(std::nullopt);
      else o.momentum(c.number("momentum"));
      check_norm_case(c, norm_module<nn::BatchNorm3d>(c, o));
    } else if (c.kind == "instance_norm3d") {
      nn::InstanceNorm3dOptions o(static_cast<int64_t>(c.number("num_features")));
      o.momentum(c.number("momentum"));
      check_norm_case(c, norm_module<nn::InstanceNorm3d>(c, o));
    } else {
      const Tensor x = c.tensor("input").clone().requires_grad_();
      const int64_t size = static_cast<int64_t>(c.number("size"));
      Tensor y;
      if (c.kind == "local_response_norm") {
        y = F::local_response_norm(
            x, F::LocalResponseNormFuncOptions(size).alpha(c.number("alpha")).beta(c.number("beta")).k(c.number("k")));
      } else {
        ASSERT_EQ(c.kind, "cross_map_lrn2d");
        nn::CrossMapLRN2d m(nn::CrossMapLRN2dOptions(size)
                                .alpha(c.number("alpha"))
                                .beta(c.number("beta"))
                                .k(static_cast<int64_t>(c.number("k"))));
        y = m(x);
      }
      EXPECT_TRUE(all_close(y, c.tensor("out"), kTol, kTol)) << "output";
      y.backward(c.tensor("grad_output"));
      EXPECT_TRUE(all_close(x.grad(), c.tensor("grad.input"), kTol, kTol)) << "input gradient";
    }
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

size_t norm3d_fixture_count() {
  try {
    return norm3d_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Norm3dFixture, ::testing::Range<size_t>(0, norm3d_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return norm3d_fixtures()[info.param].name;
                         });

// ---- gradcheck / gradgradcheck (float64) ----
TEST(Norm3dGradcheck, EachOp) {
  using Fn = autograd::TestFunction;
  const Tensor x5 = uniform_sample({2, 3, 2, 2, 3}, 41, -2.0, 2.0).requires_grad_();
  const Tensor w = uniform_sample({3}, 42, 0.5, 1.5).requires_grad_();
  const Tensor b = uniform_sample({3}, 43, -0.5, 0.5).requires_grad_();
  const Tensor x3 = uniform_sample({2, 5, 3}, 44, -2.0, 2.0).requires_grad_();
  const Tensor x4 = uniform_sample({2, 5, 2, 2}, 45, -2.0, 2.0).requires_grad_();
  const Tensor x6 = uniform_sample({1, 4, 2, 1, 2, 2}, 46, -2.0, 2.0).requires_grad_();
  nn::CrossMapLRN2d cm(nn::CrossMapLRN2dOptions(3).alpha(0.6).beta(0.7).k(1));
  nn::CrossMapLRN2d cm_even(nn::CrossMapLRN2dOptions(4).alpha(0.6).beta(0.7).k(2));
  nn::BatchNorm3d bn(nn::BatchNorm3dOptions(3).track_running_stats(false));
  bn->to(kFloat64);
  const auto lrn = [](int64_t size, double alpha, double beta, double k) -> Fn {
    return [=](const TensorList& in) {
      return F::local_response_norm(in[0], F::LocalResponseNormFuncOptions(size).alpha(alpha).beta(beta).k(k));
    };
  };
  const std::vector<std::tuple<std::string, Fn, TensorList>> cases = {
      {"batch_norm_5d",
       [](const TensorList& in) {
         return F::batch_norm(in[0], Tensor(), Tensor(), F::BatchNormFuncOptions().weight(in[1]).bias(in[2]).training(true));
       },
       {x5, w, b}},
      {"instance_norm_5d",
       [](const TensorList& in) {
         return F::instance_norm(in[0], F::InstanceNormFuncOptions().weight(in[1]).bias(in[2]));
       },
       {x5, w, b}},
      {"BatchNorm3d_module", [&](const TensorList& in) { return bn(in[0]); }, {x5}},
      {"lrn_3d", lrn(3, 0.5, 0.75, 1.0), {x3}},
      {"lrn_4d_even", lrn(2, 0.8, 1.1, 2.0), {x4}},
      {"lrn_6d", lrn(5, 0.4, 0.6, 1.0), {x6}},
      {"CrossMapLRN2d", [&](const TensorList& in) { return cm(in[0]); }, {x4}},
      {"CrossMapLRN2d_even", [&](const TensorList& in) { return cm_even(in[0]); }, {x4}},
  };
  for (const auto& [name, fn, inputs] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(autograd::gradcheck(fn, inputs));
    EXPECT_TRUE(autograd::gradgradcheck(fn, inputs));
  }
}

// ---- bad inputs: a graft::Error naming the module or op ----
TEST(Norm3dErrors, WrongDimsAndChannels) {
  nn::BatchNorm3d bn(3);
  EXPECT_TRUE(throws_error([&] { bn(zeros({2, 3, 4, 4})); }, {"BatchNorm3d", "5-D", "[2, 3, 4, 4]", "BatchNorm2d"}));
  EXPECT_TRUE(throws_error([&] { bn(zeros({2, 3, 4})); }, {"BatchNorm3d", "[2, 3, 4]", "BatchNorm1d"}));
  EXPECT_TRUE(throws_error([&] { bn(zeros({2, 3, 1, 2, 2, 2})); }, {"BatchNorm3d", "6-D"}));
  EXPECT_TRUE(throws_error([&] { bn(zeros({2, 4, 2, 2, 2})); }, {"batch_norm", "[2, 4, 2, 2, 2]"}));
  EXPECT_TRUE(throws_error([&] { bn(zeros({1, 3, 1, 1, 1})); }, {"batch_norm", "more than 1 value per channel"}));
  EXPECT_TRUE(throws_error([] { nn::BatchNorm3d(0); }, {"BatchNorm3d", "num_features"}));

  nn::InstanceNorm3d in(nn::InstanceNorm3dOptions(3).affine(true));
  EXPECT_TRUE(throws_error([&] { in(zeros({3, 4, 4})); }, {"InstanceNorm3d", "[3, 4, 4]", "InstanceNorm2d"}));
  EXPECT_TRUE(throws_error([&] { in(zeros({1, 2, 3, 2, 2, 2})); }, {"InstanceNorm3d", "6-D"}));
  EXPECT_TRUE(throws_error([&] { in(zeros({2, 4, 2, 2, 2})); }, {"instance_norm", "weight", "[2, 4, 2, 2, 2]"}));
  EXPECT_TRUE(throws_error([&] { in(zeros({4, 2, 2, 2})); }, {"instance_norm", "weight", "[1, 4, 2, 2, 2]"}));

  const auto lrn = [](const Tensor& x, int64_t size) { return F::local_response_norm(x, size); };
  EXPECT_TRUE(throws_error([&] { lrn(zeros({2, 3}), 2); }, {"local_response_norm", "3 or more dims", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { lrn(zeros({2, 3, 4}), 0); }, {"local_response_norm", "positive size", "size 0"}));
  EXPECT_TRUE(throws_error([&] { lrn(zeros({2, 3, 4}, kBool), 2); }, {"local_response_norm", "floating-point"}));
  // an integer input computes in the default dtype, as PyTorch's gives a floating result
  const Tensor ints = arange(24, kInt64).reshape({2, 3, 4});
  EXPECT_EQ(lrn(ints, 2).dtype(), kFloat32);
  EXPECT_TRUE(lrn(ints, 2).allclose(lrn(ints.to(kFloat32), 2), 0.0, 0.0));
  EXPECT_TRUE(throws_error([&] { lrn(Tensor(), 2); }, {"local_response_norm", "undefined"}));
  EXPECT_TRUE(throws_error([] { nn::LocalResponseNorm(-1); }, {"LocalResponseNorm", "size -1"}));
  nn::LocalResponseNorm lrn_module(2);
  EXPECT_TRUE(throws_error([&] { lrn_module(zeros({3})); }, {"local_response_norm", "[3]"}));

  nn::CrossMapLRN2d cm(3);
  EXPECT_TRUE(throws_error([&] { cm(zeros({3, 4, 4})); }, {"CrossMapLRN2d", "4-D", "[3, 4, 4]", "unsqueeze"}));
  EXPECT_TRUE(throws_error([&] { cm(zeros({1, 3, 4, 4, 2})); }, {"CrossMapLRN2d", "5-D"}));
  EXPECT_TRUE(throws_error([&] { cm(zeros({1, 3, 4, 4}, kInt64)); }, {"CrossMapLRN2d", "floating-point"}));
  EXPECT_TRUE(throws_error([] { nn::CrossMapLRN2d(0); }, {"CrossMapLRN2d", "size 0"}));
}

// ---- edge cases PyTorch defines ----
TEST(Norm3dEdges, EmptyInputsAndLrnWithoutBatchStatistics) {
  // F.local_response_norm returns an empty input as it is; CrossMapLRN2d gives an empty output.
  const Tensor empty = zeros({0, 3, 2, 2});
  EXPECT_EQ(F::local_response_norm(empty, 2).sizes(), empty.sizes());
  EXPECT_EQ(nn::CrossMapLRN2d(3)(empty).sizes(), empty.sizes());
  // size 1, alpha 1, beta 1, k 0 gives x / x^2 = 1 / x (by hand).
  const Tensor x = make({1, 2, 4, -0.5}, {1, 4, 1});
  EXPECT_TRUE(all_close(F::local_response_norm(x, F::LocalResponseNormFuncOptions(1).alpha(1).beta(1).k(0)),
                        {1, 0.5, 0.25, -2}, {1, 4, 1}, 1e-15, 1e-15));
  // LocalResponseNorm has no state and is the same in train and eval: forward is the function.
  nn::LocalResponseNorm m(nn::LocalResponseNormOptions(3).alpha(0.5).k(2));
  const Tensor y = uniform_sample({2, 4, 3, 2}, 7, -2, 2);
  EXPECT_TRUE(m->named_parameters().is_empty());
  EXPECT_TRUE(m->named_buffers().is_empty());
  const Tensor train_out = m(y);
  m->eval();
  EXPECT_TRUE(all_close(m(y), train_out, 0, 0));
  EXPECT_TRUE(all_close(train_out, F::local_response_norm(y, F::LocalResponseNormFuncOptions(3).alpha(0.5).k(2)), 0, 0));
  // float32 goes through in float32
  EXPECT_EQ(m(y.to(kFloat32)).dtype(), kFloat32);
  EXPECT_EQ(nn::CrossMapLRN2d(3)(y.to(kFloat32)).dtype(), kFloat32);
}

// One channel (the window is the channel itself): out = x s^-beta with s = k + alpha / size * x^2,
// d out / dx = s^-beta - 2 alpha beta / size * x^2 s^(-beta-1), worked out per element.
TEST(Norm3dEdges, CrossMapLRN2dOneChannelByHand) {
  const double alpha = 1e-3, beta = 0.75, k = 1, size = 3;
  const Tensor x = make({0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 3, 3}).requires_grad_();
  const Tensor y = nn::CrossMapLRN2d(nn::CrossMapLRN2dOptions(3).alpha(alpha))(x);
  y.sum().backward();
  std::vector<double> out, grad;
  for (double v = 0; v < 9; ++v) {
    const double s = k + alpha / size * v * v;
    out.push_back(v * std::pow(s, -beta));
    grad.push_back(std::pow(s, -beta) - 2 * alpha * beta / size * v * v * std::pow(s, -beta - 1));
  }
  EXPECT_TRUE(all_close(y, out, {1, 1, 3, 3}, 1e-14, 1e-14));
  EXPECT_TRUE(all_close(x.grad(), grad, {1, 1, 3, 3}, 1e-14, 1e-14));
}

// ---- options, state, clone ----
TEST(Norm3dOptions, DefaultsAndSetters) {
  nn::BatchNorm3dOptions bo(4);
  EXPECT_EQ(bo.num_features(), 4);
  EXPECT_EQ(bo.eps(), 1e-5);
  EXPECT_EQ(bo.momentum(), std::optional<double>(0.1));
  EXPECT_TRUE(bo.affine());
  EXPECT_TRUE(bo.track_running_stats());
  bo.eps(1e-3).momentum(std::nullopt).affine(false).track_running_stats(false).num_features(6);
  EXPECT_EQ(bo.num_features(), 6);
  EXPECT_EQ(bo.eps(), 1e-3);
  EXPECT_FALSE(bo.momentum().has_value());
  EXPECT_FALSE(bo.affine());
  EXPECT_FALSE(bo.track_running_stats());

  nn::InstanceNorm3dOptions io(2);
  EXPECT_EQ(io.eps(), 1e-5);
  EXPECT_EQ(io.momentum(), 0.1);
  EXPECT_FALSE(io.affine());
  EXPECT_FALSE(io.track_running_stats());
  io.momentum(0.3).affine(true);
  EXPECT_EQ(io.momentum(), 0.3);
  EXPECT_TRUE(io.affine());

  F::LocalResponseNormFuncOptions lo(5);  // the same type as nn::LocalResponseNormOptions, as in LibTorch
  static_assert(std::is_same_v<F::LocalResponseNormFuncOptions, nn::LocalResponseNormOptions>);
  EXPECT_EQ(lo.size(), 5);
  EXPECT_EQ(lo.alpha(), 1e-4);
  EXPECT_EQ(lo.beta(), 0.75);
  EXPECT_EQ(lo.k(), 1.0);
  lo.size(3).alpha(0.5).beta(2).k(1.5);
  EXPECT_EQ(lo.size(), 3);
  EXPECT_EQ(lo.alpha(), 0.5);
  EXPECT_EQ(lo.beta(), 2.0);
  EXPECT_EQ(lo.k(), 1.5);

  nn::CrossMapLRN2dOptions co(3);
  static_assert(std::is_same_v<std::decay_t<decltype(co.k())>, int64_t>);  // an integer, as in LibTorch
  EXPECT_EQ(co.size(), 3);
  EXPECT_EQ(co.alpha(), 1e-4);
  EXPECT_EQ(co.beta(), 0.75);
  EXPECT_EQ(co.k(), 1);
  co.alpha(0.3).beta(0.5).k(2);
  EXPECT_EQ(co.k(), 2);
  EXPECT_EQ(nn::CrossMapLRN2d(co)->options.beta(), 0.5);
}

TEST(Norm3dModules, StateAndClone) {
  nn::BatchNorm3d bn(3);
  EXPECT_EQ(keys(*bn), (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_TRUE(all_close(bn->weight, {1, 1, 1}, {3}, 0, 0));
  EXPECT_TRUE(all_close(bn->bias, {0, 0, 0}, {3}, 0, 0));
  EXPECT_TRUE(all_close(bn->running_var, {1, 1, 1}, {3}, 0, 0));
  EXPECT_TRUE(bn->uses_batch_statistics());
  nn::BatchNorm3d plain(nn::BatchNorm3dOptions(2).affine(false).track_running_stats(false));
  EXPECT_TRUE(keys(*plain).empty());

  nn::InstanceNorm3d in(3);
  EXPECT_TRUE(keys(*in).empty());
  EXPECT_FALSE(in->uses_batch_statistics());
  nn::InstanceNorm3d full(nn::InstanceNorm3dOptions(2).affine(true).track_running_stats(true));
  EXPECT_EQ(keys(*full),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));

  // clone: a deep copy whose running statistics move on their own
  const Tensor x = uniform_sample({2, 3, 2, 2, 2}, 9, -1, 3).to(kFloat32);
  auto copy = std::dynamic_pointer_cast<nn::BatchNorm3dImpl>(bn->clone());
  ASSERT_TRUE(copy);
  copy->forward(x);
  EXPECT_TRUE(all_close(bn->running_mean, {0, 0, 0}, {3}, 0, 0));
  EXPECT_FALSE(all_close(copy->running_mean, {0, 0, 0}, {3}, 0, 0));
  EXPECT_EQ(copy->num_batches_tracked.item<int64_t>(), 1);
  bn->reset_running_stats();
  auto icopy = std::dynamic_pointer_cast<nn::InstanceNorm3dImpl>(full->clone());
  ASSERT_TRUE(icopy);
  EXPECT_EQ(icopy->options.num_features(), 2);
  {
    NoGradGuard ng;
    icopy->weight.fill_(3);
  }
  EXPECT_TRUE(all_close(full->weight, {1, 1}, {2}, 0, 0));
}

// ---- printing ----
template <class T> std::string norm3d_printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

// repr() of the same modules in PyTorch 1.13.
TEST(Norm3dPrint, PythonForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::Python);
  EXPECT_EQ(norm3d_printed(nn::BatchNorm3d(4)),
            "BatchNorm3d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  EXPECT_EQ(norm3d_printed(nn::BatchNorm3d(
                nn::BatchNorm3dOptions(2).eps(1e-3).momentum(std::nullopt).affine(false).track_running_stats(false))),
            "BatchNorm3d(2, eps=0.001, momentum=None, affine=False, track_running_stats=False)");
  EXPECT_EQ(norm3d_printed(nn::InstanceNorm3d(3)),
            "InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
  EXPECT_EQ(norm3d_printed(nn::InstanceNorm3d(
                nn::InstanceNorm3dOptions(5).eps(0.25).momentum(0.3).affine(true).track_running_stats(true))),
            "InstanceNorm3d(5, eps=0.25, momentum=0.3, affine=True, track_running_stats=True)");
  EXPECT_EQ(norm3d_printed(nn::LocalResponseNorm(2)), "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)");
  EXPECT_EQ(norm3d_printed(nn::LocalResponseNorm(nn::LocalResponseNormOptions(3).alpha(0.5).beta(2).k(1.5))),
            "LocalResponseNorm(3, alpha=0.5, beta=2.0, k=1.5)");
  EXPECT_EQ(norm3d_printed(nn::CrossMapLRN2d(3)), "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)");
  EXPECT_EQ(norm3d_printed(nn::CrossMapLRN2d(nn::CrossMapLRN2dOptions(5).alpha(0.3).beta(0.5).k(2))),
            "CrossMapLRN2d(5, alpha=0.3, beta=0.5, k=2)");
}

// What LibTorch 1.13 prints for the same modules (std::cout << torch::nn::BatchNorm3d(4), ...,
// compiled against the installed LibTorch), torch:: renamed graft::.
TEST(Norm3dPrint, LibTorchForms) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(norm3d_printed(nn::BatchNorm3d(4)),
            "graft::nn::BatchNorm3d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
  EXPECT_EQ(norm3d_printed(nn::BatchNorm3d(
                nn::BatchNorm3dOptions(2).eps(1e-3).momentum(std::nullopt).affine(false).track_running_stats(false))),
            "graft::nn::BatchNorm3d(2, eps=0.001, momentum=None, affine=false, track_running_stats=false)");
  EXPECT_EQ(norm3d_printed(nn::InstanceNorm3d(3)),
            "graft::nn::InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=false, track_running_stats=false)");
  EXPECT_EQ(norm3d_printed(nn::InstanceNorm3d(
                nn::InstanceNorm3dOptions(5).eps(0.25).momentum(0.3).affine(true).track_running_stats(true))),
            "graft::nn::InstanceNorm3d(5, eps=0.25, momentum=0.3, affine=true, track_running_stats=true)");
  EXPECT_EQ(norm3d_printed(nn::LocalResponseNorm(2)), "graft::nn::LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1)");
  EXPECT_EQ(norm3d_printed(nn::LocalResponseNorm(nn::LocalResponseNormOptions(3).alpha(0.5).beta(2).k(1.5))),
            "graft::nn::LocalResponseNorm(3, alpha=0.5, beta=2, k=1.5)");
  EXPECT_EQ(norm3d_printed(nn::CrossMapLRN2d(3)), "graft::nn::CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)");
  EXPECT_EQ(norm3d_printed(nn::CrossMapLRN2d(nn::CrossMapLRN2dOptions(5).alpha(0.3).beta(0.5).k(2))),
            "graft::nn::CrossMapLRN2d(5, alpha=0.3, beta=0.5, k=2)");
}

}  // namespace
}  // namespace graft::test
