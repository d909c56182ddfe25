// MultiheadAttention's and TransformerEncoderLayer's is_causal (PyTorch 2.x's argument) against the
// explicit causal mask it stands for, and graft::checkpoint_attention (selective recomputation of the
// attention cores) against the plain layers: the same outputs and gradients, fewer saved bytes.
#include <gtest/gtest.h>

#include <limits>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace nn = graft::nn;

// PyTorch's MultiheadAttention convention: true = masked, so the causal mask is true above the diagonal.
Tensor causal_bool_mask(int64_t L) {
  Tensor m = empty({L, L}, kBool);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) m.data_ptr<bool>()[i * L + j] = j > i;
  return m;
}

Tensor causal_float_mask(int64_t L) {
  Tensor m = zeros({L, L}, kFloat64);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = i + 1; j < L; ++j) m.data_ptr<double>()[i * L + j] = -std::numeric_limits<double>::infinity();
  return m;
}

// Runs f (forward + backward of a sum of squares) on a fresh copy of `module`, returning the output
// and the gradients of every parameter and of the input.
struct Pass {
  Tensor out, input_grad;
  std::vector<Tensor> grads;
};

template <class M, class F>
Pass run(const M& module, const Tensor& x0, F f) {
  auto m = std::dynamic_pointer_cast<typename M::ContainedType>(module->clone());
  Tensor x = x0.clone().requires_grad_(true);
  Pass r;
  r.out = f(*m, x);
  (r.out * r.out).sum().backward();
  r.input_grad = x.grad();
  for (const Tensor& p : m->parameters()) r.grads.push_back(p.grad());
  return r;
}

void expect_same(const Pass& a, const Pass& b, double tol, const std::string& what) {
  EXPECT_TRUE(allclose(a.out, b.out, tol, tol)) << what << ": output";
  EXPECT_TRUE(allclose(a.input_grad, b.input_grad, tol, tol)) << what << ": input gradient";
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i)
    EXPECT_TRUE(allclose(a.grads[i], b.grads[i], tol, tol)) << what << ": parameter " << i;
}

TEST(AttentionOptions, IsCausalIsTheCausalMask) {
  manual_seed(3);
  const int64_t L = 7, N = 2, E = 8;
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(E, 2).batch_first(true));
  mha->to(kFloat64);
  const Tensor x = randn({N, L, E}, kFloat64);
  Tensor padding = zeros({N, L}, kBool);
  padding.data_ptr<bool>()[1 * L + 5] = true;  // batch element 1's key 5 is padding
  for (const SDPBackend backend : {SDPBackend::kEfficientAttention, SDPBackend::kMath}) {
    SDPBackendGuard guard(backend);
    const std::string b = backend == SDPBackend::kMath ? "math" : "kernel";
    const Pass causal = run(mha, x, [](nn::MultiheadAttentionImpl& m, const Tensor& q) {
      return std::get<0>(m.forward(q, q, q, {}, false, {}, true, /*is_causal=*/true));
    });
    const Pass masked = run(mha, x, [&](nn::MultiheadAttentionImpl& m, const Tensor& q) {
      return std::get<0>(m.forward(q, q, q, {}, false, causal_bool_mask(L)));
    });
    expect_same(causal, masked, 1e-12, b + ": is_causal vs a bool mask");
    // A causal float mask is detected and runs as is_causal; one with -1e30 for -inf is not (it is
    // another mask), and must give the same numbers through the masked path.
    Tensor near = causal_float_mask(L).clamp_min(-1e30);
    const Pass float_masked = run(mha, x, [&](nn::MultiheadAttentionImpl& m, const Tensor& q) {
      return std::get<0>(m.forward(q, q, q, {}, false, causal_float_mask(L)));
    });
    const Pass near_masked = run(mha, x, [&](nn::MultiheadAttentionImpl& m, const Tensor& q) {
      return std::get<0>(m.forward(q, q, q, {}, false, near));
    });
    expect_same(float_masked, near_masked, 1e-12, b + ": a detected causal float mask vs the masked path");
    // With a key padding mask as well, and asking for the weights (the plain formula).
    const Pass both = run(mha, x, [&](nn::MultiheadAttentionImpl& m, const Tensor& q) {
      return std::get<0>(m.forward(q, q, q, padding, true, {}, true, true));
    });
    const Pass both_masked = run(mha, x, [&](nn::MultiheadAttentionImpl& m, const Tensor& q) {
      return std::get<0>(m.forward(q, q, q, padding, false, causal_bool_mask(L)));
    });
    expect_same(both, both_masked, 1e-12, b + ": is_causal + key padding");
  }
  // The weights are zero above the diagonal and each row sums to 1.
  const Tensor w = std::get<1>(mha->forward(x, x, x, {}, true, {}, true, true));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < L; ++i) {
      double row = 0;
      for (int64_t j = 0; j < L; ++j) {
        const double v = w[n][i][j].item<double>();
        if (j > i) {
          EXPECT_EQ(v, 0.0) << n << " " << i << " " << j;
        }
        row += v;
      }
      EXPECT_NEAR(row, 1.0, 1e-12);
    }
}

TEST(AttentionOptions, EncoderLayerIsCausalIsTheCausalSrcMask) {
  manual_seed(4);
  for (const bool norm_first : {false, true}) {
    nn::TransformerEncoderLayer layer(
        nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).norm_first(norm_first));
    layer->to(kFloat64);
    const Tensor x = randn({5, 3, 8}, kFloat64);  // (L, N, E)
    const Pass causal = run(layer, x, [](nn::TransformerEncoderLayerImpl& m, const Tensor& s) {
      return m.forward(s, {}, {}, /*is_causal=*/true);
    });
    const Pass masked = run(layer, x, [](nn::TransformerEncoderLayerImpl& m, const Tensor& s) {
      return m.forward(s, causal_float_mask(5));
    });
    expect_same(causal, masked, 1e-12, norm_first ? "norm_first" : "post-norm");
  }
}

TEST(AttentionOptions, DecoderAndTransformerCausalFlagsAreTheCausalMasks) {
  manual_seed(6);
  nn::Transformer model(nn::TransformerOptions().d_model(8).nhead(2).num_encoder_layers(1).num_decoder_layers(2)
                            .dim_feedforward(16).dropout(0.0));
  model->to(kFloat64);
  const Tensor src = randn({5, 2, 8}, kFloat64), tgt = randn({4, 2, 8}, kFloat64);
  // memory_is_causal: target position i attends to memory positions 0 .. i (top-left aligned).
  Tensor memory_mask = zeros({4, 5}, kFloat64);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = i + 1; j < 5; ++j) memory_mask.data_ptr<double>()[i * 5 + j] = -std::numeric_limits<double>::infinity();
  NoGradGuard no_grad;
  const Tensor flags = model->forward(src, tgt, {}, {}, {}, {}, {}, {}, /*src_is_causal=*/true, /*tgt_is_causal=*/true,
                                      /*memory_is_causal=*/true);
  // -1e30 for -inf: masks that are not recognised as causal, so that they take the masked path.
  const Tensor masks = model->forward(src, tgt, causal_float_mask(5).clamp_min(-1e30),
                                      causal_float_mask(4).clamp_min(-1e30), memory_mask.clamp_min(-1e30));
  EXPECT_TRUE(allclose(flags, masks, 1e-12, 1e-12));
  // And they do something: without them the result differs.
  EXPECT_FALSE(allclose(model->forward(src, tgt), masks, 1e-6, 1e-6));
}

// Saved-activation bytes live after a forward of `enc` on x.
int64_t saved_after_forward(nn::TransformerEncoderImpl& enc, const Tensor& x, Tensor& out) {
  const int64_t before = memory::stats()[memory::Category::SavedActivations].current_bytes;
  out = enc.forward(x, {}, {}, true);
  return memory::stats()[memory::Category::SavedActivations].current_bytes - before;
}

TEST(AttentionOptions, CheckpointAttentionGivesTheSameGradientsAndKeepsLess) {
  manual_seed(5);
  const int64_t L = 16, N = 2, E = 16, H = 2;
  nn::TransformerEncoder enc(nn::TransformerEncoderOptions(
      nn::TransformerEncoderLayerOptions(E, H).dim_feedforward(32).dropout(0.2).batch_first(true), 2));
  enc->to(kFloat64);
  const Tensor x = randn({N, L, E}, kFloat64);
  for (const SDPBackend backend : {SDPBackend::kEfficientAttention, SDPBackend::kMath}) {
    SDPBackendGuard guard(backend);
    const std::string b = backend == SDPBackend::kMath ? "math" : "kernel";
    auto forward = [](nn::TransformerEncoderImpl& m, const Tensor& s) { return m.forward(s, {}, {}, true); };
    // Dropout is on (training mode): the recompute must draw the forward's masks again.
    manual_seed(11);
    const Pass plain = run(enc, x, forward);
    auto copy = std::dynamic_pointer_cast<nn::TransformerEncoderImpl>(enc->clone());
    EXPECT_EQ(checkpoint_attention(*copy), 2);
    manual_seed(11);
    const Pass recomputed = run(nn::TransformerEncoder(copy), x, forward);
    expect_same(plain, recomputed, 0.0, b + ": checkpointed attention cores");

    // What the forward keeps: the checkpoint drops each core's output (and, in the plain formula,
    // its (N, H, L, L) probabilities and dropout mask), keeping q, k and v.
    auto fresh = std::dynamic_pointer_cast<nn::TransformerEncoderImpl>(enc->clone());
    Tensor out_plain, out_ck;
    const int64_t kept_plain = saved_after_forward(*fresh, x.clone().requires_grad_(true), out_plain);
    checkpoint_attention(*fresh);
    const int64_t kept_ck = saved_after_forward(*fresh, x.clone().requires_grad_(true), out_ck);
    const int64_t core_out = N * H * L * (E / H) * 8;  // float64
    const int64_t probs = N * H * L * L * 8;
    EXPECT_LE(kept_ck, kept_plain - 2 * core_out) << b;
    if (backend == SDPBackend::kMath) {
      EXPECT_LE(kept_ck, kept_plain - 2 * (core_out + probs)) << b;
    }
    out_plain = out_ck = Tensor();
    // enabled = false puts the plain call back.
    EXPECT_EQ(checkpoint_attention(*fresh, false), 2);
    Tensor out_again;
    EXPECT_EQ(saved_after_forward(*fresh, x.clone().requires_grad_(true), out_again), kept_plain) << b;
  }
}

}  // namespace
}  // namespace graft::test
