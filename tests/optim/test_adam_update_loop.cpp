// Adam's and AdamW's update loops (src/optim/adam.cpp) against a plain scalar loop, bit for bit: the
// vectorised paths for the common cases (AdamW's decoupled decay, Adam with or without decay in the
// gradient) and the general path (amsgrad, maximize) must give the same bits as PyTorch's formula
// written out element by element, on sizes that are not multiples of any vector width, and the
// same bits at 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "graft/graft.h"
#include "optim_test_helpers.h"

namespace graft::test {
namespace {

struct AdamCase {
  bool adamw, amsgrad, maximize;
  double weight_decay;
};

// PyTorch 1.13's single-tensor Adam/AdamW in float (Note [Optimizer update loops] for how each
// in-place op rounds), one element at a time.
struct Reference {
  std::vector<float> p, m, v, vmax;
  int step = 0;
  void update(const std::vector<float>& g, double lr, const AdamCase& c) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    ++step;
    const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    const float step_size = static_cast<float>(lr / bc1), bc2_sqrt = static_cast<float>(std::sqrt(bc2));
    for (size_t i = 0; i < p.size(); ++i) {
      float gi = c.maximize ? -g[i] : g[i];
      if (c.adamw) p[i] = p[i] * static_cast<float>(1 - lr * c.weight_decay);  // param.mul_(1 - lr * wd)
      else if (c.weight_decay != 0) gi = std::fma(static_cast<float>(c.weight_decay), p[i], gi);  // grad.add(p, alpha=wd)
      m[i] = std::fma(static_cast<float>(1 - b1), gi, m[i] * static_cast<float>(b1));  // exp_avg.mul_(b1).add_(g, 1-b1)
      v[i] = std::fma(static_cast<float>(1 - b2) * gi, gi, v[i] * static_cast<float>(b2));  // .addcmul_(g, g, 1-b2)
      float denom;
      if (c.amsgrad) {
        vmax[i] = std::isnan(vmax[i]) || std::isnan(v[i]) ? NAN : std::max(vmax[i], v[i]);
        denom = std::sqrt(vmax[i]) / bc2_sqrt + static_cast<float>(eps);
      } else {
        denom = std::sqrt(v[i]) / bc2_sqrt + static_cast<float>(eps);
      }
      p[i] = p[i] + (-step_size * m[i]) / denom;  // param.addcdiv_(exp_avg, denom, value=-step_size)
    }
  }
};

TEST(AdamUpdateLoop, EveryPathMatchesTheScalarFormulaBitForBitAtOneAndTwoThreads) {
  const int threads_before = get_num_threads();
  for (const AdamCase c :
       {AdamCase{true, false, false, 0.01}, AdamCase{false, false, false, 0.0}, AdamCase{false, false, false, 0.02},
        AdamCase{true, true, false, 0.01}, AdamCase{false, false, true, 0.0}, AdamCase{true, false, false, 0.0}}) {
    for (int64_t n : {1, 7, 515, 100003, 300007}) {
      for (int threads : {1, 2}) {
        set_num_threads(threads);
        manual_seed(static_cast<uint64_t>(n));
        Tensor w = randn({n}).requires_grad_();
        std::unique_ptr<optim::Optimizer> opt;
        if (c.adamw)
          opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{w}, optim::AdamWOptions(0.01).weight_decay(c.weight_decay)
                                                                           .amsgrad(c.amsgrad).maximize(c.maximize));
        else
          opt = std::make_unique<optim::Adam>(std::vector<Tensor>{w}, optim::AdamOptions(0.01).weight_decay(c.weight_decay)
                                                                         .amsgrad(c.amsgrad).maximize(c.maximize));
        Reference ref;
        ref.p.resize(static_cast<size_t>(n));
        ref.m.assign(static_cast<size_t>(n), 0.0f);
        ref.v.assign(static_cast<size_t>(n), 0.0f);
        ref.vmax.assign(static_cast<size_t>(n), 0.0f);
        std::memcpy(ref.p.data(), w.data_ptr<float>(), ref.p.size() * sizeof(float));
        std::vector<float> g(static_cast<size_t>(n));
        for (int step = 0; step < 3; ++step) {
          Tensor grad = randn({n});
          if (step == 2 && n > 7) grad.data_ptr<float>()[3] = 1e-41f;  // a denormal gradient
          std::memcpy(g.data(), grad.data_ptr<float>(), g.size() * sizeof(float));
          w.mutable_grad() = grad;
          opt->step();
          ref.update(g, 0.01, c);
          ASSERT_TRUE(same_bits(w.detach(), ref.p)) << "n " << n << " step " << step << " threads " << threads
                                                    << " adamw " << c.adamw << " amsgrad " << c.amsgrad
                                                    << " maximize " << c.maximize << " wd " << c.weight_decay;
        }
      }
    }
  }
  set_num_threads(threads_before);
}

TEST(AdamUpdateLoop, NanAndInfGradientsPropagateAsInTheFormula) {
  Tensor w = tensor<float>({1.0f, 2.0f, 3.0f, 4.0f}).requires_grad_();
  optim::AdamW opt({w}, optim::AdamWOptions(0.1));
  w.mutable_grad() = tensor<float>({NAN, INFINITY, -INFINITY, 0.5f});
  opt.step();
  const float* p = w.data_ptr<float>();
  EXPECT_TRUE(std::isnan(p[0]));
  EXPECT_TRUE(std::isnan(p[1]));  // m = inf, v = inf: inf / inf
  EXPECT_TRUE(std::isnan(p[2]));
  // Finite element: first step of Adam moves by lr * sign(g) (m_hat / sqrt(v_hat) = g / |g|), after
  // the decoupled decay 4 * (1 - 0.1 * 0.01).
  EXPECT_NEAR(p[3], 4.0f * (1 - 0.001f) - 0.1f, 1e-6);
}

}  // namespace
}  // namespace graft::test
