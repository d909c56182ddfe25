// `graft plan` (plan.h).
#include "plan.h"

#include <graft/graft.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <ostream>
#include <thread>
#include <utility>
#include <vector>

#include "plan_internal.h"
#include "run_setup.h"
#include "task.h"
#include "train_step.h"

namespace graft::cli {

namespace {

namespace F = graft::nn::functional;

// Note [What graft plan counts]
// graft plan predicts the peak of the tensor bytes graft train allocates (what GRAFT_MEMORY_LIMIT
// bounds), over the whole run, without building the model on the CPU: the data set is loaded as
// the run loads it (its bytes and its loading peak are measured), and everything else runs on
// the meta device (Note [Planning on shapes alone]):
//  - the training step as train.cpp's loop makes it: forward, the loss, zero_grad, backward, the
//    optimiser step, and the accuracy from the logits, which stay live to the end of the step;
//  - the data loader's batches: the one trained on, and with W workers of prefetch P, W (P - 1)
//    more waiting and W being built (a build's own peak, measured on a real batch, counts);
//  - evaluation: a chunk of task.eval_chunk() held-out examples, built and run forward with the
//    last step's gradients and the optimiser state live.
// Under mpirun (--world-size, --zero) each rank's run, DDP's and ZeRO's memory included: Note
// [Planning a rank] in plan_internal.h.
// What it leaves out: a checkpoint's save (--save writes from the tensors' memory), the
// gradient monitor's figures (--log, --report: a few scalars per parameter), and --init-from's
// state dict (read before the first step and freed before it: the weights once more, beside the
// data set, while the model is built).
struct BatchForm {
  std::vector<int64_t> data_sizes, target_sizes;  // one example's (the batch size in front)
  DType data_dtype = kFloat32, target_dtype = kInt64;
  double bytes_per_example = 0;      // of a finished batch, data and target
  double build_peak_per_example = 0;  // the most a batch's build holds (the batch included)
};

// The shapes and bytes of the batches the data set makes, from a real batch of up to `batch` examples.
BatchForm batch_form(const data::Dataset& set, int64_t batch) {
  const int64_t m = std::max<int64_t>(1, std::min(batch, set.size()));
  std::vector<int64_t> indices(static_cast<size_t>(m));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  const int64_t before = memory::stats().allocated_bytes;
  memory::reset_peak_stats();
  BatchForm f;
  {
    const data::Example<> ex = set.get_batch(indices);
    f.data_sizes.assign(ex.data.sizes().begin() + 1, ex.data.sizes().end());
    f.target_sizes.assign(ex.target.sizes().begin() + 1, ex.target.sizes().end());
    f.data_dtype = ex.data.dtype();
    f.target_dtype = ex.target.dtype();
    f.bytes_per_example = static_cast<double>(ex.data.nbytes() + ex.target.nbytes()) / static_cast<double>(m);
  }
  f.build_peak_per_example = static_cast<double>(memory::stats().peak_allocated_bytes - before) / static_cast<double>(m);
  return f;
}

std::vector<int64_t> with_batch(int64_t b, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s = {b};
  s.insert(s.end(), sizes.begin(), sizes.end());
  return s;
}

// A stand-in of `bytes` bytes on `device` (the loader's batches in flight, on meta).
Tensor bytes_on(Device device, double bytes) {
  return empty({static_cast<int64_t>(std::ceil(bytes))}, TensorOptions().dtype(kUInt8).device(device));
}

}  // namespace

PlanInputs load_inputs(const TrainConfig& cfg, const Task& task) {
  PlanInputs in;
  memory::reset_peak_stats();
  in.d = task.load(cfg);
  in.loading_peak = memory::stats().peak_allocated_bytes;
  in.loaded = memory::stats();
  return in;
}

// The run of `cfg` on shapes alone (Note [What graft plan counts]).
Prediction predict(const TrainConfig& cfg, const Task& task, const PlanInputs& in, const RankSpec& rank) {
  const int64_t segments = cfg.checkpoint_segments;
  const TaskData& d = in.d;
  const memory::Stats& loaded = in.loaded;
  const int64_t batch = batch_size(cfg);
  const BatchForm form = batch_form(*d.train, batch);
  Prediction r;
  // The model and its optimiser on meta: nothing of them is allocated.
  nn::Sequential model = nullptr;
  {
    DefaultDeviceGuard on_meta(kMeta);
    model = make_model(cfg, task, d);
  }
  std::unique_ptr<optim::Optimizer> opt;
  optim::Optimizer* state = nullptr;  // the optimiser whose state memory::plan saves and restores
  PlannedRank ranked;                 // under mpirun: DDP and ZeRO (Note [Planning a rank])
  if (rank.distributed()) {
    memory::reset_peak_stats();
    ranked = plan_rank(cfg, model, rank);
    r.setup_peak = loaded.allocated_bytes + memory::stats(kMeta).peak_allocated_bytes;
    state = ranked.state;
  } else {
    opt = make_optimizer(cfg, model->parameters());
    state = opt.get();
  }
  optim::Optimizer* const stepped = rank.distributed() ? ranked.opt.get() : opt.get();
  std::optional<optim::StepInBackward> in_backward;  // as graft train attaches it
  if (cfg.step_in_backward) in_backward.emplace(*stepped);
  // The loader's other batches while a step runs (train.cpp's make_loader: cfg.workers threads, each
  // with `prefetch` batches ready or being built), never more than the epoch has left after the
  // first step's; under mpirun the epoch is the rank's share, ceil(examples / ranks).
  const int64_t workers = cfg.workers, prefetch = data::DataLoaderOptions(1).prefetch();
  const int64_t share = (d.train->size() + rank.world - 1) / rank.world;
  const int64_t batches = (share + batch - 1) / batch;
  const int64_t ahead = std::min(workers * prefetch, batches - 1), building = std::min(workers, ahead);
  double in_flight_per_example = static_cast<double>(ahead - building) * form.bytes_per_example +
                                 static_cast<double>(building) * form.build_peak_per_example;
  // A rank's: when the first step's batches in flight reach its share's last batch, that one (the
  // furthest ahead: being built) has only the examples left over (a share of 600 in batches of 500:
  // 100). Per example of the step's batch, so the planner's two probes scale it. One process keeps
  // a whole batch there: its --budget search extrapolates the plan to other batch sizes, which
  // moves the last batch (Note [Planning a rank] in plan_internal.h).
  const int64_t last = share - (batches - 1) * batch;
  if (rank.distributed() && building > 0 && ahead == batches - 1 && last < batch)
    in_flight_per_example -= static_cast<double>(batch - last) * form.build_peak_per_example / static_cast<double>(batch);
  const TensorOptions on_meta = TensorOptions().device(kMeta);

  // One step of graft train at the batch of x (Note [graft train's step]), with the loader's other
  // batches in flight.
  auto step = [&](const Tensor& x) {
    const int64_t b = x.size(0);
    const Tensor in_flight =
        in_flight_per_example > 0 ? bytes_on(x.device(), in_flight_per_example * static_cast<double>(b)) : Tensor();
    const Tensor target = zeros(with_batch(b, form.target_sizes), x.options().dtype(form.target_dtype));
    (void)TrainStep{model,    nullptr,           stepped,             nullptr,           nullptr,
                    segments, cfg.chunked_loss, cfg.step_in_backward, cfg.micro_batches,
                    cfg.selective_recompute ? CheckpointPolicy::kSaveMatmuls : CheckpointPolicy::kRecomputeAll}(x, target);
  };
  {
    memory::PlanOptions o;
    o.input_dtype = form.data_dtype;
    o.step = step;
    memory::Plan p = memory::plan(*model.ptr(), with_batch(batch, form.data_sizes), state, o);
    // The CPU's live bytes (the data set) are under every event of the step.
    for (memory::Plan::Line& l : p.lines)
      for (size_t k = 0; k < memory::kNumCategories; ++k) l.intercept[k] += static_cast<double>(loaded.by_category[k].current_bytes);
    p.baseline_bytes += loaded.allocated_bytes;
    const int64_t rounded = p.predicted_peak_rounded_bytes;
    r.step = p.at_batch_size(batch);
    r.step.predicted_peak_rounded_bytes = rounded + loaded.rounded_bytes;
  }
  // Evaluation, after an epoch's last step: its gradients and the optimiser state stay live.
  {
    step(zeros(with_batch(batch, form.data_sizes), on_meta.dtype(form.data_dtype)));
    const int64_t n = eval_examples(cfg, d.test->size());
    r.eval_batch = std::max<int64_t>(1, std::min(eval_batch_size(cfg, task.eval_chunk()), n));
    memory::reset_peak_stats();
    const int64_t steady = memory::stats(kMeta).allocated_bytes;
    for (size_t k = 0; k < memory::kNumCategories; ++k)
      r.between_steps[k] = memory::stats(kMeta).by_category[k].current_bytes;
    {
      NoGradGuard no_grad;
      model->eval();
      const Tensor x = zeros(with_batch(r.eval_batch, form.data_sizes), on_meta.dtype(form.data_dtype));
      const Tensor target =
          zeros(with_batch(r.eval_batch, form.target_sizes), on_meta.dtype(form.target_dtype)).reshape({-1});
      (void)eval_batch(model, x, target);  // as evaluate() runs it
      model->train();
    }
    const double build = form.build_peak_per_example * static_cast<double>(r.eval_batch);
    r.eval_peak = loaded.allocated_bytes +
                  std::max(memory::stats(kMeta).peak_allocated_bytes, steady + static_cast<int64_t>(std::ceil(build)));
  }
  r.run_peak = std::max({r.step.predicted_peak_bytes, in.loading_peak, r.eval_peak, r.setup_peak});
  return r;
}

// The modules checkpoint_sequential may split the model into: its top-level modules (counted on a
// meta model), less the output layer with --chunked-loss, which runs outside the segments.
int64_t segmentable_modules(const TrainConfig& cfg, const Task& task, const TaskData& d) {
  DefaultDeviceGuard on_meta(kMeta);
  return static_cast<int64_t>(task.build_model(cfg, d)->size()) - (cfg.chunked_loss ? 1 : 0);
}

namespace {

nlohmann::json between_steps_json(const Prediction& pred) {
  auto at = [&](memory::Category c) { return pred.between_steps[static_cast<size_t>(c)]; };
  return {{"parameters", at(memory::Category::Parameters)},
          {"gradients", at(memory::Category::Gradients)},
          {"optimizer_state", at(memory::Category::OptimizerState)}};
}

}  // namespace

PlanResult plan(const PlanConfig& pc, std::ostream& out) {
  TrainConfig cfg = with_defaults(pc.train);
  validate(cfg, "graft plan");
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
  // Each rank of an mpirun run (Note [Planning a rank]); DDP owns the forward and the gradients, so
  // graft train refuses there what changes them, and so does the plan.
  const bool ranked = RankSpec{pc.world_size, 0, pc.zero}.distributed();
  GRAFT_CHECK(!ranked || (cfg.checkpoint_segments == 0 && pc.checkpoint_segments == 0 && !cfg.chunked_loss &&
                          !cfg.step_in_backward && cfg.micro_batches == 1 && cfg.memory_budget.empty()),
              "graft plan --world-size/--zero",
              "none of --checkpoint-segments, --chunked-loss, --step-in-backward, --micro-batches and --memory-budget "
              "(one process's savings: DDP owns the forward and the gradients)",
              "one of them with --world-size " + std::to_string(pc.world_size) + " --zero " + std::to_string(pc.zero),
              "leave them out to plan each rank of an mpirun run");
  set_num_threads(cfg.threads > 0 ? cfg.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  manual_seed(cfg.seed);
  // The data set, loaded as graft train loads it: live through the whole run (Note [What graft plan counts]).
  const Task& task = task_for(cfg.model);
  const PlanInputs in = load_inputs(cfg, task);
  const TaskData& d = in.d;
  const int64_t loading_peak = in.loading_peak;
  const int64_t data_bytes = in.loaded[memory::Category::Data].current_bytes;
  if (!cfg.memory_budget.empty()) {  // --memory-budget: plan what graft train would choose
    const BudgetChoice choice = choose_for_budget(cfg, task, in, "graft plan");
    out << choice.summary;
    cfg = choice.config;
  }
  const int64_t batch = batch_size(cfg);
  if (pc.checkpoint_segments > 0) cfg.checkpoint_segments = pc.checkpoint_segments;
  // Under mpirun every rank, and the largest rank's plan is the run's.
  std::vector<RankRange> ranks;
  size_t largest = 0;
  if (ranked) {
    ranks = plan_ranks(cfg, task, in, pc.world_size, pc.zero);
    for (size_t i = 1; i < ranks.size(); ++i)
      if (ranks[i].pred.run_peak > ranks[largest].pred.run_peak) largest = i;
  }
  const Prediction pred = ranked ? ranks[largest].pred : predict(cfg, task, in);
  const memory::Plan& p = pred.step;
  const int64_t eval_peak = pred.eval_peak;
  auto plan_with = [&](int64_t segments) {
    TrainConfig with = cfg;
    with.checkpoint_segments = segments;
    return predict(with, task, in).step;
  };
  PlanResult r;
  r.batch_size = batch;
  r.predicted_peak_bytes = ranked ? pred.run_peak : std::max({p.predicted_peak_bytes, loading_peak, eval_peak});
  r.eval_peak_bytes = eval_peak;
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
      << " of it; loading peaks at " << memory::format_bytes(loading_peak) << "\n"
      << "  evaluation (" << pred.eval_batch << " of " << eval_examples(cfg, d.test->size())
      << " held-out examples at a time) peaks at "
      << memory::format_bytes(eval_peak) << "\n";
  if (ranked) {
    // Each rank's peak (Note [Planning a rank]); the table above is the largest rank's.
    auto bytes = [](int64_t b) { return memory::format_bytes(b); };
    auto named = [](const RankRange& rr) {
      return rr.first == rr.last ? "rank " + std::to_string(rr.first)
                                 : "ranks " + std::to_string(rr.first) + "-" + std::to_string(rr.last);
    };
    out << "per rank, " << pc.world_size << (pc.world_size == 1 ? " rank" : " ranks") << " (global batch "
        << pc.world_size * batch << ")" << (pc.zero > 0 ? ", ZeRO stage " + std::to_string(pc.zero) : std::string())
        << "; the table above is " << named(ranks[largest]) << "'s:\n";
    for (const RankRange& rr : ranks) {
      const auto& b = rr.pred.between_steps;
      out << "  " << named(rr) << ": peak " << bytes(rr.pred.run_peak) << " (training steps "
          << bytes(rr.pred.step.predicted_peak_bytes) << ", evaluation " << bytes(rr.pred.eval_peak)
          << "); between steps: parameters " << bytes(b[static_cast<size_t>(memory::Category::Parameters)])
          << ", gradients " << bytes(b[static_cast<size_t>(memory::Category::Gradients)]) << ", optimizer state "
          << bytes(b[static_cast<size_t>(memory::Category::OptimizerState)]) << "\n";
    }
  }
  out << "the run's peak" << (ranked ? " (its largest rank's)" : "") << ": " << memory::format_bytes(r.predicted_peak_bytes)
      << " (" << r.predicted_peak_bytes << " bytes; GRAFT_MEMORY_LIMIT=" << r.predicted_peak_bytes << " runs it)\n";
  nlohmann::json j = nlohmann::json::parse(p.json());
  j["predicted_peak_bytes"] = r.predicted_peak_bytes;
  j["data_bytes"] = data_bytes;
  j["loading_peak_bytes"] = loading_peak;
  j["eval_peak_bytes"] = eval_peak;
  j["step_peak_bytes"] = p.predicted_peak_bytes;
  if (!pc.budget.empty()) {
    r.budget_bytes = memory::parse_bytes(pc.budget);
    r.max_batch_size = std::max(loading_peak, eval_peak) <= r.budget_bytes ? p.max_batch_size(r.budget_bytes) : 0;
    const bool fits = r.predicted_peak_bytes <= r.budget_bytes;
    out << "budget " << memory::format_bytes(r.budget_bytes) << ": batch " << batch << (fits ? " fits" : " does not fit")
        << "; the largest " << (pc.accumulate > 1 ? "micro-batch" : "batch") << " that fits is " << r.max_batch_size;
    if (pc.accumulate > 1) out << " (effective batch " << r.max_batch_size * pc.accumulate << " with --accumulate " << pc.accumulate << ")";
    // No batch at all: say which phase that does not depend on the batch is over the budget.
    if (loading_peak > r.budget_bytes) out << " (loading the data set peaks at " << memory::format_bytes(loading_peak) << ")";
    else if (eval_peak > r.budget_bytes) out << " (evaluation peaks at " << memory::format_bytes(eval_peak) << ", whatever the batch)";
    out << "\n";
    if (!fits && cfg.checkpoint_segments == 0 && !ranked) {  // one process's: graft train refuses it under mpirun
      // Fewest checkpoint segments with which the requested batch fits.
      const int64_t modules = segmentable_modules(cfg, task, d);
      for (int64_t s = 2; s <= modules && r.segments_to_fit == 0; ++s)
        if (std::max({plan_with(s).predicted_peak_bytes, loading_peak, eval_peak}) <= r.budget_bytes) r.segments_to_fit = s;
      out << (r.segments_to_fit ? "with checkpoint_sequential, " + std::to_string(r.segments_to_fit) +
                                      " segments fit batch " + std::to_string(batch)
                                : "checkpointing does not make batch " + std::to_string(batch) + " fit either")
          << "\n";
    }
    j["budget_bytes"] = r.budget_bytes;
    j["max_batch_size"] = r.max_batch_size;
    j["segments_to_fit"] = r.segments_to_fit;
  }
  if (ranked) {
    // predicted_peak_bytes and the breakdown above are the largest rank's; each range of ranks has
    // its own figures (Note [Planning a rank]).
    int64_t step_peak = 0, eval_max = 0;
    nlohmann::json per = nlohmann::json::array();
    for (const RankRange& rr : ranks) {
      step_peak = std::max(step_peak, rr.pred.step.predicted_peak_bytes);
      eval_max = std::max(eval_max, rr.pred.eval_peak);
      per.push_back({{"first", rr.first},
                     {"last", rr.last},
                     {"peak_bytes", rr.pred.run_peak},
                     {"step_peak_bytes", rr.pred.step.predicted_peak_bytes},
                     {"eval_peak_bytes", rr.pred.eval_peak},
                     {"setup_peak_bytes", rr.pred.setup_peak},
                     {"between_steps", between_steps_json(rr.pred)}});
    }
    j["step_peak_bytes"] = step_peak;
    j["eval_peak_bytes"] = eval_max;
    j["world_size"] = pc.world_size;
    j["zero"] = pc.zero;
    j["ranks"] = per;
    j["per_rank_peak_bytes"] = r.predicted_peak_bytes;
    j["per_rank_between_steps"] = between_steps_json(ranks.front().pred);  // rank 0's
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
