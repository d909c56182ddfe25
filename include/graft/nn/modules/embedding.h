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
  // Initial weight (num_embeddings, embedding_dim) instead of N(0, 1) draws.
  GRAFT_ARG(Tensor, _weight) = {};
};

struct EmbeddingFromPretrainedOptions {
  GRAFT_ARG(bool, freeze) = true;
  GRAFT_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
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
  std::string extra_repr() const override;

  EmbeddingOptions options;
  Tensor weight;
};
GRAFT_MODULE(Embedding);

// An Embedding holding a copy of `embeddings` (2-D); frozen (no gradient) unless freeze(false).
Embedding embedding_from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});

}  // namespace graft::nn
