// Matrix products and conv2d split over graft's threads (Note [Splitting a matrix product] in
// src/runtime/blas.cpp, Note [Convolution over threads] in src/kernels/conv.cpp):
//  - mm / addmm against a plain double loop, for every transpose combination, odd sizes and leading
//    dimensions larger than the rows (slices of wider matrices), on products large enough to split;
//  - the same bits at 1, 2 and 3 threads, for the products and for conv2d forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.dtype() == y.dtype() && x.sizes() == y.sizes() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.numel()) * x.element_size()) == 0;
}

// A (rows, cols) matrix whose storage is (rows, cols + pad) or, transposed, (cols, rows + pad): the
// product reads it through a leading dimension that is not its width.
Tensor operand(int64_t rows, int64_t cols, bool transposed, int64_t pad, DType dtype) {
  if (!transposed) return randn({rows, cols + pad}, TensorOptions().dtype(dtype)).narrow(1, pad, cols);
  return randn({cols, rows + pad}, TensorOptions().dtype(dtype)).narrow(1, 0, rows).t();
}

// c = a @ b in double, element by element, and sum |a||b| per element for the tolerance. B is
// transposed first so that the inner loop reads both operands in order (the sanitizer build runs
// this loop unoptimised).
void reference(const Tensor& a_, const Tensor& b_, std::vector<double>& c, std::vector<double>& mag) {
  const Tensor a = a_.to(kFloat64).contiguous(), bt = b_.to(kFloat64).t().contiguous();
  const int64_t n = a.size(0), k = a.size(1), m = bt.size(0);
  const double* pa = a.data_ptr<double>();
  const double* pbt = bt.data_ptr<double>();
  c.assign(static_cast<size_t>(n * m), 0.0);
  mag.assign(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const double* row = pa + i * k;
      const double* col = pbt + j * k;
      double s = 0, g = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = row[p] * col[p];
        s += t;
        g += std::abs(t);
      }
      c[static_cast<size_t>(i * m + j)] = s;
      mag[static_cast<size_t>(i * m + j)] = g;
    }
}

// addmm's reference from the product's: beta * c0 + alpha * (a @ b), and its magnitude.
void reference_addmm(const std::vector<double>& ab, const std::vector<double>& ab_mag, const Tensor& c0_, double alpha,
                     double beta, std::vector<double>& c, std::vector<double>& mag) {
  const Tensor c0 = c0_.to(kFloat64).contiguous();
  const double* p0 = c0.data_ptr<double>();
  c.resize(ab.size());
  mag.resize(ab.size());
  for (size_t i = 0; i < ab.size(); ++i) {
    c[i] = alpha * ab[i] + beta * p0[i];
    mag[i] = std::abs(alpha) * ab_mag[i] + std::abs(beta * p0[i]);
  }
}

void expect_close(const Tensor& got_, const std::vector<double>& want, const std::vector<double>& mag, double rtol,
                  const std::string& what) {
  const Tensor got = got_.to(kFloat64).contiguous();
  const double* p = got.data_ptr<double>();
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(p[i] - want[i]) <= rtol * mag[i] + 1e-12)) {
      if (bad++ < 3) ADD_FAILURE() << what << ": element " << i << " is " << p[i] << ", want " << want[i];
    }
  EXPECT_EQ(bad, 0) << what;
}

struct MatmulShape {
  int64_t n, k, m;  // (n, k) @ (k, m); n * k * m >= 16 Mi multiply-adds, so it splits at 2 threads
};

TEST(ParallelGemm, EveryTransposeAgainstAPlainLoop) {
  ThreadCount keep;
  manual_seed(7);
  // Wide (split by columns), tall (split by rows), and sizes that are not multiples of 16.
  const MatmulShape shapes[] = {{131, 301, 517}, {523, 257, 131}, {257, 263, 259}};
  for (DType dtype : {kFloat32, kFloat64})
    for (const MatmulShape& s : shapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          for (int64_t pad : {0, 3}) {
            const Tensor a = operand(s.n, s.k, ta, pad, dtype), b = operand(s.k, s.m, tb, pad, dtype);
            const Tensor c0 = randn({s.n, s.m}, TensorOptions().dtype(dtype));
            std::vector<double> want, mag, want2, mag2;
            reference(a, b, want, mag);
            reference_addmm(want, mag, c0, -0.5, 0.75, want2, mag2);
            const double rtol = dtype == kFloat32 ? 2e-6 * std::sqrt(static_cast<double>(s.k)) : 1e-13;
            const std::string shape = std::string(dtype_name(dtype)) + " " + std::to_string(s.n) + "x" +
                                      std::to_string(s.k) + "x" + std::to_string(s.m) + (ta ? " A^T" : " A") +
                                      (tb ? " B^T" : " B") + " pad " + std::to_string(pad);
            std::vector<Tensor> mms, addmms;
            for (int threads : {1, 2, 3}) {
              set_num_threads(threads);
              const std::string what = shape + " threads " + std::to_string(threads);
              mms.push_back(mm(a, b));
              addmms.push_back(addmm(c0, a, b, 0.75, -0.5));
              expect_close(mms.back(), want, mag, rtol, "mm " + what);
              expect_close(addmms.back(), want2, mag2, rtol, "addmm " + what);
            }
            for (size_t i = 1; i < mms.size(); ++i) {
              EXPECT_TRUE(same_bits(mms[0], mms[i])) << "mm bits differ between 1 and " << i + 1 << " threads: " << shape;
              EXPECT_TRUE(same_bits(addmms[0], addmms[i])) << "addmm bits differ between 1 and " << i + 1 << " threads: " << shape;
            }
          }
}

// Products around the split threshold and OpenBLAS's own size-dependent paths: the same bits at 1
// and 2 threads (row-major NoTrans/NoTrans float is the case OpenBLAS's "direct" kernel takes).
TEST(ParallelGemm, SameBitsAtOneAndTwoThreadsAcrossSizes) {
  ThreadCount keep;
  manual_seed(11);
  for (int64_t n : {64, 96, 128, 200})
    for (int64_t k : {100, 384, 785})
      for (int64_t m : {256, 512, 784}) {
        const Tensor a = randn({n, k}), b = randn({k, m});
        set_num_threads(1);
        const Tensor one = mm(a, b);
        set_num_threads(2);
        const Tensor two = mm(a, b);
        EXPECT_TRUE(same_bits(one, two)) << n << "x" << k << "x" << m;
      }
}

struct ConvCase {
  int64_t n, c, o, h, w, k, stride, pad, groups;
};

TEST(ParallelConv2d, SameBitsAtEveryThreadCount) {
  ThreadCount keep;
  manual_seed(3);
  const ConvCase cases[] = {
      {16, 3, 8, 20, 20, 5, 1, 2, 1},   // im2col, samples split
      {13, 4, 6, 17, 15, 3, 2, 1, 2},   // stride, groups, odd batch
      {9, 8, 16, 12, 12, 1, 1, 0, 1},   // 1x1: the image is its own column matrix
      {64, 32, 64, 13, 13, 3, 1, 0, 1}, // the benchmark CNN's second layer (oneDNN in float32)
      {20, 32, 64, 14, 14, 4, 2, 1, 1}, // DCGAN's stride-2 kernel-4 layers (oneDNN in float32)
      {10, 32, 32, 9, 9, 3, 1, 1, 2},   // groups of 16 channels (oneDNN in float32)
  };
  for (DType dtype : {kFloat32, kFloat64})
    for (const ConvCase& cc : cases) {
      const Tensor x0 = randn({cc.n, cc.c, cc.h, cc.w}, TensorOptions().dtype(dtype));
      const Tensor w0 = randn({cc.o, cc.c / cc.groups, cc.k, cc.k}, TensorOptions().dtype(dtype));
      const Tensor b0 = randn({cc.o}, TensorOptions().dtype(dtype));
      std::vector<Tensor> ys, gxs, gws, gbs;
      for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
        Tensor y = F::conv2d(x, w, b, F::Conv2dFuncOptions().stride(cc.stride).padding(cc.pad).groups(cc.groups));
        // A non-uniform upstream gradient, the same at every thread count.
        (y * y).sum().backward();
        ys.push_back(y.detach());
        gxs.push_back(x.grad());
        gws.push_back(w.grad());
        gbs.push_back(b.grad());
      }
      for (size_t i = 1; i < ys.size(); ++i) {
        const std::string what = std::string(dtype_name(dtype)) + " batch " + std::to_string(cc.n) + " " +
                                 std::to_string(cc.c) + "->" + std::to_string(cc.o) + ", 1 vs " +
                                 std::to_string(i + 1) + " threads";
        EXPECT_TRUE(same_bits(ys[0], ys[i])) << "output, " << what;
        EXPECT_TRUE(same_bits(gxs[0], gxs[i])) << "grad input, " << what;
        EXPECT_TRUE(same_bits(gws[0], gws[i])) << "grad weight, " << what;
        EXPECT_TRUE(same_bits(gbs[0], gbs[i])) << "grad bias, " << what;
      }
    }
}

// The weight gradient summed in blocks stays close to the plain sum over the batch: compare with
// the per-sample gradients added up in double.
TEST(ParallelConv2d, WeightGradientMatchesPerSampleSum) {
  ThreadCount keep;
  set_num_threads(2);
  manual_seed(5);
  const Tensor x = randn({24, 3, 14, 14}), w0 = randn({8, 3, 3, 3});
  Tensor w = w0.clone().requires_grad_();
  F::conv2d(x, w, F::Conv2dFuncOptions().padding(1)).sum().backward();
  const Tensor whole = w.grad().to(kFloat64);
  Tensor sum = zeros({8, 3, 3, 3}, TensorOptions().dtype(kFloat64));
  for (int64_t n = 0; n < 24; ++n) {
    Tensor wn = w0.clone().requires_grad_();
    F::conv2d(x.narrow(0, n, 1), wn, F::Conv2dFuncOptions().padding(1)).sum().backward();
    sum = sum + wn.grad().to(kFloat64);
  }
  const double err = (whole - sum).abs().max().item<double>(), scale = sum.abs().max().item<double>();
  EXPECT_LE(err, 1e-5 * scale);
}

}  // namespace
}  // namespace graft::test
