// MultiheadAttention and the Transformer layers (graft/nn/modules/transformer.h).
#include "graft/nn/modules/transformer.h"

#include <cmath>
#include <limits>

#include "../../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/nn/functional.h"
#include "graft/ops/attention.h"
#include "graft/ops/ops.h"

namespace graft::nn {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string str(const char* s) { return s; }

// A MultiheadAttention mask in scaled_dot_product_attention's convention, shaped to broadcast
// against (N, H, L, S): bool true = may attend, float = added. attn_mask (L, S) or (N H, L, S),
// key_padding_mask (N, S); both in PyTorch's MultiheadAttention convention (bool true = masked).
Tensor sdpa_mask(const Tensor& attn_mask, const Tensor& key_padding_mask, int64_t N, int64_t H, int64_t L, int64_t S,
                 DType dtype) {
  const char* op = "MultiheadAttention";
  Tensor am, kpm;
  if (attn_mask.defined()) {
    GRAFT_CHECK((attn_mask.dim() == 2 && attn_mask.size(0) == L && attn_mask.size(1) == S) ||
                    (attn_mask.dim() == 3 && attn_mask.size(0) == N * H && attn_mask.size(1) == L && attn_mask.size(2) == S),
                op, "attn_mask of shape " + shape_str({L, S}) + " or " + shape_str({N * H, L, S}),
                "attn_mask of shape " + shape_str(attn_mask.sizes()),
                "attn_mask is (target length, source length), or one such mask per batch element and head");
    am = attn_mask.dim() == 3 ? attn_mask.view({N, H, L, S}) : attn_mask;
  }
  if (key_padding_mask.defined()) {
    GRAFT_CHECK(key_padding_mask.dim() == 2 && key_padding_mask.size(0) == N && key_padding_mask.size(1) == S, op,
                "key_padding_mask of shape " + shape_str({N, S}),
                "key_padding_mask of shape " + shape_str(key_padding_mask.sizes()),
                "key_padding_mask is (batch, source length), true where the key is padding");
    kpm = key_padding_mask.view({N, 1, 1, S});
  }
  for (const Tensor* m : {&am, &kpm})
    if (m->defined())
      GRAFT_CHECK(m->dtype() == kBool || m->dtype() == dtype, op, "a bool mask or one of the query's dtype (" +
                  str(dtype_name(dtype)) + ")", str("a mask of dtype ") + dtype_name(m->dtype()),
                  "a bool mask marks masked positions with true; a float mask is added to the scores");
  auto allowed = [](const Tensor& m) { return m.logical_not(); };
  auto additive = [dtype, allowed](const Tensor& m) {
    return m.dtype() == kBool ? graft::detail::attention_additive_mask(allowed(m), dtype) : m;
  };
  if (!am.defined() && !kpm.defined()) return {};
  if (!kpm.defined()) return am.dtype() == kBool ? allowed(am) : am;
  if (!am.defined()) return kpm.dtype() == kBool ? allowed(kpm) : kpm;
  if (am.dtype() == kBool && kpm.dtype() == kBool) return allowed(am).logical_and(allowed(kpm));
  return additive(am) + additive(kpm);
}

// Whether attn_mask (MultiheadAttention's convention) is exactly the causal mask of a square (L, L):
// bool true above the diagonal, or float 0 on and below it and -inf above (what
// generate_square_subsequent_mask makes). One pass over it, stopping at the first other value.
bool is_causal_mask(const Tensor& m, int64_t L, int64_t S) {
  if (!m.defined() || m.dim() != 2 || L != S || m.size(0) != L || m.size(1) != S || m.requires_grad()) return false;
  if (m.dtype() != kBool && m.dtype() != kFloat32 && m.dtype() != kFloat64) return false;
  if (m.is_meta()) return false;  // no values to recognise (Note [Meta device]): the mask is used as given
  const Tensor c = m.contiguous();
  auto scan = [&](const auto* p, auto masked, auto open) {
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j)
        if (p[i * S + j] != (j > i ? masked : open)) return false;
    return true;
  };
  if (m.dtype() == kBool) return scan(c.data_ptr<bool>(), true, false);
  if (m.dtype() == kFloat32) return scan(c.data_ptr<float>(), -std::numeric_limits<float>::infinity(), 0.0f);
  return scan(c.data_ptr<double>(), -kInf, 0.0);
}

// `mask` (undefined, bool: true = may attend, or additive) joined with the causal mask of (L, S):
// query i attends to keys 0 .. i (the top-left diagonal, as scaled_dot_product_attention's is_causal).
Tensor with_causal(const Tensor& mask, int64_t L, int64_t S, DType dtype) {
  const Tensor causal = arange(L, kInt64).unsqueeze(1).ge(arange(S, kInt64).unsqueeze(0));  // (L, S)
  if (!mask.defined()) return causal;
  if (mask.dtype() == kBool) return mask.logical_and(causal);
  return mask + graft::detail::attention_additive_mask(causal, dtype);
}

// (T, N, E) -> (N, H, T, d)
Tensor split_heads(const Tensor& x, int64_t H, int64_t d) {
  return x.reshape({x.size(0), x.size(1), H, d}).permute({1, 2, 0, 3});
}

// Appends one step along dim 0 of a (S, N, E) sequence.
Tensor append_step(const Tensor& x, const Tensor& step) { return cat({x, step.expand({1, x.size(1), x.size(2)})}, 0); }

// Pads a mask's last dim with one unmasked column.
Tensor pad_mask(const Tensor& m) {
  if (!m.defined()) return m;
  std::vector<int64_t> shape(m.sizes().begin(), m.sizes().end());
  shape.back() = 1;
  return cat({m, zeros(shape, m.dtype())}, -1);
}

}  // namespace

// ---- MultiheadAttention ----

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_) : options(options_) {
  GRAFT_CHECK(options.embed_dim() > 0 && options.num_heads() > 0 && options.embed_dim() % options.num_heads() == 0,
              "MultiheadAttention", "embed_dim divisible by num_heads (both > 0)",
              "embed_dim " + std::to_string(options.embed_dim()) + ", num_heads " + std::to_string(options.num_heads()),
              "each head gets embed_dim / num_heads features");
  reset();
}

void MultiheadAttentionImpl::reset() {
  const int64_t E = options.embed_dim();
  _qkv_same_embed_dim = options.kdim() == E && options.vdim() == E;
  head_dim = E / options.num_heads();
  if (_qkv_same_embed_dim) {
    in_proj_weight = register_parameter("in_proj_weight", graft::empty({3 * E, E}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", graft::empty({E, E}));
    k_proj_weight = register_parameter("k_proj_weight", graft::empty({E, options.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", graft::empty({E, options.vdim()}));
  }
  in_proj_bias = register_parameter("in_proj_bias", options.bias() ? graft::empty({3 * E}) : Tensor(), options.bias());
  out_proj = register_module("out_proj", Linear(LinearOptions(E, E).bias(options.bias())));
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", graft::empty({1, 1, E}));
    bias_v = register_parameter("bias_v", graft::empty({1, 1, E}));
  } else {
    bias_k = Tensor();
    bias_v = Tensor();
  }
  _reset_parameters();
}

void MultiheadAttentionImpl::_reset_parameters() {
  NoGradGuard ng;
  if (_qkv_same_embed_dim) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::constant_(in_proj_bias, 0.0);
    init::constant_(out_proj->bias, 0.0);
  }
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query_in, const Tensor& key_in,
                                                           const Tensor& value_in, const Tensor& key_padding_mask_in,
                                                           bool need_weights, const Tensor& attn_mask_in,
                                                           bool average_attn_weights, bool is_causal) {
  const char* op = "MultiheadAttention";
  const int64_t E = options.embed_dim(), H = options.num_heads();
  GRAFT_CHECK(query_in.defined() && key_in.defined() && value_in.defined(), op, "defined query, key and value",
              "an undefined tensor", "");
  const bool batched = query_in.dim() == 3;
  GRAFT_CHECK((query_in.dim() == 3 || query_in.dim() == 2) && key_in.dim() == query_in.dim() &&
                  value_in.dim() == query_in.dim(),
              op, "query, key and value all 3-dim (batched) or all 2-dim (unbatched)",
              shape_str(query_in.sizes()) + ", " + shape_str(key_in.sizes()) + " and " + shape_str(value_in.sizes()),
              options.batch_first() ? "batched inputs are (N, L, E)" : "batched inputs are (L, N, E)");
  // Work in (L, N, E).
  auto to_lne = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(1);
    return options.batch_first() ? t.transpose(0, 1) : t;
  };
  const bool self_attention = query_in.is_same(key_in) && key_in.is_same(value_in);
  Tensor query = to_lne(query_in), key = to_lne(key_in), value = to_lne(value_in);
  Tensor key_padding_mask = key_padding_mask_in.defined() && !batched ? key_padding_mask_in.unsqueeze(0) : key_padding_mask_in;
  Tensor attn_mask = attn_mask_in;
  const int64_t L = query.size(0), N = query.size(1);
  GRAFT_CHECK(query.size(2) == E && key.size(2) == options.kdim() && value.size(2) == options.vdim(), op,
              "query, key and value features of " + std::to_string(E) + ", " + std::to_string(options.kdim()) + " and " +
                  std::to_string(options.vdim()) + " (embed_dim, kdim, vdim)",
              shape_str(query_in.sizes()) + ", " + shape_str(key_in.sizes()) + " and " + shape_str(value_in.sizes()),
              "the last dim is the feature dim");
  GRAFT_CHECK(key.size(0) == value.size(0) && key.size(1) == N && value.size(1) == N, op,
              "key and value of one source length and the query's batch size",
              shape_str(query_in.sizes()) + ", " + shape_str(key_in.sizes()) + " and " + shape_str(value_in.sizes()), "");

  // The input projections.
  Tensor q, k, v;
  const Tensor b = in_proj_bias;
  auto bias_part = [&](int64_t i) { return b.defined() ? b.narrow(0, i * E, E) : Tensor(); };
  if (_qkv_same_embed_dim && self_attention) {
    const auto qkv = functional::linear(query, in_proj_weight, b).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else if (_qkv_same_embed_dim) {
    q = functional::linear(query, in_proj_weight.narrow(0, 0, E), bias_part(0));
    k = functional::linear(key, in_proj_weight.narrow(0, E, E), bias_part(1));
    v = functional::linear(value, in_proj_weight.narrow(0, 2 * E, E), bias_part(2));
  } else {
    q = functional::linear(query, q_proj_weight, bias_part(0));
    k = functional::linear(key, k_proj_weight, bias_part(1));
    v = functional::linear(value, v_proj_weight, bias_part(2));
  }
  if (bias_k.defined()) {
    k = append_step(k, bias_k);
    v = append_step(v, bias_v);
    attn_mask = pad_mask(attn_mask);
    key_padding_mask = pad_mask(key_padding_mask);
  }
  Tensor qh = split_heads(q, H, head_dim), kh = split_heads(k, H, head_dim), vh = split_heads(v, H, head_dim);
  if (options.add_zero_attn()) {
    kh = cat({kh, zeros({N, H, 1, head_dim}, kh.dtype())}, 2);
    vh = cat({vh, zeros({N, H, 1, head_dim}, vh.dtype())}, 2);
    attn_mask = pad_mask(attn_mask);
    key_padding_mask = pad_mask(key_padding_mask);
  }
  const int64_t S = kh.size(2);
  // The causal mask given as a mask runs as is_causal, so that the kernel skips the tiles above the
  // diagonal instead of adding -inf to them (PyTorch 2.x's layers detect it too).
  if (!is_causal && !need_weights && !key_padding_mask.defined() && is_causal_mask(attn_mask, L, S)) {
    attn_mask = Tensor();
    is_causal = true;
  }
  Tensor mask = sdpa_mask(attn_mask, key_padding_mask, N, H, L, S, q.dtype());
  const double p = is_training() ? options.dropout() : 0.0;
  // is_causal with no other mask goes to the kernel as is (it skips the tiles above the diagonal);
  // with one, or for the weights, the causal mask joins it.
  const bool causal_core = is_causal && !mask.defined() && !need_weights;
  if (is_causal && !causal_core) mask = with_causal(mask, L, S, q.dtype());

  Tensor out, weights;  // out (N, H, L, d)
  if (!need_weights) {
    out = attention_core ? attention_core(qh, kh, vh, mask, p, causal_core)
                         : scaled_dot_product_attention(qh, kh, vh, mask.defined() ? std::optional<Tensor>(mask)
                                                                                   : std::nullopt,
                                                        p, causal_core);
  } else {
    // The weights are asked for: the op's plain formula, keeping the probabilities (N, H, L, S).
    weights = graft::detail::attention_probs(qh, kh, mask, /*is_causal=*/false,
                                             1.0 / std::sqrt(static_cast<double>(head_dim)));
    const Tensor w = p > 0 ? graft::dropout(weights, p, true) : weights;
    out = matmul(w, vh);
    if (average_attn_weights) weights = weights.mean({1});
    if (!batched) weights = weights.squeeze(0);
  }
  // (N, H, L, d) -> (L, N, E), then the output projection.
  out = out_proj->forward(out.permute({2, 0, 1, 3}).reshape({L, N, E}));
  if (!batched) out = out.squeeze(1);
  else if (options.batch_first()) out = out.transpose(0, 1);
  return {out, weights};
}

std::string MultiheadAttentionImpl::extra_repr() const {
  return "embed_dim=" + std::to_string(options.embed_dim()) + ", num_heads=" + std::to_string(options.num_heads()) +
         ", dropout=" + graft::detail::py_repr(options.dropout()) + ", batch_first=" +
         graft::detail::py_bool(options.batch_first());
}

// ---- activations ----

TransformerActivation::TransformerActivation(Nonlinearity relu) : kind_(Kind::kReLU) {
  GRAFT_CHECK(relu == Nonlinearity::ReLU, "TransformerActivation", "graft::kReLU, graft::kGELU or a function",
              str("graft::k") + nonlinearity_name(relu), "pass a function for other activations");
}

Tensor TransformerActivation::operator()(const Tensor& x) const {
  switch (kind_) {
    case Kind::kReLU: return graft::relu(x);
    case Kind::kGELU: return graft::gelu(x);
    case Kind::kFunction: break;
  }
  return f_(x);
}

std::string TransformerActivation::name() const {
  return kind_ == Kind::kReLU ? "relu" : kind_ == Kind::kGELU ? "gelu" : "<function>";
}

// ---- the layers ----

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options_)
    : options(options_) {
  reset();
}

void TransformerEncoderLayerImpl::reset() {
  const auto& o = options;
  self_attn = register_module("self_attn", MultiheadAttention(MultiheadAttentionOptions(o.d_model(), o.nhead())
                                                                   .dropout(o.dropout())
                                                                   .batch_first(o.batch_first())));
  linear1 = register_module("linear1", Linear(o.d_model(), o.dim_feedforward()));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(o.dim_feedforward(), o.d_model()));
  norm1 = register_module("norm1", LayerNorm(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps())));
  norm2 = register_module("norm2", LayerNorm(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps())));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
}

void TransformerEncoderLayerImpl::reset_parameters() {
  self_attn->_reset_parameters();
  linear1->reset_parameters();
  linear2->reset_parameters();
  norm1->reset_parameters();
  norm2->reset_parameters();
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
  auto sa = [&](const Tensor& x) {
    return dropout1->forward(
        std::get<0>(self_attn->forward(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    return dropout2->forward(linear2->forward(dropout->forward(options.activation()(linear1->forward(x)))));
  };
  Tensor x = src;
  if (options.norm_first()) {
    x = x + sa(norm1->forward(x));
    return x + ff(norm2->forward(x));
  }
  x = norm1->forward(x + sa(x));
  return norm2->forward(x + ff(x));
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options_)
    : options(options_) {
  reset();
}

void TransformerDecoderLayerImpl::reset() {
  const auto& o = options;
  auto mha = [&] {
    return MultiheadAttention(
        MultiheadAttentionOptions(o.d_model(), o.nhead()).dropout(o.dropout()).batch_first(o.batch_first()));
  };
  auto norm = [&] { return LayerNorm(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps())); };
  self_attn = register_module("self_attn", mha());
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  norm1 = register_module("norm1", norm());
  multihead_attn = register_module("multihead_attn", mha());
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
  norm2 = register_module("norm2", norm());
  linear1 = register_module("linear1", Linear(o.d_model(), o.dim_feedforward()));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(o.dim_feedforward(), o.d_model()));
  dropout3 = register_module("dropout3", Dropout(o.dropout()));
  norm3 = register_module("norm3", norm());
}

void TransformerDecoderLayerImpl::reset_parameters() {
  self_attn->_reset_parameters();
  multihead_attn->_reset_parameters();
  linear1->reset_parameters();
  linear2->reset_parameters();
  norm1->reset_parameters();
  norm2->reset_parameters();
  norm3->reset_parameters();
}

Tensor TransformerDecoderLayerImpl::forward(Tensor tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                            bool memory_is_causal) {
  auto sa = [&](const Tensor& x) {
    return dropout1->forward(
        std::get<0>(self_attn->forward(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal)));
  };
  auto mha = [&](const Tensor& x) {
    return dropout2->forward(std::get<0>(multihead_attn->forward(x, memory, memory, memory_key_padding_mask, false,
                                                                 memory_mask, true, memory_is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    return dropout3->forward(linear2->forward(dropout->forward(options.activation()(linear1->forward(x)))));
  };
  Tensor x = std::move(tgt);
  if (options.norm_first()) {
    x = x + sa(norm1->forward(x));
    x = x + mha(norm2->forward(x));
    return x + ff(norm3->forward(x));
  }
  x = norm1->forward(x + sa(x));
  x = norm2->forward(x + mha(x));
  return norm3->forward(x + ff(x));
}

// ---- stacks ----

namespace {
// A module's clone as its holder type.
template <class Holder>
Holder clone_of(const Holder& m) {
  return Holder(std::dynamic_pointer_cast<typename Holder::ContainedType>(m->clone()));
}
void check_layers(const void* layer, int64_t n, const char* op) {
  GRAFT_CHECK(layer != nullptr, op, "a layer to clone", "an empty layer holder", "pass a layer or its options");
  GRAFT_CHECK(n >= 0, op, "num_layers >= 0", std::to_string(n), "");
}
// An encoder's or decoder's submodules: `layers` (n clones of layer) and, when given, `norm`.
template <class Layer>
void build_stack(Module& self, ModuleList& layers, AnyModule& norm, const Layer& layer, int64_t n, const AnyModule& given_norm) {
  layers = self.register_module("layers", ModuleList());
  for (int64_t i = 0; i < n; ++i) layers->push_back(clone_of(layer));
  if (!given_norm.is_empty()) {
    norm = given_norm.clone();
    self.register_module("norm", norm.ptr());
  }
}
}  // namespace

TransformerEncoderImpl::TransformerEncoderImpl(TransformerEncoderOptions options_) : options(std::move(options_)) {
  check_layers(options.encoder_layer().get(), options.num_layers(), "TransformerEncoder");
  reset();
}

void TransformerEncoderImpl::reset() {
  build_stack(*this, layers, norm, options.encoder_layer(), options.num_layers(), options.norm());
}

void TransformerEncoderImpl::reset_parameters() {
  for (size_t i = 0; i < layers->size(); ++i) layers->at<TransformerEncoderLayerImpl>(i).reset_parameters();
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask,
                                       bool is_causal) {
  Tensor x = src;
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->at<TransformerEncoderLayerImpl>(i).forward(x, src_mask, src_key_padding_mask, is_causal);
  return norm.is_empty() ? x : norm.forward(x);
}

TransformerDecoderImpl::TransformerDecoderImpl(TransformerDecoderOptions options_) : options(std::move(options_)) {
  check_layers(options.decoder_layer().get(), options.num_layers(), "TransformerDecoder");
  reset();
}

void TransformerDecoderImpl::reset() {
  build_stack(*this, layers, norm, options.decoder_layer(), options.num_layers(), options.norm());
}

void TransformerDecoderImpl::reset_parameters() {
  for (size_t i = 0; i < layers->size(); ++i) layers->at<TransformerDecoderLayerImpl>(i).reset_parameters();
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                       bool memory_is_causal) {
  Tensor x = tgt;
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->at<TransformerDecoderLayerImpl>(i).forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                                             memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  return norm.is_empty() ? x : norm.forward(x);
}

// ---- Transformer ----

TransformerImpl::TransformerImpl(TransformerOptions options_) : options(std::move(options_)) { reset(); }

void TransformerImpl::reset() {
  const auto& o = options;
  auto norm = [&] { return AnyModule(LayerNorm(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()))); };
  encoder = register_module(
      "encoder", TransformerEncoder(TransformerEncoderOptions(TransformerEncoderLayerOptions(o.d_model(), o.nhead())
                                                                  .dim_feedforward(o.dim_feedforward())
                                                                  .dropout(o.dropout())
                                                                  .activation(o.activation())
                                                                  .layer_norm_eps(o.layer_norm_eps())
                                                                  .batch_first(o.batch_first())
                                                                  .norm_first(o.norm_first()),
                                                              o.num_encoder_layers())
                                        .norm(norm())));
  decoder = register_module(
      "decoder", TransformerDecoder(TransformerDecoderOptions(TransformerDecoderLayerOptions(o.d_model(), o.nhead())
                                                                  .dim_feedforward(o.dim_feedforward())
                                                                  .dropout(o.dropout())
                                                                  .activation(o.activation())
                                                                  .layer_norm_eps(o.layer_norm_eps())
                                                                  .batch_first(o.batch_first())
                                                                  .norm_first(o.norm_first()),
                                                              o.num_decoder_layers())
                                        .norm(norm())));
  reset_parameters();
}

void TransformerImpl::reset_parameters() {
  NoGradGuard ng;
  for (auto& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask,
                                bool src_is_causal, bool tgt_is_causal, bool memory_is_causal) {
  const int64_t batch_dim = options.batch_first() ? 0 : 1;
  GRAFT_CHECK(src.dim() == tgt.dim() && (src.dim() == 2 || src.size(batch_dim) == tgt.size(batch_dim)), "Transformer",
              "src and tgt with the same batch size", shape_str(src.sizes()) + " and " + shape_str(tgt.sizes()),
              options.batch_first() ? "inputs are (N, S, E) and (N, T, E)" : "inputs are (S, N, E) and (T, N, E)");
  const Tensor memory = encoder->forward(src, src_mask, src_key_padding_mask, src_is_causal);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                          tgt_is_causal, memory_is_causal);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz) {
  GRAFT_CHECK(sz >= 0, "Transformer::generate_square_subsequent_mask", "sz >= 0", std::to_string(sz), "");
  const Tensor above = arange(sz, kInt64).unsqueeze(0).gt(arange(sz, kInt64).unsqueeze(1));
  return zeros({sz, sz}).masked_fill(above, -kInf);
}

}  // namespace graft::nn
