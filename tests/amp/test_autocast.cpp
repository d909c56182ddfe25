// Autocast (Note [Autocast] in graft/ops/autocast.h): the guard's state, the lower precision
// products against float64 references computed from the rounded operands (forward and backward,
// double backward, finite differences for conv2d), what is saved, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

// x rounded to dt and widened to float64: the values a lower precision op multiplies.
Tensor rounded64(const Tensor& x, DType dt) { return x.detach().to(dt).to(kFloat64); }

Tensor rnd(IntArrayRef shape, uint64_t seed, double lo = -1, double hi = 1) {
  return uniform_sample(shape, seed, lo, hi).to(kFloat32);
}

TEST(Autocast, GuardNestsAndRestores) {
  EXPECT_FALSE(is_autocast_enabled());
  {
    AutocastGuard a(kBFloat16);
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_EQ(get_autocast_dtype(), kBFloat16);
    {
      autocast::Guard b(kHalf);
      EXPECT_EQ(get_autocast_dtype(), kHalf);
      {
        AutocastGuard off(kBFloat16, /*enabled=*/false);
        EXPECT_FALSE(is_autocast_enabled());
      }
      EXPECT_TRUE(is_autocast_enabled());
    }
    EXPECT_EQ(get_autocast_dtype(), kBFloat16);
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_TRUE(throws_error([] { AutocastGuard g(kFloat64); }, {"autocast", "bfloat16", "float64"}));
  EXPECT_FALSE(is_autocast_enabled());
}

TEST(Autocast, MmRoundsOperandsAndAccumulatesInFloat32) {
  for (DType h : {kBFloat16, kFloat16}) {
    const Tensor a = rnd({5, 7}, 1).requires_grad_(), b = rnd({7, 3}, 2).requires_grad_();
    Tensor y;
    {
      AutocastGuard g(h);
      y = mm(a, b);
    }
    EXPECT_EQ(y.dtype(), h);
    ASSERT_TRUE(y.grad_fn());
    EXPECT_EQ(y.grad_fn()->name(), "MmBackward0");
    // forward: the float64 product of the rounded operands, rounded to h (float32 accumulation can
    // only move a value across an h rounding boundary: allow one h ulp, 2^-8 relative for bf16)
    const Tensor ref = mm(rounded64(a, h), rounded64(b, h));
    EXPECT_TRUE(all_close(y.to(kFloat64), ref, 1e-6, h == kBFloat16 ? 1.0 / 128 : 1.0 / 1024));
    EXPECT_TRUE(all_close(y.to(kFloat64), ref.to(h).to(kFloat64), 0, h == kBFloat16 ? 1.0 / 128 : 1.0 / 1024));
    // backward: c rounded to h is the gradient reaching y (it has y's dtype); d a = c_h @ b_h^T and
    // d b = a_h^T @ c_h, in float32 and returned as float32 (the parameters' dtype)
    const Tensor c = rnd({5, 3}, 3);
    (y.to(kFloat32) * c).sum().backward();
    const Tensor ch = rounded64(c, h);
    EXPECT_EQ(a.grad().dtype(), kFloat32);
    EXPECT_EQ(b.grad().dtype(), kFloat32);
    EXPECT_TRUE(all_close(a.grad(), mm(ch, rounded64(b, h).t()), 1e-6, 1e-5));
    EXPECT_TRUE(all_close(b.grad(), mm(rounded64(a, h).t(), ch), 1e-6, 1e-5));
  }
}

TEST(Autocast, LinearWithBiasAndLeadingDims) {
  const Tensor x = rnd({2, 3, 8}, 4).requires_grad_();
  const Tensor w = rnd({5, 8}, 5).requires_grad_(), bias = rnd({5}, 6).requires_grad_();
  Tensor y;
  {
    AutocastGuard g(kBFloat16);
    y = F::linear(x, w, bias);
  }
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 5}));
  const Tensor ref = F::linear(rounded64(x, kBFloat16), rounded64(w, kBFloat16), rounded64(bias, kBFloat16));
  EXPECT_TRUE(all_close(y.to(kFloat64), ref, 1e-6, 1.0 / 128));
  const Tensor c = rnd({2, 3, 5}, 7);
  (y.to(kFloat32) * c).sum().backward();
  const Tensor ch = rounded64(c, kBFloat16);
  EXPECT_TRUE(all_close(x.grad(), matmul(ch, rounded64(w, kBFloat16)), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(w.grad(), mm(ch.reshape({6, 5}).t(), rounded64(x, kBFloat16).reshape({6, 8})), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(bias.grad(), ch.sum({0, 1}), 1e-6, 1e-5));
  // the weight gradient is float32 and laid out like the weight
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_TRUE(w.grad().is_contiguous());
  // 2-D and 1-D inputs, no bias
  {
    AutocastGuard g(kBFloat16);
    EXPECT_EQ(F::linear(rnd({4, 8}, 8), w).sizes().vec(), (std::vector<int64_t>{4, 5}));
    const Tensor v = F::linear(rnd({8}, 9), w, bias);
    EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{5}));
    EXPECT_EQ(v.dtype(), kBFloat16);
  }
}

TEST(Autocast, AddmmWithScalarsAndHalfInputs) {
  const Tensor in = rnd({1, 3}, 10).requires_grad_(), m1 = rnd({4, 6}, 11).requires_grad_(),
               m2 = rnd({6, 3}, 12).requires_grad_();
  Tensor y;
  {
    AutocastGuard g(kBFloat16);
    // mixing a bfloat16 operand with float32 ones is what autocast is for
    y = addmm(in, m1.to(kBFloat16), m2, 0.5, 2.0);
  }
  EXPECT_EQ(y.dtype(), kBFloat16);
  const Tensor ref = addmm(rounded64(in, kBFloat16), rounded64(m1, kBFloat16), rounded64(m2, kBFloat16), 0.5, 2.0);
  EXPECT_TRUE(all_close(y.to(kFloat64), ref, 1e-6, 1.0 / 128));
  const Tensor c = rnd({4, 3}, 13);
  (y.to(kFloat32) * c).sum().backward();
  const Tensor ch = rounded64(c, kBFloat16);
  EXPECT_TRUE(all_close(in.grad(), (ch * 0.5).sum({0}, true), 1e-6, 1e-5));
  // m1 reached the product through a bfloat16 tensor: its gradient was rounded to bfloat16 there
  EXPECT_TRUE(all_close(m1.grad(), (mm(ch, rounded64(m2, kBFloat16).t()) * 2.0).to(kBFloat16).to(kFloat64), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(m2.grad(), mm(rounded64(m1, kBFloat16).t(), ch) * 2.0, 1e-6, 1e-5));
}

TEST(Autocast, BmmAndBatchedMatmul) {
  const Tensor a = rnd({2, 3, 4}, 14).requires_grad_(), b = rnd({4, 5}, 15).requires_grad_();
  Tensor y;
  {
    AutocastGuard g(kBFloat16);
    y = matmul(a, b);  // folds into one mm
    const Tensor z = bmm(a, b.expand({2, 4, 5}));
    EXPECT_EQ(z.dtype(), kBFloat16);
    EXPECT_TRUE(all_close(z.to(kFloat64), y.to(kFloat64), 0, 0));
    const Tensor m = matmul(a.unsqueeze(0), b.expand({3, 1, 4, 5}));  // broadcast batch dims: bmm
    EXPECT_EQ(m.sizes().vec(), (std::vector<int64_t>{3, 2, 3, 5}));
    EXPECT_TRUE(all_close(m.select(0, 1).to(kFloat64), y.to(kFloat64), 0, 0));
  }
  const Tensor c = rnd({2, 3, 5}, 16);
  Tensor z;
  {
    AutocastGuard g(kBFloat16);
    z = bmm(a, b.expand({2, 4, 5}).contiguous());
  }
  (z.to(kFloat32) * c).sum().backward();
  const Tensor ch = rounded64(c, kBFloat16);
  EXPECT_TRUE(all_close(a.grad(), matmul(ch, rounded64(b, kBFloat16).t()), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(b.grad(), matmul(rounded64(a, kBFloat16).transpose(1, 2), ch).sum(0), 1e-6, 1e-5));
}

TEST(Autocast, Conv2dAgainstFloat64OnRoundedOperandsAndFiniteDifferences) {
  const Tensor x = rnd({2, 3, 6, 5}, 17).requires_grad_(), w = rnd({4, 3, 3, 3}, 18).requires_grad_(),
               b = rnd({4}, 19).requires_grad_();
  const auto opts = F::Conv2dFuncOptions().stride(2).padding(1);
  Tensor y;
  {
    AutocastGuard g(kBFloat16);
    y = F::conv2d(x, w, b, opts);
  }
  EXPECT_EQ(y.dtype(), kBFloat16);
  // The reference: graft's float64 conv2d at the rounded operands, with float64 autograd.
  const Tensor x64 = rounded64(x, kBFloat16).requires_grad_(), w64 = rounded64(w, kBFloat16).requires_grad_(),
               b64 = rounded64(b, kBFloat16).requires_grad_();
  const Tensor ref = F::conv2d(x64, w64, b64, opts);
  EXPECT_TRUE(all_close(y.to(kFloat64), ref, 1e-6, 1.0 / 128));
  const Tensor c = rnd(y.sizes(), 20);
  (y.to(kFloat32) * c).sum().backward();
  (ref * rounded64(c, kBFloat16)).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), x64.grad(), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(w.grad(), w64.grad(), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(b.grad(), b64.grad(), 1e-6, 1e-5));
  // ... and that reference is the derivative of the bilinear map in the rounded operands, by finite
  // differences (the rounding itself is piecewise constant: its derivative is taken as the identity).
  EXPECT_TRUE(autograd::gradcheck([&](const TensorList& in) { return F::conv2d(in[0], in[1], in[2], opts); },
                                  {x64.detach().requires_grad_(), w64.detach().requires_grad_(),
                                   b64.detach().requires_grad_()}));
  // a 3-D input, and float16
  {
    AutocastGuard g(kHalf);
    const Tensor y3 = F::conv2d(x.select(0, 1), w, b, opts);
    EXPECT_EQ(y3.dtype(), kHalf);
    const Tensor ref16 = F::conv2d(rounded64(x, kHalf).select(0, 1), rounded64(w, kHalf), rounded64(b, kHalf), opts);
    EXPECT_TRUE(all_close(y3.to(kFloat64), ref16, 1e-6, 1.0 / 1024));
  }
}

TEST(Autocast, DoubleBackwardThroughMm) {
  const Tensor a = rnd({3, 4}, 21).requires_grad_(), b = rnd({4, 2}, 22).requires_grad_();
  const Tensor c = rnd({3, 2}, 23), d = rnd({3, 4}, 24);
  Tensor y;
  {
    AutocastGuard g(kBFloat16);
    y = mm(a, b);
  }
  // ga = c_h @ b_h^T (recorded); sum(d * ga) differentiated in b is d^T @ c_h (straight through)
  const Tensor ga = autograd::grad({(y.to(kFloat32) * c).sum()}, {a}, {}, true, /*create_graph=*/true)[0];
  EXPECT_TRUE(ga.requires_grad());
  (ga * d).sum().backward();
  EXPECT_TRUE(all_close(b.grad(), mm(d.to(kFloat64).t(), rounded64(c, kBFloat16)), 1e-6, 1e-5));
}

TEST(Autocast, ReluAndCrossEntropyOnHalfTensors) {
  const Tensor x = make({-1.5, 0, 2.25, -0.0, 3}, {5}, kFloat32).requires_grad_();
  const Tensor h = x.to(kBFloat16);
  const Tensor r = relu(h);
  EXPECT_EQ(r.dtype(), kBFloat16);
  EXPECT_EQ(values(r.to(kFloat64)), (std::vector<double>{0, 0, 2.25, 0, 3}));
  (r.to(kFloat32) * make({1, 2, 3, 4, 5}, {5}, kFloat32)).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 3, 0, 5}));
  // create_graph through the half relu
  const Tensor x2 = make({-1, 2}, {2}, kFloat32).requires_grad_();
  const Tensor gx = autograd::grad({relu(x2.to(kBFloat16)).to(kFloat32).pow(2).sum()}, {x2}, {}, true, true)[0];
  EXPECT_EQ(values(gx), (std::vector<double>{0, 4}));

  // cross_entropy is a float32 op under autocast: bfloat16 logits in, float32 loss out
  const Tensor logits = rnd({4, 3}, 25).requires_grad_();
  const Tensor target = make({0, 2, 1, 2}, {4}, kInt64);
  Tensor loss;
  {
    AutocastGuard g(kBFloat16);
    loss = F::cross_entropy(logits.to(kBFloat16), target);
  }
  EXPECT_EQ(loss.dtype(), kFloat32);
  const Tensor l64 = F::cross_entropy(rounded64(logits, kBFloat16), target);
  EXPECT_NEAR(loss.item<double>(), l64.item<double>(), 1e-6);
  loss.backward();
  EXPECT_EQ(logits.grad().dtype(), kFloat32);
  // outside autocast a half input has no kernel: a clear error
  EXPECT_TRUE(throws_error([&] { F::cross_entropy(logits.to(kBFloat16), target); }, {"bfloat16"}));
}

TEST(Autocast, SmallCnnStep) {
  // conv2d -> relu -> max_pool2d -> flatten -> linear -> cross_entropy, all under the guard
  manual_seed(0);
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 4, 3)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
                       nn::Flatten(), nn::Linear(4 * 3 * 3, 3));
  const Tensor x = rnd({5, 1, 8, 8}, 41);
  const Tensor target = make({0, 1, 2, 1, 0}, {5}, kInt64);
  Tensor loss, pooled;
  {
    AutocastGuard g(kBFloat16);
    const Tensor c = model->forward(x);  // through every layer
    EXPECT_EQ(c.dtype(), kBFloat16);
    loss = F::cross_entropy(c, target);
    pooled = F::max_pool2d(relu(F::conv2d(x, model->parameters()[0], model->parameters()[1])), 2);
  }
  EXPECT_EQ(pooled.dtype(), kBFloat16);
  // pooling a bfloat16 tensor is exact: the same as pooling its float32 values
  const Tensor conv32 = relu(F::conv2d(rounded64(x, kBFloat16), rounded64(model->parameters()[0], kBFloat16),
                                       rounded64(model->parameters()[1], kBFloat16)));
  EXPECT_TRUE(all_close(pooled.to(kFloat64), F::max_pool2d(conv32, 2).detach(), 1e-6, 1.0 / 128));
  loss.backward();
  for (const auto& p : model->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().dtype(), kFloat32);
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0.0);
  }
}

TEST(Autocast, WhatIsNotAutocastAndErrors) {
  AutocastGuard g(kBFloat16);
  // float64 operands are not autocast
  EXPECT_EQ(mm(rnd({2, 2}, 26).to(kFloat64), rnd({2, 2}, 27).to(kFloat64)).dtype(), kFloat64);
  EXPECT_TRUE(throws_error([] { mm(rnd({2, 2}, 26).to(kFloat64), rnd({2, 2}, 27)); }, {"mm", "float64", "float32"}));
  // the arithmetic and activations take the bfloat16 outputs (through float32, Note [Half-precision
  // compute]); an op without a half-precision path names itself and the way out
  const Tensor y = mm(rnd({2, 2}, 28), rnd({2, 2}, 29));
  EXPECT_EQ((y + y).dtype(), kBFloat16);
  EXPECT_EQ(tanh(y).dtype(), kBFloat16);
  EXPECT_TRUE(throws_error([&] { pow(y, 3.0); }, {"pow", "bfloat16", "AutocastGuard"}));
  EXPECT_EQ((y + rnd({2, 2}, 30)).dtype(), kFloat32);  // promotion to float32 works
  EXPECT_TRUE(throws_error([] { mm(rnd({2, 3}, 31), rnd({2, 3}, 32)); }, {"mm", "[2, 3]"}));
}

TEST(Autocast, HalfOperandsOutsideAutocast) {
  const Tensor a = rnd({3, 4}, 33), b = rnd({4, 2}, 34);
  const Tensor y = mm(a.to(kBFloat16), b.to(kBFloat16));
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_TRUE(all_close(y.to(kFloat64), mm(rounded64(a, kBFloat16), rounded64(b, kBFloat16)), 1e-6, 1.0 / 128));
  EXPECT_TRUE(throws_error([&] { mm(a.to(kBFloat16), b); }, {"mm", "same dtype", "bfloat16", "float32"}));
  EXPECT_TRUE(throws_error([&] { mm(a.to(kBFloat16), b.to(kHalf)); }, {"mm", "same dtype"}));
}

TEST(Autocast, SavesNoWeightCopiesAndHalfActivations) {
  // A 1024 x 1024 float32 weight (4 MiB): the graph must not hold a 2 MiB bfloat16 copy of it.
  const Tensor w = rnd({1024, 1024}, 35).requires_grad_();
  const Tensor x = rnd({8, 1024}, 36);
  const int64_t before = memory::stats().allocated_bytes;
  Tensor y;
  {
    AutocastGuard g(kBFloat16);
    y = F::linear(x, w);
  }
  // alive now: y (8 x 1024 bfloat16, 16 KiB) and nothing of the weight's size
  EXPECT_LT(memory::stats().allocated_bytes - before, 64 * 1024);
  // A float32 activation (not a leaf) is saved as its bfloat16 copy: 2 bytes per element.
  const Tensor big = rnd({512, 1024}, 37).requires_grad_();
  const Tensor act = big * 1.0;  // 2 MiB float32, produced by an op
  const int64_t with_act = memory::stats().allocated_bytes;
  Tensor z;
  {
    AutocastGuard g(kBFloat16);
    z = mm(act, rnd({1024, 4}, 38));
  }
  const int64_t saved = memory::stats().allocated_bytes - with_act;  // the bf16 copy (1 MiB) + z
  EXPECT_GE(saved, 512 * 1024 * 2);
  EXPECT_LT(saved, 512 * 1024 * 2 + 64 * 1024);
  (z.to(kFloat32).sum() + y.to(kFloat32).sum()).backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(big.grad().dtype(), kFloat32);
}

TEST(Autocast, InPlaceChangeOfASavedLeafIsCaught) {
  const Tensor w = rnd({3, 3}, 39).requires_grad_();
  const Tensor x = rnd({2, 3}, 40).requires_grad_();  // so that backward needs w
  Tensor y;
  {
    AutocastGuard g(kBFloat16);
    y = F::linear(x, w);
  }
  {
    NoGradGuard ng;
    Tensor(w).add_(1.0);
  }
  EXPECT_TRUE(throws_error([&] { y.to(kFloat32).sum().backward(); }, {"modified by an inplace"}));
}

}  // namespace
}  // namespace graft::test
