// Fold and Unfold (graft/nn/modules/fold.h): forward and both print styles.
#include "graft/nn/modules/fold.h"

#include <sstream>
#include <string>

namespace graft::nn {

namespace {

// PyTorch's repr shows each size as the module was given it, an int or a tuple; the options keep
// both values only, so a size whose two values agree prints as the int ("2"), any other as the
// tuple ("(2, 3)"): what nn.Unfold(2) and nn.Unfold((2, 3)) print.
std::string python_size(const ExpandingArray<2>& a) {
  std::ostringstream s;
  if (a[0] == a[1]) s << a[0];
  else s << "(" << a[0] << ", " << a[1] << ")";
  return s.str();
}

// LibTorch prints an ExpandingArray as an ArrayRef: "[2, 3]".
std::string libtorch_size(const ExpandingArray<2>& a) {
  std::ostringstream s;
  s << "[" << a[0] << ", " << a[1] << "]";
  return s.str();
}

}  // namespace

Tensor FoldImpl::forward(const Tensor& input) { return functional::fold(input, options); }

std::string FoldImpl::extra_repr() const {
  return "output_size=" + python_size(options.output_size()) + ", kernel_size=" + python_size(options.kernel_size()) +
         ", dilation=" + python_size(options.dilation()) + ", padding=" + python_size(options.padding()) +
         ", stride=" + python_size(options.stride());
}

std::string FoldImpl::libtorch_repr() const {
  return "graft::nn::Fold(output_size=" + libtorch_size(options.output_size()) +
         ", kernel_size=" + libtorch_size(options.kernel_size()) + ", dilation=" + libtorch_size(options.dilation()) +
         ", padding=" + libtorch_size(options.padding()) + ", stride=" + libtorch_size(options.stride()) + ")";
}

Tensor UnfoldImpl::forward(const Tensor& input) { return functional::unfold(input, options); }

std::string UnfoldImpl::extra_repr() const {
  return "kernel_size=" + python_size(options.kernel_size()) + ", dilation=" + python_size(options.dilation()) +
         ", padding=" + python_size(options.padding()) + ", stride=" + python_size(options.stride());
}

std::string UnfoldImpl::libtorch_repr() const {
  return "graft::nn::Unfold(kernel_size=" + libtorch_size(options.kernel_size()) +
         ", dilation=" + libtorch_size(options.dilation()) + ", padding=" + libtorch_size(options.padding()) +
         ", stride=" + libtorch_size(options.stride()) + ")";
}

}  // namespace graft::nn
