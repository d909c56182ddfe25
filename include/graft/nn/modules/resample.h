// Upsample, the padding layers (ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d, ConstantPad1d/2d/3d,
// ZeroPad2d) and PixelShuffle / PixelUnshuffle: modules around F::interpolate, F::pad and
// F::pixel_(un)shuffle, with no parameters. Paddings list (before, after) pairs from the last dim
// backwards: {left, right} in 1-D, {left, right, top, bottom} in 2-D, {left, right, top, bottom,
// front, back} in 3-D; one value pads every side.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

struct UpsampleOptions {
  using mode_t = InterpolateMode;
  // mode(kLinear): LibTorch's torch::kLinear, graft's Nonlinearity::Linear, is InterpolateMode::Linear.
  UpsampleOptions& mode(Nonlinearity m);
  GRAFT_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  GRAFT_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  GRAFT_ARG(mode_t, mode) = kNearest;
  GRAFT_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

// F::interpolate with the options (the scale factors reach the op, as recompute_scale_factor unset).
class UpsampleImpl : public Cloneable<UpsampleImpl> {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  UpsampleOptions options;
};
GRAFT_MODULE(Upsample);

template <size_t D>
struct ReflectionPadOptions {
  ReflectionPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<D * 2>, padding);
};
using ReflectionPad1dOptions = ReflectionPadOptions<1>;
using ReflectionPad2dOptions = ReflectionPadOptions<2>;
using ReflectionPad3dOptions = ReflectionPadOptions<3>;

template <size_t D>
struct ReplicationPadOptions {
  ReplicationPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<D * 2>, padding);
};
using ReplicationPad1dOptions = ReplicationPadOptions<1>;
using ReplicationPad2dOptions = ReplicationPadOptions<2>;
using ReplicationPad3dOptions = ReplicationPadOptions<3>;

template <size_t D>
struct ConstantPadOptions {
  ConstantPadOptions(ExpandingArray<D * 2> padding, double value) : padding_(padding), value_(value) {}
  GRAFT_ARG(ExpandingArray<D * 2>, padding);
  GRAFT_ARG(double, value);
};
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;
using ConstantPad3dOptions = ConstantPadOptions<3>;

struct ZeroPad2dOptions {
  ZeroPad2dOptions(ExpandingArray<4> padding) : padding_(padding) {}  // NOLINT
  GRAFT_ARG(ExpandingArray<4>, padding);
};

std::string pad_value_repr(double v);  // Python's repr of a float ("0.0", "3.5")
// LibTorch's pretty_print of a pad: "graft::nn::ReflectionPad3d(padding=[1, 1, 1, 1, 1, 1])", with
// ", value=3.5" (C++'s ostream form of the double) when value is given.
std::string libtorch_pad_repr(const char* name, const std::vector<int64_t>& padding, const double* value);

// One padding module: F::pad with a fixed mode (and value for the constant ones).
template <class Derived, class Options, PadMode Mode>
class PadImplBase : public Cloneable<Derived> {
 public:
  explicit PadImplBase(const Options& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) {
    functional::PadFuncOptions o(options.padding().vec());
    o.mode(Mode);
    if constexpr (requires { options.value(); }) o.value(options.value());
    return functional::pad(input, o);
  }
  // Python's repr: "(1, 1, 2, 0)", with ", value=..." for the constant pads.
  std::string extra_repr() const override {
    std::string s = "(";
    const auto v = options.padding().vec();
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    s += ")";
    if constexpr (requires { options.value(); }) s = "padding=" + s + ", value=" + pad_value_repr(options.value());
    return s;
  }

  Options options;
};

// Each constructs from its options or, as LibTorch's, from the padding (and value) directly.
#define GRAFT_PAD_MODULE(Name, Options, Mode, N)                                                       \
  class Name##Impl : public PadImplBase<Name##Impl, Options, Mode> {                                  \
   public:                                                                                            \
    explicit Name##Impl(const Options& options) : PadImplBase(options) {}                             \
    explicit Name##Impl(ExpandingArray<N> padding) : PadImplBase(Options(padding)) {}                 \
  };                                                                                                  \
  GRAFT_MODULE(Name)
#define GRAFT_CONSTANT_PAD_MODULE(Name, Options, N)                                                    \
  class Name##Impl : public PadImplBase<Name##Impl, Options, kConstant> {                             \
   public:                                                                                            \
    explicit Name##Impl(const Options& options) : PadImplBase(options) {}                             \
    Name##Impl(ExpandingArray<N> padding, double value) : PadImplBase(Options(padding, value)) {}     \
  };                                                                                                  \
  GRAFT_MODULE(Name)

// (N, C, W) or (C, W); padding {left, right}.
GRAFT_PAD_MODULE(ReflectionPad1d, ReflectionPad1dOptions, kReflect, 2);
GRAFT_PAD_MODULE(ReplicationPad1d, ReplicationPad1dOptions, kReplicate, 2);
GRAFT_CONSTANT_PAD_MODULE(ConstantPad1d, ConstantPad1dOptions, 2);
// (N, C, H, W) or (C, H, W); padding {left, right, top, bottom}.
GRAFT_PAD_MODULE(ReflectionPad2d, ReflectionPad2dOptions, kReflect, 4);
GRAFT_PAD_MODULE(ReplicationPad2d, ReplicationPad2dOptions, kReplicate, 4);
GRAFT_CONSTANT_PAD_MODULE(ConstantPad2d, ConstantPad2dOptions, 4);
GRAFT_PAD_MODULE(ZeroPad2d, ZeroPad2dOptions, kConstant, 4);
// (N, C, D, H, W) or (C, D, H, W); padding {left, right, top, bottom, front, back} (issue 32; F::pad's
// 3-D modes, Note [3-D pads from the 1-D and 2-D ones] in src/ops/resample.cpp). Printed in
// LibTorch's form here (libtorch_repr), the older pads in src/nn/modules/print_libtorch.cpp.
#define GRAFT_PAD3D_MODULE(Name, Options, Mode)                                                        \
  class Name##Impl : public PadImplBase<Name##Impl, Options, Mode> {                                  \
   public:                                                                                            \
    explicit Name##Impl(const Options& options) : PadImplBase(options) {}                             \
    explicit Name##Impl(ExpandingArray<6> padding) : PadImplBase(Options(padding)) {}                 \
    std::string libtorch_repr() const override {                                                      \
      return libtorch_pad_repr(#Name, options.padding().vec(), nullptr);                              \
    }                                                                                                 \
  };                                                                                                  \
  GRAFT_MODULE(Name)
GRAFT_PAD3D_MODULE(ReflectionPad3d, ReflectionPad3dOptions, kReflect);
GRAFT_PAD3D_MODULE(ReplicationPad3d, ReplicationPad3dOptions, kReplicate);
class ConstantPad3dImpl : public PadImplBase<ConstantPad3dImpl, ConstantPad3dOptions, kConstant> {
 public:
  explicit ConstantPad3dImpl(const ConstantPad3dOptions& options) : PadImplBase(options) {}
  ConstantPad3dImpl(ExpandingArray<6> padding, double value) : PadImplBase(ConstantPad3dOptions(padding, value)) {}
  std::string libtorch_repr() const override {
    const double v = options.value();
    return libtorch_pad_repr("ConstantPad3d", options.padding().vec(), &v);
  }
};
GRAFT_MODULE(ConstantPad3d);
#undef GRAFT_PAD3D_MODULE
#undef GRAFT_PAD_MODULE
#undef GRAFT_CONSTANT_PAD_MODULE

struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  GRAFT_ARG(int64_t, upscale_factor);
};
struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}  // NOLINT
  GRAFT_ARG(int64_t, downscale_factor);
};

// (*, C r^2, H, W) -> (*, C, H r, W r).
class PixelShuffleImpl : public Cloneable<PixelShuffleImpl> {
 public:
  explicit PixelShuffleImpl(const PixelShuffleOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  PixelShuffleOptions options;
};
GRAFT_MODULE(PixelShuffle);

// (*, C, H r, W r) -> (*, C r^2, H, W).
class PixelUnshuffleImpl : public Cloneable<PixelUnshuffleImpl> {
 public:
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  PixelUnshuffleOptions options;
};
GRAFT_MODULE(PixelUnshuffle);

}  // namespace graft::nn
