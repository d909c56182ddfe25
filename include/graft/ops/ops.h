// graft's ops as free functions (graft::exp(x), graft::matmul(a, b), ...), LibTorch's names and
// argument order. Each is differentiable where PyTorch's is; the derivative of each sits under its
// forward in src/ops/<family>.cpp.
#pragma once

#include <optional>
#include <tuple>
#include <type_traits>

#include "graft/core/tensor.h"

namespace graft {

// ---- arithmetic (NumPy broadcasting, PyTorch type promotion) ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a + alpha * b
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a - alpha * b
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor rsub(const Tensor& a, const Scalar& b);                           // b - a
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor rdiv(const Tensor& a, const Scalar& b);                           // b / a
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& base, const Tensor& exponent);
Tensor pow(const Tensor& base, const Scalar& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
Tensor square(const Tensor& a);
Tensor reciprocal(const Tensor& a);

// ---- elementwise math ----
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp_min(const Tensor& x, const Scalar& min);
Tensor clamp_max(const Tensor& x, const Scalar& max);
Tensor maximum(const Tensor& a, const Tensor& b);  // ties split the gradient equally
Tensor minimum(const Tensor& a, const Tensor& b);

// ---- comparisons and selection (comparisons give bool tensors and no gradient) ----
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor logical_not(const Tensor& a);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
bool equal(const Tensor& a, const Tensor& b);  // same shape and exactly the same values
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);

// ---- reductions: dim = {} means all dims ----
Tensor sum(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor sum(const Tensor& x, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
// var/std over all dims take `unbiased` as a bool only: var(x, {1}) must mean dim 1, so the
// all-dims overloads are templates that a braced list cannot select.
Tensor var_all(const Tensor& x, bool unbiased);
Tensor std_all(const Tensor& x, bool unbiased);
inline Tensor var(const Tensor& x) { return var_all(x, true); }
template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
Tensor var(const Tensor& x, B unbiased) { return var_all(x, unbiased); }
Tensor var(const Tensor& x, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
inline Tensor std(const Tensor& x) { return std_all(x, true); }
template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
Tensor std(const Tensor& x, B unbiased) { return std_all(x, unbiased); }
Tensor std(const Tensor& x, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
Tensor prod(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor max(const Tensor& x);  // ties share the gradient evenly
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);  // (values, indices)
Tensor min(const Tensor& x);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false);  // ties share the gradient evenly
Tensor amin(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor logsumexp(const Tensor& x, IntArrayRef dim, bool keepdim = false);
// Sums `x` down to `shape` (the reverse of broadcasting); used by every broadcasting backward.
Tensor sum_to(const Tensor& x, IntArrayRef shape);

// ---- linear algebra (OpenBLAS) ----
Tensor matmul(const Tensor& a, const Tensor& b);  // 1-D, 2-D, and batched with broadcasting
Tensor mm(const Tensor& a, const Tensor& b);      // (n, k) @ (k, m)
Tensor bmm(const Tensor& a, const Tensor& b);     // (B, n, k) @ (B, k, m)
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);            // beta * input + alpha * (mat1 @ mat2)

// ---- softmax (fused, numerically stable) ----
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

// ---- joining, splitting, indexing ----
Tensor cat(const TensorList& tensors, int64_t dim = 0);
Tensor stack(const TensorList& tensors, int64_t dim = 0);
TensorList split(const Tensor& x, int64_t split_size, int64_t dim = 0);
TensorList split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);

// ---- views and copies (also Tensor methods) ----
Tensor reshape(const Tensor& x, IntArrayRef shape);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, IntArrayRef dims);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor clone(const Tensor& x);

}  // namespace graft
