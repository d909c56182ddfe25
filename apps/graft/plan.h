// `graft plan` (Note [Memory planner] in graft/diagnostics/memory_plan.h): the peak memory of one
// of graft train's training steps, predicted from its model and flags, and what fits a budget.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "config.h"

namespace graft::cli {

struct PlanConfig {
  TrainConfig train;              // --model, --batch-size, --batch-norm, --dropout, --optimizer, --data, ...
  std::string budget;             // "2GiB": also find the largest batch (and checkpoint segments) that fit
  int64_t accumulate = 1;         // micro-batches per optimiser step (optim::GradAccumulator)
  int64_t checkpoint_segments = 0;  // plan the forward through checkpoint_sequential with this many segments
  int64_t world_size = 1;           // ranks of a data-parallel run (--batch-size is per rank)
  int zero = 0;                     // ZeRO stage of that run
  bool json = false;
};

struct PlanResult {
  int64_t batch_size = 0;
  int64_t predicted_peak_bytes = 0;     // the run's: the step's (data set included), the loading's or evaluation's
  int64_t data_bytes = 0;               // the data set's (memory category "data")
  int64_t loading_peak_bytes = 0;       // the peak while loading it
  int64_t eval_peak_bytes = 0;          // evaluation's (Note [What graft plan counts] in plan.cpp)
  int64_t budget_bytes = 0;
  int64_t max_batch_size = 0;          // with a budget
  int64_t segments_to_fit = 0;         // with a budget: fewest checkpoint segments fitting batch_size (0: none)
  std::string plan_json;               // memory::Plan::json() at batch_size
};

// --memory-budget's choice (Note [Memory budget] in budget.cpp): the configuration that runs, what was
// changed to fit, the predicted peak and a line saying so.
struct BudgetChoice {
  TrainConfig config;
  std::vector<std::string> choices;  // the flags chosen: "--eval-batch-size 125", "--checkpoint-attention"
  int64_t budget_bytes = 0;    // the whole budget
  int64_t program_bytes = 0;   // the program's share of it (Note [The program's share of a budget] in budget.cpp)
  int64_t limit_bytes = 0;     // the tensors' share: the memory limit of the run
  int64_t predicted_peak_bytes = 0;  // of the tensors
  std::string summary;
};
// Plans `config` (loading its data, then freeing it) and chooses what fits config.memory_budget;
// graft::Error naming `command` when nothing does, with the smallest budget that would.
BudgetChoice fit_memory_budget(const TrainConfig& config, const std::string& command);

// The process's peak resident size so far (getrusage's ru_maxrss), in bytes.
int64_t peak_resident_bytes();

// Loads the data set (its bytes are part of the run's memory), builds graft train's model and
// optimiser, and prints the predicted peak of one training step, its breakdown and, with a budget,
// what fits. With json, the last line is one JSON object.
PlanResult plan(const PlanConfig& config, std::ostream& out);

}  // namespace graft::cli
