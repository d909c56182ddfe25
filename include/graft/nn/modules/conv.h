// Conv1d, Conv2d, Conv3d, ConvTranspose1d and ConvTranspose2d, in LibTorch's class shape: one
// ConvNdImpl<D, Derived> base (and ConvTransposeNdImpl on it) over ConvNdOptions<D>, made from
// LibTorch's ConvOptions<D> / ConvTransposeOptions<D>.
#pragma once

#include <cstdint>
#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

// Conv padding_mode: LibTorch's torch::kZeros (graft::kZeros), the one mode graft's convolutions take.
enum class ConvPaddingMode { Zeros };

// LibTorch's ConvOptions<D>: the options of Conv1d, Conv2d and Conv3d.
template <size_t D> struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  GRAFT_ARG(int64_t, in_channels);
  GRAFT_ARG(int64_t, out_channels);
  GRAFT_ARG(ExpandingArray<D>, kernel_size);
  GRAFT_ARG(ExpandingArray<D>, stride) = 1;
  GRAFT_ARG(ExpandingArray<D>, padding) = 0;
  GRAFT_ARG(ExpandingArray<D>, dilation) = 1;
  GRAFT_ARG(int64_t, groups) = 1;
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(ConvPaddingMode, padding_mode) = ConvPaddingMode::Zeros;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

// LibTorch's ConvTransposeOptions<D>: the options of ConvTranspose1d and ConvTranspose2d.
template <size_t D> struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  GRAFT_ARG(int64_t, in_channels);
  GRAFT_ARG(int64_t, out_channels);
  GRAFT_ARG(ExpandingArray<D>, kernel_size);
  GRAFT_ARG(ExpandingArray<D>, stride) = 1;
  GRAFT_ARG(ExpandingArray<D>, padding) = 0;
  GRAFT_ARG(ExpandingArray<D>, output_padding) = 0;
  GRAFT_ARG(int64_t, groups) = 1;
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(ExpandingArray<D>, dilation) = 1;
  GRAFT_ARG(ConvPaddingMode, padding_mode) = ConvPaddingMode::Zeros;
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;

// What every convolution module holds (LibTorch's detail::ConvNdOptions<D>, also spelled so here):
// both kinds' fields, with `transposed` telling them apart. Made from either options struct.
template <size_t D>
struct ConvNdOptions {
  ConvNdOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  ConvNdOptions(const ConvOptions<D>& o)  // NOLINT: implicit, as the module's options
      : in_channels_(o.in_channels()),
        out_channels_(o.out_channels()),
        kernel_size_(o.kernel_size()),
        stride_(o.stride()),
        padding_(o.padding()),
        dilation_(o.dilation()),
        groups_(o.groups()),
        bias_(o.bias()),
        padding_mode_(o.padding_mode()) {}
  ConvNdOptions(const ConvTransposeOptions<D>& o)  // NOLINT: implicit, as the module's options
      : in_channels_(o.in_channels()),
        out_channels_(o.out_channels()),
        kernel_size_(o.kernel_size()),
        stride_(o.stride()),
        padding_(o.padding()),
        dilation_(o.dilation()),
        transposed_(true),
        output_padding_(o.output_padding()),
        groups_(o.groups()),
        bias_(o.bias()),
        padding_mode_(o.padding_mode()) {}
  GRAFT_ARG(int64_t, in_channels);
  GRAFT_ARG(int64_t, out_channels);
  GRAFT_ARG(ExpandingArray<D>, kernel_size);
  GRAFT_ARG(ExpandingArray<D>, stride) = 1;
  GRAFT_ARG(ExpandingArray<D>, padding) = 0;
  GRAFT_ARG(ExpandingArray<D>, dilation) = 1;
  GRAFT_ARG(bool, transposed) = false;
  GRAFT_ARG(ExpandingArray<D>, output_padding) = 0;
  GRAFT_ARG(int64_t, groups) = 1;
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(ConvPaddingMode, padding_mode) = ConvPaddingMode::Zeros;
};
namespace detail {
template <size_t D> using ConvNdOptions = nn::ConvNdOptions<D>;
}  // namespace detail

// LibTorch's ConvNdImpl<D, Derived>: the options, parameters, checks, initialisation and printed
// line of every convolution module; each module adds its constructors and forward.
//   weight (out_channels, in_channels / groups, *kernel_size), or (in_channels, out_channels /
//   groups, *kernel_size) when transposed; bias (out_channels) or undefined.
// PyTorch's initialisation: weight ~ kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) with fan_in = weight.size(1) * the kernel's taps (in_channels / groups * taps, or
// out_channels / groups * taps when transposed), and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
// Defined in src/nn/modules/conv.cpp for D = 1, 2, 3.
template <size_t D, class Derived> class ConvNdImpl : public Cloneable<Derived> {
 public:
  explicit ConvNdImpl(ConvNdOptions<D> options);
  void reset() override;
  void reset_parameters();
  // PyTorch's line: "3, 8, kernel_size=(3, 3), stride=(1, 1)", then padding, output_padding,
  // dilation, groups and bias only where they differ from the defaults.
  std::string extra_repr() const override;

  ConvNdOptions<D> options;
  Tensor weight;
  Tensor bias;
};

// LibTorch's ConvTransposeNdImpl<D, Derived>: ConvNdImpl with transposed options.
template <size_t D, class Derived> class ConvTransposeNdImpl : public ConvNdImpl<D, Derived> {
 public:
  using ConvNdImpl<D, Derived>::ConvNdImpl;
};

// Conv1d: input (N, C, L) or (C, L).
class Conv1dImpl : public ConvNdImpl<1, Conv1dImpl> {
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv1dImpl(const Conv1dOptions& options) : ConvNdImpl(options) {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Conv1d);

// Conv2d: input (N, C, H, W) or (C, H, W).
class Conv2dImpl : public ConvNdImpl<2, Conv2dImpl> {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options) : ConvNdImpl(options) {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Conv2d);

// Conv3d: input (N, C, D, H, W) or (C, D, H, W).
class Conv3dImpl : public ConvNdImpl<3, Conv3dImpl> {
 public:
  Conv3dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<3> kernel_size)
      : Conv3dImpl(Conv3dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv3dImpl(const Conv3dOptions& options) : ConvNdImpl(options) {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Conv3d);

// ConvTranspose1d: the adjoint of Conv1d (graft::conv_transpose1d).
class ConvTranspose1dImpl : public ConvTransposeNdImpl<1, ConvTranspose1dImpl> {
 public:
  ConvTranspose1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose1dImpl(const ConvTranspose1dOptions& options) : ConvTransposeNdImpl(options) {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(ConvTranspose1d);

// ConvTranspose2d: the adjoint of Conv2d (graft::conv_transpose2d), as DCGAN-style generators use it.
class ConvTranspose2dImpl : public ConvTransposeNdImpl<2, ConvTranspose2dImpl> {
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options) : ConvTransposeNdImpl(options) {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(ConvTranspose2d);

extern template class ConvNdImpl<1, Conv1dImpl>;
extern template class ConvNdImpl<2, Conv2dImpl>;
extern template class ConvNdImpl<3, Conv3dImpl>;
extern template class ConvNdImpl<1, ConvTranspose1dImpl>;
extern template class ConvNdImpl<2, ConvTranspose2dImpl>;

}  // namespace graft::nn

namespace graft {
inline constexpr nn::ConvPaddingMode kZeros = nn::ConvPaddingMode::Zeros;
}  // namespace graft
