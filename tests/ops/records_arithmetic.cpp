// Op records: add, sub, rsub, mul, div, rdiv, neg (and the in-place forms add_, sub_, mul_, div_).
#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

// Broadcasting samples for binary ops: same shape, row vector, column vector, 0-dim.
std::vector<TensorList> binary_samples(double lo = -2, double hi = 2) {
  return {{r({2, 3}, 1, lo, hi), r({2, 3}, 2, lo, hi)},
          {r({2, 3}, 3, lo, hi), r({3}, 4, lo, hi)},
          {r({2, 1}, 5, lo, hi), r({1, 4}, 6, lo, hi)},
          {r({4}, 7, lo, hi), r({}, 8, lo, hi)}};
}

}  // namespace

GRAFT_OP_RECORDS(arithmetic) {
  std::vector<OpRecord> recs;
  recs.push_back({.name = "add", .variant = "alpha",
                  .fn = [](const TensorList& a) { return add(a[0], a[1], 2.5); },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] + 2.5 * v[1]; }); },
                  .samples = [] { return binary_samples(); },
                  .errors = {shape_mismatch([](auto& a, auto& b) { return a + b; }, "add")}});
  recs.push_back({.name = "add", .variant = "scalar",
                  .fn = [](const TensorList& a) { return a[0] + 3.0; },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] + 3.0; }); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 2}, 9)}}; },
                  .errors = {{[] { zeros({2}).add(tensor({true, false})).add(zeros({3})); }, {"add", "[2]", "[3]"}}}});
  recs.push_back({.name = "sub",
                  .fn = [](const TensorList& a) { return sub(a[0], a[1], 0.5); },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] - 0.5 * v[1]; }); },
                  .samples = [] { return binary_samples(); },
                  .errors = {shape_mismatch([](auto& a, auto& b) { return a - b; }, "sub")}});
  recs.push_back({.name = "rsub", .variant = "operator",
                  .fn = [](const TensorList& a) { return 1.5 - a[0]; },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return 1.5 - v[0]; }); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 2}, 10)}}; },
                  .no_misuse = "a number and a tensor of any dtype and shape", .half = true});
  recs.push_back({.name = "rsub",
                  .fn = [](const TensorList& a) { return rsub(a[0], -0.75); },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return -0.75 - v[0]; }); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 2}, 15)}, {r({}, 16)}}; }});
  recs.push_back({.name = "mul",
                  .fn = [](const TensorList& a) { return a[0] * a[1]; },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] * v[1]; }); },
                  .samples = [] { return binary_samples(); },
                  .errors = {shape_mismatch([](auto& a, auto& b) { return a * b; }, "mul")}});
  recs.push_back({.name = "div",
                  .fn = [](const TensorList& a) { return a[0] / a[1]; },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return v[0] / v[1]; }); },
                  .samples = [] {
                    auto s = binary_samples();
                    for (auto& p : s) p[1] = p[1] + p[1].sign() * 0.5;
                    return s;
                  },
                  .errors = {shape_mismatch([](auto& a, auto& b) { return a / b; }, "div")}});
  recs.push_back({.name = "rdiv", .variant = "operator",
                  .fn = [](const TensorList& a) { return 2.0 / a[0]; },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return 2.0 / v[0]; }); },
                  .samples = [] { return std::vector<TensorList>{{r({3}, 11, 0.5, 2)}}; },
                  .no_misuse = "a number and a tensor of any dtype and shape", .half = true});
  recs.push_back({.name = "rdiv",
                  .fn = [](const TensorList& a) { return rdiv(a[0], -1.5); },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return -1.5 / v[0]; }); },
                  .samples = [] { return std::vector<TensorList>{{make({-1.2, 0.7, 1.9, -0.5}, {2, 2})}}; }});
  recs.push_back({.name = "neg",
                  .fn = [](const TensorList& a) { return -a[0]; },
                  .reference = [](const TensorList& a) { return ref_map(a, [](auto& v) { return -v[0]; }); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 12)}}; },
                  .errors = {{[] { neg(tensor({true})); }, {"neg", "bool"}}}});
  // In-place forms run on a non-leaf copy, so the graph goes through the in-place node.
  auto inplace = [](std::string name, std::function<void(Tensor&, const Tensor&)> op, std::function<double(double, double)> f) {
    return OpRecord{.name = name,
                    .fn = [op](const TensorList& a) {
                      Tensor y = a[0] * 1.0;
                      op(y, a[1]);
                      return y;
                    },
                    .reference = [f](const TensorList& a) { return ref_map(a, [f](auto& v) { return f(v[0], v[1]); }); },
                    .samples = [] { return std::vector<TensorList>{{r({2, 3}, 13), r({3}, 14, 0.5, 2)}}; },
                    .errors = {{[op] {
                                  Tensor leaf = zeros({2}, requires_grad());
                                  op(leaf, ones({2}));
                                }, {name, "leaf", "NoGradGuard"}},
                               {[op] {
                                  Tensor t = zeros({2});
                                  op(t, ones({3}));
                                }, {name, "[2]", "[3]"}}}};
  };
  recs.push_back(inplace("add_", [](Tensor& y, const Tensor& b) { y.add_(b, 2.0); }, [](double x, double b) { return x + 2 * b; }));
  recs.push_back(inplace("sub_", [](Tensor& y, const Tensor& b) { y.sub_(b); }, [](double x, double b) { return x - b; }));
  recs.push_back(inplace("mul_", [](Tensor& y, const Tensor& b) { y.mul_(b); }, [](double x, double b) { return x * b; }));
  recs.push_back(inplace("div_", [](Tensor& y, const Tensor& b) { y.div_(b); }, [](double x, double b) { return x / b; }));
  return recs;
}

}  // namespace graft::test
