// Embedding.
#include "graft/nn/modules/embedding.h"

#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/shape.h"
#include "graft/nn/init.h"

namespace graft::nn {

EmbeddingImpl::EmbeddingImpl(EmbeddingOptions options_) : options(std::move(options_)) {
  const int64_t num = options.num_embeddings();
  GRAFT_CHECK(num >= 0 && options.embedding_dim() >= 0, "Embedding", "non-negative num_embeddings and embedding_dim",
              std::to_string(num) + " and " + std::to_string(options.embedding_dim()),
              "pass num_embeddings and embedding_dim >= 0");
  if (auto idx = options.padding_idx()) {
    GRAFT_CHECK(*idx < num && *idx >= -num, "Embedding", "padding_idx within num_embeddings " + std::to_string(num),
                "padding_idx " + std::to_string(*idx), "negative values count from the end");
    if (*idx < 0) options.padding_idx(*idx + num);
  }
  reset();
}

void EmbeddingImpl::reset() {
  const Tensor& given = options._weight();
  if (given.defined()) {
    GRAFT_CHECK(given.dim() == 2 && given.size(0) == options.num_embeddings() && given.size(1) == options.embedding_dim(),
                "Embedding", "_weight of shape " + shape_str({options.num_embeddings(), options.embedding_dim()}),
                "shape " + shape_str(given.sizes()),
                "pass _weight of shape (num_embeddings, embedding_dim), or leave it unset");
    weight = register_parameter("weight", given.detach().clone());
  } else {
    weight = register_parameter("weight", graft::empty({options.num_embeddings(), options.embedding_dim()}));
    reset_parameters();
  }
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (auto idx = options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *idx).zero_();
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return functional::embedding(indices, weight, functional::EmbeddingFuncOptions().padding_idx(options.padding_idx()));
}

std::string EmbeddingImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  return s;
}

Embedding embedding_from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  GRAFT_CHECK(embeddings.defined() && embeddings.dim() == 2, "Embedding::from_pretrained", "a 2-D tensor of embeddings",
              embeddings.defined() ? "shape " + shape_str(embeddings.sizes()) : "an undefined tensor",
              "pass a (num_embeddings, embedding_dim) matrix");
  Embedding e(EmbeddingOptions(embeddings.size(0), embeddings.size(1))._weight(embeddings).padding_idx(options.padding_idx()));
  e->weight.set_requires_grad(!options.freeze());
  return e;
}

}  // namespace graft::nn
