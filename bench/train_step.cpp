// Training step: one SGD step of an MLP and of a small CNN, time and peak memory (BENCHMARKS.md,
// "Training step"; bench/run_suite.sh runs it). Written in LibTorch's spelling and built twice
// (bench/CMakeLists.txt): torch_train_step against LibTorch, and, ported by
// tools/port-from-libtorch.sh, graft_train_step against graft. Every measurement is a process of
// its own, so that no thread pool, cache or allocator state leaks from one measurement into the
// next and peak RSS belongs to one (library, model, threads) configuration; bench/run_suite.sh
// starts them, interleaving the libraries, and bench/suite_report.py reads their RESULT lines.
//
//   {torch,graft}_train_step --mode=check
//       both models at 1 thread: prints the losses of steps 1 and 3 (suite_report.py compares the
//       two libraries': step 1 checks the forward pass, step 3 two rounds of backward + SGD too)
//   {torch,graft}_train_step --mode=time --model=mlp|cnn [--threads=1] [--warmup=3] [--steps=20]
//       warm-up steps, then `steps` timed steps; prints the median ms/step
//   {torch,graft}_train_step --mode=mem|base --model=... [--threads=1] [--mem_steps=20]
//       mem: runs mem_steps steps and prints VmHWM; base: the same model and data, no step, VmRSS
//
// The thread count is set with torch::set_num_threads before the model is built; OpenBLAS's own
// pool (LibTorch's matrix products) follows OPENBLAS_NUM_THREADS, which run_suite.sh sets to the
// same count for both libraries.
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "train_step_common.h"

namespace {

using namespace trainstep;

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
  if (params.size() != p.params.size()) throw std::runtime_error("parameter count differs from the problem's");
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& t = params[i];
    const Param& src = p.params[i];
    bool same = t.dim() == static_cast<int64_t>(src.shape.size()) && t.is_contiguous();
    for (size_t d = 0; same && d < src.shape.size(); ++d) same = t.size(static_cast<int64_t>(d)) == src.shape[d];
    if (!same) throw std::runtime_error("parameter " + std::to_string(i) + " has an unexpected shape");
    std::memcpy(t.data_ptr<float>(), src.values.data(), src.values.size() * sizeof(float));
  }
  return params;
}

// Model, data and optimiser. step(): gradients set to none, forward, cross_entropy (mean),
// backward, SGD step (lr kLr, momentum kMomentum); returns the loss.
class Trainer {
 public:
  explicit Trainer(const Problem& p)
      : net_(build(p.model)),
        // from_blob borrows the vectors; clone() gives each tensor storage of its own.
        x_(torch::from_blob(const_cast<float*>(p.input.data()), p.input_shape, torch::kFloat32).clone()),
        y_(torch::from_blob(const_cast<int64_t*>(p.labels.data()), {static_cast<int64_t>(p.labels.size())},
                            torch::kInt64)
               .clone()),
        params_(load_params(net_, p)),
        opt_(params_, torch::optim::SGDOptions(kLr).momentum(kMomentum)) {}

  float step() {
    // LibTorch 1.13's Optimizer::zero_grad() zeroes the gradients in place (graft's, like PyTorch
    // 2's, sets them to none); setting them to none by hand gives both sides the same, lower peak.
    // (The handles in params_ share their tensors with the optimiser's and the module's.)
    for (torch::Tensor& p : params_) p.mutable_grad() = torch::Tensor();
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

// graft's own count of tensor bytes (its memory accounting); LibTorch has no CPU equivalent, 0.
void reset_tensor_peak() {
#ifdef GRAFT_PORTED
  torch::memory::reset_peak_stats();  // graft::memory after the port
#endif
}
long long tensor_peak_bytes() {
#ifdef GRAFT_PORTED
  return static_cast<long long>(torch::memory::stats().peak_allocated_bytes);
#else
  return 0;
#endif
}

Model parse_model(const std::string& s) {
  if (s == "mlp") return Model::Mlp;
  if (s == "cnn") return Model::Cnn;
  throw std::invalid_argument("--model must be mlp or cnn, not '" + s + "'");
}

int check() {
  for (Model m : {Model::Mlp, Model::Cnn}) {
    Trainer t(make_problem(m));
    double loss[4] = {0, 0, 0, 0};
    for (int s = 1; s <= 3; ++s) loss[s] = t.step();
    std::printf("RESULT mode=check library=%s model=%s step1=%.9g step3=%.9g\n", bench::kLibrary, model_name(m), loss[1],
                loss[3]);
  }
  return 0;
}

int measure(const std::string& mode, const bench::Args& a) {
  const Model m = parse_model(bench::arg_str(a, "model", "mlp"));
  const int threads = torch::get_num_threads();
  Trainer trainer(make_problem(m));
  float loss = 0;
  if (mode == "time") {
    const int warmup = bench::arg_int(a, "warmup", 3), steps = bench::arg_int(a, "steps", 20);
    for (int i = 0; i < warmup; ++i) loss = trainer.step();
    std::vector<double> ms;
    for (int i = 0; i < steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      loss = trainer.step();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("RESULT mode=time library=%s model=%s threads=%d ms=%.6f loss=%.6f core=%s\n", bench::kLibrary,
                model_name(m), threads, bench::median(ms), loss, bench::openblas_corename().c_str());
  } else {
    const int steps = mode == "mem" ? bench::arg_int(a, "mem_steps", 20) : 0;
    reset_tensor_peak();
    for (int i = 0; i < steps; ++i) loss = trainer.step();
    std::printf("RESULT mode=%s library=%s model=%s threads=%d hwm_kb=%ld rss_kb=%ld tensor_peak=%lld loss=%.6f\n",
                mode.c_str(), bench::kLibrary, model_name(m), threads, bench::proc_status_kb("VmHWM"),
                bench::proc_status_kb("VmRSS"), tensor_peak_bytes(), loss);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(argc, argv);
  const std::string mode = bench::arg_str(a, "mode", "");
  try {
    torch::set_num_threads(mode == "check" ? 1 : bench::arg_int(a, "threads", 1));
    if (a.count("verbose")) std::printf("%s\n", bench::describe_process(torch::get_num_threads()).c_str());
    if (mode == "check") return check();
    if (mode == "time" || mode == "mem" || mode == "base") return measure(mode, a);
    std::fprintf(stderr, "usage: %s --mode=check|time|mem|base [--model=mlp|cnn] [--threads=N] ...\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
