// unfold / fold: PyTorch's F::unfold and F::fold (ATen's im2col and col2im, issue 32), on batched
// or unbatched inputs, float32 / float64. The checks, the shape rules and the messages' facts follow
// ATen 1.13's im2col_shape_check / col2im_shape_check; the loops are src/kernels/fold.cpp's.
//
// Note [Fold and unfold are adjoint]
// unfold copies every input value under kernel tap (i, j) of block l into column l; fold adds every
// column entry back onto the position it was read from. They are each other's transposes for one
// geometry, and both are linear, so unfold's backward is fold of the gradient (with output_size the
// input's (H, W)) and fold's backward is unfold of the gradient; each backward is the other recorded
// op, so derivatives of any order work. Both run on the batched form (N, ...): an unbatched input is
// unsqueezed before and squeezed after (views, which autograd follows).
#include <array>
#include <string>

#include "../core/dispatch.h"
#include "../kernels/fold.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::Node;
using autograd::set_history;
using kernels::Conv2dGeometry;

namespace {

using Pair = std::array<int64_t, 2>;  // {height, width}

using detail::pair_str;

// The number of blocks along one dim, ATen's formula with division rounding towards -inf (so a
// kernel wider than the padded input gives 0 or less, never 1).
int64_t blocks_along(int64_t size, int64_t k, int64_t pad, int64_t stride, int64_t dilation) {
  const int64_t num = size + 2 * pad - (dilation * (k - 1) + 1);
  return (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
}

struct BlockArgs {
  Pair kernel, dilation, padding, stride;
};

std::string args_str(const BlockArgs& a) {
  return "kernel_size=" + pair_str(a.kernel) + ", dilation=" + pair_str(a.dilation) + ", padding=" +
         pair_str(a.padding) + ", stride=" + pair_str(a.stride);
}

BlockArgs check_args(IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride,
                     const char* op) {
  const BlockArgs a{detail::expand_pair(kernel_size, op, "kernel_size"), detail::expand_pair(dilation, op, "dilation"),
                    detail::expand_pair(padding, op, "padding"), detail::expand_pair(stride, op, "stride")};
  GRAFT_CHECK(a.kernel[0] > 0 && a.kernel[1] > 0, op, "kernel size greater than zero",
              "kernel_size " + pair_str(a.kernel), "pass kernel_size >= 1 in both dims");
  GRAFT_CHECK(a.dilation[0] > 0 && a.dilation[1] > 0, op, "dilation greater than zero",
              "dilation " + pair_str(a.dilation), "pass dilation >= 1 in both dims (1: adjacent taps)");
  GRAFT_CHECK(a.padding[0] >= 0 && a.padding[1] >= 0, op, "non-negative padding", "padding " + pair_str(a.padding),
              "pass padding >= 0 in both dims");
  GRAFT_CHECK(a.stride[0] > 0 && a.stride[1] > 0, op, "stride greater than zero", "stride " + pair_str(a.stride),
              "pass stride >= 1 in both dims");
  return a;
}

// Every dim but the batch dim (the first of a batched input) is non-zero.
bool non_zero_but_batch(const Tensor& x, bool batched) {
  for (int64_t d = batched ? 1 : 0; d < x.dim(); ++d)
    if (x.size(d) == 0) return false;
  return true;
}

Conv2dGeometry geometry(int64_t C, int64_t H, int64_t W, const BlockArgs& a, int64_t oH, int64_t oW) {
  return {C, H, W, a.kernel[0], a.kernel[1], a.stride[0], a.stride[1], a.padding[0], a.padding[1],
          a.dilation[0], a.dilation[1], oH, oW};
}

Tensor fold_op(const Tensor& cols, const Conv2dGeometry& g);

// img (N, C, H, W) -> cols (N, C kH kW, oH oW); g describes one sample.
Tensor unfold_op(const Tensor& img, const Conv2dGeometry& g) {
  Tensor y;
  {
    NoGradGuard ng;
    const Tensor x = img.detach().contiguous();
    y = make_empty({x.size(0), g.channels * g.kernel_h * g.kernel_w, g.out_h * g.out_w}, x.dtype(), x.device());
    kernels::dispatch_floating(x.dtype(), "unfold", [&]<class T>() {
      if (x.is_meta() || y.numel() == 0) return;  // Note [Meta device]: the shape only, no data
      kernels::fold::unfold<T>(x, y, g);
    });
  }
  // the backward is the other op: Note [Fold and unfold are adjoint]
  if (auto node = make_node("Im2ColBackward0", OpId::unfold, {&img},
                            [g](Node&, const Tensor& grad) -> TensorList { return {fold_op(grad, g)}; }))
    set_history(y, node);
  return y;
}

// cols (N, C kH kW, oH oW) -> img (N, C, H, W); g describes one sample.
Tensor fold_op(const Tensor& cols, const Conv2dGeometry& g) {
  Tensor y;
  {
    NoGradGuard ng;
    const Tensor c = cols.detach().contiguous();
    y = zeros({c.size(0), g.channels, g.height, g.width}, TensorOptions(c.dtype()).device(c.device()));
    kernels::dispatch_floating(c.dtype(), "fold", [&]<class T>() {
      if (c.is_meta() || y.numel() == 0) return;  // Note [Meta device]: the shape only, no data
      kernels::fold::fold<T>(c, y, g);
    });
  }
  // the backward is the other op: Note [Fold and unfold are adjoint]
  if (auto node = make_node("Col2ImBackward0", OpId::fold, {&cols},
                            [g](Node&, const Tensor& grad) -> TensorList { return {unfold_op(grad, g)}; }))
    set_history(y, node);
  return y;
}

}  // namespace

Tensor unfold(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
              IntArrayRef stride) {
  const char* op = "unfold";
  detail::MetaOpScope meta_scope(op, {&input});  // Note [Meta device]
  GRAFT_CHECK(input.defined(), op, "a defined input", "an undefined tensor", "pass a (N, C, H, W) or (C, H, W) tensor");
  const BlockArgs a = check_args(kernel_size, dilation, padding, stride, op);
  const bool batched = input.dim() == 4;
  GRAFT_CHECK((input.dim() == 3 || batched) && non_zero_but_batch(input, batched), op,
              "a 3-D (C, H, W) or 4-D (N, C, H, W) input, possibly with 0 batch size and non-zero other dims",
              "input of shape " + shape_str(input.sizes()),
              input.dim() < 3 ? "add a channel dim with input.unsqueeze(0)"
                              : "every channel and spatial size must be >= 1");
  const int64_t C = input.size(-3), H = input.size(-2), W = input.size(-1);
  const int64_t oH = blocks_along(H, a.kernel[0], a.padding[0], a.stride[0], a.dilation[0]);
  const int64_t oW = blocks_along(W, a.kernel[1], a.padding[1], a.stride[1], a.dilation[1]);
  GRAFT_CHECK(oH >= 1 && oW >= 1, op, "at least one sliding block along each dim",
              "input with spatial size " + pair_str({H, W}) + ", " + args_str(a) +
                  ": calculated shape of the array of sliding blocks " + pair_str({oH, oW}),
              "the dilated kernel (dilation (k - 1) + 1) must fit in the padded input: pad it, or use a smaller "
              "kernel_size or dilation");
  memory::OpScope op_scope(op);
  const Tensor x4 = batched ? input : input.unsqueeze(0);
  const Tensor y = unfold_op(x4, geometry(C, H, W, a, oH, oW));
  return batched ? y : y.squeeze(0);
}

Tensor fold(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
            IntArrayRef padding, IntArrayRef stride) {
  const char* op = "fold";
  detail::MetaOpScope meta_scope(op, {&input});  // Note [Meta device]
  GRAFT_CHECK(input.defined(), op, "a defined input", "an undefined tensor",
              "pass a (N, C kH kW, L) or (C kH kW, L) tensor");
  const Pair out = detail::expand_pair(output_size, op, "output_size");
  const BlockArgs a = check_args(kernel_size, dilation, padding, stride, op);
  const bool batched = input.dim() == 3;
  GRAFT_CHECK((input.dim() == 2 || batched) && non_zero_but_batch(input, batched), op,
              "a 2-D (C kH kW, L) or 3-D (N, C kH kW, L) input, possibly with 0 batch size and non-zero other dims",
              "input of shape " + shape_str(input.sizes()) +
                  ". Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got " +
                  std::to_string(input.dim()) + "D)",
              input.dim() == 4 ? "fold takes unfold's output; an image (N, C, H, W) goes to unfold" : "");
  const int64_t rows = input.size(-2), L = input.size(-1);
  const int64_t taps = a.kernel[0] * a.kernel[1];
  GRAFT_CHECK(rows % taps == 0, op, "size of input's dimension " + std::to_string(batched ? 1 : 0) +
                                        " divisible by the product of kernel_size " + pair_str(a.kernel),
              "input.size(" + std::to_string(batched ? 1 : 0) + ")=" + std::to_string(rows),
              "that dim holds C * kH * kW rows: pass the kernel_size the input was unfolded with");
  const int64_t oH = blocks_along(out[0], a.kernel[0], a.padding[0], a.stride[0], a.dilation[0]);
  const int64_t oW = blocks_along(out[1], a.kernel[1], a.padding[1], a.stride[1], a.dilation[1]);
  GRAFT_CHECK(L == oH * oW, op,
              "size of input's dimension " + std::to_string(batched ? 2 : 1) +
                  " to match the calculated number of sliding blocks " + std::to_string(oH) + " * " +
                  std::to_string(oW) + " = " + std::to_string(oH * oW) + " (output_size=" + pair_str(out) + ", " +
                  args_str(a) + ")",
              "input.size(" + std::to_string(batched ? 2 : 1) + ")=" + std::to_string(L),
              "pass the output_size, kernel_size, dilation, padding and stride the input was unfolded with");
  GRAFT_CHECK(oH >= 1 && oW >= 1, op, "at least one sliding block along each dim",
              "output_size=" + pair_str(out) + ", " + args_str(a) +
                  ": calculated shape of the array of sliding blocks " + pair_str({oH, oW}) +
                  ", which is too small (non-positive)",
              "the dilated kernel must fit in the padded output: raise output_size or padding");
  memory::OpScope op_scope(op);
  const Tensor c3 = batched ? input : input.unsqueeze(0);
  const Tensor y = fold_op(c3, geometry(rows / taps, out[0], out[1], a, oH, oW));
  return batched ? y : y.squeeze(0);
}

}  // namespace graft
