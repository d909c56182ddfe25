// What `graft plan` (plan.cpp) and --memory-budget's choice (budget.cpp) share: the data a plan
// stands on and the prediction of one configuration of graft train's run on shapes alone. Internal
// to apps/graft.
#pragma once

#include <graft/graft.h>

#include <string>

#include "config.h"
#include "task.h"

namespace graft::cli {

struct BudgetChoice;  // plan.h

// What every plan of one data set stands on: the data, loaded once (a budget's search plans many
// configurations of it), and what loading it cost.
struct PlanInputs {
  TaskData d;
  int64_t loading_peak = 0;
  memory::Stats loaded;  // the CPU's counters after loading: the data set, live through the run
};


struct Prediction {
  memory::Plan step;        // the training step's, the data set included
  int64_t eval_peak = 0;    // evaluation's
  int64_t eval_batch = 0;   // held-out examples per evaluation batch
  int64_t run_peak = 0;     // the most of the step's, the loading's and evaluation's
};

// Loads the data set as graft train does, measuring its bytes and its loading's peak.
PlanInputs load_inputs(const TrainConfig& cfg, const Task& task);

// The run of `cfg` on shapes alone (Note [What graft plan counts] in plan.cpp).
Prediction predict(const TrainConfig& cfg, const Task& task, const PlanInputs& in);

// The modules checkpoint_sequential may split graft train's model into (with --chunked-loss, less
// the output layer, which runs outside the segments).
int64_t segmentable_modules(const TrainConfig& cfg, const Task& task, const TaskData& d);

// --memory-budget's choice for `given` (Note [Memory budget] in budget.cpp); graft::Error naming
// `command` when nothing fits.
BudgetChoice choose_for_budget(const TrainConfig& given, const Task& task, const PlanInputs& in,
                               const std::string& command);

}  // namespace graft::cli
