// Conv2d: 2-D convolution over (N, C, H, W) or unbatched (C, H, W) inputs; Conv1d, Conv3d,
// ConvTranspose2d, ConvTranspose1d.
#pragma once

#include <cstdint>
#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  GRAFT_ARG(int64_t, in_channels);
  GRAFT_ARG(int64_t, out_channels);
  GRAFT_ARG(ExpandingArray<2>, kernel_size);
  GRAFT_ARG(ExpandingArray<2>, stride) = 1;
  GRAFT_ARG(ExpandingArray<2>, padding) = 0;
  GRAFT_ARG(ExpandingArray<2>, dilation) = 1;
  GRAFT_ARG(int64_t, groups) = 1;
  GRAFT_ARG(bool, bias) = true;
};

// weight (out_channels, in_channels / groups, kH, kW), bias (out_channels) or undefined.
// PyTorch's initialisation: weight ~ kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) with fan_in = in_channels / groups * kH * kW, and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
class Conv2dImpl : public Cloneable<Conv2dImpl> {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  Conv2dOptions options;
  Tensor weight;
  Tensor bias;
};
GRAFT_MODULE(Conv2d);

// ConvTranspose2d: the adjoint of Conv2d (graft::conv_transpose2d), as DCGAN-style generators use it.
struct ConvTranspose2dOptions {
  ConvTranspose2dOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  GRAFT_ARG(int64_t, in_channels);
  GRAFT_ARG(int64_t, out_channels);
  GRAFT_ARG(ExpandingArray<2>, kernel_size);
  GRAFT_ARG(ExpandingArray<2>, stride) = 1;
  GRAFT_ARG(ExpandingArray<2>, padding) = 0;
  GRAFT_ARG(ExpandingArray<2>, output_padding) = 0;
  GRAFT_ARG(int64_t, groups) = 1;
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(ExpandingArray<2>, dilation) = 1;
};

// weight (in_channels, out_channels / groups, kH, kW), bias (out_channels) or undefined.
// PyTorch's initialisation, as Conv2d's: kaiming_uniform_(a = sqrt(5)) with the fan_in of this
// layout (weight.size(1) * kH * kW = out_channels / groups * kH * kW), bias ~ U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)).
class ConvTranspose2dImpl : public Cloneable<ConvTranspose2dImpl> {
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  ConvTranspose2dOptions options;
  Tensor weight;
  Tensor bias;
};
GRAFT_MODULE(ConvTranspose2d);

// ---- Conv1d, Conv3d, ConvTranspose1d ----
// Conv padding_mode: LibTorch's torch::kZeros (graft::kZeros), the one mode graft's convolutions take.
enum class ConvPaddingMode { Zeros };

// Options of Conv1d (D = 1) and Conv3d (D = 3), LibTorch's ConvOptions<D> spelling.
template <size_t D>
struct ConvNdOptions {
  ConvNdOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
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
using Conv1dOptions = ConvNdOptions<1>;
using Conv3dOptions = ConvNdOptions<3>;

// weight (out_channels, in_channels / groups, kL) / (..., kD, kH, kW), bias (out_channels) or
// undefined; PyTorch's initialisation, as Conv2d's (fan_in = in_channels / groups * kernel taps).
class Conv1dImpl : public Cloneable<Conv1dImpl> {
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv1dImpl(const Conv1dOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  Conv1dOptions options;
  Tensor weight;
  Tensor bias;
};
GRAFT_MODULE(Conv1d);

class Conv3dImpl : public Cloneable<Conv3dImpl> {
 public:
  Conv3dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<3> kernel_size)
      : Conv3dImpl(Conv3dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv3dImpl(const Conv3dOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  Conv3dOptions options;
  Tensor weight;
  Tensor bias;
};
GRAFT_MODULE(Conv3d);

struct ConvTranspose1dOptions {
  ConvTranspose1dOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  GRAFT_ARG(int64_t, in_channels);
  GRAFT_ARG(int64_t, out_channels);
  GRAFT_ARG(ExpandingArray<1>, kernel_size);
  GRAFT_ARG(ExpandingArray<1>, stride) = 1;
  GRAFT_ARG(ExpandingArray<1>, padding) = 0;
  GRAFT_ARG(ExpandingArray<1>, output_padding) = 0;
  GRAFT_ARG(int64_t, groups) = 1;
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(ExpandingArray<1>, dilation) = 1;
  GRAFT_ARG(ConvPaddingMode, padding_mode) = ConvPaddingMode::Zeros;
};

// weight (in_channels, out_channels / groups, kL), bias (out_channels) or undefined; initialised
// as ConvTranspose2d.
class ConvTranspose1dImpl : public Cloneable<ConvTranspose1dImpl> {
 public:
  ConvTranspose1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose1dImpl(const ConvTranspose1dOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  ConvTranspose1dOptions options;
  Tensor weight;
  Tensor bias;
};
GRAFT_MODULE(ConvTranspose1d);

}  // namespace graft::nn

namespace graft {
inline constexpr nn::ConvPaddingMode kZeros = nn::ConvPaddingMode::Zeros;
}  // namespace graft
