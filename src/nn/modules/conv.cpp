// Conv2d, ConvTranspose2d, Conv1d, Conv3d and ConvTranspose1d.
#include "graft/nn/modules/conv.h"

#include <cmath>

#include "graft/core/factory.h"
#include "graft/nn/init.h"

namespace graft::nn {

namespace {
std::string tuple_str(const ExpandingArray<2>& a) {
  // (appended piece by piece: GCC 12's -Wrestrict misfires on "(" + std::to_string(...))
  std::string s = "(";
  s += std::to_string(a[0]);
  s += ", ";
  s += std::to_string(a[1]);
  s += ")";
  return s;
}
}  // namespace

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options_) : options(options_) {
  const int64_t in = options.in_channels(), out = options.out_channels(), g = options.groups();
  GRAFT_CHECK(in > 0 && out > 0, "Conv2d", "positive in_channels and out_channels",
              "in_channels " + std::to_string(in) + ", out_channels " + std::to_string(out),
              "pass in_channels and out_channels >= 1");
  GRAFT_CHECK(g > 0, "Conv2d", "groups > 0", "groups = " + std::to_string(g),
              "pass groups >= 1 (1 is an ordinary convolution)");
  GRAFT_CHECK(in % g == 0, "Conv2d", "in_channels divisible by groups",
              "in_channels " + std::to_string(in) + " with groups = " + std::to_string(g),
              "choose groups that divide in_channels");
  GRAFT_CHECK(out % g == 0, "Conv2d", "out_channels divisible by groups",
              "out_channels " + std::to_string(out) + " with groups = " + std::to_string(g),
              "choose groups that divide out_channels");
  for (size_t i = 0; i < 2; ++i) {
    GRAFT_CHECK(options.kernel_size()[i] > 0, "Conv2d", "a positive kernel_size",
                "kernel_size " + tuple_str(options.kernel_size()), "pass kernel_size >= 1");
  }
  reset();
}

void Conv2dImpl::reset() {
  const auto& k = options.kernel_size();
  weight = register_parameter(
      "weight", graft::empty({options.out_channels(), options.in_channels() / options.groups(), k[0], k[1]}));
  bias = register_parameter("bias", options.bias() ? graft::empty({options.out_channels()}) : Tensor(), options.bias());
  reset_parameters();
}

void Conv2dImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv2dImpl::forward(const Tensor& input) {
  return functional::conv2d(input, weight, bias,
                            functional::Conv2dFuncOptions()
                                .stride(options.stride())
                                .padding(options.padding())
                                .dilation(options.dilation())
                                .groups(options.groups()));
}

std::string Conv2dImpl::extra_repr() const {
  // PyTorch: "3, 8, kernel_size=(3, 3), stride=(1, 1)", then padding, dilation, groups and bias
  // only where they differ from the defaults.
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + tuple_str(options.kernel_size()) + ", stride=" + tuple_str(options.stride());
  const auto& p = options.padding();
  const auto& d = options.dilation();
  if (p[0] != 0 || p[1] != 0) s += ", padding=" + tuple_str(p);
  if (d[0] != 1 || d[1] != 1) s += ", dilation=" + tuple_str(d);
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!options.bias()) s += ", bias=False";
  return s;
}

// ---- ConvTranspose2d ----

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& options_) : options(options_) {
  const int64_t in = options.in_channels(), out = options.out_channels(), g = options.groups();
  GRAFT_CHECK(in > 0 && out > 0 && g > 0 && in % g == 0 && out % g == 0, "ConvTranspose2d",
              "positive in_channels and out_channels, both divisible by groups > 0",
              "in_channels " + std::to_string(in) + ", out_channels " + std::to_string(out) + ", groups " +
                  std::to_string(g),
              "choose groups that divide both channel counts");
  for (size_t i = 0; i < 2; ++i) {
    GRAFT_CHECK(options.kernel_size()[i] > 0, "ConvTranspose2d", "a positive kernel_size",
                "kernel_size " + tuple_str(options.kernel_size()), "pass kernel_size >= 1");
  }
  reset();
}

void ConvTranspose2dImpl::reset() {
  const auto& k = options.kernel_size();
  weight = register_parameter(
      "weight", graft::empty({options.in_channels(), options.out_channels() / options.groups(), k[0], k[1]}));
  bias = register_parameter("bias", options.bias() ? graft::empty({options.out_channels()}) : Tensor(), options.bias());
  reset_parameters();
}

void ConvTranspose2dImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));  // fan_in = weight.size(1) * kH * kW, as in PyTorch
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
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

std::string ConvTranspose2dImpl::extra_repr() const {
  // PyTorch: "16, 8, kernel_size=(3, 3), stride=(2, 2)", then padding, output_padding, dilation,
  // groups and bias where they differ from the defaults.
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + tuple_str(options.kernel_size()) + ", stride=" + tuple_str(options.stride());
  const auto& p = options.padding();
  const auto& op = options.output_padding();
  const auto& d = options.dilation();
  if (p[0] != 0 || p[1] != 0) s += ", padding=" + tuple_str(p);
  if (op[0] != 0 || op[1] != 0) s += ", output_padding=" + tuple_str(op);
  if (d[0] != 1 || d[1] != 1) s += ", dilation=" + tuple_str(d);
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!options.bias()) s += ", bias=False";
  return s;
}

// ---- Conv1d, Conv3d, ConvTranspose1d ----

namespace {
// Python's tuple repr, as PyTorch prints a module's sizes: "(3,)" for one value, "(3, 3, 3)".
template <size_t D>
std::string py_tuple(const ExpandingArray<D>& a) {
  std::string s = "(";
  for (size_t i = 0; i < D; ++i) {
    if (i) s += ", ";
    s += std::to_string(a[i]);
  }
  if (D == 1) s += ",";
  s += ")";
  return s;
}

template <size_t D>
bool all_equal(const ExpandingArray<D>& a, int64_t v) {
  for (size_t i = 0; i < D; ++i)
    if (a[i] != v) return false;
  return true;
}

// The checks of Conv2d's constructor, for module `name`.
template <size_t D>
void check_conv_module(const char* name, int64_t in, int64_t out, int64_t g, const ExpandingArray<D>& kernel_size) {
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
    GRAFT_CHECK(kernel_size[i] > 0, name, "a positive kernel_size", "kernel_size " + py_tuple<D>(kernel_size),
                "pass kernel_size >= 1");
  }
}

// PyTorch's reset_parameters of every conv: kaiming_uniform_(a = sqrt(5)), bias ~ U(+-1/sqrt(fan_in)).
void reset_conv_parameters(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

// PyTorch's conv extra_repr: channels, kernel_size and stride, then the rest where not default.
template <size_t D, class Options>
std::string conv_repr(const Options& o, const ExpandingArray<D>* output_padding) {
  std::string s = std::to_string(o.in_channels()) + ", " + std::to_string(o.out_channels()) +
                  ", kernel_size=" + py_tuple<D>(o.kernel_size()) + ", stride=" + py_tuple<D>(o.stride());
  if (!all_equal<D>(o.padding(), 0)) s += ", padding=" + py_tuple<D>(o.padding());
  if (output_padding && !all_equal<D>(*output_padding, 0)) s += ", output_padding=" + py_tuple<D>(*output_padding);
  if (!all_equal<D>(o.dilation(), 1)) s += ", dilation=" + py_tuple<D>(o.dilation());
  if (o.groups() != 1) s += ", groups=" + std::to_string(o.groups());
  if (!o.bias()) s += ", bias=False";
  return s;
}
}  // namespace

Conv1dImpl::Conv1dImpl(const Conv1dOptions& options_) : options(options_) {
  check_conv_module<1>("Conv1d", options.in_channels(), options.out_channels(), options.groups(),
                       options.kernel_size());
  reset();
}

void Conv1dImpl::reset() {
  weight = register_parameter("weight", graft::empty({options.out_channels(), options.in_channels() / options.groups(),
                                                      options.kernel_size()[0]}));
  bias = register_parameter("bias", options.bias() ? graft::empty({options.out_channels()}) : Tensor(), options.bias());
  reset_parameters();
}

void Conv1dImpl::reset_parameters() { reset_conv_parameters(weight, bias); }

Tensor Conv1dImpl::forward(const Tensor& input) {
  return functional::conv1d(input, weight,
                            functional::Conv1dFuncOptions()
                                .bias(bias)
                                .stride(options.stride())
                                .padding(options.padding())
                                .dilation(options.dilation())
                                .groups(options.groups()));
}

std::string Conv1dImpl::extra_repr() const { return conv_repr<1>(options, nullptr); }

Conv3dImpl::Conv3dImpl(const Conv3dOptions& options_) : options(options_) {
  check_conv_module<3>("Conv3d", options.in_channels(), options.out_channels(), options.groups(),
                       options.kernel_size());
  reset();
}

void Conv3dImpl::reset() {
  const auto& k = options.kernel_size();
  weight = register_parameter(
      "weight", graft::empty({options.out_channels(), options.in_channels() / options.groups(), k[0], k[1], k[2]}));
  bias = register_parameter("bias", options.bias() ? graft::empty({options.out_channels()}) : Tensor(), options.bias());
  reset_parameters();
}

void Conv3dImpl::reset_parameters() { reset_conv_parameters(weight, bias); }

Tensor Conv3dImpl::forward(const Tensor& input) {
  return functional::conv3d(input, weight,
                            functional::Conv3dFuncOptions()
                                .bias(bias)
                                .stride(options.stride())
                                .padding(options.padding())
                                .dilation(options.dilation())
                                .groups(options.groups()));
}

std::string Conv3dImpl::extra_repr() const { return conv_repr<3>(options, nullptr); }

ConvTranspose1dImpl::ConvTranspose1dImpl(const ConvTranspose1dOptions& options_) : options(options_) {
  check_conv_module<1>("ConvTranspose1d", options.in_channels(), options.out_channels(), options.groups(),
                       options.kernel_size());
  reset();
}

void ConvTranspose1dImpl::reset() {
  weight = register_parameter("weight", graft::empty({options.in_channels(), options.out_channels() / options.groups(),
                                                      options.kernel_size()[0]}));
  bias = register_parameter("bias", options.bias() ? graft::empty({options.out_channels()}) : Tensor(), options.bias());
  reset_parameters();
}

void ConvTranspose1dImpl::reset_parameters() { reset_conv_parameters(weight, bias); }  // fan_in = weight.size(1) * kL

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

std::string ConvTranspose1dImpl::extra_repr() const { return conv_repr<1>(options, &options.output_padding()); }

}  // namespace graft::nn
