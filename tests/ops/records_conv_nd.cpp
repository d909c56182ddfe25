// Op records: conv1d, conv3d (stride, padding, dilation, groups, no bias, 1x1x1, unbatched) against
// a plain loop over up to three spatial dims in double, and conv_transpose1d against its definition
// as a scatter loop; plus grad_fn and forward-op names, double backward, a larger conv3d through the
// blocked BLAS kernels at several thread counts.
#include <cmath>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// This file's sample range is [-1, 1).
Tensor nd_r(IntArrayRef shape, uint64_t seed) { return uniform_sample(shape, seed, -1, 1); }
SampleSpec nd_S(std::vector<int64_t> shape, uint64_t seed) { return {std::move(shape), seed, -1, 1}; }

// One value per spatial dim (D of them).
struct NdArgs {
  std::vector<int64_t> s, p, d;
  int64_t groups = 1;
};

// out[n, o, z...] = b[o] + sum over c and taps t of x[n, grp*Cg + c, z*s - p + t*d] * w[o, c, t],
// the spatial dims padded on the left to three of size 1 (so 1-D and 3-D share this loop).
Tensor ref_conv_nd(const Tensor& x, const Tensor& w, const Tensor& b, const NdArgs& a) {
  const int64_t D = w.dim() - 2;
  const bool unbatched = x.dim() == D + 1;
  const std::vector<double> vx = values(x), vw = values(w), vb = b.defined() ? values(b) : std::vector<double>();
  const int64_t N = unbatched ? 1 : x.size(0), C = x.size(-D - 1), O = w.size(0), Cg = w.size(1);
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1}, o[3];
  for (int64_t i = 0; i < D; ++i) {
    const auto j = static_cast<size_t>(i);
    in[3 - D + i] = x.size(x.dim() - D + i);
    k[3 - D + i] = w.size(2 + i);
    s[3 - D + i] = a.s[j];
    p[3 - D + i] = a.p[j];
    d[3 - D + i] = a.d[j];
  }
  for (int i = 0; i < 3; ++i) o[i] = (in[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
  const int64_t Og = O / a.groups;
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t z0 = 0; z0 < o[0]; ++z0)
        for (int64_t z1 = 0; z1 < o[1]; ++z1)
          for (int64_t z2 = 0; z2 < o[2]; ++z2) {
            double acc = vb.empty() ? 0.0 : vb[static_cast<size_t>(oc)];
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t t0 = 0; t0 < k[0]; ++t0)
                for (int64_t t1 = 0; t1 < k[1]; ++t1)
                  for (int64_t t2 = 0; t2 < k[2]; ++t2) {
                    const int64_t i0 = z0 * s[0] - p[0] + t0 * d[0], i1 = z1 * s[1] - p[1] + t1 * d[1],
                                  i2 = z2 * s[2] - p[2] + t2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const int64_t ci = (oc / Og) * Cg + c;
                    acc += vx[static_cast<size_t>((((n * C + ci) * in[0] + i0) * in[1] + i1) * in[2] + i2)] *
                           vw[static_cast<size_t>((((oc * Cg + c) * k[0] + t0) * k[1] + t1) * k[2] + t2)];
                  }
            out.push_back(acc);
          }
  std::vector<int64_t> shape;
  if (!unbatched) shape.push_back(N);
  shape.push_back(O);
  for (int64_t i = 0; i < D; ++i) shape.push_back(o[3 - D + i]);
  return make(out, shape);
}

// conv_transpose1d by its definition: x[n, c, l] adds x * w[c, o, t] to out[n, grp*Og + o, l*s - p + t*d];
// the output length is (L - 1) s - 2 p + d (k - 1) + output_padding + 1.
Tensor ref_conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& b, const NdArgs& a, int64_t op) {
  const bool unbatched = x.dim() == 2;
  const std::vector<double> vx = values(x), vw = values(w), vb = b.defined() ? values(b) : std::vector<double>();
  const int64_t N = unbatched ? 1 : x.size(0), C = x.size(-2), L = x.size(-1);
  const int64_t Og = w.size(1), k = w.size(2), O = Og * a.groups, Cg = C / a.groups;
  const int64_t s = a.s[0], p = a.p[0], d = a.d[0];
  const int64_t oL = (L - 1) * s - 2 * p + d * (k - 1) + op + 1;
  std::vector<double> out(static_cast<size_t>(N * O * oL));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t l = 0; l < oL; ++l)
        out[static_cast<size_t>((n * O + o) * oL + l)] = vb.empty() ? 0.0 : vb[static_cast<size_t>(o)];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t l = 0; l < L; ++l)
        for (int64_t o = 0; o < Og; ++o)
          for (int64_t t = 0; t < k; ++t) {
            const int64_t ol = l * s - p + t * d;
            if (ol < 0 || ol >= oL) continue;
            out[static_cast<size_t>((n * O + (c / Cg) * Og + o) * oL + ol)] +=
                vx[static_cast<size_t>((n * C + c) * L + l)] * vw[static_cast<size_t>((c * Og + o) * k + t)];
          }
  if (unbatched) return make(out, {O, oL});
  return make(out, {N, O, oL});
}

// samples: {x, w, b} (bias) or {x, w} (no bias)
OpRecord conv1d_record(std::string variant, NdArgs a, Specs samples) {
  return {.name = "conv1d",
          .variant = std::move(variant),
          .fn =
              [a](const TensorList& t) {
                return F::conv1d(t[0], t[1],
                                 F::Conv1dFuncOptions()
                                     .bias(t.size() > 2 ? t[2] : Tensor())
                                     .stride(a.s[0])
                                     .padding(a.p[0])
                                     .dilation(a.d[0])
                                     .groups(a.groups));
              },
          .reference = [a](const TensorList& t) { return ref_conv_nd(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), a); },
          .samples = lazy_samples(std::move(samples))};
}

OpRecord conv3d_record(std::string variant, NdArgs a, Specs samples) {
  return {.name = "conv3d",
          .variant = std::move(variant),
          .fn =
              [a](const TensorList& t) {
                // ATen's spelling (the functional one is checked by the module tests)
                return graft::conv3d(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), a.s, a.p, a.d, a.groups);
              },
          .reference = [a](const TensorList& t) { return ref_conv_nd(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), a); },
          .samples = lazy_samples(std::move(samples))};
}

OpRecord conv_transpose1d_record(std::string variant, NdArgs a, int64_t op, Specs samples) {
  return {.name = "conv_transpose1d",
          .variant = std::move(variant),
          .fn =
              [a, op](const TensorList& t) {
                return F::conv_transpose1d(t[0], t[1],
                                           F::ConvTranspose1dFuncOptions()
                                               .bias(t.size() > 2 ? t[2] : Tensor())
                                               .stride(a.s[0])
                                               .padding(a.p[0])
                                               .output_padding(op)
                                               .groups(a.groups)
                                               .dilation(a.d[0]));
              },
          .reference =
              [a, op](const TensorList& t) {
                return ref_conv_transpose1d(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), a, op);
              },
          .samples = lazy_samples(std::move(samples))};
}

const NdArgs k1{{1}, {0}, {1}};
const NdArgs k3{{1, 1, 1}, {0, 0, 0}, {1, 1, 1}};

}  // namespace

GRAFT_OP_RECORDS(conv_nd) {
  std::vector<OpRecord> recs;
  recs.push_back(conv1d_record("basic", k1, {{nd_S({2, 3, 7}, 1), nd_S({4, 3, 3}, 2), nd_S({4}, 3)}}));
  recs.back().errors = {
      {[] {
         F::conv1d(zeros({3}), zeros({2, 3, 1}));
       },
       {"conv1d", "[3]", "2-D", "3-D", "(N, C, L)"}},
      {[] {
         F::conv1d(zeros({1, 3, 4}), zeros({2, 3, 1, 1}));
       },
       {"conv1d", "weight", "3-D", "[2, 3, 1, 1]"}},
      {[] {
         F::conv1d(zeros({1, 4, 5}), zeros({2, 3, 3}));
       },
       {"conv1d", "3 channels", "4 channels", "[1, 4, 5]"}},
      {[] {
         F::conv1d(zeros({1, 1, 2}), zeros({1, 1, 3}));
       },
       {"conv1d", "kernel no larger than the padded input", "length: padded input size 2", "kernel size 3"}},
      {[] {
         F::conv1d(zeros({1, 1, 5}), zeros({1, 1, 3}), F::Conv1dFuncOptions().dilation(3));
       },
       {"conv1d", "kernel size 7", "dilation (3)"}},
      {[] {
         F::conv1d(zeros({1, 1, 5}), zeros({1, 1, 3}), F::Conv1dFuncOptions().stride(0));
       },
       {"conv1d", "positive stride", "(0)"}},
      {[] {
         F::conv1d(zeros({1, 1, 5}), zeros({1, 1, 3}), F::Conv1dFuncOptions().padding(-1));
       },
       {"conv1d", "non-negative padding", "(-1)"}},
      {[] {
         F::conv1d(zeros({1, 4, 5}), zeros({3, 2, 3}), F::Conv1dFuncOptions().groups(2));
       },
       {"conv1d", "out_channels", "divisible by groups", "groups = 2"}},
      {[] {
         F::conv1d(zeros({1, 3, 5}), zeros({2, 3, 3}), F::Conv1dFuncOptions().groups(0));
       },
       {"conv1d", "groups > 0"}},
      {[] {
         F::conv1d(zeros({1, 3, 5}), zeros({2, 3, 3}), F::Conv1dFuncOptions().bias(zeros({3})));
       },
       {"conv1d", "bias of shape [2]", "[3]"}},
      {[] {
         F::conv1d(zeros({1, 3, 5}), zeros({2, 3, 3}, kFloat64));
       },
       {"conv1d", "same dtype", "float64"}},
      {[] {
         F::conv1d(zeros({1, 3, 5}, kInt64), zeros({2, 3, 3}, kInt64));
       },
       {"conv1d", "floating-point", "int64"}},
      {[] {
         graft::conv1d(zeros({1, 3, 5}), zeros({2, 3, 3}), {}, {1, 2});
       },
       {"conv1d", "stride of 1 value", "2 values"}},
      {[] {
         F::Conv1dFuncOptions().stride({1, 2});
       },
       {"ExpandingArray", "2 values"}},
  };
  recs.push_back(conv1d_record("stride_padding_dilation", {{2}, {2}, {2}},
                               {{nd_S({2, 2, 9}, 4), nd_S({3, 2, 3}, 5), nd_S({3}, 6)}}));
  recs.push_back(conv1d_record("groups", {{1}, {1}, {1}, 2}, {{nd_S({1, 4, 6}, 7), nd_S({6, 2, 3}, 8), nd_S({6}, 9)}}));
  recs.push_back(conv1d_record("unbatched_no_bias", {{2}, {0}, {1}}, {{nd_S({3, 6}, 10), nd_S({2, 3, 2}, 11)}}));
  recs.push_back(conv1d_record("1x1", k1, {{nd_S({2, 3, 4}, 12), nd_S({2, 3, 1}, 13), nd_S({2}, 14)}}));

  recs.push_back(conv3d_record("basic", k3, {{nd_S({2, 2, 4, 4, 3}, 21), nd_S({3, 2, 2, 3, 2}, 22), nd_S({3}, 23)}}));
  recs.back().errors = {
      {[] {
         F::conv3d(zeros({3, 4, 4}), zeros({2, 3, 1, 1, 1}));
       },
       {"conv3d", "[3, 4, 4]", "4-D", "5-D", "(N, C, D, H, W)"}},
      {[] {
         F::conv3d(zeros({1, 3, 4, 4, 4}), zeros({2, 3, 1, 1}));
       },
       {"conv3d", "weight", "5-D", "[2, 3, 1, 1]"}},
      {[] {
         F::conv3d(zeros({1, 4, 3, 3, 3}), zeros({2, 3, 1, 1, 1}));
       },
       {"conv3d", "3 channels", "4 channels"}},
      {[] {
         F::conv3d(zeros({1, 1, 2, 4, 4}), zeros({1, 1, 3, 1, 1}));
       },
       {"conv3d", "depth: padded input size 2", "kernel size 3"}},
      {[] {
         F::conv3d(zeros({1, 1, 4, 4, 4}), zeros({1, 1, 1, 1, 1}), F::Conv3dFuncOptions().dilation({1, 0, 1}));
       },
       {"conv3d", "positive dilation", "(1, 0, 1)"}},
      {[] {
         F::conv3d(zeros({1, 1, 4, 4, 4}), zeros({1, 1, 1, 1, 1}), F::Conv3dFuncOptions().stride({1, 1, -1}));
       },
       {"conv3d", "positive stride", "(1, 1, -1)"}},
      {[] {
         F::conv3d(zeros({1, 3, 4, 4, 4}), zeros({2, 1, 1, 1, 1}), F::Conv3dFuncOptions().groups(2));
       },
       {"conv3d", "in_channels", "divisible by groups"}},
      {[] {
         F::conv3d(zeros({1, 3, 4, 4, 4}, kInt64), zeros({2, 3, 1, 1, 1}, kInt64));
       },
       {"conv3d", "floating-point"}},
      {[] {
         graft::conv3d(zeros({1, 1, 4, 4, 4}), zeros({1, 1, 1, 1, 1}), {}, {1, 2});
       },
       {"conv3d", "stride of 1 or 3 values", "2 values"}},
  };
  recs.push_back(conv3d_record("stride_padding_dilation", {{2, 1, 2}, {1, 0, 1}, {1, 2, 1}},
                               {{nd_S({1, 2, 5, 6, 5}, 24), nd_S({2, 2, 3, 2, 2}, 25), nd_S({2}, 26)}}));
  recs.push_back(conv3d_record("groups", {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 2},
                               {{nd_S({1, 4, 3, 3, 2}, 27), nd_S({4, 2, 2, 2, 2}, 28), nd_S({4}, 29)}}));
  recs.push_back(conv3d_record("unbatched_no_bias", k3, {{nd_S({2, 3, 3, 4}, 30), nd_S({2, 2, 1, 2, 2}, 31)}}));
  recs.push_back(conv3d_record("1x1x1", k3, {{nd_S({2, 3, 2, 2, 3}, 32), nd_S({2, 3, 1, 1, 1}, 33), nd_S({2}, 34)}}));

  recs.push_back(conv_transpose1d_record("basic", k1, 0, {{nd_S({2, 3, 4}, 41), nd_S({3, 2, 3}, 42), nd_S({2}, 43)}}));
  recs.back().errors = {
      {[] {
         F::conv_transpose1d(zeros({3}), zeros({3, 2, 1}));
       },
       {"conv_transpose1d", "[3]", "2-D", "3-D"}},
      {[] {
         F::conv_transpose1d(zeros({1, 3, 4}), zeros({3, 2, 1, 1}));
       },
       {"conv_transpose1d", "weight", "3-D"}},
      {[] {
         F::conv_transpose1d(zeros({1, 4, 5}), zeros({3, 2, 3}));
       },
       {"conv_transpose1d", "weight.size(0) = 3"}},
      {[] {
         F::conv_transpose1d(zeros({1, 3, 5}), zeros({3, 2, 3}), F::ConvTranspose1dFuncOptions().bias(zeros({3})));
       },
       {"conv_transpose1d", "bias of shape [2]"}},
      {[] {
         F::conv_transpose1d(zeros({1, 3, 5}), zeros({3, 2, 3}),
                             F::ConvTranspose1dFuncOptions().stride(2).output_padding(2));
       },
       {"conv_transpose1d", "output_padding smaller than stride", "(2)"}},
      {[] {
         F::conv_transpose1d(zeros({1, 3, 2}), zeros({3, 2, 1}), F::ConvTranspose1dFuncOptions().padding(1));
       },
       {"conv_transpose1d", "positive output size", "length 0"}},
      {[] {
         F::conv_transpose1d(zeros({1, 3, 5}), zeros({3, 2, 3}, kFloat64));
       },
       {"conv_transpose1d", "one dtype"}},
  };
  recs.push_back(conv_transpose1d_record("stride_padding_output_padding_dilation", {{2}, {1}, {2}}, 1,
                                         {{nd_S({2, 2, 4}, 44), nd_S({2, 3, 3}, 45), nd_S({3}, 46)}}));
  recs.push_back(conv_transpose1d_record("groups", {{1}, {1}, {1}, 2}, 0,
                                         {{nd_S({1, 4, 3}, 47), nd_S({4, 1, 2}, 48), nd_S({2}, 49)}}));
  recs.push_back(
      conv_transpose1d_record("unbatched_no_bias", {{3}, {0}, {1}}, 2, {{nd_S({2, 3}, 50), nd_S({2, 2, 2}, 51)}}));
  return recs;
}

namespace {

TEST(ConvNd, GradFnAndForwardOpNames) {
  const Tensor x1 = nd_r({1, 2, 6}, 61).requires_grad_(), w1 = nd_r({3, 2, 3}, 62).requires_grad_();
  const Tensor y1 = F::conv1d(x1, w1);
  EXPECT_EQ(y1.grad_fn()->name(), "SqueezeBackward1");  // as PyTorch: conv1d runs on the 2-D path
  // Its input: the 2-D convolution's node, recorded as conv1d's.
  const auto conv1 = y1.grad_fn()->next_edges.at(0).fn;
  ASSERT_TRUE(conv1);
  EXPECT_EQ(conv1->name(), "ConvolutionBackward0");
  EXPECT_EQ(std::string(conv1->forward_op_name()), "conv1d");

  const Tensor x3 = nd_r({1, 2, 3, 3, 3}, 63).requires_grad_(), w3 = nd_r({2, 2, 2, 2, 2}, 64).requires_grad_();
  const Tensor y3 = F::conv3d(x3, w3, F::Conv3dFuncOptions().padding(1));
  EXPECT_EQ(y3.grad_fn()->name(), "ConvolutionBackward0");
  EXPECT_EQ(std::string(y3.grad_fn()->forward_op_name()), "conv3d");
  const TensorList g = autograd::grad({y3.pow(2).sum()}, {x3, w3}, {}, std::nullopt, /*create_graph=*/true);
  ASSERT_TRUE(g[0].grad_fn() && g[1].grad_fn());
  EXPECT_EQ(g[0].grad_fn()->name(), "ConvolutionBackwardBackward0");
  EXPECT_EQ(g[1].grad_fn()->name(), "ConvolutionBackwardBackward0");

  const Tensor xt = nd_r({1, 2, 4}, 65).requires_grad_(), wt = nd_r({2, 3, 3}, 66).requires_grad_();
  const auto convt = F::conv_transpose1d(xt, wt).grad_fn()->next_edges.at(0).fn;
  ASSERT_TRUE(convt);
  EXPECT_EQ(std::string(convt->forward_op_name()), "conv_transpose1d");
}

TEST(ConvNd, LargerConv3dMatchesReferenceAtEveryThreadCount) {
  // Big enough for the blocked BLAS kernels and several samples per thread: 6 x 4 x 7 x 8 x 9 input,
  // 8 x 2 x 3 x 3 x 3 weight, groups 2, stride (1, 2, 1), padding 1, dilation (2, 1, 1).
  const NdArgs a{{1, 2, 1}, {1, 1, 1}, {2, 1, 1}, 2};
  const Tensor x = nd_r({6, 4, 7, 8, 9}, 71), w = nd_r({8, 2, 3, 3, 3}, 72), b = nd_r({8}, 73);
  const Tensor expected = ref_conv_nd(x, w, b, a);
  const int threads = get_num_threads();
  Tensor first_y, first_gx, first_gw;
  for (int n : {1, 2, 4}) {
    set_num_threads(n);
    const Tensor x32 = x.to(kFloat32).requires_grad_(), w32 = w.to(kFloat32).requires_grad_();
    const Tensor y = graft::conv3d(x32, w32, b.to(kFloat32), a.s, a.p, a.d, a.groups);
    EXPECT_TRUE(all_close(y, expected, 1e-4, 1e-4));
    (y * y).sum().backward();
    if (!first_y.defined()) {
      first_y = y;
      first_gx = x32.grad();
      first_gw = w32.grad();
      EXPECT_TRUE(all_close(graft::conv3d(x, w, b, a.s, a.p, a.d, a.groups), expected, 1e-11, 1e-11));
    } else {  // the same bits at every thread count
      EXPECT_TRUE(all_close(y, first_y, 0, 0)) << n << " threads";
      EXPECT_TRUE(all_close(x32.grad(), first_gx, 0, 0)) << n << " threads";
      EXPECT_TRUE(all_close(w32.grad(), first_gw, 0, 0)) << n << " threads";
    }
  }
  set_num_threads(threads);
}

TEST(ConvNd, Conv1dIsConv2dOnAHeightOfOne) {
  const Tensor x = nd_r({2, 3, 8}, 81), w = nd_r({4, 3, 3}, 82), b = nd_r({4}, 83);
  const Tensor y = F::conv1d(x, w, F::Conv1dFuncOptions().bias(b).stride(2).padding(1));
  const Tensor y2 = F::conv2d(x.unsqueeze(2), w.unsqueeze(2), b, F::Conv2dFuncOptions().stride({1, 2}).padding({0, 1}));
  EXPECT_TRUE(all_close(y, y2.squeeze(2), 0, 0));
  EXPECT_EQ(F::conv1d(zeros({0, 3, 8}, kFloat64), w).sizes().vec(), (std::vector<int64_t>{0, 4, 6}));
  EXPECT_EQ(F::conv3d(zeros({0, 3, 2, 2, 2}, kFloat64), nd_r({1, 3, 1, 1, 1}, 84)).sizes().vec(),
            (std::vector<int64_t>{0, 1, 2, 2, 2}));
}

}  // namespace
}  // namespace graft::test
