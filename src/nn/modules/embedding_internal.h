// What Embedding and EmbeddingBag share (src/nn/modules/embedding.cpp): their options' checks and
// their weight. Internal to src/nn.
#pragma once

#include <cstdint>
#include <optional>

#include "graft/core/tensor.h"

namespace graft::nn::detail {

// Checks num_embeddings, embedding_dim and padding_idx for `module`; returns padding_idx counted
// from the start (a negative one counts from the end, as PyTorch's).
std::optional<int64_t> checked_embedding_options(int64_t num, int64_t dim, std::optional<int64_t> padding_idx,
                                                 const char* module);
// The module's weight: a copy of `given` (checked to be num x dim), or, when it is undefined, a
// new num x dim tensor filled by init_embedding_weight.
Tensor embedding_weight(const Tensor& given, int64_t num, int64_t dim, std::optional<int64_t> padding_idx,
                        const char* module);
// N(0, 1), the padding row zeroed (PyTorch's reset_parameters).
void init_embedding_weight(const Tensor& weight, std::optional<int64_t> padding_idx);
// max_norm's renormalisation (src/nn/modules/embedding_bag.cpp): the rows of weight that input
// names, with a norm_type-norm above max_norm, scaled down to it in place (no gradient recorded);
// `op` names the caller in errors.
void embedding_renorm_(const Tensor& weight, const Tensor& input, double max_norm, double norm_type, const char* op);

}  // namespace graft::nn::detail
