// `graft plan` (plan.h).
#include "plan.h"

#include <graft/graft.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>
#include <vector>

#include "run_setup.h"
#include "task.h"

namespace graft::cli {

PlanResult plan(const PlanConfig& pc, std::ostream& out) {
  const TrainConfig cfg = with_defaults(pc.train);
  validate(cfg);
  // Bounded so that the effective batch (batch x accumulate) cannot overflow (issue 14, item 11).
  constexpr int64_t kMaxAccumulate = int64_t{1} << 16, kMaxSegments = 1024;
  GRAFT_CHECK(pc.world_size >= 1 && pc.world_size <= (int64_t{1} << 20) && pc.zero >= 0 && pc.zero <= 2, "graft plan",
              "--world-size in [1, 2^20] and --zero 0, 1 or 2",
              std::to_string(pc.world_size) + " and " + std::to_string(pc.zero), "--world-size counts the ranks of the run");
  GRAFT_CHECK(pc.accumulate >= 1 && pc.accumulate <= kMaxAccumulate && pc.checkpoint_segments >= 0 &&
                  pc.checkpoint_segments <= kMaxSegments,
              "graft plan", "--accumulate in [1, " + std::to_string(kMaxAccumulate) + "] and --checkpoint-segments in [0, " +
                  std::to_string(kMaxSegments) + "]",
              std::to_string(pc.accumulate) + " and " + std::to_string(pc.checkpoint_segments), "");
  set_num_threads(cfg.threads > 0 ? cfg.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  manual_seed(cfg.seed);
  // The data set stays live through the planned steps, so every line of the plan counts its bytes
  // (category "data"); the loading's own peak, as graft train reaches it, bounds the plan from below.
  memory::reset_peak_stats();
  const Task& task = task_for(cfg.model);
  const TaskData d = task.load(cfg);
  const int64_t loading_peak = memory::stats().peak_allocated_bytes;
  const int64_t data_bytes = memory::stats()[memory::Category::Data].current_bytes;
  nn::Sequential model = make_model(cfg, task, d);
  auto opt = make_optimizer(cfg, model->parameters());
  const int64_t batch = batch_size(cfg);
  std::vector<int64_t> shape = {batch};  // a batch of the task's examples
  shape.insert(shape.end(), d.example_sizes.begin(), d.example_sizes.end());

  auto plan_with = [&](int64_t segments) {
    memory::PlanOptions o;
    if (const auto dtype = task.input_dtype()) o.input_dtype = *dtype;  // the text models': int64 bytes
    if (segments > 0) o.forward = [&, segments](const Tensor& x) { return checkpoint_sequential(model, segments, x); };
    return memory::plan(*model.ptr(), shape, opt.get(), o);
  };
  const memory::Plan p = plan_with(pc.checkpoint_segments);
  PlanResult r;
  r.batch_size = batch;
  r.predicted_peak_bytes = std::max(p.predicted_peak_bytes, loading_peak);
  r.data_bytes = data_bytes;
  r.loading_peak_bytes = loading_peak;
  out << "graft plan: " << cfg.model << ", batch " << batch
      << (pc.accumulate > 1 ? " per micro-batch (" + std::to_string(pc.accumulate) + " per step: effective batch " +
                                  std::to_string(batch * pc.accumulate) + ")"
                            : std::string())
      << (pc.checkpoint_segments > 0 ? ", checkpoint_sequential with " + std::to_string(pc.checkpoint_segments) + " segments"
                                     : std::string())
      << ", " << cfg.optimizer << "\n"
      << p.table()
      << "  the data set (" << task.data_description()
      << ") is " << memory::format_bytes(data_bytes)
      << " of it; loading peaks at " << memory::format_bytes(loading_peak) << "\n";
  nlohmann::json j = nlohmann::json::parse(p.json());
  j["predicted_peak_bytes"] = r.predicted_peak_bytes;
  j["data_bytes"] = data_bytes;
  j["loading_peak_bytes"] = loading_peak;
  if (!pc.budget.empty()) {
    r.budget_bytes = memory::parse_bytes(pc.budget);
    r.max_batch_size = loading_peak <= r.budget_bytes ? p.max_batch_size(r.budget_bytes) : 0;
    const bool fits = r.predicted_peak_bytes <= r.budget_bytes;
    out << "budget " << memory::format_bytes(r.budget_bytes) << ": batch " << batch << (fits ? " fits" : " does not fit")
        << "; the largest " << (pc.accumulate > 1 ? "micro-batch" : "batch") << " that fits is " << r.max_batch_size;
    if (pc.accumulate > 1) out << " (effective batch " << r.max_batch_size * pc.accumulate << " with --accumulate " << pc.accumulate << ")";
    out << "\n";
    if (!fits && pc.checkpoint_segments == 0) {
      // Fewest checkpoint segments with which the requested batch fits.
      const int64_t modules = static_cast<int64_t>(model->size());
      for (int64_t s = 2; s <= modules && r.segments_to_fit == 0; ++s)
        if (std::max(plan_with(s).predicted_peak_bytes, loading_peak) <= r.budget_bytes) r.segments_to_fit = s;
      out << (r.segments_to_fit ? "with checkpoint_sequential, " + std::to_string(r.segments_to_fit) +
                                      " segments fit batch " + std::to_string(batch)
                                : "checkpointing does not make batch " + std::to_string(batch) + " fit either")
          << "\n";
    }
    j["budget_bytes"] = r.budget_bytes;
    j["max_batch_size"] = r.max_batch_size;
    j["segments_to_fit"] = r.segments_to_fit;
  }
  if (pc.world_size > 1 || pc.zero > 0) {
    // Each rank of a data-parallel run (Note [graft train under mpirun]): the same step at the
    // per-rank batch; ZeRO keeps 1/N of the optimiser state, adds the shard's copies of the
    // parameters and of their gradient, and at stage 2 keeps only that shard of the gradients
    // between steps (during backward the buckets still hold them whole).
    const int64_t n = pc.world_size;
    auto share = [n](int64_t bytes) { return (bytes + n - 1) / n; };
    auto at = [&](memory::Category c) { return p.at_peak[static_cast<size_t>(c)]; };
    auto own = [&](memory::Category c) { return p.category_peak[static_cast<size_t>(c)]; };
    const int64_t params = own(memory::Category::Parameters), grads = own(memory::Category::Gradients);
    const int64_t state = own(memory::Category::OptimizerState);
    int64_t peak = r.predicted_peak_bytes;
    if (pc.zero > 0) peak += share(at(memory::Category::OptimizerState)) - at(memory::Category::OptimizerState) + 2 * share(params);
    const int64_t steady_params = params + (pc.zero > 0 ? share(params) : 0);
    const int64_t steady_grads = pc.zero == 2 ? share(params) : grads + (pc.zero == 1 ? share(params) : 0);
    const int64_t steady_state = pc.zero > 0 ? share(state) : state;
    out << "per rank, " << n << " ranks (global batch " << n * batch << ")"
        << (pc.zero > 0 ? ", ZeRO stage " + std::to_string(pc.zero) : std::string()) << ": peak "
        << memory::format_bytes(peak) << "; between steps: parameters " << memory::format_bytes(steady_params)
        << ", gradients " << memory::format_bytes(steady_grads) << ", optimizer state "
        << memory::format_bytes(steady_state) << "\n";
    j["world_size"] = n;
    j["zero"] = pc.zero;
    j["per_rank_peak_bytes"] = peak;
    j["per_rank_between_steps"] = {{"parameters", steady_params}, {"gradients", steady_grads}, {"optimizer_state", steady_state}};
  }
  j["model"] = cfg.model;
  j["accumulate"] = pc.accumulate;
  j["checkpoint_segments"] = pc.checkpoint_segments;
  r.plan_json = j.dump();
  if (pc.json) out << r.plan_json << '\n';
  out << std::flush;
  return r;
}

}  // namespace graft::cli
