// Op records: matmul, mm, bmm, addmm, linear, fused_linear; plus plain tests of BLAS operand layouts
// (transposed and strided operands), grad_fn names and edge cases.
#include <cmath>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// Row-major offset of a multi-index into a (possibly broadcast, left-padded) shape.
int64_t bcast_offset(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  const size_t pad = idx.size() - shape.size();
  int64_t off = 0;
  for (size_t i = 0; i < shape.size(); ++i) off = off * shape[i] + (shape[i] == 1 ? 0 : idx[pad + i]);
  return off;
}

// Reference matmul with PyTorch's rank rules: plain loops in double.
Tensor ref_matmul(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = values(a), vb = values(b);
  std::vector<int64_t> sa = a.sizes().vec(), sb = b.sizes().vec();
  const bool vec_a = sa.size() == 1, vec_b = sb.size() == 1;
  if (vec_a) sa.insert(sa.begin(), 1);
  if (vec_b) sb.push_back(1);
  const int64_t n = sa[sa.size() - 2], k = sa.back(), m = sb.back();
  EXPECT_EQ(k, sb[sb.size() - 2]);
  const std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const std::vector<int64_t> batch = ref_broadcast(ba, bb);
  int64_t nbatch = 1;
  for (int64_t s : batch) nbatch *= s;
  std::vector<double> out(static_cast<size_t>(nbatch * n * m), 0.0);
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    const int64_t oa = bcast_offset(idx, ba) * n * k, ob = bcast_offset(idx, bb) * k * m;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += va[static_cast<size_t>(oa + i * k + p)] * vb[static_cast<size_t>(ob + p * m + j)];
        out[static_cast<size_t>(bi * n * m + i * m + j)] = s;
      }
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<int64_t> shape = batch;
  if (!vec_a) shape.push_back(n);
  if (!vec_b) shape.push_back(m);
  return make(out, shape);
}

// beta * input + alpha * (m1 @ m2), input broadcast to (n, m).
Tensor ref_addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, double beta, double alpha) {
  const std::vector<double> prod = values(ref_matmul(m1, m2));
  const int64_t n = m1.size(0), m = m2.size(1);
  const std::vector<double> vi = values(input);
  const std::vector<int64_t> si = input.sizes().vec();
  std::vector<double> out(prod.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      out[static_cast<size_t>(i * m + j)] =
          beta * vi[static_cast<size_t>(bcast_offset({i, j}, si))] + alpha * prod[static_cast<size_t>(i * m + j)];
  return make(out, {n, m});
}

// input (*, in) @ weight(out, in)^T + bias(out): loops over the flattened leading dims.
Tensor ref_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const std::vector<double> vx = values(x), vw = values(w);
  const std::vector<double> vb = bias.defined() ? values(bias) : std::vector<double>();
  const int64_t in = w.size(1), outf = w.size(0), rows = x.numel() / in;
  std::vector<double> out(static_cast<size_t>(rows * outf));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t o = 0; o < outf; ++o) {
      double s = vb.empty() ? 0.0 : vb[static_cast<size_t>(o)];
      for (int64_t p = 0; p < in; ++p) s += vx[static_cast<size_t>(i * in + p)] * vw[static_cast<size_t>(o * in + p)];
      out[static_cast<size_t>(i * outf + o)] = s;
    }
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = outf;
  return make(out, shape);
}

OpRecord matmul_record(std::string variant, std::vector<TensorList> samples) {
  return {.name = "matmul", .variant = std::move(variant),
          .fn = [](const TensorList& a) { return matmul(a[0], a[1]); },
          .reference = [](const TensorList& a) { return ref_matmul(a[0], a[1]); },
          .samples = [s = std::move(samples)] { return s; },
          .atol32 = 1e-4, .rtol32 = 1e-4,
          .errors = {{[] { matmul(zeros({2, 3}), zeros({4, 5})); }, {"matmul", "[2, 3]", "[4, 5]", "multiplied"}},
                     {[] { matmul(zeros({3}), zeros({4})); }, {"matmul", "[3]", "[4]"}},
                     {[] { matmul(zeros({2, 2, 3}), zeros({3, 3, 4})); }, {"matmul", "[2, 2, 3]", "[3, 3, 4]", "broadcast"}},
                     {[] { matmul(zeros({}), zeros({3})); }, {"matmul", "at least 1-D"}},
                     {[] { matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)); }, {"matmul", "same dtype", "float32", "float64"}}}};
}

}  // namespace

GRAFT_OP_RECORDS(linalg) {
  std::vector<OpRecord> recs;
  recs.push_back({.name = "mm",
                  .fn = [](const TensorList& a) { return mm(a[0], a[1]); },
                  .reference = [](const TensorList& a) { return ref_matmul(a[0], a[1]); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 3}, 1), r({3, 4}, 2)},
                                                   {r({3, 3}, 3), r({3, 3}, 4)},
                                                   {r({1, 5}, 5), r({5, 1}, 6)},
                                                   {r({4, 1}, 7), r({1, 3}, 8)}};
                  },
                  .atol32 = 1e-4, .rtol32 = 1e-4,
                  .errors = {{[] { mm(zeros({2, 3}), zeros({4, 5})); }, {"mm", "mat1 and mat2 shapes that can be multiplied", "[2, 3]", "[4, 5]"}},
                             {[] { mm(zeros({2, 3, 4}), zeros({4, 5})); }, {"mm", "2-D", "[2, 3, 4]", "bmm"}},
                             {[] { mm(zeros({3}), zeros({3, 2})); }, {"mm", "2-D", "[3]"}},
                             {[] { mm(zeros({2, 3}), zeros({3, 2}, kFloat64)); },
                              {"mm", "expected m1 and m2 to have the same dtype", "float32", "float64"}},
                             {[] { zeros({2, 3}).mm(zeros({2, 3})); }, {"mm", "[2, 3]", "multiplied"}}}});
  recs.push_back({.name = "bmm",
                  .fn = [](const TensorList& a) { return bmm(a[0], a[1]); },
                  .reference = [](const TensorList& a) { return ref_matmul(a[0], a[1]); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 2, 3}, 11), r({2, 3, 4}, 12)},
                                                   {r({3, 1, 2}, 13), r({3, 2, 2}, 14)},
                                                   {r({1, 3, 3}, 15), r({1, 3, 3}, 16)}};
                  },
                  .atol32 = 1e-4, .rtol32 = 1e-4,
                  .errors = {{[] { bmm(zeros({2, 2, 3}), zeros({3, 3, 4})); }, {"bmm", "batch size", "[2, 2, 3]", "[3, 3, 4]"}},
                             {[] { bmm(zeros({2, 2, 3}), zeros({2, 4, 4})); }, {"bmm", "multiplied", "[2, 2, 3]", "[2, 4, 4]"}},
                             {[] { bmm(zeros({2, 3}), zeros({2, 3, 4})); }, {"bmm", "3-D", "[2, 3]"}},
                             {[] { bmm(zeros({1, 2, 3}, kFloat64), zeros({1, 3, 4})); }, {"bmm", "same dtype"}}}});
  recs.push_back({.name = "addmm", .variant = "broadcast_row",
                  .fn = [](const TensorList& a) { return addmm(a[0], a[1], a[2], 0.5, 2.0); },
                  .reference = [](const TensorList& a) { return ref_addmm(a[0], a[1], a[2], 0.5, 2.0); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({4}, 21), r({2, 3}, 22), r({3, 4}, 23)},
                                                   {r({2, 4}, 24), r({2, 3}, 25), r({3, 4}, 26)},
                                                   {r({2, 1}, 27), r({2, 3}, 28), r({3, 4}, 29)},
                                                   {r({}, 30), r({3, 2}, 31), r({2, 2}, 32)}};
                  },
                  .atol32 = 1e-4, .rtol32 = 1e-4,
                  .errors = {{[] { addmm(zeros({3}), zeros({2, 3}), zeros({3, 4})); }, {"addmm", "[3]", "[2, 4]", "broadcast"}},
                             {[] { addmm(zeros({4}), zeros({2, 3}), zeros({2, 4})); }, {"addmm", "[2, 3]", "[2, 4]", "multiplied"}},
                             {[] { addmm(zeros({4}), zeros({2, 3, 1}), zeros({3, 4})); }, {"addmm", "2-D", "[2, 3, 1]"}},
                             {[] { addmm(zeros({4}, kFloat64), zeros({2, 3}), zeros({3, 4})); }, {"addmm", "dtype", "float64"}}}});
  recs.push_back({.name = "addmm", .variant = "defaults",
                  .fn = [](const TensorList& a) { return addmm(a[0], a[1], a[2]); },
                  .reference = [](const TensorList& a) { return ref_addmm(a[0], a[1], a[2], 1.0, 1.0); },
                  .samples = [] { return std::vector<TensorList>{{r({1, 3}, 33), r({2, 2}, 34), r({2, 3}, 35)}}; },
                  .atol32 = 1e-4, .rtol32 = 1e-4});
  recs.push_back(matmul_record("1d_1d", {{r({3}, 41), r({3}, 42)}}));
  recs.push_back(matmul_record("2d_2d", {{r({2, 3}, 43), r({3, 4}, 44)}}));
  recs.push_back(matmul_record("1d_2d", {{r({3}, 45), r({3, 2}, 46)}}));
  recs.push_back(matmul_record("2d_1d", {{r({2, 3}, 47), r({3}, 48)}}));
  recs.push_back(matmul_record("3d_3d", {{r({2, 2, 3}, 49), r({2, 3, 2}, 50)}, {r({1, 2, 3}, 51), r({2, 3, 2}, 52)}}));
  recs.push_back(matmul_record("3d_2d", {{r({2, 2, 3}, 53), r({3, 4}, 54)}}));
  recs.push_back(matmul_record("3d_1d", {{r({2, 2, 3}, 55), r({3}, 56)}}));
  recs.push_back(matmul_record("2d_3d", {{r({2, 3}, 57), r({2, 3, 2}, 58)}}));
  recs.push_back(matmul_record("1d_3d", {{r({3}, 59), r({2, 3, 2}, 60)}}));
  recs.push_back(matmul_record("4d_3d", {{r({2, 1, 2, 3}, 61), r({3, 3, 2}, 62)}}));
  recs.push_back({.name = "linear", .variant = "2d_bias",
                  .fn = [](const TensorList& a) { return F::linear(a[0], a[1], a[2]); },
                  .reference = [](const TensorList& a) { return ref_linear(a[0], a[1], a[2]); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 4}, 71), r({2, 4}, 72), r({2}, 73)}}; },
                  .atol32 = 1e-4, .rtol32 = 1e-4,
                  .errors = {{[] { F::linear(zeros({3, 4}), zeros({2, 5})); }, {"linear", "[3, 4]", "[2, 5]", "in_features"}},
                             {[] { F::linear(zeros({3, 4}), zeros({4})); }, {"linear", "weight", "2-D", "[4]"}},
                             {[] { F::linear(zeros({3, 4}), zeros({2, 4}), zeros({3})); }, {"linear", "bias", "[3]", "[2, 4]"}}}});
  recs.push_back({.name = "linear", .variant = "2d_no_bias",
                  .fn = [](const TensorList& a) { return F::linear(a[0], a[1]); },
                  .reference = [](const TensorList& a) { return ref_linear(a[0], a[1], Tensor()); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 4}, 74), r({2, 4}, 75)}}; },
                  .atol32 = 1e-4, .rtol32 = 1e-4});
  recs.push_back({.name = "linear", .variant = "3d_bias",
                  .fn = [](const TensorList& a) { return F::linear(a[0], a[1], a[2]); },
                  .reference = [](const TensorList& a) { return ref_linear(a[0], a[1], a[2]); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 3, 4}, 76), r({2, 4}, 77), r({2}, 78)},
                                                   {r({4}, 79), r({3, 4}, 80), r({3}, 81)}};
                  },
                  .atol32 = 1e-4, .rtol32 = 1e-4});
  recs.push_back({.name = "linear", .variant = "3d_no_bias",
                  .fn = [](const TensorList& a) { return F::linear(a[0], a[1]); },
                  .reference = [](const TensorList& a) { return ref_linear(a[0], a[1], Tensor()); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3, 4}, 82), r({2, 4}, 83)}}; },
                  .atol32 = 1e-4, .rtol32 = 1e-4});

  // ---- fused_linear: act(linear(x, w, b)) as one node, against the plain loop and the activation ----
  using Act = F::FusedActivation;
  struct FusedCase {
    const char* variant;
    Act act;
    double (*f)(double);
  };
  static constexpr FusedCase kFused[] = {
      {"relu", Act::ReLU, [](double z) { return z > 0 ? z : 0.0; }},
      {"gelu", Act::GELU, [](double z) { return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0))); }},
      {"gelu_tanh", Act::GELUTanh,
       [](double z) { return 0.5 * z * (1.0 + std::tanh(0.7978845608028654 * (z + 0.044715 * z * z * z))); }},
      {"sigmoid", Act::Sigmoid, [](double z) { return 1.0 / (1.0 + std::exp(-z)); }},
      {"tanh", Act::Tanh, [](double z) { return std::tanh(z); }}};
  for (const FusedCase& c : kFused) {
    recs.push_back({.name = "fused_linear", .variant = c.variant,
                    .fn = [act = c.act](const TensorList& a) { return F::fused_linear(a[0], a[1], a[2], act); },
                    .reference = [f = c.f](const TensorList& a) {
                      const Tensor z = ref_linear(a[0], a[1], a[2]);
                      std::vector<double> v = values(z);
                      for (double& x : v) x = f(x);
                      return make(v, z.sizes());
                    },
                    .samples = [] {
                      return std::vector<TensorList>{{r({3, 4}, 91), r({2, 4}, 92), r({2}, 93)},
                                                     {r({2, 3, 4}, 94), r({3, 4}, 95), r({3}, 96)}};
                    },
                    .atol32 = 1e-4, .rtol32 = 1e-4});
  }
  recs.back().errors = {{[] { F::fused_linear(zeros({2, 5}), zeros({3, 4}), Tensor(), Act::ReLU); },
                         {"fused_linear", "in_features", "[2, 5]"}},
                        {[] { F::fused_linear(zeros({2, 4}), zeros({3, 4}), zeros({2}), Act::ReLU); },
                         {"fused_linear", "bias of shape [3]"}}};
  recs.push_back({.name = "fused_linear", .variant = "relu_no_bias",
                  .fn = [](const TensorList& a) { return F::fused_linear(a[0], a[1], Tensor(), Act::ReLU); },
                  .reference = [](const TensorList& a) {
                    const Tensor z = ref_linear(a[0], a[1], Tensor());
                    std::vector<double> v = values(z);
                    for (double& x : v) x = x > 0 ? x : 0.0;
                    return make(v, z.sizes());
                  },
                  .samples = [] { return std::vector<TensorList>{{r({3, 4}, 97), r({2, 4}, 98)}}; },
                  .atol32 = 1e-4, .rtol32 = 1e-4});
  return recs;
}

namespace {

// mm reads transposed contiguous matrices without copying and copies other layouts; either way the
// result matches the reference, in float32 and float64.
TEST(Linalg, MmTransposedAndStridedOperands) {
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    const Tensor a = r({4, 3}, 101).to(dt), b = r({5, 4}, 102).to(dt), w = r({3, 10}, 103).to(dt);
    const Tensor at = a.t(), bt = b.t();  // (3, 4), (4, 5): transposed views, not contiguous
    ASSERT_FALSE(at.is_contiguous());
    EXPECT_TRUE(all_close(mm(at, bt), ref_matmul(at, bt), tol, tol));
    EXPECT_TRUE(all_close(mm(at, bt.contiguous()), ref_matmul(at, bt), tol, tol));
    EXPECT_TRUE(all_close(mm(at.contiguous(), bt), ref_matmul(at, bt), tol, tol));
    const Tensor ws = w.slice(1, 0, std::nullopt, 2);  // (3, 5) with column stride 2: copied
    ASSERT_FALSE(ws.is_contiguous());
    EXPECT_TRUE(all_close(mm(at.t(), ws), ref_matmul(a, ws), tol, tol));
    EXPECT_TRUE(all_close(mm(ws.t(), a.t()), ref_matmul(ws.t(), a.t()), tol, tol));
    const Tensor rows = r({6, 4}, 104).to(dt).slice(0, 1, 5, 2);  // (2, 4), row stride 8: lda = 8
    EXPECT_TRUE(all_close(mm(rows, bt), ref_matmul(rows, bt), tol, tol));
    const Tensor ex = r({1, 4}, 105).to(dt).expand({3, 4});  // row stride 0: copied
    EXPECT_TRUE(all_close(mm(ex, bt), ref_matmul(ex, bt), tol, tol));
    // bmm with a transposed batch and an expanded (stride-0) batch
    const Tensor ba = r({2, 3, 4}, 106).to(dt).transpose(1, 2), bb = r({1, 3, 2}, 107).to(dt).expand({2, 3, 2});
    EXPECT_TRUE(all_close(bmm(ba, bb), ref_matmul(ba, bb), tol, tol));
  }
}

TEST(Linalg, GradFnNames) {
  const Tensor a = r({2, 3}, 111).requires_grad_(), b = r({3, 2}, 112).requires_grad_();
  EXPECT_EQ(mm(a, b).grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(bmm(a.unsqueeze(0), b.unsqueeze(0)).grad_fn()->name(), "BmmBackward0");
  EXPECT_EQ(addmm(r({2}, 113), a, b).grad_fn()->name(), "AddmmBackward0");
  EXPECT_EQ(F::linear(a, b.t(), r({2}, 114)).grad_fn()->name(), "AddmmBackward0");
}

TEST(Linalg, GradientsAgainstHandFormulas) {
  // mm: d a = g @ b^T, d b = a^T @ g with g = ones
  const Tensor a = r({2, 3}, 121).requires_grad_(), b = r({3, 4}, 122).requires_grad_();
  mm(a, b).sum().backward();
  const auto va = values(a), vb = values(b);
  std::vector<double> ga(6), gb(12);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t j = 0; j < 4; ++j) {
        ga[static_cast<size_t>(i * 3 + p)] += vb[static_cast<size_t>(p * 4 + j)];
        gb[static_cast<size_t>(p * 4 + j)] += va[static_cast<size_t>(i * 3 + p)];
      }
  EXPECT_TRUE(all_close(a.grad(), ga, {2, 3}));
  EXPECT_TRUE(all_close(b.grad(), gb, {3, 4}));
  // addmm: d input = beta * g summed to input's shape
  const Tensor in = r({4}, 123).requires_grad_();
  addmm(in, a.detach(), b.detach(), 0.5, 3.0).sum().backward();
  EXPECT_TRUE(all_close(in.grad(), std::vector<double>(4, 1.0), {4}));
}

TEST(Linalg, EmptyAndIntegerProducts) {
  // k == 0: an empty sum gives zeros; addmm gives beta * input
  EXPECT_TRUE(all_close(mm(zeros({2, 0}), zeros({0, 3})), std::vector<double>(6, 0.0), {2, 3}));
  EXPECT_TRUE(all_close(addmm(ones({3}), zeros({2, 0}), zeros({0, 3}), 2.0), std::vector<double>(6, 2.0), {2, 3}));
  EXPECT_EQ(mm(zeros({0, 2}), zeros({2, 3})).sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(matmul(zeros({2, 0, 3}), zeros({3, 4})).sizes().vec(), (std::vector<int64_t>{2, 0, 4}));
  // beta = 0 ignores the input, even nan (as PyTorch)
  const double nan = std::nan("");
  EXPECT_TRUE(all_close(addmm(full({2, 2}, nan), ones({2, 1}), ones({1, 2}), 0.0), std::vector<double>(4, 1.0), {2, 2}));
  // int64 products use an exact loop
  const Tensor ia = tensor({{1, 2, 3}, {4, 5, 6}}), ib = tensor({{7, 8}, {9, 10}, {11, 12}});
  const Tensor ip = mm(ia, ib);
  EXPECT_EQ(ip.dtype(), kInt64);
  EXPECT_TRUE(all_close(ip, {58, 64, 139, 154}, {2, 2}, 0, 0));
  EXPECT_TRUE(all_close(matmul(ia.unsqueeze(0).expand({2, 2, 3}), ib), {58, 64, 139, 154, 58, 64, 139, 154}, {2, 2, 2}, 0, 0));
  EXPECT_TRUE(all_close(matmul(tensor({1, 2}), tensor({3, 4})), {11}, {}, 0, 0));
}

TEST(Linalg, LargerProductMatchesReference) {
  // Large enough for OpenBLAS's blocked kernels, with a transposed operand.
  const Tensor a = r({37, 70}, 131), b = r({45, 70}, 132);
  EXPECT_TRUE(all_close(mm(a, b.t()), ref_matmul(a, b.t()), 1e-11, 1e-11));
  EXPECT_TRUE(all_close(F::linear(a.to(kFloat32), b.to(kFloat32)), ref_matmul(a, b.t()), 1e-4, 1e-4));
  EXPECT_TRUE(all_close(matmul(b, a.t()), ref_matmul(b, a.t()), 1e-11, 1e-11));
}

}  // namespace
}  // namespace graft::test
