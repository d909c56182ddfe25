// Embedding: a lookup table of num_embeddings rows of size embedding_dim.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "graft/nn/functional.h"
#include "graft/nn/module.h"

namespace graft::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  GRAFT_ARG(int64_t, num_embeddings);
  GRAFT_ARG(int64_t, embedding_dim);
  // The row that stays zero and gets no gradient; negative counts from the end.
  GRAFT_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  // Rows that forward looks up with a norm_type-norm above max_norm are scaled down to it, in place.
  GRAFT_ARG(std::optional<double>, max_norm) = std::nullopt;
  GRAFT_ARG(double, norm_type) = 2.;
  // Each row's gradient divided by how often the input names it.
  GRAFT_ARG(bool, scale_grad_by_freq) = false;
  GRAFT_ARG(bool, sparse) = false;  // true is refused on forward: graft has no sparse gradients
  // Initial weight (num_embeddings, embedding_dim) instead of N(0, 1) draws.
  GRAFT_ARG(Tensor, _weight) = {};
};

struct EmbeddingFromPretrainedOptions {
  GRAFT_ARG(bool, freeze) = true;
  GRAFT_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  GRAFT_ARG(std::optional<double>, max_norm) = std::nullopt;
  GRAFT_ARG(double, norm_type) = 2.;
  GRAFT_ARG(bool, scale_grad_by_freq) = false;
  GRAFT_ARG(bool, sparse) = false;
};

// weight ~ N(0, 1) with the padding row zeroed (PyTorch's initialisation).
class EmbeddingImpl : public Cloneable<EmbeddingImpl> {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(EmbeddingOptions options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& indices);
  // PyTorch's: "10, 2, padding_idx=3, max_norm=2.0, norm_type=2.5, scale_grad_by_freq=True, sparse=True",
  // the optional parts only when set or not their defaults.
  std::string extra_repr() const override;
  // LibTorch 1.13's: graft::nn::Embedding(num_embeddings=10, embedding_dim=2, padding_idx=3,
  // max_norm=2, norm_type=2.5, scale_grad_by_freq=true, sparse=true), likewise.
  std::string libtorch_repr() const override;

  EmbeddingOptions options;
  Tensor weight;
};

class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  using ModuleHolder<EmbeddingImpl>::get;
  // An Embedding holding a copy of `embeddings` (2-D), frozen (no gradient) unless freeze(false).
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
};

// Embedding::from_pretrained, under graft's earlier name.
Embedding embedding_from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});

// ---- EmbeddingBag (issue 32; src/nn/modules/embedding_bag.cpp) ----
struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  GRAFT_ARG(int64_t, num_embeddings);
  GRAFT_ARG(int64_t, embedding_dim);
  // Rows that forward looks up with a norm_type-norm above max_norm are scaled down to it, in place.
  GRAFT_ARG(std::optional<double>, max_norm) = std::nullopt;
  GRAFT_ARG(double, norm_type) = 2.;
  GRAFT_ARG(bool, scale_grad_by_freq) = false;
  GRAFT_ARG(EmbeddingBagMode, mode) = kMean;  // kSum, kMean or kMax
  GRAFT_ARG(bool, sparse) = false;  // true is refused on forward: graft has no sparse gradients
  GRAFT_ARG(Tensor, _weight) = {};
  GRAFT_ARG(bool, include_last_offset) = false;
  // The row left out of every bag (and zero on initialisation); negative counts from the end.
  GRAFT_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

struct EmbeddingBagFromPretrainedOptions {
  GRAFT_ARG(bool, freeze) = true;
  GRAFT_ARG(std::optional<double>, max_norm) = std::nullopt;
  GRAFT_ARG(double, norm_type) = 2.;
  GRAFT_ARG(bool, scale_grad_by_freq) = false;
  GRAFT_ARG(EmbeddingBagMode, mode) = kMean;
  GRAFT_ARG(bool, sparse) = false;
  GRAFT_ARG(bool, include_last_offset) = false;
  GRAFT_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

// Sums, means or maxima of bags of embeddings (F::embedding_bag). weight ~ N(0, 1) with the padding
// row zeroed, as PyTorch's (LibTorch 1.13 leaves the padding row as drawn).
class EmbeddingBagImpl : public Cloneable<EmbeddingBagImpl> {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(EmbeddingBagOptions options);
  void reset() override;
  void reset_parameters();
  // input 1-D with offsets, or 2-D (bags, length) without; per_sample_weights with kSum only.
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});
  std::string extra_repr() const override;
  std::string libtorch_repr() const override;

  EmbeddingBagOptions options;
  Tensor weight;
};

class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder<EmbeddingBagImpl>::ModuleHolder;
  using ModuleHolder<EmbeddingBagImpl>::get;
  // An EmbeddingBag holding a copy of `embeddings` (2-D), frozen (no gradient) unless freeze(false).
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options = {});
};

}  // namespace graft::nn
