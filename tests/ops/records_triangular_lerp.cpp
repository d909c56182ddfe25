// Op records: triu, tril, lerp (a number or a tensor weight) and their in-place forms triu_, tril_,
// lerp_ (issue 32). References are plain loops in double written from the definitions (element
// (.., i, j) kept when j - i >= d, resp. <= d; start + w (end - start)); PyTorch's own values:
// tests/ops/test_triu_lerp.cpp.
#include <functional>
#include <string>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

// The triangle of x's last two dims by a plain loop (x float64 or any dtype, read as doubles).
Tensor triangle_record_ref(const Tensor& x, int64_t d, bool upper) {
  const std::vector<double> v = values(x);
  const int64_t rows = x.size(-2), cols = x.size(-1);
  std::vector<double> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    const auto j = static_cast<int64_t>(k) % cols, i = (static_cast<int64_t>(k) / cols) % rows;
    out[k] = (upper ? j - i >= d : j - i <= d) ? v[k] : 0.0;
  }
  return make(out, x.sizes());
}

std::vector<ErrorCase> triangle_record_errors(const char* op, std::function<void(const Tensor&)> f) {
  return {{[f] { f(zeros({4})); }, {op, "at least 2 dims", "1 dims", "[4]"}},
          {[f] { f(zeros({})); }, {op, "at least 2 dims", "0 dims"}}};
}

OpRecord triangle_record(bool upper, int64_t d) {
  const char* op = upper ? "triu" : "tril";
  return OpRecord{.name = op,
                  .variant = "diagonal " + std::to_string(d),
                  .fn = [upper, d](const TensorList& a) { return upper ? triu(a[0], d) : tril(a[0], d); },
                  .reference = [upper, d](const TensorList& a) { return triangle_record_ref(a[0], d, upper); },
                  .samples = lazy({{S({3, 4}, 301)}, {S({4, 3}, 302)}, {S({2, 3, 4}, 303)}, {S({2, 1, 2, 5}, 304)}}),
                  .errors = triangle_record_errors(op, [upper](const Tensor& x) { upper ? triu(x) : tril(x); })};
}

OpRecord triangle_inplace_record(bool upper, int64_t d) {
  const char* op = upper ? "triu_" : "tril_";
  return OpRecord{
      .name = op,
      .variant = "diagonal " + std::to_string(d),
      // on a non-leaf copy, so that the graph goes through the in-place node
      .fn = [upper, d](const TensorList& a) {
        Tensor y = a[0] * 1.0;
        if (upper) y.triu_(d);
        else y.tril_(d);
        return y;
      },
      .reference = [upper, d](const TensorList& a) { return triangle_record_ref(a[0], d, upper); },
      .samples = lazy({{S({3, 4}, 305)}, {S({2, 4, 3}, 306)}}),
      .errors = {{[upper] {
                    Tensor leaf = zeros({2, 2}, requires_grad());
                    if (upper) leaf.triu_();
                    else leaf.tril_();
                  }, {op, "leaf", "NoGradGuard"}},
                 {[upper] {
                    Tensor t = zeros({3});
                    if (upper) t.triu_();
                    else t.tril_();
                  }, {op, "at least 2 dims", "1 dims"}}}};
}

double lerp_record_ref(double s, double e, double w) { return s + w * (e - s); }

std::vector<ErrorCase> lerp_record_errors(const char* op) {
  return {int_input([](const Tensor& x) { return lerp(x, x, 0.5); }, "lerp"),
          {[] { lerp(zeros({2}), zeros({2}, kFloat64), 0.5); }, {"lerp", "end", "float32", "float64"}},
          {[] { lerp(zeros({2}), zeros({2}), zeros({2}, kFloat64)); }, {"lerp", "weight", "float64"}},
          shape_mismatch([](const Tensor& a, const Tensor& b) { return lerp(a, b, 0.5); }, op)};
}

}  // namespace

GRAFT_OP_RECORDS(triangular_lerp) {
  std::vector<OpRecord> recs;
  for (int64_t d : {-1, 0, 2}) {
    recs.push_back(triangle_record(true, d));
    recs.push_back(triangle_record(false, d));
  }
  recs.push_back(triangle_inplace_record(true, 1));
  recs.push_back(triangle_inplace_record(false, -1));

  // lerp with a number: one weight below 0.5 and one above (ATen's two formulas), broadcasting
  for (double w : {0.3, 0.8, 1.4}) {
    recs.push_back({.name = "lerp",
                    .variant = "weight " + std::to_string(w),
                    .fn = [w](const TensorList& a) { return lerp(a[0], a[1], w); },
                    .reference = [w](const TensorList& a) {
                      return ref_map(a, [w](auto& v) { return lerp_record_ref(v[0], v[1], w); });
                    },
                    .samples = lazy({{S({3, 4}, 311), S({3, 4}, 312)}, {S({3, 1}, 313), S({4}, 314)},
                                     {S({2, 1, 3}, 315), S({4, 1}, 316)}}),
                    .errors = lerp_record_errors("lerp")});
  }
  // lerp with a tensor weight: all three broadcast, weights on both sides of 0.5 and outside [0, 1]
  recs.push_back({.name = "lerp",
                  .variant = "tensor weight",
                  .fn = [](const TensorList& a) { return lerp(a[0], a[1], a[2]); },
                  .reference = [](const TensorList& a) {
                    return ref_map(a, [](auto& v) { return lerp_record_ref(v[0], v[1], v[2]); });
                  },
                  .samples = lazy({{S({3, 4}, 321), S({3, 4}, 322), S({3, 1}, 323, -0.5, 1.5)},
                                   {S({3, 1}, 324), S({1, 4}, 325), S({3, 4}, 326, -0.5, 1.5)},
                                   {S({4}, 327), S({2, 1, 4}, 328), S({1}, 329, 0, 1)}}),
                  .errors = {{[] { lerp(tensor({1, 2}), tensor({3, 4}), tensor({1, 1})); },
                              {"lerp", "floating-point", "int64"}},
                             {[] { lerp(zeros({2}), zeros({2}), zeros({3})); }, {"lerp", "[2]", "[3]"}}}});

  // lerp_ on a non-leaf copy of start: a number weight and a tensor weight
  recs.push_back({.name = "lerp_",
                  .variant = "weight 0.7",
                  .fn = [](const TensorList& a) {
                    Tensor y = a[0] * 1.0;
                    y.lerp_(a[1], 0.7);
                    return y;
                  },
                  .reference = [](const TensorList& a) {
                    return ref_map(a, [](auto& v) { return lerp_record_ref(v[0], v[1], 0.7); });
                  },
                  .samples = lazy({{S({3, 4}, 331), S({3, 4}, 332)}, {S({3, 4}, 333), S({4}, 334)}}),
                  .errors = {{[] {
                                Tensor leaf = zeros({2}, requires_grad());
                                leaf.lerp_(ones({2}), 0.5);
                              }, {"lerp_", "leaf", "NoGradGuard"}},
                             {[] {
                                Tensor t = zeros({3});
                                t.lerp_(zeros({2, 3}), 0.5);
                              }, {"lerp_", "[3]", "[2, 3]", "broadcast"}},
                             {[] {
                                Tensor t = tensor({1, 2});
                                t.lerp_(tensor({1, 2}), 0.5);
                              }, {"lerp_", "floating-point", "int64"}}}});
  recs.push_back({.name = "lerp_",
                  .variant = "tensor weight",
                  .fn = [](const TensorList& a) {
                    Tensor y = a[0] * 1.0;
                    y.lerp_(a[1], a[2]);
                    return y;
                  },
                  .reference = [](const TensorList& a) {
                    return ref_map(a, [](auto& v) { return lerp_record_ref(v[0], v[1], v[2]); });
                  },
                  .samples = lazy({{S({3, 4}, 335), S({1, 4}, 336), S({3, 1}, 337, -0.5, 1.5)}}),
                  .errors = {{[] {
                    Tensor t = zeros({3});
                    t.lerp_(zeros({3}), zeros({2, 1}));
                  }, {"lerp_", "[3]", "[2, 3]"}}}});
  return recs;
}

}  // namespace graft::test
