// The model, optimiser and schedule of a run (run_setup.h).
#include "run_setup.h"

#include <graft/io/state_dict.h>

#include <algorithm>

namespace graft::cli {
namespace {

// Re-initialises the weights of linear and conv layers (the parameters with 2 or more dims) and
// zeroes their biases; "default" keeps PyTorch's default initialisation.
void initialise(nn::Sequential& model, const std::string& scheme) {
  if (scheme == "default") return;
  NoGradGuard no_grad;
  for (const auto& item : model->named_parameters()) {
    Tensor p = item.value();
    if (p.dim() >= 2) {
      if (scheme == "kaiming_uniform") nn::init::kaiming_uniform_(p, 0.0, kFanIn, kReLU);
      else if (scheme == "kaiming_normal") nn::init::kaiming_normal_(p, 0.0, kFanIn, kReLU);
      else if (scheme == "xavier_uniform") nn::init::xavier_uniform_(p);
      else if (scheme == "xavier_normal") nn::init::xavier_normal_(p);
      else if (scheme == "orthogonal") nn::init::orthogonal_(p, nn::init::calculate_gain(kReLU));
    }
  }
  // Biases of the re-initialised layers start at zero (batch norm's biases already are).
  for (const auto& item : model->named_parameters())
    if (item.value().dim() == 1 && item.key().ends_with(".bias")) nn::init::zeros_(item.value());
}

}  // namespace

nn::Sequential make_model(const TrainConfig& cfg, const Task& task, const TaskData& data) {
  nn::Sequential model = task.build_model(cfg, data);
  initialise(model, cfg.init);
  if (cfg.checkpoint_attention) checkpoint_attention(*model.ptr());
  return model;
}

void load_init_from(const TrainConfig& cfg, nn::Module& model) {
  try {
    graft::load_state_dict(model, cfg.init_from);  // strict: Note [Starting from a state dict]
  } catch (const Error& e) {
    throw Error("graft train --init-from", std::string(e.what()) +
                                               "\n(--init-from needs the state dict of this model: --model " + cfg.model +
                                               " with the same shape flags)");
  }
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& cfg, const std::vector<Tensor>& params) {
  const double lr = cfg.lr.value_or(default_lr(cfg.optimizer));
  const optim::StatePrecision state = optim::state_precision_from_name(cfg.optimizer_state);  // --optimizer-state
  if (cfg.optimizer == "sgd")
    return std::make_unique<optim::SGD>(params, optim::SGDOptions(lr)
                                                    .momentum(cfg.momentum)
                                                    .nesterov(cfg.nesterov)
                                                    .weight_decay(cfg.weight_decay)
                                                    .state_precision(state));
  if (cfg.optimizer == "adam")
    return std::make_unique<optim::Adam>(params,
                                         optim::AdamOptions(lr).weight_decay(cfg.weight_decay).state_precision(state));
  if (cfg.optimizer == "adamw")
    return std::make_unique<optim::AdamW>(
        params,
        optim::AdamWOptions(lr).weight_decay(cfg.weight_decay > 0 ? cfg.weight_decay : 0.01).state_precision(state));
  if (cfg.optimizer == "rmsprop")
    return std::make_unique<optim::RMSprop>(
        params, optim::RMSpropOptions(lr).momentum(cfg.momentum).weight_decay(cfg.weight_decay));
  return std::make_unique<optim::Adagrad>(params, optim::AdagradOptions(lr).weight_decay(cfg.weight_decay));
}

void Schedule::check_resumed(int64_t epochs_done, int64_t batches_per_epoch, const std::string& file) const {
  if (!scheduler && !plateau) return;
  const int64_t expected = per_batch ? epochs_done * batches_per_epoch : epochs_done;
  const int64_t got = scheduler ? scheduler->last_epoch() : plateau->last_epoch();
  GRAFT_CHECK(got == expected, "graft train --resume",
              "a schedule at step " + std::to_string(expected) + " after " + std::to_string(epochs_done) + " epochs",
              "step " + std::to_string(got) + " in " + file,
              "the checkpoint's schedule state is damaged; resume from a file that graft train wrote");
}

Schedule make_schedule(const TrainConfig& cfg, optim::Optimizer& opt, int64_t batches_per_epoch) {
  Schedule s;
  const int64_t total_steps = std::max<int64_t>(1, cfg.epochs * batches_per_epoch);
  const double lr = cfg.lr.value_or(default_lr(cfg.optimizer));
  if (cfg.schedule == "step") {
    s.scheduler = std::make_unique<optim::StepLR>(opt, cfg.step_size, cfg.gamma);
  } else if (cfg.schedule == "exponential") {
    s.scheduler = std::make_unique<optim::ExponentialLR>(opt, cfg.gamma);
  } else if (cfg.schedule == "cosine") {
    s.scheduler = std::make_unique<optim::CosineAnnealingLR>(opt, total_steps);
    s.per_batch = true;
  } else if (cfg.schedule == "onecycle") {
    s.scheduler = std::make_unique<optim::OneCycleLR>(opt, lr, total_steps);
    s.per_batch = true;
  } else if (cfg.schedule == "plateau") {
    s.plateau = std::make_unique<optim::ReduceLROnPlateau>(opt, optim::ReduceLROnPlateau::min, 0.1, 1);
  }
  return s;
}

double current_lr(optim::Optimizer& opt) { return opt.param_groups().front().options().lr(); }

}  // namespace graft::cli
