// Activation modules: ReLU, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, Softplus, ELU, Softmax, LogSoftmax, Softmax2d,
// SELU, Mish, Hardswish, Hardsigmoid, Hardtanh, ReLU6, GLU, Softmin, PReLU, RReLU, CELU, Softsign,
// Tanhshrink, Threshold, Softshrink, Hardshrink, LogSigmoid.
// Each forwards to graft::nn::functional with its options.
#pragma once

#include <cstdint>
#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"
#include "graft/ops/activation2.h"

namespace graft::nn {

struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  GRAFT_ARG(bool, inplace);
};
class ReLUImpl : public Cloneable<ReLUImpl> {
 public:
  explicit ReLUImpl(const ReLUOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  ReLUOptions options;
};
GRAFT_MODULE(ReLU);

struct LeakyReLUOptions {
  GRAFT_ARG(double, negative_slope) = 0.01;
  GRAFT_ARG(bool, inplace) = false;  // forward writes the result into its input and returns it
};
class LeakyReLUImpl : public Cloneable<LeakyReLUImpl> {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(Tensor input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;  // graft::nn::LeakyReLU(negative_slope=0.01[, inplace=true])
  LeakyReLUOptions options;
};
GRAFT_MODULE(LeakyReLU);

class SigmoidImpl : public Cloneable<SigmoidImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Sigmoid);

class TanhImpl : public Cloneable<TanhImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Tanh);

struct GELUOptions {
  GRAFT_ARG(std::string, approximate) = "none";  // "none" or "tanh"
};
class GELUImpl : public Cloneable<GELUImpl> {
 public:
  explicit GELUImpl(const GELUOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  GELUOptions options;
};
GRAFT_MODULE(GELU);

class SiLUImpl : public Cloneable<SiLUImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(SiLU);

struct SoftplusOptions {
  GRAFT_ARG(double, beta) = 1.0;
  GRAFT_ARG(double, threshold) = 20.0;
};
class SoftplusImpl : public Cloneable<SoftplusImpl> {
 public:
  explicit SoftplusImpl(const SoftplusOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  SoftplusOptions options;
};
GRAFT_MODULE(Softplus);

struct ELUOptions {
  GRAFT_ARG(double, alpha) = 1.0;
  GRAFT_ARG(bool, inplace) = false;  // forward writes the result into its input and returns it
};
class ELUImpl : public Cloneable<ELUImpl> {
 public:
  explicit ELUImpl(const ELUOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(Tensor input);
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;  // graft::nn::ELU(alpha=1[, inplace=true])
  ELUOptions options;
};
GRAFT_MODULE(ELU);

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
};
class SoftmaxImpl : public Cloneable<SoftmaxImpl> {
 public:
  explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions(dim)) {}
  explicit SoftmaxImpl(const SoftmaxOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  SoftmaxOptions options;
};
GRAFT_MODULE(Softmax);

struct LogSoftmaxOptions {
  LogSoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
};
class LogSoftmaxImpl : public Cloneable<LogSoftmaxImpl> {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : LogSoftmaxImpl(LogSoftmaxOptions(dim)) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  LogSoftmaxOptions options;
};
GRAFT_MODULE(LogSoftmax);

// Softmax2d: softmax over the channels (dim -3) at every position of an image batch (N, C, H, W)
// or of one image (C, H, W).
class Softmax2dImpl : public Cloneable<Softmax2dImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Softmax2d);

// ---- SELU, Mish, Hardswish, Hardsigmoid, Hardtanh, ReLU6, GLU, Softmin ----
// (LibTorch 1.13 has no Hardswish / Hardsigmoid modules; graft adds them, as PyTorch's Python has.)
using SELUOptions = functional::SELUFuncOptions;
using HardtanhOptions = functional::HardtanhFuncOptions;
using ReLU6Options = functional::ReLU6FuncOptions;
using GLUOptions = functional::GLUFuncOptions;
struct SoftminOptions {
  SoftminOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
};

class SELUImpl : public Cloneable<SELUImpl> {
 public:
  explicit SELUImpl(const SELUOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(Tensor input);
  std::string extra_repr() const override;
  SELUOptions options;
};
GRAFT_MODULE(SELU);

class MishImpl : public Cloneable<MishImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Mish);

class HardswishImpl : public Cloneable<HardswishImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Hardswish);

class HardsigmoidImpl : public Cloneable<HardsigmoidImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Hardsigmoid);

class HardtanhImpl : public Cloneable<HardtanhImpl> {
 public:
  explicit HardtanhImpl(const HardtanhOptions& options = {});
  void reset() override;  // checks max_val > min_val, as LibTorch's does
  Tensor forward(Tensor input);
  std::string extra_repr() const override;
  HardtanhOptions options;
};
GRAFT_MODULE(Hardtanh);

class ReLU6Impl : public Cloneable<ReLU6Impl> {
 public:
  explicit ReLU6Impl(const ReLU6Options& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(Tensor input);
  std::string extra_repr() const override;
  ReLU6Options options;
};
GRAFT_MODULE(ReLU6);

class GLUImpl : public Cloneable<GLUImpl> {
 public:
  explicit GLUImpl(const GLUOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  GLUOptions options;
};
GRAFT_MODULE(GLU);

class SoftminImpl : public Cloneable<SoftminImpl> {
 public:
  explicit SoftminImpl(int64_t dim) : SoftminImpl(SoftminOptions(dim)) {}
  explicit SoftminImpl(const SoftminOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  SoftminOptions options;
};
GRAFT_MODULE(Softmin);

// ---- PReLU, RReLU, CELU, Softsign, Tanhshrink, Threshold, Softshrink, Hardshrink, LogSigmoid ----
// (issue 32; src/nn/modules/activation2.cpp). LibTorch's options, forwards and printing.
struct PReLUOptions {
  GRAFT_ARG(int64_t, num_parameters) = 1;  // 1, or the input's channel count (dim 1)
  GRAFT_ARG(double, init) = 0.25;          // the weight's initial value
};
struct RReLUOptions {
  GRAFT_ARG(double, lower) = 1.0 / 8.0;
  GRAFT_ARG(double, upper) = 1.0 / 3.0;
  GRAFT_ARG(bool, inplace) = false;
};
using CELUOptions = functional::CELUFuncOptions;
using ThresholdOptions = functional::ThresholdFuncOptions;
using SoftshrinkOptions = functional::SoftshrinkFuncOptions;
using HardshrinkOptions = functional::HardshrinkFuncOptions;

// weight: (num_parameters), filled with init by reset() and reset_parameters().
class PReLUImpl : public Cloneable<PReLUImpl> {
 public:
  explicit PReLUImpl(const PReLUOptions& options = {});
  void reset() override;
  void reset_parameters();  // refills weight with options.init(), as PyTorch's Python module
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  PReLUOptions options;
  Tensor weight;
};
GRAFT_MODULE(PReLU);

// Samples the negative slopes in training mode (is_training()), leaky_relu in evaluation.
class RReLUImpl : public Cloneable<RReLUImpl> {
 public:
  explicit RReLUImpl(const RReLUOptions& options = {}) : options(options) {}
  void reset() override {}  // bounds are checked by the op (graft::rrelu), as LibTorch's
  Tensor forward(Tensor input);
  std::string extra_repr() const override;
  RReLUOptions options;
};
GRAFT_MODULE(RReLU);

class CELUImpl : public Cloneable<CELUImpl> {
 public:
  explicit CELUImpl(const CELUOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(Tensor input);
  std::string extra_repr() const override;
  CELUOptions options;
};
GRAFT_MODULE(CELU);

class SoftsignImpl : public Cloneable<SoftsignImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Softsign);

class TanhshrinkImpl : public Cloneable<TanhshrinkImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(Tanhshrink);

class ThresholdImpl : public Cloneable<ThresholdImpl> {
 public:
  ThresholdImpl(double threshold, double value) : ThresholdImpl(ThresholdOptions(threshold, value)) {}
  explicit ThresholdImpl(const ThresholdOptions& options) : options(options) {}
  void reset() override {}
  Tensor forward(Tensor input);
  std::string extra_repr() const override;
  ThresholdOptions options;
};
GRAFT_MODULE(Threshold);

class SoftshrinkImpl : public Cloneable<SoftshrinkImpl> {
 public:
  explicit SoftshrinkImpl(const SoftshrinkOptions& options = {}) : options(options) {}
  void reset() override {}  // lambda >= 0 is checked by the op (graft::softshrink), as LibTorch's
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  SoftshrinkOptions options;
};
GRAFT_MODULE(Softshrink);

class HardshrinkImpl : public Cloneable<HardshrinkImpl> {
 public:
  explicit HardshrinkImpl(const HardshrinkOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  HardshrinkOptions options;
};
GRAFT_MODULE(Hardshrink);

class LogSigmoidImpl : public Cloneable<LogSigmoidImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
};
GRAFT_MODULE(LogSigmoid);

}  // namespace graft::nn
