// Resampling and padding: upsample_nearest{1,2,3}d, _upsample_nearest_exact{1,2,3}d,
// upsample_linear1d, upsample_bilinear2d,
// upsample_trilinear3d, upsample_bicubic2d, the reflection and replication
// pads (1-D and 2-D), constant_pad_nd, pad (the mode dispatch, incl. circular) and
// pixel_shuffle / pixel_unshuffle, with PyTorch's (2.x) index formulas and argument rules.
//
// Note [Resampling as separable index maps]
// Nearest, (bi/tri)linear and bicubic upsampling and the reflect / replicate / circular pads compute
// each output element as a weighted sum of input elements, separably along D, H and W:
//   y[p, od, oh, ow] = sum_c sum_a sum_b wd[od][c] wh[oh][a] ww[ow][b] x[p, id[od][c], ih[oh][a], iw[ow][b]]
// with one tap of weight 1 per output position for nearest and the pads, two taps for linear, four
// for bicubic (dims the op does not resample have the identity map of size 1).
// An Axis holds one dim's map and one kernel (src/kernels/resample.cpp) runs every such op (p runs
// over the leading dims).
// The ops are linear in x, so the backward is the adjoint map (gx[p, ih, iw] += wh ww g[p, oh, ow]
// over the same taps) and the adjoint of the adjoint is the forward again: the backward is a
// recorded op whose own backward is the forward, so derivatives of any order work.
// Source positions, as ATen computes them (o an output position, n the input size, m the output size):
//   nearest    i = o when m == n, o / 2 when m == 2 n, else min(floor(o * s), n - 1) in float,
//              s = 1 / scale when a scale is given, else n / m
//   nearest-exact  i = min(floor((o + 1/2) s), n - 1) in float, s as for nearest
//   bilinear   align_corners: src = o (n - 1) / (m - 1) (0 when m == 1); else
//              src = max((o + 1/2) s - 1/2, 0) with s as for nearest; taps i0 = floor(src) and
//              i0 + 1 (i0 itself at the last position), weights 1 - (src - i0) and src - i0, in the
//              input's precision
//   bicubic    src as bilinear but not clamped at 0 (align_corners as bilinear); i0 = floor(src),
//              t = src - i0, taps i0 - 1 .. i0 + 2 clamped to [0, n - 1], weights Keys' cubic
//              convolution with A = -0.75: W(t + 1), W(t), W(1 - t), W(2 - t), where
//              W(x) = (A + 2)|x|^3 - (A + 3)|x|^2 + 1 for |x| <= 1, A|x|^3 - 5A|x|^2 + 8A|x| - 4A for 1 < |x| < 2
//   reflect    i = o - before; i < 0: -i; i >= n: 2 (n - 1) - i            (needs before, after < n)
//   replicate  i = clamp(o - before, 0, n - 1)
//   circular   the input cropped by the negative amounts (length k, from c = max(-before, 0)), then
//              wrapped once: i = c + (o - max(before, 0)) mod k              (needs the pads <= k)
// constant_pad_nd is a fill plus a copy of the overlap; its backward is constant_pad_nd of the
// gradient by the negated amounts (which crops what was padded and zero-pads what was cropped).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../kernels/resample.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::Node;
using autograd::set_history;

namespace {

// One spatial dim's map (Note [Resampling as separable index maps]; the kernel's struct).
using kernels::resample::Axis;

Axis identity_axis(int64_t n);

struct Plan {
  Axis d = identity_axis(1), h, w;  // d is the identity map of size 1 for 1-D and 2-D ops, h for 1-D
  int spatial = 2;    // 1: (..., W), 2: (..., H, W), 3: (..., D, H, W)
  const char* node_name;      // "ReflectionPad2DBackward0"
  const char* backward_name;  // "ReflectionPad2DBackwardBackward0"
  const char* backward_op;    // "reflection_pad2d_backward"
  OpId op;
};
using PlanPtr = std::shared_ptr<const Plan>;

Axis identity_axis(int64_t n) {
  Axis a;
  a.in = a.out = n;
  for (int64_t o = 0; o < n; ++o) {
    a.idx.push_back(o);
    a.w.push_back(1.0);
  }
  return a;
}

// Single-tap axes of the pads: i = f(o).
template <class F>
Axis gather_axis(int64_t in, int64_t out, F&& f) {
  Axis a;
  a.in = in;
  a.out = out;
  a.idx.resize(static_cast<size_t>(out));
  a.w.assign(static_cast<size_t>(out), 1.0);
  for (int64_t o = 0; o < out; ++o) a.idx[static_cast<size_t>(o)] = f(o);
  return a;
}

// A floored source coordinate as an index in [lo, hi]: a tiny scale can make it infinite (or NaN
// from 0 * inf), which must not reach an integer cast.
template <class T>
int64_t clamp_index(T v, int64_t lo, int64_t hi) {
  if (!(v >= static_cast<T>(lo))) return lo;
  if (!(v <= static_cast<T>(hi))) return hi;
  return static_cast<int64_t>(v);
}

Axis nearest_axis(int64_t in, int64_t out, std::optional<double> scale) {
  const float s = scale && *scale > 0 ? static_cast<float>(1.0 / *scale) : static_cast<float>(in) / static_cast<float>(out);
  return gather_axis(in, out, [&](int64_t o) -> int64_t {
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
    return clamp_index(std::floor(static_cast<float>(o) * s), 0, in - 1);
  });
}

Axis nearest_exact_axis(int64_t in, int64_t out, std::optional<double> scale) {
  const float s = scale && *scale > 0 ? static_cast<float>(1.0 / *scale) : static_cast<float>(in) / static_cast<float>(out);
  return gather_axis(in, out, [&](int64_t o) -> int64_t {
    const auto src = static_cast<float>((static_cast<double>(o) + 0.5) * static_cast<double>(s));
    return clamp_index(std::floor(src), 0, in - 1);
  });
}

template <class T>
Axis bilinear_axis(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  T s;
  if (align_corners) s = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  else s = scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
  Axis a;
  a.in = in;
  a.out = out;
  a.taps = 2;
  for (int64_t o = 0; o < out; ++o) {
    const T src = align_corners ? s * static_cast<T>(o) : std::max(s * (static_cast<T>(o) + T(0.5)) - T(0.5), T(0));
    const int64_t i0 = clamp_index(std::floor(src), 0, in - 1);
    const T l1 = std::min(std::max(src - static_cast<T>(i0), T(0)), T(1));
    a.idx.push_back(i0);
    a.idx.push_back(i0 < in - 1 ? i0 + 1 : i0);
    a.w.push_back(static_cast<double>(T(1) - l1));
    a.w.push_back(static_cast<double>(l1));
  }
  return a;
}

template <class T>
Axis bicubic_axis(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  T s;
  if (align_corners) s = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  else s = scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
  constexpr T A = T(-0.75);
  const auto near = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };         // |x| <= 1
  const auto far = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };   // 1 < |x| < 2
  Axis a;
  a.in = in;
  a.out = out;
  a.taps = 4;
  for (int64_t o = 0; o < out; ++o) {
    const T src = align_corners ? s * static_cast<T>(o) : s * (static_cast<T>(o) + T(0.5)) - T(0.5);
    const T fl = std::floor(src);
    const int64_t i0 = clamp_index(fl, -2, in + 1);
    const T t = src - fl;
    const T w[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
    for (int64_t k = 0; k < 4; ++k) {
      a.idx.push_back(std::clamp<int64_t>(i0 - 1 + k, 0, in - 1));
      a.w.push_back(static_cast<double>(w[k]));
    }
  }
  return a;
}

enum class PadKind { Reflect, Replicate, Circular };

Axis pad_axis(int64_t n, int64_t before, int64_t after, PadKind kind) {
  const int64_t out = n + before + after;
  switch (kind) {
    case PadKind::Reflect:
      return gather_axis(n, out, [&](int64_t o) {
        int64_t i = o - before;
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
        return i;
      });
    case PadKind::Replicate:
      return gather_axis(n, out, [&](int64_t o) { return std::clamp<int64_t>(o - before, 0, n - 1); });
    case PadKind::Circular: {
      const int64_t c = std::max<int64_t>(-before, 0), k = n - c - std::max<int64_t>(-after, 0);
      const int64_t lead = std::max<int64_t>(before, 0);
      return gather_axis(n, out, [&](int64_t o) { return c + (((o - lead) % k) + k) % k; });
    }
  }
  return {};
}

Shape mapped_shape(IntArrayRef in, const Plan& p) {
  Shape s(in);
  s[s.size() - 1] = p.w.out;
  if (p.spatial >= 2) s[s.size() - 2] = p.h.out;
  if (p.spatial == 3) s[s.size() - 3] = p.d.out;
  return s;
}

int64_t planes_of(IntArrayRef shape, const Plan& p) {
  int64_t n = 1;
  for (size_t i = 0; i + static_cast<size_t>(p.spatial) < shape.size(); ++i) n *= shape[i];
  return n;
}

Tensor map_forward(const Tensor& x, const PlanPtr& p);

// The adjoint map: the input gradient, recorded with the forward as its backward.
Tensor map_backward(const Tensor& g, const PlanPtr& p, const Shape& in_shape) {
  Tensor gx;
  {
    NoGradGuard ng;
    const Tensor gc = g.detach().contiguous();
    gx = zeros(in_shape, TensorOptions(g.dtype()).device(g.device()));
    // Note [Meta device]: the kernel checks the dtype, then runs nothing on meta.
    kernels::resample::adjoint(p->backward_op, p->d, p->h, p->w, gc, gx, planes_of(in_shape, *p));
  }
  if (auto node = autograd::make_node(p->backward_name, autograd::ForwardOp::unlisted(p->backward_op), {&g},
                                      [p](Node&, const Tensor& gg) -> TensorList { return {map_forward(gg, p)}; }))
    set_history(gx, node);
  return gx;
}

Tensor map_forward(const Tensor& x, const PlanPtr& p) {
  const Shape in_shape(x.sizes());
  Tensor y;
  {
    NoGradGuard ng;
    const Tensor xc = x.detach().contiguous();
    y = make_empty(mapped_shape(x.sizes(), *p), x.dtype(), x.device());
    // Note [Meta device]: the kernel checks the dtype, then runs nothing on meta.
    kernels::resample::forward(ops::op_name(p->op), p->d, p->h, p->w, xc, y, planes_of(in_shape, *p));
  }
  if (auto node = make_node(p->node_name, p->op, {&x}, [p, in_shape](Node&, const Tensor& g) -> TensorList {
        return {map_backward(g, p, in_shape)};
      }))
    set_history(y, node);
  return y;
}

std::string ints_str(IntArrayRef v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

void check_defined(const Tensor& x, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined input", "an undefined tensor", "");
}

// ---- upsampling ----

const char* const kSpatialNames[] = {"", "(N, C, W)", "(N, C, H, W)", "(N, C, D, H, W)"};
const char* const kSizeNames[] = {"", "{oW}", "{oH, oW}", "{oD, oH, oW}"};

// A non-empty (N, C, *spatial) float input and a positive output_size of `spatial` values.
void check_upsample(const Tensor& x, IntArrayRef output_size, int spatial, const char* op) {
  check_defined(x, op);
  const std::string rank = std::to_string(spatial + 2);
  GRAFT_CHECK(x.dim() == spatial + 2, op, "a " + rank + "-D " + kSpatialNames[spatial] + " input",
              "input of shape " + shape_str(x.sizes()) + " (" + std::to_string(x.dim()) + "-D)",
              x.dim() == spatial + 1 ? "add a batch dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  GRAFT_CHECK(output_size.size() == static_cast<size_t>(spatial), op,
              "output_size of " + std::to_string(spatial) + " values " + kSizeNames[spatial],
              "output_size of " + std::to_string(output_size.size()) + " values", "");
  bool positive = true;
  for (int64_t d = 1; d < x.dim(); ++d) positive = positive && x.size(d) > 0;
  for (int64_t v : output_size) positive = positive && v > 0;
  GRAFT_CHECK(positive, op, "input and output sizes greater than 0",
              "input of shape " + shape_str(x.sizes()) + " and output_size " + ints_str(output_size), "");
}

enum class Interp { Nearest, NearestExact, Linear, Cubic };

Axis interp_axis(Interp kind, DType dtype, int64_t in, int64_t out, bool align, std::optional<double> scale) {
  const bool f32 = dtype == kFloat32;
  switch (kind) {
    case Interp::Nearest: return nearest_axis(in, out, scale);
    case Interp::NearestExact: return nearest_exact_axis(in, out, scale);
    case Interp::Linear:
      return f32 ? bilinear_axis<float>(in, out, align, scale) : bilinear_axis<double>(in, out, align, scale);
    case Interp::Cubic:
      return f32 ? bicubic_axis<float>(in, out, align, scale) : bicubic_axis<double>(in, out, align, scale);
  }
  return {};
}

// The upsample ops: scales lists the op's scales in dim order (d, h, w; as many as spatial dims);
// names are the op's ("upsample_linear1d") and its nodes' ("UpsampleLinear1D").
Tensor upsample_op(const Tensor& x, IntArrayRef output_size, int spatial, Interp kind, bool align,
                   std::vector<std::optional<double>> scales, const char* op, const char* node, const char* bnode,
                   const char* bop, OpId id) {
  check_upsample(x, output_size, spatial, op);
  auto p = std::make_shared<Plan>();
  p->spatial = spatial;
  if (spatial == 1) p->h = identity_axis(1);
  Axis* axes[] = {&p->d, &p->h, &p->w};
  for (int k = 0; k < spatial; ++k) {
    const int64_t dim = x.dim() - spatial + k;
    *axes[3 - spatial + k] = interp_axis(kind, x.dtype(), x.size(dim), output_size[static_cast<size_t>(k)], align,
                                         scales[static_cast<size_t>(k)]);
  }
  p->node_name = node;
  p->backward_name = bnode;
  p->backward_op = bop;
  p->op = id;
  return map_forward(x, p);
}

// ---- padding ----

// The plan of a reflect / replicate / circular pad of the last `spatial` dims; padding lists
// (before, after) from the last dim backwards.
PlanPtr pad_plan(const Tensor& x, IntArrayRef padding, int spatial, PadKind kind, const char* op) {
  check_defined(x, op);
  const auto want = static_cast<size_t>(2 * spatial);
  GRAFT_CHECK(padding.size() == want, op, "padding of " + std::to_string(want) + " values" +
              (spatial == 1 ? " (left, right)" : " (left, right, top, bottom)"),
              "padding of " + std::to_string(padding.size()) + " values", "");
  GRAFT_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2, op,
              spatial == 1 ? std::string("a 2-D (C, W) or 3-D (N, C, W) input")
                           : std::string("a 3-D (C, H, W) or 4-D (N, C, H, W) input"),
              "input of shape " + shape_str(x.sizes()) + " (" + std::to_string(x.dim()) + "-D)", "");
  for (int64_t d = 0; d < x.dim() - spatial; ++d)
    GRAFT_CHECK(x.size(d) > 0, op, "non-empty batch and channel dims", "input of shape " + shape_str(x.sizes()), "");
  auto p = std::make_shared<Plan>();
  p->spatial = spatial;
  p->h = identity_axis(1);
  for (int k = 0; k < spatial; ++k) {
    const int64_t d = x.dim() - 1 - k, n = x.size(d);
    const int64_t before = padding[static_cast<size_t>(2 * k)], after = padding[static_cast<size_t>(2 * k + 1)];
    const std::string where = "padding " + ints_str(padding) + " for dim " + std::to_string(d) + " of size " +
                              std::to_string(n) + " (input of shape " + shape_str(x.sizes()) + ")";
    GRAFT_CHECK(n > 0, op, "non-empty padded dims", where, "");
    if (kind == PadKind::Reflect)
      GRAFT_CHECK(before < n && after < n, op, "padding smaller than the padded dim (reflect mirrors inside it)", where,
                  "pad by at most size - 1, or use mode replicate or circular");
    if (kind == PadKind::Circular) {
      const int64_t k_len = n - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
      GRAFT_CHECK(k_len > 0 && before <= k_len && after <= k_len, op,
                  "padding at most the (cropped) size of the dim (circular wraps around once)", where, "");
    }
    GRAFT_CHECK(n + before + after > 0, op, "a positive output size (negative padding crops)",
                where + ": output size " + std::to_string(n + before + after), "");
    (k == 0 ? p->w : p->h) = pad_axis(n, before, after, kind);
  }
  return p;
}

Tensor pad_op(const Tensor& x, IntArrayRef padding, int spatial, PadKind kind, const char* op, const char* node,
              const char* bnode, const char* bop, OpId id) {
  const PlanPtr base = pad_plan(x, padding, spatial, kind, op);
  auto p = std::make_shared<Plan>(*base);
  p->node_name = node;
  p->backward_name = bnode;
  p->backward_op = bop;
  p->op = id;
  return map_forward(x, p);
}

Tensor circular_pad(const Tensor& x, IntArrayRef padding, int spatial) {
  return pad_op(x, padding, spatial, PadKind::Circular, "pad",
                spatial == 1 ? "CircularPad1DBackward0" : "CircularPad2DBackward0",
                spatial == 1 ? "CircularPad1DBackwardBackward0" : "CircularPad2DBackwardBackward0",
                "circular_pad_backward", OpId::pad);
}

}  // namespace

Tensor upsample_nearest1d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales) {
  return upsample_op(input, output_size, 1, Interp::Nearest, false, {scales}, "upsample_nearest1d",
                     "UpsampleNearest1DBackward0", "UpsampleNearest1DBackwardBackward0", "upsample_nearest1d_backward",
                     OpId::upsample_nearest1d);
}
Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_h,
                          std::optional<double> scales_w) {
  return upsample_op(input, output_size, 2, Interp::Nearest, false, {scales_h, scales_w}, "upsample_nearest2d",
                     "UpsampleNearest2DBackward0", "UpsampleNearest2DBackwardBackward0", "upsample_nearest2d_backward",
                     OpId::upsample_nearest2d);
}
Tensor upsample_nearest3d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_d,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  return upsample_op(input, output_size, 3, Interp::Nearest, false, {scales_d, scales_h, scales_w},
                     "upsample_nearest3d", "UpsampleNearest3DBackward0", "UpsampleNearest3DBackwardBackward0",
                     "upsample_nearest3d_backward", OpId::upsample_nearest3d);
}
Tensor _upsample_nearest_exact1d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales) {
  return upsample_op(input, output_size, 1, Interp::NearestExact, false, {scales}, "_upsample_nearest_exact1d",
                     "_UpsampleNearestExact1DBackward0", "_UpsampleNearestExact1DBackwardBackward0",
                     "_upsample_nearest_exact1d_backward", OpId::_upsample_nearest_exact1d);
}
Tensor _upsample_nearest_exact2d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_h,
                                 std::optional<double> scales_w) {
  return upsample_op(input, output_size, 2, Interp::NearestExact, false, {scales_h, scales_w},
                     "_upsample_nearest_exact2d", "_UpsampleNearestExact2DBackward0",
                     "_UpsampleNearestExact2DBackwardBackward0", "_upsample_nearest_exact2d_backward",
                     OpId::_upsample_nearest_exact2d);
}
Tensor _upsample_nearest_exact3d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_d,
                                 std::optional<double> scales_h, std::optional<double> scales_w) {
  return upsample_op(input, output_size, 3, Interp::NearestExact, false, {scales_d, scales_h, scales_w},
                     "_upsample_nearest_exact3d", "_UpsampleNearestExact3DBackward0",
                     "_UpsampleNearestExact3DBackwardBackward0", "_upsample_nearest_exact3d_backward",
                     OpId::_upsample_nearest_exact3d);
}
Tensor upsample_linear1d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                         std::optional<double> scales) {
  return upsample_op(input, output_size, 1, Interp::Linear, align_corners, {scales}, "upsample_linear1d",
                     "UpsampleLinear1DBackward0", "UpsampleLinear1DBackwardBackward0", "upsample_linear1d_backward",
                     OpId::upsample_linear1d);
}
Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  return upsample_op(input, output_size, 2, Interp::Linear, align_corners, {scales_h, scales_w}, "upsample_bilinear2d",
                     "UpsampleBilinear2DBackward0", "UpsampleBilinear2DBackwardBackward0",
                     "upsample_bilinear2d_backward", OpId::upsample_bilinear2d);
}
Tensor upsample_trilinear3d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                            std::optional<double> scales_d, std::optional<double> scales_h,
                            std::optional<double> scales_w) {
  return upsample_op(input, output_size, 3, Interp::Linear, align_corners, {scales_d, scales_h, scales_w},
                     "upsample_trilinear3d", "UpsampleTrilinear3DBackward0", "UpsampleTrilinear3DBackwardBackward0",
                     "upsample_trilinear3d_backward", OpId::upsample_trilinear3d);
}
Tensor upsample_bicubic2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  return upsample_op(input, output_size, 2, Interp::Cubic, align_corners, {scales_h, scales_w}, "upsample_bicubic2d",
                     "UpsampleBicubic2DBackward0", "UpsampleBicubic2DBackwardBackward0", "upsample_bicubic2d_backward",
                     OpId::upsample_bicubic2d);
}

Tensor reflection_pad1d(const Tensor& input, IntArrayRef padding) {
  return pad_op(input, padding, 1, PadKind::Reflect, "reflection_pad1d", "ReflectionPad1DBackward0",
                "ReflectionPad1DBackwardBackward0", "reflection_pad1d_backward", OpId::reflection_pad1d);
}
Tensor reflection_pad2d(const Tensor& input, IntArrayRef padding) {
  return pad_op(input, padding, 2, PadKind::Reflect, "reflection_pad2d", "ReflectionPad2DBackward0",
                "ReflectionPad2DBackwardBackward0", "reflection_pad2d_backward", OpId::reflection_pad2d);
}
Tensor replication_pad1d(const Tensor& input, IntArrayRef padding) {
  return pad_op(input, padding, 1, PadKind::Replicate, "replication_pad1d", "ReplicationPad1DBackward0",
                "ReplicationPad1DBackwardBackward0", "replication_pad1d_backward", OpId::replication_pad1d);
}
Tensor replication_pad2d(const Tensor& input, IntArrayRef padding) {
  return pad_op(input, padding, 2, PadKind::Replicate, "replication_pad2d", "ReplicationPad2DBackward0",
                "ReplicationPad2DBackwardBackward0", "replication_pad2d_backward", OpId::replication_pad2d);
}

Tensor constant_pad_nd(const Tensor& input, IntArrayRef pad, const Scalar& value) {
  const char* op = "constant_pad_nd";
  check_defined(input, op);
  GRAFT_CHECK(pad.size() % 2 == 0, op, "an even number of pad values ((before, after) pairs from the last dim)",
              "pad " + ints_str(pad) + " of " + std::to_string(pad.size()) + " values", "");
  GRAFT_CHECK(static_cast<int64_t>(pad.size() / 2) <= input.dim(), op,
              "at most 2 * input.dim() = " + std::to_string(2 * input.dim()) + " pad values",
              "pad " + ints_str(pad) + " for input of shape " + shape_str(input.sizes()), "");
  const int64_t D = input.dim();
  Shape out(input.sizes());
  std::vector<int64_t> src_start(static_cast<size_t>(D), 0), dst_start(static_cast<size_t>(D), 0);
  std::vector<int64_t> len(input.sizes().begin(), input.sizes().end());
  std::vector<int64_t> negated;
  for (int64_t v : pad) negated.push_back(-v);
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    const auto d = static_cast<size_t>(D - 1 - static_cast<int64_t>(k));
    const int64_t n = input.size(static_cast<int64_t>(d)), before = pad[2 * k], after = pad[2 * k + 1];
    out[d] = n + before + after;
    GRAFT_CHECK(out[d] >= 0, op, "a non-negative output size (negative padding crops)",
                "pad " + ints_str(pad) + " for dim " + std::to_string(d) + " of size " + std::to_string(n) +
                    ": output size " + std::to_string(out[d]),
                "crop by at most the dim's size");
    src_start[d] = std::max<int64_t>(0, -before);
    dst_start[d] = std::max<int64_t>(0, before);
    len[d] = std::max<int64_t>(0, n - src_start[d] - std::max<int64_t>(0, -after));
  }
  Tensor y;
  {
    NoGradGuard ng;
    y = full(out, value, TensorOptions().dtype(input.dtype()).device(input.device()));
    if (std::all_of(len.begin(), len.end(), [](int64_t l) { return l > 0; })) {
      Tensor dst = y, src = input.detach();
      for (int64_t d = 0; d < D; ++d) {
        const auto u = static_cast<size_t>(d);
        dst = dst.narrow(d, dst_start[u], len[u]);
        src = src.narrow(d, src_start[u], len[u]);
      }
      detail::copy_into(dst, src);
    }
  }
  if (auto node = make_node("ConstantPadNdBackward0", OpId::constant_pad_nd, {&input},
                            [negated](Node&, const Tensor& g) -> TensorList { return {constant_pad_nd(g, negated, 0)}; }))
    set_history(y, node);
  return y;
}

namespace {
// Note [3-D pads from the 1-D and 2-D ones]
// A reflect / replicate / circular pad maps each output index per dim on its own (the formulas at
// the top), so the 3-D pad is the 2-D pad of every depth slice, (N, C D, H, W) -> (N, C D, H', W'),
// followed by the 1-D pad of the depth moved last, (N, C H' W', D) -> (N, C H' W', D'): exact, and
// differentiable (any order) through the two ops and the reshapes. Reflect's size limits are
// checked here first so that the error names the 3-D pad and the dim.
Tensor pad3d(const Tensor& input, IntArrayRef pad, const std::string& m) {
  const char* op = m == "reflect" ? "reflection_pad3d" : m == "replicate" ? "replication_pad3d" : "pad";
  const Tensor x = input.dim() == 5 ? input : input.unsqueeze(0);
  const int64_t N = x.size(0), C = x.size(1), D = x.size(2), H = x.size(3), W = x.size(4);
  if (m == "reflect") {
    for (int k = 0; k < 3; ++k) {
      const int64_t n = x.size(4 - k), before = pad[static_cast<size_t>(2 * k)],
                    after = pad[static_cast<size_t>(2 * k + 1)];
      GRAFT_CHECK(before < n && after < n, op, "padding smaller than the padded dim (reflect mirrors inside it)",
                  "padding " + ints_str(pad) + " for dim " + std::to_string(input.dim() - 1 - k) + " of size " +
                      std::to_string(n) + " (input of shape " + shape_str(input.sizes()) + ")",
                  "pad by at most size - 1, or use mode replicate or circular");
    }
  }
  const std::vector<int64_t> hw(pad.begin(), pad.begin() + 4), d{pad[4], pad[5]};
  const Tensor slices = x.reshape({N, C * D, H, W});
  const Tensor y1 = m == "reflect"     ? reflection_pad2d(slices, hw)
                    : m == "replicate" ? replication_pad2d(slices, hw)
                                       : circular_pad(slices, hw, 2);
  const int64_t oH = y1.size(2), oW = y1.size(3);
  const Tensor depth_last = y1.reshape({N, C, D, oH * oW}).permute({0, 1, 3, 2}).reshape({N, C * oH * oW, D});
  const Tensor y2 = m == "reflect"     ? reflection_pad1d(depth_last, d)
                    : m == "replicate" ? replication_pad1d(depth_last, d)
                                       : circular_pad(depth_last, d, 1);
  const int64_t oD = y2.size(2);
  const Tensor out = y2.reshape({N, C, oH * oW, oD}).permute({0, 1, 3, 2}).reshape({N, C, oD, oH, oW});
  return input.dim() == 5 ? out : out.squeeze(0);
}
}  // namespace

Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode, std::optional<double> value) {
  const char* op = "pad";
  const std::string m(mode);
  if (m == "constant") return constant_pad_nd(input, pad, value.value_or(0.0));
  GRAFT_CHECK(m == "reflect" || m == "replicate" || m == "circular", op,
              "mode \"constant\", \"reflect\", \"replicate\" or \"circular\"", "mode \"" + m + "\"", "");
  GRAFT_CHECK(!value.has_value(), op, "no value for mode \"" + m + "\"", "value " + std::to_string(value.value_or(0)),
              "only mode \"constant\" takes a fill value");
  check_defined(input, op);
  GRAFT_CHECK(pad.size() == 2 || pad.size() == 4 || pad.size() == 6, op,
              "2 pad values (1-D: (C, W) or (N, C, W) input), 4 (2-D: (C, H, W) or (N, C, H, W)) or 6 (3-D: "
              "(C, D, H, W) or (N, C, D, H, W)) for mode \"" +
                  m + "\"",
              "pad " + ints_str(pad) + " of " + std::to_string(pad.size()) + " values", "");
  const int spatial = static_cast<int>(pad.size() / 2);
  GRAFT_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2, op,
              "a " + std::to_string(spatial + 1) + "-D or " + std::to_string(spatial + 2) + "-D input for " +
                  std::to_string(pad.size()) + " pad values in mode \"" + m + "\"",
              "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)", "");
  if (spatial == 3) return pad3d(input, pad, m);
  if (m == "reflect") return spatial == 1 ? reflection_pad1d(input, pad) : reflection_pad2d(input, pad);
  if (m == "replicate") return spatial == 1 ? replication_pad1d(input, pad) : replication_pad2d(input, pad);
  return circular_pad(input, pad, spatial);
}

// (*, C r^2, H, W) -> (*, C, r, r, H, W) -> (*, C, H, r, W, r) -> (*, C, H r, W r); differentiable
// through reshape and permute.
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor) {
  const char* op = "pixel_shuffle";
  check_defined(input, op);
  const int64_t r = upscale_factor;
  GRAFT_CHECK(input.dim() >= 3, op, "an input of at least 3 dims (*, C, H, W)",
              "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)", "");
  GRAFT_CHECK(r > 0, op, "a positive upscale_factor", "upscale_factor " + std::to_string(r), "");
  const int64_t L = input.dim() - 3, C = input.size(L), H = input.size(L + 1), W = input.size(L + 2);
  GRAFT_CHECK(C % (r * r) == 0, op, "a channel count divisible by upscale_factor^2 = " + std::to_string(r * r),
              std::to_string(C) + " channels (input of shape " + shape_str(input.sizes()) + ")", "");
  std::vector<int64_t> lead(input.sizes().begin(), input.sizes().begin() + L);
  std::vector<int64_t> s6 = lead, perm, s3 = lead;
  for (int64_t v : {C / (r * r), r, r, H, W}) s6.push_back(v);
  for (int64_t i = 0; i < L; ++i) perm.push_back(i);
  for (int64_t v : {L, L + 3, L + 1, L + 4, L + 2}) perm.push_back(v);
  for (int64_t v : {C / (r * r), H * r, W * r}) s3.push_back(v);
  return input.reshape(s6).permute(perm).reshape(s3);
}

// (*, C, H r, W r) -> (*, C, H, r, W, r) -> (*, C, r, r, H, W) -> (*, C r^2, H, W).
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor) {
  const char* op = "pixel_unshuffle";
  check_defined(input, op);
  const int64_t r = downscale_factor;
  GRAFT_CHECK(input.dim() >= 3, op, "an input of at least 3 dims (*, C, H, W)",
              "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)", "");
  GRAFT_CHECK(r > 0, op, "a positive downscale_factor", "downscale_factor " + std::to_string(r), "");
  const int64_t L = input.dim() - 3, C = input.size(L), H = input.size(L + 1), W = input.size(L + 2);
  GRAFT_CHECK(H % r == 0 && W % r == 0, op, "height and width divisible by downscale_factor " + std::to_string(r),
              "input of shape " + shape_str(input.sizes()), "");
  std::vector<int64_t> lead(input.sizes().begin(), input.sizes().begin() + L);
  std::vector<int64_t> s6 = lead, perm, s3 = lead;
  for (int64_t v : {C, H / r, r, W / r, r}) s6.push_back(v);
  for (int64_t i = 0; i < L; ++i) perm.push_back(i);
  for (int64_t v : {L, L + 2, L + 4, L + 1, L + 3}) perm.push_back(v);
  for (int64_t v : {C * r * r, H / r, W / r}) s3.push_back(v);
  return input.reshape(s6).permute(perm).reshape(s3);
}

}  // namespace graft
