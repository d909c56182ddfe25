// `graft train`'s checkpoints (run_checkpoint.h, Note [Resumable runs] in train.h).
#include "run_checkpoint.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

#include "run_setup.h"
#include "task.h"

namespace graft::cli {
namespace {

// The flags that shape a run; a resumed run must agree with its checkpoint on all of them.
std::map<std::string, std::string> shaping_flags(const TrainConfig& c) {
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  return {{"model", c.model},
          {"optimizer", c.optimizer},
          {"lr", num(c.lr.value_or(default_lr(c.optimizer)))},
          {"momentum", num(c.momentum)},
          {"nesterov", c.nesterov ? "true" : "false"},
          {"weight-decay", num(c.weight_decay)},
          {"schedule", c.schedule},
          {"step-size", std::to_string(c.step_size)},
          {"gamma", num(c.gamma)},
          {"batch-size", std::to_string(batch_size(c))},
          {"epochs", std::to_string(c.epochs)},
          {"init", c.init},
          {"batch-norm", c.batch_norm ? "true" : "false"},
          {"dropout", num(c.dropout)},
          {"seed", std::to_string(c.seed)},
          {"train-limit", std::to_string(c.train_limit)}};
}

// The common shaping flags and the task's (the text models' shape: graft sample rebuilds the model from it).
std::map<std::string, std::string> run_flags(const TrainConfig& c, const Task& task) {
  std::map<std::string, std::string> flags = shaping_flags(c);
  flags.merge(task.shape_flags(c));
  return flags;
}

// The generator's state in PyTorch's layout (torch.get_rng_state()'s 5056 bytes), as rng.state.
io::TensorDict generator_state() {
  const std::vector<uint8_t> bytes = default_generator().state_bytes();
  Tensor t = empty({static_cast<int64_t>(bytes.size())}, kUInt8);
  std::copy(bytes.begin(), bytes.end(), t.data_ptr<uint8_t>());
  io::TensorDict d;
  d.insert("state", t);
  return d;
}

void set_generator_state(const io::TensorDict& d, const std::string& file) {
  const Tensor* state = d.find("state");
  GRAFT_CHECK(state && state->dtype() == kUInt8 && state->dim() == 1, "graft train --resume",
              "a random-number state (rng.state: uint8 bytes in torch.get_rng_state()'s layout)",
              d.find("words") ? "the xoshiro state of a checkpoint from graft before PyTorch's generator, in " + file
                              : "something else in " + file,
              "resume from a checkpoint that this graft train wrote, or start the run again");
  const Tensor bytes = state->contiguous();
  try {
    const Generator::State st = Generator::state_from_bytes(bytes.data_ptr<uint8_t>(), static_cast<size_t>(bytes.numel()));
    default_generator().set_state(st);
  } catch (const Error& e) {
    GRAFT_CHECK(false, "graft train --resume", "a random-number state graft or PyTorch wrote",
                "a damaged rng.state in " + file + " (" + e.what() + ")", "resume from a checkpoint that graft train wrote");
  }
}

}  // namespace

int64_t parse_count(const std::string& text, const std::string& field, const std::string& file, int64_t lo,
                    int64_t hi, const std::string& op) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  GRAFT_CHECK(!text.empty() && ec == std::errc() && ptr == end && v >= lo && v <= hi, op,
              "a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] as " + field + " in " + file,
              "\"" + text + "\"", "the checkpoint's metadata is damaged; resume from a file that graft train wrote");
  return v;
}

void save_run(const TrainConfig& cfg, const Task& task, const RunState& run, int64_t epochs_done) {
  // Every rank takes part in consolidating a sharded state; rank 0 writes (Note [graft train under mpirun]).
  auto optim_state = run.zero ? run.zero->consolidate_state_dict(0) : run.opt.state_dict();
  if (run.rank != 0) return;
  io::Metadata meta = {{"format", "graft-train/1"}, {"epochs_done", std::to_string(epochs_done)},
                       {"world_size", std::to_string(run.world)}};
  for (const auto& [k, v] : run_flags(cfg, task)) meta["flag." + k] = v;
  io::CheckpointParts parts = {
      {"model.", run.model->state_dict()}, {"optim.", std::move(optim_state)}, {"rng.", generator_state()}};
  const auto sched_state = run.sched.state_dict();
  if (!sched_state.is_empty()) parts.emplace_back("sched.", sched_state);
  // The task's shape flags once more, as tensors: graft sample checks the metadata against them
  // (Note [Shape flags and the weights] in text_task.cpp).
  io::TensorDict shape;
  for (const auto& [k, v] : task.shape_flags(cfg)) {
    Tensor t = empty({1}, kInt64);
    t.data_ptr<int64_t>()[0] = std::stoll(v);
    shape.insert(k, t);
  }
  if (!shape.is_empty()) parts.emplace_back("shape.", shape);
  io::save_checkpoint(cfg.save, parts, meta);
}

RunCheckpoint load_run_checkpoint(const std::string& path, const std::string& op) {
  RunCheckpoint r;
  r.checkpoint = [&] {
    try {
      return io::load_checkpoint(path);
    } catch (const std::bad_alloc&) {
      throw Error(op, "a checkpoint that fits in memory", path + " (out of memory reading it)",
                  "free memory, or check that the file is the checkpoint graft train wrote");
    }
  }();
  const io::Checkpoint& ck = r.checkpoint;
  const std::string* format = ck.metadata.count("format") ? &ck.metadata.at("format") : nullptr;
  GRAFT_CHECK(format && *format == "graft-train/1", op, "a checkpoint written by graft train --save",
              path + " without graft train's metadata", "pass the file that --save wrote");
  TrainConfig& c = r.config;
  c.model = ck.meta("flag.model");
  c.optimizer = ck.meta("flag.optimizer");
  // A model no task has is left to the caller (graft train --resume: "--model x (as in file)").
  if (const Task* task = find_task(c.model)) task->read_shape_flags(ck, path, op, c);
  return r;
}

int64_t resume_run(const TrainConfig& cfg, const Task& task, RunState& run, int64_t batches_per_epoch) {
  const io::Checkpoint ck = load_run_checkpoint(cfg.resume, "graft train --resume").checkpoint;
  GRAFT_CHECK(ck.meta("flag.model") == cfg.model, "graft train --resume",
              "--model " + ck.meta("flag.model") + " (as in " + cfg.resume + ")", "--model " + cfg.model,
              "resume with the flags of the run that wrote the checkpoint");
  for (const auto& [k, v] : run_flags(cfg, task)) {
    const std::string& saved = ck.meta("flag." + k);
    GRAFT_CHECK(saved == v, "graft train --resume", "--" + k + " " + saved + " (as in " + cfg.resume + ")",
                "--" + k + " " + v, "resume with the flags of the run that wrote the checkpoint");
  }
  run.model->load_state_dict(ck.part("model."));
  if (run.zero) run.zero->load_consolidated_state_dict(ck.part("optim."));
  else run.opt.load_state_dict(ck.part("optim."));
  const int64_t done = parse_count(ck.meta("epochs_done"), "epochs_done", cfg.resume, 0, cfg.epochs);
  const std::string saved_world = ck.metadata.count("world_size") ? ck.metadata.at("world_size") : "1";
  if (saved_world != std::to_string(run.world) && run.sched.per_batch) {
    // Another world size: another number of batches per epoch. The schedule goes on from the
    // same epoch (its state counts the old batches).
    for (int64_t i = 0; i < done * batches_per_epoch; ++i) run.sched.after_batch();
  } else {
    run.sched.load_state_dict(ck.part("sched.", /*required=*/false));
  }
  run.sched.check_resumed(done, batches_per_epoch, cfg.resume);
  set_generator_state(ck.part("rng."), cfg.resume);
  return done;
}

}  // namespace graft::cli
