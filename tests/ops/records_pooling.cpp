// Op records: max_pool2d, max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d (padding, dilation, ceil_mode,
// count_include_pad, divisor_override, unbatched inputs) against plain loops in double; plus ties,
// nan, indices and grad_fn names.
#include <cmath>
#include <limits>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// Samples: r and S (tests/support/op_table.h), in [-2, 2) unless a record says otherwise.

struct PoolArgs {
  int64_t kh, kw, sh, sw, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil = false;
  bool count_include_pad = true;
  int64_t divisor = 0;
};

// Number of windows along a dim: the windows start at o * s - p and span d * (k - 1) + 1 values;
// in ceil mode a last partial window counts if it starts inside the input or its left padding.
int64_t n_windows(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const double span = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t out = static_cast<int64_t>(ceil ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil && (out - 1) * s >= in + p) --out;
  return out;
}

// Applies `window(plane values, H, W, oh, ow)` to every output position of every plane.
template <class Fn>
Tensor ref_pool(const Tensor& x, int64_t oH, int64_t oW, Fn&& window) {
  const std::vector<double> v = values(x);
  const int64_t H = x.size(-2), W = x.size(-1), planes = x.numel() / (H * W);
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p) {
    const std::vector<double> plane(v.begin() + p * H * W, v.begin() + (p + 1) * H * W);
    for (int64_t oh = 0; oh < oH; ++oh)
      for (int64_t ow = 0; ow < oW; ++ow) out.push_back(window(plane, H, W, oh, ow));
  }
  std::vector<int64_t> shape = x.sizes().vec();
  shape[shape.size() - 2] = oH;
  shape.back() = oW;
  return make(out, shape);
}

Tensor ref_max_pool(const Tensor& x, const PoolArgs& a) {
  const int64_t oH = n_windows(x.size(-2), a.kh, a.sh, a.ph, a.dh, a.ceil);
  const int64_t oW = n_windows(x.size(-1), a.kw, a.sw, a.pw, a.dw, a.ceil);
  return ref_pool(x, oH, oW, [&](const std::vector<double>& v, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < a.kh; ++i)
      for (int64_t j = 0; j < a.kw; ++j) {
        const int64_t ih = oh * a.sh - a.ph + i * a.dh, iw = ow * a.sw - a.pw + j * a.dw;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W) m = std::max(m, v[static_cast<size_t>(ih * W + iw)]);
      }
    return m;
  });
}

Tensor ref_avg_pool(const Tensor& x, const PoolArgs& a) {
  const int64_t oH = n_windows(x.size(-2), a.kh, a.sh, a.ph, 1, a.ceil);
  const int64_t oW = n_windows(x.size(-1), a.kw, a.sw, a.pw, 1, a.ceil);
  return ref_pool(x, oH, oW, [&](const std::vector<double>& v, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    double s = 0;
    int64_t with_pad = 0, inside = 0;
    for (int64_t i = 0; i < a.kh; ++i)
      for (int64_t j = 0; j < a.kw; ++j) {
        const int64_t ih = oh * a.sh - a.ph + i, iw = ow * a.sw - a.pw + j;
        // positions past the right/bottom padding (ceil mode) are not part of the window
        if (ih >= H + a.ph || iw >= W + a.pw) continue;
        ++with_pad;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
          ++inside;
          s += v[static_cast<size_t>(ih * W + iw)];
        }
      }
    const int64_t div = a.divisor ? a.divisor : a.count_include_pad ? with_pad : inside;
    return s / static_cast<double>(div);
  });
}

Tensor ref_adaptive_avg(const Tensor& x, int64_t oH, int64_t oW) {
  return ref_pool(x, oH, oW, [&](const std::vector<double>& v, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    const auto lo = [](int64_t o, int64_t n, int64_t s) {
      return static_cast<int64_t>(std::floor(static_cast<double>(o * s) / static_cast<double>(n)));
    };
    const auto hi = [](int64_t o, int64_t n, int64_t s) {
      return static_cast<int64_t>(std::ceil(static_cast<double>((o + 1) * s) / static_cast<double>(n)));
    };
    double s = 0;
    int64_t cnt = 0;
    for (int64_t ih = lo(oh, oH, H); ih < hi(oh, oH, H); ++ih)
      for (int64_t iw = lo(ow, oW, W); iw < hi(ow, oW, W); ++iw) {
        s += v[static_cast<size_t>(ih * W + iw)];
        ++cnt;
      }
    return s / static_cast<double>(cnt);
  });
}

F::MaxPool2dFuncOptions max_opts(const PoolArgs& a) {
  return F::MaxPool2dFuncOptions({a.kh, a.kw}).stride({a.sh, a.sw}).padding({a.ph, a.pw}).dilation({a.dh, a.dw}).ceil_mode(a.ceil);
}
F::AvgPool2dFuncOptions avg_opts(const PoolArgs& a) {
  auto o = F::AvgPool2dFuncOptions({a.kh, a.kw}).stride({a.sh, a.sw}).padding({a.ph, a.pw}).ceil_mode(a.ceil).count_include_pad(
      a.count_include_pad);
  if (a.divisor) o.divisor_override(a.divisor);
  return o;
}

OpRecord max_record(std::string variant, PoolArgs a, Specs samples) {
  return {.name = "max_pool2d", .variant = std::move(variant),
          .fn = [a](const TensorList& t) { return F::max_pool2d(t[0], max_opts(a)); },
          .reference = [a](const TensorList& t) { return ref_max_pool(t[0], a); },
          .samples = lazy(std::move(samples))};
}

OpRecord avg_record(std::string variant, PoolArgs a, Specs samples) {
  return {.name = "avg_pool2d", .variant = std::move(variant),
          .fn = [a](const TensorList& t) { return F::avg_pool2d(t[0], avg_opts(a)); },
          .reference = [a](const TensorList& t) { return ref_avg_pool(t[0], a); },
          .samples = lazy(std::move(samples))};
}

OpRecord adaptive_record(std::string variant, int64_t oH, int64_t oW, Specs samples) {
  return {.name = "adaptive_avg_pool2d", .variant = std::move(variant),
          .fn = [oH, oW](const TensorList& t) { return F::adaptive_avg_pool2d(t[0], F::AdaptiveAvgPool2dFuncOptions({oH, oW})); },
          .reference = [oH, oW](const TensorList& t) { return ref_adaptive_avg(t[0], oH, oW); },
          .samples = lazy(std::move(samples))};
}

// Shared shape errors for a pool called as f(input).
std::vector<ErrorCase> input_errors(const char* op, std::function<void(const Tensor&)> f) {
  return {{[f] { f(zeros({4, 4})); }, {op, "[4, 4]", "3-D", "4-D"}},
          {[f] { f(zeros({1, 1, 1, 4, 4})); }, {op, "[1, 1, 1, 4, 4]", "5-D"}},
          {[f] { f(zeros({1, 1, 4, 4}, kInt64)); }, {op, "floating-point", "int64"}},
          {[f] { f(zeros({1, 0, 4, 4})); }, {op, "non-zero sizes", "[1, 0, 4, 4]"}}};
}

}  // namespace

GRAFT_OP_RECORDS(pooling) {
  std::vector<OpRecord> recs;
  recs.push_back(max_record("basic", {.kh = 2, .kw = 2, .sh = 2, .sw = 2}, {{S({2, 2, 4, 4}, 1)}, {S({1, 3, 5, 3}, 2)}}));
  recs.back().errors = input_errors("max_pool2d", [](const Tensor& x) { F::max_pool2d(x, 2); });
  for (ErrorCase e : std::vector<ErrorCase>{
           {[] { F::max_pool2d(zeros({1, 1, 4, 4}), 0); }, {"max_pool2d", "positive kernel_size", "(0, 0)"}},
           {[] { F::max_pool2d(zeros({1, 1, 4, 4}), F::MaxPool2dFuncOptions(2).stride({1, 0})); },
            {"max_pool2d", "positive stride", "(1, 0)"}},
           {[] { F::max_pool2d(zeros({1, 1, 4, 4}), F::MaxPool2dFuncOptions(3).padding(2)); },
            {"max_pool2d", "padding at most half of kernel_size", "(2, 2)", "(3, 3)"}},
           {[] { F::max_pool2d(zeros({1, 1, 4, 4}), F::MaxPool2dFuncOptions(3).padding(-1)); },
            {"max_pool2d", "non-negative padding"}},
           {[] { F::max_pool2d(zeros({1, 1, 4, 4}), F::MaxPool2dFuncOptions(2).dilation(0)); },
            {"max_pool2d", "positive dilation"}},
           {[] { F::max_pool2d(zeros({1, 1, 2, 2}), 3); },
            {"max_pool2d", "[1, 1, 2, 2]", "output size 0x0", "Output size is too small"}},
           {[] { F::max_pool2d(zeros({1, 1, 4, 4}), F::MaxPool2dFuncOptions(2).dilation(4)); },
            {"max_pool2d", "output size", "dilation (4, 4)"}}})
    recs.back().errors.push_back(e);
  recs.push_back(max_record("stride_pad_dilation", {.kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 2},
                            {{S({1, 2, 6, 5}, 3)}}));
  recs.push_back(max_record("overlapping", {.kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}, {{S({1, 1, 4, 4}, 4)}}));
  recs.push_back(max_record("ceil_mode", {.kh = 2, .kw = 2, .sh = 2, .sw = 2, .ceil = true},
                            {{S({1, 2, 5, 5}, 5)}, {S({1, 1, 4, 5}, 6)}}));
  recs.push_back(max_record("ceil_mode_padding", {.kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .ceil = true},
                            {{S({1, 1, 6, 5}, 7)}}));
  recs.push_back(max_record("unbatched", {.kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}, {{S({2, 5, 5}, 8)}}));

  // max_pool2d_with_indices: the values (its indices are checked by hand below).
  recs.push_back(max_record("with_indices", {.kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 1},
                            {{S({2, 2, 5, 4}, 9)}, {S({2, 5, 5}, 10)}}));
  recs.back().name = "max_pool2d_with_indices";
  recs.back().fn = [](const TensorList& t) {
    return std::get<0>(F::max_pool2d_with_indices(t[0], F::MaxPool2dFuncOptions({3, 2}).stride({2, 1}).padding(1)));
  };
  // Its argument checks are max_pool2d's (it is the op max_pool2d runs).
  recs.back().errors = input_errors("max_pool2d", [](const Tensor& x) { F::max_pool2d_with_indices(x, 2); });

  recs.push_back(avg_record("basic", {.kh = 2, .kw = 2, .sh = 2, .sw = 2}, {{S({2, 2, 4, 4}, 11)}, {S({1, 1, 5, 3}, 12)}}));
  recs.back().errors = input_errors("avg_pool2d", [](const Tensor& x) { F::avg_pool2d(x, 2); });
  for (ErrorCase e : std::vector<ErrorCase>{
           {[] { F::avg_pool2d(zeros({1, 1, 4, 4}), F::AvgPool2dFuncOptions({2, 0})); },
            {"avg_pool2d", "positive kernel_size", "(2, 0)"}},
           {[] { F::avg_pool2d(zeros({1, 1, 4, 4}), F::AvgPool2dFuncOptions(2).stride(-1)); }, {"avg_pool2d", "positive stride"}},
           {[] { F::avg_pool2d(zeros({1, 1, 4, 4}), F::AvgPool2dFuncOptions(2).padding(2)); },
            {"avg_pool2d", "padding at most half of kernel_size"}},
           {[] { F::avg_pool2d(zeros({1, 1, 4, 4}), F::AvgPool2dFuncOptions(2).divisor_override(0)); },
            {"avg_pool2d", "non-zero divisor_override"}},
           {[] { F::avg_pool2d(zeros({1, 1, 4, 1}), 2); }, {"avg_pool2d", "[1, 1, 4, 1]", "Output size is too small"}}})
    recs.back().errors.push_back(e);
  recs.push_back(avg_record("padding", {.kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 1}, {{S({1, 2, 5, 4}, 13)}}));
  recs.push_back(avg_record("exclude_pad", {.kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .count_include_pad = false},
                            {{S({1, 2, 5, 4}, 14)}}));
  recs.push_back(avg_record("ceil_mode", {.kh = 2, .kw = 2, .sh = 2, .sw = 2, .ceil = true}, {{S({1, 1, 5, 5}, 15)}}));
  recs.push_back(avg_record("ceil_mode_padding", {.kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .ceil = true},
                            {{S({1, 1, 6, 6}, 16)}}));
  recs.push_back(avg_record("ceil_mode_padding_exclude",
                            {.kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .ceil = true, .count_include_pad = false},
                            {{S({1, 1, 6, 6}, 17)}}));
  recs.push_back(avg_record("divisor_override", {.kh = 2, .kw = 2, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .divisor = 3},
                            {{S({1, 1, 3, 3}, 18)}}));
  recs.push_back(avg_record("unbatched", {.kh = 2, .kw = 3, .sh = 1, .sw = 2}, {{S({2, 4, 5}, 19)}}));

  recs.push_back(adaptive_record("downsample", 2, 3, {{S({2, 2, 5, 7}, 21)}, {S({1, 1, 4, 6}, 22)}}));
  recs.back().errors = input_errors("adaptive_avg_pool2d", [](const Tensor& x) { F::adaptive_avg_pool2d(x, 2); });
  recs.back().errors.push_back({[] { F::adaptive_avg_pool2d(zeros({1, 1, 4, 4}), F::AdaptiveAvgPool2dFuncOptions({0, 2})); },
                                {"adaptive_avg_pool2d", "positive output_size", "(0, 2)", "[1, 1, 4, 4]"}});
  recs.push_back(adaptive_record("global", 1, 1, {{S({2, 3, 3, 4}, 23)}}));
  recs.push_back(adaptive_record("upsample", 3, 5, {{S({1, 2, 2, 4}, 24)}}));
  recs.push_back(adaptive_record("unbatched", 2, 2, {{S({3, 5, 5}, 25)}}));
  return recs;
}

namespace {

TEST(MaxPool2d, TiesGoToTheFirstMaximumAndNanWins) {
  // Two equal maxima in one window: PyTorch picks the first in row-major window order.
  const Tensor x = make({1.0, 3.0, 3.0, 0.0}, {1, 1, 2, 2}).requires_grad_();
  auto [y, idx] = F::max_pool2d_with_indices(x, 2);
  EXPECT_TRUE(all_close(y, {3.0}, {1, 1, 1, 1}));
  EXPECT_TRUE(all_close(idx, {1.0}, {1, 1, 1, 1}, 0, 0));
  EXPECT_EQ(idx.dtype(), kInt64);
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {0.0, 1.0, 0.0, 0.0}, {1, 1, 2, 2}));
  // nan is a maximum
  const double nan = std::nan("");
  const Tensor xn = make({1.0, nan, 3.0, 0.0}, {1, 1, 2, 2});
  auto [yn, in] = F::max_pool2d_with_indices(xn, 2);
  EXPECT_TRUE(std::isnan(yn.item<double>()));
  EXPECT_EQ(in.item<int64_t>(), 1);
}

TEST(MaxPool2d, TwoByTwoFastPathMatchesAPlainLoopWithTiesAndNans) {
  // Values from {0, 1, 2} (many ties) and a few NaNs, on an odd-sized image whose last row and column
  // no window covers: the 2x2 / stride 2 fast path against a loop written here.
  const int64_t N = 2, C = 3, H = 7, W = 9, oH = 3, oW = 4;
  std::vector<double> v(static_cast<size_t>(N * C * H * W));
  uint32_t state = 7;
  for (double& e : v) {
    state = state * 1664525u + 1013904223u;
    const uint32_t k = state >> 28;
    e = k == 0 ? std::nan("") : static_cast<double>(k % 3);
  }
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor x = make(v, {N, C, H, W}).to(dt);
    auto [y, idx] = F::max_pool2d_with_indices(x, 2);
    const Tensor yd = y.to(kFloat64).contiguous();
    const Tensor ic = idx.contiguous();
    for (int64_t p = 0; p < N * C; ++p)
      for (int64_t oh = 0; oh < oH; ++oh)
        for (int64_t ow = 0; ow < oW; ++ow) {
          double best = -INFINITY;
          int64_t at = -1;
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 2; ++j) {
              const int64_t pos = (2 * oh + i) * W + 2 * ow + j;
              const double e = v[static_cast<size_t>(p * H * W + pos)];
              if (at < 0 || e > best || std::isnan(e)) {  // PyTorch's rule: a later NaN takes over
                best = e;
                at = pos;
              }
            }
          const int64_t o = (p * oH + oh) * oW + ow;
          const double got = yd.data_ptr<double>()[o];
          EXPECT_TRUE(std::isnan(best) ? std::isnan(got) : got == best) << "output " << o;
          EXPECT_EQ(ic.data_ptr<int64_t>()[o], at) << "output " << o;
        }
  }
}

TEST(MaxPool2d, OverlappingWindowsAccumulateGradient) {
  // 3x3 windows, stride 1: the global maximum is picked by every window containing it.
  const Tensor x = make({0.0, 0.1, 0.2, 0.3, 9.0, 0.4, 0.5, 0.6, 0.7}, {1, 1, 3, 3}).requires_grad_();
  F::max_pool2d(x, F::MaxPool2dFuncOptions(2).stride(1)).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 0, 0, 0, 4, 0, 0, 0, 0}, {1, 1, 3, 3}));
}

TEST(Pooling, GradFnNames) {
  const Tensor x = r({1, 1, 4, 4}, 31).requires_grad_();
  EXPECT_EQ(F::max_pool2d(x, 2).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(F::avg_pool2d(x, 2).grad_fn()->name(), "AvgPool2DBackward0");
  EXPECT_EQ(F::adaptive_avg_pool2d(x, 3).grad_fn()->name(), "AdaptiveAvgPool2DBackward0");
  const Tensor y = F::avg_pool2d(x, 2);
  const TensorList g = autograd::grad({y.pow(2).sum()}, {x}, {}, std::nullopt, true);
  EXPECT_EQ(g[0].grad_fn()->name(), "AvgPool2DBackwardBackward0");
}

TEST(Pooling, OutputShapes) {
  // Shapes PyTorch 1.13 gives for these settings.
  EXPECT_EQ(F::max_pool2d(zeros({1, 1, 5, 5}), F::MaxPool2dFuncOptions(2).padding(1).ceil_mode(true)).sizes().vec(),
            (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(F::avg_pool2d(zeros({1, 1, 5, 5}), F::AvgPool2dFuncOptions(2).ceil_mode(true)).sizes().vec(),
            (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(F::max_pool2d(zeros({1, 1, 1, 1}), F::MaxPool2dFuncOptions(3).padding(1)).sizes().vec(),
            (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(F::max_pool2d(zeros({2, 7, 7}), F::MaxPool2dFuncOptions(3).stride(2).dilation(2)).sizes().vec(),
            (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(F::adaptive_avg_pool2d(zeros({0, 3, 4, 4}), 2).sizes().vec(), (std::vector<int64_t>{0, 3, 2, 2}));
}

}  // namespace
}  // namespace graft::test
