// `graft train`: the training run behind the command, as a library so tests can drive it. The
// pieces: config.h (flags), task.h (the image and text tasks), run_setup.h (model, optimiser,
// schedule), run_checkpoint.h, run_log.h, and train.cpp's loop; plan.h is `graft plan`.
//
// Note [Resumable runs]
// A run is a pure function of its configuration: the seed fixes the initial weights, every epoch's
// shuffle (DataLoader order = f(seed, epoch)) and the dropout masks (graft's default generator).
// At the end of every epoch the checkpoint (--save) stores the model, the optimiser and the
// scheduler state dicts, the number of finished epochs, the default generator's state, and the
// configuration that shapes the run. --resume loads all of it and continues with the next epoch,
// so an interrupted run resumed from its last checkpoint ends with the same weights, bit for bit,
// as the run that was never interrupted (on the same machine and thread count).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "config.h"          // TrainConfig, validate
#include "plan.h"            // graft plan, over the same configuration
#include "run_checkpoint.h"  // load_run_checkpoint
#include "run_result.h"      // TrainResult

namespace graft::cli {

// Runs training as configured, writing progress to `out` (and, with config.json, the final JSON
// line). Throws graft::Error on bad flags, missing data or an incompatible checkpoint.
TrainResult train(const TrainConfig& config, std::ostream& out);

// The last line `graft train --json` prints.
std::string result_json(const TrainConfig& config, const TrainResult& result);

}  // namespace graft::cli
