// Op records: softmax, log_softmax (several dims, 0-dim input, large values for stability); plus
// plain tests of -inf rows, the dtype argument, nn::functional forwarding and grad_fn names.
#include <cmath>
#include <limits>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// softmax / log_softmax of x along dim, plain loops in double over (outer, n, inner).
Tensor ref_softmax(const Tensor& x, int64_t dim, bool log) {
  const std::vector<double> v = values(x);
  const int64_t nd = x.dim();
  const int64_t d = nd == 0 ? 0 : (dim < 0 ? dim + nd : dim);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x.size(i);
  for (int64_t i = d + 1; i < nd; ++i) inner *= x.size(i);
  const int64_t n = nd == 0 ? 1 : x.size(d);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * n + j) * inner + i); };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) mx = std::max(mx, v[at(j)]);
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += std::exp(v[at(j)] - mx);
      for (int64_t j = 0; j < n; ++j) out[at(j)] = log ? v[at(j)] - mx - std::log(s) : std::exp(v[at(j)] - mx) / s;
    }
  return make(out, x.sizes());
}

std::vector<ErrorCase> softmax_errors(bool log) {
  const std::string name = log ? "log_softmax" : "softmax";
  auto f = [log](const Tensor& x, int64_t dim, std::optional<DType> dt) {
    return log ? log_softmax(x, dim, dt) : softmax(x, dim, dt);
  };
  return {{[f] { f(tensor({1, 2, 3}), 0, std::nullopt); }, {name, "int64", "floating-point", "dtype", ".to(graft::kFloat32)"}},
          {[f] { f(zeros({2, 3}), 2, std::nullopt); }, {name, "dim 2", "[-2, 1]"}},
          {[f] { f(zeros({2, 3}), 0, kInt64); }, {name, "int64 dtype"}}};
}

OpRecord softmax_record(bool log, std::string variant, int64_t dim, std::vector<TensorList> samples) {
  return {.name = log ? "log_softmax" : "softmax",
          .variant = std::move(variant),
          .fn = [log, dim](const TensorList& a) { return log ? log_softmax(a[0], dim) : softmax(a[0], dim); },
          .reference = [log, dim](const TensorList& a) { return ref_softmax(a[0], dim, log); },
          .samples = [s = std::move(samples)] { return s; },
          .atol32 = 1e-4,
          .rtol32 = 1e-4,
          .errors = softmax_errors(log)};
}

}  // namespace

GRAFT_OP_RECORDS(softmax) {
  std::vector<OpRecord> recs;
  for (bool log : {false, true}) {
    recs.push_back(softmax_record(log, "dim1", 1, {{r({2, 3}, 1)}, {r({3, 1}, 2)}}));
    recs.push_back(softmax_record(log, "dim0", 0, {{r({3, 4}, 3)}, {r({4}, 4)}}));
    recs.push_back(softmax_record(log, "dim_neg1", -1, {{r({2, 3, 4}, 5)}, {r({}, 6)}}));
    recs.push_back(softmax_record(log, "middle_dim", 1, {{r({2, 3, 2}, 7)}}));
    // exp(1000) overflows: only a max-subtracted kernel gets these right.
    recs.push_back(softmax_record(
        log, "large", -1,
        {{r({2, 4}, 8, 995, 1005)}, {make({1000, 0, -1000, 1, 1000.5, -3}, {2, 3})}, {r({3, 2}, 9, -1005, -995)}}));
  }
  return recs;
}

namespace {

TEST(Softmax, InfinityRows) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tensor all = make({-inf, -inf, -inf}, {3});
  for (DType dt : {kFloat64, kFloat32}) {
    for (double v : values(softmax(all.to(dt), 0))) EXPECT_TRUE(std::isnan(v));  // as PyTorch
    for (double v : values(log_softmax(all.to(dt), 0))) EXPECT_TRUE(std::isnan(v));
    const Tensor mixed = make({-inf, 0, -inf, 0}, {2, 2}).to(dt);
    EXPECT_TRUE(all_close(softmax(mixed, 1), {0, 1, 0, 1}, {2, 2}));
    EXPECT_TRUE(all_close(log_softmax(mixed, 1), {-inf, 0, -inf, 0}, {2, 2}));
    EXPECT_TRUE(all_close(softmax(mixed, 0), {nan, 0.5, nan, 0.5}, {2, 2}));  // column 0 is all -inf
  }
  for (double v : values(softmax(make({1, nan, 2}, {3}), 0))) EXPECT_TRUE(std::isnan(v));
}

TEST(Softmax, DtypeArgument) {
  const Tensor x = r({2, 3}, 21).to(kFloat32).requires_grad_();
  const Tensor y = softmax(x, 1, kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_TRUE(all_close(y, ref_softmax(x.detach().to(kFloat64), 1, false), 1e-12, 1e-12));
  (y * make({1, 2, 3, 4, 5, 6}, {2, 3})).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  // an integer input with a floating dtype is converted first
  EXPECT_TRUE(all_close(log_softmax(tensor({1, 2, 3}), 0, kFloat32), ref_softmax(make({1, 2, 3}, {3}), 0, true), 1e-6, 1e-6));
  // nn::functional and Tensor methods forward to the free functions
  const Tensor z = r({3, 4}, 22);
  EXPECT_TRUE(all_close(F::softmax(z, F::SoftmaxFuncOptions(0)), ref_softmax(z, 0, false)));
  EXPECT_TRUE(all_close(F::log_softmax(z, F::LogSoftmaxFuncOptions(1)), ref_softmax(z, 1, true)));
  EXPECT_EQ(F::softmax(z.to(kFloat32), F::SoftmaxFuncOptions(1).dtype(kFloat64)).dtype(), kFloat64);
  EXPECT_TRUE(all_close(z.softmax(-1), ref_softmax(z, -1, false)));
  EXPECT_TRUE(all_close(z.log_softmax(0), ref_softmax(z, 0, true)));
}

TEST(Softmax, GradFnNamesAndHandGradients) {
  const Tensor x = r({2, 3}, 31).requires_grad_();
  const Tensor s = softmax(x, 1), l = log_softmax(x, 1);
  EXPECT_EQ(s.grad_fn()->name(), "SoftmaxBackward0");
  EXPECT_EQ(l.grad_fn()->name(), "LogSoftmaxBackward0");
  // d/dx sum(w * log_softmax(x)) = w - softmax(x) * sum(w) per row
  const std::vector<double> w = {1, -2, 0.5, 3, 0, -1};
  (l * make(w, {2, 3})).sum().backward();
  const std::vector<double> p = values(ref_softmax(x.detach(), 1, false));
  std::vector<double> expect(6);
  for (size_t i = 0; i < 2; ++i) {
    const double sw = w[i * 3] + w[i * 3 + 1] + w[i * 3 + 2];
    for (size_t j = 0; j < 3; ++j) expect[i * 3 + j] = w[i * 3 + j] - p[i * 3 + j] * sw;
  }
  EXPECT_TRUE(all_close(x.grad(), expect, {2, 3}, 1e-12, 1e-12));
  // softmax of a 0-dim tensor is 1, log_softmax 0; empty tensors give empty results
  const Tensor s0 = make({5}, IntArrayRef{});
  EXPECT_TRUE(all_close(softmax(s0, 0), std::vector<double>{1.0}, IntArrayRef{}));
  EXPECT_TRUE(all_close(log_softmax(s0, -1), std::vector<double>{0.0}, IntArrayRef{}));
  EXPECT_EQ(softmax(zeros({0, 3}), 1).sizes().vec(), (std::vector<int64_t>{0, 3}));
}

}  // namespace
}  // namespace graft::test
