// LibTorch-style source (tests/porting, docs/porting.md): a seeded program whose printed output
// is compared with LibTorch's byte for byte (porting: byte for byte), as a ported program's logs
// should read the same. Everything it prints is drawn: randn below and above 16 values, rand,
// randint, randperm, the in-place fills, dropout and the initial weights of modules, then a
// gradient through them. The famous first draws after manual_seed(0) are checked by hand too.
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <vector>

#include "porting_checks.h"

using porting::check;

int main() {
  torch::manual_seed(0);
  const torch::Tensor first = torch::randn({2, 2});
  std::cout << first << "\n";
  // PyTorch's documented first draws after manual_seed(0): 1.5410, -0.2934, -2.1788, 0.5684.
  const std::vector<double> known = {1.5410, -0.2934, -2.1788, 0.5684};
  for (int64_t i = 0; i < 4; ++i)
    check(std::abs(first.view({-1})[i].item<double>() - known[static_cast<size_t>(i)]) < 5e-5,
          "randn after manual_seed(0), value " + std::to_string(i));

  std::cout << torch::randn({3}) << "\n";                      // the cached second normal
  std::cout << torch::randn({4, 5}) << "\n";                   // blocks of 16, the tail redrawn
  std::cout << torch::randn({3}, torch::kFloat64) << "\n";
  std::cout << torch::rand({2, 3}) << "\n";
  std::cout << torch::randint(-4, 9, {7}) << "\n";
  const torch::Tensor perm = torch::randperm(9);
  std::cout << perm << "\n";
  std::vector<bool> seen(9, false);
  for (int64_t i = 0; i < perm.numel(); ++i) {
    const int64_t v = perm[i].item<int64_t>();
    check(v >= 0 && v < 9 && !seen[static_cast<size_t>(v)], "randperm is a permutation of 0..8");
    if (v >= 0 && v < 9) seen[static_cast<size_t>(v)] = true;
  }

  std::cout << torch::empty({5}).uniform_(-3, 3) << "\n";
  std::cout << torch::empty({2, 3}).t().normal_(10, 0.5) << "\n";  // a strided tensor: value by value
  std::cout << torch::empty({8}).bernoulli_(0.25) << "\n";
  std::cout << torch::empty({6}, torch::kInt64).random_(100) << "\n";

  torch::manual_seed(2024);
  torch::nn::Linear linear(5, 3);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 2, 2));
  torch::nn::Embedding embedding(6, 3);
  torch::nn::Dropout dropout(0.5);
  std::cout << linear->weight << "\n" << linear->bias << "\n";
  std::cout << conv->weight << "\n" << conv->bias << "\n";
  std::cout << embedding->weight << "\n";

  const torch::Tensor x = torch::randn({4, 5}, torch::requires_grad());
  const torch::Tensor h = dropout(torch::relu(linear(x)));
  std::cout << h << "\n";
  h.sum().backward();
  std::cout << x.grad() << "\n";
  std::cout << linear->weight.grad() << "\n";

  // Reseeding restarts the stream, cached normal included.
  torch::manual_seed(0);
  check(torch::randn({2, 2}).equal(first), "manual_seed(0) again draws the same");
  return porting::failures == 0 ? 0 : 1;
}
