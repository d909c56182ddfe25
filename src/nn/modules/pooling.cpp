// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, AdaptiveMaxPool2d,
// and (issue 32) MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d with
// their functionals, composed from the 2-D ops (Note [3-D pooling from the 2-D ops]); MaxUnpool1d/2d/3d
// (Note [Max unpooling]) and LPPool1d/2d.
#include "graft/nn/modules/pooling.h"

#include <sstream>
#include <string>
#include <vector>

#include "../../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/autograd/node.h"
#include "graft/core/factory.h"

namespace graft::nn {

namespace {
// As PyTorch prints what the user passed: a single value when all dims agree ("2"), else "(2, 3)".
template <size_t D>
std::string value_str(const ExpandingArray<D>& a) {
  bool same = true;
  for (size_t i = 1; i < D; ++i) same = same && a[i] == a[0];
  if (same) return std::to_string(a[0]);
  std::string s = "(";  // appended piece by piece: GCC 12's -Wrestrict misfires on "(" + std::string
  for (size_t i = 0; i < D; ++i) {
    if (i) s += ", ";
    s += std::to_string(a[i]);
  }
  s += ")";
  return s;
}

// As LibTorch prints an ExpandingArray: "[2, 2, 2]"; one value plainly ("5").
template <size_t D>
std::string list_str(const ExpandingArray<D>& a) {
  if (D == 1) return std::to_string(a[0]);
  std::string s = "[";
  for (size_t i = 0; i < D; ++i) {
    if (i) s += ", ";
    s += std::to_string(a[i]);
  }
  s += "]";
  return s;
}
// An adaptive pool's output_size with its Nones: PyTorch's "5" or "(5, None)", LibTorch's "[5, None]".
template <size_t D>
std::string opt_value_str(const ExpandingArrayWithOptionalElem<D>& a) {
  bool plain = true;
  for (size_t i = 0; i < D; ++i) plain = plain && a.has_value(i);
  if (plain) return value_str<D>(a);
  std::string s = "(";
  for (size_t i = 0; i < D; ++i) {
    if (i) s += ", ";
    s += a.has_value(i) ? std::to_string(a[i]) : "None";
  }
  s += ")";
  return s;
}
template <size_t D>
std::string opt_list_str(const ExpandingArrayWithOptionalElem<D>& a) {
  std::string s = "[";
  for (size_t i = 0; i < D; ++i) {
    if (i) s += ", ";
    s += a.has_value(i) ? std::to_string(a[i]) : "None";
  }
  s += "]";
  return s;
}

std::string list_str_vec(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  s += "]";
  return s;
}
}  // namespace

Tensor MaxPool2dImpl::forward(const Tensor& input) { return functional::max_pool2d(input, options); }

std::tuple<Tensor, Tensor> MaxPool2dImpl::forward_with_indices(const Tensor& input) {
  return functional::max_pool2d_with_indices(input, options);
}

std::string MaxPool2dImpl::extra_repr() const {
  return "kernel_size=" + value_str(options.kernel_size()) + ", stride=" + value_str(options.stride()) +
         ", padding=" + value_str(options.padding()) + ", dilation=" + value_str(options.dilation()) +
         ", ceil_mode=" + graft::detail::py_bool(options.ceil_mode());
}

Tensor AvgPool2dImpl::forward(const Tensor& input) { return functional::avg_pool2d(input, options); }

std::string AvgPool2dImpl::extra_repr() const {
  return "kernel_size=" + value_str(options.kernel_size()) + ", stride=" + value_str(options.stride()) +
         ", padding=" + value_str(options.padding());
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) { return functional::adaptive_avg_pool2d(input, options); }

std::string AdaptiveAvgPool2dImpl::extra_repr() const { return "output_size=" + opt_value_str(options.output_size()); }

std::string AdaptiveAvgPool2dImpl::libtorch_repr() const {
  return "graft::nn::AdaptiveAvgPool2d(output_size=" + opt_list_str(options.output_size()) + ")";
}

// ---- MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, AdaptiveMaxPool2d ----
// PyTorch's reprs: MaxPool1d and AdaptiveAvgPool1d print plain values ("kernel_size=3"),
// AvgPool1d one-element tuples ("kernel_size=(3,)"), as its constructor stores them.

namespace {
std::string one_tuple(const ExpandingArray<1>& a) {
  std::string s = "(";  // appended piece by piece, as value_str
  s += std::to_string(a[0]);
  s += ",)";
  return s;
}
}  // namespace

Tensor MaxPool1dImpl::forward(const Tensor& input) { return functional::max_pool1d(input, options); }

std::tuple<Tensor, Tensor> MaxPool1dImpl::forward_with_indices(const Tensor& input) {
  return functional::max_pool1d_with_indices(input, options);
}

std::string MaxPool1dImpl::extra_repr() const {
  return "kernel_size=" + std::to_string(options.kernel_size()[0]) + ", stride=" + std::to_string(options.stride()[0]) +
         ", padding=" + std::to_string(options.padding()[0]) + ", dilation=" + std::to_string(options.dilation()[0]) +
         ", ceil_mode=" + graft::detail::py_bool(options.ceil_mode());
}

Tensor AvgPool1dImpl::forward(const Tensor& input) { return functional::avg_pool1d(input, options); }

std::string AvgPool1dImpl::extra_repr() const {
  return "kernel_size=" + one_tuple(options.kernel_size()) + ", stride=" + one_tuple(options.stride()) +
         ", padding=" + one_tuple(options.padding());
}

Tensor AdaptiveAvgPool1dImpl::forward(const Tensor& input) { return functional::adaptive_avg_pool1d(input, options); }

std::string AdaptiveAvgPool1dImpl::extra_repr() const {
  return "output_size=" + std::to_string(options.output_size()[0]);
}

Tensor AdaptiveMaxPool2dImpl::forward(const Tensor& input) { return functional::adaptive_max_pool2d(input, options); }

std::tuple<Tensor, Tensor> AdaptiveMaxPool2dImpl::forward_with_indices(const Tensor& input) {
  return functional::adaptive_max_pool2d_with_indices(input, options);
}

std::string AdaptiveMaxPool2dImpl::extra_repr() const { return "output_size=" + opt_value_str(options.output_size()); }

std::string AdaptiveMaxPool2dImpl::libtorch_repr() const {
  return "graft::nn::AdaptiveMaxPool2d(output_size=" + opt_list_str(options.output_size()) + ")";
}

// ---- 3-D pooling, 1-D and 3-D adaptive max pooling (issue 32) ----
//
// Note [3-D pooling from the 2-D ops]
// A 3-D pool is the 2-D pool over (H, W) of every depth slice followed by a pool over the depth of
// the result, each stage one of graft's 2-D ops:
//   (N, C, D, H, W) -> (N, C D, H, W) -> 2-D pool (kH, kW) -> (N, C, D, oH, oW)
//   -> (N, C oH oW, 1, D) -> 2-D pool (1, kD) -> (N, C oH oW, 1, oD) -> (N, C, oD, oH, oW).
// This is exact, not an approximation, because every window is a product of per-dim ranges and
// each reduction separates over them: the max of the slices' maxima; a sum of the slices' sums over
// a divisor that PyTorch takes as the product of per-dim counts (the window clipped to the padded
// input with count_include_pad, to the input without, ceil mode included); adaptive windows chosen
// per dim. So with count_include_pad either way the stages divide by their own dims' counts, and
// with divisor_override the first stage sums (divisor 1) and the second divides by it.
// Ties: the first stage keeps the first maximum of each slice in (h, w) order and the second the
// first depth holding the window's maximum: the first maximum in (d, h, w) order, as PyTorch's 3-D
// kernels; a nan counts as a maximum and a later nan takes over, in both stages as in PyTorch.
// Indices: the second stage's index is the depth d; the first stage's index h W + w of that slice
// is gathered from it, giving (d H + h) W + w. The gradients (of any order) are the 2-D ops'.
// The 1-D max pool with indices and the 1-D adaptive max pool are the 2-D ops on a height of 1, as
// graft's other 1-D pools (Note [1-D pooling on the 2-D path] in src/ops/pooling.cpp).
// Each functional checks its arguments on its own shapes first, so that its errors name it.

namespace {

// PyTorch's pooling_output_shape, as the 2-D ops compute it (division rounding towards -inf; in
// ceil mode the last window must start inside the input or its left padding).
int64_t pool_nd_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// A D-dim pool's input: (C, *D) or (N, C, *D), floating point, no empty dim but the batch.
template <size_t D>
void check_pool_nd_input(const Tensor& x, const char* op) {
  const int64_t d = static_cast<int64_t>(D);
  const std::string dims = D == 1 ? "L" : "D, H, W";
  GRAFT_CHECK(x.defined(), op, "a defined input", "an undefined tensor", "");
  GRAFT_CHECK(x.dim() == d + 1 || x.dim() == d + 2, op,
              "a " + std::to_string(d + 1) + "-D (C, " + dims + ") or " + std::to_string(d + 2) + "-D (N, C, " +
                  dims + ") input",
              "input of shape " + shape_str(x.sizes()) + " (" + std::to_string(x.dim()) + "-D)",
              x.dim() == d ? "add a channel dim with input.unsqueeze(0)" : "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  for (int64_t i = x.dim() == d + 2 ? 1 : 0; i < x.dim(); ++i) {
    GRAFT_CHECK(x.size(i) > 0, op, "non-zero sizes in all but the batch dim", "input of shape " + shape_str(x.sizes()),
                "pooling needs at least one element in every channel and spatial dim");
  }
}

// The window arguments of a D-dim pool, per dim as the 2-D ops check theirs.
template <size_t D>
void check_window(const Tensor& x, const char* op, const ExpandingArray<D>& k, const ExpandingArray<D>& s,
                  const ExpandingArray<D>& p, const ExpandingArray<D>& dil, bool ceil_mode) {
  const std::string args = "kernel_size " + list_str(k) + ", stride " + list_str(s) + ", padding " + list_str(p) +
                           ", dilation " + list_str(dil);
  for (size_t i = 0; i < D; ++i) {
    GRAFT_CHECK(k[i] > 0, op, "a positive kernel_size", args, "pass kernel_size >= 1");
    GRAFT_CHECK(s[i] > 0, op, "a positive stride", args, "pass strides >= 1");
    GRAFT_CHECK(dil[i] > 0, op, "a positive dilation", args, "pass dilation >= 1 (1 is ordinary pooling)");
    GRAFT_CHECK(p[i] >= 0, op, "a non-negative padding", args, "pass padding >= 0 on each side");
    GRAFT_CHECK(p[i] <= k[i] / 2, op, "padding at most half of kernel_size", args,
                "lower the padding or enlarge the kernel");
  }
  for (size_t i = 0; i < D; ++i) {
    const int64_t in = x.size(x.dim() - static_cast<int64_t>(D) + static_cast<int64_t>(i));
    const int64_t out = pool_nd_out_size(in, k[i], p[i], s[i], dil[i], ceil_mode);
    GRAFT_CHECK(out >= 1, op, "an input large enough for at least one window (output size >= 1)",
                "input of shape " + shape_str(x.sizes()) + " giving output size " + std::to_string(out) + " in dim " +
                    std::to_string(x.dim() - static_cast<int64_t>(D) + static_cast<int64_t>(i)) + " (" + args + ")",
                "Output size is too small: use a smaller kernel or more padding");
  }
}

template <size_t D>
void check_output_size(const Tensor& x, const char* op, const ExpandingArray<D>& o) {
  for (int64_t v : o)
    GRAFT_CHECK(v > 0, op, "a positive output_size",
                "output_size " + list_str(o) + " for input of shape " + shape_str(x.sizes()),
                "pass output_size >= 1 in every dim");
}

// The shapes of a 3-D pool's two stages (Note [3-D pooling from the 2-D ops]); x5 batched.
struct Pool3dStages {
  int64_t N, C, D, H, W;
  Tensor slices(const Tensor& x5) const { return x5.reshape({N, C * D, H, W}); }
  // (N, C D, oH, oW) -> (N, C oH oW, 1, D): the depth last, as the width of a height-1 image.
  Tensor depth_last(const Tensor& y1) const {
    const int64_t oH = y1.size(2), oW = y1.size(3);
    return y1.reshape({N, C, D, oH * oW}).permute({0, 1, 3, 2}).reshape({N, C * oH * oW, 1, D});
  }
  // (N, C oH oW, 1, oD) -> (N, C, oD, oH, oW).
  Tensor back(const Tensor& y2, int64_t oH, int64_t oW) const {
    const int64_t oD = y2.size(3);
    return y2.reshape({N, C, oH * oW, oD}).permute({0, 1, 3, 2}).reshape({N, C, oD, oH, oW});
  }
  // Flat indices (d H + h) W + w from the stages' indices: i1 (N, C D, oH, oW) holds h W + w within
  // each slice, i2 (N, C oH oW, 1, oD) the depth.
  Tensor indices(const Tensor& i1, const Tensor& i2) const {
    const int64_t oH = i1.size(2), oW = i1.size(3);
    const Tensor d = back(i2, oH, oW);
    return d * (H * W) + i1.reshape({N, C, D, oH, oW}).gather(2, d);
  }
};

Pool3dStages pool3d_stages_of(const Tensor& x5) { return {x5.size(0), x5.size(1), x5.size(2), x5.size(3), x5.size(4)}; }

Tensor pool_batched(const Tensor& x, int64_t batched_dims) { return x.dim() == batched_dims ? x : x.unsqueeze(0); }
Tensor pool_like_input(const Tensor& y, const Tensor& x, int64_t batched_dims) {
  return x.dim() == batched_dims ? y : y.squeeze(0);
}

}  // namespace

namespace functional {

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& o) {
  const char* op = "max_pool3d";
  check_pool_nd_input<3>(input, op);
  check_window<3>(input, op, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
  const auto &k = o.kernel_size(), &s = o.stride(), &p = o.padding(), &d = o.dilation();
  const Tensor x5 = pool_batched(input, 5);
  const Pool3dStages st = pool3d_stages_of(x5);
  auto [y1, i1] = graft::max_pool2d_with_indices(st.slices(x5), {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]},
                                                 {d[1], d[2]}, o.ceil_mode());
  auto [y2, i2] = graft::max_pool2d_with_indices(st.depth_last(y1), {1, k[0]}, {1, s[0]}, {0, p[0]}, {1, d[0]},
                                                 o.ceil_mode());
  const int64_t oH = y1.size(2), oW = y1.size(3);
  return {pool_like_input(st.back(y2, oH, oW), input, 5), pool_like_input(st.indices(i1, i2), input, 5)};
}

Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& options) {
  return std::get<0>(max_pool3d_with_indices(input, options));
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& o) {
  const char* op = "max_pool1d";
  check_pool_nd_input<1>(input, op);
  check_window<1>(input, op, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
  // On a height of 1 the 2-D index h W + l is l.
  auto [y, idx] = graft::max_pool2d_with_indices(input.unsqueeze(-2), {1, o.kernel_size()[0]}, {1, o.stride()[0]},
                                                 {0, o.padding()[0]}, {1, o.dilation()[0]}, o.ceil_mode());
  return {y.squeeze(-2), idx.squeeze(-2)};
}

Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& o) {
  const char* op = "avg_pool3d";
  check_pool_nd_input<3>(input, op);
  check_window<3>(input, op, o.kernel_size(), o.stride(), o.padding(), ExpandingArray<3>(1), o.ceil_mode());
  GRAFT_CHECK(!o.divisor_override() || *o.divisor_override() != 0, op, "a non-zero divisor_override",
              "divisor_override = 0", "leave it unset to divide by the window size");
  const auto &k = o.kernel_size(), &s = o.stride(), &p = o.padding();
  const Tensor x5 = pool_batched(input, 5);
  const Pool3dStages st = pool3d_stages_of(x5);
  // With divisor_override the slices' windows are summed (divisor 1) and the depth stage divides.
  const std::optional<int64_t> first = o.divisor_override() ? std::optional<int64_t>(1) : std::nullopt;
  const Tensor y1 = graft::avg_pool2d(st.slices(x5), {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, o.ceil_mode(),
                                      o.count_include_pad(), first);
  const Tensor y2 = graft::avg_pool2d(st.depth_last(y1), {1, k[0]}, {1, s[0]}, {0, p[0]}, o.ceil_mode(),
                                      o.count_include_pad(), o.divisor_override());
  return pool_like_input(st.back(y2, y1.size(2), y1.size(3)), input, 5);
}

Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& options) {
  const char* op = "adaptive_avg_pool3d";
  check_pool_nd_input<3>(input, op);
  const ExpandingArray<3> os(options.output_size().sizes_for(input.sizes()));  // Nones resolved
  check_output_size<3>(input, op, os);
  const Tensor x5 = pool_batched(input, 5);
  const Pool3dStages st = pool3d_stages_of(x5);
  const Tensor y1 = graft::adaptive_avg_pool2d(st.slices(x5), {os[1], os[2]});
  const Tensor y2 = graft::adaptive_avg_pool2d(st.depth_last(y1), {1, os[0]});
  return pool_like_input(st.back(y2, os[1], os[2]), input, 5);
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool3dFuncOptions& options) {
  const char* op = "adaptive_max_pool3d";
  check_pool_nd_input<3>(input, op);
  const ExpandingArray<3> os(options.output_size().sizes_for(input.sizes()));  // Nones resolved
  check_output_size<3>(input, op, os);
  const Tensor x5 = pool_batched(input, 5);
  const Pool3dStages st = pool3d_stages_of(x5);
  auto [y1, i1] = graft::adaptive_max_pool2d(st.slices(x5), {os[1], os[2]});
  auto [y2, i2] = graft::adaptive_max_pool2d(st.depth_last(y1), {1, os[0]});
  return {pool_like_input(st.back(y2, os[1], os[2]), input, 5), pool_like_input(st.indices(i1, i2), input, 5)};
}

Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool3d_with_indices(input, options));
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options) {
  const char* op = "adaptive_max_pool1d";
  check_pool_nd_input<1>(input, op);
  check_output_size<1>(input, op, options.output_size());
  auto [y, idx] = graft::adaptive_max_pool2d(input.unsqueeze(-2), {1, options.output_size()[0]});
  return {y.squeeze(-2), idx.squeeze(-2)};
}

Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool1d_with_indices(input, options));
}

}  // namespace functional

Tensor MaxPool3dImpl::forward(const Tensor& input) { return functional::max_pool3d(input, options); }

std::tuple<Tensor, Tensor> MaxPool3dImpl::forward_with_indices(const Tensor& input) {
  return functional::max_pool3d_with_indices(input, options);
}

std::string MaxPool3dImpl::extra_repr() const {
  return "kernel_size=" + value_str(options.kernel_size()) + ", stride=" + value_str(options.stride()) +
         ", padding=" + value_str(options.padding()) + ", dilation=" + value_str(options.dilation()) +
         ", ceil_mode=" + graft::detail::py_bool(options.ceil_mode());
}

std::string MaxPool3dImpl::libtorch_repr() const {
  return "graft::nn::MaxPool3d(kernel_size=" + list_str(options.kernel_size()) + ", stride=" +
         list_str(options.stride()) + ", padding=" + list_str(options.padding()) + ", dilation=" +
         list_str(options.dilation()) + ", ceil_mode=" + (options.ceil_mode() ? "true" : "false") + ")";
}

Tensor AvgPool3dImpl::forward(const Tensor& input) { return functional::avg_pool3d(input, options); }

std::string AvgPool3dImpl::extra_repr() const {
  return "kernel_size=" + value_str(options.kernel_size()) + ", stride=" + value_str(options.stride()) +
         ", padding=" + value_str(options.padding());
}

std::string AvgPool3dImpl::libtorch_repr() const {
  return "graft::nn::AvgPool3d(kernel_size=" + list_str(options.kernel_size()) + ", stride=" +
         list_str(options.stride()) + ", padding=" + list_str(options.padding()) + ")";
}

Tensor AdaptiveAvgPool3dImpl::forward(const Tensor& input) { return functional::adaptive_avg_pool3d(input, options); }

std::string AdaptiveAvgPool3dImpl::extra_repr() const { return "output_size=" + opt_value_str(options.output_size()); }

std::string AdaptiveAvgPool3dImpl::libtorch_repr() const {
  return "graft::nn::AdaptiveAvgPool3d(output_size=" + opt_list_str(options.output_size()) + ")";
}

Tensor AdaptiveMaxPool1dImpl::forward(const Tensor& input) { return functional::adaptive_max_pool1d(input, options); }

std::tuple<Tensor, Tensor> AdaptiveMaxPool1dImpl::forward_with_indices(const Tensor& input) {
  return functional::adaptive_max_pool1d_with_indices(input, options);
}

std::string AdaptiveMaxPool1dImpl::extra_repr() const {
  return "output_size=" + std::to_string(options.output_size()[0]);
}

std::string AdaptiveMaxPool1dImpl::libtorch_repr() const {
  return "graft::nn::AdaptiveMaxPool1d(output_size=" + list_str(options.output_size()) + ")";
}

Tensor AdaptiveMaxPool3dImpl::forward(const Tensor& input) { return functional::adaptive_max_pool3d(input, options); }

std::tuple<Tensor, Tensor> AdaptiveMaxPool3dImpl::forward_with_indices(const Tensor& input) {
  return functional::adaptive_max_pool3d_with_indices(input, options);
}

std::string AdaptiveMaxPool3dImpl::extra_repr() const { return "output_size=" + opt_value_str(options.output_size()); }

std::string AdaptiveMaxPool3dImpl::libtorch_repr() const {
  return "graft::nn::AdaptiveMaxPool3d(output_size=" + opt_list_str(options.output_size()) + ")";
}

// ---- MaxUnpool1d/2d/3d, LPPool1d/2d (issue 32) ----
//
// Note [Max unpooling]
// max_unpool puts each input value at its index in a zero output, plane by plane ((n, c) planes of
// prod(output sizes) elements, indices flat within a plane as the max pools give them). Overlapping
// pooling windows can give one index several times, all with the same value; as PyTorch's CPU
// kernel the last write wins. The forward is a gather from the plane with a zero appended: each
// output slot reads the position of its last writer, or the zero. The backward is PyTorch's
// (max_pool_double_backward): the gradient gathered at every index, duplicates included (each gets
// the whole gradient of its slot), recorded on one node so that double backward runs through gather.
// Indices are read on the CPU to check them ("an index within the output plane") and to find the
// writers.

namespace {

template <size_t D>
Tensor max_unpool_nd(const Tensor& input, const Tensor& indices, const functional::MaxUnpoolFuncOptions<D>& o,
                     const char* op, const char* node_name) {
  const int64_t d = static_cast<int64_t>(D);
  GRAFT_CHECK(input.defined() && indices.defined(), op, "defined input and indices", "an undefined tensor", "");
  GRAFT_CHECK(input.dim() == d + 1 || input.dim() == d + 2, op,
              "a " + std::to_string(d + 1) + "-D (C, *) or " + std::to_string(d + 2) + "-D (N, C, *) input",
              "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)", "");
  GRAFT_CHECK(input.is_floating_point(), op, "a floating-point input",
              std::string("a ") + dtype_name(input.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
  GRAFT_CHECK(indices.dtype() == kInt64, op, "int64 indices (as the max pools' _with_indices give them)",
              std::string(dtype_name(indices.dtype())) + " indices", "convert them: indices.to(graft::kInt64)");
  GRAFT_CHECK(indices.sizes() == input.sizes(), op, "indices of the input's shape",
              "input of shape " + shape_str(input.sizes()) + ", indices of shape " + shape_str(indices.sizes()), "");
  GRAFT_CHECK(indices.device() == input.device(), op, "indices on the input's device", "another device", "");
  const Tensor x = input.dim() == d + 2 ? input : input.unsqueeze(0);
  const int64_t N = x.size(0), C = x.size(1);
  // The output sizes: PyTorch's _unpool_output_size.
  std::vector<int64_t> dflt(D), out(D);
  for (size_t i = 0; i < D; ++i)
    dflt[i] = (x.size(2 + static_cast<int64_t>(i)) - 1) * o.stride()[i] + o.kernel_size()[i] - 2 * o.padding()[i];
  out = dflt;
  if (o.output_size()) {
    const std::vector<int64_t>& want = *o.output_size();
    GRAFT_CHECK(want.size() == D || want.size() == D + 2, op,
                "an output_size of " + std::to_string(D) + " or " + std::to_string(D + 2) + " values",
                "output_size " + list_str_vec(want) + " of " + std::to_string(want.size()) + " values", "");
    out.assign(want.end() - static_cast<std::ptrdiff_t>(D), want.end());
    for (size_t i = 0; i < D; ++i) {
      const int64_t lo = dflt[i] - o.stride()[i], hi = dflt[i] + o.stride()[i];
      GRAFT_CHECK(lo <= out[i] && out[i] <= hi, op,
                  "output_size within stride of the default " + list_str_vec(dflt) + " in every dim",
                  "output_size " + list_str_vec(want) + " (dim " + std::to_string(i) + " must be between " +
                      std::to_string(lo) + " and " + std::to_string(hi) + ")",
                  "");
    }
  }
  for (size_t i = 0; i < D; ++i)
    GRAFT_CHECK(out[i] > 0, op, "positive output sizes", "output sizes " + list_str_vec(out),
                "check kernel_size, stride and padding against the input's shape");
  int64_t L_in = 1, L_out = 1;
  for (size_t i = 0; i < D; ++i) {
    L_in *= x.size(2 + static_cast<int64_t>(i));
    L_out *= out[i];
  }
  const int64_t planes = N * C;
  // winner[p, j]: the input position whose value lands at output slot j of plane p, or L_in (the zero).
  std::vector<int64_t> winner(static_cast<size_t>(planes * L_out), L_in);
  if (!input.is_meta()) {
    const Tensor idx = indices.cpu().contiguous();
    const int64_t* ip = idx.data_ptr<int64_t>();
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < L_in; ++i) {
        const int64_t v = ip[p * L_in + i];
        GRAFT_CHECK(v >= 0 && v < L_out, op, "indices within the output plane [0, " + std::to_string(L_out) + ")",
                    "index " + std::to_string(v) + " (output sizes " + list_str_vec(out) + ")",
                    "pass the indices of the max pool whose output this is, and its input's size as output_size");
        winner[static_cast<size_t>(p * L_out + v)] = i;
      }
  }
  std::vector<int64_t> final_shape{N, C};
  final_shape.insert(final_shape.end(), out.begin(), out.end());
  Tensor y;
  {
    NoGradGuard no_grad;
    const Tensor w = graft::tensor(winner).reshape({planes, L_out}).to(input.device());
    const Tensor flat = x.reshape({planes, L_in});
    y = graft::cat({flat, graft::zeros({planes, 1}, flat.options())}, 1).gather(1, w).reshape(final_shape);
    if (input.dim() == d + 1) y = y.squeeze(0);
  }
  const Tensor idx_planes = indices.reshape({planes, L_in});
  const std::vector<int64_t> in_shape = input.sizes().vec();
  if (auto node = autograd::make_node(node_name, autograd::ForwardOp::unlisted(op), {&input},
                                      [idx_planes, planes, L_out, in_shape](autograd::Node&, const Tensor& g) -> TensorList {
                                        return {g.reshape({planes, L_out}).gather(1, idx_planes).reshape(in_shape)};
                                      }))
    autograd::set_history(y, node);
  return y;
}

template <size_t D>
Tensor lp_pool_nd(const Tensor& input, const functional::LPPoolFuncOptions<D>& o, const char* op) {
  GRAFT_CHECK(input.defined(), op, "a defined input", "an undefined tensor", "");
  const double p = o.norm_type();
  GRAFT_CHECK(p != 0, op, "a non-zero norm_type", "norm_type 0", "1 sums the window, 2 is its Euclidean norm");
  const auto &k = o.kernel_size(), &s = o.stride();
  int64_t numel = 1;
  for (size_t i = 0; i < D; ++i) numel *= k[i];
  const Tensor avg = D == 1 ? graft::avg_pool1d(input.pow(p), *k, *s, 0, o.ceil_mode())
                            : graft::avg_pool2d(input.pow(p), *k, *s, 0, o.ceil_mode());
  return (graft::sign(avg) * graft::relu(graft::abs(avg))).mul(static_cast<double>(numel)).pow(1.0 / p);
}

// The options' value as PyTorch's repr of its _single/_pair/_triple tuple: "(5,)", "(5, 6)".
template <size_t D>
std::string tuple_str(const ExpandingArray<D>& a) {
  std::string s = "(";  // appended piece by piece, as value_str
  for (size_t i = 0; i < D; ++i) {
    if (i) s += ", ";
    s += std::to_string(a[i]);
  }
  s += D == 1 ? ",)" : ")";
  return s;
}

}  // namespace

namespace functional {

Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& options) {
  return max_unpool_nd<1>(input, indices, options, "max_unpool1d", "MaxUnpool1DBackward0");
}
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& options) {
  return max_unpool_nd<2>(input, indices, options, "max_unpool2d", "MaxUnpool2DBackward0");
}
Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& options) {
  return max_unpool_nd<3>(input, indices, options, "max_unpool3d", "MaxUnpool3DBackward0");
}
Tensor lp_pool1d(const Tensor& input, const LPPool1dFuncOptions& options) {
  return lp_pool_nd<1>(input, options, "lp_pool1d");
}
Tensor lp_pool2d(const Tensor& input, const LPPool2dFuncOptions& options) {
  return lp_pool_nd<2>(input, options, "lp_pool2d");
}

}  // namespace functional

template <size_t D, class Derived>
Tensor MaxUnpoolImplBase<D, Derived>::forward(const Tensor& input, const Tensor& indices,
                                              const std::optional<std::vector<int64_t>>& output_size) {
  functional::MaxUnpoolFuncOptions<D> o(options.kernel_size());
  o.stride(options.stride()).padding(options.padding()).output_size(output_size);
  if constexpr (D == 1) return functional::max_unpool1d(input, indices, o);
  else if constexpr (D == 2) return functional::max_unpool2d(input, indices, o);
  else return functional::max_unpool3d(input, indices, o);
}

template <size_t D, class Derived>
std::string MaxUnpoolImplBase<D, Derived>::extra_repr() const {
  return "kernel_size=" + tuple_str(options.kernel_size()) + ", stride=" + tuple_str(options.stride()) +
         ", padding=" + tuple_str(options.padding());
}

template <size_t D, class Derived>
std::string MaxUnpoolImplBase<D, Derived>::libtorch_repr() const {
  return "graft::nn::MaxUnpool" + std::to_string(D) + "d(kernel_size=" + list_str(options.kernel_size()) +
         ", stride=" + list_str(options.stride()) + ", padding=" + list_str(options.padding()) + ")";
}

template class MaxUnpoolImplBase<1, MaxUnpool1dImpl>;
template class MaxUnpoolImplBase<2, MaxUnpool2dImpl>;
template class MaxUnpoolImplBase<3, MaxUnpool3dImpl>;

template <size_t D, class Derived>
Tensor LPPoolImplBase<D, Derived>::forward(const Tensor& input) {
  if constexpr (D == 1) return functional::lp_pool1d(input, options);
  else return functional::lp_pool2d(input, options);
}

// PyTorch: "norm_type=2.0, kernel_size=5, stride=5, ceil_mode=False" (the sizes as passed; here one
// value when all dims agree, as value_str).
template <size_t D, class Derived>
std::string LPPoolImplBase<D, Derived>::extra_repr() const {
  return "norm_type=" + graft::detail::py_repr(options.norm_type()) + ", kernel_size=" +
         value_str(options.kernel_size()) + ", stride=" + value_str(options.stride()) +
         ", ceil_mode=" + graft::detail::py_bool(options.ceil_mode());
}

// LibTorch: "graft::nn::LPPool2d(norm_type=2, kernel_size=[1, 2], stride=[1, 2], ceil_mode=false)".
template <size_t D, class Derived>
std::string LPPoolImplBase<D, Derived>::libtorch_repr() const {
  std::ostringstream n;
  n << options.norm_type();
  return "graft::nn::LPPool" + std::to_string(D) + "d(norm_type=" + n.str() + ", kernel_size=" +
         list_str(options.kernel_size()) + ", stride=" + list_str(options.stride()) +
         ", ceil_mode=" + (options.ceil_mode() ? "true" : "false") + ")";
}

template class LPPoolImplBase<1, LPPool1dImpl>;
template class LPPoolImplBase<2, LPPool2dImpl>;

}  // namespace graft::nn
