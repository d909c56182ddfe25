// Op records: linear_cross_entropy (Note [Linear cross-entropy in chunks] in
// src/ops/linear_cross_entropy.cpp), every reduction, with and without a bias and label smoothing,
// chunks that do not divide the rows. The reference is a plain loop in double written here from
// the definition: logits l = x W^T + b, loss_i = lse_i - (1 - eps) l_{i, t_i} - eps / V sum_v l_iv.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace lce_records {

// a = {x (*, in), W (V, in), [b (V)], t (*)}: the bias is there when a has 4 entries.
Tensor lce_bias(const TensorList& a) { return a.size() == 4 ? a[2] : Tensor(); }

Tensor lce_reference(const TensorList& a, Reduction red, int64_t ignore, double eps) {
  const Tensor& x = a[0];
  const Tensor& w = a[1];
  const Tensor b = lce_bias(a);
  const int64_t in = w.size(1), V = w.size(0), N = x.numel() / in;
  const std::vector<double> xv = values(x), wv = values(w), bv = b.defined() ? values(b) : std::vector<double>();
  const std::vector<double> tv = values(a.back());
  std::vector<double> losses;
  double sum = 0;
  int64_t counted = 0;
  for (int64_t i = 0; i < N; ++i) {
    const auto ti = static_cast<int64_t>(tv[static_cast<size_t>(i)]);
    std::vector<double> l(static_cast<size_t>(V));
    for (int64_t v = 0; v < V; ++v) {
      double z = bv.empty() ? 0.0 : bv[static_cast<size_t>(v)];
      for (int64_t k = 0; k < in; ++k) z += xv[static_cast<size_t>(i * in + k)] * wv[static_cast<size_t>(v * in + k)];
      l[static_cast<size_t>(v)] = z;
    }
    if (ti == ignore) {
      losses.push_back(0.0);
      continue;
    }
    double m = -INFINITY, s = 0, sl = 0;
    for (double z : l) m = std::max(m, z);
    for (double z : l) {
      s += std::exp(z - m);
      sl += z;
    }
    const double lse = m + std::log(s);
    const double loss = lse - (1 - eps) * l[static_cast<size_t>(ti)] - eps / static_cast<double>(V) * sl;
    losses.push_back(loss);
    sum += loss;
    ++counted;
  }
  if (red == kNone) return make(losses, a.back().sizes());
  return make({red == kSum ? sum : sum / static_cast<double>(counted)}, {});
}

}  // namespace lce_records

GRAFT_OP_RECORDS(linear_cross_entropy) {
  namespace F = nn::functional;
  std::vector<OpRecord> recs;
  auto t_of = [](const std::vector<double>& v, IntArrayRef shape) { return make(v, shape, kInt64); };
  const std::vector<ErrorCase> errors{
      {[] {
         F::linear_cross_entropy(zeros({3, 4}), zeros({5, 2}), Tensor(), zeros({3}, kInt64));
       },
       {"linear_cross_entropy", "[3, 4]", "[5, 2]", "in_features"}},
      {[] {
         F::linear_cross_entropy(zeros({3, 4}), zeros({5, 4}), zeros({4}), zeros({3}, kInt64));
       },
       {"linear_cross_entropy", "bias", "[5]", "[4]"}},
      {[] {
         F::linear_cross_entropy(zeros({3, 4}), zeros({5, 4}), Tensor(), zeros({2}, kInt64));
       },
       {"linear_cross_entropy", "target of shape [3]", "[2]"}},
      {[] {
         F::linear_cross_entropy(zeros({3, 4}), zeros({5, 4}), Tensor(), zeros({3}));
       },
       {"linear_cross_entropy", "int64", "float32"}},
      {[] {
         F::linear_cross_entropy(zeros({2, 4}), zeros({5, 4}), Tensor(), tensor<int64_t>({1, 5}));
       },
       {"linear_cross_entropy", "target value 5", "V = weight.size(0) = 5"}},
      {[] {
         F::linear_cross_entropy(zeros({2, 4}), zeros({5, 4}, kFloat64), Tensor(), tensor<int64_t>({1, 0}));
       },
       {"linear_cross_entropy", "one dtype", "float32", "float64"}},
      {[] {
         F::linear_cross_entropy(zeros({2, 4}), zeros({5, 4}), Tensor(), tensor<int64_t>({1, 0}),
                                 F::LinearCrossEntropyFuncOptions().label_smoothing(-0.5));
       },
       {"linear_cross_entropy", "label_smoothing", "-0.5"}},
      {[] {
         F::linear_cross_entropy(zeros({2, 4}), zeros({5, 4}), Tensor(), tensor<int64_t>({1, 0}),
                                 F::LinearCrossEntropyFuncOptions().chunk_size(-1));
       },
       {"linear_cross_entropy", "chunk_size", "-1"}},
  };
  struct Variant {
    std::string name;
    bool bias;
    int64_t ignore;
    double eps;
    int64_t chunk;
  };
  const std::vector<Variant> variants{{"bias_chunk2", true, -100, 0.0, 2},
                                      {"no_bias_smooth_chunk3_ignore1", false, 1, 0.2, 3},
                                      {"bias_auto_chunk", true, -100, 0.1, 0}};
  for (Reduction red : kReductions) {
    for (const Variant& v : variants) {
      recs.push_back(
          {.name = "linear_cross_entropy",
           .variant = rname(red) + "_" + v.name,
           .fn =
               [red, v](const TensorList& a) {
                 return F::linear_cross_entropy(a[0], a[1], lce_records::lce_bias(a), a.back(),
                                                F::LinearCrossEntropyFuncOptions()
                                                    .reduction(red)
                                                    .ignore_index(v.ignore)
                                                    .label_smoothing(v.eps)
                                                    .chunk_size(v.chunk));
               },
           .reference = [red, v](const TensorList& a) { return lce_records::lce_reference(a, red, v.ignore, v.eps); },
           .samples =
               [v, t_of] {
                 const auto ig = static_cast<double>(v.ignore);
                 // 5 rows (not a multiple of 2 or 3) and, second, (2, 3) leading dims folded into 6 rows.
                 std::vector<TensorList> s{
                     {r({5, 3}, 301), r({4, 3}, 302), r({4}, 303), t_of({0, 3, ig, 1, 2}, {5})},
                     {r({2, 3, 3}, 304), r({4, 3}, 305), r({4}, 306), t_of({2, ig, 0, 3, 3, 1}, {2, 3})}};
                 if (!v.bias)
                   for (auto& t : s) t.erase(t.begin() + 2);
                 return s;
               },
           .differentiable = v.bias ? std::vector<bool>{true, true, true, false} : std::vector<bool>{true, true, false},
           .errors = errors});
    }
  }
  return recs;
}

}  // namespace graft::test
