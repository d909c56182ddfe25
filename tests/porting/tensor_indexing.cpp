// LibTorch-style source (tests/porting, docs/porting.md): x.index({...}) and x.index_put_({...}, v)
// with Slice, None, Ellipsis, integers, booleans and index tensors. Ported by
// tools/port-from-libtorch.sh and built against graft; where LibTorch is installed, also built
// unchanged against it and the outputs compared. Each value is checked against a hand-derived one.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "porting_checks.h"

using namespace torch::indexing;

namespace {

using porting::check;
using porting::show;

}  // namespace

int main() {
  // x = arange(24) as (2, 3, 4): x[i][j][k] = 12 i + 4 j + k.
  auto x = torch::arange(24, torch::kFloat64).reshape({2, 3, 4});

  show("x[1]", x.index({1}), {3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  show("x[0, 1:3]", x.index({0, Slice(1, 3)}), {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11});
  show("x[:, ::2, -1]", x.index({Slice(), Slice(None, None, 2), -1}), {2, 2}, {3, 11, 15, 23});
  show("x[..., 0]", x.index({Ellipsis, 0}), {2, 3}, {0, 4, 8, 12, 16, 20});
  show("x[None, 1, ..., 2]", x.index({None, 1, "...", 2}), {1, 3}, {14, 18, 22});
  show("x[0, None, 2]", x.index({0, None, 2}), {1, 4}, {8, 9, 10, 11});
  show("x[True][0][0]", x.index({true}).index({0, 0, 0}), {4}, {0, 1, 2, 3});
  show("x[False]", x.index({false}), {0, 2, 3, 4}, {});
  show("x[1, -2:]", x.index({1, Slice(-2, None)}), {2, 4}, {16, 17, 18, 19, 20, 21, 22, 23});

  // An index tensor: positions [2, 0] of dim 1, and a (2, 2) one of the last dim.
  auto pos = torch::tensor({2, 0}, torch::kInt64);
  show("x[0, [2, 0]]", x.index({0, pos}), {2, 4}, {8, 9, 10, 11, 0, 1, 2, 3});
  auto pos2 = torch::tensor({{3, 0}, {1, 1}}, torch::kInt64);
  show("x[1, 2, [[3, 0], [1, 1]]]", x.index({1, 2, pos2}), {2, 2}, {23, 20, 21, 21});
  show("x[:, [1]]", x.index({Slice(), torch::tensor({1}, torch::kInt64)}), {2, 1, 4},
       {4, 5, 6, 7, 16, 17, 18, 19});
  auto mask = torch::tensor({true, false, true});
  show("x[1, mask]", x.index({1, mask}), {2, 4}, {12, 13, 14, 15, 20, 21, 22, 23});
  show("x[tensor(1), 0]", x.index({torch::tensor(1, torch::kInt64), 0}), {4}, {12, 13, 14, 15});

  // Views share memory: writing through one changes x.
  auto row = x.index({0, 0});
  row.fill_(-1);
  show("x[0, 0] after fill", x.index({0, 0}), {4}, {-1, -1, -1, -1});

  // index_put_: a number, a broadcast tensor, and through an index tensor.
  auto y = torch::zeros({3, 4}, torch::kFloat64);
  y.index_put_({0, Slice()}, 7.0);
  y.index_put_({Slice(1, None), Slice(None, 2)}, torch::tensor({1.0, 2.0}, torch::kFloat64));
  y.index_put_({2, torch::tensor({3, 2}, torch::kInt64)}, torch::tensor({5.0, 6.0}, torch::kFloat64));
  show("y", y, {3, 4}, {7, 7, 7, 7, 1, 2, 0, 0, 1, 2, 6, 5});
  y.index_put_({Ellipsis, -1}, 9);
  show("y[..., -1] = 9", y.index({Slice(), -1}), {3}, {9, 9, 9});

  // Gradients flow through the basic indices and through index_select.
  auto w = torch::arange(6, torch::kFloat64).reshape({2, 3}).requires_grad_();
  auto loss = w.index({1, Slice(1, None)}).sum() * 2 + w.index({Slice(), torch::tensor({0, 0}, torch::kInt64)}).sum();
  loss.backward();
  show("dw", w.grad(), {2, 3}, {2, 0, 0, 2, 2, 2});

  return porting::finish();
}
