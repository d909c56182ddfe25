// Experiment (c), gradient accumulation: 8 micro-batches of 16 through optim::GradAccumulator against
// one batch of 128, and the seed's loop (zero_grad before every micro-batch's backward) for contrast.
// First the gradient of one step from identical weights (float32 and float64), then the test accuracy
// after the same number of optimiser steps. Data: Fashion-MNIST when installed
// (tools/install-deps.sh), otherwise a synthetic 10-class problem. Prints Markdown tables, writes a
// run log (JSON Lines, `graft report` renders it) to argv[1] (default experiment_accumulation.jsonl)
// and returns 1 when the claims below do not hold.
#include <graft/graft.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace nn = graft::nn;
namespace F = graft::nn::functional;
namespace optim = graft::optim;

namespace {

constexpr int64_t kBatch = 128, kMicro = 16, kK = kBatch / kMicro, kSteps = 100;
constexpr double kLr = 0.05;

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// SGD that calls a hook just before it steps: the gradients it sees are the ones it applies
// (GradAccumulator has rescaled them by then).
class HookedSGD : public optim::SGD {
 public:
  HookedSGD(const std::vector<graft::Tensor>& params, const optim::SGDOptions& o) : optim::SGD(params, o) {}
  graft::Tensor step(optim::LossClosure closure = nullptr) override {
    if (before_step) before_step();
    return optim::SGD::step(std::move(closure));
  }
  std::function<void()> before_step;
};

struct Data {
  graft::Tensor train_x, train_y, test_x, test_y;
  std::string name;
};

Data load_data() {
  Data d;
  const int64_t n_train = kBatch * kSteps, n_test = 2000;
  if (graft::data::MNIST::exists(graft::data::kFashionMNISTDebianDir) &&
      graft::data::MNIST::exists(graft::data::kFashionMNISTDebianDir, graft::data::MNIST::Mode::kTest)) {
    graft::data::MNIST train(graft::data::kFashionMNISTDebianDir, graft::data::MNIST::Mode::kTrain);
    graft::data::MNIST test(graft::data::kFashionMNISTDebianDir, graft::data::MNIST::Mode::kTest);
    d.train_x = ((train.images().narrow(0, 0, n_train) - 0.286) / 0.353).reshape({n_train, 784});
    d.train_y = train.targets().narrow(0, 0, n_train);
    d.test_x = ((test.images().narrow(0, 0, n_test) - 0.286) / 0.353).reshape({n_test, 784});
    d.test_y = test.targets().narrow(0, 0, n_test);
    d.name = "Fashion-MNIST (first 12800 training images, first 2000 test images)";
  } else {
    // Ten classes: the label is the argmax of a fixed random linear map of x (plus noise features).
    graft::Generator gen(3);
    const graft::Tensor w = graft::randn({784, 10}, {}, &gen);
    d.train_x = graft::randn({n_train, 784}, {}, &gen);
    d.test_x = graft::randn({n_test, 784}, {}, &gen);
    d.train_y = graft::argmax(graft::matmul(d.train_x, w), 1);
    d.test_y = graft::argmax(graft::matmul(d.test_x, w), 1);
    d.name = "synthetic 10-class data (Fashion-MNIST not installed)";
  }
  return d;
}

nn::Sequential make_model(graft::DType dtype) {
  graft::manual_seed(0);
  nn::Sequential model(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10));
  model->to(dtype);
  return model;
}

std::vector<graft::Tensor> grads_of(const nn::Sequential& model) {
  std::vector<graft::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.grad().clone());
  return out;
}

// max |a - b| and max |b| over all parameters.
std::pair<double, double> compare(const std::vector<graft::Tensor>& a, const std::vector<graft::Tensor>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
    scale = std::max(scale, b[i].abs().max().item<double>());
  }
  return {diff, scale};
}

struct GradRow {
  std::string dtype;
  double acc_diff = 0, wrong_diff = 0, scale = 0;
};

// One step's gradient from identical weights: one batch of 128, GradAccumulator over 8 x 16, and the
// seed's loop (zero_grad before each micro-batch).
GradRow gradient_comparison(const Data& d, graft::DType dtype, const char* name) {
  const graft::Tensor x = d.train_x.narrow(0, 0, kBatch).to(dtype), y = d.train_y.narrow(0, 0, kBatch);

  nn::Sequential big = make_model(dtype);
  F::cross_entropy(big->forward(x), y).backward();
  const std::vector<graft::Tensor> g_big = grads_of(big);

  nn::Sequential acc_model = make_model(dtype);
  HookedSGD opt(acc_model->parameters(), optim::SGDOptions(kLr));
  std::vector<graft::Tensor> g_acc;
  opt.before_step = [&g_acc, &acc_model] { g_acc = grads_of(acc_model); };
  optim::GradAccumulator acc(opt, acc_model.ptr(), {.steps = kK});
  for (int64_t i = 0; i < kK; ++i) {
    acc.backward(F::cross_entropy(acc_model->forward(x.narrow(0, i * kMicro, kMicro)), y.narrow(0, i * kMicro, kMicro)),
                 kMicro);
  }

  nn::Sequential wrong = make_model(dtype);
  for (int64_t i = 0; i < kK; ++i) {
    wrong->zero_grad();
    F::cross_entropy(wrong->forward(x.narrow(0, i * kMicro, kMicro)), y.narrow(0, i * kMicro, kMicro)).backward();
  }
  const std::vector<graft::Tensor> g_wrong = grads_of(wrong);

  GradRow row;
  row.dtype = name;
  const auto [acc_diff, scale] = compare(g_acc, g_big);
  row.acc_diff = acc_diff;
  row.scale = scale;
  row.wrong_diff = compare(g_wrong, g_big).first;
  return row;
}

double accuracy(nn::Sequential model, const graft::Tensor& x, const graft::Tensor& y) {
  graft::NoGradGuard no_grad;
  const graft::Tensor pred = graft::argmax(model->forward(x), 1);
  return pred.eq(y).to(graft::kFloat64).mean().item<double>();
}

enum class Mode { kBigBatch, kAccumulator, kSeedLoop };

struct TrainResult {
  double final_loss = 0, test_accuracy = 0;
};

// kSteps optimiser steps over the same 12800 samples, in order.
TrainResult train(const Data& d, Mode mode, const std::string& tag, int64_t offset,
                  std::vector<std::string>& header_params, std::vector<std::string>& body) {
  nn::Sequential model = make_model(graft::kFloat32);
  HookedSGD opt(model->parameters(), optim::SGDOptions(kLr).momentum(0.9));
  graft::diagnostics::GradMonitor monitor(*model.ptr(), {.every = 10});
  int64_t step = 0;
  opt.before_step = [&monitor, &step] { monitor.after_backward(step); };
  for (const auto& item : model->named_parameters()) {
    if (item.value().dim() != 2) continue;
    header_params.push_back("{\"name\":\"" + tag + "/" + item.key() + "\",\"shape\":[" +
                            std::to_string(item.value().size(0)) + "," + std::to_string(item.value().size(1)) + "]}");
  }
  optim::GradAccumulator acc(opt, model.ptr(), {.steps = kK});
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
        graft::Tensor loss =
            F::cross_entropy(model->forward(x.narrow(0, i * kMicro, kMicro)), y.narrow(0, i * kMicro, kMicro));
        if (mode == Mode::kAccumulator) {
          acc.backward(loss, kMicro);
        } else {
          opt.zero_grad();
          loss.backward();
          if (i == kK - 1) opt.step();
        }
        loss_sum += loss.item<double>();
      }
    }
    monitor.after_step();
    r.final_loss = loss_sum / kK;
    body.push_back("{\"type\":\"step\",\"step\":" + std::to_string(offset + step) + ",\"epoch\":0,\"loss\":" +
                   num(r.final_loss) + ",\"lr\":" + num(kLr) + ",\"variant\":\"" + tag + "\"}");
  }
  for (const auto& rec : monitor.records()) {
    std::string line = "{\"type\":\"grad\",\"step\":" + std::to_string(offset + rec.step) + ",\"params\":{";
    bool first = true;
    for (const auto& p : rec.params) {
      if (p.name.size() < 6 || p.name.compare(p.name.size() - 6, 6, "weight") != 0) continue;
      line += std::string(first ? "" : ",") + "\"" + tag + "/" + p.name + "\":{\"grad_norm\":" + num(p.grad_norm) +
              ",\"grad_max\":" + num(p.grad_max) + ",\"weight_norm\":" + num(p.weight_norm) +
              ",\"update_ratio\":" + num(p.update_ratio) + ",\"zero_fraction\":" + num(p.zero_fraction) +
              ",\"nan\":" + std::to_string(p.nan_count) + ",\"inf\":" + std::to_string(p.inf_count) + "}";
      first = false;
    }
    body.push_back(line + "}}");
  }
  r.test_accuracy = accuracy(model, d.test_x, d.test_y);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string log_path = argc > 1 ? argv[1] : "experiment_accumulation.jsonl";
  const Data d = load_data();
  std::printf("data: %s\nmodel: Linear 784-128-10 with ReLU, cross-entropy, SGD lr %g\n\n", d.name.c_str(), kLr);

  const std::vector<GradRow> grad_rows = {gradient_comparison(d, graft::kFloat32, "float32"),
                                          gradient_comparison(d, graft::kFloat64, "float64")};
  std::printf("One step's gradient from identical weights, against one batch of 128 (max |g| %.3g):\n\n",
              grad_rows[0].scale);
  std::printf("| dtype | GradAccumulator 8 x 16: max abs diff | relative | seed's loop (zero_grad each "
              "micro-batch): max abs diff | relative |\n|---|---|---|---|---|\n");
  for (const GradRow& g : grad_rows) {
    std::printf("| %s | %.3g | %.3g | %.3g | %.3g |\n", g.dtype.c_str(), g.acc_diff, g.acc_diff / g.scale,
                g.wrong_diff, g.wrong_diff / g.scale);
  }

  std::vector<std::string> header_params, body;
  const TrainResult big = train(d, Mode::kBigBatch, "batch128", 0, header_params, body);
  const TrainResult accum = train(d, Mode::kAccumulator, "accum8x16", kSteps, header_params, body);
  const TrainResult seed = train(d, Mode::kSeedLoop, "seed_loop", 2 * kSteps, header_params, body);
  std::printf("\n%lld optimiser steps (SGD lr %g, momentum 0.9), 12800 training samples seen by each:\n\n",
              static_cast<long long>(kSteps), kLr);
  std::printf("| training | final training loss | test accuracy |\n|---|---|---|\n");
  std::printf("| one batch of 128 | %.4f | %.4f |\n", big.final_loss, big.test_accuracy);
  std::printf("| GradAccumulator, 8 micro-batches of 16 | %.4f | %.4f |\n", accum.final_loss, accum.test_accuracy);
  std::printf("| seed's loop (only the last micro-batch of 16 reaches the step) | %.4f | %.4f |\n", seed.final_loss,
              seed.test_accuracy);

  std::ofstream out(log_path, std::ios::trunc);
  out << "{\"type\":\"run\",\"experiment\":\"accumulation\",\"model\":\"mlp 784-128-10\",\"optimizer\":\"sgd\",\"lr\":"
      << kLr << ",\"batch\":" << kBatch << ",\"micro_batch\":" << kMicro << ",\"steps\":" << kSteps << "}\n";
  out << "{\"type\":\"monitor\",\"version\":1,\"params\":[";
  for (size_t i = 0; i < header_params.size(); ++i) out << (i ? "," : "") << header_params[i];
  out << "]}\n";
  for (const auto& line : body) out << line << "\n";
  out << "{\"type\":\"result\",\"grad_max_abs_diff_float32\":" << num(grad_rows[0].acc_diff)
      << ",\"grad_max_abs_diff_float64\":" << num(grad_rows[1].acc_diff)
      << ",\"batch128_test_accuracy\":" << num(big.test_accuracy)
      << ",\"accum8x16_test_accuracy\":" << num(accum.test_accuracy)
      << ",\"seed_loop_test_accuracy\":" << num(seed.test_accuracy) << "}\n";
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", log_path.c_str());
    return 1;
  }
  std::printf("\nrun log: %s (render with: graft report %s -o accumulation.html)\n", log_path.c_str(),
              log_path.c_str());

  bool ok = true;
  auto check = [&ok](bool cond, const char* what) {
    std::printf("check: %-70s %s\n", what, cond ? "ok" : "FAILED");
    ok = ok && cond;
  };
  check(grad_rows[0].acc_diff < 1e-5 * grad_rows[0].scale, "float32: accumulated gradient within 1e-5 relative");
  check(grad_rows[1].acc_diff < 1e-12 * grad_rows[1].scale, "float64: accumulated gradient within 1e-12 relative");
  check(grad_rows[0].wrong_diff > 1e-2 * grad_rows[0].scale, "the seed's loop gives a different gradient");
  check(std::abs(big.test_accuracy - accum.test_accuracy) < 0.02, "test accuracy: accumulation within 0.02 of batch 128");
  return ok ? 0 : 1;
}
