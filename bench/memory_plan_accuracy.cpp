// The memory planner's accuracy (BENCHMARKS.md, "Memory planner: predicted vs measured peak").
//
//   build-bench/bench/graft_memory_plan_accuracy
//
// For each model: graft::memory::plan predicts the peak of one training step (forward, cross-entropy
// loss, zero_grad, backward, SGD-with-momentum step) at the given batch size, then the same step
// runs for real at that size (one warm-up step, reset_peak_stats(), one measured step) and the
// allocator's exact peak is the reference. The models: the MLP and CNN of `graft train`, and the
// three tanh MLPs of the checkpointing benchmark, with and without checkpoint_sequential.
#include <graft/graft.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace nn = graft::nn;
namespace F = graft::nn::functional;
namespace memory = graft::memory;

struct Case {
  std::string name;
  std::function<nn::Sequential()> make;
  std::vector<int64_t> shape;
  int64_t segments;  // 0: no checkpointing
};

nn::Sequential tanh_mlp(int64_t depth, int64_t width, int64_t classes) {
  nn::Sequential m;
  for (int64_t i = 0; i < depth; ++i) {
    m->push_back(nn::Linear(width, width));
    m->push_back(nn::Tanh());
  }
  m->push_back(nn::Linear(width, classes));
  return m;
}

nn::Sequential train_mlp() {
  return nn::Sequential(nn::Flatten(), nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(),
                        nn::Linear(256, 10));
}

nn::Sequential train_cnn() {
  return nn::Sequential(nn::Conv2d(1, 32, 3), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(32, 64, 3),
                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(64 * 5 * 5, 128),
                        nn::ReLU(), nn::Linear(128, 10));
}

int64_t measure(nn::Sequential& /*model*/, graft::optim::Optimizer& opt, const std::vector<int64_t>& shape,
                const std::function<graft::Tensor(const graft::Tensor&)>& forward) {
  auto step = [&] {
    graft::Tensor x = graft::randn(shape);
    graft::Tensor out = forward(x);
    graft::Tensor loss = F::cross_entropy(out, graft::zeros({shape[0]}, graft::kInt64));
    out = graft::Tensor();
    opt.zero_grad();
    loss.backward();
    loss = graft::Tensor();
    opt.step();
  };
  step();
  memory::reset_peak_stats();
  step();
  return memory::stats().peak_allocated_bytes;
}

}  // namespace

int main() {
  graft::manual_seed(0);
  const std::vector<Case> cases = {
      {"graft train mlp, batch 128", train_mlp, {128, 1, 28, 28}, 0},
      {"graft train cnn, batch 64", train_cnn, {64, 1, 28, 28}, 0},
      {"tanh MLP depth 32 width 256, batch 4096", [] { return tanh_mlp(32, 256, 10); }, {4096, 256}, 0},
      {"  same, checkpoint_sequential 6 segments", [] { return tanh_mlp(32, 256, 10); }, {4096, 256}, 6},
      {"tanh MLP depth 64 width 256, batch 4096", [] { return tanh_mlp(64, 256, 10); }, {4096, 256}, 0},
      {"  same, checkpoint_sequential 8 segments", [] { return tanh_mlp(64, 256, 10); }, {4096, 256}, 8},
      {"tanh MLP depth 16 width 1024, batch 256", [] { return tanh_mlp(16, 1024, 10); }, {256, 1024}, 0},
      {"  same, checkpoint_sequential 4 segments", [] { return tanh_mlp(16, 1024, 10); }, {256, 1024}, 4},
  };
  std::printf("| model | predicted peak MiB | measured peak MiB | error | planner ms |\n|---|---:|---:|---:|---:|\n");
  double worst = 0;
  for (const Case& c : cases) {
    nn::Sequential model = c.make();
    graft::optim::SGD opt(model->parameters(), graft::optim::SGDOptions(0.01).momentum(0.9));
    std::function<graft::Tensor(const graft::Tensor&)> forward = [&](const graft::Tensor& x) {
      return c.segments > 0 ? graft::checkpoint_sequential(model, c.segments, x) : model->forward(x);
    };
    memory::PlanOptions o;
    o.forward = forward;
    const auto t0 = std::chrono::steady_clock::now();
    const memory::Plan p = memory::plan(*model.ptr(), c.shape, &opt, o);
    const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const int64_t measured = measure(model, opt, c.shape, forward);
    const double err = static_cast<double>(p.predicted_peak_bytes - measured) / static_cast<double>(measured);
    worst = std::max(worst, std::abs(err));
    std::printf("| %s | %.2f | %.2f | %+.3f%% | %.0f |\n", c.name.c_str(), p.predicted_peak_bytes / 1048576.0,
                measured / 1048576.0, 100 * err, plan_ms);
  }
  std::printf("\nworst error: %.3f%% (target: within 10%%)\n", 100 * worst);
  return worst <= 0.10 ? 0 : 1;
}
