// `graft train`'s checkpoints (Note [Resumable runs] in train.h): writing one after an epoch,
// resuming from one, and reading one back with the configuration it records (also `graft sample`'s).
#pragma once

#include <graft/graft.h>

#include <cstdint>
#include <limits>
#include <string>

#include "config.h"

namespace graft::cli {

class Task;
struct Schedule;

// A checkpoint graft train wrote, and the run configuration its metadata records (the flags that
// shape the run: model, optimiser, sizes, ...). Throws graft::Error naming `op` for a file that is
// not one.
struct RunCheckpoint {
  io::Checkpoint checkpoint;
  TrainConfig config;
};
RunCheckpoint load_run_checkpoint(const std::string& path, const std::string& op);

// What a checkpoint holds of a run, as train.cpp keeps it.
struct RunState {
  nn::Sequential& model;
  optim::Optimizer& opt;
  optim::ZeroRedundancyOptimizer* zero = nullptr;  // with --zero: `opt` itself, sharded
  Schedule& sched;
  int world = 1, rank = 0;  // Note [graft train under mpirun] in train.cpp
};

// Writes --save after `epochs_done` epochs (rank 0 writes; every rank takes part under ZeRO).
void save_run(const TrainConfig& cfg, const Task& task, const RunState& run, int64_t epochs_done);
// Loads --resume into the run, after checking its flags against cfg's; returns the epochs it had
// finished.
int64_t resume_run(const TrainConfig& cfg, const Task& task, RunState& run, int64_t batches_per_epoch);

// A whole decimal count in [lo, hi] from checkpoint metadata: " 2x", "-1", "" and out-of-range
// values are errors naming the file and the field (std::stoll would accept " 2x" as 2, and throw a
// bare "stoll" for "x").
int64_t parse_count(const std::string& text, const std::string& field, const std::string& file, int64_t lo, int64_t hi,
                    const std::string& op = "graft train --resume");

}  // namespace graft::cli
