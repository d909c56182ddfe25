// `graft train`'s defaults and configuration checks (config.h); the model's own are its task's.
#include "config.h"

#include <graft/graft.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "paths.h"
#include "task.h"

namespace graft::cli {
namespace {

std::string joined(const std::vector<std::string>& allowed) {
  std::string s;
  for (const std::string& a : allowed) s += (s.empty() ? "" : " | ") + a;
  return s;
}

// The largest values the numeric flags accept (issue 14, item 11): beyond them a count overflows
// int64 arithmetic somewhere (steps = epochs x batches, the effective batch = batch x accumulate,
// a plan's bytes = batch x features x 4), or the value is a typo no run needs.
constexpr int64_t kMaxBatchSize = int64_t{1} << 24;  // 16,777,216 examples
constexpr int64_t kMaxEpochs = 1000000;
constexpr int64_t kMaxWorkers = 64;

// Bounds of the numeric flags, before anything is computed from them.
void check_bounds(const TrainConfig& c, const Task& task, const std::string& command) {
  auto in_range = [&](const char* flag, int64_t v, int64_t lo, int64_t hi, const std::string& hint) {
    GRAFT_CHECK(v >= lo && v <= hi, command + " " + flag,
                "a value in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", std::to_string(v), hint);
  };
  GRAFT_CHECK(c.batch_size >= 0 && c.batch_size <= kMaxBatchSize, command + " --batch-size",
              "a positive batch size of at most " + std::to_string(kMaxBatchSize) + " (or 0 for the model's default)",
              std::to_string(c.batch_size), "128 is a good start");
  in_range("--epochs", c.epochs, 1, kMaxEpochs, "5 epochs reach the README's accuracy");
  in_range("--step-size", c.step_size, 1, kMaxEpochs, "decay every few epochs, e.g. --step-size 2");
  in_range("--stop-after", c.stop_after, 0, kMaxEpochs, "0 runs to --epochs");
  in_range("--monitor-every", c.monitor_every, 1, std::numeric_limits<int64_t>::max(),
           "1 samples every step; 10 every tenth");
  check_threads(command, c.threads);
  in_range("--workers", c.workers, 0, kMaxWorkers, "1 prepares the next batch in the background");
  in_range("--checkpoint-segments", c.checkpoint_segments, 0, 1024, "about the square root of the model's modules");
  in_range("--micro-batches", c.micro_batches, 1, int64_t{1} << 24, "1 runs each batch whole");
  in_range("--eval-limit", c.eval_limit, 0, std::numeric_limits<int64_t>::max(), "0 evaluates every held-out example");
  in_range("--eval-batch-size", c.eval_batch_size, 0, kMaxBatchSize, "0 is the model's (1000 images, 64 windows)");
  auto finite = [&](const char* flag, double v) {
    GRAFT_CHECK(std::isfinite(v), command + " " + flag, "a finite number", std::to_string(v), "");
  };
  finite("--momentum", c.momentum);
  finite("--weight-decay", c.weight_decay);
  finite("--gamma", c.gamma);
  finite("--dropout", c.dropout);
  // Batch norm over a batch of one example has no variance to normalise with (PyTorch raises
  // "Expected more than 1 value per channel when training"). The mlp's BatchNorm1d sees one value per
  // channel and example; the cnn's BatchNorm2d sees H x W per example, so a batch of 1 works there.
  GRAFT_CHECK(!(task.needs_two_examples_per_batch(c) && c.batch_size == 1), command + " --batch-norm",
              "a batch of at least 2 examples (batch norm needs more than one value per channel)", "--batch-size 1",
              "use --batch-size 2 or more, or --no-batch-norm");
}

// "<command> <flag>: one of a | b | c", unless `value` is one of `allowed`.
void check_choice(const std::string& command, const char* flag, const std::string& value,
                  const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
    throw Error(command + " " + flag, "one of " + joined(allowed), "'" + value + "'", "see " + command + " --help");
}

}  // namespace

int max_threads() {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return 4 * cores;
}

void check_threads(const std::string& command, int64_t threads) {
  GRAFT_CHECK(threads >= 0 && threads <= max_threads(), command + " --threads",
              "a value in [0, " + std::to_string(max_threads()) + "]", std::to_string(threads),
              "at most 4 threads per core (" + std::to_string(max_threads() / 4) + " cores here); 0 uses every core");
}

// Note [Flags a model does not read]
// The image models (mlp, cnn) read none of the text models' shape flags (--context, --width,
// --depth, --heads, --checkpoint-attention), and the text models (gpt, lstm) none of the image
// models' --batch-norm, --init and --classes. Such a flag used to be ignored without a word (issue 34,
// item 11): `graft train --model mlp --width 512` trained the default MLP. Each task's check_flags
// refuses the other's flags instead, under graft train and graft plan alike (both validate()).
// "Given" is what CLI11 counted (TrainConfig::given_flags, so --init default is refused too); a
// library caller's configuration has no such set, and there a value other than the default counts.
bool flag_set(const TrainConfig& c, const std::string& flag) {
  if (c.given_flags.count(flag)) return true;
  static const TrainConfig d;
  if (flag == "--context") return c.context != d.context;
  if (flag == "--width") return c.width != d.width;
  if (flag == "--depth") return c.depth != d.depth;
  if (flag == "--heads") return c.heads != d.heads;
  if (flag == "--checkpoint-attention") return c.checkpoint_attention != d.checkpoint_attention;
  if (flag == "--batch-norm") return c.batch_norm != d.batch_norm;
  if (flag == "--init") return c.init != d.init;
  if (flag == "--classes") return c.classes != d.classes;
  throw Error("flag_set", "a flag one kind of model refuses", "'" + flag + "'", "a bug in graft's command line");
}

void refuse_flags(const TrainConfig& c, const std::string& command, const std::vector<std::string>& flags,
                  const std::string& whose) {
  for (const std::string& flag : flags)
    GRAFT_CHECK(!flag_set(c, flag), command + " " + flag,
                "no " + flag + " with --model " + c.model + " (" + flag + " is one of " + whose + " flags)",
                flag + " given", "leave " + flag + " out: --model " + c.model + " does not read it");
}

int64_t default_batch_size(const std::string& model) { return task_for(model).default_batch_size(); }

std::string default_optimizer(const std::string& model) { return task_for(model).default_optimizer(); }

int64_t default_epochs(const std::string& model) { return task_for(model).default_epochs(); }

TrainConfig with_defaults(TrainConfig c) {
  if (c.optimizer.empty()) c.optimizer = default_optimizer(c.model);
  if (c.epochs == 0) c.epochs = default_epochs(c.model);
  return c;
}

int64_t batch_size(const TrainConfig& c) { return c.batch_size > 0 ? c.batch_size : default_batch_size(c.model); }

int64_t eval_examples(const TrainConfig& c, int64_t available) {
  return c.eval_limit > 0 ? std::min(c.eval_limit, available) : available;
}

int64_t eval_batch_size(const TrainConfig& c, int64_t task_default) {
  return c.eval_batch_size > 0 ? c.eval_batch_size : task_default;
}

double default_lr(const std::string& optimizer) {
  if (optimizer == "sgd") return 0.05;
  if (optimizer == "adagrad") return 0.01;
  return 1e-3;  // adam, adamw, rmsprop
}

void validate(const TrainConfig& config, const std::string& command) {
  const Task& task = task_for(config.model);  // an unknown --model first: the defaults are its task's
  const TrainConfig c = with_defaults(config);
  check_bounds(c, task, command);
  if (!c.optimizer.empty())
    check_choice(command, "--optimizer", c.optimizer, {"sgd", "adam", "adamw", "rmsprop", "adagrad"});
  task.check_flags(c, command);
  GRAFT_CHECK(!c.checkpoint_attention || task.has_attention(), command + " --checkpoint-attention", "--model gpt",
              "--model " + c.model, "only the Transformer has attention to recompute");
  check_choice(command, "--optimizer-state", c.optimizer_state, {"float32", "bfloat16", "int8"});
  GRAFT_CHECK(c.optimizer_state == "float32" || c.optimizer == "adam" || c.optimizer == "adamw" || c.optimizer == "sgd",
              command + " --optimizer-state", "--optimizer adam, adamw or sgd (the optimisers with compact state)",
              "--optimizer " + c.optimizer, "leave --optimizer-state out, or use adam, adamw or sgd");
  // The gradient monitor reads every gradient after backward; with the step inside backward they are
  // gone by then (Note [Optimizer step in backward]).
  GRAFT_CHECK(!c.step_in_backward || (c.log.empty() && c.report.empty()), command + " --step-in-backward",
              "no --log or --report (their gradient monitor reads every gradient after backward)",
              c.log.empty() ? "--report" : "--log", "leave --step-in-backward out to monitor the gradients");
  // Micro-batches accumulate every gradient before the step (Note [Micro-batches] in train_step.h).
  GRAFT_CHECK(!c.selective_recompute || c.checkpoint_segments > 0 || !c.memory_budget.empty(),
              command + " --selective-recompute", "--checkpoint-segments N (N > 0)", "no checkpoint segments",
              "it says what checkpoint segments keep: add --checkpoint-segments, e.g. the model's block count + 1");
  GRAFT_CHECK(c.micro_batches == 1 || !c.step_in_backward, command + " --micro-batches",
              "no --step-in-backward (it steps each parameter as its gradient completes; micro-batches need every "
              "gradient accumulated first)", "--step-in-backward", "choose one of the two");
  GRAFT_CHECK(c.micro_batches == 1 || !c.batch_norm, command + " --micro-batches",
              "no --batch-norm (it would normalise each micro-batch by its own statistics: a different result from "
              "the whole batch's)", "--batch-norm", "leave --micro-batches out, or --batch-norm");
  GRAFT_CHECK(c.micro_batches == 1 || (c.log.empty() && c.report.empty()), command + " --micro-batches",
              "no --log or --report (their gradient monitor reads the gradients between backward and the step, "
              "which the accumulator runs)", c.log.empty() ? "--report" : "--log", "leave --micro-batches out to monitor");
  check_choice(command, "--schedule", c.schedule, {"none", "step", "exponential", "cosine", "onecycle", "plateau"});
  check_choice(command, "--init", c.init,
               {"default", "kaiming_uniform", "kaiming_normal", "xavier_uniform", "xavier_normal", "orthogonal"});
  check_choice(command, "--progress", c.progress, {"auto", "bar", "lines", "none"});
  auto positive = [&](const char* flag, double v, const char* hint) {
    GRAFT_CHECK(v > 0, command + " " + flag, "a positive value", std::to_string(v), hint);
  };
  positive("--gamma", c.gamma, "0.1 divides the learning rate by ten");
  GRAFT_CHECK(!c.lr || (*c.lr > 0 && std::isfinite(*c.lr)), command + " --lr", "a positive learning rate",
              std::to_string(c.lr.value_or(0)), "try 0.05 for sgd, 0.001 for adam");
  GRAFT_CHECK(c.dropout >= 0 && c.dropout < 1, command + " --dropout", "a probability in [0, 1)",
              std::to_string(c.dropout), "0.2 is typical; 0 turns dropout off");
  GRAFT_CHECK(c.momentum >= 0 && c.weight_decay >= 0 && c.train_limit >= 0 && c.stop_after >= 0,
              command, "non-negative --momentum, --weight-decay, --train-limit and --stop-after",
              "a negative value", "pass 0 to turn one off");
  GRAFT_CHECK(c.stop_after == 0 || !c.save.empty(), command + " --stop-after", "--save FILE as well",
              "no --save", "a run stopped early continues with --resume FILE, so save it");
  GRAFT_CHECK(c.classes >= 0 && c.classes <= 256, command + " --classes",
              "0 (10 for Fashion-MNIST, the largest training label + 1 for --data) or 1 .. 256",
              std::to_string(c.classes), "IDX label files hold uint8 labels, 0 .. 255");
  // --init-from starts a new run from a state dict; --resume continues a run, weights, optimiser and
  // schedule (Note [Starting from a state dict] in run_setup.h).
  GRAFT_CHECK(c.init_from.empty() || c.resume.empty(), command + " --init-from", "either --init-from or --resume",
              "both (--init-from " + c.init_from + ", --resume " + c.resume + ")",
              "--resume continues the run its checkpoint holds; --init-from starts a new run from a state dict's "
              "weights: pick one");
  check_input_file(command, "--init-from", c.init_from);
  // Output paths, before any work (issue 14, items 4 and 5). --resume may name --save's file (a
  // run continues its own checkpoint), but not the log's or the report's.
  check_output_directory(command, "--save", c.save);
  check_output_directory(command, "--log", c.log);
  check_output_directory(command, "--report", c.report);
  // An existing target must be a regular file (symlinks followed; issue 14, item 1).
  check_output_file(command, "--save", c.save);
  check_output_file(command, "--log", c.log);
  check_output_file(command, "--report", c.report);
  check_distinct_paths(command, {{"--save", c.save}, {"--log", c.log}, {"--report", c.report}});
  check_distinct_paths(command, {{"--resume", c.resume}, {"--log", c.log}, {"--report", c.report}});
  check_distinct_paths(command, {{"--init-from", c.init_from}, {"--log", c.log}, {"--report", c.report}});
}

}  // namespace graft::cli
