// The memory-efficient attention kernel (Note [Memory-efficient attention]) against the plain path
// and plain loops: odd lengths, feature sizes and tile sizes, masks of every broadcast shape, rows
// fully masked, very large logits, dropout, 1/2/3 threads (same bits), autocast, and the bytes it
// saves for backward as graft's memory accounting counts them.
#include <cstring>
#include <limits>

#include "../support/test_util.h"

namespace graft::test {

Tensor ref_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     const std::function<double(int64_t, int64_t, int64_t)>& mask, double scale);  // records_attention.cpp

namespace {

Tensor rnd(IntArrayRef shape, uint64_t seed, DType dtype, double lo = -1, double hi = 1) {
  return uniform_sample(shape, seed, lo, hi).to(dtype);
}

struct Result {
  Tensor out, gq, gk, gv;
};

// Output and input gradients (for the upstream gradient `g`) under one backend.
Result run_sdpa(SDPBackend backend, int64_t q_tile, int64_t kv_tile, const Tensor& q0, const Tensor& k0,
                const Tensor& v0, const std::optional<Tensor>& mask, bool causal, const Tensor& g,
                double dropout_p = 0) {
  SDPBackendGuard guard(backend, q_tile, kv_tile);
  Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(), v = v0.detach().requires_grad_();
  manual_seed(7);
  Tensor out = scaled_dot_product_attention(q, k, v, mask, dropout_p, causal);
  out.backward(g);
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

void expect_close(const Result& a, const Result& b, double tol) {
  EXPECT_TRUE(all_close(a.out, b.out, tol, tol)) << "output";
  EXPECT_TRUE(all_close(a.gq, b.gq, tol, tol)) << "grad query";
  EXPECT_TRUE(all_close(a.gk, b.gk, tol, tol)) << "grad key";
  EXPECT_TRUE(all_close(a.gv, b.gv, tol, tol)) << "grad value";
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.sizes().equals(b.sizes()) && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), static_cast<size_t>(a.numel()) * a.element_size()) == 0;
}

struct MaskCase {
  const char* name;
  std::function<std::optional<Tensor>(int64_t N, int64_t H, int64_t L, int64_t S, DType)> make;
  bool causal;
};

std::vector<MaskCase> mask_cases() {
  return {
      {"none", [](int64_t, int64_t, int64_t, int64_t, DType) -> std::optional<Tensor> { return std::nullopt; }, false},
      {"causal", [](int64_t, int64_t, int64_t, int64_t, DType) -> std::optional<Tensor> { return std::nullopt; }, true},
      // (L, S) bool, with row 3 fully masked.
      {"bool_LS", [](int64_t, int64_t, int64_t L, int64_t S, DType) -> std::optional<Tensor> {
         Tensor m = uniform_sample({L, S}, 41, 0, 1).gt(0.3);
         m.index_put_({3}, false);
         return m;
       }, false},
      // key padding (N, 1, 1, S): batch 1 keeps its first 5 keys only, batch 0 none (every row empty).
      {"key_padding", [](int64_t N, int64_t, int64_t, int64_t S, DType) -> std::optional<Tensor> {
         Tensor m = zeros({N, 1, 1, S}, kBool);
         m.index_put_({1, indexing::Slice(), indexing::Slice(), indexing::Slice(0, 5)}, true);
         return m;
       }, false},
      // float (N, H, L, S), non-contiguous (a transposed view), with -inf entries.
      {"float_NHLS_strided", [](int64_t N, int64_t H, int64_t L, int64_t S, DType dt) -> std::optional<Tensor> {
         Tensor m = rnd({N, H, S, L}, 42, dt, -3, 3).transpose(-2, -1);
         return m.masked_fill(rnd({N, H, L, S}, 43, dt).gt(0.6), -std::numeric_limits<double>::infinity());
       }, false},
      // float (H, 1, S): broadcast over the batch and the query rows.
      {"float_H1S", [](int64_t, int64_t H, int64_t, int64_t S, DType dt) -> std::optional<Tensor> {
         return rnd({H, 1, S}, 44, dt, -2, 2);
       }, false},
  };
}

TEST(Attention, KernelMatchesPlainPathAtOddSizesAndTiles) {
  const int64_t N = 2, H = 3, L = 37, S = 29, E = 7, Ev = 5;
  for (DType dt : {kFloat64, kFloat32}) {
    const Tensor q = rnd({N, H, L, E}, 1, dt), k = rnd({N, H, S, E}, 2, dt), v = rnd({N, H, S, Ev}, 3, dt);
    const Tensor g = rnd({N, H, L, Ev}, 4, dt);
    const double tol = dt == kFloat64 ? 1e-12 : 2e-5;
    for (const MaskCase& mc : mask_cases()) {
      const std::optional<Tensor> mask = mc.make(N, H, L, S, dt);
      const Result math = run_sdpa(SDPBackend::kMath, 0, 0, q, k, v, mask, mc.causal, g);
      for (auto [qt, kt] : {std::pair<int64_t, int64_t>{0, 0}, {1, 1}, {5, 11}, {16, 3}, {64, 64}}) {
        SCOPED_TRACE(std::string(mc.name) + " " + dtype_name(dt) + " tiles " + std::to_string(qt) + "x" + std::to_string(kt));
        const Result eff = run_sdpa(SDPBackend::kEfficientAttention, qt, kt, q, k, v, mask, mc.causal, g);
        expect_close(eff, math, tol);
        EXPECT_FALSE(graft::isnan(eff.gq).any().item<bool>());
      }
    }
  }
}

TEST(Attention, MatchesPlainLoopsAndFullyMaskedRowsGiveZero) {
  const Tensor q = rnd({2, 6, 4}, 5, kFloat64), k = rnd({2, 9, 4}, 6, kFloat64), v = rnd({2, 9, 3}, 7, kFloat64);
  Tensor mask = uniform_sample({6, 9}, 8, 0, 1).gt(0.5);
  mask.index_put_({0}, false);
  const std::vector<double> m = values(mask);
  const Tensor ref = ref_attention(q, k, v, [&](int64_t, int64_t i, int64_t j) {
    return m[static_cast<size_t>(i * 9 + j)] > 0 ? 0.0 : -std::numeric_limits<double>::infinity();
  }, 0.5);
  for (SDPBackend b : {SDPBackend::kMath, SDPBackend::kEfficientAttention}) {
    const Result r = run_sdpa(b, 4, 4, q, k, v, mask, false, ones({2, 6, 3}, kFloat64));
    EXPECT_TRUE(all_close(r.out, ref, 1e-12, 1e-12));
    // Row 0 sees no key: output 0 and no gradient to its query.
    EXPECT_TRUE(all_close(r.out.select(1, 0), zeros({2, 3}, kFloat64), 0, 0));
    EXPECT_TRUE(all_close(r.gq.select(1, 0), zeros({2, 4}, kFloat64), 0, 0));
    EXPECT_FALSE(graft::isnan(r.gk).any().item<bool>());
  }
}

TEST(Attention, VeryLargeLogitsDoNotOverflow) {
  // Scores up to 4 * 60 * 60 * 1 = 14400: e^14400 overflows float64, let alone float32.
  const Tensor q = rnd({1, 5, 4}, 9, kFloat64, 50, 60), k = rnd({1, 7, 4}, 10, kFloat64, -60, 60),
               v = rnd({1, 7, 2}, 11, kFloat64);
  const Tensor ref = ref_attention(q, k, v, [](int64_t, int64_t, int64_t) { return 0.0; }, 1.0);
  for (DType dt : {kFloat64, kFloat32}) {
    SDPBackendGuard eff(SDPBackend::kEfficientAttention, 2, 3);
    const Tensor out = scaled_dot_product_attention(q.to(dt), k.to(dt), v.to(dt), std::nullopt, 0, false, 1.0);
    EXPECT_TRUE(all_close(out, ref, dt == kFloat64 ? 1e-12 : 1e-4, 1e-4)) << dtype_name(dt);
  }
}

TEST(Attention, SameBitsAtOneTwoAndThreeThreads) {
  const int before = get_num_threads();
  const Tensor q = rnd({2, 4, 70, 16}, 12, kFloat32), k = rnd({2, 4, 90, 16}, 13, kFloat32),
               v = rnd({2, 4, 90, 8}, 14, kFloat32), g = rnd({2, 4, 70, 8}, 15, kFloat32);
  std::vector<Result> results;
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    results.push_back(run_sdpa(SDPBackend::kEfficientAttention, 16, 32, q, k, v, std::nullopt, true, g, 0.2));
  }
  set_num_threads(before);
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_TRUE(same_bits(results[i].out, results[0].out)) << i + 1 << " threads";
    EXPECT_TRUE(same_bits(results[i].gq, results[0].gq)) << i + 1 << " threads";
    EXPECT_TRUE(same_bits(results[i].gk, results[0].gk)) << i + 1 << " threads";
    EXPECT_TRUE(same_bits(results[i].gv, results[0].gv)) << i + 1 << " threads";
  }
}

TEST(Attention, DropoutIsTheSameMaskInBothPaths) {
  const Tensor q = rnd({2, 3, 20, 6}, 16, kFloat64), k = rnd({2, 3, 25, 6}, 17, kFloat64),
               v = rnd({2, 3, 25, 4}, 18, kFloat64), g = rnd({2, 3, 20, 4}, 19, kFloat64);
  const Result math = run_sdpa(SDPBackend::kMath, 0, 0, q, k, v, std::nullopt, false, g, 0.3);
  const Result eff = run_sdpa(SDPBackend::kEfficientAttention, 7, 6, q, k, v, std::nullopt, false, g, 0.3);
  expect_close(eff, math, 1e-12);
  // With v = 1 each output is sum_j p_ij keep_ij / (1 - p): its mean over many rows is 1.
  SDPBackendGuard guard(SDPBackend::kEfficientAttention);
  const Tensor big = scaled_dot_product_attention(rnd({4, 64, 8}, 20, kFloat64), rnd({4, 512, 8}, 21, kFloat64),
                                                  ones({4, 512, 1}, kFloat64), std::nullopt, 0.3);
  EXPECT_NEAR(big.mean().item<double>(), 1.0, 0.02);
  // A fresh seed each call: two calls differ.
  const Tensor again = scaled_dot_product_attention(rnd({4, 64, 8}, 20, kFloat64), rnd({4, 512, 8}, 21, kFloat64),
                                                    ones({4, 512, 1}, kFloat64), std::nullopt, 0.3);
  EXPECT_FALSE(all_close(again, big, 1e-12, 0));
}

TEST(Attention, DropoutGradcheckWithAFixedSeed) {
  const Tensor q = rnd({2, 5, 3}, 22, kFloat64).requires_grad_(), k = rnd({2, 6, 3}, 23, kFloat64).requires_grad_(),
               v = rnd({2, 6, 2}, 24, kFloat64).requires_grad_();
  auto f = [](const TensorList& a) {
    manual_seed(3);
    return scaled_dot_product_attention(a[0], a[1], a[2], std::nullopt, 0.4, true);
  };
  EXPECT_TRUE(autograd::gradcheck(f, {q, k, v}));
  EXPECT_TRUE(autograd::gradgradcheck(f, {q, k, v}));
}

// Saved for backward, as graft's memory accounting counts it: O(T d) for the kernel, the (T, T)
// probabilities for the plain path.
TEST(Attention, KernelSavesOrderTdAndItsWorkspaceIsCounted) {
  const int64_t B = 2, H = 2, T = 512, d = 32;
  auto saved_and_peak = [&](SDPBackend backend) {
    SDPBackendGuard guard(backend);
    // Non-leaf inputs (as in a model), so that saving them is counted too.
    Tensor w = ones({1}).requires_grad_();
    Tensor q = rnd({B, H, T, d}, 25, kFloat32) * w, k = rnd({B, H, T, d}, 26, kFloat32) * w,
           v = rnd({B, H, T, d}, 27, kFloat32) * w;
    const auto before = memory::stats();
    memory::reset_peak_stats();
    Tensor out = scaled_dot_product_attention(q, k, v, std::nullopt, 0, true);
    const auto after = memory::stats();
    const int64_t saved = after[memory::Category::SavedActivations].current_bytes -
                          before[memory::Category::SavedActivations].current_bytes;
    const int64_t peak = after.peak_allocated_bytes - before.allocated_bytes;
    out.sum().backward();
    return std::pair{saved, peak};
  };
  const int64_t qkv = 3 * B * H * T * d * 4, out_bytes = B * H * T * d * 4, lse = B * H * T * 4;
  const auto [eff_saved, eff_peak] = saved_and_peak(SDPBackend::kEfficientAttention);
  // Exactly q, k, v, the output and one log-sum-exp per row.
  EXPECT_EQ(eff_saved, qkv + out_bytes + lse);
  // Peak above what was live: the output, lse and the workspace (a few tiles per thread), all
  // far below one (T, T) matrix per head.
  EXPECT_LT(eff_peak, out_bytes + lse + 3 * (64 * 128 + 64 * d + 128) * 4 + 4096);
  const auto [math_saved, math_peak] = saved_and_peak(SDPBackend::kMath);
  EXPECT_GE(math_saved, B * H * T * T * 4);
  EXPECT_GE(math_peak, 2 * B * H * T * T * 4);
}

TEST(Attention, BackendChoiceAndErrors) {
  const Tensor q = rnd({2, 3, 4}, 28, kFloat32).requires_grad_(), k = rnd({2, 5, 4}, 29, kFloat32),
               v = rnd({2, 5, 4}, 30, kFloat32);
  EXPECT_EQ(scaled_dot_product_attention(q, k, v).grad_fn()->name(), "ScaledDotProductEfficientAttentionBackward0");
  {
    SDPBackendGuard math(SDPBackend::kMath);
    EXPECT_EQ(current_sdp_backend(), SDPBackend::kMath);
    EXPECT_NE(scaled_dot_product_attention(q, k, v).grad_fn()->name(), "ScaledDotProductEfficientAttentionBackward0");
  }
  EXPECT_EQ(current_sdp_backend(), SDPBackend::kDefault);
  // A float mask that requires grad: the default runs the plain path; the kernel refuses it.
  const Tensor m = zeros({3, 5}).requires_grad_();
  Tensor y = scaled_dot_product_attention(q, k, v, m);
  y.sum().backward();
  EXPECT_TRUE(m.grad().defined());
  SDPBackendGuard eff(SDPBackend::kEfficientAttention);
  EXPECT_TRUE(throws_error([&] { scaled_dot_product_attention(q, k, v, m); },
                           {"scaled_dot_product_attention", "memory-efficient", "requires grad", "kMath"}));
  EXPECT_TRUE(throws_error([] { SDPBackendGuard bad(SDPBackend::kMath, -1, 0); }, {"SDPBackendGuard", "-1"}));
}

TEST(Attention, BFloat16UnderAutocastComputesInFloat32) {
  const Tensor q = rnd({2, 9, 8}, 31, kFloat32), k = rnd({2, 11, 8}, 32, kFloat32), v = rnd({2, 11, 8}, 33, kFloat32);
  Tensor out;
  {
    AutocastGuard autocast(kBFloat16);
    out = scaled_dot_product_attention(q, k, v, std::nullopt, 0, true);
  }
  EXPECT_EQ(out.dtype(), kBFloat16);
  // The reference: the same formula on the bfloat16-rounded inputs, in double, rounded once.
  const Tensor qr = q.to(kBFloat16).to(kFloat64), kr = k.to(kBFloat16).to(kFloat64), vr = v.to(kBFloat16).to(kFloat64);
  const Tensor ref = ref_attention(qr, kr, vr, [](int64_t, int64_t i, int64_t j) {
    return j > i ? -std::numeric_limits<double>::infinity() : 0.0;
  }, 1.0 / std::sqrt(8.0));
  EXPECT_TRUE(all_close(out.to(kFloat64), ref, 1e-2, 1e-2));
}

}  // namespace
}  // namespace graft::test
