// graft's first demo: fit y = sin(x) on [-3, 3] with a small tanh network, using nothing but
// tensors, autograd and a hand-written SGD step. The loss printed every 200 steps falls from ~0.5
// to ~1e-3.
#include <graft/graft.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  namespace F = graft::nn::functional;
  const int steps = argc > 1 ? std::atoi(argv[1]) : 2000;
  graft::manual_seed(0);

  // Data: 256 points of sin(x).
  graft::Tensor x = graft::linspace(-3, 3, 256).unsqueeze(1);  // (256, 1)
  graft::Tensor y = graft::sin(x);                              // (256, 1)

  // Parameters of a 1-32-1 network (scaled like PyTorch's default init).
  auto param = [](graft::IntArrayRef shape, double scale) {
    return ((graft::rand(shape) * 2 - 1) * scale).requires_grad_();
  };
  graft::Tensor w1 = param({32, 1}, 1.0), b1 = param({32}, 1.0);
  graft::Tensor w2 = param({1, 32}, 0.18), b2 = param({1}, 0.18);

  const double lr = 0.05;
  for (int step = 0; step <= steps; ++step) {
    graft::Tensor hidden = graft::tanh(F::linear(x, w1, b1));  // (256, 32)
    graft::Tensor pred = F::linear(hidden, w2, b2);             // (256, 1)
    graft::Tensor loss = F::mse_loss(pred, y);

    loss.backward();
    {
      graft::NoGradGuard no_grad;  // the update itself must not be recorded
      for (graft::Tensor* p : {&w1, &b1, &w2, &b2}) {
        p->sub_(p->grad() * lr);
        p->mutable_grad() = graft::Tensor();  // zero_grad(set_to_none = true)
      }
    }
    if (step % 200 == 0) std::printf("step %4d  loss %.6f\n", step, loss.item<double>());
  }
  return 0;
}
