// Op records: cumsum and cumprod (with zeros, whose gradient takes PyTorch's case split), with plain
// loop references. Plus plain tests of the dtype rules and of gradients with zeros.
#include <cmath>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

// Running sum / product of x along dim (a plain loop over the row-major values).
Tensor scan_ref(const Tensor& x, int64_t dim, bool product) {
  const auto v = values(x);
  const int64_t nd = x.dim();
  if (nd == 0) return make(v, {});
  const int64_t d = dim < 0 ? dim + nd : dim;
  int64_t inner = 1;
  for (int64_t k = d + 1; k < nd; ++k) inner *= x.size(k);
  const int64_t n = x.size(d), outer = x.numel() / std::max<int64_t>(n * inner, 1);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = product ? 1.0 : 0.0;
      for (int64_t k = 0; k < n; ++k) {
        const auto at = static_cast<size_t>((o * n + k) * inner + i);
        acc = product ? acc * v[at] : acc + v[at];
        out[at] = acc;
      }
    }
  return make(out, x.sizes());
}

Tensor with_zeros() {
  return make({0.7, -1.2, 0.0, 1.5, 0.9, 0.0, 1.1, 0.0, -0.6, 1.3, 0.0, 0.8, -1.4, 0.5, 1.7}, {3, 5});
}

}  // namespace

GRAFT_OP_RECORDS(cumulative) {
  std::vector<OpRecord> recs;
  for (int64_t dim : {0, 1, -1}) {
    recs.push_back({.name = "cumsum", .variant = "dim" + std::to_string(dim),
                    .fn = [dim](const TensorList& a) { return cumsum(a[0], dim); },
                    .reference = [dim](const TensorList& a) { return scan_ref(a[0], dim, false); },
                    .samples = [] { return std::vector<TensorList>{{r({3, 4}, 51)}, {r({2, 3, 2}, 52)}}; },
                    .errors = {{[] { cumsum(zeros({2, 3}), 2); }, {"cumsum", "dim 2"}},
                               {[] { cumsum(zeros({2}, kFloat16), 0); }, {"cumsum", "float16"}}}});
    recs.push_back({.name = "cumprod", .variant = "dim" + std::to_string(dim),
                    .fn = [dim](const TensorList& a) { return a[0].cumprod(dim); },
                    .reference = [dim](const TensorList& a) { return scan_ref(a[0], dim, true); },
                    .samples = [] { return std::vector<TensorList>{{r({3, 4}, 53, 0.5, 1.5)}, {r({2, 3, 2}, 54)}}; },
                    .errors = {{[] { cumprod(zeros({2, 3}), -3); }, {"cumprod", "dim -3"}}}});
  }
  recs.push_back({.name = "cumprod", .variant = "zeros",
                  .fn = [](const TensorList& a) { return cumprod(a[0], 1); },
                  .reference = [](const TensorList& a) { return scan_ref(a[0], 1, true); },
                  .samples = [] { return std::vector<TensorList>{{with_zeros()}}; },
                  // the zeros stay zeros in the non-contiguous copy; central differences step over
                  // them smoothly (the product is linear in each x_i)
                  .errors = {}});
  recs.push_back({.name = "cumsum", .variant = "0dim",
                  .fn = [](const TensorList& a) { return a[0].cumsum(0); },
                  .reference = [](const TensorList& a) { return scan_ref(a[0], 0, false); },
                  .samples = [] { return std::vector<TensorList>{{make({1.5}, {})}}; },
                  .non_contiguous = false});
  return recs;
}

namespace {

TEST(Cumulative, IntegerAndBoolInputsAccumulateInInt64) {
  const Tensor s = cumsum(tensor({true, true, false, true}), 0);
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(values(s), (std::vector<double>{1, 2, 2, 3}));
  const Tensor p = tensor({2, -3, 1, 4}).to(kInt32).cumprod(0);
  EXPECT_EQ(p.dtype(), kInt64);
  EXPECT_EQ(values(p), (std::vector<double>{2, -6, -6, -24}));
  const Tensor f = cumsum(tensor({1, 2, 3}), 0, kFloat64);
  EXPECT_EQ(f.dtype(), kFloat64);
  EXPECT_EQ(values(f), (std::vector<double>{1, 3, 6}));
}

// Gradient of sum(cumprod(x)) for x = (2, 0, 3, 0, 5) (worked by hand): y = (2, 0, 0, 0, 0);
// dL/dx0 = 1, dL/dx1 = x0 (1 + x2 + x2 x3 + x2 x3 x4) = 2 (1 + 3 + 0 + 0) = 8, the rest 0.
TEST(Cumulative, CumprodGradientWithZeros) {
  const Tensor x = tensor({2.0, 0.0, 3.0, 0.0, 5.0}, kFloat64).requires_grad_();
  cumprod(x, 0).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 8, 0, 0, 0}));
  // a zero first: dL/dx0 = 1 + x1 + x1 x2 = 1 + 4 + 12 = 17
  const Tensor z = tensor({0.0, 4.0, 3.0}, kFloat64).requires_grad_();
  cumprod(z, 0).sum().backward();
  EXPECT_EQ(values(z.grad()), (std::vector<double>{17, 0, 0}));
}

// Double backward with zeros: d/dx of (dL/dx . v) against central differences of the gradient.
TEST(Cumulative, CumprodDoubleBackwardWithZeros) {
  const std::vector<double> x0{0.7, 0.0, 1.3, -0.4, 0.0, 0.9};
  const std::vector<double> v{0.3, -1.1, 0.8, 0.5, 1.7, -0.6};
  auto first = [&](const Tensor& x, bool create) {
    const Tensor y = cumprod(x, 0);
    return autograd::grad({(y * make({1.0, -0.5, 2.0, 0.3, 1.2, -0.8}, {6})).sum()}, {x}, {}, std::nullopt, create)[0];
  };
  const Tensor x = make(x0, {6}).requires_grad_();
  const Tensor g = first(x, true);
  const Tensor gg = autograd::grad({(g * make(v, {6})).sum()}, {x})[0];
  const double h = 1e-6;
  for (size_t i = 0; i < x0.size(); ++i) {
    std::vector<double> xp = x0, xm = x0;
    xp[i] += h;
    xm[i] -= h;
    const auto gp = values(first(make(xp, {6}).requires_grad_(), false));
    const auto gm = values(first(make(xm, {6}).requires_grad_(), false));
    double num = 0;
    for (size_t j = 0; j < v.size(); ++j) num += (gp[j] - gm[j]) / (2 * h) * v[j];
    EXPECT_NEAR(values(gg)[i], num, 1e-6) << i;
  }
}

}  // namespace
}  // namespace graft::test
