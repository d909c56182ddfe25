// The graft side of the training-step benchmark (see train_step_common.h): the same models, data
// and initial weights as train_step_torch.cpp, written against graft's LibTorch-style API.
#include <graft/graft.h>

#include <cstring>
#include <stdexcept>

#include "train_step_common.h"

namespace trainstep {
namespace {

namespace nn = graft::nn;
namespace F = graft::nn::functional;

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
std::vector<graft::Tensor> load_params(const nn::Sequential& net, const Problem& p) {
  graft::NoGradGuard no_grad;
  std::vector<graft::Tensor> params = net->parameters();
  if (params.size() != p.params.size()) throw std::runtime_error("graft: parameter count differs from the problem's");
  for (size_t i = 0; i < params.size(); ++i) {
    const graft::Tensor& t = params[i];
    const Param& src = p.params[i];
    bool same = t.dim() == static_cast<int64_t>(src.shape.size()) && t.is_contiguous();
    for (size_t d = 0; same && d < src.shape.size(); ++d) same = t.size(static_cast<int64_t>(d)) == src.shape[d];
    if (!same) throw std::runtime_error("graft: parameter " + std::to_string(i) + " has an unexpected shape");
    std::memcpy(t.data_ptr<float>(), src.values.data(), src.values.size() * sizeof(float));
  }
  return params;
}

class GraftTrainer final : public Trainer {
 public:
  explicit GraftTrainer(const Problem& p)
      : net_(build(p.model)),
        // from_blob borrows the vectors; clone() gives each tensor storage of its own (counted by
        // graft's allocator like any other tensor).
        x_(graft::from_blob(const_cast<float*>(p.input.data()), p.input_shape, graft::kFloat32).clone()),
        y_(graft::from_blob(const_cast<int64_t*>(p.labels.data()), {static_cast<int64_t>(p.labels.size())},
                            graft::kInt64)
               .clone()),
        opt_(load_params(net_, p), graft::optim::SGDOptions(kLr).momentum(kMomentum)) {}

  float step() override {
    opt_.zero_grad();  // graft's default: set_to_none
    graft::Tensor logits = net_->forward(x_);
    graft::Tensor loss = F::cross_entropy(logits, y_);
    loss.backward();
    opt_.step();
    return loss.item<float>();
  }

 private:
  nn::Sequential net_;
  graft::Tensor x_, y_;
  graft::optim::SGD opt_;
};

}  // namespace

std::unique_ptr<Trainer> make_graft_trainer(const Problem& p) { return std::make_unique<GraftTrainer>(p); }
void graft_set_threads(int n) { graft::set_num_threads(n); }
std::string graft_blas_core() { return graft::blas_core_name(); }
void graft_reset_tensor_peak() { graft::memory::reset_peak_stats(); }
int64_t graft_tensor_peak_bytes() { return graft::memory::stats().peak_allocated_bytes; }

}  // namespace trainstep
