// Dropout: in training mode, zeroes each element with probability p (a mask drawn from the default
// generator, so graft::manual_seed makes it repeatable) and scales the rest by 1 / (1 - p); in eval
// mode it returns its input.
#pragma once

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: Dropout(0.2), as LibTorch
  GRAFT_ARG(double, p);
  GRAFT_ARG(bool, inplace) = false;
};

class DropoutImpl : public Cloneable<DropoutImpl> {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;

  DropoutOptions options;
};
GRAFT_MODULE(Dropout);

// Dropout2d: in training mode, zeroes whole channels of an image batch (N, C, H, W) (or of one image
// (C, H, W)), each with probability p, and scales the rest by 1 / (1 - p); identity in eval mode.
using Dropout2dOptions = DropoutOptions;

class Dropout2dImpl : public Cloneable<Dropout2dImpl> {
 public:
  explicit Dropout2dImpl(const Dropout2dOptions& options = {});
  void reset() override;
  Tensor forward(Tensor input);
  std::string extra_repr() const override;

  Dropout2dOptions options;
};
GRAFT_MODULE(Dropout2d);

// Dropout3d: as Dropout2d for volumes: whole channels of (N, C, D, H, W) (or of one volume
// (C, D, H, W)), each with probability p; identity in eval mode.
using Dropout3dOptions = DropoutOptions;

class Dropout3dImpl : public Cloneable<Dropout3dImpl> {
 public:
  explicit Dropout3dImpl(const Dropout3dOptions& options = {});
  void reset() override;
  Tensor forward(Tensor input);
  std::string extra_repr() const override;

  Dropout3dOptions options;
};
GRAFT_MODULE(Dropout3d);

// AlphaDropout (for SELU networks) and FeatureAlphaDropout (whole channels): functional::alpha_dropout
// / feature_alpha_dropout in training mode, identity in eval mode.
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;

class AlphaDropoutImpl : public Cloneable<AlphaDropoutImpl> {
 public:
  explicit AlphaDropoutImpl(const AlphaDropoutOptions& options = {});
  void reset() override;
  Tensor forward(Tensor input);
  std::string extra_repr() const override;

  AlphaDropoutOptions options;
};
GRAFT_MODULE(AlphaDropout);

class FeatureAlphaDropoutImpl : public Cloneable<FeatureAlphaDropoutImpl> {
 public:
  explicit FeatureAlphaDropoutImpl(const FeatureAlphaDropoutOptions& options = {});
  void reset() override;
  Tensor forward(Tensor input);
  std::string extra_repr() const override;

  FeatureAlphaDropoutOptions options;
};
GRAFT_MODULE(FeatureAlphaDropout);

}  // namespace graft::nn
