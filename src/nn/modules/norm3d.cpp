// BatchNorm3d, InstanceNorm3d, LocalResponseNorm (with F::local_response_norm) and CrossMapLRN2d:
// LibTorch 1.13's modules that graft's normalization.cpp lacks. The 3-D norms use the rank-generic
// batch_norm / instance_norm ops (statistics over every dim but C); the two LRNs are composites of
// differentiable ops (pad, sum/avg pooling over channels, pow), so their gradients come for free.
#include <sstream>
#include <string>
#include <vector>

#include "../../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/nn/init.h"
#include "graft/nn/modules/normalization.h"
#include "nn/modules/batch_norm_base.h"

namespace graft::nn {

namespace {

std::string rank_str(const Tensor& input) {
  return "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)";
}

void check_floating(const Tensor& input, const char* op) {
  GRAFT_CHECK(input.defined(), op, "a defined input", "an undefined tensor", "");
  GRAFT_CHECK(input.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(input.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
}

// The sum of x^2 over the channel window [c - before, c + after] of each channel c (zeros beyond the
// channels), divided by `divisor`: x (N, C, *) seen as the single-plane image (N, 1, C, M) and
// pooled by a (before + after + 1) x 1 window with stride 1, as PyTorch's local_response_norm does
// with avg_pool2d / avg_pool3d. Returned in x's shape.
Tensor channel_window_sum_sq(const Tensor& x, int64_t before, int64_t after, int64_t divisor) {
  const int64_t N = x.size(0), C = x.size(1), M = x.numel() / (N * C);
  const Tensor sq = (x * x).reshape({N, 1, C, M});
  const Tensor padded = graft::constant_pad_nd(sq, {0, 0, before, after});
  return graft::avg_pool2d(padded, {before + after + 1, 1}, {1, 1}, 0, /*ceil_mode=*/false, /*count_include_pad=*/true,
                    divisor)
      .reshape(x.sizes());
}

}  // namespace

// ---- BatchNorm3d ----

template class BatchNormImplBase<BatchNorm3dImpl>;

void BatchNorm3dImpl::check_input_dim(const Tensor& input) const {
  GRAFT_CHECK(input.dim() == 5, "BatchNorm3d", "a 5-D (N, C, D, H, W) input", rank_str(input),
              input.dim() == 4   ? "use BatchNorm2d for (N, C, H, W) inputs, or add a batch dim: input.unsqueeze(0)"
              : input.dim() <= 3 ? "use BatchNorm1d for (N, C) and (N, C, L) inputs"
                                 : "");
}

std::string BatchNorm3dImpl::libtorch_repr() const {
  std::ostringstream s;
  s << std::boolalpha << "graft::nn::BatchNorm3d(" << options.num_features() << ", eps=" << options.eps()
    << ", momentum=";
  if (options.momentum()) s << *options.momentum();
  else s << "None";
  s << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats() << ")";
  return s.str();
}

// ---- local_response_norm / LocalResponseNorm ----

Tensor functional::local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options) {
  const char* op = "local_response_norm";
  GRAFT_CHECK(input.defined(), op, "a defined input", "an undefined tensor", "");
  if (!input.is_floating_point() && input.dtype() != kBool) {
    // An integer input gives a floating result, as in PyTorch (its window mean is scaled by alpha, a
    // double): computed in the default dtype, exact for the squares and sums of ordinary integers.
    return local_response_norm(input.to(get_default_dtype()), options);
  }
  check_floating(input, op);
  GRAFT_CHECK(input.dim() >= 3, op, "an input of 3 or more dims (N, C, *)", rank_str(input),
              "add a batch dim with input.unsqueeze(0)");
  const int64_t size = options.size();
  GRAFT_CHECK(size > 0, op, "a positive size (channels in the window)", "size " + std::to_string(size), "");
  if (input.numel() == 0) return input;  // as PyTorch
  // div = (k + alpha * mean of x^2 over [c - size/2, c + (size-1)/2])^beta; the mean always
  // divides by size, zero-padded channels included (count_include_pad).
  const Tensor avg = channel_window_sum_sq(input, size / 2, (size - 1) / 2, size);
  return input / (avg * options.alpha() + options.k()).pow(options.beta());
}

LocalResponseNormImpl::LocalResponseNormImpl(const LocalResponseNormOptions& options_) : options(options_) {
  GRAFT_CHECK(options.size() > 0, "LocalResponseNorm", "a positive size (channels in the window)",
              "size " + std::to_string(options.size()), "");
}

Tensor LocalResponseNormImpl::forward(const Tensor& input) { return functional::local_response_norm(input, options); }

std::string LocalResponseNormImpl::extra_repr() const {
  return std::to_string(options.size()) + ", alpha=" + graft::detail::py_repr(options.alpha()) +
         ", beta=" + graft::detail::py_repr(options.beta()) + ", k=" + graft::detail::py_repr(options.k());
}

std::string LocalResponseNormImpl::libtorch_repr() const {
  std::ostringstream s;
  s << "graft::nn::LocalResponseNorm(" << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta()
    << ", k=" << options.k() << ")";
  return s.str();
}

// ---- CrossMapLRN2d ----

CrossMapLRN2dImpl::CrossMapLRN2dImpl(const CrossMapLRN2dOptions& options_) : options(options_) {
  GRAFT_CHECK(options.size() > 0, "CrossMapLRN2d", "a positive size (channels in the window)",
              "size " + std::to_string(options.size()), "");
}

Tensor CrossMapLRN2dImpl::forward(const Tensor& input) {
  const char* op = "CrossMapLRN2d";
  check_floating(input, op);
  GRAFT_CHECK(input.dim() == 4, op, "a 4-D (N, C, H, W) input", rank_str(input),
              input.dim() == 3 ? "add a batch dim with input.unsqueeze(0)" : "");
  if (input.numel() == 0) return input.clone();
  const int64_t C = input.size(1), h = (options.size() - 1) / 2;
  // The legacy forward keeps a running sum over channels: it starts from channels [0, h], adds
  // channel c + h and subtracts channel c - h - 1 only while c - h - 1 > 0, so channel 0 never
  // leaves the sum. The window of c is thus [c - h, c + h] plus, once c > h, channel 0.
  Tensor sum = channel_window_sum_sq(input, h, h, /*divisor=*/1);
  if (C > h + 1) {
    std::vector<double> late(static_cast<size_t>(C), 0.0);
    for (int64_t c = h + 1; c < C; ++c) late[static_cast<size_t>(c)] = 1.0;
    const Tensor mask = graft::tensor(late).to(input.dtype()).reshape({1, C, 1, 1});
    const Tensor first = input.narrow(1, 0, 1);
    sum = sum + first * first * mask;
  }
  const Tensor scale = sum * (options.alpha() / static_cast<double>(options.size())) + static_cast<double>(options.k());
  return input * scale.pow(-options.beta());
}

std::string CrossMapLRN2dImpl::extra_repr() const {
  return std::to_string(options.size()) + ", alpha=" + graft::detail::py_repr(options.alpha()) +
         ", beta=" + graft::detail::py_repr(options.beta()) + ", k=" + std::to_string(options.k());
}

std::string CrossMapLRN2dImpl::libtorch_repr() const {
  std::ostringstream s;
  s << "graft::nn::CrossMapLRN2d(" << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta()
    << ", k=" << options.k() << ")";
  return s.str();
}

}  // namespace graft::nn
