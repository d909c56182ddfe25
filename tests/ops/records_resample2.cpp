// Op records: upsample_nearest1d, upsample_nearest3d, _upsample_nearest_exact{1,2,3}d,
// upsample_linear1d, upsample_trilinear3d and upsample_bicubic2d (align_corners both ways, given scales, up and down), against plain loops in
// double written here from PyTorch's formulas; PyTorch's own values (through F::interpolate) are
// checked in tests/nn/test_interpolate_nd.cpp.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

// One dim's taps: output position o reads (input index, weight) pairs.
using Rs2Taps = std::vector<std::vector<std::pair<int64_t, double>>>;

// Nearest: floor(o * n / m) (exact integer arithmetic), or floor(o / scale), at most n - 1.
Rs2Taps rs2_nearest(int64_t n, int64_t m, double scale) {
  Rs2Taps t(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) {
    const int64_t i = scale > 0 ? static_cast<int64_t>(std::floor(static_cast<double>(o) / scale)) : o * n / m;
    t[static_cast<size_t>(o)] = {{std::min(i, n - 1), 1.0}};
  }
  return t;
}

// Nearest-exact: floor((o + 1/2) n / m), or floor((o + 1/2) / scale), at most n - 1.
Rs2Taps rs2_nearest_exact(int64_t n, int64_t m, double scale) {
  Rs2Taps t(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) {
    const double ratio = scale > 0 ? 1.0 / scale : static_cast<double>(n) / static_cast<double>(m);
    const auto i = static_cast<int64_t>(std::floor((static_cast<double>(o) + 0.5) * ratio));
    t[static_cast<size_t>(o)] = {{std::min(i, n - 1), 1.0}};
  }
  return t;
}

// The source coordinate of the linear and cubic modes (cubic: not clamped at 0).
double rs2_source(int64_t o, int64_t n, int64_t m, bool align, double scale, bool cubic) {
  if (align) return m > 1 ? static_cast<double>(o) * static_cast<double>(n - 1) / static_cast<double>(m - 1) : 0.0;
  const double ratio = scale > 0 ? 1.0 / scale : static_cast<double>(n) / static_cast<double>(m);
  const double src = (static_cast<double>(o) + 0.5) * ratio - 0.5;
  return cubic ? src : std::max(src, 0.0);
}

Rs2Taps rs2_linear(int64_t n, int64_t m, bool align, double scale) {
  Rs2Taps t(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) {
    const double src = rs2_source(o, n, m, align, scale, false);
    const int64_t i0 = std::min(static_cast<int64_t>(src), n - 1);
    const double f = src - static_cast<double>(i0);
    t[static_cast<size_t>(o)] = {{i0, 1 - f}, {std::min(i0 + 1, n - 1), f}};
  }
  return t;
}

// Keys' cubic convolution kernel, a = -0.75.
double rs2_keys(double x) {
  const double a = -0.75, ax = std::fabs(x);
  if (ax <= 1) return (a + 2) * ax * ax * ax - (a + 3) * ax * ax + 1;
  if (ax < 2) return a * ax * ax * ax - 5 * a * ax * ax + 8 * a * ax - 4 * a;
  return 0;
}

// Taps floor(src) - 1 .. floor(src) + 2, each weighted by the kernel at its distance from src,
// the indices clamped into the input.
Rs2Taps rs2_cubic(int64_t n, int64_t m, bool align, double scale) {
  Rs2Taps t(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) {
    const double src = rs2_source(o, n, m, align, scale, true);
    const auto base = static_cast<int64_t>(std::floor(src));
    for (int64_t k = -1; k <= 2; ++k)
      t[static_cast<size_t>(o)].push_back({std::clamp<int64_t>(base + k, 0, n - 1), rs2_keys(src - static_cast<double>(base + k))});
  }
  return t;
}

// y[p, o...] = sum over the product of the dims' taps of their weights times x[p, i...]; the last
// taps.size() dims of x are the spatial ones.
Tensor rs2_apply(const Tensor& x, const std::vector<Rs2Taps>& taps) {
  const std::vector<double> v = values(x);
  const size_t k = taps.size(), lead = static_cast<size_t>(x.dim()) - k;
  std::vector<int64_t> in(x.sizes().begin() + static_cast<int64_t>(lead), x.sizes().end()), out;
  for (const auto& t : taps) out.push_back(static_cast<int64_t>(t.size()));
  int64_t in_plane = 1, out_plane = 1;
  for (size_t d = 0; d < k; ++d) {
    in_plane *= in[d];
    out_plane *= out[d];
  }
  const int64_t planes = x.numel() / in_plane;
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t flat = 0; flat < out_plane; ++flat) {
      std::vector<int64_t> o(k);
      for (size_t d = k, r = static_cast<size_t>(flat); d-- > 0;) {
        o[d] = static_cast<int64_t>(r % static_cast<size_t>(out[d]));
        r /= static_cast<size_t>(out[d]);
      }
      // every combination of one tap per dim
      double acc = 0;
      std::vector<size_t> c(k, 0);
      while (true) {
        double w = 1;
        int64_t idx = 0;
        for (size_t d = 0; d < k; ++d) {
          const auto& tap = taps[d][static_cast<size_t>(o[d])][c[d]];
          w *= tap.second;
          idx = idx * in[d] + tap.first;
        }
        acc += w * v[static_cast<size_t>(p * in_plane + idx)];
        size_t d = k;
        while (d > 0 && ++c[d - 1] == taps[d - 1][static_cast<size_t>(o[d - 1])].size()) c[--d] = 0;
        if (d == 0) break;
      }
      y.push_back(acc);
    }
  }
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().begin() + static_cast<int64_t>(lead));
  shape.insert(shape.end(), out.begin(), out.end());
  return make(y, shape);
}

std::optional<double> rs2_opt(double s) { return s > 0 ? std::optional<double>(s) : std::nullopt; }

}  // namespace

GRAFT_OP_RECORDS(resample2) {
  std::vector<OpRecord> recs;
  using Sizes = std::vector<int64_t>;
  using Scales = std::vector<double>;  // 0: none

  // ---- upsample_nearest1d / upsample_nearest3d ----
  const auto nearest = [](std::string variant, Sizes out, Scales sc, Specs samples) {
    const bool three = out.size() == 3;
    return OpRecord{.name = three ? "upsample_nearest3d" : "upsample_nearest1d", .variant = std::move(variant),
                    .fn = [=](const TensorList& t) {
                      return three ? upsample_nearest3d(t[0], out, rs2_opt(sc[0]), rs2_opt(sc[1]), rs2_opt(sc[2]))
                                   : upsample_nearest1d(t[0], out, rs2_opt(sc[0]));
                    },
                    .reference = [=](const TensorList& t) {
                      std::vector<Rs2Taps> taps;
                      for (size_t d = 0; d < out.size(); ++d)
                        taps.push_back(rs2_nearest(t[0].size(t[0].dim() - static_cast<int64_t>(out.size() - d)), out[d], sc[d]));
                      return rs2_apply(t[0], taps);
                    },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(nearest("up", {7}, {0}, {{S({2, 3, 4}, 301)}}));
  recs.back().errors = {
      {[] { upsample_nearest1d(zeros({3, 4}), {4}); }, {"upsample_nearest1d", "3-D (N, C, W)", "[3, 4]", "unsqueeze"}},
      {[] { upsample_nearest1d(zeros({1, 3, 4}), {4, 4}); }, {"upsample_nearest1d", "output_size of 1 values {oW}", "2 values"}},
      {[] { upsample_nearest1d(zeros({1, 3, 4}, kInt64), {4}); }, {"upsample_nearest1d", "floating-point", "int64"}}};
  recs.push_back(nearest("down", {3}, {0}, {{S({1, 2, 7}, 302)}}));
  recs.push_back(nearest("scale", {5}, {1.7}, {{S({1, 2, 3}, 303)}}));
  recs.push_back(nearest("3d_up", {3, 4, 5}, {0, 0, 0}, {{S({1, 2, 2, 3, 2}, 304)}}));
  recs.back().errors = {
      {[] { upsample_nearest3d(zeros({1, 2, 3, 4}), {4, 4, 4}); }, {"upsample_nearest3d", "5-D (N, C, D, H, W)", "[1, 2, 3, 4]"}},
      {[] { upsample_nearest3d(zeros({1, 1, 2, 2, 2}), {1, 0, 1}); }, {"upsample_nearest3d", "greater than 0", "(1, 0, 1)"}}};
  recs.push_back(nearest("3d_down_twice", {1, 6, 2}, {0, 0, 0}, {{S({1, 1, 3, 3, 4}, 305)}}));
  recs.push_back(nearest("3d_scales", {4, 3, 5}, {2.0, 1.5, 2.5}, {{S({1, 2, 2, 2, 2}, 306)}}));

  // ---- _upsample_nearest_exact1d / 2d / 3d ----
  const auto exact = [](std::string variant, Sizes out, Scales sc, Specs samples) {
    const size_t k = out.size();
    return OpRecord{.name = "_upsample_nearest_exact" + std::to_string(k) + "d", .variant = std::move(variant),
                    .fn = [=](const TensorList& t) {
                      if (k == 1) return _upsample_nearest_exact1d(t[0], out, rs2_opt(sc[0]));
                      if (k == 2) return _upsample_nearest_exact2d(t[0], out, rs2_opt(sc[0]), rs2_opt(sc[1]));
                      return _upsample_nearest_exact3d(t[0], out, rs2_opt(sc[0]), rs2_opt(sc[1]), rs2_opt(sc[2]));
                    },
                    .reference = [=](const TensorList& t) {
                      std::vector<Rs2Taps> taps;
                      for (size_t d = 0; d < k; ++d)
                        taps.push_back(rs2_nearest_exact(t[0].size(t[0].dim() - static_cast<int64_t>(k - d)), out[d], sc[d]));
                      return rs2_apply(t[0], taps);
                    },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(exact("up", {7}, {0}, {{S({2, 3, 3}, 331)}}));
  recs.back().errors = {
      {[] { _upsample_nearest_exact1d(zeros({3, 4}), {4}); }, {"_upsample_nearest_exact1d", "3-D (N, C, W)", "[3, 4]"}},
      {[] { _upsample_nearest_exact1d(zeros({1, 3, 4}, kInt64), {4}); }, {"_upsample_nearest_exact1d", "floating-point"}}};
  recs.push_back(exact("down", {3}, {0}, {{S({1, 2, 8}, 332)}}));
  recs.push_back(exact("2d", {5, 3}, {0, 0}, {{S({1, 2, 3, 4}, 333)}}));
  recs.back().errors = {
      {[] { _upsample_nearest_exact2d(zeros({1, 3, 4}), {4, 4}); }, {"_upsample_nearest_exact2d", "4-D", "unsqueeze"}},
      {[] { _upsample_nearest_exact2d(zeros({1, 1, 3, 4}), {4}); }, {"_upsample_nearest_exact2d", "output_size of 2 values"}}};
  recs.push_back(exact("2d_scales", {4, 6}, {1.5, 2.5}, {{S({1, 1, 3, 2}, 334)}}));
  recs.push_back(exact("3d", {3, 4, 2}, {0, 0, 0}, {{S({1, 2, 2, 3, 5}, 335)}}));
  recs.back().errors = {
      {[] { _upsample_nearest_exact3d(zeros({1, 1, 2, 2, 2}), {2, 0, 2}); }, {"_upsample_nearest_exact3d", "greater than 0"}}};

  // ---- upsample_linear1d / upsample_trilinear3d ----
  const auto linear = [](std::string variant, Sizes out, bool align, Scales sc, Specs samples) {
    const bool three = out.size() == 3;
    return OpRecord{.name = three ? "upsample_trilinear3d" : "upsample_linear1d", .variant = std::move(variant),
                    .fn = [=](const TensorList& t) {
                      return three ? upsample_trilinear3d(t[0], out, align, rs2_opt(sc[0]), rs2_opt(sc[1]), rs2_opt(sc[2]))
                                   : upsample_linear1d(t[0], out, align, rs2_opt(sc[0]));
                    },
                    .reference = [=](const TensorList& t) {
                      std::vector<Rs2Taps> taps;
                      for (size_t d = 0; d < out.size(); ++d)
                        taps.push_back(
                            rs2_linear(t[0].size(t[0].dim() - static_cast<int64_t>(out.size() - d)), out[d], align, sc[d]));
                      return rs2_apply(t[0], taps);
                    },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(linear("up", {9}, false, {0}, {{S({2, 2, 4}, 311)}}));
  recs.back().errors = {
      {[] { upsample_linear1d(zeros({1, 2, 3, 4}), {4}, false); }, {"upsample_linear1d", "3-D", "[1, 2, 3, 4]"}},
      {[] { upsample_linear1d(zeros({1, 2, 0}), {4}, true); }, {"upsample_linear1d", "greater than 0"}}};
  recs.push_back(linear("up_align_corners", {9}, true, {0}, {{S({2, 2, 4}, 312)}}));
  recs.push_back(linear("down", {3}, false, {0}, {{S({1, 2, 7}, 313)}}));
  recs.push_back(linear("to_1_align_corners", {1}, true, {0}, {{S({1, 2, 5}, 314)}}));
  recs.push_back(linear("scale", {6}, false, {1.7}, {{S({1, 1, 4}, 315)}}));
  recs.push_back(linear("3d_up", {3, 5, 4}, false, {0, 0, 0}, {{S({1, 2, 2, 3, 3}, 316)}}));
  recs.back().errors = {
      {[] { upsample_trilinear3d(zeros({2, 2, 3, 4}), {4, 4, 4}, false); },
       {"upsample_trilinear3d", "5-D", "[2, 2, 3, 4]", "unsqueeze"}},
      {[] { upsample_trilinear3d(zeros({1, 1, 2, 2, 2}), {4, 4}, false); },
       {"upsample_trilinear3d", "output_size of 3 values {oD, oH, oW}", "2 values"}}};
  recs.push_back(linear("3d_align_corners", {3, 2, 5}, true, {0, 0, 0}, {{S({1, 1, 2, 3, 3}, 317)}}));
  recs.push_back(linear("3d_down", {1, 2, 2}, false, {0, 0, 0}, {{S({1, 2, 3, 4, 5}, 318)}}));
  recs.push_back(linear("3d_scales", {3, 3, 5}, false, {1.5, 1.5, 2.5}, {{S({1, 1, 2, 2, 2}, 319)}}));

  // ---- upsample_bicubic2d ----
  const auto bicubic = [](std::string variant, Sizes out, bool align, Scales sc, Specs samples) {
    return OpRecord{.name = "upsample_bicubic2d", .variant = std::move(variant),
                    .fn = [=](const TensorList& t) { return upsample_bicubic2d(t[0], out, align, rs2_opt(sc[0]), rs2_opt(sc[1])); },
                    .reference = [=](const TensorList& t) {
                      return rs2_apply(t[0], {rs2_cubic(t[0].size(2), out[0], align, sc[0]),
                                              rs2_cubic(t[0].size(3), out[1], align, sc[1])});
                    },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(bicubic("up", {5, 7}, false, {0, 0}, {{S({2, 2, 3, 4}, 321)}}));
  recs.back().errors = {
      {[] { upsample_bicubic2d(zeros({2, 3, 4}), {4, 4}, false); }, {"upsample_bicubic2d", "4-D", "[2, 3, 4]", "unsqueeze"}},
      {[] { upsample_bicubic2d(zeros({1, 1, 2, 2}), {4}, false); }, {"upsample_bicubic2d", "output_size of 2 values", "1 values"}},
      {[] { upsample_bicubic2d(zeros({1, 1, 2, 2}, kInt64), {3, 3}, true); }, {"upsample_bicubic2d", "floating-point", "int64"}}};
  recs.push_back(bicubic("up_align_corners", {5, 7}, true, {0, 0}, {{S({1, 2, 3, 4}, 322)}}));
  recs.push_back(bicubic("down", {2, 3}, false, {0, 0}, {{S({1, 2, 5, 7}, 323)}}));
  recs.push_back(bicubic("down_align_corners", {2, 1}, true, {0, 0}, {{S({1, 1, 5, 7}, 324)}}));
  recs.push_back(bicubic("scales", {5, 6}, false, {2.5, 1.5}, {{S({1, 1, 2, 4}, 325)}}));
  recs.push_back(bicubic("from_1x1", {3, 2}, false, {0, 0}, {{S({2, 1, 1, 1}, 326)}}));
  return recs;
}

}  // namespace graft::test
