// Experiment (a), vanishing gradients: a 20-layer MLP with sigmoid activations and PyTorch's default
// initialisation, then the same depth with ReLU + He initialisation, with batch norm, and with
// residual connections. At initialisation it measures the gradient norm of the first and of the last
// layer's weight, then trains each model for a few SGD steps on the same synthetic regression task.
// Prints a Markdown table, writes a run log (JSON Lines, `graft report` renders it) to argv[1]
// (default experiment_vanishing.jsonl) and returns 1 when the claims below do not hold.
#include <graft/graft.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "experiment_harness.h"

namespace nn = graft::nn;
namespace F = graft::nn::functional;

namespace {

constexpr int64_t kLayers = 20;  // Linear layers, input and output included
constexpr int64_t kIn = 32, kWidth = 64, kBatch = 256, kSteps = 40;
constexpr double kLr = 0.01;

// x + f(x) with f(x) = fc(sigmoid(x)), fc's weight drawn small: the residual block of variant 4.
struct ResidualImpl : nn::Module {
  explicit ResidualImpl(int64_t width) {
    fc = register_module("fc", nn::Linear(width, width));
    // A small branch at the start, so that 18 blocks do not blow the signal up.
    nn::init::normal_(fc->weight, 0.0, 0.1 / std::sqrt(static_cast<double>(width)));
  }
  graft::Tensor forward(const graft::Tensor& x) { return x + fc(graft::sigmoid(x)); }
  nn::Linear fc{nullptr};
};
GRAFT_MODULE(Residual);

enum class Variant { kSigmoid, kReluHe, kSigmoidBatchNorm, kSigmoidResidual };

nn::Sequential make_model(Variant v) {
  nn::Sequential model;
  if (v == Variant::kSigmoidResidual) {
    model->push_back(nn::Linear(kIn, kWidth));
    model->push_back(nn::Sigmoid());
    for (int64_t i = 0; i < kLayers - 2; ++i) model->push_back(Residual(kWidth));
  } else {
    for (int64_t i = 0; i < kLayers - 1; ++i) {
      nn::Linear fc(i == 0 ? kIn : kWidth, kWidth);
      if (v == Variant::kReluHe) {
        nn::init::kaiming_normal_(fc->weight, 0.0, graft::kFanIn, graft::kReLU);
        nn::init::zeros_(fc->bias);
      }
      model->push_back(fc);
      if (v == Variant::kSigmoidBatchNorm) model->push_back(nn::BatchNorm1d(kWidth));
      if (v == Variant::kReluHe) model->push_back(nn::ReLU());
      else model->push_back(nn::Sigmoid());
    }
  }
  model->push_back(nn::Linear(kWidth, 1));
  return model;
}

struct Row {
  std::string name;
  double first = 0, last = 0, loss0 = 0, loss_end = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string log_path = argc > 1 ? argv[1] : "experiment_vanishing.jsonl";

  // Synthetic regression task: y = tanh(x . v), x ~ N(0, 1).
  const auto [x, y] = experiment::regression_task(7, kBatch, kIn);

  const std::vector<std::pair<Variant, std::string>> variants = {
      {Variant::kSigmoid, "sigmoid, default init"},
      {Variant::kReluHe, "ReLU, He (kaiming_normal_) init"},
      {Variant::kSigmoidBatchNorm, "sigmoid + BatchNorm1d"},
      {Variant::kSigmoidResidual, "sigmoid + residual x + f(x)"}};
  const std::vector<std::string> tags = {"sigmoid", "relu_he", "sigmoid_bn", "sigmoid_residual"};

  std::vector<Row> rows;
  experiment::RunLog log;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    graft::manual_seed(0);
    nn::Sequential model = make_model(variants[vi].first);
    graft::optim::SGD opt(model->parameters(), graft::optim::SGDOptions(kLr));
    graft::diagnostics::GradMonitor monitor(*model.ptr(), {.every = 5, .optimizer = &opt});

    // The weights (2-D parameters) go into the log, named "<variant>/<parameter>".
    std::vector<graft::Tensor> weights;
    for (const auto& p : model->parameters())
      if (p.dim() == 2) weights.push_back(p);
    log.add_weights(tags[vi], *model.ptr());

    Row row;
    row.name = variants[vi].second;
    const int64_t offset = static_cast<int64_t>(vi) * kSteps;
    for (int64_t step = 0; step < kSteps; ++step) {
      opt.zero_grad();
      graft::Tensor loss = F::mse_loss(model->forward(x), y);
      loss.backward();
      if (step == 0) {
        row.first = weights.front().grad().norm().item<double>();
        row.last = weights.back().grad().norm().item<double>();
        row.loss0 = loss.item<double>();
      }
      monitor.after_backward(step);
      opt.step();
      monitor.after_step();
      row.loss_end = loss.item<double>();
      log.add_step(offset + step, row.loss_end, kLr, tags[vi]);
    }
    log.add_grad_records(monitor, offset, tags[vi]);
    log.add_flags(monitor, offset, tags[vi]);
    rows.push_back(row);
  }

  std::printf("20 Linear layers, width %lld, batch %lld; gradient norms at initialisation, loss after %lld "
              "SGD steps (lr %g)\n\n",
              static_cast<long long>(kWidth), static_cast<long long>(kBatch), static_cast<long long>(kSteps), kLr);
  std::printf("| model | first layer grad norm | last layer grad norm | first / last | loss at step 0 | loss after "
              "%lld steps |\n|---|---|---|---|---|---|\n",
              static_cast<long long>(kSteps));
  for (const Row& r : rows) {
    std::printf("| %s | %.3g | %.3g | %.3g | %.4f | %.4f |\n", r.name.c_str(), r.first, r.last, r.first / r.last,
                r.loss0, r.loss_end);
  }

  std::ostringstream run;
  run << "{\"type\":\"run\",\"experiment\":\"vanishing\",\"model\":\"20-layer MLP, 4 variants\",\"optimizer\":\"sgd\","
         "\"steps_per_variant\":"
      << kSteps << "}";
  if (!log.write(log_path, run.str(), "vanishing")) return 1;

  // The claims: sigmoid's gradient vanishes towards the input; each remedy keeps it within reach.
  experiment::Checks check(62);
  auto ratio = [&rows](size_t i) { return rows[i].first / rows[i].last; };
  check(ratio(0) < 1e-6, "sigmoid: first / last < 1e-6");
  check(ratio(1) > 1e-2, "ReLU + He: first / last > 0.01");
  check(ratio(2) > 1e-3, "sigmoid + batch norm: first / last > 1e-3");
  check(ratio(3) > 1e-2, "sigmoid + residual: first / last > 0.01");
  return check.exit_code();
}
