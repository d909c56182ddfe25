// `graft train`: the run (train.h). Its task (task.h) supplies the data, the model and the lines;
// config.cpp checks the flags, run_setup.cpp builds the optimiser and schedule, run_checkpoint.cpp
// saves and resumes, run_log.cpp writes the log. What is here: the loop over epochs and steps.
#include "train.h"

#include <graft/graft.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>


#include "plan.h"
#include "progress.h"
#include "rank_agreement.h"
#include "report.h"
#include "run_log.h"
#include "run_setup.h"
#include "task.h"
#include "train_step.h"

namespace graft::cli {
namespace {

namespace nn = graft::nn;
namespace F = graft::nn::functional;
namespace dist = graft::distributed;
namespace optim = graft::optim;

// Note [graft train under mpirun]
// Started by mpirun, each rank trains the same model (DistributedDataParallel broadcasts rank 0's
// weights and averages the gradients) on its shard of every epoch (DataLoaderOptions::distributed:
// every world_size-th example of the epoch's shuffled order), so the global batch is world_size x
// --batch-size. --zero 1 shards the optimiser state, --zero 2 the gradients too
// (ZeroRedundancyOptimizer). The epoch figures are the ranks' sums; rank 0 alone prints, logs,
// reports and writes the checkpoint, which holds the whole optimiser state as one process has it
// (ZeRO consolidates it first), so a run resumes in one process or at another world size; the
// per-batch schedules then continue at the same epoch. Compute threads default to the cores
// divided among the ranks of the machine. Every rank must be given the same flags that shape the
// run, and a resumed run the same checkpoint (Note [Ranks that agree] in rank_agreement.h).
struct Parallel {
  int world = 1, rank = 0;
  std::unique_ptr<nn::parallel::DistributedDataParallel<nn::Sequential>> ddp;
  optim::ZeroRedundancyOptimizer* zero = nullptr;
  bool monitored = false;  // --log or --report: rank 0 runs the gradient monitor
};

int64_t parameter_count(nn::Sequential& model) {
  int64_t n = 0;
  for (const Tensor& p : model->parameters()) n += p.numel();
  return n;
}

// Note [A last batch of one example]
// Batch norm cannot train on a batch of one example (issue 14, item 13: the run used to fail at the
// end of its first epoch, after all its work). When an epoch would end in one, the loader drops the
// last batch (drop_last; the shuffle picks different examples each epoch), and the run says so.
// Under mpirun what matters is each rank's shard, not the data set (issue 34, item 8): without
// drop_last, DataLoaderOptions::distributed gives every rank ceil(n / world) examples (the shuffled
// order padded with its first examples up to a multiple of world), so every rank's shard has the
// same size and ends in the same batch, and all ranks decide alike, as they must: DDP all-reduces
// at every step, so the ranks must make the same number of steps. With drop_last, each rank takes
// floor(n / world) examples and leaves out its last short batch.
struct LastBatch {
  int64_t shard = 0;     // the examples each rank's epoch would have without drop_last
  bool drop = false;     // the epoch would end in a batch of 1 example under batch norm: drop_last
  int64_t left_out = 0;  // with drop: the examples each epoch leaves out, over all ranks
};

LastBatch last_batch(const TrainConfig& cfg, const Task& task, int64_t n, int world) {
  LastBatch lb;
  lb.shard = world == 1 ? n : (n + world - 1) / world;
  const int64_t bs = batch_size(cfg);
  lb.drop = task.needs_two_examples_per_batch(cfg) && lb.shard > 1 && lb.shard % bs == 1;
  if (lb.drop) {
    const int64_t kept_per_rank = (world == 1 ? n : n / world) / bs * bs;
    lb.left_out = n - kept_per_rank * world;
  }
  return lb;
}

data::DataLoader make_loader(const TrainConfig& cfg, const Task& task, const TaskData& d, const Parallel& par) {
  const int64_t n = d.train->size();
  const LastBatch lb = last_batch(cfg, task, n, par.world);
  if (par.world == 1)
    GRAFT_CHECK(!(task.needs_two_examples_per_batch(cfg) && n == 1), "graft train --batch-norm",
                "at least 2 training examples (batch norm needs more than one value per channel)", "1 example",
                "raise --train-limit, or use --no-batch-norm");
  else  // every rank decides alike (the same n and world): all throw together
    GRAFT_CHECK(!(task.needs_two_examples_per_batch(cfg) && lb.shard == 1), "graft train --batch-norm",
                "at least 2 training examples per rank (batch norm needs more than one value per channel)",
                "1 example per rank (" + std::to_string(n) + " examples over " + std::to_string(par.world) + " ranks)",
                "raise --train-limit to at least " + std::to_string(par.world + 1) +
                    ", run fewer ranks, or use --no-batch-norm");
  return data::DataLoader(d.train,
                          data::DataLoaderOptions(batch_size(cfg))
                              .shuffle(true)
                              .seed(cfg.seed)
                              .drop_last(lb.drop)
                              .num_workers(cfg.workers)
                              .distributed(par.world, par.rank));
}

// Resumes from --resume (returning the epochs it had finished), or announces a new run (0).
int64_t resume_or_announce(const TrainConfig& cfg, const Task& task, const TaskData& d, RunState& state,
                           int64_t batches_per_epoch, Progress& progress) {
  if (!cfg.resume.empty()) {
    // Under mpirun every rank loads the file, then all compare what they loaded (Note [Ranks that agree]).
    const int64_t first_epoch = load_on_every_rank("--resume", cfg.resume, *state.model.ptr(), state.world, [&] {
      return resume_run(cfg, task, state, batches_per_epoch);
    });
    progress.message("resumed from " + cfg.resume + " after epoch " + std::to_string(first_epoch));
    return first_epoch;
  }
  progress.message("graft train: " + cfg.model + " on " + d.what + ", " + std::to_string(parameter_count(state.model)) +
                   " parameters, " + cfg.optimizer + ", " + std::to_string(get_num_threads()) + " threads" +
                   (state.world > 1 ? " per rank, " + std::to_string(state.world) + " ranks (global batch " +
                                          std::to_string(state.world * batch_size(cfg)) + ")" +
                                          (state.zero ? ", ZeRO stage " + std::to_string(cfg.zero) : "")
                                    : std::string()));
  if (!cfg.init_from.empty()) progress.message("weights from " + cfg.init_from + " (--init-from)");
  const LastBatch lb = last_batch(cfg, task, d.train->size(), state.world);
  if (lb.drop && state.world == 1)
    progress.message("batch norm cannot train on a last batch of 1 example: each epoch leaves one example out");
  else if (lb.drop)
    progress.message("batch norm cannot train on a last batch of 1 example: each rank's share of an epoch (" +
                     std::to_string(lb.shard) + " examples) would end in one, so each epoch leaves " +
                     std::to_string(lb.left_out) + " examples out");
  return 0;
}

// What one epoch's training steps add up to.
struct EpochSums {
  double loss_sum = 0;
  int64_t seen = 0, correct = 0;  // predictions: images, or bytes of text
  double seconds = 0;             // of the training steps (no evaluation, no checkpoint)
};

// The epoch loop and the final report over the pieces train() builds; it also owns what watches
// the run for the log: the gradient monitor and the memory timeline.
class Run {
 public:
  Run(const TrainConfig& cfg, const Task& task, const TaskData& d, RunState& state, data::DataLoader& loader,
      Progress& progress, RunLog& log, TrainResult& result, Parallel& par)
      : par_(par),
        cfg_(cfg),
        task_(task),
        d_(d),
        state_(state),
        model_(state.model),
        opt_(state.opt),
        loader_(loader),
        progress_(progress),
        log_(log),
        result_(result) {}
  // A run that ends in an error (a non-finite loss) stops the memory history it started: the
  // process's next run or plan must not find it still recording.
  ~Run() {
    if (recording_) memory::record_history(false);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // With a run log: gradient health (Note [Gradient monitor]) and, for the first steps, the
  // allocation events (Note [Memory history]) go into it.
  void watch(int64_t first_epoch) {
    if (!log_.enabled()) return;
    const int64_t every = std::max<int64_t>(1, cfg_.monitor_every);
    monitor_.emplace(*model_.ptr(), diagnostics::GradMonitorOptions{.every = every, .optimizer = &opt_});
    log_.add_monitor(*model_.ptr(), every);
    memory::set_step(first_epoch * loader_.size());
    memory::record_history(true, 500000);
    recording_ = true;
  }

  // The epochs [first_epoch, last_epoch): train, evaluate, checkpoint, log.
  void epochs(int64_t first_epoch, int64_t last_epoch) {
    // The peak of the training steps alone (what graft plan predicts), apart from evaluation's.
    overall_peak_ = overall_reserved_peak_ = 0;
    note_peaks();
    model_->train();
    for (int64_t epoch = first_epoch; epoch < last_epoch; ++epoch) {
      memory::reset_peak_stats();
      const auto e0 = std::chrono::steady_clock::now();
      const EpochSums sums = train_epoch(epoch);
      end_epoch(epoch, sums, e0);
    }
  }

  // Final accuracy, memory and timing; the report, the log's result record and --json.
  void finish(int64_t first_epoch, int64_t last_epoch, std::chrono::steady_clock::time_point t0, std::ostream& out);

 private:
  EpochSums train_epoch(int64_t epoch);
  void end_epoch(int64_t epoch, const EpochSums& sums, std::chrono::steady_clock::time_point e0);
  // The held-out loss and accuracy; a non-finite loss is an error, before anything is saved or
  // printed: a run that diverges in its last step trained on finite losses, yet its weights make
  // every forward pass NaN (issue 34, item 4). `when`: " at epoch 3", for the message.
  Evaluation evaluate_model(const std::string& when) {
    const Evaluation ev = evaluate(model_, *d_.test, eval_batch_size(cfg_, task_.eval_chunk()),
                                   eval_examples(cfg_, d_.test->size()));
    GRAFT_CHECK(std::isfinite(ev.loss), "graft train", "a finite held-out (test) loss", std::to_string(ev.loss) + when,
                task_.divergence_hint(cfg_));
    return ev;
  }
  void log_timeline() {
    log_.add_timeline();
    recording_ = false;
  }

  static constexpr int64_t kTimelineSteps = 3;  // steps of allocation events in the timeline

  Parallel& par_;

  const TrainConfig& cfg_;
  const Task& task_;
  const TaskData& d_;
  RunState& state_;
  nn::Sequential& model_;
  optim::Optimizer& opt_;
  data::DataLoader& loader_;
  Progress& progress_;
  RunLog& log_;
  TrainResult& result_;
  std::optional<diagnostics::GradMonitor> monitor_;
  bool recording_ = false;  // memory history is on
  int64_t overall_peak_ = 0, overall_reserved_peak_ = 0;  // since the data was loaded, across the per-epoch resets
  void note_peaks() {
    const memory::Stats st = memory::stats();
    overall_peak_ = std::max(overall_peak_, st.peak_allocated_bytes);
    overall_reserved_peak_ = std::max(overall_reserved_peak_, st.peak_reserved_bytes);
  }
};

EpochSums Run::train_epoch(int64_t epoch) {
  loader_.set_epoch(epoch);
  progress_.start_epoch(epoch + 1, cfg_.epochs, loader_.size());
  EpochSums sums;
  int64_t batches = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& batch : loader_) {
    const int64_t step = epoch * loader_.size() + batches;  // 0-based, counted over the whole run
    memory::set_step(step);
    // ZeRO stage 2 keeps only shards of the gradients: a sampled step gathers them for the monitor,
    // whose figures are then the global (averaged) gradients, as with DDP.
    // (Every rank gathers: only rank 0 has the monitor.)
    const bool gather = par_.monitored && par_.zero && cfg_.zero == 2 && step % std::max<int64_t>(1, cfg_.monitor_every) == 0;
    TrainStep train_step{model_,  par_.ddp.get(),           &opt_,           nullptr,
                         nullptr, cfg_.checkpoint_segments, cfg_.chunked_loss, cfg_.step_in_backward,
                         cfg_.micro_batches,
                         cfg_.selective_recompute ? CheckpointPolicy::kSaveMatmuls : CheckpointPolicy::kRecomputeAll};
    if (gather || monitor_)
      train_step.after_backward = [&] {
        if (gather) par_.zero->gather_gradients();
        if (monitor_) monitor_->after_backward(step);
        if (gather) par_.zero->release_gathered_gradients();
      };
    if (monitor_)
      train_step.after_step = [&] {
        monitor_->after_step();
        log_.add_grad_records(*monitor_);
      };
    const StepResult r = train_step(batch.data, batch.target);  // Note [graft train's step]
    state_.sched.after_batch();
    const double l = r.loss.item<double>();  // a number, not a tensor: no graph is kept alive
    GRAFT_CHECK(std::isfinite(l), "graft train", "a finite training loss",
                std::to_string(l) + " at epoch " + std::to_string(epoch + 1), task_.divergence_hint(cfg_));
    sums.correct += r.correct.item<int64_t>();
    const int64_t n = batch.target.numel();  // predictions: images, or bytes of text
    sums.loss_sum += l * static_cast<double>(n);
    sums.seen += n;
    ++batches;
    progress_.batch_done(l, n);
    if (recording_ && batches >= kTimelineSteps) log_timeline();
    log_.add_step(step, epoch + 1, l, current_lr(opt_));
  }
  sums.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sums;
}

// After an epoch's steps: its peaks, the evaluation, the schedule's epoch step, the checkpoint, the
// progress line and the log's records.
void Run::end_epoch(int64_t epoch, const EpochSums& rank_sums, std::chrono::steady_clock::time_point e0) {
  EpochSums sums = rank_sums;
  if (par_.world > 1) {  // the epoch over every rank's shard
    Tensor t = tensor<double>({sums.loss_sum, static_cast<double>(sums.seen), static_cast<double>(sums.correct)},
                              TensorOptions().dtype(kFloat64));
    dist::all_reduce(t);
    sums.loss_sum = t.data_ptr<double>()[0];
    sums.seen = static_cast<int64_t>(t.data_ptr<double>()[1]);
    sums.correct = static_cast<int64_t>(t.data_ptr<double>()[2]);
  }
  result_.peak_train_memory_bytes = std::max(result_.peak_train_memory_bytes, memory::stats().peak_allocated_bytes);
  note_peaks();
  EpochRecord r;
  r.epoch = epoch + 1;
  r.train_loss = sums.loss_sum / static_cast<double>(std::max<int64_t>(sums.seen, 1));
  r.train_accuracy = static_cast<double>(sums.correct) / static_cast<double>(std::max<int64_t>(sums.seen, 1));
  r.lr = current_lr(opt_);
  r.examples_per_second = static_cast<double>(sums.seen) / std::max(sums.seconds, 1e-9);
  const Evaluation ev = evaluate_model(" at epoch " + std::to_string(epoch + 1));
  r.test_loss = ev.loss;
  r.test_accuracy = ev.accuracy;
  state_.sched.after_epoch(r.train_loss);
  if (!cfg_.save.empty()) save_run(cfg_, task_, state_, epoch + 1);
  note_peaks();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
  progress_.end_epoch(task_.epoch_line(cfg_, r));
  result_.history.push_back(r);
  log_.add_epoch(r, (epoch + 1) * loader_.size() - 1);
  if (recording_) log_timeline();
  log_.add_memory(epoch + 1);
  log_.flush();
}

void Run::finish(int64_t first_epoch, int64_t last_epoch, std::chrono::steady_clock::time_point t0, std::ostream& out) {
  TrainResult& result = result_;
  result.epochs = std::max(first_epoch, last_epoch);
  if (!result.history.empty()) {
    result.train_loss = result.history.back().train_loss;
    result.test_accuracy = result.history.back().test_accuracy;
    result.test_loss = result.history.back().test_loss;
  } else {  // resumed a finished run: report its model
    const Evaluation ev = evaluate_model(" in " + cfg_.resume);
    result.test_accuracy = ev.accuracy;
    result.test_loss = ev.loss;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    const memory::Stats st = memory::stats();
    result.peak_memory_bytes = std::max(overall_peak_, st.peak_allocated_bytes);
    result.peak_reserved_bytes = std::max(overall_reserved_peak_, st.peak_reserved_bytes);
    for (int i = 0; i < memory::kNumCategories; ++i) {
      const auto c = static_cast<memory::Category>(i);
      result.peak_memory_by_category[memory::category_name(c)] = st[c].peak_bytes;
    }
    result.peak_rss_bytes = peak_resident_bytes();
  }
  // Every rank's peaks for rank 0's --json, gathered after they were read (the gather's tensors are in none).
  const Tensor mine = tensor<int64_t>({result.peak_memory_bytes, result.peak_train_memory_bytes}, TensorOptions().dtype(kInt64));
  const Tensor gathered = par_.world > 1 ? empty({2 * par_.world}, TensorOptions().dtype(kInt64)) : mine;
  if (par_.world > 1) dist::all_gather_into_tensor(gathered, mine);
  for (int64_t i = 0; i < 2 * par_.world; i += 2) {
    result.rank_peak_memory_bytes.push_back(gathered.data_ptr<int64_t>()[i]);
    result.rank_peak_train_memory_bytes.push_back(gathered.data_ptr<int64_t>()[i + 1]);
  }
  progress_.message(task_.result_line(result));
  {
    std::istringstream table(memory::memory_summary());  // where the bytes went (Note [Memory categories])
    for (std::string line; std::getline(table, line);) progress_.message(line);
  }
  if (par_.world > 1) {  // each rank's share (ZeRO: the optimiser state, and the gradients at stage 2)
    const memory::Stats st = memory::stats();
    auto cat = [&](memory::Category c) { return memory::format_bytes(st[c].current_bytes); };
    const std::string mine = "rank " + std::to_string(par_.rank) + ": parameters " + cat(memory::Category::Parameters) +
                             ", gradients " + cat(memory::Category::Gradients) + ", optimizer state " +
                             cat(memory::Category::OptimizerState) + ", peak " + memory::format_bytes(st.peak_allocated_bytes);
    for (const std::string& line : dist::detail::all_gather_strings(mine)) progress_.message(line);
  }
  if (log_.enabled()) {
    nlohmann::json res = nlohmann::json::parse(result_json(cfg_, result));
    res["type"] = "result";
    log_.add(res);
    log_.flush();
  }
  if (!cfg_.report.empty()) {
    // With --log the file holds the whole run (also the epochs before a resume); else this process's lines.
    if (!cfg_.log.empty()) write_report(cfg_.log, cfg_.report);
    else write_report_lines(log_.lines(), cfg_.report);
    progress_.message("wrote " + cfg_.report);
  }
  if (cfg_.json) out << result_json(cfg_, result) << '\n' << std::flush;
}

}  // namespace

TrainResult train(const TrainConfig& config, std::ostream& rank0_out) {
  TrainConfig cfg = with_defaults(config);
  validate(cfg);
  const Task& task = task_for(cfg.model);
  const auto t0 = std::chrono::steady_clock::now();
  // Under mpirun: see Note [graft train under mpirun] above.
  if (!dist::is_initialized()) dist::init_process_group();
  Parallel par;
  par.world = dist::get_world_size();
  par.rank = dist::get_rank();
  par.monitored = !cfg.log.empty() || !cfg.report.empty();
  std::ostream silent(nullptr);
  std::ostream& out = par.rank == 0 ? rank0_out : silent;
  // Before anything is loaded: ranks given different flags stop here, all of them (Note [Ranks that agree]).
  check_ranks_agree(cfg);
  if (par.rank != 0) {  // rank 0 speaks for the run
    cfg.log.clear();
    cfg.report.clear();
    cfg.json = false;
    cfg.progress = "none";
  }
  // --memory-budget: plan first (on shapes alone), run what fits, and hold the run to the budget.
  std::optional<BudgetChoice> budget;
  if (!cfg.memory_budget.empty()) {
    budget = fit_memory_budget(cfg, "graft train");
    cfg = budget->config;
  }
  const LimitGuard limit(budget ? budget->limit_bytes : memory::stats().limit_bytes);
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (par.world > 1)
    if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
      threads = std::max(1, threads / std::max(1, std::atoi(local)));
  set_num_threads(cfg.threads > 0 ? cfg.threads : threads);
  manual_seed(cfg.seed);

  // Data, then the model and its optimiser and schedule; the reported peak counts from the loading on.
  memory::reset_peak_stats();
  const TaskData d = task.load(cfg);
  nn::Sequential model = make_model(cfg, task, d);
  if (!cfg.init_from.empty())  // before DDP's broadcast and the optimiser (Note [Starting from a state dict])
    load_on_every_rank("--init-from", cfg.init_from, *model.ptr(), par.world, [&] {
      load_init_from(cfg, *model.ptr());
      return int64_t{0};
    });
  std::unique_ptr<optim::Optimizer> opt;
  GRAFT_CHECK(par.world == 1 || (cfg.checkpoint_segments == 0 && !cfg.chunked_loss && !cfg.step_in_backward &&
                                  cfg.micro_batches == 1),
              "graft train", "one process with --checkpoint-segments, --chunked-loss, --step-in-backward or --micro-batches (DDP owns the "
              "forward and the gradients)", std::to_string(par.world) + " ranks", "leave them out under mpirun");
  if (par.world > 1 || cfg.zero > 0) {  // --zero in one process: one shard, the whole state
    par.ddp = std::make_unique<nn::parallel::DistributedDataParallel<nn::Sequential>>(model);
    if (cfg.zero > 0) {
      auto zero = std::make_unique<optim::ZeroRedundancyOptimizer>(
          par.ddp->parameters(), [&](std::vector<Tensor> p) { return make_optimizer(cfg, p); },
          optim::ZeroRedundancyOptions().stage(cfg.zero), &par.ddp->reducer());
      par.zero = zero.get();
      opt = std::move(zero);
    }
  }
  if (!opt) opt = make_optimizer(cfg, model->parameters());
  std::optional<optim::StepInBackward> in_backward;  // --step-in-backward (Note [Optimizer step in backward])
  if (cfg.step_in_backward) in_backward.emplace(*opt);
  data::DataLoader loader = make_loader(cfg, task, d, par);
  Schedule sched = make_schedule(cfg, *opt, loader.size());
  RunState state{model, *opt, par.zero, sched, par.world, par.rank};

  // Resume, or start; the log and what watches the run.
  Progress progress(out, Progress::style_for(cfg.progress, out));
  if (budget) progress.message(budget->summary.substr(0, budget->summary.size() - 1));
  const int64_t first_epoch = resume_or_announce(cfg, task, d, state, loader.size(), progress);
  if (cfg.eval_limit > 0)
    progress.message("evaluating on the first " + std::to_string(eval_examples(cfg, d.test->size())) + " of " +
                     std::to_string(d.test->size()) + " held-out examples");
  TrainResult result;
  result.parameters = parameter_count(model);
  result.world_size = par.world;
  RunLog log(cfg, !cfg.resume.empty());
  if (cfg.resume.empty()) log.add_run(cfg, result.parameters);
  const int64_t last_epoch = cfg.stop_after > 0 ? std::min(cfg.epochs, first_epoch + cfg.stop_after) : cfg.epochs;
  Run run(cfg, task, d, state, loader, progress, log, result, par);
  run.watch(first_epoch);

  run.epochs(first_epoch, last_epoch);
  run.finish(first_epoch, last_epoch, t0, out);
  return result;
}

std::string result_json(const TrainConfig& cfg, const TrainResult& r) {
  nlohmann::json j = {{"test_accuracy", r.test_accuracy},
                      {"test_loss", r.test_loss},
                      {"train_loss", r.train_loss},
                      {"epochs", r.epochs},
                      {"seconds", r.seconds},
                      {"peak_memory_bytes", r.peak_memory_bytes},
                      {"peak_memory_by_category", r.peak_memory_by_category},
                      {"peak_train_memory_bytes", r.peak_train_memory_bytes},
                      {"rank_peak_memory_bytes", r.rank_peak_memory_bytes},
                      {"rank_peak_train_memory_bytes", r.rank_peak_train_memory_bytes},
                      {"peak_rss_bytes", r.peak_rss_bytes},
                      {"peak_reserved_bytes", r.peak_reserved_bytes},
                      {"parameters", r.parameters},
                      {"model", cfg.model},
                      {"optimizer", cfg.optimizer},
                      {"batch_size", batch_size(cfg)},  // per rank
                      {"world_size", r.world_size},
                      {"global_batch_size", r.world_size * batch_size(cfg)},
                      {"seed", cfg.seed}};
  if (!r.history.empty()) j["examples_per_second"] = r.history.back().examples_per_second;
  task_for(cfg.model).add_result_fields(cfg, r, j);
  return j.dump();
}

}  // namespace graft::cli
