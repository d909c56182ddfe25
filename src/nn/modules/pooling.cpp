// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, AdaptiveMaxPool2d.
#include "graft/nn/modules/pooling.h"

#include "../../core/format.h"

namespace graft::nn {

namespace {
// As PyTorch prints what the user passed: a single value when both dims agree ("2"), else "(2, 3)".
std::string value_str(const ExpandingArray<2>& a) {
  if (a[0] == a[1]) return std::to_string(a[0]);
  std::string s = "(";  // appended piece by piece: GCC 12's -Wrestrict misfires on "(" + std::string
  s += std::to_string(a[0]);
  s += ", ";
  s += std::to_string(a[1]);
  s += ")";
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

}  // namespace graft::nn
