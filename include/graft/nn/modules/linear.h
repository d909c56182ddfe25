// Linear, Identity, Flatten.
#pragma once

#include <cstdint>
#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  GRAFT_ARG(int64_t, in_features);
  GRAFT_ARG(int64_t, out_features);
  GRAFT_ARG(bool, bias) = true;
};

// y = x W^T + b; weight (out_features, in_features), bias (out_features) or undefined.
// PyTorch's initialisation: W ~ kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)),
// and b ~ U(-1/sqrt(in), 1/sqrt(in)).
class LinearImpl : public Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  LinearOptions options;
  Tensor weight;
  Tensor bias;
};
GRAFT_MODULE(Linear);

class IdentityImpl : public Cloneable<IdentityImpl> {
 public:
  IdentityImpl() = default;
  void reset() override {}
  Tensor forward(const Tensor& input) { return input; }
};
GRAFT_MODULE(Identity);

struct FlattenOptions {
  GRAFT_ARG(int64_t, start_dim) = 1;
  GRAFT_ARG(int64_t, end_dim) = -1;
};

// Flattens dims start_dim..end_dim into one: (N, C, H, W) -> (N, C*H*W) by default.
class FlattenImpl : public Cloneable<FlattenImpl> {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {}) : options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) { return input.flatten(options.start_dim(), options.end_dim()); }
  std::string extra_repr() const override;

  FlattenOptions options;
};
GRAFT_MODULE(Flatten);

// ---- Bilinear (issue 32; src/nn/modules/bilinear.cpp) ----
struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  GRAFT_ARG(int64_t, in1_features);
  GRAFT_ARG(int64_t, in2_features);
  GRAFT_ARG(int64_t, out_features);
  GRAFT_ARG(bool, bias) = true;
};

// y = x1^T A x2 + b (graft::bilinear): weight (out_features, in1_features, in2_features), bias
// (out_features) or undefined. PyTorch's initialisation: weight and bias ~ U(-1/sqrt(in1), 1/sqrt(in1)).
class BilinearImpl : public Cloneable<BilinearImpl> {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : BilinearImpl(BilinearOptions(in1_features, in2_features, out_features)) {}
  explicit BilinearImpl(const BilinearOptions& options);
  void reset() override;
  void reset_parameters();
  // input1 (..., in1_features), input2 (..., in2_features) -> (..., out_features).
  Tensor forward(const Tensor& input1, const Tensor& input2);
  std::string extra_repr() const override;

  BilinearOptions options;
  Tensor weight;
  Tensor bias;
};
GRAFT_MODULE(Bilinear);

}  // namespace graft::nn
