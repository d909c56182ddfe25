// Uses the installed graft: d/dx sum(x * x) = 2x.
#include <graft/graft.h>

#include <cstdio>

int main() {
  auto x = graft::tensor({1.0, 2.0, 3.0}, graft::requires_grad());
  (x * x).sum().backward();
  const double g = x.grad().select(0, 2).item<double>();
  std::printf("consumer: d/dx3 sum(x^2) = %g\n", g);
  return g == 6.0 ? 0 : 1;
}
