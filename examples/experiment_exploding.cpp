// Experiment (b), exploding gradients: a 20-layer ReLU MLP whose weights are drawn from N(0, 0.5^2)
// (far too large for width 64: each layer multiplies the signal by about 0.5 * sqrt(64 / 2) = 2.8),
// trained with plain SGD, then the same with clip_grad_norm_, and with Xavier and He initialisation.
// Prints a Markdown table, writes a run log (JSON Lines, `graft report` renders it) to argv[1]
// (default experiment_exploding.jsonl) and returns 1 when the claims below do not hold.
#include <graft/graft.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "experiment_harness.h"

namespace nn = graft::nn;
namespace F = graft::nn::functional;

namespace {

constexpr int64_t kLayers = 20;
constexpr int64_t kIn = 32, kWidth = 64, kBatch = 256, kSteps = 40;
constexpr double kLr = 0.01, kMaxNorm = 1.0;

using experiment::num;

enum class Init { kLargeNormal, kXavier, kHe };

nn::Sequential make_model(Init init) {
  nn::Sequential model;
  for (int64_t i = 0; i < kLayers; ++i) {
    const bool last = i == kLayers - 1;
    nn::Linear fc(i == 0 ? kIn : kWidth, last ? 1 : kWidth);
    if (init == Init::kLargeNormal) nn::init::normal_(fc->weight, 0.0, 0.5);
    if (init == Init::kXavier) nn::init::xavier_uniform_(fc->weight);
    if (init == Init::kHe) nn::init::kaiming_normal_(fc->weight, 0.0, graft::kFanIn, graft::kReLU);
    nn::init::zeros_(fc->bias);
    model->push_back(fc);
    if (!last) model->push_back(nn::ReLU());
  }
  return model;
}

struct Row {
  std::string name;
  double norm0 = 0, max_norm_seen = 0, max_after_clip = 0, loss0 = 0, loss_end = 0;
  bool finite = true;
  int64_t exploding_flags = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string log_path = argc > 1 ? argv[1] : "experiment_exploding.jsonl";

  const auto [x, y] = experiment::regression_task(11, kBatch, kIn);

  struct Variant {
    Init init;
    bool clip;
    const char* name;
    const char* tag;
  };
  const std::vector<Variant> variants = {
      {Init::kLargeNormal, false, "normal_(0, 0.5), plain SGD", "normal"},
      {Init::kLargeNormal, true, "normal_(0, 0.5) + clip_grad_norm_(1.0)", "normal_clip"},
      {Init::kXavier, false, "xavier_uniform_", "xavier"},
      {Init::kHe, false, "kaiming_normal_ (He, ReLU gain)", "he"}};

  std::vector<Row> rows;
  experiment::RunLog log;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const Variant& var = variants[vi];
    graft::manual_seed(0);
    nn::Sequential model = make_model(var.init);
    graft::optim::SGD opt(model->parameters(), graft::optim::SGDOptions(kLr));
    graft::diagnostics::GradMonitor monitor(*model.ptr(), {.every = 1, .optimizer = &opt});
    log.add_weights(var.tag, *model.ptr());

    Row row;
    row.name = var.name;
    const int64_t offset = static_cast<int64_t>(vi) * kSteps;
    for (int64_t step = 0; step < kSteps; ++step) {
      opt.zero_grad();
      graft::Tensor loss = F::mse_loss(model->forward(x), y);
      loss.backward();
      monitor.after_backward(step);  // the gradients as backward left them
      double norm = 0;
      if (var.clip) {
        norm = nn::utils::clip_grad_norm_(model->parameters(), kMaxNorm);
        double after = 0;
        for (const auto& p : model->parameters()) after += std::pow(p.grad().norm().item<double>(), 2);
        row.max_after_clip = std::max(row.max_after_clip, std::sqrt(after));
      } else {
        double sq = 0;
        for (const auto& p : model->parameters()) sq += std::pow(p.grad().norm().item<double>(), 2);
        norm = std::sqrt(sq);
      }
      if (step == 0) {
        row.norm0 = norm;
        row.loss0 = loss.item<double>();
      }
      if (std::isfinite(norm)) row.max_norm_seen = std::max(row.max_norm_seen, norm);
      opt.step();
      monitor.after_step();
      row.loss_end = loss.item<double>();
      row.finite = row.finite && std::isfinite(row.loss_end) && std::isfinite(norm);
      log.add_step(offset + step, row.loss_end, kLr, var.tag);
    }
    log.add_grad_records(monitor, offset, var.tag);
    log.add_flags(monitor, offset, var.tag);
    for (const auto& f : monitor.flags())
      if (f.kind == "exploding" || f.kind == "nonfinite") ++row.exploding_flags;
    rows.push_back(row);
  }

  std::printf("20-layer ReLU MLP, width %lld, batch %lld, SGD lr %g for %lld steps; gradient norms over all "
              "parameters\n\n",
              static_cast<long long>(kWidth), static_cast<long long>(kBatch), kLr, static_cast<long long>(kSteps));
  std::printf("| model | grad norm at step 0 | largest grad norm | largest norm after clipping | loss at step 0 | "
              "loss after %lld steps | exploding/nonfinite flags |\n|---|---|---|---|---|---|---|\n",
              static_cast<long long>(kSteps));
  for (const Row& r : rows) {
    const std::string clipped = r.max_after_clip > 0 ? num(r.max_after_clip) : std::string("-");
    std::printf("| %s | %.3g | %.3g | %s | %.4g | %.4g | %lld |\n", r.name.c_str(), r.norm0, r.max_norm_seen,
                clipped.c_str(), r.loss0, r.loss_end, static_cast<long long>(r.exploding_flags));
  }

  std::ostringstream run;
  run << "{\"type\":\"run\",\"experiment\":\"exploding\",\"model\":\"20-layer ReLU MLP, 4 variants\","
         "\"optimizer\":\"sgd\",\"lr\":"
      << kLr << ",\"max_norm\":" << kMaxNorm << ",\"steps_per_variant\":" << kSteps << "}";
  if (!log.write(log_path, run.str(), "exploding")) return 1;

  experiment::Checks check(66);
  check(rows[0].norm0 > 1e6, "normal_(0, 0.5): gradient norm at step 0 > 1e6");
  check(rows[0].exploding_flags > 0, "normal_(0, 0.5): the monitor flags exploding gradients");
  check(rows[1].max_after_clip <= kMaxNorm * (1 + 1e-5), "clipping: norm after clip_grad_norm_ <= max_norm");
  check(rows[1].finite, "clipping: loss and norm stay finite");
  check(rows[2].finite && rows[2].norm0 < 1e2, "xavier: finite, gradient norm at step 0 < 100");
  check(rows[3].finite && rows[3].norm0 < 1e2, "he: finite, gradient norm at step 0 < 100");
  check(rows[3].loss_end < rows[3].loss0, "he: the loss falls");
  return check.exit_code();
}
