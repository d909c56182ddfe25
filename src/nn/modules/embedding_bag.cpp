// EmbeddingBag (issue 32): its mode, F::embedding_bag (max_norm's renormalisation, then the op
// graft::embedding_bag of src/ops/embedding_bag.cpp) and the module.
#include <sstream>

#include "../../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/shape.h"
#include "graft/nn/init.h"
#include "graft/nn/modules/embedding.h"
#include "embedding_internal.h"

namespace graft {

EmbeddingBagMode::EmbeddingBagMode(Reduction reduction) : kind_(reduction == kSum ? Kind::Sum : Kind::Mean) {
  GRAFT_CHECK(reduction != kNone, "EmbeddingBag", "mode kSum, kMean or kMax", "kNone",
              "a bag reduces its rows to one: pick graft::kSum, graft::kMean or graft::kMax");
}

const char* EmbeddingBagMode::name() const {
  switch (kind_) {
    case Kind::Sum:
      return "sum";
    case Kind::Mean:
      return "mean";
    case Kind::Max:
      return "max";
  }
  return "mean";
}

namespace nn::detail {

// PyTorch's embedding_renorm_ (run by F.embedding / F.embedding_bag under no_grad): each row of
// weight that input names whose norm_type-norm exceeds max_norm is multiplied by
// max_norm / (norm + 1e-7). Written as one pass over all rows: the others are multiplied by exactly 1.
void embedding_renorm_(const Tensor& weight, const Tensor& input, double max_norm, double norm_type, const char* op) {
  GRAFT_CHECK(input.defined() && (input.dtype() == kInt64 || input.dtype() == kInt32), op, "int64 or int32 indices",
              input.defined() ? std::string("a ") + dtype_name(input.dtype()) + " input" : "an undefined input",
              "convert the indices with .to(graft::kInt64)");
  GRAFT_CHECK(weight.defined() && weight.dim() == 2 && weight.is_floating_point(), op,
              "a floating-point 2-D weight (num_embeddings, embedding_dim)",
              weight.defined()
                  ? "a " + std::string(dtype_name(weight.dtype())) + " weight of shape " + shape_str(weight.sizes())
                  : "an undefined weight",
              "pass a float32 or float64 weight of shape (num_embeddings, embedding_dim)");
  if (weight.is_meta() || input.is_meta() || input.numel() == 0) return;  // Note [Meta device]: no values
  NoGradGuard no_grad;
  const int64_t num = weight.size(0);
  const Tensor ids = input.detach().reshape({-1}).to(kInt64);
  const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
  GRAFT_CHECK(lo >= 0 && hi < num, op, "indices in [0, " + std::to_string(num) + ")",
              "index " + std::to_string(lo < 0 ? lo : hi) + ", out of range for num_embeddings " + std::to_string(num),
              "index out of range: every index picks a row of the weight");
  const Tensor used = gt(zeros({num}, weight.dtype()).index_add(0, ids, ones({ids.numel()}, weight.dtype())), 0);
  const Tensor norms = weight.detach().norm(norm_type, {1});
  const Tensor scale = where(logical_and(used, gt(norms, max_norm)), rdiv(norms + 1e-7, max_norm), 1.0);
  Tensor w = weight;
  w.mul_(scale.unsqueeze(1));
}

}  // namespace nn::detail

namespace nn::functional {

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options) {
  // PyTorch's F.embedding_bag's own checks, before the renormalisation writes to weight.
  GRAFT_CHECK(!(input.defined() && input.dim() == 2 && options.offsets().defined()), "embedding_bag",
              "no offsets with a 2-D input", "offsets of shape " + shape_str(options.offsets().sizes()),
              "a 2-D input is a batch of bags of one length: leave offsets undefined, or flatten the input");
  GRAFT_CHECK(!(input.defined() && input.dim() == 1 && !options.offsets().defined()), "embedding_bag",
              "offsets with a 1-D input", "undefined offsets",
              "pass where each bag starts (offsets(graft::tensor<int64_t>({0, ...}))), or a 2-D input of bags");
  if (options.max_norm())
    detail::embedding_renorm_(weight, input, *options.max_norm(), options.norm_type(), "embedding_bag");
  return graft::embedding_bag(weight, input, options.offsets(), options.scale_grad_by_freq(),
                              options.mode().aten_mode(), options.sparse(), options.per_sample_weights(),
                              options.include_last_offset(), options.padding_idx());
}

}  // namespace nn::functional

namespace nn {

EmbeddingBagImpl::EmbeddingBagImpl(EmbeddingBagOptions options_) : options(std::move(options_)) {
  options.padding_idx(detail::checked_embedding_options(options.num_embeddings(), options.embedding_dim(),
                                                        options.padding_idx(), "EmbeddingBag"));
  reset();
}

void EmbeddingBagImpl::reset() {
  weight = register_parameter("weight", detail::embedding_weight(options._weight(), options.num_embeddings(),
                                                                 options.embedding_dim(), options.padding_idx(),
                                                                 "EmbeddingBag"));
}

void EmbeddingBagImpl::reset_parameters() { detail::init_embedding_weight(weight, options.padding_idx()); }

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return functional::embedding_bag(input, weight,
                                   functional::EmbeddingBagFuncOptions()
                                       .offsets(offsets)
                                       .max_norm(options.max_norm())
                                       .norm_type(options.norm_type())
                                       .scale_grad_by_freq(options.scale_grad_by_freq())
                                       .mode(options.mode())
                                       .sparse(options.sparse())
                                       .per_sample_weights(per_sample_weights)
                                       .include_last_offset(options.include_last_offset())
                                       .padding_idx(options.padding_idx()));
}

// PyTorch's: "10, 3, max_norm=2.0, norm_type=3.0, scale_grad_by_freq=True, mode=max, padding_idx=4",
// the optional parts only when set or not their defaults; sparse and include_last_offset not shown.
std::string EmbeddingBagImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.max_norm()) s += ", max_norm=" + graft::detail::py_repr(*options.max_norm());
  if (options.norm_type() != 2) s += ", norm_type=" + graft::detail::py_repr(options.norm_type());
  if (options.scale_grad_by_freq()) s += ", scale_grad_by_freq=True";
  s += std::string(", mode=") + options.mode().name();
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  return s;
}

// LibTorch 1.13's: graft::nn::EmbeddingBag(num_embeddings=10, embedding_dim=3, max_norm=2.5,
// norm_type=3, scale_grad_by_freq=true, sparse=true, mode=kMax, include_last_offset=true,
// padding_idx=4), each optional part only when set or not its default (mode kMean is not shown).
std::string EmbeddingBagImpl::libtorch_repr() const {
  std::ostringstream s;
  s << std::boolalpha << "graft::nn::EmbeddingBag(num_embeddings=" << options.num_embeddings()
    << ", embedding_dim=" << options.embedding_dim();
  if (options.max_norm()) s << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2) s << ", norm_type=" << options.norm_type();
  if (options.scale_grad_by_freq()) s << ", scale_grad_by_freq=true";
  if (options.sparse()) s << ", sparse=true";
  if (options.mode().kind() != EmbeddingBagMode::Kind::Mean)
    s << ", mode=" << (options.mode().kind() == EmbeddingBagMode::Kind::Sum ? "kSum" : "kMax");
  if (options.include_last_offset()) s << ", include_last_offset=true";
  if (options.padding_idx()) s << ", padding_idx=" << *options.padding_idx();
  s << ")";
  return s.str();
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options) {
  GRAFT_CHECK(embeddings.defined() && embeddings.dim() == 2, "EmbeddingBag::from_pretrained",
              "a 2-D tensor of embeddings",
              embeddings.defined() ? "shape " + shape_str(embeddings.sizes()) : "an undefined tensor",
              "pass a (num_embeddings, embedding_dim) matrix");
  EmbeddingBag bag(EmbeddingBagOptions(embeddings.size(0), embeddings.size(1))
                       ._weight(embeddings)
                       .max_norm(options.max_norm())
                       .norm_type(options.norm_type())
                       .scale_grad_by_freq(options.scale_grad_by_freq())
                       .mode(options.mode())
                       .sparse(options.sparse())
                       .include_last_offset(options.include_last_offset())
                       .padding_idx(options.padding_idx()));
  bag->weight.set_requires_grad(!options.freeze());
  return bag;
}

}  // namespace nn
}  // namespace graft
