// SGD's update loop (src/optim/sgd.cpp) against a plain scalar loop, bit for bit: the vectorised
// path for the common case (momentum after the first step, no decay, Nesterov or maximize) and the
// general path must give the same bits as the formula written out element by element, on sizes that
// are not multiples of any vector width; the update statistics match sums taken in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "graft/graft.h"
#include "optim_test_helpers.h"

namespace graft::test {
namespace {

struct SgdCase {
  bool nesterov, decay, maximize;
};

// PyTorch's SGD in float, one element at a time, with the fused multiply-adds graft uses.
void reference_step(std::vector<float>& p, std::vector<float>& buf, const std::vector<float>& g, bool first, float lr,
                    float mom, float wd, const SgdCase& c) {
  for (size_t i = 0; i < p.size(); ++i) {
    float d = c.maximize ? -g[i] : g[i];
    if (c.decay) d = std::fma(wd, p[i], d);
    buf[i] = first ? d : std::fma(1.0f, d, buf[i] * mom);
    d = c.nesterov ? std::fma(mom, buf[i], d) : buf[i];
    p[i] = std::fma(-lr, d, p[i]);
  }
}

TEST(SgdUpdateLoop, EveryPathMatchesTheScalarFormulaBitForBit) {
  for (const SgdCase c : {SgdCase{false, false, false}, SgdCase{true, false, false}, SgdCase{false, true, false},
                          SgdCase{false, false, true}}) {
    for (int64_t n : {1, 7, 515, 100003, 300007}) {  // 300007: split over threads
      manual_seed(static_cast<uint64_t>(n));
      Tensor w = randn({n}).requires_grad_();
      optim::SGD opt({w}, optim::SGDOptions(0.05).momentum(0.9).nesterov(c.nesterov).weight_decay(c.decay ? 0.01 : 0)
                              .maximize(c.maximize));
      opt.record_update_stats(n == 100003);  // (statistics run on one thread)
      std::vector<float> p(static_cast<size_t>(n)), buf(static_cast<size_t>(n)), g(static_cast<size_t>(n));
      std::memcpy(p.data(), w.data_ptr<float>(), p.size() * sizeof(float));
      for (int step = 0; step < 4; ++step) {
        Tensor grad = randn({n});
        std::memcpy(g.data(), grad.data_ptr<float>(), g.size() * sizeof(float));
        w.mutable_grad() = grad;
        const std::vector<float> before = p;
        opt.step();
        reference_step(p, buf, g, step == 0, 0.05f, 0.9f, 0.01f, c);
        ASSERT_TRUE(same_bits(w.detach(), p)) << "n " << n << " step " << step << " nesterov " << c.nesterov
                                              << " decay " << c.decay << " maximize " << c.maximize;
        if (opt.recording_update_stats()) {
          double wsq = 0, usq = 0;
          for (size_t i = 0; i < p.size(); ++i) {
            wsq += static_cast<double>(before[i]) * before[i];
            const double d = static_cast<double>(p[i] - before[i]);
            usq += d * d;
          }
          const auto* s = opt.update_stats(w);
          ASSERT_NE(s, nullptr);
          EXPECT_NEAR(s->weight_sq, wsq, 1e-5 * wsq);
          EXPECT_NEAR(s->update_sq, usq, 1e-5 * usq);
        }
      }
    }
  }
}

}  // namespace
}  // namespace graft::test
