// The LibTorch side of the per-op overhead benchmark (see overhead_common.h). Compiled as C++17,
// the standard LibTorch 1.13's headers are written for; the same chain as overhead_graft.cpp.
#include <torch/torch.h>

#include "overhead_common.h"

namespace overhead {
namespace {

class TorchRunner final : public Runner {
 public:
  explicit TorchRunner(const Case& c) : c_(c) {
    x_ = torch::full({c.n}, kInit, torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true));
    cm_ = torch::full({c.n}, kMul, torch::kFloat32);
    ca_ = torch::full({c.n}, kAdd, torch::kFloat32);
    ones_ = torch::ones({c.n}, torch::kFloat32);
  }

  [[gnu::noinline]] torch::Tensor chain(const torch::Tensor& x) {
    torch::Tensor y = x;
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
        last_ = torch::Tensor();
        break;
      }
      case Mode::FwdBwd: {
        torch::Tensor y = chain(x_);
        y.backward(ones_);
        x_.mutable_grad() = torch::Tensor();
        break;
      }
      case Mode::NoGrad: {
        torch::NoGradGuard ng;
        last_ = chain(x_);
        last_ = torch::Tensor();
        break;
      }
    }
  }

  std::vector<float> result() override {
    std::vector<float> out;
    torch::Tensor y;
    if (c_.mode == Mode::NoGrad) {
      torch::NoGradGuard ng;
      y = chain(x_);
    } else {
      y = chain(x_);
    }
    const float* p = y.data_ptr<float>();
    out.assign(p, p + y.numel());
    if (c_.mode == Mode::FwdBwd) {
      x_.mutable_grad() = torch::Tensor();
      y.backward(ones_);
      const float* g = x_.grad().data_ptr<float>();
      out.insert(out.end(), g, g + x_.numel());
      x_.mutable_grad() = torch::Tensor();
    }
    return out;
  }

 private:
  Case c_;
  torch::Tensor x_, cm_, ca_, ones_, last_;
};

}  // namespace

std::unique_ptr<Runner> make_torch_runner(const Case& c) { return std::make_unique<TorchRunner>(c); }
std::string torch_version() {
  return "LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}
int torch_num_threads() { return torch::get_num_threads(); }
int torch_num_interop_threads() { return torch::get_num_interop_threads(); }
void torch_set_num_threads(int n) { torch::set_num_threads(n); }

}  // namespace overhead
