// `graft train`'s configuration: its flags as a struct, their defaults and their checks. The
// defaults and checks that depend on the model are its task's (task.h); config.cpp asks it.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

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
  // The text models' shape (refused with mlp and cnn: Note [Flags a model does not read] in config.cpp).
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
  std::string init_from;    // a state dict (torch.save's format or safetensors) the new run starts from
  int64_t stop_after = 0;   // stop (after saving) once this many epochs are done; 0: run to --epochs
  bool json = false;
  std::string log;          // JSON Lines run log (Note [Run log] in report.h)
  std::string report;       // HTML report written at the end (graft report's page)
  int64_t monitor_every = 1;  // gradient-health sampling period in steps, with --log or --report
  std::string progress = "auto";  // auto | bar | lines | none
  int zero = 0;  // under mpirun: 1 shards the optimiser state over the ranks, 2 the gradients too
  int64_t eval_limit = 0;       // evaluate on the first N held-out examples (images, or text windows); 0: all
  int64_t eval_batch_size = 0;  // held-out examples per evaluation batch; 0: the model's (1000 images, 64 windows)
  int64_t checkpoint_segments = 0;  // > 0: the forward through checkpoint_sequential (one process)
  // With checkpoint segments: each keeps its linears' outputs (CheckpointPolicy::kSaveMatmuls) and
  // recomputes only the element-wise work and attention's core (Note [Selective recomputation])
  bool selective_recompute = false;
  bool chunked_loss = false;  // the output layer and the loss fused, chunked over rows (F::linear_cross_entropy)
  // > 1: each batch in this many micro-batches, one forward and backward each, their gradients
  // accumulated (optim::GradAccumulator, weighted by rows) before one step: the same update, the
  // activations of one micro-batch (Note [Micro-batches] in train_step.h)
  int64_t micro_batches = 1;
  bool step_in_backward = false;        // each parameter updated as its gradient completes (optim::StepInBackward)
  std::string optimizer_state = "float32";  // float32 | bfloat16 | int8: Adam's, AdamW's or SGD's momentum state
  std::string memory_budget;    // "512MiB": choose what fits (Note [Memory budget] in budget.cpp), then enforce it
  // The part of --memory-budget the program keeps for itself (its code, libraries and memory that is
  // not tensors; Note [The program's share of a budget] in budget.cpp); -1: measured in this process.
  int64_t memory_budget_program = -1;
  // The flags given on the command line ("--context", ...; main.cpp fills it from CLI11's counts), so
  // that a flag the model does not read is refused even at its default value (issue 34, item 11). A
  // library caller may leave it empty: a value other than TrainConfig's default counts as given.
  std::set<std::string> given_flags;
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
// --batch-size, or the model's default.
int64_t batch_size(const TrainConfig& config);
// The held-out examples evaluated (--eval-limit of `available`), and how many at a time.
int64_t eval_examples(const TrainConfig& config, int64_t available);
int64_t eval_batch_size(const TrainConfig& config, int64_t task_default);

// Checks the configuration, throwing graft::Error naming the flag for a bad value. `command` begins
// every message ("graft plan --batch-size: ..."): the command whose flags they are.
void validate(const TrainConfig& config, const std::string& command = "graft train");

// True when `flag` ("--context") was given on the command line, or, for a library caller's
// configuration (given_flags empty), when its value is not TrainConfig's default. Covers the flags
// one kind of model reads and the other refuses: --context, --width, --depth, --heads,
// --checkpoint-attention, --batch-norm, --init, --classes.
bool flag_set(const TrainConfig& config, const std::string& flag);
// Throws graft::Error "<command> <flag>" for the first of `flags` that is set (flag_set): a flag the
// model does not read is refused rather than ignored. `whose`: whose flags they are ("the text models'").
void refuse_flags(const TrainConfig& config, const std::string& command, const std::vector<std::string>& flags,
                  const std::string& whose);

// The flags every command that has them shares one bound and one check of (issue 34, item 6):
// --threads is 0 (every core) .. 4 per core (more only oversubscribes; 100000 ran out of threads).
int max_threads();
void check_threads(const std::string& command, int64_t threads);

}  // namespace graft::cli
