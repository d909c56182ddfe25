// Helpers for tests: read tensors into std::vector<double>, build tensors from values, and compare
// against independently computed values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft::test {

// Row-major values of any tensor (any dtype, any strides), as doubles. Reads through the strides
// with its own index arithmetic, independent of graft's kernels.
std::vector<double> values(const Tensor& t);
// n values uniform in [lo, hi) from std::mt19937_64(seed): plain inputs for kernel tests.
std::vector<double> uniform_values(int64_t n, uint64_t seed, double lo = -1.0, double hi = 1.0);
// A contiguous tensor of `shape` holding `v`, in `dtype`.
Tensor make(const std::vector<double>& v, IntArrayRef shape, DType dtype = kFloat64);
// The same values laid out non-contiguously (every element at stride 2 in the last dim).
Tensor non_contiguous(const Tensor& t);

// Checks element-wise |a - b| <= atol + rtol * |b| (NaNs must match), shapes equal.
::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                     IntArrayRef expected_shape, double atol = 1e-10, double rtol = 1e-10);
::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double atol = 1e-10,
                                     double rtol = 1e-10);

// Checks that two lists of values are equal element for element (a NaN matches a NaN): for kernels
// whose result must be exact.
::testing::AssertionResult same_values(const std::vector<double>& actual, const std::vector<double>& expected);

// The message of the graft::Error `f` throws ("" when it throws none): for checks of what a message
// must not say, which throws_error cannot express.
std::string error_message(const std::function<void()>& f);

// Runs `f` and checks that it throws a graft::Error whose message contains every piece of `parts`.
::testing::AssertionResult throws_error(const std::function<void()>& f, const std::vector<std::string>& parts);

// ---- lazily built op-record samples ----
// Uniform values in [lo, hi) from a Generator seeded with `seed` (float64).
Tensor uniform_sample(IntArrayRef shape, uint64_t seed, double lo, double hi);
// One input of a record sample: built when a check asks for it, never at static-initialisation time
// (tensors held by the static op table would outlive graft's allocator at exit).
struct SampleSpec {
  std::vector<int64_t> shape;
  uint64_t seed;
  double lo, hi;
};
using SampleSpecs = std::vector<std::vector<SampleSpec>>;
// The samples function of an OpRecord: each SampleSpec becomes uniform_sample(shape, seed, lo, hi).
std::function<std::vector<TensorList>()> lazy_samples(SampleSpecs specs);

// ---- plain-loop references (independent of graft's kernels) ----
// Broadcast shape of a and b (NumPy rules), computed with separate code.
std::vector<int64_t> ref_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// Elementwise over broadcast inputs, in double.
Tensor ref_map(const TensorList& inputs, const std::function<double(const std::vector<double>&)>& f,
               DType out = kFloat64);

// ---- scope guards ----
// Restores the thread count (set_num_threads) a test changed.
struct ThreadCount {
  int before = get_num_threads();
  ~ThreadCount() { set_num_threads(before); }
};

}  // namespace graft::test
