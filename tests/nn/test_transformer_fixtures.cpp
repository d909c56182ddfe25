// MultiheadAttention and the Transformer layers against PyTorch 1.13: outputs, attention weights
// and the gradients of every input and named parameter, from tests/fixtures/transformer_fixtures.txt
// (written by tests/fixtures/gen_transformer_fixtures.py; this test needs no PyTorch). Every case
// runs with the memory-efficient attention kernel and with the plain formula.
#include <gtest/gtest.h>

#include "../support/fixture_file.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

int64_t int_param(const FixtureCase& c, const std::string& k, int64_t fallback) {
  return c.params.count(k) ? static_cast<int64_t>(c.number(k)) : fallback;
}
bool flag_param(const FixtureCase& c, const std::string& k) { return c.params.count(k) && c.flag(k); }

nn::TransformerActivation activation(const FixtureCase& c) {
  if (c.params.count("activation") && c.param("activation") == "gelu") return kGELU;
  return kReLU;
}

template <class Opts>
Opts transformer_options(const FixtureCase& c) {
  Opts o(int_param(c, "d_model", 0), int_param(c, "nhead", 0));
  o.dim_feedforward(int_param(c, "dim_feedforward", 2048)).dropout(0.0).activation(activation(c));
  o.norm_first(flag_param(c, "norm_first")).batch_first(flag_param(c, "batch_first"));
  if (c.params.count("layer_norm_eps")) o.layer_norm_eps(c.number("layer_norm_eps"));
  return o;
}

std::shared_ptr<nn::Module> build_transformer(const FixtureCase& c) {
  if (c.kind == "mha") {
    const int64_t E = int_param(c, "embed_dim", 0);
    return nn::MultiheadAttention(nn::MultiheadAttentionOptions(E, int_param(c, "num_heads", 0))
                                      .kdim(int_param(c, "kdim", E))
                                      .vdim(int_param(c, "vdim", E))
                                      .bias(!c.params.count("bias") || c.flag("bias"))
                                      .add_bias_kv(flag_param(c, "add_bias_kv"))
                                      .add_zero_attn(flag_param(c, "add_zero_attn"))
                                      .batch_first(flag_param(c, "batch_first")))
        .ptr();
  }
  if (c.kind == "encoder_layer")
    return nn::TransformerEncoderLayer(transformer_options<nn::TransformerEncoderLayerOptions>(c)).ptr();
  if (c.kind == "decoder_layer")
    return nn::TransformerDecoderLayer(transformer_options<nn::TransformerDecoderLayerOptions>(c)).ptr();
  if (c.kind == "encoder") {
    const int64_t E = int_param(c, "d_model", 0);
    return nn::TransformerEncoder(
               nn::TransformerEncoderOptions(transformer_options<nn::TransformerEncoderLayerOptions>(c),
                                             int_param(c, "num_layers", 1))
                   .norm(nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({E})))))
        .ptr();
  }
  if (c.kind == "transformer") {
    return nn::Transformer(nn::TransformerOptions(int_param(c, "d_model", 0), int_param(c, "nhead", 0),
                                                  int_param(c, "num_encoder_layers", 0),
                                                  int_param(c, "num_decoder_layers", 0))
                               .dim_feedforward(int_param(c, "dim_feedforward", 2048))
                               .dropout(0.0))
        .ptr();
  }
  throw std::runtime_error("unknown kind " + c.kind);
}

// The output (and, for MultiheadAttention, the weights).
std::pair<Tensor, Tensor> call(const FixtureCase& c, nn::Module& m, std::map<std::string, Tensor>& in) {
  auto get = [&](const std::string& k) { return in.count(k) ? in.at(k) : Tensor(); };
  if (c.kind == "mha") {
    auto& mha = dynamic_cast<nn::MultiheadAttentionImpl&>(m);
    const bool self = flag_param(c, "self");
    const Tensor q = get("query"), k = self ? q : get("key"), v = self ? q : get("value");
    auto [out, w] = mha.forward(q, k, v, get("key_padding_mask"), flag_param(c, "need_weights"), get("attn_mask"),
                                !c.params.count("average_attn_weights") || c.flag("average_attn_weights"));
    return {out, w};
  }
  if (c.kind == "encoder_layer")
    return {dynamic_cast<nn::TransformerEncoderLayerImpl&>(m).forward(get("src"), get("src_mask"),
                                                                      get("src_key_padding_mask")),
            {}};
  if (c.kind == "decoder_layer")
    return {dynamic_cast<nn::TransformerDecoderLayerImpl&>(m).forward(get("tgt"), get("memory"), get("tgt_mask"),
                                                                      get("memory_mask"), get("tgt_key_padding_mask"),
                                                                      get("memory_key_padding_mask")),
            {}};
  if (c.kind == "encoder")
    return {
        dynamic_cast<nn::TransformerEncoderImpl&>(m).forward(get("src"), get("src_mask"), get("src_key_padding_mask")),
        {}};
  return {dynamic_cast<nn::TransformerImpl&>(m).forward(get("src"), get("tgt"), get("src_mask"), get("tgt_mask")), {}};
}

// mask_grad: float masks require grad too (the plain path gives them a gradient; the kernel none).
void run_transformer_case(const FixtureCase& c, bool mask_grad) {
  std::shared_ptr<nn::Module> m = build_transformer(c);
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
      run_transformer_case(c, backend == SDPBackend::kMath);
    }
  }
}

}  // namespace
}  // namespace graft::test
