// nn::functional::fused_linear and Sequential's Linear + activation fusion (Note [Fused linear +
// activation] in src/ops/linalg.cpp), against values worked out independently: a plain double loop
// for the forward and the bias gradient, central finite differences in float64 (gradcheck) for every
// first derivative and (gradgradcheck) second derivative, and the unfused pair of ops, which shares
// no code with the fused kernels, for float32 bits and for every module-level path.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;
using Act = F::FusedActivation;

const std::vector<Act> kAllActs = {Act::ReLU, Act::GELU, Act::GELUTanh, Act::Sigmoid, Act::Tanh};

std::string act_name(Act a) {
  switch (a) {
    case Act::ReLU: return "relu";
    case Act::GELU: return "gelu";
    case Act::GELUTanh: return "gelu_tanh";
    case Act::Sigmoid: return "sigmoid";
    case Act::Tanh: return "tanh";
  }
  return "?";
}

// The activation in double, written from its definition.
double act_ref(Act a, double z) {
  switch (a) {
    case Act::ReLU: return z > 0 ? z : 0.0;
    case Act::GELU: return 0.5 * z * std::erfc(-z / std::sqrt(2.0));
    case Act::GELUTanh: return 0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (z + 0.044715 * z * z * z)));
    case Act::Sigmoid: return 1.0 / (1.0 + std::exp(-z));
    case Act::Tanh: return std::tanh(z);
  }
  return 0;
}

// The two ops the fused one replaces.
Tensor unfused(const Tensor& x, const Tensor& w, const Tensor& b, Act a) {
  const Tensor z = F::linear(x, w, b);
  switch (a) {
    case Act::ReLU: return F::relu(z);
    case Act::GELU: return F::gelu(z);
    case Act::GELUTanh: return F::gelu(z, F::GELUFuncOptions().approximate("tanh"));
    case Act::Sigmoid: return F::sigmoid(z);
    case Act::Tanh: return F::tanh(z);
  }
  return z;
}

// act(x W^T + b) by a triple loop in double.
std::vector<double> reference_forward(const Tensor& x, const Tensor& w, const Tensor& b, Act a) {
  const std::vector<double> xv = values(x), wv = values(w), bv = b.defined() ? values(b) : std::vector<double>();
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double z = bv.empty() ? 0.0 : bv[static_cast<size_t>(o)];
      for (int64_t k = 0; k < in; ++k) z += xv[static_cast<size_t>(r * in + k)] * wv[static_cast<size_t>(o * in + k)];
      y.push_back(act_ref(a, z));
    }
  return y;
}

TEST(FusedLinear, ForwardMatchesAPlainDoubleLoop) {
  const Tensor x = uniform_sample({5, 7}, 1, -2, 2);
  const Tensor w = uniform_sample({4, 7}, 2, -1, 1);
  const Tensor b = uniform_sample({4}, 3, -1, 1);
  for (Act a : kAllActs) {
    SCOPED_TRACE(act_name(a));
    EXPECT_TRUE(all_close(F::fused_linear(x, w, b, a), reference_forward(x, w, b, a), {5, 4}, 1e-13, 1e-13));
    EXPECT_TRUE(all_close(F::fused_linear(x, w, Tensor(), a), reference_forward(x, w, Tensor(), a), {5, 4}, 1e-13, 1e-13));
    // float32 within float rounding of the double loop.
    const Tensor y32 = F::fused_linear(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), a);
    EXPECT_EQ(y32.dtype(), kFloat32);
    EXPECT_TRUE(all_close(y32, reference_forward(x, w, b, a), {5, 4}, 2e-6, 2e-6));
  }
}

TEST(FusedLinear, Float32GivesTheBitsOfTheUnfusedOps) {
  // Sizes that take the vectorised loops and their remainders; values cover both signs, zero
  // crossings of relu and the tails of gelu.
  const Tensor x = uniform_sample({37, 29}, 4, -3, 3).to(kFloat32);
  const Tensor w = uniform_sample({45, 29}, 5, -1, 1).to(kFloat32);
  const Tensor b = uniform_sample({45}, 6, -2, 2).to(kFloat32);
  for (Act a : kAllActs) {
    SCOPED_TRACE(act_name(a));
    EXPECT_TRUE(equal(F::fused_linear(x, w, b, a), unfused(x, w, b, a)));
    EXPECT_TRUE(equal(F::fused_linear(x, w, Tensor(), a), unfused(x, w, Tensor(), a)));
  }
}

TEST(FusedLinear, GradientsMatchFiniteDifferences) {
  for (Act a : kAllActs) {
    SCOPED_TRACE(act_name(a));
    // relu: a sample whose pre-activations stay away from 0, where the derivative jumps.
    const Tensor x = uniform_sample({4, 3}, 7, -1, 1).requires_grad_();
    const Tensor w = uniform_sample({5, 3}, 8, -1, 1).requires_grad_();
    const Tensor b = uniform_sample({5}, 9, -1, 1).requires_grad_();
    EXPECT_TRUE(autograd::gradcheck([a](const TensorList& in) { return F::fused_linear(in[0], in[1], in[2], a); },
                                    {x, w, b}));
    EXPECT_TRUE(autograd::gradcheck([a](const TensorList& in) { return F::fused_linear(in[0], in[1], Tensor(), a); },
                                    {x, w}));
    EXPECT_EQ(F::fused_linear(x, w, b, a).grad_fn()->name(),
                 a == Act::ReLU      ? "FusedLinearReluBackward0"
                 : a == Act::Sigmoid ? "FusedLinearSigmoidBackward0"
                 : a == Act::Tanh    ? "FusedLinearTanhBackward0"
                                     : "FusedLinearGeluBackward0");
  }
}

TEST(FusedLinear, SecondDerivativesMatchFiniteDifferences) {
  for (Act a : kAllActs) {
    SCOPED_TRACE(act_name(a));
    const Tensor x = uniform_sample({3, 2}, 10, -1, 1).requires_grad_();
    const Tensor w = uniform_sample({4, 2}, 11, -1, 1).requires_grad_();
    const Tensor b = uniform_sample({4}, 12, -1, 1).requires_grad_();
    EXPECT_TRUE(autograd::gradgradcheck(
        [a](const TensorList& in) { return F::fused_linear(in[0], in[1], in[2], a); }, {x, w, b}));
  }
}

TEST(FusedLinear, BiasGradientIsTheColumnSumOfTheActivationGradient) {
  // Plain loop: gb[o] = sum_r g[r, o] act'(z[r, o]), act' by a central difference in double.
  const int64_t rows = 300, in = 6, out = 40;  // several column chunks, many rows
  const Tensor x = uniform_sample({rows, in}, 13, -2, 2);
  const Tensor w = uniform_sample({out, in}, 14, -1, 1);
  const Tensor g = uniform_sample({rows, out}, 15, -1, 1);
  const Tensor z = F::linear(x, w, uniform_sample({out}, 16, -1, 1));
  const std::vector<double> zv = values(z), gv = values(g);
  for (Act a : kAllActs) {
    SCOPED_TRACE(act_name(a));
    std::vector<double> ref(static_cast<size_t>(out), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        const double zz = zv[static_cast<size_t>(r * out + o)], h = 1e-6;
        const double d = (act_ref(a, zz + h) - act_ref(a, zz - h)) / (2 * h);
        ref[static_cast<size_t>(o)] += gv[static_cast<size_t>(r * out + o)] * d;
      }
    for (DType dt : {kFloat64, kFloat32}) {
      Tensor b = uniform_sample({out}, 16, -1, 1).to(dt).requires_grad_();
      F::fused_linear(x.to(dt), w.to(dt), b, a).backward(g.to(dt));
      EXPECT_TRUE(all_close(b.grad(), ref, {out}, dt == kFloat64 ? 1e-7 : 1e-4, 1e-6));
    }
  }
}

TEST(FusedLinear, LeadingDimsNonContiguousInputsAndExpandedGradients) {
  const Tensor w = uniform_sample({3, 4}, 17, -1, 1);
  const Tensor b = uniform_sample({3}, 18, -1, 1);
  // (2, 5, 4) input: rows fold; a transposed input; a 1-D input.
  const Tensor x3 = uniform_sample({2, 5, 4}, 19, -1, 1);
  const Tensor xt = uniform_sample({4, 6}, 20, -1, 1).t();
  const Tensor x1 = uniform_sample({4}, 21, -1, 1);
  for (Act a : kAllActs) {
    SCOPED_TRACE(act_name(a));
    EXPECT_TRUE(all_close(F::fused_linear(x3, w, b, a), unfused(x3, w, b, a), 1e-14, 1e-14));
    EXPECT_EQ(F::fused_linear(x3, w, b, a).sizes().vec(), (std::vector<int64_t>{2, 5, 3}));
    EXPECT_TRUE(all_close(F::fused_linear(xt, w, b, a), unfused(xt, w, b, a), 1e-14, 1e-14));
    EXPECT_TRUE(all_close(F::fused_linear(x1, w, b, a), unfused(x1, w, b, a), 1e-14, 1e-14));
    EXPECT_EQ(F::fused_linear(x1, w, b, a).sizes().vec(), (std::vector<int64_t>{3}));
    // sum()'s gradient reaches the node as an expanded (stride 0) tensor.
    std::vector<Tensor> grads[2];
    for (int fused = 0; fused < 2; ++fused) {
      Tensor x = x3.clone().requires_grad_(), wr = w.clone().requires_grad_(), br = b.clone().requires_grad_();
      (fused ? F::fused_linear(x, wr, br, a) : unfused(x, wr, br, a)).sum().backward();
      grads[fused] = {x.grad(), wr.grad(), br.grad()};
    }
    for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(all_close(grads[1][k], grads[0][k], 1e-13, 1e-12)) << k;
  }
}

TEST(FusedLinear, SameBitsAtOneTwoAndThreeThreads) {
  // Big enough for the epilogue and the backward to be split (more than kElementwiseGrain elements).
  const int before = get_num_threads();
  const Tensor x = uniform_sample({600, 64}, 22, -1, 1).to(kFloat32);
  const Tensor w = uniform_sample({700, 64}, 23, -1, 1).to(kFloat32);
  const Tensor b = uniform_sample({700}, 24, -1, 1).to(kFloat32);
  const Tensor g = uniform_sample({600, 700}, 25, -1, 1).to(kFloat32);
  for (Act a : {Act::ReLU, Act::GELU}) {
    SCOPED_TRACE(act_name(a));
    std::vector<Tensor> first;
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      Tensor xr = x.clone().requires_grad_(), wr = w.clone().requires_grad_(), br = b.clone().requires_grad_();
      const Tensor y = F::fused_linear(xr, wr, br, a);
      y.backward(g);
      const std::vector<Tensor> got = {y.detach(), xr.grad(), wr.grad(), br.grad()};
      if (first.empty()) first = got;
      else
        for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(equal(got[k], first[k])) << threads << " threads, " << k;
    }
  }
  set_num_threads(before);
}

TEST(FusedLinear, OtherDtypesAndBroadcastBiasTakeTheTwoOps) {
  const Tensor w = uniform_sample({3, 4}, 26, -1, 1);
  Tensor x = uniform_sample({2, 4}, 27, -1, 1);
  const Tensor b1 = uniform_sample({1}, 28, -1, 1);  // broadcast bias: not fused, still right
  const Tensor y = F::fused_linear(x.requires_grad_(), w, b1, Act::Tanh);
  EXPECT_TRUE(all_close(y, unfused(x, w, b1, Act::Tanh), 1e-15, 1e-15));
  EXPECT_EQ(y.grad_fn()->name(), "TanhBackward0");
  // bfloat16 under autocast-style inputs: the two ops (and their rounding).
  const Tensor yb = F::fused_linear(x.detach().to(kBFloat16), w.to(kBFloat16), Tensor(), Act::ReLU);
  EXPECT_EQ(yb.dtype(), kBFloat16);
  EXPECT_TRUE(equal(yb, unfused(x.detach().to(kBFloat16), w.to(kBFloat16), Tensor(), Act::ReLU)));
}

TEST(FusedLinear, EmptyBatchAndZeroInFeatures) {
  for (Act a : kAllActs) {
    SCOPED_TRACE(act_name(a));
    // No rows: an empty output, and a zero bias gradient (an empty sum).
    Tensor w = uniform_sample({3, 4}, 31, -1, 1).to(kFloat32).requires_grad_();
    Tensor b = uniform_sample({3}, 32, -1, 1).to(kFloat32).requires_grad_();
    const Tensor y0 = F::fused_linear(zeros({0, 4}), w, b, a);
    EXPECT_EQ(y0.sizes().vec(), (std::vector<int64_t>{0, 3}));
    y0.sum().backward();
    EXPECT_TRUE(all_close(b.grad(), {0.0, 0.0, 0.0}, {3}, 0, 0));
    EXPECT_TRUE(all_close(w.grad(), std::vector<double>(12, 0.0), {3, 4}, 0, 0));
    // No input features: the product is 0, so y = act(b) in every row.
    const Tensor bias = uniform_sample({3}, 33, -1, 1);
    const std::vector<double> bv = values(bias);
    std::vector<double> ref;
    for (int r = 0; r < 2; ++r)
      for (double v : bv) ref.push_back(act_ref(a, v));
    EXPECT_TRUE(all_close(F::fused_linear(zeros({2, 0}, kFloat64), zeros({3, 0}, kFloat64), bias, a), ref, {2, 3},
                          1e-15, 1e-15));
  }
}

TEST(FusedLinear, BadShapesThrowAGraftError) {
  const Tensor w = zeros({3, 4});
  EXPECT_TRUE(throws_error([&] { F::fused_linear(zeros({2, 5}), w, Tensor(), Act::ReLU); },
                           {"fused_linear", "in_features", "[2, 5]"}));
  EXPECT_TRUE(throws_error([&] { F::fused_linear(zeros({2, 4}), w, zeros({2}), Act::ReLU); },
                           {"fused_linear", "bias of shape [3]"}));
  EXPECT_TRUE(throws_error([&] { F::fused_linear(zeros({2, 4}), zeros({3, 4, 1}), Tensor(), Act::ReLU); },
                           {"fused_linear", "2-D"}));
}

// ---- Sequential ----

nn::Sequential mlp(bool fusion) {
  manual_seed(3);
  nn::Sequential net(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 5), nn::GELU(), nn::Linear(5, 4), nn::Tanh(),
                     nn::Linear(4, 3), nn::Sigmoid(), nn::Linear(3, 2));
  net->set_fusion(fusion);
  return net;
}

TEST(SequentialFusion, SameOutputAndGradientsAsTheModulesOneByOne) {
  const Tensor x = uniform_sample({7, 6}, 29, -2, 2).to(kFloat32);
  nn::Sequential fused = mlp(true), plain = mlp(false);
  EXPECT_TRUE(fused->fusion());
  EXPECT_FALSE(plain->fusion());
  const Tensor yf = fused->forward(x), yp = plain->forward(x);
  EXPECT_TRUE(equal(yf, yp));  // float32: the fused epilogue has the ops' bits
  // Output of the last Linear: AddmmBackward0; its input came from the fused sigmoid layer.
  EXPECT_EQ(yf.grad_fn()->name(), "AddmmBackward0");
  EXPECT_EQ(yf.grad_fn()->next_edges[1].fn->name(), "FusedLinearSigmoidBackward0");
  EXPECT_EQ(yp.grad_fn()->next_edges[1].fn->name(), "SigmoidBackward0");
  yf.square().sum().backward();
  yp.square().sum().backward();
  const auto pf = fused->parameters(), pp = plain->parameters();
  ASSERT_EQ(pf.size(), pp.size());
  for (size_t k = 0; k < pf.size(); ++k) EXPECT_TRUE(all_close(pf[k].grad(), pp[k].grad(), 1e-6, 1e-5)) << k;
}

TEST(SequentialFusion, HooksAndSubclassesKeepTheModulesSeparate) {
  const Tensor x = uniform_sample({2, 6}, 30, -1, 1).to(kFloat32).requires_grad_();
  {
    // A hook on the activation: the pair runs as two modules, the hook sees the ReLU's call.
    nn::Sequential net(nn::Linear(6, 3), nn::ReLU(), nn::Linear(3, 2), nn::Tanh());
    int calls = 0;
    net[1]->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++calls; });
    const Tensor y = net->forward(x);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(y.grad_fn()->name(), "FusedLinearTanhBackward0");  // the second pair has no hook
    EXPECT_EQ(y.grad_fn()->next_edges[0].fn->name(), "ReluBackward0");
    // A hook on the Linear: the same.
    nn::Sequential net2(nn::Linear(6, 3), nn::Sigmoid());
    net2[0]->register_forward_pre_hook([&](nn::Module&, const Tensor&) { ++calls; });
    EXPECT_EQ(net2->forward(x).grad_fn()->name(), "SigmoidBackward0");
    EXPECT_EQ(calls, 2);
  }
  {
    struct MyLinear : nn::LinearImpl {
      using nn::LinearImpl::LinearImpl;
      Tensor forward(const Tensor& in) { return nn::LinearImpl::forward(in) * 2.0; }
    };
    nn::Sequential net(std::make_shared<MyLinear>(6, 3), nn::ReLU());
    const Tensor y = net->forward(x);
    EXPECT_EQ(y.grad_fn()->name(), "ReluBackward0");
    const auto& lin = net->at<nn::LinearImpl>(0);
    EXPECT_TRUE(all_close(y, F::relu(F::linear(x, lin.weight, lin.bias) * 2.0), 1e-6, 1e-6));
  }
}

}  // namespace
}  // namespace graft::test
