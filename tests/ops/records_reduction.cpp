// Op records: sum, mean, var, std, prod, max, min, amax, amin, argmax, argmin, logsumexp, sum_to; plus plain
// tests for what the table cannot express (gradients at zeros for prod, tie splitting for amax/max,
// NaN propagation, indices of max/min along a dim, degenerate var/std, infinities in logsumexp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr IntArrayRef kScalarShape{};  // the shape of a 0-dim tensor

// ---- reference: reductions as plain loops in double ----
// The slices of x over `dims` (all dims when empty; negative dims count from the end), each in
// row-major order over the reduced dims, and the output shape.
struct Slices {
  std::vector<int64_t> out_shape;
  std::vector<std::vector<double>> rows;
};

Slices slices_of(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const std::vector<int64_t> shape = x.sizes().vec();
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<bool> red(shape.size(), dims.empty());
  for (int64_t d : dims) {
    if (nd == 0) continue;
    red[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  }
  Slices s;
  int64_t n_out = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!red[d]) {
      s.out_shape.push_back(shape[d]);
      n_out *= shape[d];
    } else if (keepdim) {
      s.out_shape.push_back(1);
    }
  }
  s.rows.assign(static_cast<size_t>(n_out), {});
  const std::vector<double> v = values(x);
  std::vector<int64_t> coord(shape.size(), 0);
  for (size_t flat = 0; flat < v.size(); ++flat) {
    int64_t rem = static_cast<int64_t>(flat);
    for (size_t d = shape.size(); d-- > 0;) {
      coord[d] = rem % shape[d];
      rem /= shape[d];
    }
    int64_t key = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!red[d]) key = key * shape[d] + coord[d];
    s.rows[static_cast<size_t>(key)].push_back(v[flat]);
  }
  return s;
}

Tensor ref_reduce_dims(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
                       const std::function<double(const std::vector<double>&)>& f) {
  Slices s = slices_of(x, std::move(dims), keepdim);
  std::vector<double> out;
  for (const auto& row : s.rows) out.push_back(f(row));
  return make(out, s.out_shape);
}

double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double a : v) s += a;
  return s;
}
double ref_mean(const std::vector<double>& v) { return ref_sum(v) / static_cast<double>(v.size()); }
double ref_var(const std::vector<double>& v, int correction) {
  if (static_cast<int>(v.size()) - correction <= 0) return kNaN;
  const double m = ref_mean(v);
  double s = 0;
  for (double a : v) s += (a - m) * (a - m);
  return s / static_cast<double>(static_cast<int>(v.size()) - correction);
}
double ref_prod(const std::vector<double>& v) {
  double p = 1;
  for (double a : v) p *= a;
  return p;
}
// Index of the first max (greater) / min, a NaN counting as the extreme.
double ref_arg(const std::vector<double>& v, bool greater) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (greater ? v[i] > v[best] : v[i] < v[best]) best = i;
  }
  return static_cast<double>(best);
}
double ref_extreme(const std::vector<double>& v, bool greater) { return v[static_cast<size_t>(ref_arg(v, greater))]; }
double ref_lse(const std::vector<double>& v) {
  double m = -kInf;
  for (double a : v) m = std::max(m, a);
  if (std::isinf(m)) return m;
  double s = 0;
  for (double a : v) s += std::exp(a - m);
  return m + std::log(s);
}

// Signed values with |x| in [0.5, 1.5]: no zeros, products stay moderate.
Tensor r_away_from_zero(IntArrayRef shape, uint64_t seed) {
  Tensor t = r(shape, seed, -1, 1);
  std::vector<double> v = values(t);
  for (double& a : v) a = a < 0 ? a - 0.5 : a + 0.5;
  return make(v, shape);
}

// A reduction record over `dims` with `keepdim`; `f` calls the op, `ref` reduces one slice.
OpRecord reduction_record(std::string name, std::string variant, std::vector<int64_t> dims, bool keepdim,
                          std::function<Tensor(const Tensor&)> f, std::function<double(const std::vector<double>&)> ref,
                          std::function<std::vector<TensorList>()> samples) {
  return OpRecord{
      .name = std::move(name),
      .variant = std::move(variant),
      .fn = [f](const TensorList& a) { return f(a[0]); },
      .reference = [dims, keepdim, ref](const TensorList& a) { return ref_reduce_dims(a[0], dims, keepdim, ref); },
      .samples = std::move(samples)};
}

std::vector<TensorList> shapes_234(uint64_t seed) { return {{r({2, 3, 4}, seed)}}; }

ErrorCase dim_out_of_range(std::function<void(const Tensor&)> f, const std::string& op) {
  return {[f] { f(zeros({2, 3})); }, {op, "dim 2", "[-2, 1]"}};
}
ErrorCase repeated_dims(std::function<void(const Tensor&)> f, const std::string& op) {
  return {[f] { f(zeros({2, 3})); }, {op, "each dim at most once", "[1, -1]"}};
}
ErrorCase not_floating(std::function<void(const Tensor&)> f, const std::string& op) {
  return {[f] { f(arange(6).reshape({2, 3})); }, {op, "floating-point", "int64"}};
}
ErrorCase empty_all(std::function<void(const Tensor&)> f, const std::string& op) {
  return {[f] { f(zeros({0, 3})); }, {op, "non-empty", "[0, 3]", "numel() == 0"}};
}
ErrorCase empty_dim(std::function<void(const Tensor&)> f, const std::string& op) {
  return {[f] { f(zeros({3, 0})); }, {op, "non-zero size", "dim 1 of size 0", "[3, 0]"}};
}

// sum_to(x, shape): every element of x adds into the element of `shape` it broadcasts from (leading
// dims of x dropped, size-1 dims of `shape` pinned to 0); a plain loop over x's row-major indices.
Tensor ref_sum_to(const Tensor& x, const std::vector<int64_t>& shape) {
  const std::vector<double> v = values(x);
  const std::vector<int64_t> xs(x.sizes().begin(), x.sizes().end());
  const size_t lead = xs.size() - shape.size();
  int64_t n_out = 1;
  for (int64_t s : shape) n_out *= s;
  std::vector<double> out(static_cast<size_t>(n_out), 0.0);
  std::vector<int64_t> coord(xs.size(), 0);
  for (size_t flat = 0; flat < v.size(); ++flat) {
    int64_t key = 0;
    for (size_t d = 0; d < shape.size(); ++d) key = key * shape[d] + (shape[d] == 1 ? 0 : coord[lead + d]);
    out[static_cast<size_t>(key)] += v[flat];
    for (size_t d = xs.size(); d-- > 0;) {  // next row-major coordinate
      if (++coord[d] < xs[d]) break;
      coord[d] = 0;
    }
  }
  return make(out, shape);
}

OpRecord sum_to_record(std::string variant, std::vector<int64_t> shape, SampleSpecs samples) {
  return {.name = "sum_to", .variant = std::move(variant),
          .fn = [shape](const TensorList& a) { return sum_to(a[0], shape); },
          .reference = [shape](const TensorList& a) { return ref_sum_to(a[0], shape); },
          .samples = lazy_samples(std::move(samples))};
}

}  // namespace

GRAFT_OP_RECORDS(reduction) {
  std::vector<OpRecord> recs;
  // ---- sum ----
  recs.push_back(reduction_record("sum", "all", {}, false, [](const Tensor& x) { return x.sum(); }, ref_sum,
                                  [] { return std::vector<TensorList>{{r({2, 3, 4}, 1)}, {r({5}, 2)}, {r({}, 3)}}; }));
  recs.back().errors = {dim_out_of_range([](const Tensor& x) { sum(x, {2}); }, "sum"),
                        repeated_dims([](const Tensor& x) { sum(x, {1, -1}); }, "sum"),
                        {[] { sum(tensor(1.0), {0, -1}); }, {"sum", "each dim at most once", "[0, -1]"}}};
  recs.push_back(reduction_record("sum", "dim1", {1}, false, [](const Tensor& x) { return x.sum({1}); }, ref_sum,
                                  [] { return shapes_234(4); }));
  recs.push_back(reduction_record("sum", "dims02_keepdim", {0, 2}, true,
                                  [](const Tensor& x) { return x.sum({2, 0}, true); }, ref_sum, [] { return shapes_234(5); }));
  recs.push_back(reduction_record("sum", "negative_dims", {-1, -3}, false,
                                  [](const Tensor& x) { return x.sum({-1, -3}); }, ref_sum, [] { return shapes_234(6); }));
  {
    OpRecord rec = reduction_record("sum", "dtype_float64", {1}, false,
                                    [](const Tensor& x) { return sum(x, {1}, false, kFloat64); }, ref_sum,
                                    [] { return std::vector<TensorList>{{r({3, 4}, 7)}}; });
    rec.float32 = false;  // the result is float64 whatever the input
    rec.errors = {{[] { sum(zeros({2}), {0}, false, kBool); }, {"sum", "bool"}}};
    recs.push_back(rec);
  }
  {
    OpRecord rec = reduction_record("sum", "int64", {0}, false, [](const Tensor& x) {
      Tensor y = x.sum({0});
      EXPECT_EQ(y.dtype(), kInt64);
      return y;
    }, ref_sum, [] { return std::vector<TensorList>{{arange(-4, 8).reshape({3, 4})}}; });
    rec.gradcheck = false;
    recs.push_back(rec);
  }
  // ---- mean ----
  recs.push_back(reduction_record("mean", "all", {}, false, [](const Tensor& x) { return x.mean(); }, ref_mean,
                                  [] { return std::vector<TensorList>{{r({2, 3, 4}, 8)}, {r({}, 9)}}; }));
  recs.back().errors = {{[] { mean(arange(4)); }, {"mean", "floating-point", "int64", "dtype"}},
                        dim_out_of_range([](const Tensor& x) { mean(x, {2}); }, "mean"),
                        repeated_dims([](const Tensor& x) { mean(x, {1, -1}); }, "mean")};
  recs.push_back(reduction_record("mean", "dims12_keepdim", {1, 2}, true,
                                  [](const Tensor& x) { return x.mean({1, 2}, true); }, ref_mean, [] { return shapes_234(10); }));
  recs.push_back(reduction_record("mean", "negative_dim", {-2}, false, [](const Tensor& x) { return x.mean({-2}); },
                                  ref_mean, [] { return shapes_234(11); }));
  {
    OpRecord rec = reduction_record("mean", "int_input_dtype", {1}, false,
                                    [](const Tensor& x) { return mean(x, {1}, false, kFloat64); }, ref_mean,
                                    [] { return std::vector<TensorList>{{arange(-3, 9).reshape({3, 4})}}; });
    rec.gradcheck = false;
    rec.float32 = false;
    recs.push_back(rec);
  }
  // ---- var / std ----
  recs.push_back(reduction_record("var", "all_unbiased", {}, false, [](const Tensor& x) { return x.var(); },
                                  [](auto& v) { return ref_var(v, 1); },
                                  [] { return std::vector<TensorList>{{r({2, 3, 4}, 12)}, {r({7}, 13)}}; }));
  recs.back().errors = {not_floating([](const Tensor& x) { var(x); }, "var"),
                        dim_out_of_range([](const Tensor& x) { var(x, {2}, true); }, "var"),
                        repeated_dims([](const Tensor& x) { var(x, {1, -1}); }, "var")};
  recs.push_back(reduction_record("var", "dim1_biased", {1}, false, [](const Tensor& x) { return x.var({1}, false); },
                                  [](auto& v) { return ref_var(v, 0); }, [] { return shapes_234(14); }));
  recs.push_back(reduction_record("var", "dims_neg_keepdim", {0, -1}, true,
                                  [](const Tensor& x) { return var(x, {-1, 0}, true, true); },
                                  [](auto& v) { return ref_var(v, 1); }, [] { return shapes_234(15); }));
  recs.push_back(reduction_record("var", "offset_1e6", {1}, false, [](const Tensor& x) { return var(x + 1e6, {1}, true); },
                                  [](auto& v) { return ref_var(v, 1); },  // var is shift invariant
                                  [] { return std::vector<TensorList>{{r({3, 5}, 16)}}; }));
  recs.back().atol = 1e-8;
  recs.back().atol32 = 0.5;  // float32 cannot hold 1e6 + x to better than 0.06
  recs.back().rtol32 = 0.5;
  recs.push_back(reduction_record("std", "all_unbiased", {}, false, [](const Tensor& x) { return x.std(); },
                                  [](auto& v) { return std::sqrt(ref_var(v, 1)); },
                                  [] { return std::vector<TensorList>{{r({2, 3, 4}, 17)}, {r({6}, 18)}}; }));
  recs.back().errors = {not_floating([](const Tensor& x) { graft::std(x, {0}, true); }, "std"),
                        dim_out_of_range([](const Tensor& x) { graft::std(x, {2}, true); }, "std"),
                        repeated_dims([](const Tensor& x) { graft::std(x, {1, -1}); }, "std")};
  recs.push_back(reduction_record("std", "dim2_biased_keepdim", {2}, true,
                                  [](const Tensor& x) { return x.std({2}, false, true); },
                                  [](auto& v) { return std::sqrt(ref_var(v, 0)); }, [] { return shapes_234(19); }));
  recs.push_back(reduction_record("std", "dims01", {0, 1}, false, [](const Tensor& x) { return x.std({0, 1}); },
                                  [](auto& v) { return std::sqrt(ref_var(v, 1)); }, [] { return shapes_234(20); }));
  // ---- prod (no zeros here: see the plain tests below) ----
  recs.push_back(reduction_record(
      "prod", "all", {}, false, [](const Tensor& x) { return x.prod(); }, ref_prod,
      [] {
        return std::vector<TensorList>{{r_away_from_zero({2, 3}, 21)}, {r_away_from_zero({}, 22)}};
      }));
  recs.back().errors = {dim_out_of_range([](const Tensor& x) { prod(x, {2}); }, "prod"),
                        repeated_dims([](const Tensor& x) { prod(x, {1, -1}); }, "prod"),
                        {[] { prod(zeros({2}), {0}, false, kBool); }, {"prod", "bool"}}};
  recs.push_back(reduction_record(
      "prod", "dim1", {1}, false, [](const Tensor& x) { return x.prod({1}); }, ref_prod,
      [] {
        return std::vector<TensorList>{{r_away_from_zero({2, 3, 4}, 23)}};
      }));
  recs.push_back(reduction_record(
      "prod", "dims_neg_keepdim", {-1, 0}, true,
      [](const Tensor& x) {
        return x.prod({-1, 0}, true);
      },
      ref_prod,
      [] {
        return std::vector<TensorList>{{r_away_from_zero({2, 3, 4}, 24)}};
      }));
  {
    OpRecord rec = reduction_record("prod", "int64", {1}, false, [](const Tensor& x) {
      Tensor y = x.prod({1});
      EXPECT_EQ(y.dtype(), kInt64);
      return y;
    }, ref_prod, [] { return std::vector<TensorList>{{arange(-5, 7).reshape({3, 4})}}; });
    rec.gradcheck = false;
    recs.push_back(rec);
  }
  {
    OpRecord rec = reduction_record(
        "prod", "dtype_float64", {0}, false, [](const Tensor& x) { return prod(x, {0}, false, kFloat64); }, ref_prod,
        [] {
          return std::vector<TensorList>{{r_away_from_zero({3, 2}, 25)}};
        });
    rec.float32 = false;
    recs.push_back(rec);
  }
  // ---- max / min (random samples: no ties) ----
  for (bool greater : {true, false}) {
    const std::string op = greater ? "max" : "min";
    auto ext = [greater](auto& v) { return ref_extreme(v, greater); };
    recs.push_back(reduction_record(op, "all", {}, false,
                                    [greater](const Tensor& x) { return greater ? x.max() : x.min(); }, ext,
                                    [] { return std::vector<TensorList>{{r({3, 4}, 26)}, {r({}, 27)}}; }));
    recs.back().errors = {empty_all([greater](const Tensor& x) { greater ? max(x) : min(x); }, op),
                          dim_out_of_range([greater](const Tensor& x) { greater ? max(x, 2) : min(x, 2); }, op),
                          empty_dim([greater](const Tensor& x) { greater ? max(x, 1) : min(x, 1); }, op)};
    recs.push_back(reduction_record(op, "dim", {1}, false,
                                    [greater](const Tensor& x) { return std::get<0>(greater ? x.max(1) : x.min(1)); }, ext,
                                    [] { return shapes_234(28); }));
    recs.push_back(reduction_record(op, "dim_neg_keepdim", {-1}, true,
                                    [greater](const Tensor& x) { return std::get<0>(greater ? max(x, -1, true) : min(x, -1, true)); },
                                    ext, [] { return shapes_234(29); }));
    OpRecord idx = reduction_record(op, "dim_indices", {0}, false,
                                    [greater](const Tensor& x) { return std::get<1>(greater ? max(x, 0) : min(x, 0)); },
                                    [greater](auto& v) { return ref_arg(v, greater); }, [] {
                                      return std::vector<TensorList>{{r({3, 4}, 30)},
                                                                     {make({1, 3, 3, 2, 0, 0, 5, 5, 1}, {3, 3})}};
                                    });
    idx.gradcheck = false;
    recs.push_back(idx);
  }
  // ---- amax / amin ----
  for (bool greater : {true, false}) {
    const std::string op = greater ? "amax" : "amin";
    auto ext = [greater](auto& v) { return ref_extreme(v, greater); };
    auto call = [greater](const Tensor& x, IntArrayRef d, bool k) { return greater ? amax(x, d, k) : amin(x, d, k); };
    recs.push_back(reduction_record(op, "all", {}, false, [call](const Tensor& x) { return call(x, {}, false); }, ext,
                                    [] { return std::vector<TensorList>{{r({3, 4}, 31)}, {r({}, 32)}}; }));
    recs.back().errors = {empty_all([call](const Tensor& x) { call(x, {}, false); }, op),
                          empty_dim([call](const Tensor& x) { call(x, {0, 1}, false); }, op),
                          dim_out_of_range([call](const Tensor& x) { call(x, {2}, false); }, op),
                          repeated_dims([call](const Tensor& x) { call(x, {1, -1}, false); }, op)};
    recs.push_back(reduction_record(op, "dims02", {0, 2}, false, [call](const Tensor& x) { return call(x, {0, 2}, false); },
                                    ext, [] { return shapes_234(33); }));
    recs.push_back(reduction_record(op, "dim_neg_keepdim", {-2}, true,
                                    [call](const Tensor& x) { return call(x, {-2}, true); }, ext,
                                    [] { return shapes_234(34); }));
    OpRecord ties = reduction_record(op, "ties", {1}, false, [call](const Tensor& x) { return call(x, {1}, false); }, ext,
                                     [] { return std::vector<TensorList>{{make({1, 3, 3, 2, 2, 0, 4, 4, 4}, {3, 3})}}; });
    ties.gradcheck = false;  // finite differences are undefined at ties
    recs.push_back(ties);
  }
  // ---- argmax / argmin (int64 results, no gradient) ----
  for (bool greater : {true, false}) {
    const std::string op = greater ? "argmax" : "argmin";
    auto call = [greater](const Tensor& x, std::optional<int64_t> d, bool k) {
      Tensor y = greater ? argmax(x, d, k) : argmin(x, d, k);
      EXPECT_EQ(y.dtype(), kInt64);
      return y;
    };
    auto arg = [greater](auto& v) { return ref_arg(v, greater); };
    auto ties = [] {
      return std::vector<TensorList>{{r({3, 4}, 35)}, {make({2, 5, 5, 1, -1, 5, -1, 0}, {2, 4})}};
    };
    OpRecord all = reduction_record(op, "flat", {}, false, [call](const Tensor& x) { return call(x, std::nullopt, false); },
                                    arg, ties);
    all.gradcheck = false;
    all.errors = {{[call] { call(zeros({2, 0}), std::nullopt, false); }, {op, "non-empty", "[2, 0]", "numel() == 0"}},
                  empty_dim([call](const Tensor& x) { call(x, 1, false); }, op),
                  dim_out_of_range([call](const Tensor& x) { call(x, 2, false); }, op)};
    recs.push_back(all);
    OpRecord flat_keep = reduction_record(op, "flat_keepdim", {}, true,
                                          [call](const Tensor& x) { return call(x, std::nullopt, true); }, arg, ties);
    flat_keep.gradcheck = false;
    recs.push_back(flat_keep);
    OpRecord dim = reduction_record(op, "dim1", {1}, false, [call](const Tensor& x) { return call(x, 1, false); }, arg, ties);
    dim.gradcheck = false;
    recs.push_back(dim);
    OpRecord dimk = reduction_record(op, "dim0_keepdim", {0}, true, [call](const Tensor& x) { return call(x, -2, true); },
                                     arg, ties);
    dimk.gradcheck = false;
    recs.push_back(dimk);
  }
  // ---- logsumexp ----
  recs.push_back(reduction_record("logsumexp", "all", {}, false, [](const Tensor& x) { return logsumexp(x, {}); },
                                  ref_lse, [] { return std::vector<TensorList>{{r({2, 3, 4}, 36)}, {r({}, 37)}}; }));
  recs.back().errors = {not_floating([](const Tensor& x) { logsumexp(x, {1}); }, "logsumexp"),
                        dim_out_of_range([](const Tensor& x) { logsumexp(x, {2}); }, "logsumexp"),
                        repeated_dims([](const Tensor& x) { logsumexp(x, {1, -1}); }, "logsumexp")};
  recs.push_back(reduction_record("logsumexp", "dim1", {1}, false, [](const Tensor& x) { return x.logsumexp({1}); },
                                  ref_lse, [] { return shapes_234(38); }));
  recs.push_back(reduction_record("logsumexp", "dims_neg_keepdim", {-1, 0}, true,
                                  [](const Tensor& x) { return x.logsumexp({0, -1}, true); }, ref_lse,
                                  [] { return shapes_234(39); }));
  recs.push_back(reduction_record("logsumexp", "large_values", {1}, false, [](const Tensor& x) { return logsumexp(x, {1}); },
                                  ref_lse, [] {
                                    return std::vector<TensorList>{{r({3, 4}, 40, 995, 1005)}, {r({2, 3}, 41, -1005, -995)}};
                                  }));
  recs.back().atol32 = 1e-3;  // float32 holds values near 1000 to about 6e-5

  // ---- sum_to: the reverse of broadcasting (every broadcasting backward uses it) ----
  recs.push_back(sum_to_record("leading_and_inner", {3, 1}, {{{{2, 3, 4}, 42, -2, 2}}}));
  recs.back().errors = {{[] { sum_to(zeros({3}), {2, 3}); }, {"sum_to", "at most 1 dims", "[2, 3]"}},
                        {[] { sum_to(zeros({2, 3}), {4}); }, {"sum_to", "[2, 3]", "[4]"}}};
  recs.push_back(sum_to_record("rows", {1, 3}, {{{{2, 3}, 43, -2, 2}}}));
  recs.push_back(sum_to_record("leading_only", {4}, {{{{2, 3, 4}, 44, -2, 2}}}));
  recs.push_back(sum_to_record("to_scalar", {}, {{{{4}, 45, -2, 2}}, {{{2, 3}, 46, -2, 2}}}));
  recs.push_back(sum_to_record("same_shape", {2, 3}, {{{{2, 3}, 47, -2, 2}}}));
  return recs;
}

namespace {

Tensor grad_at(const std::function<Tensor(const Tensor&)>& f, const Tensor& x0, bool create_graph = false) {
  Tensor x = x0.detach().clone().requires_grad_();
  Tensor y = f(x);
  return autograd::grad({y}, {x}, {ones_like(y)}, std::nullopt, create_graph)[0];
}

// ---- prod: gradients at zeros, by hand ----
TEST(ReductionStats, ProdGradientWithZeros) {
  for (bool create_graph : {false, true}) {
    // one zero: the product of the others at the zero, 0 elsewhere
    EXPECT_TRUE(all_close(grad_at([](auto& x) { return x.prod(); }, make({2, 0, 3, 4}, {4}), create_graph),
                          {0, 24, 0, 0}, {4}));
    // two zeros: all zero
    EXPECT_TRUE(
        all_close(grad_at([](auto& x) { return x.prod(); }, make({2, 0, 3, 0}, {4}), create_graph), {0, 0, 0, 0}, {4}));
    // along dim 1, rows with no, one and two zeros
    const Tensor x = make({1.5, 2, -3, 0, 5, 2, 0, 7, 0}, {3, 3});
    EXPECT_TRUE(all_close(grad_at([](auto& t) { return t.prod({1}); }, x, create_graph),
                          {2 * -3.0, 1.5 * -3, 1.5 * 2, 10, 0, 0, 0, 0, 0}, {3, 3}));
    // over dim 0 with keepdim, through a non-contiguous (transposed) input
    EXPECT_TRUE(all_close(grad_at([](auto& t) { return t.t().prod({0}, true); }, x, create_graph),
                          {2 * -3.0, 1.5 * -3, 1.5 * 2, 10, 0, 0, 0, 0, 0}, {3, 3}));
  }
  EXPECT_EQ(prod(ones({2}, requires_grad())).grad_fn()->name(), "ProdBackward0");
  EXPECT_EQ(prod(ones({2}, requires_grad()), {0}).grad_fn()->name(), "ProdBackward1");
}

TEST(ReductionStats, ProdGradcheckAtZeros) {
  // prod is a polynomial, so finite differences are exact enough even at zeros.
  for (const Tensor& x0 : {make({2, 0, 3, 4}, {2, 2}), make({0, 1.5, 0, -2, 0.5, 3}, {2, 3})}) {
    Tensor x = x0.detach().clone().requires_grad_();
    auto f = [](const TensorList& a) { return a[0].prod({1}); };
    EXPECT_TRUE(autograd::gradcheck(f, {x}));
    EXPECT_TRUE(autograd::gradgradcheck(f, {x}));
  }
}

TEST(ReductionStats, ProdEmptyAndInt) {
  EXPECT_TRUE(all_close(prod(zeros({0, 3})), {1}, kScalarShape));
  EXPECT_TRUE(all_close(prod(zeros({2, 0}), {1}), {1, 1}, {2}));
  Tensor b = prod(tensor({true, true, false}));
  EXPECT_EQ(b.dtype(), kInt64);
  EXPECT_TRUE(all_close(b, {0}, kScalarShape));
}

// ---- max / min / amax / amin: ties and NaN ----
TEST(ReductionStats, AmaxSplitsTiesEvenly) {
  const Tensor x = make({1, 3, 3, 2, 2, 0, 4, 4, 4}, {3, 3});
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return amax(t, {1}); }, x),
                        {0, .5, .5, .5, .5, 0, 1. / 3, 1. / 3, 1. / 3}, {3, 3}));
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return amin(t, {0}, true); }, x), {1, 0, 0, 0, 1, 1, 0, 0, 0}, {3, 3}));
  EXPECT_TRUE(
      all_close(grad_at([](auto& t) { return amax(t); }, x), {0, 0, 0, 0, 0, 0, 1. / 3, 1. / 3, 1. / 3}, {3, 3}));
  EXPECT_EQ(amax(x.detach().requires_grad_()).grad_fn()->name(), "AmaxBackward0");
  EXPECT_EQ(amin(x.detach().requires_grad_()).grad_fn()->name(), "AminBackward0");
}

TEST(ReductionStats, FullMaxSplitsTiesAndDimMaxPicksFirst) {
  const Tensor x = make({5, 1, 5, 0, 5, -1}, {2, 3});
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return t.max(); }, x), {1. / 3, 0, 1. / 3, 0, 1. / 3, 0}, {2, 3}));
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return t.min(); }, x), {0, 0, 0, 0, 0, 1}, {2, 3}));
  // along a dim, the gradient goes to the index max returns: the first occurrence
  auto [v, i] = max(x, 1);
  EXPECT_TRUE(all_close(v, {5, 5}, {2}));
  EXPECT_TRUE(all_close(i, {0, 1}, {2}));
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return std::get<0>(t.max(1)); }, x), {1, 0, 0, 0, 1, 0}, {2, 3}));
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return std::get<0>(t.min(0, true)); }, x), {0, 1, 0, 1, 0, 1}, {2, 3}));
  Tensor xr = x.detach().requires_grad_();
  EXPECT_EQ(xr.max().grad_fn()->name(), "MaxBackward1");
  EXPECT_EQ(std::get<0>(xr.max(0)).grad_fn()->name(), "MaxBackward0");
  EXPECT_EQ(xr.min().grad_fn()->name(), "MinBackward1");
  EXPECT_EQ(std::get<0>(xr.min(0)).grad_fn()->name(), "MinBackward0");
  EXPECT_FALSE(std::get<1>(xr.max(0)).requires_grad());
}

TEST(ReductionStats, NanPropagates) {
  const Tensor x = make({1, kNaN, 3, kNaN, 2, 0}, {2, 3});
  EXPECT_TRUE(all_close(max(x), {kNaN}, kScalarShape));
  EXPECT_TRUE(all_close(min(x), {kNaN}, kScalarShape));
  auto [v, i] = max(x, 1);
  EXPECT_TRUE(all_close(v, {kNaN, kNaN}, {2}));
  EXPECT_TRUE(all_close(i, {1, 0}, {2}));
  auto [vm, im] = min(x, 0);
  EXPECT_TRUE(all_close(vm, {kNaN, kNaN, 0}, {3}));
  EXPECT_TRUE(all_close(im, {1, 0, 1}, {3}));
  EXPECT_TRUE(all_close(amax(x, {0}), {kNaN, kNaN, 3}, {3}));
  EXPECT_TRUE(all_close(argmax(x), {1}, kScalarShape));
  EXPECT_TRUE(all_close(argmin(x, 1), {1, 0}, {2}));
  // the gradient of the full max goes to the NaNs
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return t.max(); }, x), {0, .5, 0, .5, 0, 0}, {2, 3}));
}

TEST(ReductionStats, ZeroDimAndIntegerInputs) {
  const Tensor s = make({2.5}, {});
  auto [v, i] = max(s, 0);
  EXPECT_TRUE(all_close(v, {2.5}, kScalarShape));
  EXPECT_TRUE(all_close(i, {0}, kScalarShape));
  EXPECT_TRUE(all_close(argmax(s), {0}, kScalarShape));
  const Tensor n = tensor({{3, 9, 1}, {4, 4, 8}});  // int64
  EXPECT_EQ(max(n).dtype(), kInt64);
  EXPECT_TRUE(all_close(max(n), {9}, kScalarShape));
  EXPECT_TRUE(all_close(amin(n, {1}), {1, 4}, {2}));
  EXPECT_TRUE(all_close(argmax(n, 1, true), {1, 2}, {2, 1}));
  EXPECT_TRUE(all_close(argmax(make({1, 7, 2, 7}, {2, 2}), std::nullopt, true), {1}, {1, 1}));
  // reducing a non-empty dim of a tensor with an empty other dim is fine
  EXPECT_TRUE(all_close(amax(zeros({0, 3}), {1}), std::vector<double>{}, {0}));
}

// ---- var / std: degenerate cases ----
TEST(ReductionStats, VarStdDegenerate) {
  // N - correction <= 0 gives nan (not an error), as in PyTorch
  EXPECT_TRUE(all_close(var(make({4}, {1})), {kNaN}, kScalarShape));
  EXPECT_TRUE(all_close(var(make({4}, {1}), false), {0}, kScalarShape));
  EXPECT_TRUE(all_close(graft::std(zeros({0}, kFloat64)), {kNaN}, kScalarShape));
  EXPECT_TRUE(all_close(var(make({1, 2, 3, 4}, {2, 2}), {1}, true), {0.5, 0.5}, {2}));
  // a constant slice: std is 0 and its gradient 0 (not nan), as PyTorch's masked formula
  const Tensor c = make({2, 2, 2, 1, 2, 3}, {2, 3});
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return t.std({1}, true); }, c), {0, 0, 0, -0.5, 0, 0.5}, {2, 3}));
  // well-conditioned in float32 far from 0 (a one-pass sum of squares would lose everything)
  const Tensor big = make({1e4 + 1, 1e4 + 2, 1e4 + 3, 1e4 + 4}, {4}, kFloat32);
  EXPECT_TRUE(all_close(var(big), {5.0 / 3}, {}, 1e-5, 1e-5));
  Tensor xr = c.detach().requires_grad_();
  EXPECT_EQ(var(xr).grad_fn()->name(), "VarBackward0");
  EXPECT_EQ(graft::std(xr).grad_fn()->name(), "StdBackward0");
}

// ---- logsumexp: infinities ----
TEST(ReductionStats, LogsumexpInfinities) {
  const Tensor x = make({-kInf, -kInf, 0, -kInf, 1000, kInf}, {3, 2});
  EXPECT_TRUE(all_close(logsumexp(x, {1}), {-kInf, 0, kInf}, {3}));
  EXPECT_TRUE(all_close(logsumexp(zeros({0, 2}), {0}), {-kInf, -kInf}, {2}));
  EXPECT_TRUE(all_close(grad_at([](auto& t) { return logsumexp(t, {1}); }, make({1000, 1000, -kInf, 0}, {2, 2})),
                        {0.5, 0.5, 0, 1}, {2, 2}));
  EXPECT_EQ(logsumexp(x.detach().requires_grad_(), {0}).grad_fn()->name(), "LogsumexpBackward0");
}

}  // namespace
}  // namespace graft::test
