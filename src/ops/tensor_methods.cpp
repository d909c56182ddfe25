// Tensor methods that forward to the free functions of ops.h (one definition of each op).
#include "graft/ops/ops.h"

namespace graft {

Tensor Tensor::add(const Tensor& o, const Scalar& a) const { return graft::add(*this, o, a); }
Tensor Tensor::add(const Scalar& o, const Scalar& a) const { return graft::add(*this, o, a); }
Tensor Tensor::sub(const Tensor& o, const Scalar& a) const { return graft::sub(*this, o, a); }
Tensor Tensor::sub(const Scalar& o, const Scalar& a) const { return graft::sub(*this, o, a); }
Tensor Tensor::mul(const Tensor& o) const { return graft::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return graft::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return graft::div(*this, o); }
Tensor Tensor::div(const Scalar& o) const { return graft::div(*this, o); }
Tensor Tensor::neg() const { return graft::neg(*this); }
Tensor Tensor::pow(const Tensor& e) const { return graft::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return graft::pow(*this, e); }
Tensor Tensor::exp() const { return graft::exp(*this); }
Tensor Tensor::log() const { return graft::log(*this); }
Tensor Tensor::log1p() const { return graft::log1p(*this); }
Tensor Tensor::sqrt() const { return graft::sqrt(*this); }
Tensor Tensor::rsqrt() const { return graft::rsqrt(*this); }
Tensor Tensor::abs() const { return graft::abs(*this); }
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return graft::allclose(*this, other, rtol, atol, equal_nan);
}
Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return graft::isclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::equal(const Tensor& other) const { return graft::equal(*this, other); }
Tensor Tensor::sign() const { return graft::sign(*this); }
Tensor Tensor::sin() const { return graft::sin(*this); }
Tensor Tensor::cos() const { return graft::cos(*this); }
Tensor Tensor::tanh() const { return graft::tanh(*this); }
Tensor Tensor::sigmoid() const { return graft::sigmoid(*this); }
Tensor Tensor::relu() const { return graft::relu(*this); }
Tensor Tensor::erf() const { return graft::erf(*this); }
Tensor Tensor::square() const { return graft::square(*this); }
Tensor Tensor::reciprocal() const { return graft::reciprocal(*this); }
Tensor Tensor::clamp(std::optional<Scalar> mn, std::optional<Scalar> mx) const { return graft::clamp(*this, mn, mx); }
Tensor Tensor::clamp_min(const Scalar& m) const { return graft::clamp_min(*this, m); }
Tensor Tensor::clamp_max(const Scalar& m) const { return graft::clamp_max(*this, m); }
Tensor Tensor::maximum(const Tensor& o) const { return graft::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return graft::minimum(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return graft::gt(*this, o); }
Tensor Tensor::gt(const Scalar& o) const { return graft::gt(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return graft::lt(*this, o); }
Tensor Tensor::lt(const Scalar& o) const { return graft::lt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return graft::ge(*this, o); }
Tensor Tensor::ge(const Scalar& o) const { return graft::ge(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return graft::le(*this, o); }
Tensor Tensor::le(const Scalar& o) const { return graft::le(*this, o); }
Tensor Tensor::eq(const Tensor& o) const { return graft::eq(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return graft::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return graft::ne(*this, o); }
Tensor Tensor::ne(const Scalar& o) const { return graft::ne(*this, o); }
Tensor Tensor::logical_not() const { return graft::logical_not(*this); }
Tensor Tensor::logical_and(const Tensor& o) const { return graft::logical_and(*this, o); }
Tensor Tensor::logical_or(const Tensor& o) const { return graft::logical_or(*this, o); }
Tensor Tensor::where(const Tensor& c, const Tensor& o) const { return graft::where(c, *this, o); }
Tensor Tensor::masked_fill(const Tensor& m, const Scalar& v) const { return graft::masked_fill(*this, m, v); }

Tensor Tensor::sum(std::optional<DType> dt) const { return graft::sum(*this, dt); }
Tensor Tensor::sum(IntArrayRef d, bool k, std::optional<DType> dt) const { return graft::sum(*this, d, k, dt); }
Tensor Tensor::mean(std::optional<DType> dt) const { return graft::mean(*this, dt); }
Tensor Tensor::mean(IntArrayRef d, bool k, std::optional<DType> dt) const { return graft::mean(*this, d, k, dt); }
Tensor Tensor::var_all(bool u) const { return graft::var_all(*this, u); }
Tensor Tensor::var(IntArrayRef d, bool u, bool k) const { return graft::var(*this, d, u, k); }
Tensor Tensor::std_all(bool u) const { return graft::std_all(*this, u); }
Tensor Tensor::std(IntArrayRef d, bool u, bool k) const { return graft::std(*this, d, u, k); }
Tensor Tensor::prod(std::optional<DType> dt) const { return graft::prod(*this, dt); }
Tensor Tensor::prod(IntArrayRef d, bool k, std::optional<DType> dt) const { return graft::prod(*this, d, k, dt); }
Tensor Tensor::max() const { return graft::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool k) const { return graft::max(*this, d, k); }
Tensor Tensor::min() const { return graft::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t d, bool k) const { return graft::min(*this, d, k); }
Tensor Tensor::amax(IntArrayRef d, bool k) const { return graft::amax(*this, d, k); }
Tensor Tensor::amin(IntArrayRef d, bool k) const { return graft::amin(*this, d, k); }
Tensor Tensor::argmax(std::optional<int64_t> d, bool k) const { return graft::argmax(*this, d, k); }
Tensor Tensor::argmin(std::optional<int64_t> d, bool k) const { return graft::argmin(*this, d, k); }
Tensor Tensor::logsumexp(IntArrayRef d, bool k) const { return graft::logsumexp(*this, d, k); }
Tensor Tensor::norm(const Scalar& p) const { return norm(p, IntArrayRef{}, false); }  // every element

Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim) const {
  const double pv = p.to_double();
  if (pv == 2.0) return graft::sqrt(graft::sum(*this * *this, dim, keepdim));
  if (pv == 1.0) return graft::sum(graft::abs(*this), dim, keepdim);
  return graft::pow(graft::sum(graft::pow(graft::abs(*this), p), dim, keepdim), 1.0 / pv);
}
Tensor Tensor::all() const { return graft::all(*this); }
Tensor Tensor::all(int64_t d, bool k) const { return graft::all(*this, d, k); }
Tensor Tensor::any() const { return graft::any(*this); }
Tensor Tensor::any(int64_t d, bool k) const { return graft::any(*this, d, k); }
Tensor Tensor::cumsum(int64_t d, std::optional<DType> dt) const { return graft::cumsum(*this, d, dt); }
Tensor Tensor::cumprod(int64_t d, std::optional<DType> dt) const { return graft::cumprod(*this, d, dt); }

Tensor Tensor::matmul(const Tensor& o) const { return graft::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return graft::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return graft::bmm(*this, o); }
Tensor Tensor::softmax(int64_t d) const { return graft::softmax(*this, d); }
Tensor Tensor::log_softmax(int64_t d) const { return graft::log_softmax(*this, d); }
Tensor Tensor::index_select(int64_t d, const Tensor& i) const { return graft::index_select(*this, d, i); }
Tensor Tensor::gather(int64_t d, const Tensor& i) const { return graft::gather(*this, d, i); }
Tensor Tensor::scatter_add(int64_t d, const Tensor& i, const Tensor& s) const { return graft::scatter_add(*this, d, i, s); }
Tensor Tensor::index_add(int64_t d, const Tensor& i, const Tensor& s, const Scalar& a) const {
  return graft::index_add(*this, d, i, s, a);
}

// triu_, tril_ and lerp_ are in triangular_lerp.cpp beside their ops.
Tensor Tensor::triu(int64_t d) const { return graft::triu(*this, d); }
Tensor Tensor::tril(int64_t d) const { return graft::tril(*this, d); }
Tensor Tensor::lerp(const Tensor& e, const Scalar& w) const { return graft::lerp(*this, e, w); }
Tensor Tensor::lerp(const Tensor& e, const Tensor& w) const { return graft::lerp(*this, e, w); }

}  // namespace graft
