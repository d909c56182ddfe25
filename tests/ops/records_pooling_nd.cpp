// Op records: max_pool1d, avg_pool1d, adaptive_avg_pool1d (padding, dilation, ceil_mode,
// count_include_pad, unbatched) and adaptive_max_pool2d against plain loops in double; plus
// adaptive_max_pool2d's indices, ties, nan and grad_fn names.
#include <cmath>
#include <limits>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// Samples: r and S (tests/support/op_table.h), in [-2, 2).

struct Pool1dArgs {
  int64_t k, s, p = 0, d = 1;
  bool ceil = false;
  bool count_include_pad = true;
};

// Windows start at o * s - p and span d * (k - 1) + 1 values; in ceil mode a last partial window
// counts if it starts inside the input or its left padding.
int64_t n_windows_1d(int64_t in, const Pool1dArgs& a) {
  const double span = static_cast<double>(in + 2 * a.p - a.d * (a.k - 1) - 1) / static_cast<double>(a.s);
  int64_t out = static_cast<int64_t>(a.ceil ? std::ceil(span) : std::floor(span)) + 1;
  if (a.ceil && (out - 1) * a.s >= in + a.p) --out;
  return out;
}

// Applies window(row values, L, o) to every output position of every row (the last dim).
template <class Fn>
Tensor ref_rows(const Tensor& x, int64_t oL, Fn&& window) {
  const std::vector<double> v = values(x);
  const int64_t L = x.size(-1), rows = x.numel() / L;
  std::vector<double> out;
  for (int64_t i = 0; i < rows; ++i) {
    const std::vector<double> row(v.begin() + i * L, v.begin() + (i + 1) * L);
    for (int64_t o = 0; o < oL; ++o) out.push_back(window(row, L, o));
  }
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = oL;
  return make(out, shape);
}

Tensor ref_max_pool1d(const Tensor& x, const Pool1dArgs& a) {
  return ref_rows(x, n_windows_1d(x.size(-1), a), [&](const std::vector<double>& v, int64_t L, int64_t o) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t t = 0; t < a.k; ++t) {
      const int64_t i = o * a.s - a.p + t * a.d;
      if (i >= 0 && i < L) m = std::max(m, v[static_cast<size_t>(i)]);
    }
    return m;
  });
}

Tensor ref_avg_pool1d(const Tensor& x, const Pool1dArgs& a) {
  return ref_rows(x, n_windows_1d(x.size(-1), a), [&](const std::vector<double>& v, int64_t L, int64_t o) {
    double s = 0;
    int64_t with_pad = 0, inside = 0;
    for (int64_t t = 0; t < a.k; ++t) {
      const int64_t i = o * a.s - a.p + t;
      if (i >= L + a.p) continue;  // past the right padding (ceil mode): not part of the window
      ++with_pad;
      if (i >= 0 && i < L) {
        ++inside;
        s += v[static_cast<size_t>(i)];
      }
    }
    return s / static_cast<double>(a.count_include_pad ? with_pad : inside);
  });
}

// Adaptive window o of n over a size-s dim: [floor(o s / n), ceil((o + 1) s / n)).
int64_t lo(int64_t o, int64_t n, int64_t s) {
  return static_cast<int64_t>(std::floor(static_cast<double>(o * s) / static_cast<double>(n)));
}
int64_t hi(int64_t o, int64_t n, int64_t s) {
  return static_cast<int64_t>(std::ceil(static_cast<double>((o + 1) * s) / static_cast<double>(n)));
}

Tensor ref_adaptive_avg1d(const Tensor& x, int64_t n) {
  return ref_rows(x, n, [&](const std::vector<double>& v, int64_t L, int64_t o) {
    double s = 0;
    for (int64_t i = lo(o, n, L); i < hi(o, n, L); ++i) s += v[static_cast<size_t>(i)];
    return s / static_cast<double>(hi(o, n, L) - lo(o, n, L));
  });
}

Tensor ref_adaptive_max2d(const Tensor& x, int64_t oH, int64_t oW) {
  const std::vector<double> v = values(x);
  const int64_t H = x.size(-2), W = x.size(-1), planes = x.numel() / (H * W);
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < oH; ++oh)
      for (int64_t ow = 0; ow < oW; ++ow) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t ih = lo(oh, oH, H); ih < hi(oh, oH, H); ++ih)
          for (int64_t iw = lo(ow, oW, W); iw < hi(ow, oW, W); ++iw)
            m = std::max(m, v[static_cast<size_t>((p * H + ih) * W + iw)]);
        out.push_back(m);
      }
  std::vector<int64_t> shape = x.sizes().vec();
  shape[shape.size() - 2] = oH;
  shape.back() = oW;
  return make(out, shape);
}

OpRecord max1d_record(std::string variant, Pool1dArgs a, Specs samples) {
  return {.name = "max_pool1d",
          .variant = std::move(variant),
          .fn =
              [a](const TensorList& t) {
                return F::max_pool1d(
                    t[0], F::MaxPool1dFuncOptions(a.k).stride(a.s).padding(a.p).dilation(a.d).ceil_mode(a.ceil));
              },
          .reference = [a](const TensorList& t) { return ref_max_pool1d(t[0], a); },
          .samples = lazy_samples(std::move(samples))};
}

OpRecord avg1d_record(std::string variant, Pool1dArgs a, Specs samples) {
  return {.name = "avg_pool1d",
          .variant = std::move(variant),
          .fn =
              [a](const TensorList& t) {
                return F::avg_pool1d(
                    t[0], F::AvgPool1dFuncOptions(a.k).stride(a.s).padding(a.p).ceil_mode(a.ceil).count_include_pad(
                              a.count_include_pad));
              },
          .reference = [a](const TensorList& t) { return ref_avg_pool1d(t[0], a); },
          .samples = lazy_samples(std::move(samples))};
}

OpRecord adaptive_avg1d_record(std::string variant, int64_t n, Specs samples) {
  return {.name = "adaptive_avg_pool1d",
          .variant = std::move(variant),
          .fn = [n](const TensorList& t) { return F::adaptive_avg_pool1d(t[0], n); },
          .reference = [n](const TensorList& t) { return ref_adaptive_avg1d(t[0], n); },
          .samples = lazy_samples(std::move(samples))};
}

OpRecord adaptive_max2d_record(std::string variant, int64_t oH, int64_t oW, Specs samples) {
  return {.name = "adaptive_max_pool2d",
          .variant = std::move(variant),
          .fn =
              [oH, oW](const TensorList& t) {
                return std::get<0>(graft::adaptive_max_pool2d(t[0], {oH, oW}));
              },
          .reference = [oH, oW](const TensorList& t) { return ref_adaptive_max2d(t[0], oH, oW); },
          .samples = lazy_samples(std::move(samples))};
}

// Shared shape errors for a 1-D pool called as f(input).
std::vector<ErrorCase> input_errors_1d(const char* op, std::function<void(const Tensor&)> f) {
  return {{[f] { f(zeros({4})); }, {op, "[4]", "2-D", "3-D", "(N, C, L)"}},
          {[f] {
             f(zeros({1, 1, 1, 4}));
           },
           {op, "[1, 1, 1, 4]", "4-D"}},
          {[f] {
             f(zeros({1, 1, 4}, kInt64));
           },
           {op, "floating-point", "int64"}},
          {[f] {
             f(zeros({1, 0, 4}));
           },
           {op, "non-zero sizes", "[1, 0, 4]"}}};
}

}  // namespace

GRAFT_OP_RECORDS(pooling_nd) {
  std::vector<OpRecord> recs;
  recs.push_back(max1d_record("basic", {.k = 2, .s = 2}, {{S({2, 3, 6}, 1)}, {S({1, 1, 7}, 2)}}));
  recs.back().errors = input_errors_1d("max_pool1d", [](const Tensor& x) { F::max_pool1d(x, 2); });
  for (ErrorCase e : std::vector<ErrorCase>{{[] {
                                               F::max_pool1d(zeros({1, 1, 4}), 0);
                                             },
                                             {"max_pool1d", "positive kernel_size", "kernel_size 0"}},
                                            {[] {
                                               F::max_pool1d(zeros({1, 1, 4}), F::MaxPool1dFuncOptions(2).stride(0));
                                             },
                                             {"max_pool1d", "positive stride"}},
                                            {[] {
                                               F::max_pool1d(zeros({1, 1, 4}), F::MaxPool1dFuncOptions(3).padding(2));
                                             },
                                             {"max_pool1d", "padding at most half of kernel_size", "padding 2"}},
                                            {[] {
                                               F::max_pool1d(zeros({1, 1, 4}), F::MaxPool1dFuncOptions(3).dilation(0));
                                             },
                                             {"max_pool1d", "positive dilation"}},
                                            {[] {
                                               F::max_pool1d(zeros({1, 1, 2}), 3);
                                             },
                                             {"max_pool1d", "[1, 1, 2]", "output size 0", "Output size is too small"}},
                                            {[] {
                                               graft::max_pool1d(zeros({1, 1, 4}), {2, 2});
                                             },
                                             {"max_pool1d", "kernel_size of 1 value", "2 values"}}})
    recs.back().errors.push_back(e);
  recs.push_back(max1d_record("stride_padding_dilation", {.k = 3, .s = 2, .p = 1, .d = 2}, {{S({2, 2, 9}, 3)}}));
  recs.push_back(max1d_record("ceil_mode", {.k = 3, .s = 2, .p = 1, .ceil = true}, {{S({1, 2, 6}, 4)}}));
  recs.push_back(max1d_record("unbatched", {.k = 3, .s = 1, .p = 1}, {{S({3, 5}, 5)}}));

  recs.push_back(avg1d_record("basic", {.k = 2, .s = 2}, {{S({2, 3, 6}, 11)}, {S({1, 1, 5}, 12)}}));
  recs.back().errors = input_errors_1d("avg_pool1d", [](const Tensor& x) { F::avg_pool1d(x, 2); });
  for (ErrorCase e : std::vector<ErrorCase>{{[] {
                                               F::avg_pool1d(zeros({1, 1, 4}), F::AvgPool1dFuncOptions(2).stride(-1));
                                             },
                                             {"avg_pool1d", "positive stride"}},
                                            {[] {
                                               F::avg_pool1d(zeros({1, 1, 4}), F::AvgPool1dFuncOptions(2).padding(2));
                                             },
                                             {"avg_pool1d", "padding at most half of kernel_size"}},
                                            {[] {
                                               F::avg_pool1d(zeros({1, 1, 1}), 2);
                                             },
                                             {"avg_pool1d", "[1, 1, 1]", "Output size is too small"}}})
    recs.back().errors.push_back(e);
  recs.push_back(avg1d_record("padding", {.k = 3, .s = 2, .p = 1}, {{S({1, 2, 7}, 13)}}));
  recs.push_back(
      avg1d_record("exclude_pad", {.k = 3, .s = 2, .p = 1, .count_include_pad = false}, {{S({1, 2, 6}, 14)}}));
  recs.push_back(avg1d_record("ceil_mode_padding", {.k = 3, .s = 2, .p = 1, .ceil = true}, {{S({1, 1, 6}, 15)}}));
  recs.push_back(avg1d_record("ceil_mode_padding_exclude",
                              {.k = 3, .s = 2, .p = 1, .ceil = true, .count_include_pad = false},
                              {{S({1, 1, 6}, 16)}}));
  recs.push_back(avg1d_record("unbatched", {.k = 3, .s = 1}, {{S({2, 5}, 17)}}));

  recs.push_back(adaptive_avg1d_record("downsample", 3, {{S({2, 2, 7}, 21)}, {S({1, 1, 5}, 22)}}));
  recs.back().errors = input_errors_1d("adaptive_avg_pool1d", [](const Tensor& x) { F::adaptive_avg_pool1d(x, 2); });
  recs.back().errors.push_back({[] {
                                  F::adaptive_avg_pool1d(zeros({1, 1, 4}), 0);
                                },
                                {"adaptive_avg_pool1d", "positive output_size", "output_size 0", "[1, 1, 4]"}});
  recs.push_back(adaptive_avg1d_record("global", 1, {{S({2, 3, 4}, 23)}}));
  recs.push_back(adaptive_avg1d_record("upsample_unbatched", 5, {{S({2, 3}, 24)}}));

  recs.push_back(adaptive_max2d_record("downsample", 2, 3, {{S({2, 2, 5, 7}, 31)}, {S({1, 1, 4, 6}, 32)}}));
  recs.back().errors = {
      {[] {
         graft::adaptive_max_pool2d(zeros({4, 4}), 2);
       },
       {"adaptive_max_pool2d", "[4, 4]", "3-D", "4-D"}},
      {[] {
         graft::adaptive_max_pool2d(zeros({1, 1, 4, 4}, kInt64), 2);
       },
       {"adaptive_max_pool2d", "floating-point"}},
      {[] {
         graft::adaptive_max_pool2d(zeros({1, 1, 0, 4}), 2);
       },
       {"adaptive_max_pool2d", "non-zero sizes"}},
      {[] {
         graft::adaptive_max_pool2d(zeros({1, 1, 4, 4}), {2, 0});
       },
       {"adaptive_max_pool2d", "positive output_size", "(2, 0)", "[1, 1, 4, 4]"}},
  };
  recs.push_back(adaptive_max2d_record("global", 1, 1, {{S({2, 3, 3, 4}, 33)}}));
  recs.push_back(adaptive_max2d_record("upsample", 3, 5, {{S({1, 2, 2, 4}, 34)}}));
  recs.push_back(adaptive_max2d_record("unbatched", 2, 2, {{S({3, 5, 5}, 35)}}));
  return recs;
}

namespace {

TEST(AdaptiveMaxPool2d, IndicesTiesNanAndGradient) {
  // 4x4 -> 2x2: four disjoint 2x2 windows. Ties pick the first maximum in row order, nan wins.
  const double nan = std::nan("");
  const Tensor x = make({1, 5, 0, 0,  //
                         5, 2, 0, nan, 3, 3, 7, 1, 3, 3, 1, 7},
                        {1, 1, 4, 4})
                       .requires_grad_();
  auto [y, idx] = F::adaptive_max_pool2d_with_indices(x, 2);
  EXPECT_EQ(idx.dtype(), kInt64);
  EXPECT_TRUE(all_close(idx, {1, 7, 8, 10}, {1, 1, 2, 2}, 0, 0));
  const Tensor yv = y.contiguous();
  EXPECT_EQ(yv.data_ptr<double>()[0], 5.0);
  EXPECT_TRUE(std::isnan(yv.data_ptr<double>()[1]));
  EXPECT_TRUE(all_close(F::adaptive_max_pool2d(x, 2), y, 0, 0));  // NaNs must match
  EXPECT_EQ(y.grad_fn()->name(), "AdaptiveMaxPool2DBackward0");
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0}, {1, 1, 4, 4}));
}

TEST(AdaptiveMaxPool2d, OverlappingWindowsAccumulateAndDoubleBackward) {
  // 3 -> 2 along each dim: windows [0, 2) and [1, 3) share the middle row and column.
  const Tensor x = make({0.0, 0.1, 0.2, 0.3, 9.0, 0.4, 0.5, 0.6, 0.7}, {1, 1, 3, 3}).requires_grad_();
  const Tensor y = F::adaptive_max_pool2d(x, 2);
  const TensorList g = autograd::grad({y.pow(2).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(all_close(g[0], {0, 0, 0, 0, 4 * 18.0, 0, 0, 0, 0}, {1, 1, 3, 3}));
  ASSERT_TRUE(g[0].grad_fn());
  EXPECT_EQ(g[0].grad_fn()->name(), "AdaptiveMaxPool2DBackwardBackward0");
}

TEST(Pooling1d, GradFnNamesShapesAndTheTwoDPath) {
  const Tensor x = r({2, 3, 9}, 41).requires_grad_();
  const Tensor y = F::max_pool1d(x, F::MaxPool1dFuncOptions(3).stride(2).padding(1));
  EXPECT_EQ(y.grad_fn()->name(), "SqueezeBackward1");  // as PyTorch: the 2-D pool on a height of 1
  const auto pool = y.grad_fn()->next_edges.at(0).fn;
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(std::string(pool->forward_op_name()), "max_pool1d");
  EXPECT_TRUE(all_close(
      y, F::max_pool2d(x.unsqueeze(2), F::MaxPool2dFuncOptions({1, 3}).stride({1, 2}).padding({0, 1})).squeeze(2), 0,
      0));
  EXPECT_EQ(F::avg_pool1d(x, F::AvgPool1dFuncOptions(2).ceil_mode(true)).sizes().vec(),
            (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(F::adaptive_avg_pool1d(zeros({0, 3, 4}), 2).sizes().vec(), (std::vector<int64_t>{0, 3, 2}));
  EXPECT_EQ(F::adaptive_max_pool2d(zeros({0, 3, 4, 4}), 2).sizes().vec(), (std::vector<int64_t>{0, 3, 2, 2}));
}

}  // namespace
}  // namespace graft::test
