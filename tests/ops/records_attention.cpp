// Op records: scaled_dot_product_attention against plain loops in double (unbatched, batched with
// heads, causal, bool and float masks, a fully masked row, a custom scale, large logits), with
// gradcheck (the memory-efficient kernel's backward in float64) and gradgradcheck (its
// create_graph path); a float mask that requires grad runs the plain path and gets its gradient.
#include <cmath>
#include <limits>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {

// softmax(q k^T scale + mask) v by loops over flattened (B, L, S); `mask(b, i, j)` is the additive
// mask (-inf: masked). Rows with every score -inf give 0. Shared with test_attention.cpp.
Tensor ref_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     const std::function<double(int64_t, int64_t, int64_t)>& mask, double scale) {
  const int64_t L = q.size(-2), S = k.size(-2), E = q.size(-1), Ev = v.size(-1);
  const int64_t B = q.numel() / (L * E);
  const std::vector<double> qv = values(q), kv = values(k), vv = values(v);
  std::vector<double> out(static_cast<size_t>(B * L * Ev), 0.0), s(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += qv[static_cast<size_t>((b * L + i) * E + e)] * kv[static_cast<size_t>((b * S + j) * E + e)];
        s[static_cast<size_t>(j)] = dot * scale + mask(b, i, j);
        mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      if (mx == -std::numeric_limits<double>::infinity()) continue;  // fully masked: 0
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += (s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - mx));
      for (int64_t j = 0; j < S; ++j)
        for (int64_t e = 0; e < Ev; ++e)
          out[static_cast<size_t>((b * L + i) * Ev + e)] += s[static_cast<size_t>(j)] / sum * vv[static_cast<size_t>((b * S + j) * Ev + e)];
    }
  std::vector<int64_t> shape(q.sizes().begin(), q.sizes().end());
  shape.back() = Ev;
  return make(out, shape);
}

namespace {

double no_mask(int64_t, int64_t, int64_t) { return 0; }

// A fixed bool mask over (L, S) = (3, 4) with row 2 fully masked.
const std::vector<double> kBoolMask = {1, 0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0};

std::vector<ErrorCase> sdpa_errors() {
  const auto q = [] { return zeros({2, 3, 4}); };
  return {
      {[q] { scaled_dot_product_attention(zeros({2, 3, 4}, kInt64), q(), q()); }, {"scaled_dot_product_attention", "int64", "floating-point"}},
      {[q] { scaled_dot_product_attention(q(), zeros({2, 3, 5}), q()); }, {"scaled_dot_product_attention", "key's last dim", "[2, 3, 5]"}},
      {[q] { scaled_dot_product_attention(q(), q(), zeros({2, 4, 4})); }, {"key and value of one length", "[2, 4, 4]"}},
      {[q] { scaled_dot_product_attention(q(), q(), q(), zeros({3, 3}, kBool), 0, true); }, {"either attn_mask or is_causal"}},
      {[q] { scaled_dot_product_attention(q(), q(), q(), zeros({2, 4}, kBool)); }, {"broadcastable", "[2, 4]", "view"}},
      {[q] { scaled_dot_product_attention(q(), q(), q(), zeros({3, 3}, kInt64)); }, {"attn_mask of dtype bool", "int64"}},
      {[q] { scaled_dot_product_attention(q(), q(), q(), std::nullopt, 1.5); }, {"dropout_p in [0, 1]", "1.5"}},
      {[] { scaled_dot_product_attention(zeros({4}), zeros({4}), zeros({4})); }, {"at least 2 dims", "[4]"}},
      {[q] { scaled_dot_product_attention(q(), zeros({3, 3, 4}), zeros({3, 3, 4})); }, {"equal leading dims"}},
  };
}

OpRecord sdpa_record(std::string variant, SampleSpecs specs, std::function<Tensor(const TensorList&)> fn,
                     std::function<double(int64_t, int64_t, int64_t)> mask,
                     std::optional<double> scale = std::nullopt) {
  return {.name = "scaled_dot_product_attention",
          .variant = std::move(variant),
          .fn = std::move(fn),
          .reference =
              [mask, scale](const TensorList& a) {
                return ref_attention(a[0], a[1], a[2], mask,
                                     scale ? *scale : 1.0 / std::sqrt(static_cast<double>(a[0].size(-1))));
              },
          .samples = lazy_samples(std::move(specs)),
          .atol32 = 1e-5,
          .rtol32 = 1e-4,
          .errors = sdpa_errors()};
}

}  // namespace

GRAFT_OP_RECORDS(attention) {
  std::vector<OpRecord> recs;
  recs.push_back(sdpa_record(
      "unbatched", {{{{3, 4}, 1, -1, 1}, {{5, 4}, 2, -1, 1}, {{5, 2}, 3, -1, 1}}},
      [](const TensorList& a) { return scaled_dot_product_attention(a[0], a[1], a[2]); }, no_mask));
  recs.push_back(sdpa_record(
      "heads", {{{{2, 2, 3, 4}, 4, -1, 1}, {{2, 2, 5, 4}, 5, -1, 1}, {{2, 2, 5, 3}, 6, -1, 1}}},
      [](const TensorList& a) { return scaled_dot_product_attention(a[0], a[1], a[2]); }, no_mask));
  recs.push_back(sdpa_record(
      "causal", {{{{2, 4, 3}, 7, -1, 1}, {{2, 5, 3}, 8, -1, 1}, {{2, 5, 2}, 9, -1, 1}}},
      [](const TensorList& a) { return scaled_dot_product_attention(a[0], a[1], a[2], {}, 0, true); },
      [](int64_t, int64_t i, int64_t j) { return j > i ? -kInf : 0.0; }));
  recs.push_back(sdpa_record(
      "bool_mask_empty_row", {{{{2, 3, 4}, 10, -1, 1}, {{2, 4, 4}, 11, -1, 1}, {{2, 4, 2}, 12, -1, 1}}},
      [](const TensorList& a) {
        return scaled_dot_product_attention(a[0], a[1], a[2], make(kBoolMask, {3, 4}).gt(0.5));
      },
      [](int64_t, int64_t i, int64_t j) { return kBoolMask[static_cast<size_t>(i * 4 + j)] > 0.5 ? 0.0 : -kInf; }));
  recs.push_back(sdpa_record(
      "scale_large_logits", {{{{1, 3, 4}, 13, 20, 30}, {{1, 6, 4}, 14, -30, 30}, {{1, 6, 3}, 15, -1, 1}}},
      [](const TensorList& a) { return scaled_dot_product_attention(a[0], a[1], a[2], {}, 0, false, 2.0); }, no_mask,
      2.0));
  // A float mask as a fourth, differentiable input: the plain path, with the mask's gradient.
  OpRecord fm = sdpa_record(
      "float_mask", {{{{2, 3, 4}, 16, -1, 1}, {{2, 4, 4}, 17, -1, 1}, {{2, 4, 2}, 18, -1, 1}, {{3, 4}, 19, -2, 2}}},
      [](const TensorList& a) { return scaled_dot_product_attention(a[0], a[1], a[2], a[3]); }, no_mask);
  fm.reference = [](const TensorList& a) {
    const std::vector<double> m = values(a[3]);
    return ref_attention(a[0], a[1], a[2], [m](int64_t, int64_t i, int64_t j) { return m[static_cast<size_t>(i * 4 + j)]; },
                         0.5);
  };
  recs.push_back(std::move(fm));
  return recs;
}

}  // namespace graft::test
