// Activation modules: ReLU, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, Softplus, ELU, Softmax, LogSoftmax.
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

}  // namespace graft::nn
