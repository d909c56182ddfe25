// linear_cross_entropy (Note [Linear cross-entropy in chunks] in src/ops/linear_cross_entropy.cpp)
// against the plain composition F::cross_entropy(F::linear(x, W, b), t), whose ops it does not use:
// the loss and the three gradients in float64 and float32, every reduction, rows that the chunk does
// not divide, ignored rows, label smoothing; gradcheck and gradgradcheck in float64; the peak memory
// of a step against the composition's, bounded by hand; and the meta device's plan of it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace lce_test {

namespace F = nn::functional;

struct LceRun {
  std::vector<double> loss, gx, gw, gb;
};

// The loss and the gradients of x, W, b (b undefined: no bias) of either route; reduction none
// weighs the rows with `row_w` so that each row's gradient differs.
LceRun lce_run(bool fused, const Tensor& x0, const Tensor& w0, const Tensor& b0, const Tensor& t, Reduction red,
               double eps, int64_t chunk, const Tensor& row_w) {
  Tensor x = x0.detach().clone().requires_grad_(), w = w0.detach().clone().requires_grad_();
  Tensor b = b0.defined() ? b0.detach().clone().requires_grad_() : Tensor();
  const Tensor loss =
      fused ? F::linear_cross_entropy(
                  x, w, b, t, F::LinearCrossEntropyFuncOptions().reduction(red).label_smoothing(eps).chunk_size(chunk))
            : F::cross_entropy(F::linear(x, w, b), t, F::CrossEntropyFuncOptions().reduction(red).label_smoothing(eps));
  (red == Reduction::None ? (loss * row_w.to(loss.dtype())).sum() : loss).backward();
  return {values(loss), values(x.grad()), values(w.grad()), b.defined() ? values(b.grad()) : std::vector<double>()};
}

void expect_near_all(const std::vector<double>& a, const std::vector<double>& e, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), e.size()) << what;
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_NEAR(a[k], e[k], tol * (1.0 + std::abs(e[k]))) << what << " element " << k;
}

}  // namespace lce_test

TEST(LinearCrossEntropy, EqualsTheCompositionInFloat64AndFloat32) {
  namespace L = lce_test;
  const int64_t N = 37, in = 6, V = 11, chunk = 8;  // 37 = 4 chunks of 8 and one of 5
  const Tensor x = uniform_sample({N, in}, 401, -1.5, 1.5), w = uniform_sample({V, in}, 402, -1, 1);
  const Tensor b = uniform_sample({V}, 403, -0.5, 0.5), row_w = uniform_sample({N}, 404, 0.5, 1.5);
  std::vector<double> tv(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i)
    tv[static_cast<size_t>(i)] = i % 5 == 2 ? -100.0 : static_cast<double>((7 * i + 3) % V);
  const Tensor t = make(tv, {N}, kInt64);
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      for (double eps : {0.0, 0.1}) {
        for (bool bias : {true, false}) {
          const std::string what = std::string(dtype_name(dt)) + " " + reduction_name(red) + " eps " +
                                   std::to_string(eps) + (bias ? " bias" : " no bias");
          const Tensor bb = bias ? b.to(dt) : Tensor();
          const L::LceRun f = L::lce_run(true, x.to(dt), w.to(dt), bb, t, red, eps, chunk, row_w);
          const L::LceRun c = L::lce_run(false, x.to(dt), w.to(dt), bb, t, red, eps, chunk, row_w);
          L::expect_near_all(f.loss, c.loss, tol, what + " loss");
          L::expect_near_all(f.gx, c.gx, tol, what + " grad input");
          L::expect_near_all(f.gw, c.gw, tol, what + " grad weight");
          L::expect_near_all(f.gb, c.gb, tol, what + " grad bias");
          if (red == Reduction::None) {
            ASSERT_EQ(f.loss.size(), static_cast<size_t>(N));
            EXPECT_EQ(f.loss[2], 0.0) << what << ": an ignored row";
          }
        }
      }
    }
  }
}

TEST(LinearCrossEntropy, LeadingDimsAndNodeName) {
  namespace F = nn::functional;
  // (2, 5, 4) input, (2, 5) target: rows folded; kNone gives the target's shape.
  const Tensor x = uniform_sample({2, 5, 4}, 411, -1, 1).requires_grad_(), w = uniform_sample({7, 4}, 412, -1, 1);
  const Tensor t = tensor<int64_t>({{0, 6, 3, -100, 2}, {5, 5, 1, 0, 4}});
  const Tensor none = F::linear_cross_entropy(
      x, w, Tensor(), t, F::LinearCrossEntropyFuncOptions().reduction(Reduction::None).chunk_size(3));
  EXPECT_EQ(none.sizes(), t.sizes());
  const Tensor ref = F::cross_entropy(F::linear(x, w).reshape({10, 7}), t.reshape({10}),
                                      F::CrossEntropyFuncOptions().reduction(Reduction::None));
  lce_test::expect_near_all(values(none), values(ref), 1e-12, "leading dims");
  const Tensor mean = F::linear_cross_entropy(x, w, Tensor(), t, F::LinearCrossEntropyFuncOptions().chunk_size(3));
  ASSERT_TRUE(mean.grad_fn());
  EXPECT_EQ(mean.grad_fn()->name(), "LinearCrossEntropyBackward0");
}

TEST(LinearCrossEntropy, GradcheckAndGradgradcheckInFloat64) {
  namespace F = nn::functional;
  const Tensor t = tensor<int64_t>({3, 0, -100, 2, 1});
  for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    for (double eps : {0.0, 0.2}) {
      auto fn = [red, eps, t](const TensorList& a) {
        return F::linear_cross_entropy(
            a[0], a[1], a[2], t, F::LinearCrossEntropyFuncOptions().reduction(red).label_smoothing(eps).chunk_size(2));
      };
      const TensorList in{uniform_sample({5, 3}, 421, -1, 1).requires_grad_(),
                          uniform_sample({4, 3}, 422, -1, 1).requires_grad_(),
                          uniform_sample({4}, 423, -1, 1).requires_grad_()};
      EXPECT_TRUE(autograd::gradcheck(fn, in)) << reduction_name(red) << " eps " << eps;
      EXPECT_TRUE(autograd::gradgradcheck(fn, in)) << reduction_name(red) << " eps " << eps;
    }
  }
}

// The memory test's shapes: N rows of `in` features, V classes, chunks of `chunk` rows, float32.
TEST(LinearCrossEntropy, PeakMemoryIsOneChunkOfLogitsNotAllOfThem) {
  namespace F = nn::functional;
  const int64_t N = 2048, in = 64, V = 8192, chunk = 256, f = 4;
  Tensor x = uniform_sample({N, in}, 431, -1, 1).to(kFloat32).requires_grad_();
  Tensor w = uniform_sample({V, in}, 432, -0.1, 0.1).to(kFloat32).requires_grad_();
  Tensor b = uniform_sample({V}, 433, -0.1, 0.1).to(kFloat32).requires_grad_();
  const Tensor t = randint(0, V, {N}, TensorOptions(kInt64));
  auto step_peak = [&](bool fused) {
    for (Tensor* p : {&x, &w, &b}) p->mutable_grad() = Tensor();
    memory::reset_peak_stats();
    const int64_t before = memory::stats().allocated_bytes;
    {
      const Tensor loss =
          fused ? F::linear_cross_entropy(x, w, b, t, F::LinearCrossEntropyFuncOptions().chunk_size(chunk))
                : F::cross_entropy(F::linear(x, w, b), t);
      loss.backward();
    }
    return memory::stats().peak_allocated_bytes - before;
  };
  const int64_t composed = step_peak(false);
  const int64_t fused = step_peak(true);
  // By hand: the fused step holds at most lse (N), the loss and its gradient (one value each), the
  // three gradients (N x in, V x in, V) and one chunk's logits (chunk x V), all float32.
  const int64_t fused_bound = f * (N + 1 + 1 + N * in + V * in + V + chunk * V);
  EXPECT_LE(fused, fused_bound);
  EXPECT_GE(fused, f * chunk * V);  // the scratch is there (a sanity check of the measurement)
  // The composition holds the logits (N x V) from forward to backward: the saving is at least
  // those minus one chunk's.
  EXPECT_GE(composed - fused, f * (N * V - chunk * V)) << "composed " << composed << " fused " << fused;
  std::printf("[ linear_cross_entropy ] peak of a step: composed %lld bytes, fused %lld bytes (bound %lld)\n",
              static_cast<long long>(composed), static_cast<long long>(fused), static_cast<long long>(fused_bound));
}

TEST(LinearCrossEntropy, MetaPlanAllocatesWhatTheCpuRunAllocates) {
  namespace F = nn::functional;
  const int64_t N = 300, in = 16, V = 500, chunk = 64;
  for (Reduction red : {Reduction::Mean, Reduction::None}) {
    auto step = [&](Device dev) {
      Tensor x = uniform_sample({N, in}, 441, -1, 1).to(kFloat32).to(dev).requires_grad_();
      Tensor w = uniform_sample({V, in}, 442, -1, 1).to(kFloat32).to(dev).requires_grad_();
      Tensor b = uniform_sample({V}, 443, -1, 1).to(kFloat32).to(dev).requires_grad_();
      const Tensor t = full({N}, 3, kInt64).to(dev);
      memory::reset_peak_stats();
      const int64_t before = memory::stats(dev).allocated_bytes;
      const Tensor loss =
          F::linear_cross_entropy(x, w, b, t, F::LinearCrossEntropyFuncOptions().reduction(red).chunk_size(chunk));
      const Shape shape(loss.sizes());
      (red == Reduction::None ? loss.sum() : loss).backward();
      EXPECT_EQ(x.grad().sizes(), x.sizes());
      EXPECT_EQ(w.grad().sizes(), w.sizes());
      EXPECT_EQ(b.grad().sizes(), b.sizes());
      return std::make_pair(shape, memory::stats(dev).peak_allocated_bytes - before);
    };
    const auto cpu = step(kCPU);
    const auto meta = step(kMeta);
    EXPECT_EQ(meta.first, cpu.first) << reduction_name(red);
    EXPECT_EQ(meta.second, cpu.second) << reduction_name(red);
    EXPECT_GE(cpu.second, 4 * chunk * V) << reduction_name(red);  // the chunk's scratch is counted
  }
}

}  // namespace graft::test
