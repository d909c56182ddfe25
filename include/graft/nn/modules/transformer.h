// Attention layers in LibTorch's spelling: MultiheadAttention, TransformerEncoderLayer,
// TransformerDecoderLayer, TransformerEncoder, TransformerDecoder and Transformer, with PyTorch
// 2.x's additions (batch_first, norm_first, layer_norm_eps). Attention runs through
// scaled_dot_product_attention (graft/ops/ops.h): the memory-efficient kernel unless the
// averaged attention weights are asked for (need_weights = true, MultiheadAttention's default, as
// in PyTorch; the Transformer layers pass false).
//
// Masks, as PyTorch's MultiheadAttention takes them (the opposite of scaled_dot_product_attention's
// bool convention): a bool attn_mask or key_padding_mask marks with true what may NOT be attended;
// a float one is added to the scores. attn_mask is (L, S) or (N * num_heads, L, S); key_padding_mask
// is (N, S). A query row with every key masked gives 0 (PyTorch gives nan there).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <variant>

#include "graft/nn/init.h"
#include "graft/nn/module.h"
#include "graft/nn/modules/any.h"
#include "graft/nn/modules/container.h"
#include "graft/nn/modules/dropout.h"
#include "graft/nn/modules/linear.h"
#include "graft/nn/modules/normalization.h"

namespace graft {
// torch::kGELU, the other named activation of the Transformer layers (graft::kReLU is init.h's).
struct GELUActivation {};
inline constexpr GELUActivation kGELU{};
}  // namespace graft

namespace graft::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  GRAFT_ARG(int64_t, embed_dim);
  GRAFT_ARG(int64_t, num_heads);
  GRAFT_ARG(double, dropout) = 0.0;  // on the attention weights, in training
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(bool, add_bias_kv) = false;    // learnt key and value appended to the sequence
  GRAFT_ARG(bool, add_zero_attn) = false;  // a zero key and value appended after them
  GRAFT_ARG(int64_t, kdim);
  GRAFT_ARG(int64_t, vdim);
  GRAFT_ARG(bool, batch_first) = false;  // (N, L, E) instead of (L, N, E), PyTorch's option
};

// Multi-head attention (Vaswani et al. 2017): q, k, v projected by in_proj_weight (3E, E) (or
// q_proj_weight / k_proj_weight / v_proj_weight when kdim or vdim differ from E), split into
// num_heads heads of E / num_heads, attended, concatenated and projected by out_proj.
// Input (L, N, E) query, (S, N, kdim) key, (S, N, vdim) value (batch_first: N first; unbatched:
// no N). Returns (attention output (L, N, E), weights (N, L, S) averaged over heads, or
// (N, num_heads, L, S) with average_attn_weights = false; undefined with need_weights = false).
// Initialisation as PyTorch's: xavier_uniform_ projections, zero biases, xavier_normal_ bias_k/v.
class MultiheadAttentionImpl : public Cloneable<MultiheadAttentionImpl> {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                     bool is_causal = false);
  void reset() override;
  void _reset_parameters();
  std::string extra_repr() const override;

  // The attention core, softmax(q k^T / sqrt(d) + mask) v with dropout on the weights, on the heads
  // (N, H, L, d); mask is undefined or in scaled_dot_product_attention's convention. Empty: call
  // scaled_dot_product_attention. graft::checkpoint_attention (graft/utils/checkpoint.h) sets it to
  // a checkpointed call: the core's saved tensors are then recomputed in backward.
  using AttentionCore = std::function<Tensor(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                             double dropout_p, bool is_causal)>;
  AttentionCore attention_core;

  MultiheadAttentionOptions options;
  bool _qkv_same_embed_dim = true;
  Tensor in_proj_weight, in_proj_bias, bias_k, bias_v;
  Linear out_proj = nullptr;
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;
  int64_t head_dim = 0;
};
GRAFT_MODULE(MultiheadAttention);

// LibTorch's activation_t: graft::kReLU, graft::kGELU (exact, erf form) or any function.
class TransformerActivation {
 public:
  TransformerActivation(Nonlinearity relu);  // NOLINT: only kReLU
  TransformerActivation(GELUActivation) : kind_(Kind::kGELU) {}  // NOLINT
  TransformerActivation(std::function<Tensor(const Tensor&)> f) : kind_(Kind::kFunction), f_(std::move(f)) {}  // NOLINT
  template <class F>
    requires std::is_invocable_r_v<Tensor, F, const Tensor&>
  TransformerActivation(F f) : TransformerActivation(std::function<Tensor(const Tensor&)>(std::move(f))) {}  // NOLINT
  Tensor operator()(const Tensor& x) const;
  std::string name() const;  // "relu", "gelu", "<function>"

 private:
  enum class Kind { kReLU, kGELU, kFunction } kind_ = Kind::kReLU;
  std::function<Tensor(const Tensor&)> f_;
};

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}  // NOLINT
  GRAFT_ARG(int64_t, d_model);
  GRAFT_ARG(int64_t, nhead);
  GRAFT_ARG(int64_t, dim_feedforward) = 2048;
  GRAFT_ARG(double, dropout) = 0.1;
  GRAFT_ARG(TransformerActivation, activation) = kReLU;
  GRAFT_ARG(double, layer_norm_eps) = 1e-5;
  GRAFT_ARG(bool, batch_first) = false;
  GRAFT_ARG(bool, norm_first) = false;  // pre-norm: x + f(norm(x)) instead of norm(x + f(x))
};

// Self-attention then a feed-forward block (linear1, activation, dropout, linear2), each with a
// residual connection, dropout and layer norm. src (L, N, E), or (N, L, E) with batch_first.
class TransformerEncoderLayerImpl : public Cloneable<TransformerEncoderLayerImpl> {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  // is_causal (PyTorch 2.x): each position attends to itself and those before it, as a causal
  // src_mask would say, without one being made (graft needs no mask with it; PyTorch wants both).
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  void reset() override;
  void reset_parameters();

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Linear linear1 = nullptr;
  Dropout dropout = nullptr;
  Linear linear2 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr;
  Dropout dropout1 = nullptr, dropout2 = nullptr;
};
GRAFT_MODULE(TransformerEncoderLayer);

struct TransformerDecoderLayerOptions {
  TransformerDecoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}  // NOLINT
  GRAFT_ARG(int64_t, d_model);
  GRAFT_ARG(int64_t, nhead);
  GRAFT_ARG(int64_t, dim_feedforward) = 2048;
  GRAFT_ARG(double, dropout) = 0.1;
  GRAFT_ARG(TransformerActivation, activation) = kReLU;
  GRAFT_ARG(double, layer_norm_eps) = 1e-5;
  GRAFT_ARG(bool, batch_first) = false;
  GRAFT_ARG(bool, norm_first) = false;
};

// Self-attention over tgt, attention over the encoder's memory, then the feed-forward block.
class TransformerDecoderLayerImpl : public Cloneable<TransformerDecoderLayerImpl> {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options);
  // tgt_is_causal / memory_is_causal (PyTorch 2.x): the self-attention / the attention over memory
  // as with a causal mask (top-left aligned), without one being made.
  Tensor forward(Tensor tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  void reset() override;
  void reset_parameters();

  TransformerDecoderLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Dropout dropout1 = nullptr;
  LayerNorm norm1 = nullptr;
  MultiheadAttention multihead_attn = nullptr;
  Dropout dropout2 = nullptr;
  LayerNorm norm2 = nullptr;
  Linear linear1 = nullptr;
  Dropout dropout = nullptr;
  Linear linear2 = nullptr;
  Dropout dropout3 = nullptr;
  LayerNorm norm3 = nullptr;
};
GRAFT_MODULE(TransformerDecoderLayer);

struct TransformerEncoderOptions {
  // Keeps a reference to encoder_layer; the encoder holds num_layers clones of it.
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& layer_options, int64_t num_layers)
      : encoder_layer_(TransformerEncoderLayer(layer_options)), num_layers_(num_layers) {}
  GRAFT_ARG(TransformerEncoderLayer, encoder_layer) = nullptr;
  GRAFT_ARG(int64_t, num_layers);
  GRAFT_ARG(AnyModule, norm);  // applied after the last layer, when set
};

class TransformerEncoderImpl : public Cloneable<TransformerEncoderImpl> {
 public:
  TransformerEncoderImpl(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : TransformerEncoderImpl(TransformerEncoderOptions(std::move(encoder_layer), num_layers)) {}
  explicit TransformerEncoderImpl(TransformerEncoderOptions options);
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  void reset() override;
  void reset_parameters();

  TransformerEncoderOptions options;
  ModuleList layers = nullptr;
  AnyModule norm;
};
GRAFT_MODULE(TransformerEncoder);

struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}
  TransformerDecoderOptions(const TransformerDecoderLayerOptions& layer_options, int64_t num_layers)
      : decoder_layer_(TransformerDecoderLayer(layer_options)), num_layers_(num_layers) {}
  GRAFT_ARG(TransformerDecoderLayer, decoder_layer) = nullptr;
  GRAFT_ARG(int64_t, num_layers);
  GRAFT_ARG(AnyModule, norm);
};

class TransformerDecoderImpl : public Cloneable<TransformerDecoderImpl> {
 public:
  TransformerDecoderImpl(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : TransformerDecoderImpl(TransformerDecoderOptions(std::move(decoder_layer), num_layers)) {}
  explicit TransformerDecoderImpl(TransformerDecoderOptions options);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  void reset() override;
  void reset_parameters();

  TransformerDecoderOptions options;
  ModuleList layers = nullptr;
  AnyModule norm;
};
GRAFT_MODULE(TransformerDecoder);

struct TransformerOptions {
  TransformerOptions() = default;
  TransformerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerOptions(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers)
      : d_model_(d_model), nhead_(nhead), num_encoder_layers_(num_encoder_layers), num_decoder_layers_(num_decoder_layers) {}
  GRAFT_ARG(int64_t, d_model) = 512;
  GRAFT_ARG(int64_t, nhead) = 8;
  GRAFT_ARG(int64_t, num_encoder_layers) = 6;
  GRAFT_ARG(int64_t, num_decoder_layers) = 6;
  GRAFT_ARG(int64_t, dim_feedforward) = 2048;
  GRAFT_ARG(double, dropout) = 0.1;
  GRAFT_ARG(TransformerActivation, activation) = kReLU;
  GRAFT_ARG(double, layer_norm_eps) = 1e-5;
  GRAFT_ARG(bool, batch_first) = false;
  GRAFT_ARG(bool, norm_first) = false;
};

// An encoder and a decoder (each with a final LayerNorm), every matrix initialised xavier_uniform_
// as PyTorch's Transformer does.
class TransformerImpl : public Cloneable<TransformerImpl> {
 public:
  explicit TransformerImpl(TransformerOptions options = {});
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {}, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool src_is_causal = false, bool tgt_is_causal = false, bool memory_is_causal = false);
  void reset() override;
  void reset_parameters();
  // (sz, sz) float mask: -inf above the diagonal, 0 elsewhere (a causal attn_mask).
  static Tensor generate_square_subsequent_mask(int64_t sz);

  TransformerOptions options;
  TransformerEncoder encoder = nullptr;
  TransformerDecoder decoder = nullptr;
};
GRAFT_MODULE(Transformer);

}  // namespace graft::nn
