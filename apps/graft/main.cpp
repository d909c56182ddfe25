// The `graft` command. `graft train` trains an MLP or a CNN on Fashion-MNIST (or any IDX image set), or
// a small GPT or an LSTM on text (Debian's fortunes, or any file); `graft sample` continues a text.
#include <CLI/CLI.hpp>
#include <graft/core/error.h>
#include <graft/distributed/process_group.h>

#include <malloc.h>

#include <cstdio>
#include <iostream>
#include <new>

#include "config.h"
#include "plan.h"
#include "report.h"
#include "task.h"
#include "text.h"
#include "train.h"

namespace {
// A path flag given as "" is an error (issue 14, item 5): `--save ""` used to mean "no checkpoint"
// and `--data ""` the default directory, silently.
const CLI::Validator kNonEmpty(
    [](std::string& v) { return v.empty() ? std::string("must not be empty (leave the flag out instead)") : std::string(); },
    "PATH");
// Unsigned flags: CLI11 would wrap "-1" to 2^64 - 1 (issue 14, item 11); only digits are a seed.
const CLI::Validator kWholeNumber(
    [](std::string& v) {
      const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
      return digits ? std::string() : std::string("must be a whole number >= 0");
    },
    "UINT");
// The flags more than one command has are declared once, here, so that each has one description,
// one parse and one check under every command (issue 34, item 6: graft sample --threads had no bound
// while graft train's had one). Their bounds are checked by the library (validate(), check_threads()
// in config.h), so that graft::cli's callers get them too.
void add_model_flag(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_option("--model", cfg.model,
                  "mlp (784-512-256-10), cnn (two 3x3 conv + pool blocks), gpt (a byte-level decoder-only "
                  "Transformer) or lstm (a byte-level LSTM)")
      ->check(CLI::IsMember(graft::cli::model_names()))
      ->capture_default_str();
}
void add_optimizer_flag(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_option("--optimizer", cfg.optimizer,
                  "sgd, adam, adamw, rmsprop or adagrad (default: sgd for mlp and cnn, adamw for gpt and lstm)")
      ->check(CLI::IsMember({"sgd", "adam", "adamw", "rmsprop", "adagrad"}));
}
void add_batch_size_flag(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_option("--batch-size", cfg.batch_size,
                  "examples per batch, at most 2^24 (default: 128 for mlp, 64 for cnn, 32 windows for gpt and lstm)");
}
void add_batch_norm_and_dropout_flags(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_flag("--batch-norm,!--no-batch-norm", cfg.batch_norm,
                "mlp, cnn: batch normalisation after each hidden layer");
  cmd->add_option("--dropout", cfg.dropout, "dropout probability after hidden layers (0: none)")->capture_default_str();
}
// --momentum and --nesterov: graft plan needs them too (with momentum 0, SGD keeps no momentum buffer).
void add_momentum_flags(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_option("--momentum", cfg.momentum, "momentum of sgd and rmsprop")->capture_default_str();
  cmd->add_flag("--nesterov", cfg.nesterov, "Nesterov momentum (sgd)");
}
void add_seed_flag(CLI::App* cmd, uint64_t& seed, const std::string& what) {
  cmd->add_option("--seed", seed, what + " (0 to 2^64 - 1)")->check(kWholeNumber)->capture_default_str();
}
void add_threads_flag(CLI::App* cmd, int& threads) {
  cmd->add_option("--threads", threads, "compute threads (0: every core; at most 4 per core)")->capture_default_str();
}
void add_workers_flag(CLI::App* cmd, int& workers) {
  cmd->add_option("--workers", workers, "background threads preparing batches (at most 64)")->capture_default_str();
}
// The memory flags graft train and graft plan share (Note [Memory budget] in budget.cpp).
void add_memory_flags(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_option("--memory-budget", cfg.memory_budget,
                  "the memory the process may use (its resident size, the program's own share included), such as 512MiB: choose from the plan what fits (a smaller evaluation "
                  "batch, --step-in-backward, --chunked-loss, --optimizer-state, --checkpoint-attention, "
                  "--micro-batches, --checkpoint-segments), say what was chosen, and hold the run to it")
      ->check(kNonEmpty);
  cmd->add_option("--eval-limit", cfg.eval_limit, "evaluate on the first N held-out examples (0: all)")
      ->capture_default_str();
  cmd->add_flag("--step-in-backward", cfg.step_in_backward,
                "update each parameter as soon as its gradient is complete and free the gradient (gradient memory: "
                "about the largest parameter's); not with --log or --report");
  cmd->add_option("--optimizer-state", cfg.optimizer_state,
                  "adam, adamw, sgd: keep the optimizer state in float32, bfloat16 or int8 (block-wise quantized)")
      ->check(CLI::IsMember({"float32", "bfloat16", "int8"}))
      ->capture_default_str();
  cmd->add_flag("--chunked-loss", cfg.chunked_loss,
                "fuse the output layer and the loss, chunked over rows (F::linear_cross_entropy): the training step "
                "never holds the logits whole");
  cmd->add_option("--checkpoint-segments", cfg.checkpoint_segments,
                  "recompute the forward in backward by this many segments (checkpoint_sequential; 0: none)")
      ->capture_default_str();
  cmd->add_flag("--selective-recompute", cfg.selective_recompute,
                "with --checkpoint-segments: keep each segment's matrix products' outputs and recompute only the "
                "element-wise work and attention's core (a few percent more time instead of a third)");
  cmd->add_option("--micro-batches", cfg.micro_batches,
                  "split each batch into this many micro-batches, gradients accumulated before one step (the same "
                  "update; the activations of one micro-batch); not with --step-in-backward or --batch-norm")
      ->capture_default_str();
  cmd->add_option("--eval-batch-size", cfg.eval_batch_size,
                  "held-out examples per evaluation batch (0: 1000 images, 64 text windows)")
      ->capture_default_str();
}
void add_data_flag(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_option("--data", cfg.data,
                  "mlp, cnn: directory with train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte "
                  "and t10k-labels-idx1-ubyte (each may be .gz); default: Debian's Fashion-MNIST in "
                  "/usr/share/datasets/fashion-mnist. gpt, lstm: a text file or a directory of them; default: "
                  "Debian's fortunes in /usr/share/games/fortunes")
      ->check(kNonEmpty);
}
void add_limit_and_classes_flags(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_option("--train-limit", cfg.train_limit, "use only the first N training examples (0: all)")
      ->capture_default_str();
  cmd->add_option("--classes", cfg.classes,
                  "mlp, cnn: number of classes, labels 0 .. N-1 (0: 10 for Fashion-MNIST, the largest training "
                  "label + 1 for --data); any other label is an error")
      ->capture_default_str();
}
void add_zero_flag(CLI::App* cmd, int& zero) {
  cmd->add_option("--zero", zero,
                  "under mpirun: 1 shards the optimizer state over the ranks, 2 the gradients too (ZeRO); 0: off")
      ->check(CLI::IsMember({0, 1, 2}))
      ->capture_default_str();
}
// The flags given on the command line, for the checks of flags a model does not read (Note [Flags a
// model does not read] in config.cpp).
void record_given_flags(const CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  for (const CLI::Option* o : cmd->get_options())
    if (o->count() > 0) cfg.given_flags.insert(o->get_name());
}

// The text models' shape flags, shared by graft train and graft plan.
void add_text_flags(CLI::App* cmd, graft::cli::TrainConfig& cfg) {
  cmd->add_option("--context", cfg.context, "gpt, lstm: bytes per training window (the model sees at most this many)")
      ->capture_default_str();
  cmd->add_option("--width", cfg.width, "gpt, lstm: embedding and hidden width")->capture_default_str();
  cmd->add_option("--depth", cfg.depth, "gpt: Transformer blocks; lstm: LSTM layers")->capture_default_str();
  cmd->add_option("--heads", cfg.heads, "gpt: attention heads (a divisor of --width)")->capture_default_str();
  cmd->add_flag("--checkpoint-attention", cfg.checkpoint_attention,
                "gpt: recompute each attention core in backward instead of keeping it (selective recomputation)");
}

}  // namespace

int main(int argc, char** argv) {
  // Buffers of 256 KiB or more (an IDX file read whole, a text corpus) are mappings of their own,
  // given back to the system when freed. glibc raises this threshold with every large free, after
  // which such buffers come from its heap and stay resident: loading a data set twice (the budget's
  // plan, then the run) left 40 MiB more resident than loading it once (Note [The program's share of
  // a budget] in plan.cpp). Setting the threshold turns the raising off.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  CLI::App app{"graft: train neural networks in C++ with PyTorch's autograd semantics"};
  app.require_subcommand(1);

  graft::cli::TrainConfig cfg;
  CLI::App* train = app.add_subcommand("train", "Train an MLP or a small CNN on Fashion-MNIST or any IDX image set, "
                                                "or a small GPT or an LSTM on text");
  add_model_flag(train, cfg);
  add_optimizer_flag(train, cfg);
  train->add_option("--lr", cfg.lr, "learning rate (default: 0.05 for sgd, 0.01 for adagrad, 0.001 otherwise)");
  add_momentum_flags(train, cfg);
  train->add_option("--weight-decay", cfg.weight_decay, "L2 weight decay (adamw: decoupled, 0.01 when unset)")
      ->capture_default_str();
  train->add_option("--schedule", cfg.schedule,
                    "learning-rate schedule: none, step (x gamma every --step-size epochs), exponential (x gamma "
                    "per epoch), cosine (to 0 over the run, per batch), onecycle (per batch), plateau (x 0.1 when "
                    "the training loss stops falling)")
      ->check(CLI::IsMember({"none", "step", "exponential", "cosine", "onecycle", "plateau"}))
      ->capture_default_str();
  train->add_option("--step-size", cfg.step_size, "epochs between decays of --schedule step")->capture_default_str();
  train->add_option("--gamma", cfg.gamma, "decay factor of --schedule step and exponential")->capture_default_str();
  add_batch_size_flag(train, cfg);
  train->add_option("--epochs", cfg.epochs,
                    "passes over the training set, at most 1000000 (default: 5 for mlp and cnn, 2 for gpt and lstm)")
      ->check(CLI::PositiveNumber);
  train->add_option("--init", cfg.init,
                    "mlp, cnn: weight initialisation: default (PyTorch's), kaiming_uniform, kaiming_normal, "
                    "xavier_uniform, xavier_normal or orthogonal")
      ->check(CLI::IsMember({"default", "kaiming_uniform", "kaiming_normal", "xavier_uniform", "xavier_normal",
                             "orthogonal"}))
      ->capture_default_str();
  add_batch_norm_and_dropout_flags(train, cfg);
  add_seed_flag(train, cfg.seed, "seed of weights, shuffling and dropout");
  add_threads_flag(train, cfg.threads);
  add_workers_flag(train, cfg.workers);
  add_memory_flags(train, cfg);
  add_data_flag(train, cfg);
  add_text_flags(train, cfg);
  add_limit_and_classes_flags(train, cfg);
  train->add_option("--save", cfg.save, "checkpoint (safetensors) written atomically after every epoch")
      ->check(kNonEmpty);
  train->add_option("--resume", cfg.resume, "continue the run saved in this checkpoint (same flags)")
      ->check(kNonEmpty);
  train->add_option("--init-from", cfg.init_from,
                    "start from the weights of this state dict: a file of PyTorch's torch.save(model.state_dict()) "
                    "or safetensors with the model's keys, loaded strictly (not with --resume)")
      ->check(kNonEmpty);
  train->add_option("--stop-after", cfg.stop_after,
                    "stop after this many epochs of this process (needs --save; continue with --resume)")
      ->capture_default_str();
  train->add_flag("--json", cfg.json, "end with one line of JSON: test_accuracy, train_loss, epochs, seconds, "
                                      "peak_memory_bytes, ...");
  add_zero_flag(train, cfg.zero);
  train->add_option("--progress", cfg.progress,
                    "auto (a live bar on a terminal, one line per epoch otherwise), bar, lines, or none (nothing but errors "
                    "and the --json line: no epoch lines, final result or memory table)")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();

  train->add_option("--log", cfg.log, "write a JSON Lines run log (steps, epochs, gradient health) to this file")
      ->check(kNonEmpty);
  train->add_option("--report", cfg.report, "write an HTML report of the run (as graft report does) to this file")
      ->check(kNonEmpty);
  train->add_option("--monitor-every", cfg.monitor_every,
                    "with --log or --report: sample gradient health every N steps")
      ->capture_default_str();

  // graft plan: graft train's model and batch flags, plus a budget.
  graft::cli::PlanConfig plan_cfg;
  CLI::App* plan = app.add_subcommand("plan", "Predict the peak memory of a training step (graft train's model and "
                                              "flags) and what fits a budget");
  add_model_flag(plan, plan_cfg.train);
  add_optimizer_flag(plan, plan_cfg.train);
  add_momentum_flags(plan, plan_cfg.train);  // with momentum 0, SGD keeps no momentum buffer
  add_batch_size_flag(plan, plan_cfg.train);
  add_batch_norm_and_dropout_flags(plan, plan_cfg.train);
  add_data_flag(plan, plan_cfg.train);
  add_text_flags(plan, plan_cfg.train);
  add_limit_and_classes_flags(plan, plan_cfg.train);
  add_threads_flag(plan, plan_cfg.train.threads);
  add_workers_flag(plan, plan_cfg.train.workers);  // the batches prepared ahead are part of the peak
  add_memory_flags(plan, plan_cfg.train);
  plan->add_option("--budget", plan_cfg.budget, "a memory budget such as 2GiB: print the largest batch that fits");
  plan->add_option("--accumulate", plan_cfg.accumulate, "micro-batches per optimiser step (the batch is the micro-batch)")
      ->capture_default_str();
  plan->add_option("--world-size", plan_cfg.world_size,
                   "ranks of an mpirun run (--batch-size per rank): also print each rank's memory")
      ->capture_default_str();
  add_zero_flag(plan, plan_cfg.zero);
  plan->add_flag("--json", plan_cfg.json, "end with one line of JSON: predicted_peak_bytes, at_peak, category_peak, ...");

  std::string report_log, report_out = "report.html";
  CLI::App* report = app.add_subcommand("report", "Turn a run log (graft train --log) into one self-contained HTML page");
  report->add_option("log", report_log, "the JSON Lines run log")->check(kNonEmpty)->required();
  report->add_option("-o,--output", report_out, "the HTML file to write")->check(kNonEmpty)->capture_default_str();

  graft::cli::SampleConfig sample_cfg;
  CLI::App* sample = app.add_subcommand("sample", "Continue a text with a model graft train --model gpt|lstm saved");
  sample->add_option("--checkpoint", sample_cfg.checkpoint, "the checkpoint graft train --save wrote")
      ->check(kNonEmpty)
      ->required();
  sample->add_option("--prompt", sample_cfg.prompt, "the text to continue (empty: start a new fortune)");
  sample->add_option("--length", sample_cfg.length, "bytes to generate")->capture_default_str();
  sample->add_option("--temperature", sample_cfg.temperature, "softmax temperature (0: always the likeliest byte)")
      ->capture_default_str();
  sample->add_option("--top-k", sample_cfg.top_k, "draw among the k likeliest bytes (0: all)")->capture_default_str();
  add_seed_flag(sample, sample_cfg.seed, "seed of the draws");
  add_threads_flag(sample, sample_cfg.threads);

  CLI11_PARSE(app, argc, argv);
  record_given_flags(train, cfg);
  record_given_flags(plan, plan_cfg.train);
  try {
    if (sample->parsed()) graft::cli::sample(sample_cfg, std::cout);
    if (train->parsed()) graft::cli::train(cfg, std::cout);
    if (plan->parsed()) graft::cli::plan(plan_cfg, std::cout);
    if (report->parsed()) {
      graft::cli::write_report(report_log, report_out);
      std::cout << "wrote " << report_out << '\n';
    }
    graft::distributed::destroy_process_group();  // graft train under mpirun: MPI_Finalize
  } catch (const graft::Error& e) {
    std::cerr << "graft: " << e.what() << '\n';
    return 1;
  } catch (const std::bad_alloc&) {
    // Tensors that do not fit are graft's OutOfMemoryError, with its report (Note [Memory limit]);
    // this is memory outside them (a file read, a container) the system refused (issue 34, item 3).
    const graft::Error e(app.get_subcommands().empty() ? "graft" : "graft " + app.get_subcommands()[0]->get_name(),
                         "memory for the command's own buffers (file contents, records)",
                         "std::bad_alloc: the system refused an allocation outside graft's tensor memory",
                         "free memory or raise the process's limit (ulimit -v); graft plan predicts a run's tensor "
                         "memory without allocating it");
    std::cerr << "graft: out of memory: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "graft: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
