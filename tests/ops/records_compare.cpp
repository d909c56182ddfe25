// Op records: gt, lt, ge, le, eq, ne, logical_not/and/or, isnan/isinf/isfinite, allclose, isclose, equal,
// where, masked_fill, masked_fill_; plus direct tests of the family (NaN, dtypes, promotion).
#include <cmath>
#include <limits>
#include <optional>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

Tensor mask_of(const std::vector<double>& v, IntArrayRef shape) { return make(v, shape, kBool); }

// Comparison samples: ties (equal values) in every sample, broadcasting, 0-dim, int64 and mixed.
std::vector<TensorList> compare_samples() {
  return {{make({1, -2, 3.5, 0, 2, -1}, {2, 3}), make({1, 0, 3.5, -0.5, 2.5, -1}, {2, 3})},
          {make({1, -2, 3.5, 0, 2, -1}, {2, 3}), make({1, 0, -1}, {3})},
          {make({0.5, 1}, {2, 1}), make({0.5, 1, -1, 2}, {1, 4})},
          {make({1, 2, 3, 2}, {4}), make({2}, {})},
          {make({1, 2, 3, -4}, {4}, kInt64), make({3, 2, 1, -4}, {4}, kInt64)},
          {make({1, 2, 3}, {3}, kInt64), make({1.5, 2, 2.5}, {3})},
          {make({1, 0, 1, 0}, {2, 2}, kBool), make({1, 1, 0, 0}, {2, 2}, kBool)}};
}

OpRecord comparison(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> op,
                    std::function<bool(double, double)> f) {
  return OpRecord{.name = name,
                  .fn = [op](const TensorList& a) { return op(a[0], a[1]); },
                  .reference = [f](const TensorList& a) {
                    return ref_map(a, [f](auto& v) { return f(v[0], v[1]) ? 1.0 : 0.0; }, kBool);
                  },
                  .samples = compare_samples,
                  .gradcheck = false,
                  .gradgradcheck = false,
                  .errors = {{[op] { op(zeros({2, 3}), zeros({4})); }, {name, "[2, 3]", "[4]", "broadcast"}}},
                  .half = true};
}

OpRecord comparison_scalar(std::string name, std::function<Tensor(const Tensor&, const Scalar&)> op,
                           std::function<bool(double, double)> f) {
  return OpRecord{.name = name,
                  .variant = "scalar",
                  .fn = [op](const TensorList& a) { return op(a[0], 1.5); },
                  .reference = [f](const TensorList& a) {
                    return ref_map(a, [f](auto& v) { return f(v[0], 1.5) ? 1.0 : 0.0; }, kBool);
                  },
                  .samples = [] {
                    return std::vector<TensorList>{{make({1.5, -2, 3.5, 1.5, 2, -1}, {2, 3})},
                                                   {make({1, 2, 3}, {3}, kInt64)},
                                                   {make({1.5}, {})}};
                  },
                  .gradcheck = false,
                  .gradgradcheck = false};
}

}  // namespace

GRAFT_OP_RECORDS(compare) {
  std::vector<OpRecord> recs;
  recs.push_back(comparison("gt", [](auto& a, auto& b) { return gt(a, b); }, [](double x, double y) { return x > y; }));
  recs.push_back(comparison("lt", [](auto& a, auto& b) { return lt(a, b); }, [](double x, double y) { return x < y; }));
  recs.push_back(comparison("ge", [](auto& a, auto& b) { return ge(a, b); }, [](double x, double y) { return x >= y; }));
  recs.push_back(comparison("le", [](auto& a, auto& b) { return le(a, b); }, [](double x, double y) { return x <= y; }));
  recs.push_back(comparison("eq", [](auto& a, auto& b) { return eq(a, b); }, [](double x, double y) { return x == y; }));
  recs.push_back(comparison("ne", [](auto& a, auto& b) { return ne(a, b); }, [](double x, double y) { return x != y; }));
  recs.push_back(comparison_scalar("gt", [](auto& a, auto& s) { return a.gt(s); }, [](double x, double y) { return x > y; }));
  recs.push_back(comparison_scalar("lt", [](auto& a, auto& s) { return a.lt(s); }, [](double x, double y) { return x < y; }));
  recs.push_back(comparison_scalar("ge", [](auto& a, auto& s) { return ge(a, s); }, [](double x, double y) { return x >= y; }));
  recs.push_back(comparison_scalar("le", [](auto& a, auto& s) { return le(a, s); }, [](double x, double y) { return x <= y; }));
  recs.push_back(comparison_scalar("eq", [](auto& a, auto& s) { return eq(a, s); }, [](double x, double y) { return x == y; }));
  recs.push_back(comparison_scalar("ne", [](auto& a, auto& s) { return ne(a, s); }, [](double x, double y) { return x != y; }));

  // ---- logical ops: nonzero is true (NaN included) ----
  auto truthy = [](double v) { return v != 0; };  // NaN != 0
  recs.push_back({.name = "logical_not",
                  .fn = [](const TensorList& a) { return logical_not(a[0]); },
                  .reference = [truthy](const TensorList& a) {
                    return ref_map(a, [truthy](auto& v) { return truthy(v[0]) ? 0.0 : 1.0; }, kBool);
                  },
                  .samples = [] {
                    return std::vector<TensorList>{{make({0, 2, -1, 0, 0.5, 0}, {2, 3})},
                                                   {make({0, 3, 0}, {3}, kInt64)},
                                                   {make({1, 0}, {2}, kBool)}};
                  },
                  .gradcheck = false,
                  .gradgradcheck = false,
                  .no_misuse = "every dtype and shape is valid input",
                  .half = true});
  auto logical = [truthy](std::string name, std::function<Tensor(const Tensor&, const Tensor&)> op,
                          std::function<bool(bool, bool)> f) {
    return OpRecord{.name = name,
                    .fn = [op](const TensorList& a) { return op(a[0], a[1]); },
                    .reference = [f, truthy](const TensorList& a) {
                      return ref_map(a, [f, truthy](auto& v) { return f(truthy(v[0]), truthy(v[1])) ? 1.0 : 0.0; }, kBool);
                    },
                    .samples = compare_samples,
                    .gradcheck = false,
                    .gradgradcheck = false,
                    .errors = {{[op] { op(zeros({2}), zeros({3})); }, {name, "[2]", "[3]"}}}};
  };
  recs.push_back(logical("logical_and", [](auto& a, auto& b) { return logical_and(a, b); }, [](bool x, bool y) { return x && y; }));
  recs.push_back(logical("logical_or", [](auto& a, auto& b) { return logical_or(a, b); }, [](bool x, bool y) { return x || y; }));

  // ---- isnan / isinf / isfinite ----
  auto classify = [](std::string name, std::function<Tensor(const Tensor&)> op, std::function<bool(double)> f) {
    return OpRecord{.name = name,
                    .fn = [op](const TensorList& a) { return op(a[0]); },
                    .reference = [f](const TensorList& a) {
                      return ref_map(a, [f](auto& v) { return f(v[0]) ? 1.0 : 0.0; }, kBool);
                    },
                    .samples = [] {
                      const double inf = std::numeric_limits<double>::infinity();
                      const double nan = std::numeric_limits<double>::quiet_NaN();
                      return std::vector<TensorList>{{make({1.5, nan, inf, -inf, 0, -2}, {2, 3})},
                                                     {make({1, -2, 3}, {3}, kInt64)},
                                                     {make({nan}, {})}};
                    },
                    .gradcheck = false,
                    .gradgradcheck = false,
                    .no_misuse = "every dtype and shape is valid input",
                    .half = true};
  };
  recs.push_back(classify("isnan", [](auto& x) { return isnan(x); }, [](double v) { return std::isnan(v); }));
  recs.push_back(classify("isinf", [](auto& x) { return isinf(x); }, [](double v) { return std::isinf(v); }));
  recs.push_back(classify("isfinite", [](auto& x) { return isfinite(x); }, [](double v) { return std::isfinite(v); }));

  // ---- all / any: over every element (0-dim) or one dim; the reference loops by hand ----
  auto truth = [](std::string name, bool is_all, std::optional<int64_t> dim, bool keepdim) {
    return OpRecord{
        .name = name,
        .variant = dim ? "dim " + std::to_string(*dim) + (keepdim ? " keepdim" : "") : "all elements",
        .fn = [is_all, dim, keepdim](const TensorList& a) {
          if (dim) return is_all ? all(a[0], *dim, keepdim) : any(a[0], *dim, keepdim);
          return is_all ? all(a[0]) : any(a[0]);
        },
        .reference = [is_all, dim, keepdim](const TensorList& a) {
          const std::vector<double> v = values(a[0]);
          if (!dim) {  // every element
            bool r = is_all;
            for (double x : v) r = is_all ? (r && x != 0) : (r || x != 0);
            return make({r ? 1.0 : 0.0}, {}, kBool);
          }
          // a (2, 3) sample reduced over dim 0 (3 results) or dim 1 (2 results)
          const int64_t rows = a[0].size(0), cols = a[0].size(1);
          std::vector<double> out;
          const int64_t n_out = *dim == 0 ? cols : rows, n_in = *dim == 0 ? rows : cols;
          for (int64_t o = 0; o < n_out; ++o) {
            bool r = is_all;
            for (int64_t i = 0; i < n_in; ++i) {
              const double x = *dim == 0 ? v[static_cast<size_t>(i * cols + o)] : v[static_cast<size_t>(o * cols + i)];
              r = is_all ? (r && x != 0) : (r || x != 0);
            }
            out.push_back(r ? 1.0 : 0.0);
          }
          std::vector<int64_t> shape = {n_out};
          if (keepdim) shape = *dim == 0 ? std::vector<int64_t>{1, cols} : std::vector<int64_t>{rows, 1};
          return make(out, shape, kBool);
        },
        .samples = [dim] {
          const double nan = std::numeric_limits<double>::quiet_NaN();
          std::vector<TensorList> s = {{make({1, 0, 2, 3, 4, 0.5}, {2, 3})},
                                       {make({0, 0, 0, 1, 1, 1}, {2, 3}, kInt64)},
                                       {make({nan, 0, 0, 0, 0, 0}, {2, 3})}};  // NaN is nonzero
          if (!dim) {
            s.push_back({make({}, {0})});  // empty: all() true, any() false
            s.push_back({make({0}, {}, kBool)});
          }
          return s;
        },
        .gradcheck = false,
        .gradgradcheck = false,
        .errors = {{[is_all] { is_all ? all(zeros({2, 3}), 2) : any(zeros({2, 3}), 2); }, {name, "dim"}}}};
  };
  for (const char* name : {"all", "any"}) {
    const bool is_all = std::string(name) == "all";
    recs.push_back(truth(name, is_all, std::nullopt, false));
    recs.push_back(truth(name, is_all, 0, false));
    recs.push_back(truth(name, is_all, 1, true));
  }

  // ---- allclose / equal: one bool for the whole tensor, returned here as a 0-dim bool tensor ----
  auto as_tensor = [](bool b) { return make({b ? 1.0 : 0.0}, {}, kBool); };
  // Pairs that are close (within 1e-8 + 1e-5 * |b|), not close, broadcast, and equal.
  auto close_samples = [] {
    return std::vector<TensorList>{{make({1, 100, -3}, {3}), make({1 + 5e-6, 100 + 5e-4, -3}, {3})},
                                   {make({1, 100, -3}, {3}), make({1 + 2e-5, 100, -3}, {3})},
                                   {make({2, 2, 2, 2}, {2, 2}), make({2}, {1})},
                                   {make({1, 2}, {2}, kInt64), make({1, 2}, {2}, kInt64)}};
  };
  recs.push_back({.name = "allclose",
                  .fn = [as_tensor](const TensorList& a) { return as_tensor(allclose(a[0], a[1])); },
                  .reference = [as_tensor](const TensorList& a) {
                    const Tensor c = ref_map(a, [](auto& v) {
                      const double d = v[0] > v[1] ? v[0] - v[1] : v[1] - v[0];
                      return d <= 1e-8 + 1e-5 * (v[1] < 0 ? -v[1] : v[1]) ? 1.0 : 0.0;
                    });
                    bool all = true;
                    for (double x : values(c)) all = all && x != 0;
                    return as_tensor(all);
                  },
                  .samples = close_samples,
                  .gradcheck = false,
                  .gradgradcheck = false,
                  .float32 = false,  // the close pairs are closer than float32 resolves
                  .errors = {{[] { allclose(zeros({2}), zeros({3})); }, {"allclose", "[2]", "[3]"}},
                             {[] { allclose(zeros({2}), zeros({2}), -1.0); }, {"allclose", "rtol"}}}});
  recs.push_back({.name = "isclose",
                  .fn = [](const TensorList& a) { return isclose(a[0], a[1]); },
                  .reference = [](const TensorList& a) {
                    // Elementwise |x - y| <= 1e-8 + 1e-5 |y|, broadcast by the reference's map.
                    return ref_map(a, [](auto& v) {
                      const double d = v[0] > v[1] ? v[0] - v[1] : v[1] - v[0];
                      return d <= 1e-8 + 1e-5 * (v[1] < 0 ? -v[1] : v[1]) ? 1.0 : 0.0;
                    }, kBool);
                  },
                  .samples = close_samples,
                  .gradcheck = false,
                  .gradgradcheck = false,
                  .float32 = false,
                  .errors = {{[] { isclose(zeros({2}), zeros({3})); }, {"isclose", "[2]", "[3]"}},
                             {[] { isclose(zeros({2}), zeros({2}), 1e-5, -1.0); }, {"isclose", "atol"}}}});
  recs.push_back({.name = "equal",
                  .fn = [as_tensor](const TensorList& a) { return as_tensor(equal(a[0], a[1])); },
                  .reference = [as_tensor](const TensorList& a) {
                    const std::vector<double> x = values(a[0]), y = values(a[1]);
                    bool same = a[0].sizes().equals(a[1].sizes());
                    for (size_t i = 0; same && i < x.size(); ++i) same = x[i] == y[i];
                    return as_tensor(same);
                  },
                  .samples = close_samples,
                  .gradcheck = false,
                  .gradgradcheck = false,
                  .float32 = false,
                  .errors = {{[] { equal(Tensor(), zeros({2})); }, {"equal", "undefined"}}}});

  // where(condition, a, b)
  auto where_ref = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] != 0 ? v[1] : v[2]; }); };
  recs.push_back({.name = "where",
                  .fn = [](const TensorList& a) { return where(a[0], a[1], a[2]); },
                  .reference = where_ref,
                  .samples = [] {
                    return std::vector<TensorList>{
                        {mask_of({1, 0, 1, 0, 0, 1}, {2, 3}), r({2, 3}, 1), r({2, 3}, 2)},
                        {mask_of({1, 0, 0}, {3}), r({2, 3}, 3), r({2, 1}, 4)},   // all three broadcast
                        {mask_of({0, 1}, {2, 1}), r({1, 4}, 5), r({}, 6)},
                        {mask_of({1}, {}), r({3}, 7), r({3}, 8)}};
                  },
                  .differentiable = {false, true, true},
                  .errors = {{[] { where(zeros({2, 3}), zeros({2, 3}), ones({2, 3})); },
                              {"where", "bool", "float32", "condition", "[2, 3]"}},
                             {[] { where(ones({2, 3}, kBool), zeros({2, 3}), ones({4})); },
                              {"where", "[2, 3]", "[4]", "broadcast"}},
                             {[] { where(ones({5}, kBool), zeros({2, 3}), ones({3})); }, {"where", "[5]", "[2, 3]"}},
                             {[] { where(zeros({2}, kInt64), 1.0, ones({2})); }, {"where", "bool", "int64"}}}});
  recs.push_back({.name = "where", .variant = "scalar_other",
                  .fn = [](const TensorList& a) { return where(a[0], a[1], Scalar(-0.25)); },
                  .reference = [](const TensorList& a) {
                    return ref_map(a, [](auto& v) { return v[0] != 0 ? v[1] : -0.25; });
                  },
                  .samples = [] {
                    return std::vector<TensorList>{{mask_of({1, 0, 1}, {3}), r({2, 3}, 9)}};
                  },
                  .differentiable = {false, true}});
  recs.push_back({.name = "where", .variant = "scalar_self",
                  .fn = [](const TensorList& a) { return where(a[0], Scalar(3.0), a[1]); },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] != 0 ? 3.0 : v[1]; }); },
                  .samples = [] {
                    return std::vector<TensorList>{{mask_of({0, 1, 1, 0}, {2, 2}), r({2, 2}, 10)}};
                  },
                  .differentiable = {false, true}});
  recs.push_back({.name = "where", .variant = "method",
                  .fn = [](const TensorList& a) { return a[1].where(a[0], a[2]); },
                  .reference = where_ref,
                  .samples = [] {
                    return std::vector<TensorList>{{mask_of({1, 0}, {2}), r({3, 2}, 11), r({2}, 12)}};
                  },
                  .differentiable = {false, true, true}});

  // masked_fill(x, mask, value)
  recs.push_back({.name = "masked_fill",
                  .fn = [](const TensorList& a) { return masked_fill(a[0], a[1], -1.5); },
                  .reference = [](const TensorList& a) {
                    return ref_map(a, [](auto& v) { return v[1] != 0 ? -1.5 : v[0]; });
                  },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 3}, 13), mask_of({1, 0, 0, 1, 1, 0}, {2, 3})},
                                                   {r({2, 3}, 14), mask_of({0, 1, 0}, {3})},
                                                   {r({2, 3}, 15), mask_of({1, 0}, {2, 1})},
                                                   {r({3}, 16), mask_of({1}, {})},
                                                   {r({}, 17), mask_of({0}, {})}};
                  },
                  .differentiable = {true, false},
                  .errors = {{[] { masked_fill(zeros({2, 3}), zeros({2, 3}, kInt64), 1.0); },
                              {"masked_fill", "bool", "mask", "int64", "[2, 3]"}},
                             {[] { masked_fill(zeros({2, 3}), ones({4}, kBool), 1.0); },
                              {"masked_fill", "[2, 3]", "[4]", "mask"}},
                             {[] { masked_fill(zeros({3}), ones({2, 3}, kBool), 1.0); },
                              {"masked_fill", "[3]", "[2, 3]", "broadcast"}}}});
  recs.push_back({.name = "masked_fill", .variant = "method",
                  .fn = [](const TensorList& a) { return a[0].masked_fill(a[0].gt(0.5), 0.0); },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] > 0.5 ? 0.0 : v[0]; }); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 4}, 18)}}; }});

  // masked_fill_ on a non-leaf copy, so the graph goes through the in-place node.
  recs.push_back({.name = "masked_fill_",
                  .fn = [](const TensorList& a) {
                    Tensor y = a[0] * 1.0;
                    y.masked_fill_(a[1], 2.0);
                    return y;
                  },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[1] != 0 ? 2.0 : v[0]; }); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 3}, 19), mask_of({1, 0, 1, 0, 0, 1}, {2, 3})},
                                                   {r({2, 3}, 20), mask_of({0, 1, 1}, {3})}};
                  },
                  .differentiable = {true, false},
                  .errors = {{[] {
                                Tensor leaf = zeros({2}, requires_grad());
                                leaf.masked_fill_(ones({2}, kBool), 1.0);
                              }, {"masked_fill_", "leaf", "NoGradGuard"}},
                             {[] {
                                Tensor t = zeros({2});
                                t.masked_fill_(ones({3}, kBool), 1.0);
                              }, {"masked_fill_", "[2]", "[3]", "mask"}},
                             {[] {
                                Tensor t = zeros({2});
                                t.masked_fill_(ones({2}), 1.0);
                              }, {"masked_fill_", "bool", "float32"}}}});
  return recs;
}

// ---- direct tests of the family ----
namespace {

TEST(Compare, ResultsAreBoolWithoutGradient) {
  Tensor a = tensor({1.0, 2.0, 3.0}, requires_grad());
  Tensor b = tensor({3.0, 2.0, 1.0}, requires_grad());
  for (const Tensor& y : {gt(a, b), lt(a, b), ge(a, b), le(a, b), eq(a, b), ne(a, b), gt(a, 2.0), eq(a, 2)}) {
    EXPECT_EQ(y.dtype(), kBool);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_TRUE(all_close(gt(a, b), {0, 0, 1}, {3}));
  EXPECT_TRUE(all_close(ge(a, b), {0, 1, 1}, {3}));
}

TEST(Compare, PromotesBeforeComparing) {
  // int64 tensor against a float scalar compares in floating point: 2 > 1.5, 1 < 1.5.
  EXPECT_TRUE(all_close(gt(tensor({1, 2}), 1.5), {0, 1}, {2}));
  EXPECT_TRUE(all_close(eq(tensor({1, 2}), 2.0), {0, 1}, {2}));
  // int64 against float64 tensor
  EXPECT_TRUE(all_close(lt(tensor({1, 2, 3}), tensor({1.5, 1.5, 3.5}, kFloat64)), {1, 0, 1}, {3}));
  // 0.1f stored in float32 equals the scalar 0.1 once the scalar is converted to float32
  EXPECT_TRUE(all_close(eq(tensor({0.1f}), 0.1), {1}, {1}));
  // bool compared with bool
  EXPECT_TRUE(all_close(gt(tensor({true, false, true}), tensor({false, false, true})), {1, 0, 0}, {3}));
}

TEST(Compare, NanComparesFalseExceptNe) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = tensor({nan, 1.0}, kFloat64);
  EXPECT_TRUE(all_close(eq(a, a), {0, 1}, {2}));
  EXPECT_TRUE(all_close(ne(a, a), {1, 0}, {2}));
  EXPECT_TRUE(all_close(gt(a, 0.0), {0, 1}, {2}));
  EXPECT_TRUE(all_close(le(a, 5.0), {0, 1}, {2}));
}

TEST(Compare, LogicalOps) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor f = tensor({0.0, 2.0, -1.0, nan}, kFloat64);
  Tensor i = tensor({0, 0, 3, 1});
  Tensor b = tensor({true, false, true, false});
  EXPECT_EQ(logical_not(f).dtype(), kBool);
  EXPECT_TRUE(all_close(logical_not(f), {1, 0, 0, 0}, {4}));  // NaN is nonzero, so true
  EXPECT_TRUE(all_close(logical_not(i), {1, 1, 0, 0}, {4}));
  EXPECT_TRUE(all_close(f.logical_not(), {1, 0, 0, 0}, {4}));
  EXPECT_TRUE(all_close(logical_and(f, i), {0, 0, 1, 1}, {4}));
  EXPECT_TRUE(all_close(logical_or(i, b), {1, 0, 1, 1}, {4}));
  EXPECT_TRUE(all_close(f.logical_and(b), {0, 0, 1, 0}, {4}));
  EXPECT_TRUE(all_close(b.logical_or(f), {1, 1, 1, 1}, {4}));
  // broadcasting: [2, 1] with [3]
  EXPECT_TRUE(all_close(logical_and(tensor({{1}, {0}}), tensor({true, false, true})), {1, 0, 1, 0, 0, 0}, {2, 3}));
  EXPECT_TRUE(throws_error([] { logical_or(zeros({2}), zeros({3})); }, {"logical_or", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error([] { logical_and(zeros({2}), zeros({3})); }, {"logical_and", "[2]", "[3]"}));
}

TEST(Compare, WhereDtypeAndBackward) {
  Tensor c = tensor({true, false, true});
  // promotion of the value operands
  EXPECT_EQ(where(c, tensor({1, 2, 3}), tensor({1.5f, 2.5f, 3.5f})).dtype(), kFloat32);
  EXPECT_EQ(where(c, tensor({1, 2, 3}), tensor({4, 5, 6})).dtype(), kInt64);
  EXPECT_EQ(where(c, tensor({1, 2, 3}), 0.5).dtype(), kFloat32);
  EXPECT_EQ(where(c, 2, tensor({4, 5, 6})).dtype(), kInt64);
  EXPECT_TRUE(all_close(where(c, tensor({1, 2, 3}), 0.5), {1, 0.5, 3}, {3}));
  EXPECT_TRUE(all_close(where(c, tensor({1, 2, 3}), tensor({4, 5, 6})), {1, 5, 3}, {3}));

  Tensor a = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor b = tensor({4.0}, kFloat64).requires_grad_();
  Tensor y = where(c, a * a, b);
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "WhereBackward0");
  y.sum().backward();
  EXPECT_TRUE(all_close(a.grad(), {2, 0, 6}, {3}));   // 2a where c
  EXPECT_TRUE(all_close(b.grad(), {1}, {1}));         // summed over the one false position
}

TEST(Compare, MaskedFill) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat64).requires_grad_();
  Tensor m = tensor({true, false});  // broadcasts over rows
  Tensor y = masked_fill(x, m, 9);
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_TRUE(all_close(y, {9, 2, 9, 4}, {2, 2}));
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "MaskedFillBackward0");
  (y * y).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 4, 0, 8}, {2, 2}));
  // integer and bool tensors keep their dtype
  Tensor yi = masked_fill(tensor({1, 2, 3}), tensor({false, true, false}), 7);
  EXPECT_EQ(yi.dtype(), kInt64);
  EXPECT_TRUE(all_close(yi, {1, 7, 3}, {3}));
  Tensor yb = masked_fill(tensor({true, false}), tensor({true, true}), false);
  EXPECT_EQ(yb.dtype(), kBool);
  EXPECT_TRUE(all_close(yb, {0, 0}, {2}));
}

TEST(Compare, MaskedFillInPlace) {
  Tensor x = tensor({1.0f, 2.0f, 3.0f, 4.0f});
  const auto v0 = x._version();
  Tensor& r = x.masked_fill_(tensor({false, true, true, false}), -1.0);
  EXPECT_TRUE(r.is_same(x));
  EXPECT_GT(x._version(), v0);
  EXPECT_TRUE(all_close(x, {1, -1, -1, 4}, {4}));
  // a strided destination
  Tensor base = zeros({2, 3}, kFloat64);
  Tensor col = base.select(1, 1);
  col.masked_fill_(tensor({true, false}), 5.0);
  EXPECT_TRUE(all_close(base, {0, 5, 0, 0, 0, 0}, {2, 3}));
  // recorded: the grad_fn becomes the masked_fill node, the filled positions get no gradient
  Tensor a = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor y = a * 2.0;
  y.masked_fill_(tensor({true, false, false}), 0.0);
  EXPECT_EQ(y.grad_fn()->name(), "MaskedFillBackward0");
  y.sum().backward();
  EXPECT_TRUE(all_close(a.grad(), {0, 2, 2}, {3}));
}

TEST(Compare, AllcloseAndEqual) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = tensor({1.0, 100.0}, kFloat64);
  EXPECT_TRUE(allclose(a, tensor({1.0 + 5e-6, 100.0 + 5e-4}, kFloat64)));   // within 1e-8 + 1e-5 * |b|
  EXPECT_FALSE(allclose(a, tensor({1.0 + 2e-5, 100.0}, kFloat64)));
  EXPECT_TRUE(allclose(a, tensor({1.1, 100.0}, kFloat64), 0.0, 0.11));
  EXPECT_FALSE(allclose(a, tensor({1.1, 100.0}, kFloat64), 0.0, 0.09));
  EXPECT_TRUE(allclose(tensor({{1.0, 1.0}, {1.0, 1.0}}), tensor({1.0})));  // broadcasting
  EXPECT_TRUE(allclose(tensor({inf, -inf}, kFloat64), tensor({inf, -inf}, kFloat64)));
  EXPECT_FALSE(allclose(tensor({inf}, kFloat64), tensor({-inf}, kFloat64)));
  EXPECT_FALSE(allclose(tensor({inf}, kFloat64), tensor({1e308}, kFloat64), 1.0, 1.0));
  EXPECT_FALSE(allclose(tensor({nan}, kFloat64), tensor({nan}, kFloat64)));
  EXPECT_TRUE(allclose(tensor({nan}, kFloat64), tensor({nan}, kFloat64), 1e-5, 1e-8, true));
  EXPECT_FALSE(allclose(tensor({nan}, kFloat64), tensor({1.0}, kFloat64), 1e-5, 1e-8, true));
  EXPECT_TRUE(allclose(tensor({1, 2}), tensor({1, 2})));
  EXPECT_TRUE(allclose(zeros({0}), zeros({0})));
  EXPECT_TRUE(throws_error([] { allclose(zeros({2}), zeros({3})); }, {"allclose", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error([] { allclose(zeros({2}), zeros({2}), -1.0); }, {"allclose", "rtol"}));

  EXPECT_TRUE(equal(tensor({1.0, 2.0}), tensor({1.0, 2.0})));
  EXPECT_FALSE(equal(tensor({1.0, 2.0}, kFloat64), tensor({1.0, 2.0000001}, kFloat64)));
  EXPECT_FALSE(equal(tensor({1.0, 1.0}), tensor({1.0})));            // no broadcasting
  EXPECT_FALSE(equal(tensor({{1.0, 2.0}}), tensor({1.0, 2.0})));     // shapes differ
  EXPECT_FALSE(equal(tensor({nan}), tensor({nan})));
  EXPECT_TRUE(equal(zeros({0, 3}), zeros({0, 3})));
  Tensor t = tensor({{1, 2}, {3, 4}});
  EXPECT_TRUE(equal(t.t(), tensor({{1, 3}, {2, 4}})));  // strided
}

TEST(Compare, FloatClassification) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = tensor({1.0, nan, inf, -inf, 0.0}, dt);
    EXPECT_EQ(isnan(x).dtype(), kBool);
    EXPECT_TRUE(all_close(isnan(x), {0, 1, 0, 0, 0}, {5}));
    EXPECT_TRUE(all_close(isinf(x), {0, 0, 1, 1, 0}, {5}));
    EXPECT_TRUE(all_close(isfinite(x), {1, 0, 0, 0, 1}, {5}));
  }
  for (const Tensor& x : {tensor({1, -2}), tensor({true, false})}) {
    EXPECT_TRUE(all_close(isnan(x), {0, 0}, {2}));
    EXPECT_TRUE(all_close(isinf(x), {0, 0}, {2}));
    EXPECT_TRUE(all_close(isfinite(x), {1, 1}, {2}));
    EXPECT_EQ(isfinite(x).dtype(), kBool);
  }
  // Half-precision tensors are classified through float32 (Note [Half-precision compute]).
  const Tensor h = tensor({1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()})
                       .to(kFloat16);
  EXPECT_TRUE(all_close(isnan(h), {0, 0, 1}, {3}));
  EXPECT_TRUE(all_close(isinf(h), {0, 1, 0}, {3}));
}

}  // namespace
}  // namespace graft::test
