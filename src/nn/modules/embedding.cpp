// Embedding.
#include "graft/nn/modules/embedding.h"

#include <sstream>

#include "../../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/shape.h"
#include "graft/nn/init.h"
#include "embedding_internal.h"

namespace graft::nn {

namespace detail {

std::optional<int64_t> checked_embedding_options(int64_t num, int64_t dim, std::optional<int64_t> padding_idx,
                                                 const char* module) {
  GRAFT_CHECK(num >= 0 && dim >= 0, module, "non-negative num_embeddings and embedding_dim",
              std::to_string(num) + " and " + std::to_string(dim), "pass num_embeddings and embedding_dim >= 0");
  if (!padding_idx) return padding_idx;
  GRAFT_CHECK(*padding_idx < num && *padding_idx >= -num, module,
              "padding_idx within num_embeddings " + std::to_string(num), "padding_idx " + std::to_string(*padding_idx),
              "Padding_idx must be within num_embeddings; negative values count from the end");
  return *padding_idx < 0 ? *padding_idx + num : *padding_idx;
}

Tensor embedding_weight(const Tensor& given, int64_t num, int64_t dim, std::optional<int64_t> padding_idx,
                        const char* module) {
  if (given.defined()) {
    GRAFT_CHECK(given.dim() == 2 && given.size(0) == num && given.size(1) == dim, module,
                "_weight of shape " + shape_str({num, dim}), "shape " + shape_str(given.sizes()),
                "pass _weight of shape (num_embeddings, embedding_dim), or leave it unset");
    return given.detach().clone();
  }
  Tensor weight = graft::empty({num, dim});
  init_embedding_weight(weight, padding_idx);
  return weight;
}

void init_embedding_weight(const Tensor& weight, std::optional<int64_t> padding_idx) {
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}

}  // namespace detail

EmbeddingImpl::EmbeddingImpl(EmbeddingOptions options_) : options(std::move(options_)) {
  options.padding_idx(
      detail::checked_embedding_options(options.num_embeddings(), options.embedding_dim(), options.padding_idx(), "Embedding"));
  reset();
}

void EmbeddingImpl::reset() {
  weight = register_parameter("weight", detail::embedding_weight(options._weight(), options.num_embeddings(),
                                                                 options.embedding_dim(), options.padding_idx(), "Embedding"));
}

void EmbeddingImpl::reset_parameters() { detail::init_embedding_weight(weight, options.padding_idx()); }

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return functional::embedding(indices, weight,
                               functional::EmbeddingFuncOptions()
                                   .padding_idx(options.padding_idx())
                                   .max_norm(options.max_norm())
                                   .norm_type(options.norm_type())
                                   .scale_grad_by_freq(options.scale_grad_by_freq())
                                   .sparse(options.sparse()));
}

std::string EmbeddingImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  if (options.max_norm()) s += ", max_norm=" + graft::detail::py_repr(*options.max_norm());
  if (options.norm_type() != 2) s += ", norm_type=" + graft::detail::py_repr(options.norm_type());
  if (options.scale_grad_by_freq()) s += ", scale_grad_by_freq=True";
  if (options.sparse()) s += ", sparse=True";
  return s;
}

std::string EmbeddingImpl::libtorch_repr() const {
  std::ostringstream s;
  s << std::boolalpha << "graft::nn::Embedding(num_embeddings=" << options.num_embeddings()
    << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx()) s << ", padding_idx=" << *options.padding_idx();
  if (options.max_norm()) s << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2) s << ", norm_type=" << options.norm_type();
  if (options.scale_grad_by_freq()) s << ", scale_grad_by_freq=true";
  if (options.sparse()) s << ", sparse=true";
  s << ")";
  return s.str();
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  GRAFT_CHECK(embeddings.defined() && embeddings.dim() == 2, "Embedding::from_pretrained", "a 2-D tensor of embeddings",
              embeddings.defined() ? "shape " + shape_str(embeddings.sizes()) : "an undefined tensor",
              "pass a (num_embeddings, embedding_dim) matrix");
  Embedding e(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                  ._weight(embeddings)
                  .padding_idx(options.padding_idx())
                  .max_norm(options.max_norm())
                  .norm_type(options.norm_type())
                  .scale_grad_by_freq(options.scale_grad_by_freq())
                  .sparse(options.sparse()));
  e->weight.set_requires_grad(!options.freeze());
  return e;
}

Embedding embedding_from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  return Embedding::from_pretrained(embeddings, options);
}

}  // namespace graft::nn
