// Op records: batch_norm (training with batch statistics, evaluation with running statistics,
// (N, C) and (N, C, H, W) inputs, with and without affine parameters) and layer_norm, against
// plain loops in double; group_norm and instance_norm (train with and without running statistics,
// eval); plus the running-statistics update, momentum, grad_fn names.
#include <cmath>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

// Samples: r and S (tests/support/op_table.h), in [-2, 2) unless a record says otherwise.

constexpr double kEps = 1e-5;

// Per-channel mean and biased variance of x (N, C, *), two-pass in double.
void ref_channel_stats(const Tensor& x, std::vector<double>& mean, std::vector<double>& var) {
  const std::vector<double> v = values(x);
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  mean.assign(static_cast<size_t>(C), 0.0);
  var.assign(static_cast<size_t>(C), 0.0);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) s += v[static_cast<size_t>((n * C + c) * S + i)];
    const double m = s / static_cast<double>(N * S);
    double q = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) q += std::pow(v[static_cast<size_t>((n * C + c) * S + i)] - m, 2);
    mean[static_cast<size_t>(c)] = m;
    var[static_cast<size_t>(c)] = q / static_cast<double>(N * S);
  }
}

// y = (x - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c]
Tensor ref_batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const std::vector<double>& mean,
                      const std::vector<double>& var) {
  const std::vector<double> v = values(x);
  const std::vector<double> vw = w.defined() ? values(w) : std::vector<double>(), vb = b.defined() ? values(b) : std::vector<double>();
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  std::vector<double> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < S; ++i) {
        const auto k = static_cast<size_t>((n * C + c) * S + i), cc = static_cast<size_t>(c);
        double y = (v[k] - mean[cc]) / std::sqrt(var[cc] + kEps);
        if (!vw.empty()) y *= vw[cc];
        if (!vb.empty()) y += vb[cc];
        out[k] = y;
      }
  return make(out, x.sizes());
}

Tensor ref_batch_norm_train(const Tensor& x, const Tensor& w, const Tensor& b) {
  std::vector<double> mean, var;
  ref_channel_stats(x, mean, var);
  return ref_batch_norm(x, w, b, mean, var);
}

// Normalises each row of the trailing `m` values.
Tensor ref_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, int64_t m) {
  const std::vector<double> v = values(x);
  const std::vector<double> vw = w.defined() ? values(w) : std::vector<double>(), vb = b.defined() ? values(b) : std::vector<double>();
  std::vector<double> out(v.size());
  for (size_t r0 = 0; r0 < v.size(); r0 += static_cast<size_t>(m)) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < m; ++i) s += v[r0 + static_cast<size_t>(i)];
    const double mean = s / static_cast<double>(m);
    for (int64_t i = 0; i < m; ++i) q += std::pow(v[r0 + static_cast<size_t>(i)] - mean, 2);
    const double inv = 1.0 / std::sqrt(q / static_cast<double>(m) + kEps);
    for (int64_t i = 0; i < m; ++i) {
      const auto ii = static_cast<size_t>(i);
      double y = (v[r0 + ii] - mean) * inv;
      if (!vw.empty()) y *= vw[ii];
      if (!vb.empty()) y += vb[ii];
      out[r0 + ii] = y;
    }
  }
  return make(out, x.sizes());
}

// Group normalisation of x (N, C, *): each (sample, group of C / G channels) normalised together.
Tensor ref_group_norm(const Tensor& x, const Tensor& w, const Tensor& b, int64_t G) {
  const std::vector<double> v = values(x);
  const std::vector<double> vw = w.defined() ? values(w) : std::vector<double>(), vb = b.defined() ? values(b) : std::vector<double>();
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C), Cg = C / G, M = Cg * S;
  std::vector<double> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const int64_t base = (n * C + g * Cg) * S;
      double s = 0, q = 0;
      for (int64_t j = 0; j < M; ++j) s += v[static_cast<size_t>(base + j)];
      const double mean = s / static_cast<double>(M);
      for (int64_t j = 0; j < M; ++j) q += std::pow(v[static_cast<size_t>(base + j)] - mean, 2);
      const double inv = 1.0 / std::sqrt(q / static_cast<double>(M) + kEps);
      for (int64_t j = 0; j < M; ++j) {
        const auto k = static_cast<size_t>(base + j), c = static_cast<size_t>(g * Cg + j / S);
        double y = (v[k] - mean) * inv;
        if (!vw.empty()) y *= vw[c];
        if (!vb.empty()) y += vb[c];
        out[k] = y;
      }
    }
  return make(out, x.sizes());
}

Tensor at(const TensorList& t, size_t i) { return i < t.size() ? t[i] : Tensor(); }

// training: {x, weight, bias} (weight and bias optional); fresh running stats are updated inside.
OpRecord bn_train_record(std::string variant, Specs samples) {
  return {.name = "batch_norm", .variant = "train_" + variant,
          .fn = [](const TensorList& t) {
            const int64_t C = t[0].size(1);
            Tensor rm = zeros({C}, t[0].dtype()), rv = ones({C}, t[0].dtype());
            return F::batch_norm(t[0], rm, rv, F::BatchNormFuncOptions().weight(at(t, 1)).bias(at(t, 2)).training(true));
          },
          .reference = [](const TensorList& t) { return ref_batch_norm_train(t[0], at(t, 1), at(t, 2)); },
          .samples = lazy(std::move(samples)),
          .atol = 1e-9, .rtol = 1e-9, .atol32 = 2e-5, .rtol32 = 1e-4};
}

}  // namespace

GRAFT_OP_RECORDS(normalization) {
  std::vector<OpRecord> recs;
  recs.push_back(bn_train_record("4d", {{S({3, 2, 2, 3}, 1), S({2}, 2), S({2}, 3)}}));
  recs.back().errors = {
      {[] { F::batch_norm(zeros({3}), zeros({3}), ones({3})); }, {"batch_norm", "[3]", "at least 2 dims"}},
      {[] { F::batch_norm(zeros({2, 3}), zeros({3}), ones({3}), F::BatchNormFuncOptions().weight(ones({4}))); },
       {"batch_norm", "weight of shape [3]", "[4]", "[2, 3]"}},
      {[] { F::batch_norm(zeros({2, 3}), zeros({3}), ones({3}), F::BatchNormFuncOptions().bias(ones({3}, kFloat64))); },
       {"batch_norm", "bias", "float64", "float32"}},
      {[] { F::batch_norm(zeros({2, 3, 4}), zeros({2}), ones({3})); }, {"batch_norm", "running_mean of shape [3]", "[2]"}},
      {[] { F::batch_norm(zeros({2, 3}), zeros({3}), ones({3, 1})); }, {"batch_norm", "running_var", "[3, 1]"}},
      {[] { F::batch_norm(zeros({1, 3}), zeros({3}), ones({3}), F::BatchNormFuncOptions().training(true)); },
       {"batch_norm", "more than 1 value per channel", "[1, 3]"}},
      {[] { F::batch_norm(zeros({1, 3, 1, 1}), Tensor(), Tensor(), F::BatchNormFuncOptions().training(true)); },
       {"batch_norm", "more than 1 value per channel", "[1, 3, 1, 1]"}},
      {[] { F::batch_norm(zeros({2, 3}), Tensor(), Tensor()); }, {"batch_norm", "running_mean and running_var", "evaluation"}},
      {[] { F::batch_norm(zeros({2, 3}), zeros({3}), ones({3}), F::BatchNormFuncOptions().training(true).momentum(std::nullopt)); },
       {"batch_norm", "momentum"}},
      {[] { F::batch_norm(zeros({2, 3}, kInt64), zeros({3}), ones({3})); }, {"batch_norm", "floating-point", "int64"}}};
  recs.push_back(bn_train_record("2d", {{S({5, 3}, 4), S({3}, 5), S({3}, 6)}, {S({2, 1}, 7), S({1}, 8), S({1}, 9)}}));
  recs.push_back(bn_train_record("3d_no_affine", {{S({3, 2, 3}, 10)}}));
  recs.push_back(bn_train_record("weight_only", {{S({2, 2, 3}, 11), S({2}, 12)}}));
  recs.push_back({.name = "batch_norm", .variant = "train_no_running_stats",
                  .fn = [](const TensorList& t) {
                    return F::batch_norm(t[0], Tensor(), Tensor(), F::BatchNormFuncOptions().weight(t[1]).bias(t[2]).training(true));
                  },
                  .reference = [](const TensorList& t) { return ref_batch_norm_train(t[0], t[1], t[2]); },
                  .samples = [] { return std::vector<TensorList>{{r({4, 3, 2}, 13), r({3}, 14), r({3}, 15)}}; },
                  .atol = 1e-9, .rtol = 1e-9, .atol32 = 2e-5, .rtol32 = 1e-4});
  // eval: {x, weight, bias, running_mean, running_var}
  recs.push_back({.name = "batch_norm", .variant = "eval",
                  .fn = [](const TensorList& t) {
                    return F::batch_norm(t[0], t[3], t[4], F::BatchNormFuncOptions().weight(t[1]).bias(t[2]).eps(kEps));
                  },
                  .reference = [](const TensorList& t) {
                    return ref_batch_norm(t[0], t[1], t[2], values(t[3]), values(t[4]));
                  },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 3, 2, 2}, 16), r({3}, 17), r({3}, 18), r({3}, 19), r({3}, 20, 0.2, 2)},
                                                   {r({4, 2}, 21), r({2}, 22), r({2}, 23), r({2}, 24), r({2}, 25, 0.2, 2)}};
                  },
                  .differentiable = {true, true, true, false, false},
                  .atol32 = 2e-5, .rtol32 = 1e-4});
  recs.push_back({.name = "batch_norm", .variant = "eval_no_affine",
                  .fn = [](const TensorList& t) { return F::batch_norm(t[0], t[1], t[2]); },
                  .reference = [](const TensorList& t) { return ref_batch_norm(t[0], Tensor(), Tensor(), values(t[1]), values(t[2])); },
                  .samples = [] { return std::vector<TensorList>{{r({1, 3, 3}, 26), r({3}, 27), r({3}, 28, 0.2, 2)}}; },
                  .differentiable = {true, false, false},
                  .atol32 = 2e-5, .rtol32 = 1e-4});

  // layer_norm: {x, weight, bias}
  const auto ln = [](std::string variant, std::vector<int64_t> ns, Specs samples) {
    return OpRecord{.name = "layer_norm", .variant = std::move(variant),
                    .fn = [ns](const TensorList& t) {
                      return F::layer_norm(t[0], F::LayerNormFuncOptions(ns).weight(at(t, 1)).bias(at(t, 2)));
                    },
                    .reference = [ns](const TensorList& t) {
                      int64_t m = 1;
                      for (int64_t s : ns) m *= s;
                      return ref_layer_norm(t[0], at(t, 1), at(t, 2), m);
                    },
                    .samples = lazy(std::move(samples)),
                    .atol = 1e-9, .rtol = 1e-9, .atol32 = 2e-5, .rtol32 = 1e-4};
  };
  recs.push_back(ln("last_dim", {4}, {{S({3, 4}, 31), S({4}, 32), S({4}, 33)}, {S({2, 2, 4}, 34), S({4}, 35), S({4}, 36)}}));
  recs.back().errors = {
      {[] { F::layer_norm(zeros({2, 3}), F::LayerNormFuncOptions({4})); }, {"layer_norm", "[*, 4]", "[2, 3]"}},
      {[] { F::layer_norm(zeros({3}), F::LayerNormFuncOptions({2, 3})); }, {"layer_norm", "[*, 2, 3]", "[3]"}},
      {[] { F::layer_norm(zeros({2, 3}), F::LayerNormFuncOptions({3}).weight(ones({2}))); },
       {"layer_norm", "weight of shape [3]", "[2]"}},
      {[] { F::layer_norm(zeros({2, 3}), F::LayerNormFuncOptions({3}).bias(ones({3}, kFloat64))); },
       {"layer_norm", "bias", "float64"}},
      {[] { F::layer_norm(zeros({2, 3}), F::LayerNormFuncOptions(std::vector<int64_t>{})); }, {"layer_norm", "non-empty normalized_shape"}},
      {[] { F::layer_norm(zeros({2, 3}, kInt64), F::LayerNormFuncOptions({3})); }, {"layer_norm", "floating-point"}}};
  recs.push_back(ln("two_dims", {3, 2}, {{S({2, 3, 2}, 37), S({3, 2}, 38), S({3, 2}, 39)}}));
  recs.push_back(ln("whole_input", {2, 3}, {{S({2, 3}, 40), S({2, 3}, 41), S({2, 3}, 42)}}));
  recs.push_back(ln("no_affine", {5}, {{S({2, 5}, 43)}}));
  recs.push_back(ln("weight_only", {3}, {{S({4, 3}, 44), S({3}, 45)}}));
  // group_norm: {x, weight, bias}
  const auto gn = [](std::string variant, int64_t G, Specs samples) {
    return OpRecord{.name = "group_norm", .variant = std::move(variant),
                    .fn = [G](const TensorList& t) {
                      return F::group_norm(t[0], F::GroupNormFuncOptions(G).weight(at(t, 1)).bias(at(t, 2)));
                    },
                    .reference = [G](const TensorList& t) { return ref_group_norm(t[0], at(t, 1), at(t, 2), G); },
                    .samples = lazy(std::move(samples)),
                    .atol = 1e-9, .rtol = 1e-9, .atol32 = 2e-5, .rtol32 = 1e-4};
  };
  recs.push_back(gn("4d_2_groups", 2, {{S({2, 4, 2, 3}, 81), S({4}, 82), S({4}, 83)}}));
  recs.back().errors = {
      {[] { F::group_norm(zeros({2, 3, 4}), F::GroupNormFuncOptions(2)); }, {"group_norm", "divisible by num_groups", "3 channels"}},
      {[] { F::group_norm(zeros({3}), F::GroupNormFuncOptions(1)); }, {"group_norm", "at least 2 dims", "[3]"}},
      {[] { F::group_norm(zeros({2, 4}), F::GroupNormFuncOptions(0)); }, {"group_norm", "positive num_groups"}},
      {[] { F::group_norm(zeros({2, 4, 3}), F::GroupNormFuncOptions(2).weight(ones({2}))); },
       {"group_norm", "weight of shape [4]", "[2]"}},
      {[] { F::group_norm(zeros({2, 4}, kInt64), F::GroupNormFuncOptions(2)); }, {"group_norm", "floating-point"}}};
  recs.push_back(gn("3d_one_group", 1, {{S({3, 2, 4}, 84), S({2}, 85), S({2}, 86)}}));
  recs.push_back(gn("2d_no_affine", 1, {{S({2, 3}, 87)}}));  // (N, C): one group of all channels
  recs.push_back(gn("groups_of_2_no_affine", 3, {{S({4, 6, 1}, 88)}}));
  recs.push_back(gn("weight_only", 2, {{S({2, 2, 5}, 89), S({2}, 90)}}));

  // instance_norm with the input statistics: {x, weight, bias}; running statistics updated inside.
  recs.push_back({.name = "instance_norm", .variant = "train",
                  .fn = [](const TensorList& t) {
                    const int64_t C = t[0].size(1);
                    return F::instance_norm(t[0], F::InstanceNormFuncOptions()
                                                      .weight(at(t, 1)).bias(at(t, 2))
                                                      .running_mean(zeros({C}, t[0].dtype()))
                                                      .running_var(ones({C}, t[0].dtype())));
                  },
                  .reference = [](const TensorList& t) { return ref_group_norm(t[0], at(t, 1), at(t, 2), t[0].size(1)); },
                  .samples = lazy({{S({2, 3, 2, 2}, 91), S({3}, 92), S({3}, 93)}, {S({3, 2, 4}, 94), S({2}, 95), S({2}, 96)}}),
                  .atol = 1e-9, .rtol = 1e-9, .atol32 = 2e-5, .rtol32 = 1e-4,
                  .errors = {
                      {[] { F::instance_norm(zeros({2, 3, 1})); }, {"instance_norm", "more than 1 spatial element", "[2, 3, 1]"}},
                      {[] { F::instance_norm(zeros({2, 3, 4}), F::InstanceNormFuncOptions().use_input_stats(false)); },
                       {"instance_norm", "running_mean and running_var when use_input_stats is false"}},
                      {[] { F::instance_norm(zeros({2, 3, 4}), F::InstanceNormFuncOptions().running_mean(zeros({2}))); },
                       {"instance_norm", "running_mean of shape [3]", "[2]"}},
                      {[] { F::instance_norm(zeros({2, 3, 4}), F::InstanceNormFuncOptions().weight(ones({4}))); },
                       {"instance_norm", "weight of shape [3]", "[4]"}},
                      {[] { F::instance_norm(zeros({3})); }, {"instance_norm", "at least 2 dims"}}}});
  recs.push_back({.name = "instance_norm", .variant = "train_no_stats_no_affine",
                  .fn = [](const TensorList& t) { return F::instance_norm(t[0]); },
                  .reference = [](const TensorList& t) { return ref_group_norm(t[0], Tensor(), Tensor(), t[0].size(1)); },
                  .samples = lazy({{S({2, 2, 5}, 97)}}),
                  .atol = 1e-9, .rtol = 1e-9, .atol32 = 2e-5, .rtol32 = 1e-4});
  // eval with running statistics: {x, weight, bias, running_mean, running_var}
  recs.push_back({.name = "instance_norm", .variant = "eval",
                  .fn = [](const TensorList& t) {
                    return F::instance_norm(t[0], F::InstanceNormFuncOptions()
                                                      .weight(t[1]).bias(t[2]).running_mean(t[3]).running_var(t[4])
                                                      .use_input_stats(false));
                  },
                  .reference = [](const TensorList& t) {
                    return ref_batch_norm(t[0], t[1], t[2], values(t[3]), values(t[4]));
                  },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 3, 2, 2}, 98), r({3}, 99), r({3}, 100), r({3}, 101), r({3}, 102, 0.2, 2)}};
                  },
                  .differentiable = {true, true, true, false, false},
                  .atol32 = 2e-5, .rtol32 = 1e-4});
  return recs;
}

namespace {

TEST(BatchNorm, RunningStatsUpdateWithUnbiasedVariance) {
  const Tensor x = r({4, 2, 3}, 51);
  std::vector<double> mean, var;
  ref_channel_stats(x, mean, var);
  Tensor rm = tensor({0.5, -1.0}, kFloat64), rv = tensor({2.0, 0.5}, kFloat64);
  const uint32_t v0 = rm._version();
  F::batch_norm(x, rm, rv, F::BatchNormFuncOptions().training(true).momentum(0.3));
  const double n = 12;
  EXPECT_TRUE(all_close(rm, {0.7 * 0.5 + 0.3 * mean[0], 0.7 * -1.0 + 0.3 * mean[1]}, {2}, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(rv, {0.7 * 2.0 + 0.3 * var[0] * n / (n - 1), 0.7 * 0.5 + 0.3 * var[1] * n / (n - 1)}, {2}, 1e-12,
                        1e-12));
  EXPECT_GT(rm._version(), v0);
  // eval leaves them alone and uses them
  const Tensor before = rm.clone();
  const Tensor y = F::batch_norm(x, rm, rv);
  EXPECT_TRUE(all_close(rm, before, 0, 0));
  EXPECT_TRUE(all_close(y, ref_batch_norm(x, Tensor(), Tensor(), values(rm), values(rv)), 1e-12, 1e-12));
  // float32 running stats with a float64 input, and non-contiguous running stats
  Tensor rm32 = zeros({2});
  Tensor wide = zeros({2, 2}, kFloat64);
  Tensor rvnc = wide.select(1, 0);
  F::batch_norm(x, rm32, rvnc, F::BatchNormFuncOptions().training(true).momentum(1.0));
  EXPECT_TRUE(all_close(rm32, mean, {2}, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(rvnc, {var[0] * n / (n - 1), var[1] * n / (n - 1)}, {2}, 1e-12, 1e-12));
}

TEST(BatchNorm, FusedBackwardMatchesHandFormula) {
  // dx = invstd / M * (M dy w - sum(dy w) - xhat sum(dy w xhat)) per channel, with a fixed dy.
  const Tensor x = r({3, 2, 2}, 61).requires_grad_(), w = r({2}, 62).requires_grad_(), b = r({2}, 63).requires_grad_();
  const Tensor dy = r({3, 2, 2}, 64);
  F::batch_norm(x, Tensor(), Tensor(), F::BatchNormFuncOptions().weight(w).bias(b).training(true)).backward(dy);
  std::vector<double> mean, var;
  ref_channel_stats(x.detach(), mean, var);
  const auto vx = values(x), vdy = values(dy), vw = values(w);
  std::vector<double> gx(12), gw(2), gb(2);
  const double M = 6;
  for (size_t c = 0; c < 2; ++c) {
    const double inv = 1 / std::sqrt(var[c] + kEps);
    double s1 = 0, s2 = 0;
    for (size_t n = 0; n < 3; ++n)
      for (size_t i = 0; i < 2; ++i) {
        const size_t k = (n * 2 + c) * 2 + i;
        const double xhat = (vx[k] - mean[c]) * inv;
        s1 += vdy[k] * vw[c];
        s2 += vdy[k] * vw[c] * xhat;
        gw[c] += vdy[k] * xhat;
        gb[c] += vdy[k];
      }
    for (size_t n = 0; n < 3; ++n)
      for (size_t i = 0; i < 2; ++i) {
        const size_t k = (n * 2 + c) * 2 + i;
        const double xhat = (vx[k] - mean[c]) * inv;
        gx[k] = inv / M * (M * vdy[k] * vw[c] - s1 - xhat * s2);
      }
  }
  EXPECT_TRUE(all_close(x.grad(), gx, {3, 2, 2}, 1e-9, 1e-9));
  EXPECT_TRUE(all_close(w.grad(), gw, {2}, 1e-9, 1e-9));
  EXPECT_TRUE(all_close(b.grad(), gb, {2}, 1e-9, 1e-9));
}

TEST(Normalization, GradFnNamesAndLargeOffsets) {
  const Tensor x = r({4, 3}, 71).requires_grad_();
  EXPECT_EQ(F::batch_norm(x, Tensor(), Tensor(), F::BatchNormFuncOptions().training(true)).grad_fn()->name(),
               "NativeBatchNormBackward0");
  EXPECT_EQ(F::layer_norm(x, F::LayerNormFuncOptions({3})).grad_fn()->name(), "NativeLayerNormBackward0");
  // Values far from 0 with a small spread: the one-pass statistics keep full precision.
  const Tensor big = r({8, 3}, 72) + 1e6;
  EXPECT_TRUE(all_close(F::batch_norm(big, Tensor(), Tensor(), F::BatchNormFuncOptions().training(true)),
                        ref_batch_norm_train(big, Tensor(), Tensor()), 1e-7, 1e-7));
  EXPECT_TRUE(all_close(F::layer_norm(big, F::LayerNormFuncOptions({3})), ref_layer_norm(big, Tensor(), Tensor(), 3), 1e-7, 1e-7));
  const Tensor big32 = big.to(kFloat32);
  EXPECT_TRUE(all_close(F::layer_norm(big32, F::LayerNormFuncOptions({3})),
                        ref_layer_norm(big32.to(kFloat64), Tensor(), Tensor(), 3), 1e-4, 1e-4));
}

TEST(InstanceNorm, RunningStatsAreTheBatchMeanOfTheInstanceUpdates) {
  const Tensor x = r({3, 2, 4}, 111);
  Tensor rm = tensor({0.5, -1.0}, kFloat64), rv = tensor({2.0, 0.5}, kFloat64);
  const std::vector<double> rm0 = values(rm), rv0 = values(rv);
  F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).momentum(0.3));
  // each (n, c): (1 - m) running + m stat (unbiased var over the 4 values); then averaged over n
  const auto v = values(x);
  for (size_t c = 0; c < 2; ++c) {
    double em = 0, ev = 0;
    for (size_t n = 0; n < 3; ++n) {
      double s = 0, q = 0;
      for (size_t i = 0; i < 4; ++i) s += v[(n * 2 + c) * 4 + i];
      const double mean = s / 4;
      for (size_t i = 0; i < 4; ++i) q += std::pow(v[(n * 2 + c) * 4 + i] - mean, 2);
      em += (0.7 * rm0[c] + 0.3 * mean) / 3;
      ev += (0.7 * rv0[c] + 0.3 * q / 3) / 3;
    }
    EXPECT_NEAR(values(rm)[c], em, 1e-12);
    EXPECT_NEAR(values(rv)[c], ev, 1e-12);
  }
  const Tensor xg = r({2, 4, 3}, 112).requires_grad_();
  EXPECT_EQ(F::group_norm(xg, F::GroupNormFuncOptions(2)).grad_fn()->name(), "NativeGroupNormBackward0");
  // Values far from 0 with a small spread keep full precision.
  const Tensor big = r({2, 4, 3}, 113) + 1e6;
  EXPECT_TRUE(all_close(F::group_norm(big, F::GroupNormFuncOptions(2)), ref_group_norm(big, Tensor(), Tensor(), 2), 1e-7, 1e-7));
}

}  // namespace
}  // namespace graft::test
