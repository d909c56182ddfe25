// Experiment (c), gradient accumulation: 8 micro-batches of 16 through optim::GradAccumulator against
// one batch of 128, and the seed's loop (zero_grad before every micro-batch's backward) for contrast.
// First the gradient of one step from identical weights (float32 and float64), then the test accuracy
// after the same number of optimiser steps. Data: Fashion-MNIST when installed, else synthetic (see
// experiment_harness.h). Prints Markdown tables, writes a run log (JSON Lines, `graft report` renders
// it) to argv[1] (default experiment_accumulation.jsonl); returns 1 when the claims below do not hold.
#include <graft/graft.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "experiment_harness.h"

namespace nn = graft::nn;
namespace F = graft::nn::functional;
namespace ex = experiment;

namespace {

constexpr int64_t kBatch = 128, kMicro = 16, kK = kBatch / kMicro, kSteps = 100;
constexpr double kLr = 0.05;

graft::Tensor micro(const graft::Tensor& t, int64_t i) { return t.narrow(0, i * kMicro, kMicro); }  // i-th of kK

nn::Sequential make_model(graft::DType dtype) {
  graft::manual_seed(0);
  nn::Sequential model(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10));
  model->to(dtype);
  return model;
}

struct GradRow {
  std::string dtype;
  double acc_diff = 0, wrong_diff = 0, scale = 0;
};

// One step's gradient from identical weights: one batch of 128, GradAccumulator over 8 x 16, and the
// seed's loop (zero_grad before each micro-batch).
GradRow gradient_comparison(const ex::Data& d, graft::DType dtype, const char* name) {
  const graft::Tensor x = d.train_x.narrow(0, 0, kBatch).to(dtype), y = d.train_y.narrow(0, 0, kBatch);
  nn::Sequential big = make_model(dtype);
  F::cross_entropy(big->forward(x), y).backward();
  const std::vector<graft::Tensor> g_big = ex::grads_of(big);
  nn::Sequential acc_model = make_model(dtype);
  ex::HookedSGD opt(acc_model->parameters(), graft::optim::SGDOptions(kLr));
  std::vector<graft::Tensor> g_acc;
  opt.before_step = [&g_acc, &acc_model] { g_acc = ex::grads_of(acc_model); };
  graft::optim::GradAccumulator acc(opt, acc_model.ptr(), {.steps = kK});
  for (int64_t i = 0; i < kK; ++i) acc.backward(F::cross_entropy(acc_model->forward(micro(x, i)), micro(y, i)), kMicro);
  nn::Sequential wrong = make_model(dtype);
  for (int64_t i = 0; i < kK; ++i) {
    wrong->zero_grad();
    F::cross_entropy(wrong->forward(micro(x, i)), micro(y, i)).backward();
  }
  const auto [acc_diff, scale] = ex::compare(g_acc, g_big);
  return {name, acc_diff, ex::compare(ex::grads_of(wrong), g_big).first, scale};
}

enum class Mode { kBigBatch, kAccumulator, kSeedLoop };
struct TrainResult {
  double final_loss = 0, test_accuracy = 0;
};

// kSteps optimiser steps over the same 12800 samples, in order.
TrainResult train(const ex::Data& d, Mode mode, const std::string& tag, int64_t offset, ex::RunLog& log) {
  nn::Sequential model = make_model(graft::kFloat32);
  ex::HookedSGD opt(model->parameters(), graft::optim::SGDOptions(kLr).momentum(0.9));
  graft::diagnostics::GradMonitor monitor(*model.ptr(), {.every = 10});
  int64_t step = 0;  // the monitor reads the gradients that the step applies
  opt.before_step = [&monitor, &step] { monitor.after_backward(step); };
  log.add_weights(tag, *model.ptr());
  graft::optim::GradAccumulator acc(opt, model.ptr(), {.steps = kK});
  TrainResult r;
  for (step = 0; step < kSteps; ++step) {
    const graft::Tensor x = d.train_x.narrow(0, step * kBatch, kBatch), y = d.train_y.narrow(0, step * kBatch, kBatch);
    double loss_sum = 0;
    if (mode == Mode::kBigBatch) {
      opt.zero_grad();
      graft::Tensor loss = F::cross_entropy(model->forward(x), y);
      loss.backward();
      opt.step();
      loss_sum = loss.item<double>() * kK;
    } else {
      for (int64_t i = 0; i < kK; ++i) {
        graft::Tensor loss = F::cross_entropy(model->forward(micro(x, i)), micro(y, i));
        if (mode == Mode::kSeedLoop) opt.zero_grad();  // the seed's loop: each micro-batch alone
        if (mode == Mode::kAccumulator) acc.backward(loss, kMicro);
        else loss.backward();
        if (mode == Mode::kSeedLoop && i == kK - 1) opt.step();
        loss_sum += loss.item<double>();
      }
    }
    monitor.after_step();
    r.final_loss = loss_sum / kK;
    log.add_step(offset + step, r.final_loss, kLr, tag);
  }
  log.add_grad_records(monitor, offset, tag);
  r.test_accuracy = ex::accuracy(model, d.test_x, d.test_y);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string log_path = argc > 1 ? argv[1] : "experiment_accumulation.jsonl";
  const ex::Data d = ex::fashion_mnist_or_synthetic(kBatch * kSteps, 2000);
  std::printf("data: %s\nmodel: Linear 784-128-10 with ReLU, cross-entropy, SGD lr %g\n\n", d.name.c_str(), kLr);
  const std::vector<GradRow> grad_rows = {gradient_comparison(d, graft::kFloat32, "float32"),
                                          gradient_comparison(d, graft::kFloat64, "float64")};
  std::printf("One step's gradient from identical weights, against one batch of 128 (max |g| %.3g):\n\n",
              grad_rows[0].scale);
  std::printf("| dtype | GradAccumulator 8 x 16: max abs diff | relative | seed's loop (zero_grad each "
              "micro-batch): max abs diff | relative |\n|---|---|---|---|---|\n");
  for (const GradRow& g : grad_rows)
    std::printf("| %s | %.3g | %.3g | %.3g | %.3g |\n", g.dtype.c_str(), g.acc_diff, g.acc_diff / g.scale,
                g.wrong_diff, g.wrong_diff / g.scale);
  ex::RunLog log;
  const TrainResult big = train(d, Mode::kBigBatch, "batch128", 0, log);
  const TrainResult accum = train(d, Mode::kAccumulator, "accum8x16", kSteps, log);
  const TrainResult seed = train(d, Mode::kSeedLoop, "seed_loop", 2 * kSteps, log);
  std::printf("\n%lld optimiser steps (SGD lr %g, momentum 0.9), 12800 training samples seen by each:\n\n",
              static_cast<long long>(kSteps), kLr);
  std::printf("| training | final training loss | test accuracy |\n|---|---|---|\n");
  std::printf("| one batch of 128 | %.4f | %.4f |\n", big.final_loss, big.test_accuracy);
  std::printf("| GradAccumulator, 8 micro-batches of 16 | %.4f | %.4f |\n", accum.final_loss, accum.test_accuracy);
  std::printf("| seed's loop (only the last micro-batch of 16 reaches the step) | %.4f | %.4f |\n", seed.final_loss,
              seed.test_accuracy);
  std::ostringstream run, result;
  run << "{\"type\":\"run\",\"experiment\":\"accumulation\",\"model\":\"mlp 784-128-10\",\"optimizer\":\"sgd\",\"lr\":"
      << kLr << ",\"batch\":" << kBatch << ",\"micro_batch\":" << kMicro << ",\"steps\":" << kSteps << "}";
  result << "{\"type\":\"result\",\"grad_max_abs_diff_float32\":" << ex::num(grad_rows[0].acc_diff)
         << ",\"grad_max_abs_diff_float64\":" << ex::num(grad_rows[1].acc_diff)
         << ",\"batch128_test_accuracy\":" << ex::num(big.test_accuracy)
         << ",\"accum8x16_test_accuracy\":" << ex::num(accum.test_accuracy)
         << ",\"seed_loop_test_accuracy\":" << ex::num(seed.test_accuracy) << "}";
  if (!log.write(log_path, run.str(), "accumulation", result.str())) return 1;

  ex::Checks check(70);
  check(grad_rows[0].acc_diff < 1e-5 * grad_rows[0].scale, "float32: accumulated gradient within 1e-5 relative");
  check(grad_rows[1].acc_diff < 1e-12 * grad_rows[1].scale, "float64: accumulated gradient within 1e-12 relative");
  check(grad_rows[0].wrong_diff > 1e-2 * grad_rows[0].scale, "the seed's loop gives a different gradient");
  check(std::abs(big.test_accuracy - accum.test_accuracy) < 0.02,
        "test accuracy: accumulation within 0.02 of batch 128");
  return check.exit_code();
}
