// graft::nn::init: weight initialisers, with PyTorch's formulas and LibTorch's spelling.
//
//   namespace init = graft::nn::init;
//   init::kaiming_normal_(conv->weight, 0.0, graft::kFanOut, graft::kReLU);
//   init::xavier_uniform_(fc->weight, init::calculate_gain("tanh"));
//   init::zeros_(fc->bias);
//
// Every initialiser runs under NoGradGuard, writes the tensor in place (views included) and
// returns it. The nonlinearity and the fan mode take the enum value (graft::kReLU, graft::kFanIn)
// or PyTorch's string ("relu", "fan_in"). Random draws come from the default generator (seed it
// with graft::manual_seed) unless a Generator* is passed last.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "graft/core/generator.h"
#include "graft/core/scalar.h"
#include "graft/core/tensor.h"

namespace graft {

enum class Nonlinearity : uint8_t {
  Linear, Conv1D, Conv2D, Conv3D, ConvTranspose1D, ConvTranspose2D, ConvTranspose3D, Sigmoid, Tanh, ReLU, LeakyReLU, SELU
};
inline constexpr Nonlinearity kLinear = Nonlinearity::Linear;
inline constexpr Nonlinearity kConv1D = Nonlinearity::Conv1D;
inline constexpr Nonlinearity kConv2D = Nonlinearity::Conv2D;
inline constexpr Nonlinearity kConv3D = Nonlinearity::Conv3D;
inline constexpr Nonlinearity kConvTranspose1D = Nonlinearity::ConvTranspose1D;
inline constexpr Nonlinearity kConvTranspose2D = Nonlinearity::ConvTranspose2D;
inline constexpr Nonlinearity kConvTranspose3D = Nonlinearity::ConvTranspose3D;
inline constexpr Nonlinearity kSigmoid = Nonlinearity::Sigmoid;
inline constexpr Nonlinearity kTanh = Nonlinearity::Tanh;
inline constexpr Nonlinearity kReLU = Nonlinearity::ReLU;
inline constexpr Nonlinearity kLeakyReLU = Nonlinearity::LeakyReLU;
inline constexpr Nonlinearity kSELU = Nonlinearity::SELU;

enum class FanMode : uint8_t { FanIn, FanOut };
inline constexpr FanMode kFanIn = FanMode::FanIn;
inline constexpr FanMode kFanOut = FanMode::FanOut;

const char* nonlinearity_name(Nonlinearity n);  // "leaky_relu", as PyTorch spells it

namespace nn::init {

// The enum, or PyTorch's name: "linear", "conv1d", ..., "conv_transpose3d", "sigmoid", "tanh",
// "relu", "leaky_relu", "selu" (an unknown name is a graft::Error).
class NonlinearityType {
 public:
  NonlinearityType(Nonlinearity n) : value_(n) {}  // NOLINT
  NonlinearityType(const std::string& name);       // NOLINT
  NonlinearityType(const char* name) : NonlinearityType(std::string(name)) {}  // NOLINT
  Nonlinearity value() const { return value_; }

 private:
  Nonlinearity value_;
};

// The enum, or "fan_in" / "fan_out".
class FanModeType {
 public:
  FanModeType(FanMode m) : value_(m) {}  // NOLINT
  FanModeType(const std::string& name);  // NOLINT
  FanModeType(const char* name) : FanModeType(std::string(name)) {}  // NOLINT
  FanMode value() const { return value_; }

 private:
  FanMode value_;
};

// The recommended gain: 1 for linear, conv and sigmoid; 5/3 for tanh; sqrt(2) for relu;
// sqrt(2 / (1 + param^2)) for leaky_relu (param = negative slope); 3/4 for selu.
double calculate_gain(NonlinearityType nonlinearity, double param = 0.01);

// (fan_in, fan_out) of a weight of at least 2 dims: size(1) * receptive field and size(0) *
// receptive field, where the receptive field is the product of the dims after the first two.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor uniform_(Tensor tensor, double low = 0.0, double high = 1.0, Generator* generator = nullptr);
Tensor normal_(Tensor tensor, double mean = 0.0, double std = 1.0, Generator* generator = nullptr);
Tensor constant_(Tensor tensor, const Scalar& value);
Tensor zeros_(Tensor tensor);
Tensor ones_(Tensor tensor);
// A 2-D tensor: ones on the diagonal, zeros elsewhere.
Tensor eye_(Tensor matrix);
// A 3-, 4- or 5-D conv weight that passes its input through (per group).
Tensor dirac_(Tensor tensor, int64_t groups = 1);

// Glorot: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)); N(0, gain^2 * 2 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0, Generator* generator = nullptr);
Tensor xavier_normal_(Tensor tensor, double gain = 1.0, Generator* generator = nullptr);

// He: std = calculate_gain(nonlinearity, a) / sqrt(fan); uniform over [-sqrt(3) std, sqrt(3) std].
Tensor kaiming_uniform_(Tensor tensor, double a = 0.0, FanModeType mode = kFanIn,
                        NonlinearityType nonlinearity = kLeakyReLU, Generator* generator = nullptr);
Tensor kaiming_normal_(Tensor tensor, double a = 0.0, FanModeType mode = kFanIn,
                       NonlinearityType nonlinearity = kLeakyReLU, Generator* generator = nullptr);

// A (semi-)orthogonal matrix (tensors of more dims are flattened to size(0) x rest), from the QR
// decomposition of a standard normal matrix, times gain: rows or columns are orthonormal.
Tensor orthogonal_(Tensor tensor, double gain = 1.0, Generator* generator = nullptr);

// N(mean, std^2) truncated to [a, b] (absolute bounds, as in PyTorch).
Tensor trunc_normal_(Tensor tensor, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                     Generator* generator = nullptr);

}  // namespace nn::init
}  // namespace graft
