// `graft plan` (plan.h).
#include "plan.h"

#include <graft/graft.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <ostream>
#include <thread>
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
Prediction predict(const TrainConfig& cfg, const Task& task, const PlanInputs& in) {
  const int64_t segments = cfg.checkpoint_segments;
  const TaskData& d = in.d;
  const memory::Stats& loaded = in.loaded;
  const int64_t batch = batch_size(cfg);
  const BatchForm form = batch_form(*d.train, batch);
  // The model and its optimiser on meta: nothing of them is allocated.
  nn::Sequential model = nullptr;
  {
    DefaultDeviceGuard on_meta(kMeta);
    model = make_model(cfg, task, d);
  }
  auto opt = make_optimizer(cfg, model->parameters());
  std::optional<optim::StepInBackward> in_backward;  // as graft train attaches it
  if (cfg.step_in_backward) in_backward.emplace(*opt);
  // The loader's other batches while a step runs (train.cpp's make_loader: cfg.workers threads, each
  // with `prefetch` batches ready or being built), never more than the epoch has left after the
  // first step's.
  const int64_t workers = cfg.workers, prefetch = data::DataLoaderOptions(1).prefetch();
  const int64_t batches = (d.train->size() + batch - 1) / batch;
  const int64_t ahead = std::min(workers * prefetch, batches - 1), building = std::min(workers, ahead);
  const double in_flight_per_example = static_cast<double>(ahead - building) * form.bytes_per_example +
                                       static_cast<double>(building) * form.build_peak_per_example;
  const TensorOptions on_meta = TensorOptions().device(kMeta);

  // One step of graft train at the batch of x (Note [graft train's step]), with the loader's other
  // batches in flight.
  auto step = [&](const Tensor& x) {
    const int64_t b = x.size(0);
    const Tensor in_flight =
        in_flight_per_example > 0 ? bytes_on(x.device(), in_flight_per_example * static_cast<double>(b)) : Tensor();
    const Tensor target = zeros(with_batch(b, form.target_sizes), x.options().dtype(form.target_dtype));
    (void)TrainStep{model,    nullptr,           opt.get(),           nullptr,           nullptr,
                    segments, cfg.chunked_loss, cfg.step_in_backward, cfg.micro_batches,
                    cfg.selective_recompute ? CheckpointPolicy::kSaveMatmuls : CheckpointPolicy::kRecomputeAll}(x, target);
  };
  Prediction r;
  {
    memory::PlanOptions o;
    o.input_dtype = form.data_dtype;
    o.step = step;
    memory::Plan p = memory::plan(*model.ptr(), with_batch(batch, form.data_sizes), opt.get(), o);
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
  r.run_peak = std::max({r.step.predicted_peak_bytes, in.loading_peak, r.eval_peak});
  return r;
}

// The modules checkpoint_sequential may split the model into: its top-level modules (counted on a
// meta model), less the output layer with --chunked-loss, which runs outside the segments.
int64_t segmentable_modules(const TrainConfig& cfg, const Task& task, const TaskData& d) {
  DefaultDeviceGuard on_meta(kMeta);
  return static_cast<int64_t>(task.build_model(cfg, d)->size()) - (cfg.chunked_loss ? 1 : 0);
}

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
  const Prediction pred = predict(cfg, task, in);
  const memory::Plan& p = pred.step;
  const int64_t eval_peak = pred.eval_peak;
  auto plan_with = [&](int64_t segments) {
    TrainConfig with = cfg;
    with.checkpoint_segments = segments;
    return predict(with, task, in).step;
  };
  PlanResult r;
  r.batch_size = batch;
  r.predicted_peak_bytes = std::max({p.predicted_peak_bytes, loading_peak, eval_peak});
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
      << memory::format_bytes(eval_peak) << "\n"
      << "the run's peak: " << memory::format_bytes(r.predicted_peak_bytes) << " (" << r.predicted_peak_bytes
      << " bytes; GRAFT_MEMORY_LIMIT=" << r.predicted_peak_bytes << " runs it)\n";
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
    if (!fits && cfg.checkpoint_segments == 0) {
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
