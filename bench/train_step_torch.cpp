// The LibTorch side of the training-step benchmark (see train_step_common.h). Compiled as C++17,
// the standard LibTorch 1.13's headers are written for; the same models, data and initial weights
// as train_step_graft.cpp.
#include <torch/torch.h>

#include <cstring>
#include <stdexcept>

#include "train_step_common.h"

namespace trainstep {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

nn::Sequential build(Model m) {
  nn::Sequential net;
  if (m == Model::Mlp) {
    net->push_back(nn::Linear(784, 512));
    net->push_back(nn::ReLU());
    net->push_back(nn::Linear(512, 256));
    net->push_back(nn::ReLU());
    net->push_back(nn::Linear(256, 10));
  } else {
    net->push_back(nn::Conv2d(nn::Conv2dOptions(1, 32, 3)));
    net->push_back(nn::ReLU());
    net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    net->push_back(nn::Conv2d(nn::Conv2dOptions(32, 64, 3)));
    net->push_back(nn::ReLU());
    net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    net->push_back(nn::Flatten());
    net->push_back(nn::Linear(1600, 128));
    net->push_back(nn::ReLU());
    net->push_back(nn::Linear(128, 10));
  }
  return net;
}

// Overwrites the module's parameters with the problem's initial values (same order, shapes
// checked) and returns them, for the optimiser.
std::vector<torch::Tensor> load_params(const nn::Sequential& net, const Problem& p) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params = net->parameters();
  if (params.size() != p.params.size()) throw std::runtime_error("torch: parameter count differs from the problem's");
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& t = params[i];
    const Param& src = p.params[i];
    if (t.sizes() != torch::IntArrayRef(src.shape) || !t.is_contiguous())
      throw std::runtime_error("torch: parameter " + std::to_string(i) + " has an unexpected shape");
    std::memcpy(t.data_ptr<float>(), src.values.data(), src.values.size() * sizeof(float));
  }
  return params;
}

class TorchTrainer final : public Trainer {
 public:
  explicit TorchTrainer(const Problem& p)
      : net_(build(p.model)),
        x_(torch::from_blob(const_cast<float*>(p.input.data()), p.input_shape, torch::kFloat32).clone()),
        y_(torch::from_blob(const_cast<int64_t*>(p.labels.data()), {static_cast<int64_t>(p.labels.size())},
                            torch::kInt64)
               .clone()),
        params_(load_params(net_, p)),
        opt_(params_, torch::optim::SGDOptions(kLr).momentum(kMomentum)) {}

  float step() override {
    // LibTorch 1.13's Optimizer::zero_grad() zeroes the gradients in place; setting them to none
    // instead (PyTorch 2's default, and graft's) frees them between steps, which lowers the peak.
    // (The handles in params_ share their TensorImpl with the optimiser's and the module's.)
    for (torch::Tensor& p : params_) p.mutable_grad().reset();
    torch::Tensor logits = net_->forward(x_);
    torch::Tensor loss = F::cross_entropy(logits, y_);
    loss.backward();
    opt_.step();
    return loss.item<float>();
  }

 private:
  nn::Sequential net_;
  torch::Tensor x_, y_;
  std::vector<torch::Tensor> params_;
  torch::optim::SGD opt_;
};

}  // namespace

std::unique_ptr<Trainer> make_torch_trainer(const Problem& p) { return std::make_unique<TorchTrainer>(p); }

void torch_set_threads(int n) {
  static bool interop_set = false;
  if (!interop_set) {
    at::set_num_interop_threads(1);  // only allowed once, before any inter-op work
    interop_set = true;
  }
  torch::set_num_threads(n);
}

std::string torch_version() {
  return "LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace trainstep
