// MultiheadAttention and the Transformer layers against PyTorch 1.13: outputs, attention weights
// and the gradients of every input and named parameter, from tests/fixtures/transformer_fixtures.txt
// (written by tests/fixtures/gen_transformer_fixtures.py; this test needs no PyTorch). Every case
// runs with the memory-efficient attention kernel and with the plain formula.
#include <gtest/gtest.h>

#include "../support/fixture_file.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

using namespace graft::nn;

int64_t num(const FixtureCase& c, const std::string& k, int64_t fallback) {
  return c.params.count(k) ? static_cast<int64_t>(c.number(k)) : fallback;
}
bool flag(const FixtureCase& c, const std::string& k) { return c.params.count(k) && c.flag(k); }

TransformerActivation activation(const FixtureCase& c) {
  if (c.params.count("activation") && c.param("activation") == "gelu") return kGELU;
  return kReLU;
}

template <class Opts>
Opts layer_options(const FixtureCase& c) {
  Opts o(num(c, "d_model", 0), num(c, "nhead", 0));
  o.dim_feedforward(num(c, "dim_feedforward", 2048)).dropout(0.0).activation(activation(c));
  o.norm_first(flag(c, "norm_first")).batch_first(flag(c, "batch_first"));
  if (c.params.count("layer_norm_eps")) o.layer_norm_eps(c.number("layer_norm_eps"));
  return o;
}

std::shared_ptr<Module> build(const FixtureCase& c) {
  if (c.kind == "mha") {
    const int64_t E = num(c, "embed_dim", 0);
    return MultiheadAttention(MultiheadAttentionOptions(E, num(c, "num_heads", 0))
                                  .kdim(num(c, "kdim", E))
                                  .vdim(num(c, "vdim", E))
                                  .bias(!c.params.count("bias") || c.flag("bias"))
                                  .add_bias_kv(flag(c, "add_bias_kv"))
                                  .add_zero_attn(flag(c, "add_zero_attn"))
                                  .batch_first(flag(c, "batch_first")))
        .ptr();
  }
  if (c.kind == "encoder_layer") return TransformerEncoderLayer(layer_options<TransformerEncoderLayerOptions>(c)).ptr();
  if (c.kind == "decoder_layer") return TransformerDecoderLayer(layer_options<TransformerDecoderLayerOptions>(c)).ptr();
  if (c.kind == "encoder") {
    const int64_t E = num(c, "d_model", 0);
    return TransformerEncoder(TransformerEncoderOptions(layer_options<TransformerEncoderLayerOptions>(c), num(c, "num_layers", 1))
                                  .norm(AnyModule(LayerNorm(LayerNormOptions({E})))))
        .ptr();
  }
  if (c.kind == "transformer") {
    return Transformer(TransformerOptions(num(c, "d_model", 0), num(c, "nhead", 0), num(c, "num_encoder_layers", 0),
                                          num(c, "num_decoder_layers", 0))
                           .dim_feedforward(num(c, "dim_feedforward", 2048))
                           .dropout(0.0))
        .ptr();
  }
  throw std::runtime_error("unknown kind " + c.kind);
}

// The output (and, for MultiheadAttention, the weights).
std::pair<Tensor, Tensor> call(const FixtureCase& c, Module& m, std::map<std::string, Tensor>& in) {
  auto get = [&](const std::string& k) { return in.count(k) ? in.at(k) : Tensor(); };
  if (c.kind == "mha") {
    auto& mha = dynamic_cast<MultiheadAttentionImpl&>(m);
    const bool self = flag(c, "self");
    const Tensor q = get("query"), k = self ? q : get("key"), v = self ? q : get("value");
    auto [out, w] = mha.forward(q, k, v, get("key_padding_mask"), flag(c, "need_weights"), get("attn_mask"),
                                !c.params.count("average_attn_weights") || c.flag("average_attn_weights"));
    return {out, w};
  }
  if (c.kind == "encoder_layer")
    return {dynamic_cast<TransformerEncoderLayerImpl&>(m).forward(get("src"), get("src_mask"), get("src_key_padding_mask")), {}};
  if (c.kind == "decoder_layer")
    return {dynamic_cast<TransformerDecoderLayerImpl&>(m).forward(get("tgt"), get("memory"), get("tgt_mask"), get("memory_mask"),
                                                                  get("tgt_key_padding_mask"), get("memory_key_padding_mask")),
            {}};
  if (c.kind == "encoder")
    return {dynamic_cast<TransformerEncoderImpl&>(m).forward(get("src"), get("src_mask"), get("src_key_padding_mask")), {}};
  return {dynamic_cast<TransformerImpl&>(m).forward(get("src"), get("tgt"), get("src_mask"), get("tgt_mask")), {}};
}

// mask_grad: float masks require grad too (the plain path gives them a gradient; the kernel none).
void run_case(const FixtureCase& c, bool mask_grad) {
  std::shared_ptr<Module> m = build(c);
  m->to(kFloat64);
  copy_parameters(*m, c);
  std::map<std::string, Tensor> in;
  for (const auto& [role, t] : c.tensors) {
    if (role.rfind("in.", 0) != 0) continue;
    const std::string name = role.substr(3);
    const bool is_mask = name.find("mask") != std::string::npos;
    in[name] = c.params.count("bool." + name) ? t.gt(0.5) : t.clone().requires_grad_(!is_mask || mask_grad);
  }
  auto [out, weights] = call(c, *m, in);
  EXPECT_TRUE(all_close(out, c.tensor("out"), 1e-10, 1e-10)) << "out";
  if (c.has("out_weights")) {
    ASSERT_TRUE(weights.defined());
    EXPECT_TRUE(all_close(weights, c.tensor("out_weights"), 1e-10, 1e-10)) << "weights";
  }
  out.backward(c.tensor("grad_output"));
  for (const auto& [name, t] : in) {
    if (t.requires_grad() && c.has("grad.in." + name)) {
      EXPECT_TRUE(all_close(t.grad(), c.tensor("grad.in." + name), 1e-10, 1e-10)) << "grad of " << name;
    }
  }
  expect_parameter_grads(*m, c, 1e-10);
}

TEST(TransformerFixtures, MatchPyTorch) {
  const auto cases = load_fixture_cases("transformer_fixtures.txt");
  ASSERT_EQ(cases.size(), 12u);
  for (SDPBackend backend : {SDPBackend::kEfficientAttention, SDPBackend::kMath}) {
    SDPBackendGuard guard(backend);
    for (const auto& c : cases) {
      SCOPED_TRACE(c.name + (backend == SDPBackend::kMath ? " (plain path)" : " (memory-efficient kernel)"));
      run_case(c, backend == SDPBackend::kMath);
    }
  }
}

}  // namespace
}  // namespace graft::test
