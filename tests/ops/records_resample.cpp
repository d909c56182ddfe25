// Op records: upsample_nearest2d, upsample_bilinear2d (align_corners both ways, given scales),
// constant_pad_nd (negative amounts crop), the reflection and replication pads, pad (every mode),
// pixel_shuffle and pixel_unshuffle, against plain loops in double; plus grad_fn names, integer
// inputs and F::interpolate's option checks.
#include <cmath>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// Applies value(plane, H, W, oh, ow) to every output position of every plane of x, whose last
// `spatial` dims are the image (H = 1 for spatial = 1).
template <class Fn>
Tensor ref_planes(const Tensor& x, int spatial, int64_t oH, int64_t oW, Fn&& value) {
  const std::vector<double> v = values(x);
  const int64_t W = x.size(-1), H = spatial == 2 ? x.size(-2) : 1, planes = x.numel() / (H * W);
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p) {
    const std::vector<double> plane(v.begin() + p * H * W, v.begin() + (p + 1) * H * W);
    for (int64_t oh = 0; oh < oH; ++oh)
      for (int64_t ow = 0; ow < oW; ++ow) out.push_back(value(plane, H, W, oh, ow));
  }
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = oW;
  if (spatial == 2) shape[shape.size() - 2] = oH;
  return make(out, shape);
}

// Nearest: the source of output o is floor(o * n / m) (exact integer arithmetic), or floor(o / scale).
int64_t ref_nearest(int64_t o, int64_t n, int64_t m, double scale) {
  if (scale > 0) return std::min(static_cast<int64_t>(std::floor(static_cast<double>(o) / scale)), n - 1);
  return std::min(o * n / m, n - 1);
}

Tensor ref_upsample_nearest(const Tensor& x, int64_t oH, int64_t oW, double sh = 0, double sw = 0) {
  return ref_planes(x, 2, oH, oW, [&](const std::vector<double>& p, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    return p[static_cast<size_t>(ref_nearest(oh, H, oH, sh) * W + ref_nearest(ow, W, oW, sw))];
  });
}

// Bilinear: the two neighbours of the source coordinate and their weights.
struct Taps {
  int64_t i0, i1;
  double w0, w1;
};
Taps linear_taps(int64_t o, int64_t n, int64_t m, bool align, double scale) {
  double src;
  if (align) {
    src = m > 1 ? static_cast<double>(o) * static_cast<double>(n - 1) / static_cast<double>(m - 1) : 0.0;
  } else {
    const double ratio = scale > 0 ? 1.0 / scale : static_cast<double>(n) / static_cast<double>(m);
    src = std::max((static_cast<double>(o) + 0.5) * ratio - 0.5, 0.0);
  }
  const auto i0 = std::min(static_cast<int64_t>(src), n - 1);
  const double frac = src - static_cast<double>(i0);
  return {i0, std::min(i0 + 1, n - 1), 1 - frac, frac};
}

Tensor ref_upsample_bilinear(const Tensor& x, int64_t oH, int64_t oW, bool align, double sh = 0, double sw = 0) {
  return ref_planes(x, 2, oH, oW, [&](const std::vector<double>& p, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    const Taps a = linear_taps(oh, H, oH, align, sh), b = linear_taps(ow, W, oW, align, sw);
    auto at = [&](int64_t h, int64_t w) { return p[static_cast<size_t>(h * W + w)]; };
    return a.w0 * (b.w0 * at(a.i0, b.i0) + b.w1 * at(a.i0, b.i1)) + a.w1 * (b.w0 * at(a.i1, b.i0) + b.w1 * at(a.i1, b.i1));
  });
}

enum class Mode { Reflect, Replicate, Circular };

// Source index along a dim of size n padded by (before, after); circular crops first, then wraps.
int64_t ref_source(int64_t o, int64_t n, int64_t before, int64_t after, Mode mode) {
  int64_t i = o - before;
  switch (mode) {
    case Mode::Reflect:
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
      return i;
    case Mode::Replicate: return i < 0 ? 0 : (i >= n ? n - 1 : i);
    case Mode::Circular: {
      const int64_t lo = before < 0 ? -before : 0, hi = n - (after < 0 ? -after : 0), k = hi - lo;
      const int64_t j = o - (before > 0 ? before : 0);
      return lo + ((j % k) + k) % k;
    }
  }
  return 0;
}

// pad = {l, r} or {l, r, t, b}.
Tensor ref_pad(const Tensor& x, std::vector<int64_t> pad, Mode mode) {
  const int spatial = static_cast<int>(pad.size() / 2);
  const int64_t W = x.size(-1), H = spatial == 2 ? x.size(-2) : 1;
  const int64_t oW = W + pad[0] + pad[1], oH = spatial == 2 ? H + pad[2] + pad[3] : 1;
  return ref_planes(x, spatial, oH, oW, [&](const std::vector<double>& p, int64_t, int64_t, int64_t oh, int64_t ow) {
    const int64_t h = spatial == 2 ? ref_source(oh, H, pad[2], pad[3], mode) : 0;
    return p[static_cast<size_t>(h * W + ref_source(ow, W, pad[0], pad[1], mode))];
  });
}

// pad = {l, r, t, b, front, back} on (*, D, H, W): each output index mapped per dim, as in 1-D / 2-D.
Tensor ref_pad3d(const Tensor& x, const std::vector<int64_t>& pad, Mode mode) {
  const std::vector<double> v = values(x);
  const int64_t D = x.size(-3), H = x.size(-2), W = x.size(-1), planes = x.numel() / (D * H * W);
  const int64_t oD = D + pad[4] + pad[5], oH = H + pad[2] + pad[3], oW = W + pad[0] + pad[1];
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t od = 0; od < oD; ++od)
      for (int64_t oh = 0; oh < oH; ++oh)
        for (int64_t ow = 0; ow < oW; ++ow) {
          const int64_t d = ref_source(od, D, pad[4], pad[5], mode), h = ref_source(oh, H, pad[2], pad[3], mode),
                        w = ref_source(ow, W, pad[0], pad[1], mode);
          out.push_back(v[static_cast<size_t>(((p * D + d) * H + h) * W + w)]);
        }
  std::vector<int64_t> shape = x.sizes().vec();
  const size_t n = shape.size();
  shape[n - 3] = oD;
  shape[n - 2] = oH;
  shape[n - 1] = oW;
  return make(out, shape);
}

// Constant padding of any trailing dims: the output's multi-index minus the leading amount, or value.
Tensor ref_constant_pad(const Tensor& x, std::vector<int64_t> pad, double value) {
  const std::vector<double> v = values(x);
  const std::vector<int64_t> in = x.sizes().vec();
  const size_t D = in.size();
  std::vector<int64_t> out = in, lead(D, 0);
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    out[D - 1 - k] += pad[2 * k] + pad[2 * k + 1];
    lead[D - 1 - k] = pad[2 * k];
  }
  int64_t total = 1;
  for (int64_t s : out) total *= s;
  std::vector<double> res;
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rem = flat, src = 0, stride = 1;
    bool inside = true;
    for (size_t d = D; d-- > 0;) {
      const int64_t i = rem % out[d] - lead[d];
      rem /= out[d];
      if (i < 0 || i >= in[d]) inside = false;
      src += i * stride;
      stride *= in[d];
    }
    res.push_back(inside ? v[static_cast<size_t>(src)] : value);
  }
  return make(res, out);
}

// y[n, c, h r + i, w r + j] = x[n, c r^2 + i r + j, h, w].
Tensor ref_pixel_shuffle(const Tensor& x, int64_t r) {
  const std::vector<double> v = values(x);
  const int64_t N = x.size(0), C = x.size(1) / (r * r), H = x.size(2), W = x.size(3);
  std::vector<double> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < r; ++i)
          for (int64_t w = 0; w < W; ++w)
            for (int64_t j = 0; j < r; ++j)
              out[static_cast<size_t>(((n * C + c) * H * r + h * r + i) * W * r + w * r + j)] =
                  v[static_cast<size_t>(((n * C * r * r + c * r * r + i * r + j) * H + h) * W + w)];
  return make(out, {N, C, H * r, W * r});
}

// The inverse: x[n, c r^2 + i r + j, h, w] = y[n, c, h r + i, w r + j].
Tensor ref_pixel_unshuffle(const Tensor& y, int64_t r) {
  const std::vector<double> v = values(y);
  const int64_t N = y.size(0), C = y.size(1), H = y.size(2) / r, W = y.size(3) / r;
  std::vector<double> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < r; ++j)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w)
              out[static_cast<size_t>(((n * C * r * r + c * r * r + i * r + j) * H + h) * W + w)] =
                  v[static_cast<size_t>(((n * C + c) * H * r + h * r + i) * W * r + w * r + j)];
  return make(out, {N, C * r * r, H, W});
}

OpRecord pad_record(const std::string& name, std::string variant, std::vector<int64_t> pad, Mode mode,
                    std::function<Tensor(const Tensor&, IntArrayRef)> fn, Specs samples) {
  return {.name = name, .variant = std::move(variant),
          .fn = [pad, fn](const TensorList& t) { return fn(t[0], pad); },
          .reference = [pad, mode](const TensorList& t) { return ref_pad(t[0], pad, mode); },
          .samples = lazy(std::move(samples))};
}

}  // namespace

GRAFT_OP_RECORDS(resample) {
  std::vector<OpRecord> recs;

  // ---- upsample_nearest2d ----
  const auto nearest = [](std::string variant, int64_t oH, int64_t oW, double sh, double sw, Specs samples) {
    return OpRecord{.name = "upsample_nearest2d", .variant = std::move(variant),
                    .fn = [=](const TensorList& t) {
                      return upsample_nearest2d(t[0], {oH, oW}, sh > 0 ? std::optional<double>(sh) : std::nullopt,
                                                sw > 0 ? std::optional<double>(sw) : std::nullopt);
                    },
                    .reference = [=](const TensorList& t) { return ref_upsample_nearest(t[0], oH, oW, sh, sw); },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(nearest("up_5x7", 5, 7, 0, 0, {{S({2, 2, 3, 4}, 1)}}));
  recs.back().errors = {
      {[] { upsample_nearest2d(zeros({2, 3, 4}), {4, 4}); }, {"upsample_nearest2d", "4-D", "[2, 3, 4]", "unsqueeze"}},
      {[] { upsample_nearest2d(zeros({1, 1, 2, 2}), {4}); }, {"upsample_nearest2d", "output_size of 2 values", "1 values"}},
      {[] { upsample_nearest2d(zeros({1, 1, 2, 2}), {0, 3}); }, {"upsample_nearest2d", "greater than 0", "(0, 3)"}},
      {[] { upsample_nearest2d(zeros({1, 1, 2, 2}, kInt64), {3, 3}); }, {"upsample_nearest2d", "floating-point", "int64"}}};
  recs.push_back(nearest("twice", 4, 6, 0, 0, {{S({1, 3, 2, 3}, 2)}}));
  recs.push_back(nearest("down_2x3", 2, 3, 0, 0, {{S({1, 2, 4, 6}, 3)}}));
  recs.push_back(nearest("scales", 5, 4, 2.5, 1.5, {{S({1, 2, 2, 3}, 4)}}));

  // ---- upsample_bilinear2d ----
  const auto bilinear = [](std::string variant, int64_t oH, int64_t oW, bool align, double sh, double sw,
                           Specs samples) {
    return OpRecord{.name = "upsample_bilinear2d", .variant = std::move(variant),
                    .fn = [=](const TensorList& t) {
                      return upsample_bilinear2d(t[0], {oH, oW}, align, sh > 0 ? std::optional<double>(sh) : std::nullopt,
                                                 sw > 0 ? std::optional<double>(sw) : std::nullopt);
                    },
                    .reference = [=](const TensorList& t) { return ref_upsample_bilinear(t[0], oH, oW, align, sh, sw); },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(bilinear("up", 5, 7, false, 0, 0, {{S({2, 2, 3, 4}, 11)}}));
  recs.back().errors = {
      {[] { upsample_bilinear2d(zeros({3, 4}), {4, 4}, false); }, {"upsample_bilinear2d", "4-D", "[3, 4]"}},
      {[] { upsample_bilinear2d(zeros({1, 1, 2, 2}), {-1, 3}, true); }, {"upsample_bilinear2d", "greater than 0"}}};
  recs.push_back(bilinear("up_align_corners", 5, 7, true, 0, 0, {{S({2, 2, 3, 4}, 12)}}));
  recs.push_back(bilinear("down", 2, 3, false, 0, 0, {{S({1, 2, 5, 7}, 13)}}));
  recs.push_back(bilinear("down_align_corners", 2, 1, true, 0, 0, {{S({1, 2, 5, 7}, 14)}}));
  recs.push_back(bilinear("scales", 5, 6, false, 2.5, 1.5, {{S({1, 1, 2, 4}, 15)}}));
  recs.push_back(bilinear("from_1x1", 3, 2, false, 0, 0, {{S({2, 1, 1, 1}, 16)}}));

  // ---- constant_pad_nd ----
  const auto cpad = [](std::string variant, std::vector<int64_t> pad, double value, Specs samples) {
    return OpRecord{.name = "constant_pad_nd", .variant = std::move(variant),
                    .fn = [=](const TensorList& t) { return constant_pad_nd(t[0], pad, value); },
                    .reference = [=](const TensorList& t) { return ref_constant_pad(t[0], pad, value); },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(cpad("last_dim", {1, 2}, 0.5, {{S({2, 3}, 21)}}));
  recs.back().errors = {
      {[] { constant_pad_nd(zeros({2, 3}), {1, 1, 1}); }, {"constant_pad_nd", "even number", "3 values"}},
      {[] { constant_pad_nd(zeros({2}), {1, 1, 1, 1}); }, {"constant_pad_nd", "at most 2 * input.dim() = 2", "[2]"}},
      {[] { constant_pad_nd(zeros({2, 3}), {-2, -2}); }, {"constant_pad_nd", "non-negative output size", "-1"}}};
  recs.push_back(cpad("two_dims", {1, 0, 2, 1}, -1.0, {{S({2, 2, 3}, 22)}}));
  recs.push_back(cpad("crop", {-1, 2, 1, -2}, 0.0, {{S({1, 4, 3}, 23)}}));
  recs.push_back(cpad("all_dims", {1, 1, 0, 1, 1, 0}, 2.0, {{S({2, 1, 2}, 24)}}));

  // ---- reflection / replication pads ----
  recs.push_back(pad_record("reflection_pad1d", "batched", {2, 1}, Mode::Reflect,
                            [](const Tensor& x, IntArrayRef p) { return reflection_pad1d(x, p); },
                            {{S({2, 2, 4}, 31)}}));
  recs.back().errors = {
      {[] { reflection_pad1d(zeros({2, 3}), {3, 0}); }, {"reflection_pad1d", "smaller than the padded dim", "(3, 0)"}},
      {[] { reflection_pad1d(zeros({3}), {1, 1}); }, {"reflection_pad1d", "2-D (C, W) or 3-D", "[3]"}},
      {[] { reflection_pad1d(zeros({1, 3}), {1, 1, 1}); }, {"reflection_pad1d", "2 values", "3 values"}},
      {[] { reflection_pad1d(zeros({1, 3}), {-2, -1}); }, {"reflection_pad1d", "positive output size"}}};
  recs.push_back(pad_record("reflection_pad1d", "unbatched_crop", {-1, 2}, Mode::Reflect,
                            [](const Tensor& x, IntArrayRef p) { return reflection_pad1d(x, p); }, {{S({3, 5}, 32)}}));
  recs.push_back(pad_record("reflection_pad2d", "batched", {1, 2, 2, 0}, Mode::Reflect,
                            [](const Tensor& x, IntArrayRef p) { return reflection_pad2d(x, p); },
                            {{S({2, 1, 3, 4}, 33)}}));
  recs.back().errors = {
      {[] { reflection_pad2d(zeros({1, 1, 2, 4}), {1, 1, 2, 0}); }, {"reflection_pad2d", "smaller", "size 2"}},
      {[] { reflection_pad2d(zeros({1, 4}), {1, 1, 1, 1}); }, {"reflection_pad2d", "3-D (C, H, W) or 4-D", "[1, 4]"}}};
  recs.push_back(pad_record("reflection_pad2d", "unbatched", {0, 3, 1, 1}, Mode::Reflect,
                            [](const Tensor& x, IntArrayRef p) { return reflection_pad2d(x, p); }, {{S({2, 3, 4}, 34)}}));
  recs.push_back(pad_record("replication_pad1d", "batched", {3, 1}, Mode::Replicate,
                            [](const Tensor& x, IntArrayRef p) { return replication_pad1d(x, p); },
                            {{S({2, 2, 3}, 35)}}));
  recs.back().errors = {
      {[] { replication_pad1d(zeros({2, 0}), {1, 1}); }, {"replication_pad1d", "non-empty padded dims"}}};
  recs.push_back(pad_record("replication_pad2d", "batched", {2, 1, 0, 3}, Mode::Replicate,
                            [](const Tensor& x, IntArrayRef p) { return replication_pad2d(x, p); },
                            {{S({1, 2, 2, 3}, 36)}}));
  recs.back().errors = {
      {[] { replication_pad2d(zeros({1, 2, 2}), {1, 1}); }, {"replication_pad2d", "4 values", "2 values"}},
      {[] { replication_pad2d(zeros({1, 2, 3}), {0, 0, -1, -1}); }, {"replication_pad2d", "positive output size"}}};
  recs.push_back(pad_record("replication_pad2d", "crop_unbatched", {-1, 1, 1, -1}, Mode::Replicate,
                            [](const Tensor& x, IntArrayRef p) { return replication_pad2d(x, p); },
                            {{S({2, 3, 3}, 37)}}));

  // ---- pad: every mode ----
  recs.push_back({.name = "pad", .variant = "constant",
                  .fn = [](const TensorList& t) { return graft::pad(t[0], {1, 1, 0, 2}, "constant", 1.5); },
                  .reference = [](const TensorList& t) { return ref_constant_pad(t[0], {1, 1, 0, 2}, 1.5); },
                  .samples = lazy({{S({2, 2, 3}, 41)}})});
  recs.back().errors = {
      {[] { graft::pad(zeros({1, 2, 3}), {1, 1}, "wrap"); }, {"pad", "\"reflect\"", "mode \"wrap\""}},
      {[] { graft::pad(zeros({1, 2, 3}), {1, 1}, "reflect", 2.0); }, {"pad", "no value for mode \"reflect\""}},
      {[] { graft::pad(zeros({1, 2, 3, 3, 3}), {1, 1, 1, 1, 1, 1, 1, 1}, "replicate"); }, {"pad", "6 (3-D", "8 values"}},
      {[] { graft::pad(zeros({1, 2, 3, 3, 3}), {1, 1, 1, 1, 3, 0}, "reflect"); },
       {"reflection_pad3d", "smaller than the padded dim", "dim 2 of size 3"}},
      {[] { graft::pad(zeros({1, 1, 2, 3}), {1, 1}, "reflect"); }, {"pad", "2-D or 3-D input", "[1, 1, 2, 3]"}},
      {[] { graft::pad(zeros({1, 2, 3}), {4, 0}, "circular"); }, {"pad", "circular wraps around once", "(4, 0)"}}};
  const auto mode_pad = [](std::string mode, std::vector<int64_t> p, Mode m, Specs samples) {
    return OpRecord{.name = "pad", .variant = mode + "_" + std::to_string(p.size()),
                    .fn = [=](const TensorList& t) { return graft::pad(t[0], p, mode); },
                    .reference = [=](const TensorList& t) { return ref_pad(t[0], p, m); },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(mode_pad("reflect", {2, 1}, Mode::Reflect, {{S({1, 2, 4}, 42)}}));
  recs.push_back(mode_pad("reflect", {1, 1, 2, 1}, Mode::Reflect, {{S({1, 1, 3, 3}, 43)}}));
  recs.push_back(mode_pad("replicate", {2, 0}, Mode::Replicate, {{S({2, 3}, 44)}}));
  recs.push_back(mode_pad("replicate", {1, 2, 1, 0}, Mode::Replicate, {{S({2, 2, 2}, 45)}}));
  recs.push_back(mode_pad("circular", {2, 1}, Mode::Circular, {{S({1, 2, 3}, 46)}}));
  recs.push_back(mode_pad("circular", {1, 3, 2, 0}, Mode::Circular, {{S({2, 1, 3, 3}, 47)}}));
  recs.push_back(mode_pad("circular", {-1, 1, 1, -1}, Mode::Circular, {{S({1, 1, 3, 4}, 48)}}));
  // 3-D (Note [3-D pads from the 1-D and 2-D ones] in src/ops/resample.cpp).
  const auto mode_pad3d = [](std::string mode, std::vector<int64_t> p, Mode m, Specs samples) {
    return OpRecord{.name = "pad", .variant = mode + "_6",
                    .fn = [=](const TensorList& t) { return graft::pad(t[0], p, mode); },
                    .reference = [=](const TensorList& t) { return ref_pad3d(t[0], p, m); },
                    .samples = lazy(std::move(samples))};
  };
  recs.push_back(mode_pad3d("reflect", {1, 2, 0, 1, 2, 1}, Mode::Reflect, {{S({1, 2, 3, 2, 4}, 49)}}));
  recs.push_back(mode_pad3d("replicate", {2, 0, 1, 3, 0, 2}, Mode::Replicate, {{S({2, 2, 3, 2}, 50)}}));
  recs.push_back(mode_pad3d("circular", {1, 2, 2, 0, 1, 1}, Mode::Circular, {{S({1, 1, 2, 3, 3}, 51)}}));

  // ---- pixel_shuffle / pixel_unshuffle ----
  recs.push_back({.name = "pixel_shuffle", .variant = "r2",
                  .fn = [](const TensorList& t) { return pixel_shuffle(t[0], 2); },
                  .reference = [](const TensorList& t) { return ref_pixel_shuffle(t[0], 2); },
                  .samples = lazy({{S({2, 8, 2, 3}, 51)}}),
                  .errors = {{[] { pixel_shuffle(zeros({1, 6, 2, 2}), 2); }, {"pixel_shuffle", "divisible", "6 channels"}},
                             {[] { pixel_shuffle(zeros({4, 2}), 2); }, {"pixel_shuffle", "at least 3 dims", "[4, 2]"}},
                             {[] { pixel_shuffle(zeros({1, 4, 2, 2}), 0); }, {"pixel_shuffle", "positive upscale_factor"}}}});
  recs.push_back({.name = "pixel_shuffle", .variant = "r3",
                  .fn = [](const TensorList& t) { return pixel_shuffle(t[0], 3); },
                  .reference = [](const TensorList& t) { return ref_pixel_shuffle(t[0], 3); },
                  .samples = lazy({{S({1, 9, 2, 1}, 52)}})});
  recs.push_back({.name = "pixel_unshuffle", .variant = "r2",
                  .fn = [](const TensorList& t) { return pixel_unshuffle(t[0], 2); },
                  .reference = [](const TensorList& t) { return ref_pixel_unshuffle(t[0], 2); },
                  .samples = lazy({{S({2, 2, 4, 6}, 53)}}),
                  .errors = {{[] { pixel_unshuffle(zeros({1, 1, 3, 4}), 2); }, {"pixel_unshuffle", "divisible", "[1, 1, 3, 4]"}},
                             {[] { pixel_unshuffle(zeros({1, 1, 2, 2}), -1); }, {"pixel_unshuffle", "positive"}}}});
  return recs;
}

namespace {

TEST(Resample, GradFnNamesAndIntegerPads) {
  const Tensor x = uniform_sample({1, 1, 3, 3}, 61, -1, 1).requires_grad_();
  EXPECT_EQ(upsample_nearest2d(x, {6, 6}).grad_fn()->name(), "UpsampleNearest2DBackward0");
  EXPECT_EQ(upsample_bilinear2d(x, {4, 4}, true).grad_fn()->name(), "UpsampleBilinear2DBackward0");
  EXPECT_EQ(reflection_pad2d(x, {1, 1, 1, 1}).grad_fn()->name(), "ReflectionPad2DBackward0");
  EXPECT_EQ(replication_pad1d(x.view({1, 3, 3}), {1, 1}).grad_fn()->name(), "ReplicationPad1DBackward0");
  EXPECT_EQ(constant_pad_nd(x, {1, 1}).grad_fn()->name(), "ConstantPadNdBackward0");
  // The pads move whole elements: integer inputs pad too.
  const Tensor i = tensor({1, 2, 3}, kInt64).view({1, 3});
  EXPECT_TRUE(all_close(graft::pad(i, {2, 1}, "reflect"), {3, 2, 1, 2, 3, 2}, {1, 6}, 0, 0));
  EXPECT_TRUE(all_close(graft::pad(i, {1, 2}, "replicate"), {1, 1, 2, 3, 3, 3}, {1, 6}, 0, 0));
  EXPECT_TRUE(all_close(graft::pad(i, {1, 1}, "circular"), {3, 1, 2, 3, 1}, {1, 5}, 0, 0));
  EXPECT_TRUE(all_close(constant_pad_nd(i, {1, 0}, 7), {7, 1, 2, 3}, {1, 4}, 0, 0));
  EXPECT_EQ(constant_pad_nd(i, {1, 0}).dtype(), kInt64);
}

TEST(Resample, InterpolateOptions) {
  const Tensor x = uniform_sample({1, 2, 3, 4}, 62, -1, 1);
  // scale_factor: output floor(size * scale), the scales passed on unless recompute_scale_factor.
  const Tensor a = F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.5, 2.0}));
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_TRUE(all_close(a, upsample_nearest2d(x, {4, 8}, 1.5, 2.0), 0, 0));
  const Tensor b = F::interpolate(x, F::InterpolateFuncOptions()
                                         .scale_factor(std::vector<double>{1.5, 1.5})
                                         .mode(kBilinear)
                                         .recompute_scale_factor(true));
  EXPECT_TRUE(all_close(b, upsample_bilinear2d(x, {4, 6}, false), 0, 0));
  const Tensor c = F::interpolate(
      x, F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 5}).mode(kBilinear).align_corners(true));
  EXPECT_TRUE(all_close(c, upsample_bilinear2d(x, {5, 5}, true), 0, 0));
  EXPECT_TRUE(throws_error([&] { F::interpolate(x); }, {"interpolate", "exactly one of size and scale_factor"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2}).scale_factor(std::vector<double>{2, 2}));
      },
      {"interpolate", "both size and scale_factor"}));
  EXPECT_TRUE(throws_error(
      [&] { F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2}).align_corners(true)); },
      {"interpolate", "align_corners only with the linear modes", "nearest"}));
  EXPECT_TRUE(throws_error(
      [&] { F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2}).mode(kTrilinear)); },
      {"interpolate", "a 4-D input with mode kNearest, kNearestExact, kBilinear, kBicubic or kArea", "trilinear"}));
  EXPECT_TRUE(throws_error(
      [&] { F::interpolate(x.view({2, 3, 4}), F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2})); },
      {"interpolate", "size of 1 values {oW} for a 3-D input", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] { F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2})); },
      {"interpolate", "scale_factor of 2 values", "1 values"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2}).recompute_scale_factor(true));
      },
      {"interpolate", "recompute_scale_factor", "explicit size"}));
  // F::pad: the value goes with kConstant only.
  const Tensor x3 = x.view({2, 3, 4});
  EXPECT_TRUE(all_close(F::pad(x3, F::PadFuncOptions({1, 2}).mode(kReflect)), reflection_pad1d(x3, {1, 2}), 0, 0));
  EXPECT_TRUE(all_close(F::pad(x, F::PadFuncOptions({1, 2, 0, 1}).mode(kCircular)), graft::pad(x, {1, 2, 0, 1}, "circular"), 0, 0));
  EXPECT_TRUE(throws_error([&] { F::pad(x, F::PadFuncOptions({1, 1}).mode(kReplicate).value(1)); },
                           {"pad", "no value for mode \"replicate\""}));
  EXPECT_TRUE(all_close(F::pad(x, F::PadFuncOptions({1, 1}).value(3)), constant_pad_nd(x, {1, 1}, 3), 0, 0));
}

}  // namespace
}  // namespace graft::test
