// --memory-budget (plan.h): the program's share of the budget and the choice of what fits the rest.
#include <graft/graft.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include "plan.h"
#include "plan_internal.h"
#include "task.h"

namespace graft::cli {

namespace {

std::string joined_choices(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

// Note [The program's share of a budget]
// --memory-budget is the memory the process may use, what a user reads as its resident size (top's
// RES, a container's limit), not its tensors alone. The program keeps a share of it: its code and
// libraries, the memory it holds beside tensors (the text or image files as read, the graph's nodes,
// OpenBLAS's buffers), measured here as the resident bytes (/proc/self/statm) less the CPU
// allocator's (memory::Stats::reserved_bytes) once the data set is loaded, plus kGrowth and
// kGrowthPerThread for each compute thread: what the run adds beside tensors as it trains
// (OpenBLAS's buffers, the engine's, the heap's), measured as the peak resident size less the
// allocator's peak on issue 31's GPT and the text models at 1 and 2 threads: 9 to 12 MiB, a MiB
// more at 2 threads (BENCHMARKS.md, "Training in a memory budget"); kGrowth keeps 4 MiB more, as
// the image runs of graft_plan_holds came within 5% of their budgets with 12. Loading the data set has a peak
// of its own beside its tensors (an IDX file is read whole before its images are converted):
// measured as this process's peak resident size once the plan has loaded the data set, plus kGrowth (the run loads it again beside what planning left), it must fit
// the budget too. The tensors get the rest: the plan must fit it, and the memory limit is set to it, which
// bounds the cached blocks too (Note [The cache under a limit] in src/core/storage.cpp): at the
// plan's peak and its headroom, so that the cache does not fill the rest of the share. A library
// caller sets TrainConfig::memory_budget_program to give the share itself (0: the budget is the
// tensors').
constexpr int64_t kGrowth = int64_t{16} << 20, kGrowthPerThread = int64_t{2} << 20;

// The process's resident bytes now (the second field of /proc/self/statm, in pages); 0 when unknown.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

int64_t program_share(const TrainConfig& cfg) {
  if (cfg.memory_budget_program >= 0) return cfg.memory_budget_program;
  const int64_t outside = std::max<int64_t>(0, resident_bytes() - memory::stats().reserved_bytes);
  return outside + kGrowth + kGrowthPerThread * (cfg.threads > 0 ? cfg.threads : get_num_threads());
}

// Note [Memory budget]
// --memory-budget SIZE (graft train and graft plan) turns the plan around: given the bytes, choose
// how to run. Each saving is tried in the order of what it costs, cheapest first, and kept once
// taken; the first configuration whose predicted run peak (Note [What graft plan counts]) fits the
// tensors' share of the budget (Note [The program's share of a budget]) is the one that runs (with
// 1% of it kept as headroom), and the memory limit is set to that share, so the plan is enforced:
//   1. a smaller evaluation batch (halved until evaluation fits: no effect on the numbers), with
//      every configuration below too;
//   2. the optimizer step inside backward (--step-in-backward: the same updates, each gradient freed
//      as soon as it is applied; not with --log or --report, whose monitor reads every gradient);
//   3. the output layer and the loss fused and chunked (--chunked-loss, F::linear_cross_entropy:
//      one more matrix product of the output layer; the same numbers to rounding);
//   4. optimizer state in bfloat16 (--optimizer-state bfloat16: adam, adamw, sgd; the state rounded
//      after each update);
//   5. recomputing each attention core in backward (gpt: --checkpoint-attention, about 10% more
//      time, the same numbers bit for bit);
//   6. optimizer state in 8 bits (--optimizer-state int8: block-wise quantization, a slower update);
//   7. micro-batches (--micro-batches: the fewest of 2, 4, 8, ... and the batch that fit; each
//      batch's activations a micro-batch at a time, the same update to rounding, smaller matrix
//      products; Note [Micro-batches] in train_step.h). They need every gradient whole, so they
//      replace the step inside backward when graft chose it, and are not chosen with --batch-norm,
//      --log or --report, or the user's own --step-in-backward;
//   8. recomputing the forward in backward, by segments: for the Transformer first every module a
//      segment keeping its matrix products' outputs (--selective-recompute, Note [Selective
//      recomputation]: a few percent more time); else the whole forward (--checkpoint-segments:
//      the fewest that fit, or those with the lowest peak; about a third more time, the same numbers).
// The batch size, the model and the optimiser stay the user's: when nothing fits, the error says
// so before anything is trained, with the smallest budget that would fit (every saving taken).
}  // namespace

BudgetChoice choose_for_budget(const TrainConfig& given, const Task& task, const PlanInputs& in,
                               const std::string& command) {
  const int64_t whole = memory::parse_bytes(given.memory_budget);
  const int64_t program = program_share(given);
  GRAFT_CHECK(whole > program, command + " --memory-budget",
              "a budget above the program's own share (" + memory::format_bytes(program) + ": code, libraries and " +
                  "memory beside tensors; Note [The program's share of a budget])",
              memory::format_bytes(whole), "--memory-budget " + std::to_string(program + (int64_t{1} << 20)) + " or more");
  const int64_t limit = whole - program;  // the tensors' share, enforced as the memory limit
  if (given.memory_budget_program < 0) {
    // This process's peak so far (the plan's loading of the data), and kGrowth: the run loads the data
    // again beside what planning left resident.
    const int64_t loading = peak_resident_bytes() + kGrowth;
    GRAFT_CHECK(loading <= whole, command + " --memory-budget",
                "a budget above the peak of loading the data set (" + memory::format_bytes(loading) +
                    " resident: the files as read beside their tensors)",
                memory::format_bytes(whole), "--memory-budget " + std::to_string(loading) + " or more, or less data");
  }
  // 1% of the tensors' share is headroom: the plan on shapes alone is exact to the byte on
  // graft_plan_holds' runs, yet an op whose meta path allocates otherwise than its CPU path would
  // end the run. One is known: the oneDNN convolution's reordered operands and scratchpad
  // (src/kernels/onednn_conv.cpp) are counted on the CPU and not made on meta; they pass the plan
  // only where the step's peak falls inside a convolution's backward, as with --step-in-backward
  // on a 12 x 12-image cnn at batch 8 (84 KiB over a 531 KiB step; GRAFT_CONV_BACKEND=im2col is
  // exact).
  const int64_t budget = limit - limit / 100;
  BudgetChoice c;
  c.budget_bytes = whole;
  c.program_bytes = program;
  c.limit_bytes = limit;
  c.config = given;
  // Every configuration is planned with the largest evaluation batch (halving the model's) whose
  // evaluation fits: a smaller one costs nothing but time.
  auto plan_for = [&](TrainConfig& t) {
    Prediction q = predict(t, task, in);
    while (q.eval_peak > budget && q.eval_batch > 1) {
      t.eval_batch_size = std::max<int64_t>(1, q.eval_batch / 2);
      q = predict(t, task, in);
    }
    return q;
  };
  Prediction p = plan_for(c.config);
  auto fits = [&] { return p.run_peak <= budget; };
  // A saving, taken when it lowers the predicted peak.
  auto take = [&](const std::string& flag, const std::function<void(TrainConfig&)>& set) {
    if (fits()) return;
    TrainConfig with = c.config;
    set(with);
    with.eval_batch_size = given.eval_batch_size;
    const Prediction q = plan_for(with);
    if (q.run_peak >= p.run_peak) return;
    c.config = with;
    p = q;
    c.choices.push_back(flag);
  };
  const bool monitored = !given.log.empty() || !given.report.empty();  // the monitor reads every gradient
  const bool compact = c.config.optimizer == "adam" || c.config.optimizer == "adamw" || c.config.optimizer == "sgd";
  if (!c.config.step_in_backward && !monitored) take("--step-in-backward", [](TrainConfig& t) { t.step_in_backward = true; });
  if (!c.config.chunked_loss) take("--chunked-loss", [](TrainConfig& t) { t.chunked_loss = true; });
  if (compact && c.config.optimizer_state == "float32")
    take("--optimizer-state bfloat16", [](TrainConfig& t) { t.optimizer_state = "bfloat16"; });
  if (task.has_attention() && !c.config.checkpoint_attention)
    take("--checkpoint-attention", [](TrainConfig& t) { t.checkpoint_attention = true; });
  if (compact && c.config.optimizer_state != "int8") {
    take("--optimizer-state int8", [](TrainConfig& t) { t.optimizer_state = "int8"; });
    if (c.config.optimizer_state == "int8")  // int8 replaces bfloat16
      std::erase(c.choices, std::string("--optimizer-state bfloat16"));
  }
  // 7. Micro-batches: the fewest (2, 4, 8, ..., the batch) that fit, in place of the step inside
  //    backward when graft chose it (they need every gradient accumulated first).
  if (!fits() && c.config.micro_batches == 1 && !c.config.batch_norm && !monitored && !given.step_in_backward &&
      c.config.checkpoint_segments == 0) {
    const int64_t batch = batch_size(c.config);
    for (int64_t k = 2; k <= batch; k = k * 2 > batch && k < batch ? batch : k * 2) {
      TrainConfig with = c.config;
      with.step_in_backward = false;
      with.micro_batches = k;
      with.eval_batch_size = given.eval_batch_size;
      const Prediction q = plan_for(with);
      if (q.run_peak <= budget) {
        c.config = with;
        p = q;
        std::erase(c.choices, std::string("--step-in-backward"));
        c.choices.push_back("--micro-batches " + std::to_string(k));
        break;
      }
    }
  }
  // 8. Recomputing the forward by segments (checkpoint_sequential): first every module a segment
  //    that keeps its matrix products' outputs (--selective-recompute: the element-wise work and
  //    attention's core recomputed, a few percent more time); else the fewest segments that fit
  //    recomputing everything.
  if (!fits() && c.config.checkpoint_segments == 0 && task.has_attention()) {
    TrainConfig with = c.config;
    with.checkpoint_segments = segmentable_modules(c.config, task, in.d);
    with.selective_recompute = true;
    with.eval_batch_size = given.eval_batch_size;
    const Prediction q = plan_for(with);
    if (q.run_peak <= budget) {
      c.config = with;
      p = q;
      c.choices.push_back("--checkpoint-segments " + std::to_string(with.checkpoint_segments));
      c.choices.push_back("--selective-recompute");
    }
  }
  if (!fits() && c.config.checkpoint_segments == 0) {
    const int64_t modules = segmentable_modules(c.config, task, in.d);
    Prediction best = p;
    for (int64_t s = 2; s <= modules && best.run_peak > budget; ++s) {
      TrainConfig with = c.config;
      with.checkpoint_segments = s;
      with.eval_batch_size = given.eval_batch_size;
      const Prediction q = plan_for(with);
      if (q.run_peak < best.run_peak) {
        best = q;
        c.config = with;
      }
    }
    if (c.config.checkpoint_segments > 0) {
      p = best;
      c.choices.push_back("--checkpoint-segments " + std::to_string(c.config.checkpoint_segments));
    }
  }
  if (c.config.eval_batch_size != given.eval_batch_size)
    c.choices.insert(c.choices.begin(), "--eval-batch-size " + std::to_string(p.eval_batch));
  c.predicted_peak_bytes = p.run_peak;
  // The run's limit: the plan's peak and its 1% of headroom, within the tensors' share. No higher:
  // the cache fills whatever the limit leaves free with blocks of sizes the step no longer asks for
  // (Note [The cache under a limit]), so a limit at the whole share would make the resident size the
  // whole budget even when the plan needs less.
  if (fits()) c.limit_bytes = std::min(limit, p.run_peak + p.run_peak / 100 + 1);
  auto category = [&](memory::Category k) {
    return std::string(memory::category_name(k)) + " " + memory::format_bytes(p.step.at_peak[static_cast<size_t>(k)]);
  };
  std::string breakdown;
  for (int k = 0; k < memory::kNumCategories; ++k)
    breakdown += (k ? ", " : "") + category(static_cast<memory::Category>(k));
  GRAFT_CHECK(fits(), command + " --memory-budget",
              "a budget the run fits in (with every saving graft can choose: " +
                  (c.choices.empty() ? std::string("none applies") : joined_choices(c.choices)) + ")",
              memory::format_bytes(whole) + ", of which the program keeps " + memory::format_bytes(program) +
                  ": the tensors need at least " + memory::format_bytes(p.run_peak) + " (" + std::to_string(p.run_peak) +
                  " bytes; training step " + memory::format_bytes(p.step.predicted_peak_bytes) + ", evaluation " +
                  memory::format_bytes(p.eval_peak) + ", loading " + memory::format_bytes(in.loading_peak) + ")",
              "--memory-budget " + std::to_string(program + p.run_peak + p.run_peak / 99 + 1) +
                  " or more (1% of the tensors' share is headroom), or a smaller --batch-size or model");
  c.summary = "memory budget " + memory::format_bytes(whole) + " (the program " + memory::format_bytes(program) +
              ", tensors " + memory::format_bytes(limit) + "): " +
              (c.choices.empty() ? std::string("fits as given") : "chose " + joined_choices(c.choices)) +
              "; predicted tensor peak " + memory::format_bytes(p.run_peak) + " (training step at its peak: " + breakdown + ")\n";
  return c;
}

int64_t peak_resident_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}


BudgetChoice fit_memory_budget(const TrainConfig& config, const std::string& command) {
  const TrainConfig cfg = with_defaults(config);
  const Task& task = task_for(cfg.model);
  BudgetChoice c;
  {
    const PlanInputs in = load_inputs(cfg, task);  // freed before the run loads its own copy
    c = choose_for_budget(cfg, task, in, command);
  }
  memory::reset_peak_stats();
  return c;
}

}  // namespace graft::cli
