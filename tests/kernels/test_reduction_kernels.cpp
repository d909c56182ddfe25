// The reduction kernels (src/kernels/reduction.h) called directly, against plain loops written here
// in double: sum's fast paths (leading rows, and float32's whole-tensor and per-row sums), and the
// row reductions var/std, prod, max/min with and without their index, argmax/argmin, logsumexp and
// the product of the others, over a middle dim, the first and last dims together and all dims, on
// contiguous and non-contiguous inputs; with ties, nan, +-inf, zeros, empty rows and int64/bool.
//
// The reference gathers each output element's row with its own index arithmetic: the elements of
// x in row-major order, the row being the row-major index over the kept dims and the position in it
// the row-major index over the reduced dims.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/kernels/reduction.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace reduction_kernels_ref {

namespace kr = kernels::reduction;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// The rows of x (values v, `shape`) over the sorted `dims`: rows[i][k].
std::vector<std::vector<double>> gather_rows(const std::vector<double>& v, const std::vector<int64_t>& shape,
                                             const std::vector<int64_t>& dims) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  auto is_reduced = [&](int64_t d) {
    for (int64_t r : dims)
      if (r == d) return true;
    return false;
  };
  int64_t m = 1, n = 1;
  for (int64_t d = 0; d < nd; ++d) (is_reduced(d) ? n : m) *= shape[static_cast<size_t>(d)];
  std::vector<std::vector<double>> rows(static_cast<size_t>(m), std::vector<double>(static_cast<size_t>(n)));
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  for (size_t flat = 0; flat < v.size(); ++flat) {
    int64_t row = 0, pos = 0;
    for (int64_t d = 0; d < nd; ++d) {
      const int64_t s = shape[static_cast<size_t>(d)], i = idx[static_cast<size_t>(d)];
      if (is_reduced(d)) pos = pos * s + i;
      else row = row * s + i;
    }
    rows[static_cast<size_t>(row)][static_cast<size_t>(pos)] = v[flat];
    for (int64_t d = nd - 1; d >= 0; --d) {  // next row-major index
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return rows;
}

std::vector<double> random_row_values(int64_t n, uint64_t seed, bool quantised) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = quantised ? std::round(u(rng) * 2.0) / 2.0 : u(rng);
  return v;
}

// The index of the first max (greater) or min of a row; the first nan if there is one.
int64_t ref_arg(const std::vector<double>& row, bool greater) {
  for (size_t k = 0; k < row.size(); ++k)
    if (std::isnan(row[k])) return static_cast<int64_t>(k);
  int64_t best = 0;
  for (size_t k = 1; k < row.size(); ++k)
    if (greater ? row[k] > row[static_cast<size_t>(best)] : row[k] < row[static_cast<size_t>(best)])
      best = static_cast<int64_t>(k);
  return best;
}

struct RowCase {
  std::vector<int64_t> shape, dims;
};

const std::vector<RowCase>& row_cases() {
  static const std::vector<RowCase> cases = {
      {{3, 5, 4}, {1}},        // a middle dim
      {{3, 5, 4}, {0, 2}},     // the outer dims together
      {{3, 5, 4}, {0, 1, 2}},  // all dims
      {{6, 7}, {1}},           // rows
      {{6, 7}, {0}},           // columns
      {{}, {}},                // a 0-dim tensor: one row of one value
      {{4, 0, 3}, {1}},        // empty rows
  };
  return cases;
}

std::string case_name(const RowCase& c) { return "shape " + shape_str(c.shape) + " dims " + shape_str(c.dims); }

// x of case c in dtype dt (non-contiguous when asked), with its values as the kernel sees them.
Tensor case_input(const RowCase& c, DType dt, uint64_t seed, bool quantised, bool non_contig,
                  const std::vector<double>& specials = {}) {
  int64_t numel = 1;
  for (int64_t s : c.shape) numel *= s;
  std::vector<double> v = random_row_values(numel, seed, quantised);
  for (size_t i = 0; i < specials.size() && i * 5 < v.size(); ++i) v[i * 5] = specials[i];
  const Tensor x = make(v, c.shape, dt);
  return non_contig && !c.shape.empty() ? non_contiguous(x) : x;
}

Shape out_shape_of(const RowCase& c) {
  Shape s;
  for (size_t d = 0; d < c.shape.size(); ++d) {
    bool reduced = false;
    for (int64_t r : c.dims) reduced = reduced || r == static_cast<int64_t>(d);
    if (!reduced) s.push_back(c.shape[d]);
  }
  return s;
}

template <class T>
DType dtype_of() {
  return std::is_same_v<T, float> ? kFloat32 : kFloat64;
}

template <class T>
double row_tol() {
  return std::is_same_v<T, float> ? 1e-6 : 1e-13;
}

template <class T>
void check_var_and_logsumexp() {
  const DType dt = dtype_of<T>();
  uint64_t seed = 100;
  for (const RowCase& c : row_cases())
    for (bool nc : {false, true}) {
      SCOPED_TRACE(case_name(c) + (nc ? " non-contiguous " : " ") + dtype_name(dt));
      const Tensor x = case_input(c, dt, seed++, false, nc, {kNaN});  // a nan row: nan
      const auto rows = gather_rows(values(x), c.shape, c.dims);
      const Shape os = out_shape_of(c);
      for (int64_t correction : {0, 1})
        for (bool take_sqrt : {false, true}) {
          std::vector<double> expected;
          for (const auto& r : rows) {
            const double n = static_cast<double>(r.size());
            double mean = 0;
            for (double v : r) mean += v / n;
            double ss = 0;
            for (double v : r) ss += (v - mean) * (v - mean);
            const double dof = n - static_cast<double>(correction);
            const double var = dof <= 0 ? kNaN : ss / dof;
            expected.push_back(take_sqrt ? std::sqrt(var) : var);
          }
          Tensor out = empty(os, TensorOptions(dt));
          kr::var_rows("var", x, c.dims, correction, take_sqrt, out);
          EXPECT_TRUE(all_close(out, expected, os, row_tol<T>(), 10 * row_tol<T>()))
              << "correction " << correction << (take_sqrt ? " std" : " var");
        }

      // logsumexp, with -inf and +inf elements in some rows (an all -inf or empty row gives -inf).
      const Tensor xi = case_input(c, dt, seed++, false, nc, {-kInf, -kInf, kInf, -kInf});
      const auto irows = gather_rows(values(xi), c.shape, c.dims);
      std::vector<double> expected;
      for (const auto& r : irows) {
        double m = -kInf;
        for (double v : r) m = std::max(m, v);
        if (std::isinf(m)) {
          expected.push_back(m);  // +inf: one +inf element; -inf: every element -inf (or none)
          continue;
        }
        double s = 0;
        for (double v : r) s += std::exp(v - m);
        expected.push_back(m + std::log(s));
      }
      Tensor out = empty(os, TensorOptions(dt));
      kr::logsumexp_rows(xi, c.dims, out);
      EXPECT_TRUE(all_close(out, expected, os, row_tol<T>(), 10 * row_tol<T>())) << "logsumexp";
    }
}

// max/min, argmax/argmin and both at once, on quantised values (ties) with a nan in some rows.
void check_extremes(DType dt) {
  uint64_t seed = 200;
  for (const RowCase& c : row_cases()) {
    if (c.shape.size() == 3 && c.shape[1] == 0) continue;  // the ops reject empty rows
    for (bool nc : {false, true}) {
      SCOPED_TRACE(case_name(c) + (nc ? " non-contiguous " : " ") + dtype_name(dt));
      const std::vector<double> specials =
          dt == kFloat32 || dt == kFloat64 ? std::vector<double>{1.0, kNaN, 2.0} : std::vector<double>{};
      const Tensor x = case_input(c, dt, seed++, true, nc, specials);
      const auto rows = gather_rows(values(x), c.shape, c.dims);
      const Shape os = out_shape_of(c);
      for (bool greater : {true, false}) {
        std::vector<double> ev, ei;
        for (const auto& r : rows) {
          const int64_t k = ref_arg(r, greater);
          ev.push_back(r[static_cast<size_t>(k)]);
          ei.push_back(static_cast<double>(k));
        }
        Tensor out = empty(os, TensorOptions(dt));
        kr::extreme_rows("max", x, c.dims, greater, out);
        EXPECT_TRUE(same_values(values(out), ev)) << (greater ? "max" : "min");
        if (dt != kBool) {
          Tensor idx = empty(os, TensorOptions(kInt64));
          kr::arg_extreme_rows("argmax", x, c.dims, greater, idx);
          EXPECT_TRUE(same_values(values(idx), ei)) << (greater ? "argmax" : "argmin");
        }
        if (c.dims.size() == 1) {
          Tensor v = empty(os, TensorOptions(dt)), i = empty(os, TensorOptions(kInt64));
          kr::extreme_index_rows("max", x, c.dims, greater, v, i);
          EXPECT_TRUE(same_values(values(v), ev)) << "values";
          EXPECT_TRUE(same_values(values(i), ei)) << "indices";
        }
      }
    }
  }
}

// prod of each row, and the product of the others at every element (rows with no, one and two
// zeros); has_zero.
template <class T>
void check_products() {
  const DType dt = dtype_of<T>();
  uint64_t seed = 300;
  for (const RowCase& c : row_cases())
    for (bool nc : {false, true}) {
      SCOPED_TRACE(case_name(c) + (nc ? " non-contiguous " : " ") + dtype_name(dt));
      const Tensor x = case_input(c, dt, seed++, false, nc, {0.0, 1.0, 0.0, 0.0});
      const auto rows = gather_rows(values(x), c.shape, c.dims);
      const Shape os = out_shape_of(c);
      std::vector<double> ep;
      for (const auto& r : rows) {
        double p = 1;
        for (double v : r) p *= v;
        ep.push_back(p);
      }
      Tensor out = empty(os, TensorOptions(dt));
      kr::prod_rows(x, c.dims, out);
      EXPECT_TRUE(all_close(out, ep, os, row_tol<T>(), 10 * row_tol<T>())) << "prod";

      // prod_of_others: out (rows, n), x's shape permuted to put the reduced dims last.
      std::vector<double> eo;
      for (const auto& r : rows)
        for (size_t k = 0; k < r.size(); ++k) {
          double p = 1;
          for (size_t j = 0; j < r.size(); ++j)
            if (j != k) p *= r[j];
          eo.push_back(p);
        }
      const std::vector<int64_t> perm = kr::reduce_last_perm(static_cast<int64_t>(c.shape.size()), c.dims);
      Shape permuted;
      for (int64_t d : perm) permuted.push_back(c.shape[static_cast<size_t>(d)]);
      Tensor others = empty(permuted, TensorOptions(dt));
      kr::prod_of_others_rows(x, c.dims, others);
      EXPECT_TRUE(all_close(others, eo, permuted, row_tol<T>(), 10 * row_tol<T>())) << "prod_of_others";

      bool zero = false;
      for (double v : values(x)) zero = zero || v == 0.0;
      EXPECT_EQ(kr::has_zero(x), zero);
    }
}

}  // namespace reduction_kernels_ref

TEST(ReductionKernels, SumLeading) {
  for (DType dt : {kFloat64, kFloat32})
    for (int64_t outer : {2, 7})
      for (int64_t inner : {8, 33}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " outer " + std::to_string(outer) + " inner " +
                     std::to_string(inner));
        const std::vector<double> v = reduction_kernels_ref::random_row_values(outer * inner, 7 + outer, false);
        const Tensor x = make(v, {outer, inner}, dt);
        const std::vector<double> xs = values(x);
        // In double, row by row, rounded to the dtype once: the kernel's order, so exact.
        std::vector<double> expected(static_cast<size_t>(inner), 0.0);
        for (int64_t r = 0; r < outer; ++r)
          for (int64_t j = 0; j < inner; ++j)
            expected[static_cast<size_t>(j)] += xs[static_cast<size_t>(r * inner + j)];
        if (dt == kFloat32)
          for (double& e : expected) e = static_cast<double>(static_cast<float>(e));
        Tensor y = empty({inner}, TensorOptions(dt));
        reduction_kernels_ref::kr::sum_leading(x, outer, inner, y);
        EXPECT_TRUE(same_values(values(y), expected));
      }
}

TEST(ReductionKernels, SumFloat32) {
  // Whole-tensor and per-row sums (Note [Fast float32 sum]); the kernels have their own tests in
  // test_vector_kernels.cpp, this checks the Tensor-level entries' wiring.
  const std::vector<double> v = reduction_kernels_ref::random_row_values(5 * 37, 5, false);
  const Tensor x = make(v, {5, 37}, kFloat32);
  const std::vector<double> xs = values(x);
  double total = 0;
  std::vector<double> rows(5, 0.0);
  for (size_t i = 0; i < xs.size(); ++i) {
    total += xs[i];
    rows[i / 37] += xs[i];
  }
  Tensor all = empty({}, TensorOptions(kFloat32));
  reduction_kernels_ref::kr::sum_all_f32(x, all);
  EXPECT_TRUE(all_close(all, {total}, {}, 1e-5, 1e-6));
  Tensor each = empty({5}, TensorOptions(kFloat32));
  reduction_kernels_ref::kr::sum_each_row_f32(x, 37, each);
  EXPECT_TRUE(all_close(each, rows, {5}, 1e-5, 1e-6));
}

TEST(ReductionKernels, VarAndLogsumexp) {
  reduction_kernels_ref::check_var_and_logsumexp<double>();
  reduction_kernels_ref::check_var_and_logsumexp<float>();
}

TEST(ReductionKernels, Extremes) {
  for (DType dt : {kFloat64, kFloat32, kInt64, kBool}) reduction_kernels_ref::check_extremes(dt);
}

TEST(ReductionKernels, Products) {
  reduction_kernels_ref::check_products<double>();
  reduction_kernels_ref::check_products<float>();
}

TEST(ReductionKernels, ProdInt64WrapsAround) {
  // (2^40 + 3) (2^33 + 5) (-3) overflows: the product wraps modulo 2^64 (uint64 arithmetic), as in
  // PyTorch.
  const uint64_t a = (uint64_t{1} << 40) + 3, b = (uint64_t{1} << 33) + 5;
  const Tensor x = make({static_cast<double>(a), static_cast<double>(b), -3, -2, 5, 7}, {2, 3}, kInt64);
  Tensor out = empty({2}, TensorOptions(kInt64));
  reduction_kernels_ref::kr::prod_rows(x, {1}, out);
  const auto wrapped = static_cast<int64_t>(a * b * static_cast<uint64_t>(int64_t{-3}));
  const int64_t* p = out.data_ptr<int64_t>();
  EXPECT_EQ(p[0], wrapped);
  EXPECT_EQ(p[1], -70);
}

TEST(ReductionKernels, DtypeErrorsNameTheOp) {
  const Tensor x = make({1, 0, 1}, {3}, kBool);
  Tensor out = empty({}, TensorOptions(kInt64));
  EXPECT_TRUE(throws_error([&] { reduction_kernels_ref::kr::arg_extreme_rows("argmin", x, {0}, false, out); },
                           {"argmin", "bool"}));
}

}  // namespace graft::test
