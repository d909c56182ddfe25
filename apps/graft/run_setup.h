// The pieces `graft train` and `graft plan` build alike: the model (its task's, initialised), the
// optimiser and the learning-rate schedule.
#pragma once

#include <graft/graft.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "task.h"

namespace graft::cli {

// The task's model for `data`, re-initialised as --init says and, with --checkpoint-attention,
// recomputing its attention cores in backward.
nn::Sequential make_model(const TrainConfig& cfg, const Task& task, const TaskData& data);

// Note [Starting from a state dict]
// graft train --init-from FILE loads a state dict (Python's torch.save(model.state_dict(), FILE), a
// safetensors file, graft::save_state_dict's or graft::save's file) into the model right after
// make_model, before DDP broadcasts rank 0's weights and before the optimiser exists: a new run
// whose weights are the file's (--init and the seed's initialisation are replaced; the seed still
// fixes the shuffle and dropout). The load is graft::load_state_dict's strict one: the file must
// hold the model's keys (graft train's models are Sequentials: "1.weight", "1.bias", ...) with
// their shapes and dtypes, and nothing else; any other file is an error naming --init-from before
// training starts. A run saved with --save continues with --resume alone (its checkpoint holds the
// weights), so the flag is not part of the checkpoint's flags; --init-from with --resume is refused.
// Under mpirun every rank loads the file itself (Note [Ranks that agree]).
void load_init_from(const TrainConfig& cfg, nn::Module& model);

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& cfg, const std::vector<Tensor>& params);

// The schedule steps after every batch (cosine, onecycle) or after every epoch (step, exponential,
// plateau on the epoch's training loss; the test set never steers training).
struct Schedule {
  std::unique_ptr<optim::LRScheduler> scheduler;
  std::unique_ptr<optim::ReduceLROnPlateau> plateau;
  bool per_batch = false;

  void after_batch() {
    if (scheduler && per_batch) scheduler->step();
  }
  void after_epoch(double train_loss) {
    if (scheduler && !per_batch) scheduler->step();
    if (plateau) plateau->step(train_loss);
  }
  OrderedDict<std::string, Tensor> state_dict() const {
    if (scheduler) return scheduler->state_dict();
    if (plateau) return plateau->state_dict();
    return {};
  }
  void load_state_dict(const OrderedDict<std::string, Tensor>& state) {
    if (scheduler) scheduler->load_state_dict(state);
    if (plateau) plateau->load_state_dict(state);
  }
  // After a resume: the schedule has stepped once per finished epoch (or batch), as the run does.
  void check_resumed(int64_t epochs_done, int64_t batches_per_epoch, const std::string& file) const;
};

Schedule make_schedule(const TrainConfig& cfg, optim::Optimizer& opt, int64_t batches_per_epoch);

double current_lr(optim::Optimizer& opt);

// Sets the memory limit for the run and puts the previous one back after it (a library caller's
// next run must not inherit a --memory-budget).
class LimitGuard {
 public:
  explicit LimitGuard(int64_t bytes) : previous_(memory::stats().limit_bytes) { memory::set_limit(bytes); }
  ~LimitGuard() { memory::set_limit(previous_); }
  LimitGuard(const LimitGuard&) = delete;
  LimitGuard& operator=(const LimitGuard&) = delete;

 private:
  int64_t previous_;
};

}  // namespace graft::cli
