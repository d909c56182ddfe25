// Op records: view, reshape, transpose, permute, narrow, slice, select, expand, squeeze, unsqueeze,
// flatten, contiguous, clone, to (src/ops/views.cpp, src/ops/copy.cpp), and the in-place zero_,
// fill_, copy_. References are plain loops in double: every output position is mapped back to the
// input position it reads, with index arithmetic written here.
#include <functional>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

using Idx = std::vector<int64_t>;

int64_t numel_of(const Idx& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}
Idx unravel_index(int64_t lin, const Idx& s) {
  Idx i(s.size(), 0);
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    const auto k = static_cast<size_t>(d);
    i[k] = lin % s[k];
    lin /= s[k];
  }
  return i;
}
int64_t ravel_index(const Idx& i, const Idx& s) {
  int64_t lin = 0;
  for (size_t d = 0; d < s.size(); ++d) lin = lin * s[d] + i[d];
  return lin;
}

// out[p] = x[source(p)] for every position p of out_shape, in double.
Tensor ref_gather_map(const Tensor& x, const Idx& out_shape, const std::function<Idx(const Idx&)>& source,
                      std::function<double(double)> f = nullptr) {
  const auto v = values(x);
  const Idx s = x.sizes().vec();
  std::vector<double> out;
  for (int64_t lin = 0; lin < numel_of(out_shape); ++lin) {
    const double e = v[static_cast<size_t>(ravel_index(source(unravel_index(lin, out_shape)), s))];
    out.push_back(f ? f(e) : e);
  }
  return make(out, out_shape);
}
// Same values, new shape (row-major order kept): view, reshape, flatten, squeeze, unsqueeze.
Tensor ref_same_order(const Tensor& x, const Idx& out_shape) { return make(values(x), out_shape); }

Tensor ref_permute(const Tensor& x, const Idx& perm) {
  const Idx s = x.sizes().vec();
  Idx out;
  for (int64_t p : perm) out.push_back(s[static_cast<size_t>(p)]);
  return ref_gather_map(x, out, [perm](const Idx& o) {
    Idx i(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) i[static_cast<size_t>(perm[k])] = o[k];
    return i;
  });
}

// Python-style slice of dim d: start/end wrap once when negative, then clamp to [0, n].
Tensor ref_slice(const Tensor& x, int64_t d, int64_t start, int64_t end, int64_t step) {
  const Idx s = x.sizes().vec();
  const int64_t n = s[static_cast<size_t>(d)];
  auto fix = [n](int64_t v) { return std::min(std::max(v < 0 ? v + n : v, int64_t{0}), n); };
  start = fix(start);
  end = std::max(fix(end), start);
  Idx out = s;
  out[static_cast<size_t>(d)] = (end - start + step - 1) / step;
  return ref_gather_map(x, out, [=](const Idx& o) {
    Idx i = o;
    i[static_cast<size_t>(d)] = start + o[static_cast<size_t>(d)] * step;
    return i;
  });
}

// Broadcast x to `out` (NumPy rules: leading dims added, size-1 dims repeated).
Tensor ref_broadcast_to(const Tensor& x, const Idx& out) {
  const Idx s = x.sizes().vec();
  return ref_gather_map(x, out, [s, out](const Idx& o) {
    Idx i(s.size());
    const size_t lead = out.size() - s.size();
    for (size_t k = 0; k < s.size(); ++k) i[k] = s[k] == 1 ? 0 : o[k + lead];
    return i;
  });
}

Tensor identity(const TensorList& a) { return make(values(a[0]), a[0].sizes().vec()); }

// Runs an in-place op on a non-leaf copy (2 * x), so the graph goes through the in-place node.
Tensor nonleaf(const Tensor& x) { return x * 2.0; }

ErrorCase leaf_error(const std::string& op, std::function<void(Tensor&)> f) {
  return {[f] {
            Tensor leaf = zeros({2}, requires_grad());
            f(leaf);
          },
          {op, "leaf", "requires grad", "NoGradGuard"}};
}

}  // namespace

GRAFT_OP_RECORDS(views) {
  std::vector<OpRecord> recs;

  // ---- view / reshape ----
  recs.push_back({.name = "view", .variant = "merge_and_split",
                  .fn = [](const TensorList& a) { return a[0].view({3, 4}); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {3, 4}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 6}, 1)}}; },
                  .errors = {{[] { zeros({2, 3}).t().view({6}); },
                              {"view", "non-contiguous", "[3, 2]", "[6]", "reshape", "contiguous"}},
                             {[] { zeros({2, 3}).view({4, 2}); }, {"view", "6 elements", "[4, 2]", "8 elements"}},
                             {[] { zeros({2, 3}).view({-1, -1}); }, {"view", "-1", "only one"}}}});
  recs.push_back({.name = "view", .variant = "infer_leading_split",
                  .fn = [](const TensorList& a) { return a[0].view({2, -1, 3}); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {2, 2, 3}); },
                  .samples = [] { return std::vector<TensorList>{{r({4, 3}, 2)}}; }});
  recs.push_back({.name = "reshape", .variant = "needs_copy",
                  .fn = [](const TensorList& a) { return a[0].transpose(0, 1).reshape({-1}); },
                  .reference = [](const TensorList& a) {
                    return ref_same_order(ref_permute(a[0], {1, 0}), {6});
                  },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 3)}}; },
                  .errors = {{[] { zeros({2, 3}).reshape({5}); }, {"reshape", "[5]", "6 elements"}},
                             {[] { reshape(zeros({2, 3}), {-1, 4}); }, {"reshape", "[-1, 4]", "6 elements"}}}});
  recs.push_back({.name = "reshape", .variant = "view_path",
                  .fn = [](const TensorList& a) { return reshape(a[0], {3, 1, 2}); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {3, 1, 2}); },
                  .samples = [] { return std::vector<TensorList>{{r({6}, 4)}, {r({2, 3}, 5)}}; }});
  recs.push_back({.name = "reshape", .variant = "non_contiguous_input",
                  .fn = [](const TensorList& a) { return a[0].permute({2, 0, 1}).reshape({4, 6}); },
                  .reference = [](const TensorList& a) { return ref_same_order(ref_permute(a[0], {2, 0, 1}), {4, 6}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3, 4}, 6)}}; }});

  // ---- transpose / permute ----
  recs.push_back({.name = "transpose",
                  .fn = [](const TensorList& a) { return a[0].transpose(0, 2); },
                  .reference = [](const TensorList& a) { return ref_permute(a[0], {2, 1, 0}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3, 4}, 7)}}; },
                  .errors = {{[] { zeros({2, 3}).transpose(0, 3); }, {"transpose", "dim 3", "2 dimensions"}}}});
  recs.push_back({.name = "transpose", .variant = "negative_dims",
                  .fn = [](const TensorList& a) { return transpose(a[0], -1, -2); },
                  .reference = [](const TensorList& a) { return ref_permute(a[0], {1, 0}); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 2}, 8)}}; }});
  recs.push_back({.name = "permute",
                  .fn = [](const TensorList& a) { return a[0].permute({2, 0, 1}); },
                  .reference = [](const TensorList& a) { return ref_permute(a[0], {2, 0, 1}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3, 4}, 9)}}; },
                  .errors = {{[] { zeros({2, 3}).permute({0, 0}); }, {"permute", "each dim exactly once", "[0, 0]"}},
                             {[] { zeros({2, 3}).permute({0}); }, {"permute", "[0]", "2"}},
                             {[] { zeros({2, 3}).permute({0, 2}); }, {"permute", "dim 2"}}}});
  recs.push_back({.name = "permute", .variant = "negative",
                  .fn = [](const TensorList& a) { return permute(a[0], {-1, 0, 1}); },
                  .reference = [](const TensorList& a) { return ref_permute(a[0], {2, 0, 1}); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 1, 2}, 10)}}; }});

  // ---- narrow / slice / select ----
  recs.push_back({.name = "narrow",
                  .fn = [](const TensorList& a) { return a[0].narrow(1, 1, 2); },
                  .reference = [](const TensorList& a) { return ref_slice(a[0], 1, 1, 3, 1); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 4}, 11)}}; },
                  .errors = {{[] { zeros({2, 4}).narrow(1, 3, 2); }, {"narrow", "start + length", "4", "start 3", "length 2"}},
                             {[] { zeros({2, 4}).narrow(2, 0, 1); }, {"narrow", "dim 2"}}}});
  recs.push_back({.name = "narrow", .variant = "negative_start",
                  .fn = [](const TensorList& a) { return narrow(a[0], 0, -2, 2); },
                  .reference = [](const TensorList& a) { return ref_slice(a[0], 0, 2, 4, 1); },
                  .samples = [] { return std::vector<TensorList>{{r({4, 2}, 12)}}; }});
  recs.push_back({.name = "slice", .variant = "step2_negative_start",
                  .fn = [](const TensorList& a) { return a[0].slice(1, -4, std::nullopt, 2); },
                  .reference = [](const TensorList& a) { return ref_slice(a[0], 1, -4, 7, 2); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 7}, 13)}}; },
                  .errors = {{[] { zeros({4}).slice(0, 0, 4, 0); }, {"slice", "positive step", "step 0"}},
                             {[] { zeros({4}).slice(1, 0, 4, 1); }, {"slice", "dim 1"}},
                             {[] { tensor(1.0).slice(0, 0, 1, 1); }, {"slice", "0-dim"}}}});
  recs.push_back({.name = "slice", .variant = "step3_clamped_end",
                  .fn = [](const TensorList& a) { return a[0].slice(0, 1, 100, 3); },
                  .reference = [](const TensorList& a) { return ref_slice(a[0], 0, 1, 100, 3); },
                  .samples = [] { return std::vector<TensorList>{{r({10}, 14)}, {r({8, 2}, 15)}}; }});
  recs.push_back({.name = "select", .variant = "negative_index",
                  .fn = [](const TensorList& a) { return a[0].select(1, -1); },
                  .reference = [](const TensorList& a) {
                    const int64_t n = a[0].size(0), m = a[0].size(1);
                    return ref_gather_map(a[0], {n}, [m](const Idx& o) { return Idx{o[0], m - 1}; });
                  },
                  .samples = [] { return std::vector<TensorList>{{r({3, 4}, 16)}}; },
                  .errors = {{[] { zeros({3, 4}).select(1, 4); }, {"select", "index 4", "size 4"}},
                             {[] { zeros({3, 4}).select(0, -4); }, {"select", "index -4"}},
                             {[] { tensor(1.0).select(0, 0); }, {"select", "0-dim"}}}});
  recs.push_back({.name = "select", .variant = "dim0",
                  .fn = [](const TensorList& a) { return select(a[0], 0, 1); },
                  .reference = [](const TensorList& a) {
                    return ref_gather_map(a[0], {a[0].size(1), a[0].size(2)}, [](const Idx& o) { return Idx{1, o[0], o[1]}; });
                  },
                  .samples = [] { return std::vector<TensorList>{{r({3, 2, 2}, 17)}}; }});

  // ---- expand / squeeze / unsqueeze / flatten ----
  recs.push_back({.name = "expand", .variant = "new_leading_dims",
                  .fn = [](const TensorList& a) { return a[0].expand({2, 3, 4}); },
                  .reference = [](const TensorList& a) { return ref_broadcast_to(a[0], {2, 3, 4}); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 1}, 18)}, {r({4}, 19)}, {r({1, 1}, 20)}}; },
                  .errors = {{[] { zeros({3, 1}).expand({2, 4, 4}); }, {"expand", "[2, 4, 4]", "[3, 1]", "size 1"}},
                             {[] { zeros({3, 1}).expand({3}); }, {"expand", "[3]", "2"}}}});
  recs.push_back({.name = "expand", .variant = "keep_minus_one",
                  .fn = [](const TensorList& a) { return a[0].expand({-1, 5}); },
                  .reference = [](const TensorList& a) { return ref_broadcast_to(a[0], {2, 5}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 1}, 21)}}; }});
  recs.push_back({.name = "squeeze", .variant = "all",
                  .fn = [](const TensorList& a) { return a[0].squeeze(); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {3, 2}); },
                  .samples = [] { return std::vector<TensorList>{{r({1, 3, 1, 2}, 22)}}; },
                  .errors = {{[] { zeros({2, 3}).squeeze(3); }, {"squeeze", "dim 3", "2 dimensions"}}}});
  recs.push_back({.name = "squeeze", .variant = "dim",
                  .fn = [](const TensorList& a) { return squeeze(a[0], 2); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {1, 3, 2}); },
                  .samples = [] { return std::vector<TensorList>{{r({1, 3, 1, 2}, 23)}}; }});
  recs.push_back({.name = "squeeze", .variant = "dim_not_one_is_noop",
                  .fn = [](const TensorList& a) { return a[0].squeeze(-1); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {2, 3}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 24)}}; }});
  recs.push_back({.name = "unsqueeze",
                  .fn = [](const TensorList& a) { return a[0].unsqueeze(1); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {2, 1, 3}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 25)}}; },
                  .errors = {{[] { zeros({2, 3}).unsqueeze(3); }, {"unsqueeze", "dim 3", "[-3, 2]"}}}});
  recs.push_back({.name = "unsqueeze", .variant = "last_and_scalar",
                  .fn = [](const TensorList& a) { return unsqueeze(a[0], -1); },
                  .reference = [](const TensorList& a) {
                    Idx s = a[0].sizes().vec();
                    s.push_back(1);
                    return ref_same_order(a[0], s);
                  },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 26)}, {r({}, 27)}}; }});
  recs.push_back({.name = "flatten", .variant = "all",
                  .fn = [](const TensorList& a) { return a[0].flatten(); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {a[0].numel()}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3, 2}, 28)}, {r({}, 29)}}; },
                  .errors = {{[] { zeros({2, 3}).flatten(1, 0); }, {"flatten", "start_dim <= end_dim"}},
                             {[] { zeros({2, 3}).flatten(3); }, {"flatten", "dim 3"}}}});
  recs.push_back({.name = "flatten", .variant = "range",
                  .fn = [](const TensorList& a) { return flatten(a[0], 1, 2); },
                  .reference = [](const TensorList& a) { return ref_same_order(a[0], {2, 6, 2}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3, 2, 2}, 30)}}; }});
  recs.push_back({.name = "flatten", .variant = "of_transposed",
                  .fn = [](const TensorList& a) { return a[0].t().flatten(); },
                  .reference = [](const TensorList& a) { return ref_same_order(ref_permute(a[0], {1, 0}), {6}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 31)}}; }});

  // ---- contiguous / clone / to ----
  recs.push_back({.name = "contiguous",
                  .fn = [](const TensorList& a) {
                    Tensor c = a[0].transpose(0, 1).contiguous();
                    EXPECT_TRUE(c.is_contiguous());
                    return c;
                  },
                  .reference = [](const TensorList& a) { return ref_permute(a[0], {1, 0}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 32)}}; },
                  // nothing to get wrong in contiguous itself: the view error points to it
                  .errors = {{[] { zeros({2, 3}).t().view({-1}); }, {"view", "contiguous"}},
                             {[] { Tensor().contiguous(); }, {"undefined"}}}});
  recs.push_back({.name = "contiguous", .variant = "already",
                  .fn = [](const TensorList& a) { return a[0].contiguous(); },
                  .reference = identity,
                  .samples = [] { return std::vector<TensorList>{{r({3, 2}, 33)}}; }});
  recs.push_back({.name = "clone",
                  .fn = [](const TensorList& a) { return a[0].clone(); },
                  .reference = identity,
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 34)}, {r({}, 35)}}; },
                  .errors = {{[] { ones({2}).expand({3, 2}).zero_(); }, {"zero_", "expanded", "clone"}},
                             {[] { clone(Tensor()); }, {"undefined"}}}});
  recs.push_back({.name = "clone", .variant = "of_expanded",
                  .fn = [](const TensorList& a) { return clone(a[0].expand({2, 3})); },
                  .reference = [](const TensorList& a) { return ref_broadcast_to(a[0], {2, 3}); },
                  .samples = [] { return std::vector<TensorList>{{r({3}, 36)}}; }});
  recs.push_back({.name = "to", .variant = "float_round_trip",
                  .fn = [](const TensorList& a) { return a[0].to(kFloat32).to(kFloat64); },
                  .reference = identity,
                  // small values: float32 rounding stays far below the finite-difference step
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 37, -1e-4, 1e-4)}}; },
                  // gradgradcheck perturbs the incoming gradient, which the backward rounds to float32
                  .gradgradcheck = false,
                  .float32 = false,  // the output is float64 by construction
                  .atol = 1e-11, .rtol = 1e-6,
                  // half-precision conversions are tested in tests/core/test_half.cpp
                  .errors = {{[] { Tensor().to(kFloat16); }, {"undefined"}}}});
  recs.push_back({.name = "to", .variant = "int64",
                  .fn = [](const TensorList& a) { return a[0].to(kInt64); },
                  .reference = [](const TensorList& a) {
                    auto v = values(a[0]);
                    for (double& e : v) e = std::trunc(e);
                    return make(v, a[0].sizes().vec());
                  },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 38, -5, 5)}}; },
                  .gradcheck = false});
  recs.push_back({.name = "to", .variant = "int64_to_float",
                  .fn = [](const TensorList& a) { return a[0].to(kFloat64) * 0.5; },
                  .reference = [](const TensorList& a) {
                    return ref_gather_map(a[0], a[0].sizes().vec(), [](const Idx& o) { return o; },
                                          [](double e) { return e * 0.5; });
                  },
                  .samples = [] { return std::vector<TensorList>{{make({3, -1, 0, 7}, {2, 2}, kInt64)}}; },
                  .gradcheck = false,
                  .float32 = false});

  // ---- in-place zero_ / fill_ / copy_ (on a non-leaf, so the graph goes through their nodes) ----
  recs.push_back({.name = "zero_",
                  .fn = [](const TensorList& a) {
                    Tensor y = nonleaf(a[0]);
                    y.zero_();
                    return y + a[0];  // d/dx = 1: the zeroed path contributes nothing
                  },
                  .reference = identity,
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 39)}}; },
                  .errors = {leaf_error("zero_", [](Tensor& t) { t.zero_(); }),
                             {[] { ones({2}).expand({3, 2}).zero_(); }, {"zero_", "expanded", "[3, 2]"}}}});
  recs.push_back({.name = "fill_",
                  .fn = [](const TensorList& a) {
                    Tensor y = nonleaf(a[0]);
                    y.fill_(1.5);
                    return y * a[0];
                  },
                  .reference = [](const TensorList& a) {
                    return ref_gather_map(a[0], a[0].sizes().vec(), [](const Idx& o) { return o; },
                                          [](double e) { return 1.5 * e; });
                  },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 40)}, {r({}, 41)}}; },
                  .errors = {leaf_error("fill_", [](Tensor& t) { t.fill_(1.0); }),
                             {[] {
                                Tensor x = zeros({2, 3}, requires_grad()) * 1.0;
                                x.narrow(0, 0, 1).fill_(1.0);
                              }, {"fill_", "view", "[1, 3]"}}}});
  recs.push_back({.name = "copy_", .variant = "broadcast",
                  .fn = [](const TensorList& a) {
                    Tensor y = nonleaf(a[0]);
                    y.copy_(a[1]);
                    return y;  // the old value of y gets no gradient
                  },
                  .reference = [](const TensorList& a) { return ref_broadcast_to(a[1], a[0].sizes().vec()); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 42), r({3}, 43)}, {r({2, 3}, 44), r({2, 3}, 45)}}; },
                  .errors = {leaf_error("copy_", [](Tensor& t) { t.copy_(ones({2})); }),
                             {[] { zeros({2, 3}).copy_(zeros({4})); }, {"copy_", "[2, 3]", "[4]"}},
                             {[] { zeros({3}).copy_(zeros({2, 3})); }, {"copy_", "[3]", "[2, 3]"}}}});
  recs.push_back({.name = "copy_", .variant = "into_fresh_transposed",
                  .fn = [](const TensorList& a) {
                    Tensor y = zeros({a[0].size(1), a[0].size(0)}, a[0].dtype());
                    y.copy_(a[0].t());
                    return y;
                  },
                  .reference = [](const TensorList& a) { return ref_permute(a[0], {1, 0}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 46)}}; }});
  recs.push_back({.name = "copy_", .variant = "dtype_conversion",
                  .fn = [](const TensorList& a) {
                    Tensor y = nonleaf(a[0]);
                    y.copy_(a[1]);     // int64 values into a floating tensor: a constant now
                    return y + a[0];   // so d/dx = 1
                  },
                  .reference = [](const TensorList& a) {
                    const auto x = values(a[0]), s = values(a[1]);
                    std::vector<double> out;
                    for (size_t i = 0; i < x.size(); ++i) out.push_back(x[i] + s[i % s.size()]);
                    return make(out, a[0].sizes().vec());
                  },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 47), make({4, -2, 9}, {3}, kInt64)}}; }});
  return recs;
}

// copy_: the gradient goes to the source (summed over the broadcast), cast to the source's dtype;
// the overwritten value gets none.
TEST(CopyInplace, GradientFlowsToSourceOnly) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor s = make({7, 8, 9}, {3}, kFloat32).requires_grad_();
  Tensor y = x * 2.0;
  y.copy_(s);
  EXPECT_EQ(y.grad_fn()->name(), "CopyBackwards");
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_TRUE(all_close(y, {7, 8, 9, 7, 8, 9}, {2, 3}));
  (y * make({1, 2, 3, 10, 20, 30}, {2, 3})).sum().backward();
  EXPECT_EQ(s.grad().dtype(), kFloat32);
  EXPECT_TRUE(all_close(s.grad(), {11, 22, 33}, {3}));
  EXPECT_FALSE(x.grad().defined());
}

// A constant source still replaces the history: the old value of y (and so x) gets no gradient.
TEST(CopyInplace, ConstantSourceReplacesHistory) {
  Tensor x = make({1, 2}, {2}).requires_grad_();
  Tensor y = x * 3.0;
  y.copy_(make({5, 6}, {2}, kInt64));
  EXPECT_TRUE(all_close(y, {5, 6}, {2}));
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "CopyBackwards");
  (y * x).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {5, 6}, {2}));  // only through the product
}

TEST(ViewsInplace, ZeroAndFillNames) {
  Tensor x = make({1, 2}, {2}).requires_grad_();
  Tensor y = x * 1.0;
  y.fill_(3.0);
  EXPECT_EQ(y.grad_fn()->name(), "FillBackward0");
  EXPECT_TRUE(all_close(y, {3, 3}, {2}));
  Tensor z = x * 1.0;
  z.zero_();
  EXPECT_EQ(z.grad_fn()->name(), "ZeroBackward0");
  EXPECT_TRUE(all_close(z, {0, 0}, {2}));
  EXPECT_EQ(x.to(kFloat32).grad_fn() ? std::string(x.to(kFloat32).grad_fn()->name()) : "", "ToCopyBackward0");
}

}  // namespace graft::test
