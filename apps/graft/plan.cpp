// `graft plan` (plan.h).
#include "plan.h"

#include <graft/graft.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <ostream>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

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

std::string joined_choices(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
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

// What every plan of one data set stands on: the data, loaded once (a budget's search plans many
// configurations of it), and what loading it cost.
struct PlanInputs {
  TaskData d;
  int64_t loading_peak = 0;
  memory::Stats loaded;  // the CPU's counters after loading: the data set, live through the run
};

PlanInputs load_inputs(const TrainConfig& cfg, const Task& task) {
  PlanInputs in;
  memory::reset_peak_stats();
  in.d = task.load(cfg);
  in.loading_peak = memory::stats().peak_allocated_bytes;
  in.loaded = memory::stats();
  return in;
}

struct Prediction {
  memory::Plan step;        // the training step's, the data set included
  int64_t eval_peak = 0;    // evaluation's
  int64_t eval_batch = 0;   // held-out examples per evaluation batch
  int64_t run_peak = 0;     // the most of the step's, the loading's and evaluation's
};

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
    (void)TrainStep{model, nullptr, opt.get(), nullptr, nullptr, segments, cfg.chunked_loss, cfg.step_in_backward}(x, target);
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

// Note [The program's share of a budget]
// --memory-budget is the memory the process may use, what a user reads as its resident size (top's
// RES, a container's limit), not its tensors alone. The program keeps a share of it: its code and
// libraries, the memory it holds beside tensors (the text or image files as read, the graph's nodes,
// OpenBLAS's buffers), measured here as the resident bytes (/proc/self/statm) less the CPU
// allocator's (memory::Stats::reserved_bytes) once the data set is loaded, plus kGrowth and
// kGrowthPerThread for each compute thread: what the run adds beside tensors as it trains
// (OpenBLAS's buffers, the engine's, the heap's), measured as the peak resident size less the
// allocator's peak on issue 31's GPT and the text models at 1 and 2 threads: 9 to 12 MiB, a MiB
// more at 2 threads (BENCHMARKS.md, "Training in a memory budget"). Loading the data set has a peak
// of its own beside its tensors (an IDX file is read whole before its images are converted):
// measured as this process's peak resident size once the plan has loaded the data set, it must fit
// the budget too. The tensors get the rest: the plan must fit it, and the memory limit is set to it, which
// bounds the cached blocks too (Note [The cache under a limit] in src/core/storage.cpp): at the
// plan's peak and its headroom, so that the cache does not fill the rest of the share. A library
// caller sets TrainConfig::memory_budget_program to give the share itself (0: the budget is the
// tensors').
constexpr int64_t kGrowth = int64_t{12} << 20, kGrowthPerThread = int64_t{2} << 20;

}  // namespace

int64_t peak_resident_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

namespace {

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
//   7. recomputing the whole forward in backward, by segments (--checkpoint-segments: the fewest
//      that fit, or those with the lowest peak; about a third more time, the same numbers).
// The batch size, the model and the optimiser stay the user's: when nothing fits, the error says
// so before anything is trained, with the smallest budget that would fit (every saving taken).
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
    const int64_t loading = peak_resident_bytes();  // this process's peak so far: the plan's loading of the data
    GRAFT_CHECK(loading <= whole, command + " --memory-budget",
                "a budget above the peak of loading the data set (" + memory::format_bytes(loading) +
                    " resident: the files as read beside their tensors)",
                memory::format_bytes(whole), "--memory-budget " + std::to_string(loading) + " or more, or less data");
  }
  // 1% of the tensors' share is headroom: the plan on shapes alone is exact to the byte on
  // graft_plan_holds' runs, yet an op whose meta path allocates otherwise than its CPU path would
  // end the run (one was found: 1.5 KiB with --step-in-backward on a 12 x 12-image cnn).
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
  // 7. Recomputing the forward by segments (checkpoint_sequential): the fewest segments that fit.
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
