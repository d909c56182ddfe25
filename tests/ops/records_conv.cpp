// Op records: conv2d (stride, padding, dilation, groups, no bias, 1x1, unbatched), against a plain
// 7-deep loop in double, and conv_transpose2d against its definition as a scatter loop; plus
// grad_fn names, double backward, a larger case through the blocked BLAS kernels, and the
// ConvTranspose2d module.
#include <cmath>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// This file's sample range is [-1, 1) unless a record says otherwise.
Tensor conv_r(IntArrayRef shape, uint64_t seed, double lo = -1, double hi = 1) {
  return uniform_sample(shape, seed, lo, hi);
}
SampleSpec conv_S(std::vector<int64_t> shape, uint64_t seed, double lo = -1, double hi = 1) {
  return {std::move(shape), seed, lo, hi};
}

struct ConvArgs {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};

// out[n, o, oh, ow] = b[o] + sum over c, i, j of x[n, g*Cg + c, oh*sh - ph + i*dh, ow*sw - pw + j*dw] * w[o, c, i, j]
Tensor ref_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const ConvArgs& a) {
  const bool unbatched = x.dim() == 3;
  const std::vector<double> vx = values(x), vw = values(w), vb = b.defined() ? values(b) : std::vector<double>();
  const int64_t N = unbatched ? 1 : x.size(0), C = x.size(-3), H = x.size(-2), W = x.size(-1);
  const int64_t O = w.size(0), Cg = w.size(1), kH = w.size(2), kW = w.size(3);
  const int64_t oH = (H + 2 * a.ph - a.dh * (kH - 1) - 1) / a.sh + 1;
  const int64_t oW = (W + 2 * a.pw - a.dw * (kW - 1) - 1) / a.sw + 1;
  const int64_t Og = O / a.groups;
  std::vector<double> out(static_cast<size_t>(N * O * oH * oW));
  size_t k = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < oH; ++oh)
        for (int64_t ow = 0; ow < oW; ++ow) {
          double s = vb.empty() ? 0.0 : vb[static_cast<size_t>(o)];
          const int64_t grp = o / Og;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < kH; ++i)
              for (int64_t j = 0; j < kW; ++j) {
                const int64_t ih = oh * a.sh - a.ph + i * a.dh, iw = ow * a.sw - a.pw + j * a.dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t ci = grp * Cg + c;
                s += vx[static_cast<size_t>(((n * C + ci) * H + ih) * W + iw)] *
                     vw[static_cast<size_t>(((o * Cg + c) * kH + i) * kW + j)];
              }
          out[k++] = s;
        }
  if (unbatched) return make(out, {O, oH, oW});
  return make(out, {N, O, oH, oW});
}

F::Conv2dFuncOptions conv2d_opts(const ConvArgs& a) {
  return F::Conv2dFuncOptions().stride({a.sh, a.sw}).padding({a.ph, a.pw}).dilation({a.dh, a.dw}).groups(a.groups);
}

// samples: {x, w, b} (bias) or {x, w} (no bias)
OpRecord conv_record(std::string variant, ConvArgs a, Specs samples, bool with_errors = false) {
  OpRecord rec{
      .name = "conv2d",
      .variant = std::move(variant),
      .fn = [a](const TensorList& t) { return F::conv2d(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), conv2d_opts(a)); },
      .reference = [a](const TensorList& t) { return ref_conv2d(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), a); },
      .samples = lazy(std::move(samples)),
      .atol32 = 1e-5,
      .rtol32 = 1e-4};
  if (!with_errors) return rec;
  const auto o = F::Conv2dFuncOptions();
  rec.errors = {
      {[] { F::conv2d(zeros({3, 4}), zeros({2, 3, 1, 1})); }, {"conv2d", "[3, 4]", "3-D", "4-D"}},
      {[] { F::conv2d(zeros({1, 3, 4, 4, 1}), zeros({2, 3, 1, 1})); }, {"conv2d", "[1, 3, 4, 4, 1]", "5-D"}},
      {[] { F::conv2d(zeros({1, 3, 4, 4}), zeros({2, 3, 3})); }, {"conv2d", "weight", "4-D", "[2, 3, 3]"}},
      {[] { F::conv2d(zeros({1, 4, 5, 5}), zeros({2, 3, 3, 3})); },
       {"conv2d", "[1, 4, 5, 5]", "[2, 3, 3, 3]", "3 channels", "4 channels"}},
      {[] { F::conv2d(zeros({4, 5, 5}), zeros({2, 3, 3, 3})); }, {"conv2d", "[4, 5, 5]", "[2, 3, 3, 3]", "channels"}},
      {[] { F::conv2d(zeros({1, 1, 2, 2}), zeros({1, 1, 3, 3})); },
       {"conv2d", "kernel no larger than the padded input", "padded input size 2", "kernel size 3", "[1, 1, 3, 3]"}},
      {[] { F::conv2d(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), F::Conv2dFuncOptions().dilation(3)); },
       {"conv2d", "padded input size 5", "kernel size 7", "dilation (3, 3)"}},
      {[] { F::conv2d(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), F::Conv2dFuncOptions().stride({0, 1})); },
       {"conv2d", "positive stride", "(0, 1)"}},
      {[] { F::conv2d(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), F::Conv2dFuncOptions().padding(-1)); },
       {"conv2d", "non-negative padding", "(-1, -1)"}},
      {[] { F::conv2d(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), F::Conv2dFuncOptions().dilation({1, 0})); },
       {"conv2d", "positive dilation"}},
      {[] { F::conv2d(zeros({1, 4, 5, 5}), zeros({3, 2, 3, 3}), F::Conv2dFuncOptions().groups(2)); },
       {"conv2d", "out_channels", "divisible by groups", "[3, 2, 3, 3]", "groups = 2"}},
      {[] { F::conv2d(zeros({1, 3, 5, 5}), zeros({2, 1, 3, 3}), F::Conv2dFuncOptions().groups(2)); },
       {"conv2d", "in_channels", "divisible by groups", "[1, 3, 5, 5]"}},
      {[] { F::conv2d(zeros({1, 3, 5, 5}), zeros({2, 3, 3, 3}), F::Conv2dFuncOptions().groups(0)); },
       {"conv2d", "groups > 0", "groups = 0"}},
      {[] { F::conv2d(zeros({1, 3, 5, 5}), zeros({2, 3, 3, 3}), zeros({3})); },
       {"conv2d", "bias of shape [2]", "[3]"}},
      {[] { F::conv2d(zeros({1, 3, 5, 5}), zeros({2, 3, 3, 3}, kFloat64)); }, {"conv2d", "same dtype", "float32", "float64"}},
      {[] { F::conv2d(zeros({1, 3, 5, 5}, kInt64), zeros({2, 3, 3, 3}, kInt64)); }, {"conv2d", "floating-point", "int64"}},
      {[o] { F::conv2d(zeros({1, 3, 5, 5}), zeros({2, 3, 3, 3}), zeros({2}), F::Conv2dFuncOptions(o).bias(zeros({2}))); },
       {"conv2d", "bias given once"}},
      {[] { F::Conv2dFuncOptions().stride({1, 2, 3}); }, {"ExpandingArray", "2 values", "3 values"}},
  };
  return rec;
}

// The transposed convolution by its definition, a scatter: every input element x[n, c, ih, iw]
// adds x * w[c, o, i, j] to out[n, g*Og + o, ih*sh - ph + i*dh, iw*sw - pw + j*dw] (o < Og, the
// group g of channel c); the output size is (H - 1) sh - 2 ph + dh (kH - 1) + oph + 1.
Tensor ref_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, const ConvArgs& a, int64_t oph,
                            int64_t opw) {
  const bool unbatched = x.dim() == 3;
  const std::vector<double> vx = values(x), vw = values(w), vb = b.defined() ? values(b) : std::vector<double>();
  const int64_t N = unbatched ? 1 : x.size(0), C = x.size(-3), H = x.size(-2), W = x.size(-1);
  const int64_t Og = w.size(1), kH = w.size(2), kW = w.size(3), O = Og * a.groups, Cg = C / a.groups;
  const int64_t oH = (H - 1) * a.sh - 2 * a.ph + a.dh * (kH - 1) + oph + 1;
  const int64_t oW = (W - 1) * a.sw - 2 * a.pw + a.dw * (kW - 1) + opw + 1;
  std::vector<double> out(static_cast<size_t>(N * O * oH * oW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t k = 0; k < oH * oW; ++k)
        out[static_cast<size_t>((n * O + o) * oH * oW + k)] = vb.empty() ? 0.0 : vb[static_cast<size_t>(o)];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw) {
          const double xv = vx[static_cast<size_t>(((n * C + c) * H + ih) * W + iw)];
          const int64_t grp = c / Cg;
          for (int64_t o = 0; o < Og; ++o)
            for (int64_t i = 0; i < kH; ++i)
              for (int64_t j = 0; j < kW; ++j) {
                const int64_t oh = ih * a.sh - a.ph + i * a.dh, ow = iw * a.sw - a.pw + j * a.dw;
                if (oh < 0 || oh >= oH || ow < 0 || ow >= oW) continue;
                out[static_cast<size_t>(((n * O + grp * Og + o) * oH + oh) * oW + ow)] +=
                    xv * vw[static_cast<size_t>(((c * Og + o) * kH + i) * kW + j)];
              }
        }
  if (unbatched) return make(out, {O, oH, oW});
  return make(out, {N, O, oH, oW});
}

// samples: {x, w, b} (bias) or {x, w} (no bias)
OpRecord conv_transpose_record(std::string variant, ConvArgs a, int64_t oph, int64_t opw, Specs samples,
                               bool with_errors = false) {
  auto options = [a, oph, opw](const Tensor& b) {
    return F::ConvTranspose2dFuncOptions()
        .bias(b)
        .stride({a.sh, a.sw})
        .padding({a.ph, a.pw})
        .output_padding({oph, opw})
        .groups(a.groups)
        .dilation({a.dh, a.dw});
  };
  OpRecord rec{.name = "conv_transpose2d", .variant = std::move(variant),
               .fn = [options](const TensorList& t) {
                 return F::conv_transpose2d(t[0], t[1], options(t.size() > 2 ? t[2] : Tensor()));
               },
               .reference = [a, oph, opw](const TensorList& t) {
                 return ref_conv_transpose2d(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), a, oph, opw);
               },
               .samples = lazy(std::move(samples)),
               .atol32 = 1e-5, .rtol32 = 1e-4};
  if (!with_errors) return rec;
  rec.errors = {
      {[] { graft::conv_transpose2d(zeros({3, 4}), zeros({3, 2, 1, 1})); }, {"conv_transpose2d", "[3, 4]", "3-D"}},
      {[] { graft::conv_transpose2d(zeros({1, 3, 4, 4}), zeros({3, 2, 3})); }, {"conv_transpose2d", "weight", "4-D"}},
      {[] { graft::conv_transpose2d(zeros({1, 4, 5, 5}), zeros({3, 2, 3, 3})); },
       {"conv_transpose2d", "weight.size(0) = 3", "[1, 4, 5, 5]"}},
      {[] { graft::conv_transpose2d(zeros({1, 3, 5, 5}), zeros({3, 2, 3, 3}), zeros({3})); },
       {"conv_transpose2d", "bias of shape [2]", "[3]"}},
      {[] { graft::conv_transpose2d(zeros({1, 3, 5, 5}), zeros({3, 2, 3, 3}), {}, 2, 0, 2); },
       {"conv_transpose2d", "output_padding smaller than stride", "(2, 2)"}},
      {[] { graft::conv_transpose2d(zeros({1, 3, 2, 2}), zeros({3, 2, 1, 1}), {}, 1, 1); },
       {"conv_transpose2d", "positive output size", "height 0"}},
      {[] { graft::conv_transpose2d(zeros({1, 3, 5, 5}), zeros({3, 2, 3, 3}, kFloat64)); },
       {"conv_transpose2d", "one dtype", "float64"}},
      {[] { graft::conv_transpose2d(zeros({1, 4, 5, 5}), zeros({4, 2, 3, 3}), {}, 1, 0, 0, 3); },
       {"conv_transpose2d", "divisible by groups = 3"}},
  };
  return rec;
}

}  // namespace

GRAFT_OP_RECORDS(conv_transpose) {
  std::vector<OpRecord> recs;
  recs.push_back(conv_transpose_record("basic", {}, 0, 0,
                                       {{conv_S({2, 3, 3, 3}, 41), conv_S({3, 2, 3, 3}, 42), conv_S({2}, 43)}}, true));
  // DCGAN's layers: stride 2, padding 1, kernel 4 (doubles the size), and an odd size with output_padding.
  recs.push_back(conv_transpose_record("stride2_padding1_k4", {.sh = 2, .sw = 2, .ph = 1, .pw = 1}, 0, 0,
                                       {{conv_S({1, 2, 3, 3}, 44), conv_S({2, 3, 4, 4}, 45), conv_S({3}, 46)}}));
  recs.push_back(conv_transpose_record("output_padding", {.sh = 2, .sw = 3, .ph = 1, .pw = 0}, 1, 2,
                                       {{conv_S({2, 2, 3, 2}, 47), conv_S({2, 2, 3, 2}, 48), conv_S({2}, 49)}}));
  recs.push_back(conv_transpose_record("dilation_groups", {.ph = 1, .pw = 1, .dh = 2, .dw = 1, .groups = 2}, 0, 0,
                                       {{conv_S({1, 4, 3, 3}, 50), conv_S({4, 1, 2, 3}, 51), conv_S({2}, 52)}}));
  recs.push_back(conv_transpose_record("no_bias_unbatched", {.sh = 2, .sw = 1}, 0, 0,
                                       {{conv_S({2, 3, 2}, 53), conv_S({2, 3, 2, 2}, 54)}}));
  recs.push_back(
      conv_transpose_record("1x1", {}, 0, 0, {{conv_S({2, 3, 2, 2}, 55), conv_S({3, 4, 1, 1}, 56), conv_S({4}, 57)}}));
  return recs;
}

namespace {

TEST(ConvTranspose2d, ModuleShapesNameAndInitialisation) {
  // DCGAN's first generator layer: (N, 100, 1, 1) -> (N, 256, 4, 4).
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(100, 256, 4).bias(false));
  EXPECT_EQ(up->weight.sizes().vec(), (std::vector<int64_t>{100, 256, 4, 4}));
  EXPECT_FALSE(up->bias.defined());
  EXPECT_EQ(up->forward(zeros({2, 100, 1, 1})).sizes().vec(), (std::vector<int64_t>{2, 256, 4, 4}));
  // Kernel 4, stride 2, padding 1 doubles the size: (7 - 1) 2 - 2 + 3 + 1 = 14.
  nn::ConvTranspose2d up2(nn::ConvTranspose2dOptions(8, 4, 4).stride(2).padding(1));
  EXPECT_EQ(up2->forward(zeros({8, 7, 7})).sizes().vec(), (std::vector<int64_t>{4, 14, 14}));
  // PyTorch's bound 1/sqrt(fan_in), fan_in = weight.size(1) * kH * kW = 4 * 16.
  const double bound = 1.0 / std::sqrt(64.0);
  EXPECT_LE(up2->weight.abs().max().item<double>(), bound);
  EXPECT_LE(up2->bias.abs().max().item<double>(), bound);
  EXPECT_GT(up2->weight.abs().max().item<double>(), 0.8 * bound);  // 512 draws reach near the bound
  const Tensor y = up2->forward(conv_r({1, 8, 3, 3}, 60).to(kFloat32).requires_grad_());
  EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
  EXPECT_EQ(up2->extra_repr(), "8, 4, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1)");
}

}  // namespace

GRAFT_OP_RECORDS(conv) {
  std::vector<OpRecord> recs;
  recs.push_back(conv_record("basic", {}, {{conv_S({2, 3, 4, 4}, 1), conv_S({2, 3, 3, 3}, 2), conv_S({2}, 3)}}, true));
  recs.push_back(conv_record("stride_padding", {.sh = 2, .sw = 1, .ph = 1, .pw = 2},
                             {{conv_S({1, 2, 5, 4}, 4), conv_S({3, 2, 3, 2}, 5), conv_S({3}, 6)}}));
  recs.push_back(conv_record("stride_uncovered_rows", {.sh = 2, .sw = 3},
                             {{conv_S({2, 1, 6, 7}, 7), conv_S({2, 1, 3, 2}, 8), conv_S({2}, 9)}}));
  recs.push_back(conv_record("dilation", {.ph = 1, .pw = 0, .dh = 2, .dw = 1},
                             {{conv_S({1, 2, 5, 4}, 10), conv_S({2, 2, 2, 3}, 11), conv_S({2}, 12)}}));
  recs.push_back(conv_record("groups", {.ph = 1, .pw = 1, .groups = 2},
                             {{conv_S({2, 4, 3, 3}, 13), conv_S({4, 2, 2, 2}, 14), conv_S({4}, 15)}}));
  recs.push_back(conv_record("depthwise_no_bias", {.sh = 2, .sw = 2, .ph = 1, .pw = 1, .groups = 3},
                             {{conv_S({1, 3, 4, 4}, 16), conv_S({3, 1, 3, 3}, 17)}}));
  recs.push_back(conv_record("no_bias", {}, {{conv_S({2, 2, 3, 4}, 18), conv_S({3, 2, 2, 2}, 19)}}));
  recs.push_back(conv_record("1x1", {}, {{conv_S({2, 3, 3, 2}, 20), conv_S({4, 3, 1, 1}, 21), conv_S({4}, 22)}}));
  recs.push_back(conv_record("1x1_strided", {.sh = 2, .sw = 2, .ph = 1, .pw = 1},
                             {{conv_S({1, 2, 3, 3}, 23), conv_S({2, 2, 1, 1}, 24)}}));
  recs.push_back(conv_record("unbatched", {.ph = 1, .pw = 1},
                             {{conv_S({2, 3, 3}, 25), conv_S({3, 2, 2, 3}, 26), conv_S({3}, 27)}}));
  recs.push_back(conv_record("kernel_fills_padded_input", {.ph = 1, .pw = 1},
                             {{conv_S({1, 1, 2, 3}, 28), conv_S({1, 1, 4, 5}, 29), conv_S({1}, 30)}}));
  return recs;
}

namespace {

TEST(Conv2d, GradFnNamesAndDoubleBackward) {
  const Tensor x = conv_r({1, 2, 4, 4}, 101).requires_grad_(), w = conv_r({3, 2, 3, 3}, 102).requires_grad_();
  const Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().padding(1));
  EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
  const TensorList g = autograd::grad({y.pow(2).sum()}, {x, w}, {}, std::nullopt, /*create_graph=*/true);
  ASSERT_TRUE(g[0].grad_fn() && g[1].grad_fn());
  EXPECT_EQ(g[0].grad_fn()->name(), "ConvolutionBackwardBackward0");
}

TEST(Conv2d, LargerCaseMatchesReferenceInBothDtypes) {
  // Big enough for OpenBLAS's blocked kernels: 2 x 8 x 20 x 18 input, 16 x 4 x 3 x 3 weight, groups 2.
  const ConvArgs a{.sh = 1, .sw = 2, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 2};
  const Tensor x = conv_r({2, 8, 20, 18}, 111), w = conv_r({16, 4, 3, 3}, 112), b = conv_r({16}, 113);
  const Tensor expected = ref_conv2d(x, w, b, a);
  EXPECT_TRUE(all_close(F::conv2d(x, w, b, conv2d_opts(a)), expected, 1e-11, 1e-11));
  EXPECT_TRUE(
      all_close(F::conv2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), conv2d_opts(a)), expected, 1e-4, 1e-4));
}

TEST(Conv2d, GradientsMatchReferenceSums) {
  // sum(conv(x, w)) has d/dw[o, c, i, j] = sum of the x values tap (i, j) reads, and d/db = N * oH * oW.
  const Tensor x = conv_r({2, 1, 4, 3}, 121).requires_grad_(), w = conv_r({1, 1, 2, 2}, 122).requires_grad_(),
               b = conv_r({1}, 123).requires_grad_();
  F::conv2d(x, w, b).sum().backward();
  const auto vx = values(x), vw = values(w);
  std::vector<double> gw(4, 0.0), gx(24, 0.0);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t oh = 0; oh < 3; ++oh)
      for (int64_t ow = 0; ow < 2; ++ow)
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < 2; ++j) {
            const auto xi = static_cast<size_t>((n * 4 + oh + i) * 3 + ow + j);
            gw[static_cast<size_t>(i * 2 + j)] += vx[xi];
            gx[xi] += vw[static_cast<size_t>(i * 2 + j)];
          }
  EXPECT_TRUE(all_close(w.grad(), gw, {1, 1, 2, 2}));
  EXPECT_TRUE(all_close(x.grad(), gx, {2, 1, 4, 3}));
  EXPECT_TRUE(all_close(b.grad(), {12.0}, {1}));
}

TEST(Conv2d, OptionsBiasAndEmptyBatch) {
  const Tensor x = conv_r({1, 2, 3, 3}, 131), w = conv_r({2, 2, 2, 2}, 132), b = conv_r({2}, 133);
  EXPECT_TRUE(all_close(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b)), F::conv2d(x, w, b), 0, 0));
  const Tensor y = F::conv2d(zeros({0, 2, 3, 3}, kFloat64), w, b);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{0, 2, 2, 2}));
}

}  // namespace
}  // namespace graft::test
