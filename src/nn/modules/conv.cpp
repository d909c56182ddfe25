// ConvNdImpl (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d): the shared checks,
// parameters, initialisation and printed line; each module's forward calls its functional op.
#include "graft/nn/modules/conv.h"

#include <cmath>
#include <utility>
#include <vector>

#include "graft/core/factory.h"
#include "graft/nn/init.h"
#include "expanding_array_util.h"

namespace graft::nn {

namespace {
// Python's tuple repr, as PyTorch prints a module's sizes: "(3,)" for one value, "(3, 3, 3)".
template <size_t D>
std::string py_tuple(const ExpandingArray<D>& a) {
  // (appended piece by piece: GCC 12's -Wrestrict misfires on "(" + std::to_string(...))
  std::string s = "(";
  for (size_t i = 0; i < D; ++i) {
    if (i) s += ", ";
    s += std::to_string(a[i]);
  }
  if (D == 1) s += ",";
  s += ")";
  return s;
}

using graft::nn::detail::all_equal;

// The module's name in messages: "Conv2d", "ConvTranspose1d".
template <size_t D> std::string conv_name(bool transposed) {
  return std::string(transposed ? "ConvTranspose" : "Conv") + std::to_string(D) + "d";
}
}  // namespace

template <size_t D, class Derived>
ConvNdImpl<D, Derived>::ConvNdImpl(ConvNdOptions<D> options_) : options(std::move(options_)) {
  reset();
}

template <size_t D, class Derived> void ConvNdImpl<D, Derived>::reset() {
  const std::string name = conv_name<D>(options.transposed());
  const int64_t in = options.in_channels(), out = options.out_channels(), g = options.groups();
  GRAFT_CHECK(in > 0 && out > 0, name, "positive in_channels and out_channels",
              "in_channels " + std::to_string(in) + ", out_channels " + std::to_string(out),
              "pass in_channels and out_channels >= 1");
  GRAFT_CHECK(g > 0, name, "groups > 0", "groups = " + std::to_string(g),
              "pass groups >= 1 (1 is an ordinary convolution)");
  GRAFT_CHECK(in % g == 0, name, "in_channels divisible by groups",
              "in_channels " + std::to_string(in) + " with groups = " + std::to_string(g),
              "choose groups that divide in_channels");
  GRAFT_CHECK(out % g == 0, name, "out_channels divisible by groups",
              "out_channels " + std::to_string(out) + " with groups = " + std::to_string(g),
              "choose groups that divide out_channels");
  for (size_t i = 0; i < D; ++i) {
    GRAFT_CHECK(options.kernel_size()[i] > 0, name, "a positive kernel_size",
                "kernel_size " + py_tuple<D>(options.kernel_size()), "pass kernel_size >= 1");
  }
  // (out, in / groups, *kernel_size), or (in, out / groups, *kernel_size) when transposed.
  std::vector<int64_t> shape =
      options.transposed() ? std::vector<int64_t>{in, out / g} : std::vector<int64_t>{out, in / g};
  for (size_t i = 0; i < D; ++i) shape.push_back(options.kernel_size()[i]);
  weight = this->register_parameter("weight", graft::empty(shape));
  bias = this->register_parameter("bias", options.bias() ? graft::empty({out}) : Tensor(), options.bias());
  reset_parameters();
}

template <size_t D, class Derived> void ConvNdImpl<D, Derived>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));  // fan_in = weight.size(1) * the kernel's taps
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <size_t D, class Derived> std::string ConvNdImpl<D, Derived>::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.in_channels()) + ", " + std::to_string(o.out_channels()) +
                  ", kernel_size=" + py_tuple<D>(o.kernel_size()) + ", stride=" + py_tuple<D>(o.stride());
  if (!all_equal<D>(o.padding(), 0)) s += ", padding=" + py_tuple<D>(o.padding());
  if (o.transposed() && !all_equal<D>(o.output_padding(), 0))
    s += ", output_padding=" + py_tuple<D>(o.output_padding());
  if (!all_equal<D>(o.dilation(), 1)) s += ", dilation=" + py_tuple<D>(o.dilation());
  if (o.groups() != 1) s += ", groups=" + std::to_string(o.groups());
  if (!o.bias()) s += ", bias=False";
  return s;
}

template class ConvNdImpl<1, Conv1dImpl>;
template class ConvNdImpl<2, Conv2dImpl>;
template class ConvNdImpl<3, Conv3dImpl>;
template class ConvNdImpl<1, ConvTranspose1dImpl>;
template class ConvNdImpl<2, ConvTranspose2dImpl>;

Tensor Conv1dImpl::forward(const Tensor& input) {
  return functional::conv1d(input, weight,
                            functional::Conv1dFuncOptions()
                                .bias(bias)
                                .stride(options.stride())
                                .padding(options.padding())
                                .dilation(options.dilation())
                                .groups(options.groups()));
}

Tensor Conv2dImpl::forward(const Tensor& input) {
  return functional::conv2d(input, weight, bias,
                            functional::Conv2dFuncOptions()
                                .stride(options.stride())
                                .padding(options.padding())
                                .dilation(options.dilation())
                                .groups(options.groups()));
}

Tensor Conv3dImpl::forward(const Tensor& input) {
  return functional::conv3d(input, weight,
                            functional::Conv3dFuncOptions()
                                .bias(bias)
                                .stride(options.stride())
                                .padding(options.padding())
                                .dilation(options.dilation())
                                .groups(options.groups()));
}

Tensor ConvTranspose1dImpl::forward(const Tensor& input) {
  return functional::conv_transpose1d(input, weight,
                                      functional::ConvTranspose1dFuncOptions()
                                          .bias(bias)
                                          .stride(options.stride())
                                          .padding(options.padding())
                                          .output_padding(options.output_padding())
                                          .groups(options.groups())
                                          .dilation(options.dilation()));
}

Tensor ConvTranspose2dImpl::forward(const Tensor& input) {
  return functional::conv_transpose2d(input, weight,
                                      functional::ConvTranspose2dFuncOptions()
                                          .bias(bias)
                                          .stride(options.stride())
                                          .padding(options.padding())
                                          .output_padding(options.output_padding())
                                          .groups(options.groups())
                                          .dilation(options.dilation()));
}

}  // namespace graft::nn
