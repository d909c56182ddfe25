// The matrix product kernel (src/kernels/linalg.h) called directly, against a plain loop written here
// in double: int64 (the kernel's own loop) and float32 / float64 (runtime::gemm, reading operands
// through their strides: Note [BLAS operands without copies] in src/kernels/linalg.cpp). The
// operands hold small integers, so every product and sum is exact in any order and the results must
// match exactly. Cases: one matrix, a batch, a 2-D or batch-of-one operand used for every batch,
// transposed, expanded and strided operands, alpha and beta (beta == 0 ignores the old contents,
// nan included), k == 0 (out = beta * out) and empty products.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/kernels/linalg.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace linalg_kernels_ref {

using kernels::linalg::gemm_into;

template <class T>
DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return kFloat32;
  else if constexpr (std::is_same_v<T, double>) return kFloat64;
  else return kInt64;
}

// n integers uniform in [-lo_hi, lo_hi], as doubles.
std::vector<double> random_ints(int64_t n, uint64_t seed, int lo_hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(-lo_hi, lo_hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = u(rng);
  return v;
}

// How an operand of logical shape (batch, rows, cols) is laid out.
enum class Form {
  Batched,     // a contiguous (batch, rows, cols) tensor
  Shared,      // a contiguous 2-D (rows, cols), used for every batch
  BatchOfOne,  // a contiguous (1, rows, cols), used for every batch
  Transposed,  // (batch, cols, rows) contiguous, transposed: columns contiguous
  Expanded,    // (rows, cols) expanded to (batch, rows, cols): batch stride 0
  Strided,     // (batch, rows, cols) with every element at stride 2 in the last dim
};

Tensor make_operand(Form f, int64_t batch, int64_t rows, int64_t cols, uint64_t seed, DType dt) {
  switch (f) {
    case Form::Batched: return make(random_ints(batch * rows * cols, seed, 8), {batch, rows, cols}, dt);
    case Form::Shared: return make(random_ints(rows * cols, seed, 8), {rows, cols}, dt);
    case Form::BatchOfOne: return make(random_ints(rows * cols, seed, 8), {1, rows, cols}, dt);
    case Form::Transposed:
      return make(random_ints(batch * rows * cols, seed, 8), {batch, cols, rows}, dt).transpose(1, 2);
    case Form::Expanded:
      return make(random_ints(rows * cols, seed, 8), {rows, cols}, dt).unsqueeze(0).expand({batch, rows, cols});
    case Form::Strided:
      return non_contiguous(make(random_ints(batch * rows * cols, seed, 8), {batch, rows, cols}, dt));
  }
  return {};
}

// Element (b, i, j) of an operand in any Form: a 2-D operand or a batch of one serves every b.
double at(const Tensor& x, const std::vector<double>& v, int64_t b, int64_t i, int64_t j) {
  const int64_t rows = x.size(x.dim() - 2), cols = x.size(x.dim() - 1);
  const int64_t bb = x.dim() == 3 && x.size(0) > 1 ? b : 0;
  return v[static_cast<size_t>((bb * rows + i) * cols + j)];
}

// beta * out0 + alpha * a[b] @ bm[b] (beta == 0: out0 ignored), summed in double.
std::vector<double> ref_gemm(int64_t batch, int64_t n, int64_t m, int64_t k, double alpha, const Tensor& a,
                             const Tensor& bm, double beta, const std::vector<double>& out0) {
  const std::vector<double> va = values(a), vb = values(bm);
  std::vector<double> y(static_cast<size_t>(batch * n * m));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += at(a, va, b, i, p) * at(bm, vb, b, p, j);
        const size_t o = static_cast<size_t>((b * n + i) * m + j);
        y[o] = (beta == 0 ? 0.0 : beta * out0[o]) + alpha * acc;
      }
  return y;
}

struct Case {
  int64_t batch, n, m, k;
  Form a, b;
  double alpha, beta;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      // batch, n, m, k, a's form, b's form, alpha, beta
      {1, 5, 7, 6, Form::Shared, Form::Shared, 1, 0},           // one matrix (mm)
      {1, 1, 9, 4, Form::Shared, Form::Shared, 1, 0},           // one row
      {1, 6, 1, 5, Form::Shared, Form::Shared, 1, 0},           // one column
      {3, 4, 5, 6, Form::Batched, Form::Batched, 1, 0},         // bmm
      {3, 4, 5, 6, Form::Batched, Form::Shared, 1, 0},          // bm shared by every batch
      {3, 4, 5, 6, Form::BatchOfOne, Form::Batched, 1, 0},      // a batch of one
      {2, 5, 4, 7, Form::Transposed, Form::Transposed, 1, 0},   // columns contiguous (Trans)
      {2, 5, 4, 7, Form::Expanded, Form::Strided, 1, 0},        // batch stride 0; a strided copy
      {2, 3, 6, 5, Form::Strided, Form::Expanded, 3, -2},       // alpha and beta
      {1, 4, 4, 9, Form::Transposed, Form::Shared, -1, 1},      // beta = 1 (addmm)
      {2, 3, 4, 0, Form::Batched, Form::Batched, 2, -3},        // k == 0: out = beta * out
      {2, 3, 4, 0, Form::Batched, Form::Batched, 2, 0},         // k == 0, beta == 0: zeros
      {2, 0, 4, 3, Form::Batched, Form::Batched, 1, 0},         // empty: no rows
      {2, 3, 0, 3, Form::Batched, Form::Batched, 1, 0},         // empty: no columns
      {0, 3, 4, 3, Form::Batched, Form::Batched, 1, 0},         // empty: no batch
  };
  return c;
}

std::string describe(const Case& c) {
  return "batch " + std::to_string(c.batch) + ", n " + std::to_string(c.n) + ", m " + std::to_string(c.m) +
         ", k " + std::to_string(c.k) + ", forms " + std::to_string(static_cast<int>(c.a)) + "/" +
         std::to_string(static_cast<int>(c.b)) + ", alpha " + std::to_string(c.alpha) + ", beta " +
         std::to_string(c.beta);
}

template <class T>
void check_cases() {
  const DType dt = dtype_of<T>();
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    const Tensor a = make_operand(c.a, c.batch, c.n, c.k, seed++, dt);
    const Tensor bm = make_operand(c.b, c.batch, c.k, c.m, seed++, dt);
    std::vector<double> out0 = random_ints(c.batch * c.n * c.m, seed++, 8);
    // beta == 0 ignores out's old contents: nan there must not reach the result.
    if (c.beta == 0 && !std::is_same_v<T, int64_t> && !out0.empty())
      out0[0] = std::numeric_limits<double>::quiet_NaN();
    Tensor out = make(out0, {c.batch, c.n, c.m}, dt);
    gemm_into<T>(c.batch, c.n, c.m, c.k, static_cast<T>(c.alpha), a, bm, static_cast<T>(c.beta), out, "test");
    EXPECT_TRUE(same_values(values(out), ref_gemm(c.batch, c.n, c.m, c.k, c.alpha, a, bm, c.beta, out0)));
  }
}

}  // namespace linalg_kernels_ref

TEST(LinalgKernels, GemmInt64) { linalg_kernels_ref::check_cases<int64_t>(); }
TEST(LinalgKernels, GemmFloat64) { linalg_kernels_ref::check_cases<double>(); }
TEST(LinalgKernels, GemmFloat32) { linalg_kernels_ref::check_cases<float>(); }

// The int64 loop with values whose products need all 64 bits: exact, as a plain int64 loop gives.
TEST(LinalgKernels, GemmInt64Large) {
  const int64_t n = 3, m = 4, k = 5;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> u(-(int64_t{1} << 28), int64_t{1} << 28);
  std::vector<int64_t> av(static_cast<size_t>(n * k)), bv(static_cast<size_t>(k * m));
  for (auto& e : av) e = u(rng);
  for (auto& e : bv) e = u(rng);
  const Tensor a = tensor(av, TensorOptions().dtype(kInt64)).reshape({n, k});
  const Tensor b = tensor(bv, TensorOptions().dtype(kInt64)).reshape({k, m});
  Tensor out = zeros({n, m}, TensorOptions().dtype(kInt64));
  kernels::linalg::gemm_into<int64_t>(1, n, m, k, 2, a, b, 0, out, "test");
  const int64_t* y = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      int64_t acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += 2 * av[static_cast<size_t>(i * k + p)] * bv[static_cast<size_t>(p * m + j)];
      EXPECT_EQ(y[i * m + j], acc) << "element (" << i << ", " << j << ")";
    }
}

}  // namespace graft::test
