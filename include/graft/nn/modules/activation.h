// Activation modules: ReLU, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, Softplus, ELU, Softmax, LogSoftmax,
// SELU, Mish, Hardswish, Hardsigmoid, Hardtanh, ReLU6, GLU, Softmin.
// Each forwards to graft::nn::functional with its options.
#pragma once

#include <cstdint>
#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

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
};
class LeakyReLUImpl : public Cloneable<LeakyReLUImpl> {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
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
};
class ELUImpl : public Cloneable<ELUImpl> {
 public:
  explicit ELUImpl(const ELUOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
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

}  // namespace graft::nn
