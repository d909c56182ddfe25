// The graft side of the per-op overhead benchmark (see overhead_common.h).
#include <graft/graft.h>

#include "overhead_common.h"

namespace overhead {
namespace {

class GraftRunner final : public Runner {
 public:
  explicit GraftRunner(const Case& c) : c_(c) {
    x_ = graft::full({c.n}, kInit, graft::TensorOptions().requires_grad(true));
    cm_ = graft::full({c.n}, kMul);
    ca_ = graft::full({c.n}, kAdd);
    ones_ = graft::ones({c.n});
  }

  // Kept out of line so that a profiler can attribute to it (callgrind --toggle-collect).
  [[gnu::noinline]] graft::Tensor chain(const graft::Tensor& x) {
    graft::Tensor y = x;
    if (c_.operand == Operand::Scalar) {
      for (int i = 0; i < kChainLen / 2; ++i) {
        y = y * kMul;
        y = y + kAdd;
      }
    } else {
      for (int i = 0; i < kChainLen / 2; ++i) {
        y = y * cm_;
        y = y + ca_;
      }
    }
    return y;
  }

  void step() override {
    switch (c_.mode) {
      case Mode::FwdGrad: {
        last_ = chain(x_);
        last_ = graft::Tensor();  // frees the graph inside the timed region
        break;
      }
      case Mode::FwdBwd: {
        graft::Tensor y = chain(x_);
        y.backward(ones_);
        x_.mutable_grad() = graft::Tensor();
        break;
      }
      case Mode::NoGrad: {
        graft::NoGradGuard ng;
        last_ = chain(x_);
        last_ = graft::Tensor();
        break;
      }
    }
  }

  std::vector<float> result() override {
    std::vector<float> out;
    graft::Tensor y;
    if (c_.mode == Mode::NoGrad) {
      graft::NoGradGuard ng;
      y = chain(x_);
    } else {
      y = chain(x_);
    }
    const float* p = y.data_ptr<float>();
    out.assign(p, p + y.numel());
    if (c_.mode == Mode::FwdBwd) {
      x_.mutable_grad() = graft::Tensor();
      y.backward(ones_);
      const float* g = x_.grad().data_ptr<float>();
      out.insert(out.end(), g, g + x_.numel());
      x_.mutable_grad() = graft::Tensor();
    }
    return out;
  }

 private:
  Case c_;
  graft::Tensor x_, cm_, ca_, ones_, last_;
};

}  // namespace

std::unique_ptr<Runner> make_graft_runner(const Case& c) { return std::make_unique<GraftRunner>(c); }

}  // namespace overhead
