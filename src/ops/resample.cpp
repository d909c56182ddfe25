// Resampling and padding: upsample_nearest2d, upsample_bilinear2d, the reflection and replication
// pads (1-D and 2-D), constant_pad_nd, pad (the mode dispatch, incl. circular) and
// pixel_shuffle / pixel_unshuffle, with PyTorch's (2.x) index formulas and argument rules.
//
// Note [Resampling as separable index maps]
// Nearest and bilinear upsampling and the reflect / replicate / circular pads compute each output
// element as a weighted sum of input elements, separably along H and W:
//   y[p, oh, ow] = sum_a sum_b wh[oh][a] ww[ow][b] x[p, ih[oh][a], iw[ow][b]]
// with one tap of weight 1 per output position for nearest and the pads, two taps for bilinear.
// An Axis holds one dim's map and one kernel (src/kernels/resample.cpp) runs every such op (p runs
// over the leading dims).
// The ops are linear in x, so the backward is the adjoint map (gx[p, ih, iw] += wh ww g[p, oh, ow]
// over the same taps) and the adjoint of the adjoint is the forward again: the backward is a
// recorded op whose own backward is the forward, so derivatives of any order work.
// Source positions, as ATen computes them (o an output position, n the input size, m the output size):
//   nearest    i = o when m == n, o / 2 when m == 2 n, else min(floor(o * s), n - 1) in float,
//              s = 1 / scale when a scale is given, else n / m
//   bilinear   align_corners: src = o (n - 1) / (m - 1) (0 when m == 1); else
//              src = max((o + 1/2) s - 1/2, 0) with s as for nearest; taps i0 = floor(src) and
//              i0 + 1 (i0 itself at the last position), weights 1 - (src - i0) and src - i0, in the
//              input's precision
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

struct Plan {
  Axis h, w;          // h is the identity map of size 1 for 1-D ops
  int spatial = 2;    // 1: (..., W), 2: (..., H, W)
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

Axis nearest_axis(int64_t in, int64_t out, std::optional<double> scale) {
  const float s = scale && *scale > 0 ? static_cast<float>(1.0 / *scale) : static_cast<float>(in) / static_cast<float>(out);
  return gather_axis(in, out, [&](int64_t o) -> int64_t {
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
    return std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
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
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    const T l1 = std::min(std::max(src - static_cast<T>(i0), T(0)), T(1));
    a.idx.push_back(i0);
    a.idx.push_back(i0 < in - 1 ? i0 + 1 : i0);
    a.w.push_back(static_cast<double>(T(1) - l1));
    a.w.push_back(static_cast<double>(l1));
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
  if (p.spatial == 2) s[s.size() - 2] = p.h.out;
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
    kernels::resample::adjoint(p->backward_op, p->h, p->w, gc, gx, planes_of(in_shape, *p));
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
    kernels::resample::forward(ops::op_name(p->op), p->h, p->w, xc, y, planes_of(in_shape, *p));
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

// A non-empty (N, C, H, W) float input and a positive output_size {oH, oW}.
void check_upsample(const Tensor& x, IntArrayRef output_size, const char* op) {
  check_defined(x, op);
  GRAFT_CHECK(x.dim() == 4, op, "a 4-D (N, C, H, W) input",
              "input of shape " + shape_str(x.sizes()) + " (" + std::to_string(x.dim()) + "-D)",
              x.dim() == 3 ? "add a batch dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  GRAFT_CHECK(output_size.size() == 2, op, "output_size of 2 values {oH, oW}",
              "output_size of " + std::to_string(output_size.size()) + " values", "pass {height, width}");
  GRAFT_CHECK(output_size[0] > 0 && output_size[1] > 0 && x.size(2) > 0 && x.size(3) > 0 && x.size(1) > 0, op,
              "input and output sizes greater than 0",
              "input of shape " + shape_str(x.sizes()) + " and output_size " + ints_str(output_size), "");
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

Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_h,
                          std::optional<double> scales_w) {
  const char* op = "upsample_nearest2d";
  check_upsample(input, output_size, op);
  auto p = std::make_shared<Plan>();
  p->h = nearest_axis(input.size(2), output_size[0], scales_h);
  p->w = nearest_axis(input.size(3), output_size[1], scales_w);
  p->node_name = "UpsampleNearest2DBackward0";
  p->backward_name = "UpsampleNearest2DBackwardBackward0";
  p->backward_op = "upsample_nearest2d_backward";
  p->op = OpId::upsample_nearest2d;
  return map_forward(input, p);
}

Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  const char* op = "upsample_bilinear2d";
  check_upsample(input, output_size, op);
  auto p = std::make_shared<Plan>();
  const int64_t H = input.size(2), W = input.size(3);
  if (input.dtype() == kFloat32) {
    p->h = bilinear_axis<float>(H, output_size[0], align_corners, scales_h);
    p->w = bilinear_axis<float>(W, output_size[1], align_corners, scales_w);
  } else {
    p->h = bilinear_axis<double>(H, output_size[0], align_corners, scales_h);
    p->w = bilinear_axis<double>(W, output_size[1], align_corners, scales_w);
  }
  p->node_name = "UpsampleBilinear2DBackward0";
  p->backward_name = "UpsampleBilinear2DBackwardBackward0";
  p->backward_op = "upsample_bilinear2d_backward";
  p->op = OpId::upsample_bilinear2d;
  return map_forward(input, p);
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

Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode, std::optional<double> value) {
  const char* op = "pad";
  const std::string m(mode);
  if (m == "constant") return constant_pad_nd(input, pad, value.value_or(0.0));
  GRAFT_CHECK(m == "reflect" || m == "replicate" || m == "circular", op,
              "mode \"constant\", \"reflect\", \"replicate\" or \"circular\"", "mode \"" + m + "\"", "");
  GRAFT_CHECK(!value.has_value(), op, "no value for mode \"" + m + "\"", "value " + std::to_string(value.value_or(0)),
              "only mode \"constant\" takes a fill value");
  check_defined(input, op);
  GRAFT_CHECK(pad.size() == 2 || pad.size() == 4, op,
              "2 pad values (1-D: (C, W) or (N, C, W) input) or 4 (2-D: (C, H, W) or (N, C, H, W)) for mode \"" +
                  m + "\"",
              "pad " + ints_str(pad) + " of " + std::to_string(pad.size()) + " values",
              pad.size() == 6 ? "3-D reflect / replicate / circular padding is not in graft" : "");
  const int spatial = static_cast<int>(pad.size() / 2);
  GRAFT_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2, op,
              "a " + std::to_string(spatial + 1) + "-D or " + std::to_string(spatial + 2) + "-D input for " +
                  std::to_string(pad.size()) + " pad values in mode \"" + m + "\"",
              "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)", "");
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
