// What the three experiments (experiment_exploding, _vanishing, _accumulation) share: a run log in
// graft report's format (JSON Lines, Note [Run log] in apps/graft/report.h) filled from their
// GradMonitors, and the checks of their claims. Each experiment runs several variants one after
// another; a variant's records carry its tag ("<tag>/<parameter>") and its steps are offset so that
// the variants follow each other on one step axis.
#pragma once

#include <graft/graft.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace experiment {

// A number as JSON: %.6g, and null for NaN and infinities (which JSON lacks).
inline std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The synthetic regression task of the exploding and vanishing experiments: y = tanh(x . v) with
// x ~ N(0, 1) of shape [batch, in] and v ~ N(0, 1/in), drawn from a generator seeded with `seed`.
inline std::pair<graft::Tensor, graft::Tensor> regression_task(uint64_t seed, int64_t batch, int64_t in) {
  graft::Generator gen(seed);
  const graft::Tensor x = graft::randn({batch, in}, {}, &gen);
  const graft::Tensor v = graft::randn({in, 1}, {}, &gen) / std::sqrt(static_cast<double>(in));
  return {x, graft::tanh(graft::matmul(x, v))};
}

class RunLog {
 public:
  // The 2-D parameters (the weights) of one variant's model go into the monitor header; the grad
  // records of that variant hold them alone.
  void add_weights(const std::string& tag, graft::nn::Module& model) {
    for (const auto& item : model.named_parameters()) {
      if (item.value().dim() != 2) continue;
      weights_[tag].insert(item.key());
      header_params_.push_back("{\"name\":\"" + tag + "/" + item.key() + "\",\"shape\":[" +
                               std::to_string(item.value().size(0)) + "," + std::to_string(item.value().size(1)) +
                               "]}");
    }
  }

  void add_step(int64_t step, double loss, double lr, const std::string& tag) {
    body_.push_back("{\"type\":\"step\",\"step\":" + std::to_string(step) + ",\"epoch\":0,\"loss\":" + num(loss) +
                    ",\"lr\":" + num(lr) + ",\"variant\":\"" + tag + "\"}");
  }

  // The monitor's per-step records of the variant's weights, steps shifted by `offset`.
  void add_grad_records(const graft::diagnostics::GradMonitor& monitor, int64_t offset, const std::string& tag) {
    const std::set<std::string>& keep = weights_[tag];
    for (const auto& rec : monitor.records()) {
      std::string line = "{\"type\":\"grad\",\"step\":" + std::to_string(offset + rec.step) + ",\"params\":{";
      bool first = true;
      for (const auto& p : rec.params) {
        if (!keep.count(p.name)) continue;
        line += std::string(first ? "" : ",") + "\"" + tag + "/" + p.name + "\":{\"grad_norm\":" + num(p.grad_norm) +
                ",\"grad_max\":" + num(p.grad_max) + ",\"weight_norm\":" + num(p.weight_norm) +
                ",\"update_ratio\":" + num(p.update_ratio) + ",\"zero_fraction\":" + num(p.zero_fraction) +
                ",\"nan\":" + std::to_string(p.nan_count) + ",\"inf\":" + std::to_string(p.inf_count) + "}";
        first = false;
      }
      body_.push_back(line + "}}");
    }
  }

  void add_flags(const graft::diagnostics::GradMonitor& monitor, int64_t offset, const std::string& tag) {
    for (const auto& f : monitor.flags()) {
      body_.push_back("{\"type\":\"flag\",\"step\":" + std::to_string(offset + f.step) + ",\"kind\":\"" + f.kind +
                      "\",\"param\":\"" + tag + "/" + f.param + "\",\"value\":" + num(f.value) + ",\"message\":\"" +
                      tag + ": " + f.kind + "\"}");
    }
  }

  // Writes `run_record`, the monitor header, the records and `trailer` (each a line, or empty) to
  // `path`, then tells how to render it as <name>.html. False (with a message) when it cannot.
  bool write(const std::string& path, const std::string& run_record, const std::string& name,
             const std::string& trailer = "") const {
    std::ofstream out(path, std::ios::trunc);
    out << run_record << "\n";
    out << "{\"type\":\"monitor\",\"version\":1,\"params\":[";
    for (size_t i = 0; i < header_params_.size(); ++i) out << (i ? "," : "") << header_params_[i];
    out << "]}\n";
    for (const auto& line : body_) out << line << "\n";
    if (!trailer.empty()) out << trailer << "\n";
    out.close();
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return false;
    }
    std::printf("\nrun log: %s (render with: graft report %s -o %s.html)\n", path.c_str(), path.c_str(), name.c_str());
    return true;
  }

 private:
  std::vector<std::string> header_params_, body_;
  std::map<std::string, std::set<std::string>> weights_;  // tag -> names of its weights
};

// The claims: one line per check ("check: <what> ok|FAILED", `what` padded to `width`).
class Checks {
 public:
  explicit Checks(int width) : width_(width) {}
  void operator()(bool cond, const char* what) {
    std::printf("check: %-*s %s\n", width_, what, cond ? "ok" : "FAILED");
    ok_ = ok_ && cond;
  }
  int exit_code() const { return ok_ ? 0 : 1; }

 private:
  int width_;
  bool ok_ = true;
};

// ---- for classification experiments ----

// SGD that calls a hook just before it steps: the gradients it sees are the ones it applies
// (GradAccumulator has rescaled them by then).
class HookedSGD : public graft::optim::SGD {
 public:
  HookedSGD(const std::vector<graft::Tensor>& params, const graft::optim::SGDOptions& o)
      : graft::optim::SGD(params, o) {}
  graft::Tensor step(graft::optim::LossClosure closure = nullptr) override {
    if (before_step) before_step();
    return graft::optim::SGD::step(std::move(closure));
  }
  std::function<void()> before_step;
};

struct Data {
  graft::Tensor train_x, train_y, test_x, test_y;  // x: [n, 784]
  std::string name;
};

// The first n_train training and n_test test images of Fashion-MNIST when installed
// (tools/install-deps.sh), normalised and flattened; otherwise a synthetic 10-class problem.
inline Data fashion_mnist_or_synthetic(int64_t n_train, int64_t n_test) {
  namespace data = graft::data;
  Data d;
  if (data::MNIST::exists(data::kFashionMNISTDebianDir) &&
      data::MNIST::exists(data::kFashionMNISTDebianDir, data::MNIST::Mode::kTest)) {
    data::MNIST train(data::kFashionMNISTDebianDir, data::MNIST::Mode::kTrain);
    data::MNIST test(data::kFashionMNISTDebianDir, data::MNIST::Mode::kTest);
    d.train_x = ((train.images().narrow(0, 0, n_train) - 0.286) / 0.353).reshape({n_train, 784});
    d.train_y = train.targets().narrow(0, 0, n_train);
    d.test_x = ((test.images().narrow(0, 0, n_test) - 0.286) / 0.353).reshape({n_test, 784});
    d.test_y = test.targets().narrow(0, 0, n_test);
    d.name = "Fashion-MNIST (first " + std::to_string(n_train) + " training images, first " + std::to_string(n_test) +
             " test images)";
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

// Copies of the model's gradients.
inline std::vector<graft::Tensor> grads_of(const graft::nn::Sequential& model) {
  std::vector<graft::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.grad().clone());
  return out;
}

// max |a - b| and max |b| over all parameters.
inline std::pair<double, double> compare(const std::vector<graft::Tensor>& a, const std::vector<graft::Tensor>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
    scale = std::max(scale, b[i].abs().max().item<double>());
  }
  return {diff, scale};
}

inline double accuracy(graft::nn::Sequential model, const graft::Tensor& x, const graft::Tensor& y) {
  graft::NoGradGuard no_grad;
  const graft::Tensor pred = graft::argmax(model->forward(x), 1);
  return pred.eq(y).to(graft::kFloat64).mean().item<double>();
}

}  // namespace experiment
