// The memory-efficient attention kernel (src/kernels/attention.h, Note [Memory-efficient
// attention]) called directly through its Tensor-level entries, float32 and float64, against plain
// loops written here in double: s = scale q k^T + mask (causal: -inf above the diagonal),
// p = softmax(s) (a fully masked row is 0), out = (p z) v with z the dropout scale of kept
// elements, lse = log sum exp(s); and its backward, dv = (p z)^T g, dp = (g v^T) z,
// ds = p (dp - sum_j p dp), dq = scale ds k, dk = scale ds^T q. Small tiles make every row and key
// block ragged, so the tiling's edges are exercised.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../../src/kernels/attention.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace attention_kernels_ref {

namespace attn = kernels::attention;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  int64_t B = 3, L = 5, S = 7, E = 4, Ev = 3;
  bool causal = false, mask = false;
  double dropout_p = 0;
};

struct Ref {
  std::vector<double> out, lse, dq, dk, dv;
};

// mask (L, S), shared by every batch entry: row 1 fully masked, a few other -inf entries.
double mask_at(const Case& c, int64_t i, int64_t j) {
  if (!c.mask) return 0;
  if (i == 1 || (i + 2 * j) % 5 == 0) return -kInf;
  return 0.25 * static_cast<double>((i + j) % 3) - 0.25;
}

Ref reference(const Case& c, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
              const std::vector<double>& g, double scale, uint64_t seed) {
  const int64_t B = c.B, L = c.L, S = c.S, E = c.E, Ev = c.Ev;
  Ref r{std::vector<double>(static_cast<size_t>(B * L * Ev)), std::vector<double>(static_cast<size_t>(B * L)),
        std::vector<double>(q.size()), std::vector<double>(k.size()), std::vector<double>(v.size())};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s(static_cast<size_t>(S)), p(static_cast<size_t>(S)), z(static_cast<size_t>(S));
      double m = -kInf;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e)
          dot += q[static_cast<size_t>((b * L + i) * E + e)] * k[static_cast<size_t>((b * S + j) * E + e)];
        double sj = scale * dot + mask_at(c, i, j);
        if (c.causal && j > i) sj = -kInf;
        s[static_cast<size_t>(j)] = sj;
        m = std::max(m, sj);
        const uint64_t index = static_cast<uint64_t>((b * L + i) * S + j);
        z[static_cast<size_t>(j)] =
            c.dropout_p > 0 ? (attn::keep(seed, index, c.dropout_p) ? 1.0 / (1.0 - c.dropout_p) : 0.0) : 1.0;
      }
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += m == -kInf ? 0.0 : std::exp(s[static_cast<size_t>(j)] - m);
      r.lse[static_cast<size_t>(b * L + i)] = m == -kInf ? kInf : m + std::log(sum);
      for (int64_t j = 0; j < S; ++j)
        p[static_cast<size_t>(j)] = m == -kInf ? 0.0 : std::exp(s[static_cast<size_t>(j)] - m) / sum;
      // forward and dv
      for (int64_t j = 0; j < S; ++j) {
        const double pd = p[static_cast<size_t>(j)] * z[static_cast<size_t>(j)];
        for (int64_t e = 0; e < Ev; ++e) {
          r.out[static_cast<size_t>((b * L + i) * Ev + e)] += pd * v[static_cast<size_t>((b * S + j) * Ev + e)];
          r.dv[static_cast<size_t>((b * S + j) * Ev + e)] += pd * g[static_cast<size_t>((b * L + i) * Ev + e)];
        }
      }
      // ds = p (dp - sum_j p dp), dp = (g v^T) z
      std::vector<double> dp(static_cast<size_t>(S));
      double pdp = 0;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < Ev; ++e)
          dot += g[static_cast<size_t>((b * L + i) * Ev + e)] * v[static_cast<size_t>((b * S + j) * Ev + e)];
        dp[static_cast<size_t>(j)] = dot * z[static_cast<size_t>(j)];
        pdp += p[static_cast<size_t>(j)] * dp[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < S; ++j) {
        const double ds = p[static_cast<size_t>(j)] * (dp[static_cast<size_t>(j)] - pdp);
        for (int64_t e = 0; e < E; ++e) {
          r.dq[static_cast<size_t>((b * L + i) * E + e)] += scale * ds * k[static_cast<size_t>((b * S + j) * E + e)];
          r.dk[static_cast<size_t>((b * S + j) * E + e)] += scale * ds * q[static_cast<size_t>((b * L + i) * E + e)];
        }
      }
    }
  return r;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " " << i;
  }
}

void check(const Case& c, DType dt) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.E));
  const uint64_t seed = 1234;
  const std::vector<double> qv = uniform_values(c.B * c.L * c.E, 1), kv = uniform_values(c.B * c.S * c.E, 2),
                            vv = uniform_values(c.B * c.S * c.Ev, 3), gv = uniform_values(c.B * c.L * c.Ev, 4);
  const Tensor q = make(qv, {c.B, c.L, c.E}).to(dt), k = make(kv, {c.B, c.S, c.E}).to(dt),
               v = make(vv, {c.B, c.S, c.Ev}).to(dt), g = make(gv, {c.B, c.L, c.Ev}).to(dt);
  attn::Options o;
  o.batch = {c.B};
  o.causal = c.causal;
  o.scale = scale;
  o.dropout_p = c.dropout_p;
  o.seed = seed;
  o.q_tile = 2;
  o.kv_tile = 3;
  if (c.mask) {
    std::vector<double> m(static_cast<size_t>(c.L * c.S));
    for (int64_t i = 0; i < c.L; ++i)
      for (int64_t j = 0; j < c.S; ++j) m[static_cast<size_t>(i * c.S + j)] = mask_at(c, i, j);
    o.mask = make(m, {c.L, c.S}).to(dt);  // broadcast over the batch: read through its strides
  }
  Tensor out = make_empty({c.B, c.L, c.Ev}, dt), lse = make_empty({c.B, c.L}, dt);
  attn::forward(q, k, v, o, out, lse);
  Tensor gq = make_empty(q.sizes(), dt), gk = make_empty(k.sizes(), dt), gvv = make_empty(v.sizes(), dt);
  attn::backward(q, k, v, o, out, lse, g, gq, gk, gvv);
  // The reference sees the values the kernel sees (rounded to dt).
  const Ref r = reference(c, values(q), values(k), values(v), values(g), scale, seed);
  const double tol = dt == kFloat32 ? 2e-5 : 1e-12;
  expect_near_all(values(out), r.out, tol, "out");
  expect_near_all(values(lse), r.lse, tol, "lse");
  expect_near_all(values(gq), r.dq, tol, "grad_q");
  expect_near_all(values(gk), r.dk, tol, "grad_k");
  expect_near_all(values(gvv), r.dv, tol, "grad_v");
}

TEST(AttentionKernels, PlainAgainstLoops) {
  for (DType dt : {kFloat64, kFloat32}) check(Case{}, dt);
}

TEST(AttentionKernels, CausalAgainstLoops) {
  for (DType dt : {kFloat64, kFloat32}) check(Case{.causal = true}, dt);
}

// A broadcast (L, S) mask with -inf entries and a fully masked row (output 0, lse +inf).
TEST(AttentionKernels, MaskWithAFullyMaskedRowAgainstLoops) {
  for (DType dt : {kFloat64, kFloat32}) check(Case{.mask = true}, dt);
}

TEST(AttentionKernels, DropoutAgainstLoops) {
  for (DType dt : {kFloat64, kFloat32}) check(Case{.causal = true, .dropout_p = 0.3}, dt);
}

}  // namespace attention_kernels_ref

}  // namespace graft::test
