// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, AdaptiveMaxPool2d,
// and (issue 32) MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d with
// their functionals, composed from the 2-D ops (Note [3-D pooling from the 2-D ops]).
#include "graft/nn/modules/pooling.h"

#include <string>

#include "../../core/format.h"

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

std::string AdaptiveAvgPool2dImpl::extra_repr() const {
  return "output_size=" + value_str(options.output_size());
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

std::string AdaptiveMaxPool2dImpl::extra_repr() const { return "output_size=" + value_str(options.output_size()); }

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
  const auto& os = options.output_size();
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
  const auto& os = options.output_size();
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

std::string AdaptiveAvgPool3dImpl::extra_repr() const { return "output_size=" + value_str(options.output_size()); }

std::string AdaptiveAvgPool3dImpl::libtorch_repr() const {
  return "graft::nn::AdaptiveAvgPool3d(output_size=" + list_str(options.output_size()) + ")";
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

std::string AdaptiveMaxPool3dImpl::extra_repr() const { return "output_size=" + value_str(options.output_size()); }

std::string AdaptiveMaxPool3dImpl::libtorch_repr() const {
  return "graft::nn::AdaptiveMaxPool3d(output_size=" + list_str(options.output_size()) + ")";
}

}  // namespace graft::nn
