// `graft train`: the training run behind the command, as a library so tests can drive it.
//
// Note [Resumable runs]
// A run is a pure function of its configuration: the seed fixes the initial weights, every epoch's
// shuffle (DataLoader order = f(seed, epoch)) and the dropout masks (graft's default generator).
// At the end of every epoch the checkpoint (--save) stores the model, the optimiser and the
// scheduler state dicts, the number of finished epochs, the default generator's state, and the
// configuration that shapes the run. --resume loads all of it and continues with the next epoch,
// so an interrupted run resumed from its last checkpoint ends with the same weights, bit for bit,
// as the run that was never interrupted (on the same machine and thread count).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <graft/io/safetensors.h>

namespace graft::cli {

struct TrainConfig {
  std::string model = "mlp";        // mlp | cnn (images) | gpt | lstm (text, Note [Text task] in text.h)
  std::string optimizer;            // sgd | adam | adamw | rmsprop | adagrad; empty: default_optimizer(model)
  std::optional<double> lr;         // unset: the optimiser's default (see default_lr); 0 is an error
  double momentum = 0.9;            // sgd, rmsprop
  bool nesterov = false;            // sgd
  double weight_decay = 0;          // 0 (adamw: 0.01 unless set)
  std::string schedule = "cosine";  // none | step | exponential | cosine | onecycle | plateau
  int64_t step_size = 2;            // step: epochs between decays
  double gamma = 0.1;               // step, exponential: the decay factor
  int64_t batch_size = 0;  // 0: the model's default (default_batch_size)
  int64_t epochs = 0;      // 0: the model's default (default_epochs)
  std::string init = "default";  // default | kaiming_uniform | kaiming_normal | xavier_uniform | xavier_normal | orthogonal
  bool batch_norm = false;
  double dropout = 0;
  uint64_t seed = 0;
  int threads = 0;  // 0: every core
  int workers = 1;  // DataLoader threads preparing batches ahead
  std::string data;  // images: a directory with the four IDX files (empty: Debian's Fashion-MNIST);
                     // text: a file or a directory of files (empty: Debian's fortunes)
  // The text models' shape (ignored by mlp and cnn).
  int64_t context = 128;  // bytes a window holds (the model sees at most this many)
  int64_t width = 128;    // the embedding and hidden width (d_model)
  int64_t depth = 2;      // Transformer blocks, or LSTM layers
  int64_t heads = 4;      // attention heads (gpt); width must be a multiple
  bool checkpoint_attention = false;  // gpt: recompute each attention core in backward (graft::checkpoint_attention)
  int64_t train_limit = 0;  // use only the first N training examples (0: all)
  int64_t classes = 0;      // labels are 0 .. classes - 1; 0: 10 for the default data set, for --data
                            // the largest training label + 1 (any other label is an error naming its file)
  std::string save;         // checkpoint written after every epoch
  std::string resume;       // checkpoint to continue from
  int64_t stop_after = 0;   // stop (after saving) once this many epochs are done; 0: run to --epochs
  bool json = false;
  std::string log;          // JSON Lines run log (Note [Run log] in report.h)
  std::string report;       // HTML report written at the end (graft report's page)
  int64_t monitor_every = 1;  // gradient-health sampling period in steps, with --log or --report
  std::string progress = "auto";  // auto | bar | lines | none
  int zero = 0;  // under mpirun: 1 shards the optimiser state over the ranks, 2 the gradients too
};

struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_accuracy = 0, test_loss = 0, test_accuracy = 0, lr = 0, seconds = 0;
  // Examples (images, or predicted bytes for text) per second of the epoch's training steps.
  double examples_per_second = 0;
};

struct TrainResult {
  double test_accuracy = 0, test_loss = 0, train_loss = 0;
  int64_t epochs = 0;  // epochs finished in total, counting those before a resume
  double seconds = 0;  // of this process's training
  int64_t peak_memory_bytes = 0;  // graft's tensor memory (graft::memory::stats)
  std::map<std::string, int64_t> peak_memory_by_category;  // memory::category_name -> peak bytes
  int64_t peak_rss_bytes = 0;     // the process's peak resident set (getrusage), for comparison
  int64_t peak_train_memory_bytes = 0;  // the peak during training steps alone (no evaluation):
                                        // what `graft plan` predicts
  int64_t parameters = 0;
  std::vector<EpochRecord> history;  // epochs run by this process
};

double default_lr(const std::string& optimizer);
// 128 for the mlp, 64 for the cnn (more, smaller steps: 91.6% instead of 91.2% after 5 epochs), 32
// windows for the text models.
int64_t default_batch_size(const std::string& model);
// sgd for the image models, adamw for the text models (SGD trains Transformers poorly).
std::string default_optimizer(const std::string& model);
// 5 for the image models, 2 for the text models (an epoch of the fortunes is 2 million bytes).
int64_t default_epochs(const std::string& model);
// The configuration with its model-dependent defaults filled in (optimiser, epochs).
TrainConfig with_defaults(TrainConfig config);

// Checks the configuration, throwing graft::Error naming the flag for a bad value.
void validate(const TrainConfig& config);

// Runs training as configured, writing progress to `out` (and, with config.json, the final JSON
// line). Throws graft::Error on bad flags, missing data or an incompatible checkpoint.
TrainResult train(const TrainConfig& config, std::ostream& out);

// The last line `graft train --json` prints.
std::string result_json(const TrainConfig& config, const TrainResult& result);

// A checkpoint graft train wrote, and the run configuration its metadata records (the flags that
// shape the run: model, optimiser, sizes, ...). Throws graft::Error naming `op` for a file that is
// not one.
struct RunCheckpoint {
  io::Checkpoint checkpoint;
  TrainConfig config;
};
RunCheckpoint load_run_checkpoint(const std::string& path, const std::string& op);

// ---- `graft plan` (Note [Memory planner] in graft/diagnostics/memory_plan.h) ----
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
  int64_t predicted_peak_bytes = 0;     // the step's (data set included), or the loading's when higher
  int64_t data_bytes = 0;               // the data set's (memory category "data")
  int64_t loading_peak_bytes = 0;       // the peak while loading it
  int64_t budget_bytes = 0;
  int64_t max_batch_size = 0;          // with a budget
  int64_t segments_to_fit = 0;         // with a budget: fewest checkpoint segments fitting batch_size (0: none)
  std::string plan_json;               // memory::Plan::json() at batch_size
};

// Loads the data set (its bytes are part of the run's memory), builds graft train's model and
// optimiser, and prints the predicted peak of one training step, its breakdown and, with a budget,
// what fits. With json, the last line is one JSON object.
PlanResult plan(const PlanConfig& config, std::ostream& out);

}  // namespace graft::cli
