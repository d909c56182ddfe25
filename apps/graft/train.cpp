// `graft train`: configuration checks, data, model, optimiser, schedule, the loop, checkpoints.
#include "train.h"

#include <graft/graft.h>

#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <map>
#include <numeric>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <thread>
#include <fstream>
#include <sstream>

#include <sys/resource.h>

#include "line_file.h"
#include "paths.h"
#include "report.h"

#include "progress.h"
#include "text.h"

namespace graft::cli {
namespace {

namespace nn = graft::nn;
namespace F = graft::nn::functional;
namespace dist = graft::distributed;

// Note [graft train under mpirun]
// Started by mpirun, each rank trains the same model (DistributedDataParallel broadcasts rank 0's
// weights and averages the gradients) on its shard of every epoch (DataLoaderOptions::distributed:
// every world_size-th example of the epoch's shuffled order), so the global batch is world_size x
// --batch-size. --zero 1 shards the optimiser state, --zero 2 the gradients too
// (ZeroRedundancyOptimizer). The epoch figures are the ranks' sums; rank 0 alone prints, logs,
// reports and writes the checkpoint, which holds the whole optimiser state as one process has it
// (ZeRO consolidates it first), so a run resumes in one process or at another world size; the
// per-batch schedules then continue at the same epoch. Compute threads default to the cores
// divided among the ranks of the machine.
struct Parallel {
  int world = 1, rank = 0;
  std::unique_ptr<nn::parallel::DistributedDataParallel<nn::Sequential>> ddp;
  optim::ZeroRedundancyOptimizer* zero = nullptr;
  bool monitored = false;  // --log or --report: rank 0 runs the gradient monitor
};
namespace optim = graft::optim;

bool one_of(const std::string& v, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (v == a) return true;
  return false;
}

std::string joined(std::initializer_list<const char*> allowed) {
  std::string s;
  for (const char* a : allowed) s += (s.empty() ? "" : " | ") + std::string(a);
  return s;
}

void check_choice(const char* flag, const std::string& value, std::initializer_list<const char*> allowed) {
  GRAFT_CHECK(one_of(value, allowed), std::string("graft train ") + flag, "one of " + joined(allowed),
              "'" + value + "'", "see graft train --help");
}

// ---- data ----

struct Data {
  // Images (N, C, H, W) kept as uint8 bytes and normalised one batch at a time (Note [Byte images]);
  // labels (N) int64 (the datasets' targets). Empty for the text models.
  data::ByteImageDataset train_x, test_x;
  Tensor train_y, test_y;
  int64_t classes = 0;
  double mean = 0, std = 1;
  // What training and evaluation read: the images above, or the text's windows (Note [Text task]).
  std::shared_ptr<const data::Dataset> train, test;
  std::string what;  // "60000 images (10 classes)", for the first line of a run
};

// The number of classes, after checking every label is one of them (issue 14, item 9: a test
// label of 12 silently made 13 outputs). --classes N fixes it; 0 means 10 for the default data set
// (Fashion-MNIST), and for --data the largest training label + 1, so every test label must be one
// the training set has. `train_y` is the whole training set (before --train-limit).
int64_t check_labels(const TrainConfig& cfg, const std::string& root, const Tensor& train_y, const Tensor& test_y) {
  const Tensor train_labels = train_y.contiguous(), test_labels = test_y.contiguous();
  const int64_t* tr = train_labels.data_ptr<int64_t>();
  int64_t classes = cfg.classes;
  if (classes == 0 && !cfg.data.empty()) {
    for (int64_t i = 0; i < train_labels.numel(); ++i) classes = std::max(classes, tr[i] + 1);
  } else if (classes == 0) {
    classes = 10;
  }
  const auto check = [&](const Tensor& labels, const char* mode) {
    const int64_t* p = labels.data_ptr<int64_t>();
    for (int64_t i = 0; i < labels.numel(); ++i) {
      if (p[i] >= 0 && p[i] < classes) continue;
      // The file MNIST read: the raw one if it is there, else the gzipped one.
      std::string file = root + (root.back() == '/' ? "" : "/") + mode + "-labels-idx1-ubyte";
      std::error_code ec;
      if (!std::filesystem::is_regular_file(file, ec)) file += ".gz";
      throw Error("graft train --data",
                  "labels 0 .. " + std::to_string(classes - 1) + " (" + std::to_string(classes) + " classes" +
                      (cfg.classes > 0 ? ", --classes" : cfg.data.empty() ? ", Fashion-MNIST's" : ", as the training labels") +
                      ")",
                  "label " + std::to_string(p[i]) + " at index " + std::to_string(i) + " in " + file,
                  "pass --classes N for a data set with N classes (labels 0 .. N - 1)");
    }
  };
  check(train_labels, "train");
  check(test_labels, "t10k");
  return classes;
}

// The text models' data (Note [Text task]): windows of --context bytes; --train-limit keeps the first N.
Data load_text_data(const TrainConfig& cfg) {
  const TextCorpus corpus = load_text(cfg.data, cfg.context);
  TextDataset train(corpus.train, cfg.context);
  if (cfg.train_limit > 0 && cfg.train_limit < train.size()) train = train.head(cfg.train_limit);
  Data d;
  d.classes = kVocab;
  d.what = std::to_string(train.size()) + " windows of " + std::to_string(cfg.context) + " bytes (" +
           std::to_string(corpus.train.size()) + " bytes of text from " + corpus.source + ", " +
           std::to_string(corpus.files) + (corpus.files == 1 ? " file" : " files") + "; " +
           std::to_string(corpus.held_out.size()) + " held out)";
  d.train = std::make_shared<const TextDataset>(std::move(train));
  d.test = std::make_shared<const TextDataset>(corpus.held_out, cfg.context);
  return d;
}

Data load_data(const TrainConfig& cfg) {
  if (is_text_model(cfg.model)) return load_text_data(cfg);
  const std::string root = cfg.data.empty() ? data::kFashionMNISTDebianDir : cfg.data;
  // The images stay uint8 (a quarter of float32's memory, memory category "data"); each batch is
  // normalised as it is gathered, so no float copy of a whole set exists (issue 14, item 14).
  data::ByteImageDataset train_set = data::read_mnist_bytes(root, data::MNIST::Mode::kTrain);
  data::ByteImageDataset test_set = data::read_mnist_bytes(root, data::MNIST::Mode::kTest);
  Data d;
  const std::vector<int64_t> train_sizes = train_set.sizes();
  const Tensor full_train_targets = train_set.targets();  // every label is checked, before --train-limit
  if (cfg.train_limit > 0 && cfg.train_limit < train_set.size()) train_set = train_set.head(cfg.train_limit);
  GRAFT_CHECK(std::equal(train_sizes.begin() + 1, train_sizes.end(), test_set.sizes().begin() + 1,
                         test_set.sizes().end()),
              "graft train --data", "training and test images of one size",
              "train " + shape_str(train_sizes) + " and test " + shape_str(test_set.sizes()),
              "point --data at one data set");
  // Normalise with the training images' own mean and standard deviation (Fashion-MNIST: 0.286, 0.353),
  // summed exactly over the bytes.
  const data::ByteImageDataset::Moments m = train_set.moments();
  d.mean = m.mean;
  d.std = std::max(1e-6, m.stddev);
  d.train_x = train_set.normalized(d.mean, d.std);
  d.test_x = test_set.normalized(d.mean, d.std);
  d.train_y = d.train_x.targets();
  d.test_y = d.test_x.targets();
  d.classes = check_labels(cfg, root, full_train_targets, d.test_y);
  d.train = std::make_shared<const data::ByteImageDataset>(d.train_x);
  d.test = std::make_shared<const data::ByteImageDataset>(d.test_x);
  d.what = std::to_string(d.train_x.size()) + " images (" + std::to_string(d.classes) + " classes)";
  // What loading freed (the full training set after --train-limit) goes back to the system instead
  // of staying cached for the whole run.
  memory::empty_cache();
  return d;
}

// ---- model ----

// mlp: Flatten, Linear(C*H*W, 512), [BatchNorm1d], ReLU, [Dropout], Linear(512, 256), [BatchNorm1d],
//      ReLU, [Dropout], Linear(256, classes)
// cnn: Conv2d(C, 32, 3), [BatchNorm2d], ReLU, MaxPool2d(2), Conv2d(32, 64, 3), [BatchNorm2d], ReLU,
//      MaxPool2d(2), Flatten, Linear(64 * h * w, 128), ReLU, [Dropout], Linear(128, classes)
nn::Sequential build_model(const TrainConfig& cfg, int64_t C, int64_t H, int64_t W, int64_t classes) {
  nn::Sequential m;
  if (cfg.model == "mlp") {
    m->push_back(nn::Flatten());
    int64_t in = C * H * W;
    for (int64_t width : {512, 256}) {
      m->push_back(nn::Linear(in, width));
      if (cfg.batch_norm) m->push_back(nn::BatchNorm1d(width));
      m->push_back(nn::ReLU());
      if (cfg.dropout > 0) m->push_back(nn::Dropout(cfg.dropout));
      in = width;
    }
    m->push_back(nn::Linear(in, classes));
  } else {
    int64_t h = H, w = W, in = C;
    for (int64_t channels : {32, 64}) {
      GRAFT_CHECK(h >= 4 && w >= 4, "graft train --model cnn", "images of at least 10 x 10",
                  std::to_string(H) + " x " + std::to_string(W), "use --model mlp for small images");
      m->push_back(nn::Conv2d(in, channels, 3));
      if (cfg.batch_norm) m->push_back(nn::BatchNorm2d(channels));
      m->push_back(nn::ReLU());
      m->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
      h = (h - 2) / 2;
      w = (w - 2) / 2;
      in = channels;
    }
    m->push_back(nn::Flatten());
    m->push_back(nn::Linear(in * h * w, 128));
    m->push_back(nn::ReLU());
    if (cfg.dropout > 0) m->push_back(nn::Dropout(cfg.dropout));
    m->push_back(nn::Linear(128, classes));
  }
  return m;
}

// The run's model: an image model for the data's image size, or a text model.
nn::Sequential make_model(const TrainConfig& cfg, const Data& d) {
  if (is_text_model(cfg.model)) return build_text_model(cfg);
  return build_model(cfg, d.train_x.sizes()[1], d.train_x.sizes()[2], d.train_x.sizes()[3], d.classes);
}

// Re-initialises the weights of linear and conv layers (the parameters with 2 or more dims) and
// zeroes their biases; "default" keeps PyTorch's default initialisation.
void initialise(nn::Sequential& model, const std::string& scheme) {
  if (scheme == "default") return;
  NoGradGuard no_grad;
  for (const auto& item : model->named_parameters()) {
    Tensor p = item.value();
    if (p.dim() >= 2) {
      if (scheme == "kaiming_uniform") nn::init::kaiming_uniform_(p, 0.0, kFanIn, kReLU);
      else if (scheme == "kaiming_normal") nn::init::kaiming_normal_(p, 0.0, kFanIn, kReLU);
      else if (scheme == "xavier_uniform") nn::init::xavier_uniform_(p);
      else if (scheme == "xavier_normal") nn::init::xavier_normal_(p);
      else if (scheme == "orthogonal") nn::init::orthogonal_(p, nn::init::calculate_gain(kReLU));
    }
  }
  // Biases of the re-initialised layers start at zero (batch norm's biases already are).
  for (const auto& item : model->named_parameters())
    if (item.value().dim() == 1 && item.key().ends_with(".bias")) nn::init::zeros_(item.value());
}

// ---- optimiser and schedule ----

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& cfg, const std::vector<Tensor>& params) {
  const double lr = cfg.lr.value_or(default_lr(cfg.optimizer));
  if (cfg.optimizer == "sgd")
    return std::make_unique<optim::SGD>(
        params, optim::SGDOptions(lr).momentum(cfg.momentum).nesterov(cfg.nesterov).weight_decay(cfg.weight_decay));
  if (cfg.optimizer == "adam")
    return std::make_unique<optim::Adam>(params, optim::AdamOptions(lr).weight_decay(cfg.weight_decay));
  if (cfg.optimizer == "adamw")
    return std::make_unique<optim::AdamW>(
        params, optim::AdamWOptions(lr).weight_decay(cfg.weight_decay > 0 ? cfg.weight_decay : 0.01));
  if (cfg.optimizer == "rmsprop")
    return std::make_unique<optim::RMSprop>(
        params, optim::RMSpropOptions(lr).momentum(cfg.momentum).weight_decay(cfg.weight_decay));
  return std::make_unique<optim::Adagrad>(params, optim::AdagradOptions(lr).weight_decay(cfg.weight_decay));
}

// The schedule steps after every batch (cosine, onecycle) or after every epoch (step, exponential,
// plateau on the epoch's training loss; the test set never steers training).
struct Schedule {
  std::unique_ptr<optim::LRScheduler> scheduler;
  std::unique_ptr<optim::ReduceLROnPlateau> plateau;
  bool per_batch = false;

  void after_batch() {
    if (scheduler && per_batch) scheduler->step();
  }
  void after_epoch(double train_loss) {
    if (scheduler && !per_batch) scheduler->step();
    if (plateau) plateau->step(train_loss);
  }
  OrderedDict<std::string, Tensor> state_dict() const {
    if (scheduler) return scheduler->state_dict();
    if (plateau) return plateau->state_dict();
    return {};
  }
  void load_state_dict(const OrderedDict<std::string, Tensor>& state) {
    if (scheduler) scheduler->load_state_dict(state);
    if (plateau) plateau->load_state_dict(state);
  }
  // After a resume: the schedule has stepped once per finished epoch (or batch), as the run does.
  void check_resumed(int64_t epochs_done, int64_t batches_per_epoch, const std::string& file) const {
    if (!scheduler && !plateau) return;
    const int64_t expected = per_batch ? epochs_done * batches_per_epoch : epochs_done;
    const int64_t got = scheduler ? scheduler->last_epoch() : plateau->last_epoch();
    GRAFT_CHECK(got == expected, "graft train --resume",
                "a schedule at step " + std::to_string(expected) + " after " + std::to_string(epochs_done) + " epochs",
                "step " + std::to_string(got) + " in " + file,
                "the checkpoint's schedule state is damaged; resume from a file that graft train wrote");
  }
};

Schedule make_schedule(const TrainConfig& cfg, optim::Optimizer& opt, int64_t batches_per_epoch) {
  Schedule s;
  const int64_t total_steps = std::max<int64_t>(1, cfg.epochs * batches_per_epoch);
  const double lr = cfg.lr.value_or(default_lr(cfg.optimizer));
  if (cfg.schedule == "step") {
    s.scheduler = std::make_unique<optim::StepLR>(opt, cfg.step_size, cfg.gamma);
  } else if (cfg.schedule == "exponential") {
    s.scheduler = std::make_unique<optim::ExponentialLR>(opt, cfg.gamma);
  } else if (cfg.schedule == "cosine") {
    s.scheduler = std::make_unique<optim::CosineAnnealingLR>(opt, total_steps);
    s.per_batch = true;
  } else if (cfg.schedule == "onecycle") {
    s.scheduler = std::make_unique<optim::OneCycleLR>(opt, lr, total_steps);
    s.per_batch = true;
  } else if (cfg.schedule == "plateau") {
    s.plateau = std::make_unique<optim::ReduceLROnPlateau>(opt, optim::ReduceLROnPlateau::min, 0.1, 1);
  }
  return s;
}

int64_t batch_size(const TrainConfig& c) {
  return c.batch_size > 0 ? c.batch_size : default_batch_size(c.model);
}

double current_lr(optim::Optimizer& opt) { return opt.param_groups().front().options().lr(); }

// ---- checkpoints ----

// The flags that shape a run; a resumed run must agree with its checkpoint on all of them.
std::map<std::string, std::string> shaping_flags(const TrainConfig& c) {
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  return {{"model", c.model},
          {"optimizer", c.optimizer},
          {"lr", num(c.lr.value_or(default_lr(c.optimizer)))},
          {"momentum", num(c.momentum)},
          {"nesterov", c.nesterov ? "true" : "false"},
          {"weight-decay", num(c.weight_decay)},
          {"schedule", c.schedule},
          {"step-size", std::to_string(c.step_size)},
          {"gamma", num(c.gamma)},
          {"batch-size", std::to_string(batch_size(c))},
          {"epochs", std::to_string(c.epochs)},
          {"init", c.init},
          {"batch-norm", c.batch_norm ? "true" : "false"},
          {"dropout", num(c.dropout)},
          {"seed", std::to_string(c.seed)},
          {"train-limit", std::to_string(c.train_limit)}};
}

// The text models' shape, also a shaping flag of their runs (graft sample rebuilds the model from it).
std::map<std::string, std::string> text_flags(const TrainConfig& c) {
  return {{"context", std::to_string(c.context)},
          {"width", std::to_string(c.width)},
          {"depth", std::to_string(c.depth)},
          {"heads", std::to_string(c.heads)}};
}

std::map<std::string, std::string> run_flags(const TrainConfig& c) {
  std::map<std::string, std::string> flags = shaping_flags(c);
  if (is_text_model(c.model)) flags.merge(text_flags(c));
  return flags;
}

io::TensorDict generator_state() {
  const Generator::State st = default_generator().get_state();
  std::vector<int64_t> words;
  for (uint64_t w : st.s) words.push_back(std::bit_cast<int64_t>(w));
  words.push_back(std::bit_cast<int64_t>(st.seed));
  words.push_back(st.has_spare ? 1 : 0);
  // Built element by element: graft::tensor({...}) goes through double, which would round the words.
  Tensor w = empty({static_cast<int64_t>(words.size())}, kInt64);
  std::copy(words.begin(), words.end(), w.data_ptr<int64_t>());
  io::TensorDict d;
  d.insert("words", w);
  d.insert("spare", tensor(std::vector<double>{st.spare}, kFloat64));
  return d;
}

// A whole decimal count in [lo, hi] from checkpoint metadata: " 2x", "-1", "" and out-of-range
// values are errors naming the file and the field (std::stoll would accept " 2x" as 2, and throw a
// bare "stoll" for "x").
int64_t parse_count(const std::string& text, const std::string& field, const std::string& file, int64_t lo,
                    int64_t hi, const std::string& op = "graft train --resume") {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  GRAFT_CHECK(!text.empty() && ec == std::errc() && ptr == end && v >= lo && v <= hi, op,
              "a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] as " + field + " in " + file,
              "\"" + text + "\"", "the checkpoint's metadata is damaged; resume from a file that graft train wrote");
  return v;
}

void set_generator_state(const io::TensorDict& d, const std::string& file) {
  const Tensor* words = d.find("words");
  const Tensor* spare = d.find("spare");
  GRAFT_CHECK(words && spare && words->dtype() == kInt64 && words->numel() == 6 && spare->dtype() == kFloat64 &&
                  spare->numel() == 1,
              "graft train --resume", "a random-number state (rng.words: 6 int64, rng.spare: 1 float64)",
              "something else in " + file, "resume from a checkpoint that graft train wrote");
  const Tensor w = words->contiguous();
  const int64_t* p = w.data_ptr<int64_t>();
  Generator::State st{};
  for (int i = 0; i < 4; ++i) st.s[i] = std::bit_cast<uint64_t>(p[i]);
  st.seed = std::bit_cast<uint64_t>(p[4]);
  st.has_spare = p[5] != 0;
  st.spare = spare->item<double>();
  // xoshiro256's all-zero state is a fixed point (every draw 0); a spare normal is finite.
  GRAFT_CHECK((st.s[0] | st.s[1] | st.s[2] | st.s[3]) != 0 && (p[5] == 0 || p[5] == 1) && std::isfinite(st.spare),
              "graft train --resume", "a random-number state graft wrote (rng.words not all zero, a flag of 0 or 1, "
              "a finite rng.spare)", "a damaged state in " + file, "resume from a checkpoint that graft train wrote");
  default_generator().set_state(st);
}

void save_run(const TrainConfig& cfg, nn::Sequential& model, optim::Optimizer& opt, const Schedule& sched,
              int64_t epochs_done, const Parallel& par) {
  // Every rank takes part in consolidating a sharded state; rank 0 writes (Note [graft train under mpirun]).
  auto optim_state = par.zero ? par.zero->consolidate_state_dict(0) : opt.state_dict();
  if (par.rank != 0) return;
  io::Metadata meta = {{"format", "graft-train/1"}, {"epochs_done", std::to_string(epochs_done)},
                       {"world_size", std::to_string(par.world)}};
  for (const auto& [k, v] : run_flags(cfg)) meta["flag." + k] = v;
  io::CheckpointParts parts = {{"model.", model->state_dict()}, {"optim.", std::move(optim_state)}, {"rng.", generator_state()}};
  const auto sched_state = sched.state_dict();
  if (!sched_state.is_empty()) parts.emplace_back("sched.", sched_state);
  io::save_checkpoint(cfg.save, parts, meta);
}

// The text models' shape flags, within validate()'s bounds.
constexpr int64_t kMaxContext = 4096, kMaxWidth = 4096, kMaxDepth = 64;

}  // namespace

RunCheckpoint load_run_checkpoint(const std::string& path, const std::string& op) {
  RunCheckpoint r;
  r.checkpoint = [&] {
    try {
      return io::load_checkpoint(path);
    } catch (const std::bad_alloc&) {
      throw Error(op, "a checkpoint that fits in memory", path + " (out of memory reading it)",
                  "free memory, or check that the file is the checkpoint graft train wrote");
    }
  }();
  const io::Checkpoint& ck = r.checkpoint;
  const std::string* format = ck.metadata.count("format") ? &ck.metadata.at("format") : nullptr;
  GRAFT_CHECK(format && *format == "graft-train/1", op, "a checkpoint written by graft train --save",
              path + " without graft train's metadata", "pass the file that --save wrote");
  TrainConfig& c = r.config;
  c.model = ck.meta("flag.model");
  c.optimizer = ck.meta("flag.optimizer");
  if (is_text_model(c.model)) {
    auto count = [&](const char* flag, int64_t hi) { return parse_count(ck.meta(std::string("flag.") + flag), flag, path, 1, hi, op); };
    c.context = count("context", kMaxContext);
    c.width = count("width", kMaxWidth);
    c.depth = count("depth", kMaxDepth);
    c.heads = count("heads", kMaxWidth);
    GRAFT_CHECK(c.width % c.heads == 0, op, "a width that --heads divides", std::to_string(c.width) + " and " +
                std::to_string(c.heads) + " heads in " + path, "the checkpoint's metadata is damaged");
  }
  return r;
}

namespace {

// Loads a checkpoint into the run and returns the number of epochs it had finished.
int64_t resume_run(const TrainConfig& cfg, nn::Sequential& model, optim::Optimizer& opt, Schedule& sched,
                   int64_t batches_per_epoch, const Parallel& par) {
  const io::Checkpoint ck = load_run_checkpoint(cfg.resume, "graft train --resume").checkpoint;
  GRAFT_CHECK(ck.meta("flag.model") == cfg.model, "graft train --resume",
              "--model " + ck.meta("flag.model") + " (as in " + cfg.resume + ")", "--model " + cfg.model,
              "resume with the flags of the run that wrote the checkpoint");
  for (const auto& [k, v] : run_flags(cfg)) {
    const std::string& saved = ck.meta("flag." + k);
    GRAFT_CHECK(saved == v, "graft train --resume", "--" + k + " " + saved + " (as in " + cfg.resume + ")",
                "--" + k + " " + v, "resume with the flags of the run that wrote the checkpoint");
  }
  model->load_state_dict(ck.part("model."));
  if (par.zero) par.zero->load_consolidated_state_dict(ck.part("optim."));
  else opt.load_state_dict(ck.part("optim."));
  const int64_t done = parse_count(ck.meta("epochs_done"), "epochs_done", cfg.resume, 0, cfg.epochs);
  const std::string saved_world = ck.metadata.count("world_size") ? ck.metadata.at("world_size") : "1";
  if (saved_world != std::to_string(par.world) && sched.per_batch) {
    // Another world size: another number of batches per epoch. The schedule goes on from the
    // same epoch (its state counts the old batches).
    for (int64_t i = 0; i < done * batches_per_epoch; ++i) sched.after_batch();
  } else {
    sched.load_state_dict(ck.part("sched.", /*required=*/false));
  }
  sched.check_resumed(done, batches_per_epoch, cfg.resume);
  set_generator_state(ck.part("rng."), cfg.resume);
  return done;
}

// ---- the run log (Note [Run log] in report.h) ----

// A write error of the log (a full disk) stops the run with a graft::Error naming --log and the
// file; the file keeps every complete line before it (LineFile cuts a partial one off).
class RunLog {
 public:
  RunLog(const TrainConfig& cfg, bool resuming) : keep_(!cfg.log.empty() || !cfg.report.empty()) {
    if (!cfg.log.empty()) file_ = std::make_unique<LineFile>(cfg.log, resuming, "graft train --log");
  }
  bool enabled() const { return keep_; }
  void add(const nlohmann::json& record) {
    if (!keep_) return;
    lines_.push_back(record.dump());
    if (file_) file_->write_line(lines_.back());
  }
  void flush() {}  // each line is written to the file as it is added
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  bool keep_;
  std::unique_ptr<LineFile> file_;
  std::vector<std::string> lines_;
};

// JSON has no NaN or infinity: such values are written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// ---- memory records (Note [Run log]) ----
nlohmann::json memory_categories_json() {
  nlohmann::json cats = nlohmann::json::array();
  for (int i = 0; i < memory::kNumCategories; ++i) cats.push_back(memory::category_name(static_cast<memory::Category>(i)));
  return cats;
}

// {"type": "memory", "epoch", "current": {category: bytes}, "peak": {...}, "peak_total", "cached"}
nlohmann::json memory_record(int64_t epoch) {
  const memory::Stats st = memory::stats();
  nlohmann::json current = nlohmann::json::object(), peak = nlohmann::json::object();
  for (int i = 0; i < memory::kNumCategories; ++i) {
    const auto c = static_cast<memory::Category>(i);
    current[memory::category_name(c)] = st[c].current_bytes;
    peak[memory::category_name(c)] = st[c].peak_bytes;
  }
  return {{"type", "memory"}, {"epoch", epoch},           {"current", current},
          {"peak", peak},     {"peak_total", st.peak_allocated_bytes}, {"cached", st.cached_bytes}};
}

int64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

// ---- evaluation ----

struct Evaluation {
  double loss = 0, accuracy = 0;
};

// Mean loss and accuracy over every prediction of `set` (one per image, or one per byte of each text
// window), `chunk` examples at a time.
Evaluation evaluate(nn::Sequential& model, const data::Dataset& set, int64_t chunk) {
  NoGradGuard no_grad;
  model->eval();
  const int64_t n = set.size();
  double loss_sum = 0;
  int64_t correct = 0, predictions = 0;
  std::vector<int64_t> indices;
  for (int64_t start = 0; start < n; start += chunk) {
    indices.resize(static_cast<size_t>(std::min<int64_t>(chunk, n - start)));
    std::iota(indices.begin(), indices.end(), start);
    const data::Example<> batch = set.get_batch(indices);  // images are normalised as they are gathered
    const Tensor logits = model->forward(batch.data);
    const Tensor target = batch.target.reshape({-1});
    const int64_t rows = target.size(0);
    loss_sum += F::cross_entropy(logits, target).item<double>() * static_cast<double>(rows);
    correct += eq(argmax(logits, 1), target).sum().item<int64_t>();
    predictions += rows;
  }
  model->train();
  return {loss_sum / static_cast<double>(std::max<int64_t>(predictions, 1)),
          static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(predictions, 1))};
}

Evaluation evaluate(nn::Sequential& model, const TrainConfig& cfg, const Data& d) {
  return evaluate(model, *d.test, is_text_model(cfg.model) ? 64 : 1000);
}

// Nats per byte -> bits per character (Note [Text task]).
double bits_per_char(double loss) { return loss / std::log(2.0); }

std::string epoch_line(const TrainConfig& cfg, const EpochRecord& r) {
  char buf[320];
  if (is_text_model(cfg.model)) {
    std::snprintf(buf, sizeof buf,
                  "epoch %lld/%lld  train_loss %.4f  test_loss %.4f  test_bpc %.3f  test_acc %.2f%%  lr %.3g  "
                  "%.0f bytes/s  %.1f s",
                  static_cast<long long>(r.epoch), static_cast<long long>(cfg.epochs), r.train_loss, r.test_loss,
                  bits_per_char(r.test_loss), 100 * r.test_accuracy, r.lr, r.examples_per_second, r.seconds);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "epoch %lld/%lld  train_loss %.4f  train_acc %.2f%%  test_loss %.4f  test_acc %.2f%%  lr %.3g  %.1f s",
                static_cast<long long>(r.epoch), static_cast<long long>(cfg.epochs), r.train_loss, 100 * r.train_accuracy,
                r.test_loss, 100 * r.test_accuracy, r.lr, r.seconds);
  return buf;
}

}  // namespace

int64_t default_batch_size(const std::string& model) {
  if (is_text_model(model)) return 32;
  return model == "cnn" ? 64 : 128;
}

std::string default_optimizer(const std::string& model) { return is_text_model(model) ? "adamw" : "sgd"; }

int64_t default_epochs(const std::string& model) { return is_text_model(model) ? 2 : 5; }

TrainConfig with_defaults(TrainConfig c) {
  if (c.optimizer.empty()) c.optimizer = default_optimizer(c.model);
  if (c.epochs == 0) c.epochs = default_epochs(c.model);
  return c;
}

double default_lr(const std::string& optimizer) {
  if (optimizer == "sgd") return 0.05;
  if (optimizer == "adagrad") return 0.01;
  return 1e-3;  // adam, adamw, rmsprop
}

// The largest values the numeric flags accept (issue 14, item 11): beyond them a count overflows
// int64 arithmetic somewhere (steps = epochs x batches, the effective batch = batch x accumulate,
// a plan's bytes = batch x features x 4), or the value is a typo no run needs.
constexpr int64_t kMaxBatchSize = int64_t{1} << 24;  // 16,777,216 examples
constexpr int64_t kMaxEpochs = 1000000;
constexpr int64_t kMaxWorkers = 64;

int max_threads() {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return 4 * cores;
}

// Bounds of the numeric flags, before anything is computed from them.
void check_bounds(const TrainConfig& c) {
  auto in_range = [](const char* flag, int64_t v, int64_t lo, int64_t hi, const std::string& hint) {
    GRAFT_CHECK(v >= lo && v <= hi, std::string("graft train ") + flag,
                "a value in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", std::to_string(v), hint);
  };
  GRAFT_CHECK(c.batch_size >= 0 && c.batch_size <= kMaxBatchSize, "graft train --batch-size",
              "a positive batch size of at most " + std::to_string(kMaxBatchSize) + " (or 0 for the model's default)",
              std::to_string(c.batch_size), "128 is a good start");
  in_range("--epochs", c.epochs, 1, kMaxEpochs, "5 epochs reach the README's accuracy");
  in_range("--step-size", c.step_size, 1, kMaxEpochs, "decay every few epochs, e.g. --step-size 2");
  in_range("--stop-after", c.stop_after, 0, kMaxEpochs, "0 runs to --epochs");
  in_range("--monitor-every", c.monitor_every, 1, std::numeric_limits<int64_t>::max(),
           "1 samples every step; 10 every tenth");
  in_range("--threads", c.threads, 0, max_threads(),
           "at most 4 threads per core (" + std::to_string(max_threads() / 4) + " cores here); 0 uses every core");
  in_range("--workers", c.workers, 0, kMaxWorkers, "1 prepares the next batch in the background");
  auto finite = [](const char* flag, double v) {
    GRAFT_CHECK(std::isfinite(v), std::string("graft train ") + flag, "a finite number", std::to_string(v), "");
  };
  finite("--momentum", c.momentum);
  finite("--weight-decay", c.weight_decay);
  finite("--gamma", c.gamma);
  finite("--dropout", c.dropout);
  // Batch norm over a batch of one example has no variance to normalise with (PyTorch raises
  // "Expected more than 1 value per channel when training"). The mlp's BatchNorm1d sees one value per
  // channel and example; the cnn's BatchNorm2d sees H x W per example, so a batch of 1 works there.
  GRAFT_CHECK(!(c.batch_norm && c.model == "mlp" && c.batch_size == 1), "graft train --batch-norm",
              "a batch of at least 2 examples (batch norm needs more than one value per channel)", "--batch-size 1",
              "use --batch-size 2 or more, or --no-batch-norm");
}

// The text models' flags; the image-only flags are refused with them rather than ignored.
void check_text_flags(const TrainConfig& c) {
  if (!is_text_model(c.model)) return;
  const std::string op = "graft train --model " + c.model;
  auto in_range = [&](const char* flag, int64_t v, int64_t hi, const std::string& hint) {
    GRAFT_CHECK(v >= 1 && v <= hi, op + " " + flag, "a value in [1, " + std::to_string(hi) + "]", std::to_string(v), hint);
  };
  in_range("--context", c.context, kMaxContext, "128 bytes is a few lines of text");
  in_range("--width", c.width, kMaxWidth, "128 trains in minutes on two cores");
  in_range("--depth", c.depth, kMaxDepth, "2 blocks (or LSTM layers) train in minutes");
  in_range("--heads", c.heads, kMaxWidth, "4 heads of 32 for --width 128");
  GRAFT_CHECK(c.width % c.heads == 0, op + " --heads", "a number of heads that divides --width " + std::to_string(c.width),
              std::to_string(c.heads), "e.g. --width 128 --heads 4");
  GRAFT_CHECK(!c.batch_norm && c.init == "default" && c.classes == 0, op,
              "no --batch-norm, --init or --classes (image-model flags)", "one of them", "leave them out");
}

void validate(const TrainConfig& config) {
  const TrainConfig c = with_defaults(config);
  check_bounds(c);
  check_choice("--model", c.model, {"mlp", "cnn", "gpt", "lstm"});
  if (!c.optimizer.empty()) check_choice("--optimizer", c.optimizer, {"sgd", "adam", "adamw", "rmsprop", "adagrad"});
  check_text_flags(c);
  GRAFT_CHECK(!c.checkpoint_attention || c.model == "gpt", "graft train --checkpoint-attention", "--model gpt",
              "--model " + c.model, "only the Transformer has attention to recompute");
  check_choice("--schedule", c.schedule, {"none", "step", "exponential", "cosine", "onecycle", "plateau"});
  check_choice("--init", c.init,
               {"default", "kaiming_uniform", "kaiming_normal", "xavier_uniform", "xavier_normal", "orthogonal"});
  check_choice("--progress", c.progress, {"auto", "bar", "lines", "none"});
  auto positive = [](const char* flag, double v, const char* hint) {
    GRAFT_CHECK(v > 0, std::string("graft train ") + flag, "a positive value", std::to_string(v), hint);
  };
positive("--gamma", c.gamma, "0.1 divides the learning rate by ten");
  GRAFT_CHECK(!c.lr || (*c.lr > 0 && std::isfinite(*c.lr)), "graft train --lr", "a positive learning rate",
              std::to_string(c.lr.value_or(0)),
              "try 0.05 for sgd, 0.001 for adam");
  GRAFT_CHECK(c.dropout >= 0 && c.dropout < 1, "graft train --dropout", "a probability in [0, 1)",
              std::to_string(c.dropout), "0.2 is typical; 0 turns dropout off");
  GRAFT_CHECK(c.momentum >= 0 && c.weight_decay >= 0 && c.train_limit >= 0 && c.stop_after >= 0,
              "graft train", "non-negative --momentum, --weight-decay, --train-limit and --stop-after",
              "a negative value", "pass 0 to turn one off");
  GRAFT_CHECK(c.stop_after == 0 || !c.save.empty(), "graft train --stop-after", "--save FILE as well",
              "no --save", "a run stopped early continues with --resume FILE, so save it");
  GRAFT_CHECK(c.classes >= 0 && c.classes <= 256, "graft train --classes",
              "0 (10 for Fashion-MNIST, the largest training label + 1 for --data) or 1 .. 256",
              std::to_string(c.classes), "IDX label files hold uint8 labels, 0 .. 255");
  // Output paths, before any work (issue 14, items 4 and 5). --resume may name --save's file (a
  // run continues its own checkpoint), but not the log's or the report's.
  check_output_directory("graft train", "--save", c.save);
  check_output_directory("graft train", "--log", c.log);
  check_output_directory("graft train", "--report", c.report);
  // An existing target must be a regular file (symlinks followed; issue 14, item 1).
  check_output_file("graft train", "--save", c.save);
  check_output_file("graft train", "--log", c.log);
  check_output_file("graft train", "--report", c.report);
  check_distinct_paths("graft train", {{"--save", c.save}, {"--log", c.log}, {"--report", c.report}});
  check_distinct_paths("graft train", {{"--resume", c.resume}, {"--log", c.log}, {"--report", c.report}});
}

namespace {

// ---- the steps of a run ----

int64_t parameter_count(nn::Sequential& model) {
  int64_t n = 0;
  for (const Tensor& p : model->parameters()) n += p.numel();
  return n;
}

// True when the epoch would end in a batch of one example that the mlp's batch norm cannot train
// on (issue 14, item 13: it used to fail at the end of the first epoch, after all its work). That one
// example is left out of each epoch instead (drop_last; the shuffle picks a different one each
// epoch), and the run says so.
bool drops_last_example(const TrainConfig& cfg, int64_t n) {
  return cfg.batch_norm && cfg.model == "mlp" && n > 1 && n % batch_size(cfg) == 1;
}

data::DataLoader make_loader(const TrainConfig& cfg, const Data& d, const Parallel& par) {
  const int64_t n = d.train->size();
  GRAFT_CHECK(!(cfg.batch_norm && cfg.model == "mlp" && n == 1), "graft train --batch-norm",
              "at least 2 training examples (batch norm needs more than one value per channel)", "1 example",
              "raise --train-limit, or use --no-batch-norm");
  return data::DataLoader(d.train,
                          data::DataLoaderOptions(batch_size(cfg))
                              .shuffle(true)
                              .seed(cfg.seed)
                              .drop_last(drops_last_example(cfg, n))
                              .num_workers(cfg.workers)
                              .distributed(par.world, par.rank));
}

// Resumes from --resume (returning the epochs it had finished), or announces a new run (0).
int64_t resume_or_announce(const TrainConfig& cfg, const Data& d, nn::Sequential& model, optim::Optimizer& opt,
                           Schedule& sched, int64_t batches_per_epoch, Progress& progress, const Parallel& par) {
  if (!cfg.resume.empty()) {
    const int64_t first_epoch = resume_run(cfg, model, opt, sched, batches_per_epoch, par);
    progress.message("resumed from " + cfg.resume + " after epoch " + std::to_string(first_epoch));
    return first_epoch;
  }
  progress.message("graft train: " + cfg.model + " on " + d.what + ", " + std::to_string(parameter_count(model)) +
                   " parameters, " + cfg.optimizer + ", " + std::to_string(get_num_threads()) + " threads" +
                   (par.world > 1 ? " per rank, " + std::to_string(par.world) + " ranks (global batch " +
                                        std::to_string(par.world * batch_size(cfg)) + ")" +
                                        (par.zero ? ", ZeRO stage " + std::to_string(cfg.zero) : "")
                                  : std::string()));
  if (drops_last_example(cfg, d.train->size()))
    progress.message("batch norm cannot train on a last batch of 1 example: each epoch leaves one example out");
  return 0;
}

// The run log's first record (Note [Run log]): how the run was configured.
nlohmann::json run_record(const TrainConfig& cfg, int64_t parameters) {
  return {{"type", "run"},
          {"command", "graft train"},
          {"model", cfg.model},
          {"optimizer", cfg.optimizer},
          {"lr", cfg.lr.value_or(default_lr(cfg.optimizer))},
          {"schedule", cfg.schedule},
          {"batch_size", batch_size(cfg)},
          {"epochs", cfg.epochs},
          {"batch_norm", cfg.batch_norm},
          {"dropout", cfg.dropout},
          {"init", cfg.init},
          {"seed", cfg.seed},
          {"parameters", parameters}};
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
  Run(const TrainConfig& cfg, const Data& d, nn::Sequential& model, optim::Optimizer& opt, data::DataLoader& loader,
      Schedule& sched, Progress& progress, RunLog& log, TrainResult& result, Parallel& par)
      : par_(par),
        cfg_(cfg),
        d_(d),
        model_(model),
        opt_(opt),
        loader_(loader),
        sched_(sched),
        progress_(progress),
        log_(log),
        result_(result) {}

  // With a run log: gradient health (Note [Gradient monitor]) and, for the first steps, the
  // allocation events (Note [Memory history]) go into it.
  void watch(int64_t first_epoch) {
    if (!log_.enabled()) return;
    const int64_t every = std::max<int64_t>(1, cfg_.monitor_every);
    monitor_.emplace(*model_.ptr(), diagnostics::GradMonitorOptions{.every = every, .optimizer = &opt_});
    nlohmann::json params = nlohmann::json::array();
    for (const auto& item : model_->named_parameters()) {
      const auto sizes = item.value().sizes();
      params.push_back({{"name", item.key()}, {"shape", std::vector<int64_t>(sizes.begin(), sizes.end())}});
    }
    log_.add({{"type", "monitor"}, {"every", every}, {"params", params}});
    memory::set_step(first_epoch * loader_.size());
    memory::record_history(true, 500000);
    recording_ = true;
  }

  // The epochs [first_epoch, last_epoch): train, evaluate, checkpoint, log.
  void epochs(int64_t first_epoch, int64_t last_epoch) {
    // The peak of the training steps alone (what graft plan predicts), apart from evaluation's.
    overall_peak_ = memory::stats().peak_allocated_bytes;
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
  void log_monitor();
  void log_timeline();

  static constexpr int64_t kTimelineSteps = 3;  // steps of allocation events in the timeline

  Parallel& par_;

  const TrainConfig& cfg_;
  const Data& d_;
  nn::Sequential& model_;
  optim::Optimizer& opt_;
  data::DataLoader& loader_;
  Schedule& sched_;
  Progress& progress_;
  RunLog& log_;
  TrainResult& result_;
  std::optional<diagnostics::GradMonitor> monitor_;
  size_t monitor_records_ = 0, monitor_flags_ = 0;  // how many of the monitor's are in the log
  bool recording_ = false;                          // memory history is on
  int64_t overall_peak_ = 0;
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
    const Tensor logits = par_.ddp ? (*par_.ddp)(batch.data) : model_->forward(batch.data);
    const Tensor target = batch.target.reshape({-1});  // text: one target per position (Note [Text task])
    const Tensor loss = F::cross_entropy(logits, target);
    opt_.zero_grad();
    loss.backward();
    // ZeRO stage 2 keeps only shards of the gradients: a sampled step gathers them for the monitor,
    // whose figures are then the global (averaged) gradients, as with DDP.
    // (Every rank gathers: only rank 0 has the monitor.)
    const bool gather = par_.monitored && par_.zero && cfg_.zero == 2 && step % std::max<int64_t>(1, cfg_.monitor_every) == 0;
    if (gather) par_.zero->gather_gradients();
    if (monitor_) monitor_->after_backward(step);
    if (gather) par_.zero->release_gathered_gradients();
    opt_.step();
    if (monitor_) {
      monitor_->after_step();
      log_monitor();
    }
    sched_.after_batch();
    const double l = loss.item<double>();  // a number, not a tensor: no graph is kept alive
    GRAFT_CHECK(std::isfinite(l), "graft train", "a finite training loss",
                std::to_string(l) + " at epoch " + std::to_string(epoch + 1), "lower --lr or turn on --batch-norm");
    {
      NoGradGuard no_grad;
      sums.correct += eq(argmax(logits, 1), target).sum().item<int64_t>();
    }
    const int64_t n = target.size(0);
    sums.loss_sum += l * static_cast<double>(n);
    sums.seen += n;
    ++batches;
    progress_.batch_done(l, n);
    if (recording_ && batches >= kTimelineSteps) log_timeline();
    if (log_.enabled())
      log_.add({{"type", "step"},
                {"step", step},
                {"epoch", epoch + 1},
                {"loss", number(l)},
                {"lr", number(current_lr(opt_))}});
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
  overall_peak_ = std::max(overall_peak_, memory::stats().peak_allocated_bytes);
  EpochRecord r;
  r.epoch = epoch + 1;
  r.train_loss = sums.loss_sum / static_cast<double>(std::max<int64_t>(sums.seen, 1));
  r.train_accuracy = static_cast<double>(sums.correct) / static_cast<double>(std::max<int64_t>(sums.seen, 1));
  r.lr = current_lr(opt_);
  r.examples_per_second = static_cast<double>(sums.seen) / std::max(sums.seconds, 1e-9);
  const Evaluation ev = evaluate(model_, cfg_, d_);
  r.test_loss = ev.loss;
  r.test_accuracy = ev.accuracy;
  sched_.after_epoch(r.train_loss);
  if (!cfg_.save.empty()) save_run(cfg_, model_, opt_, sched_, epoch + 1, par_);
  overall_peak_ = std::max(overall_peak_, memory::stats().peak_allocated_bytes);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
  progress_.end_epoch(epoch_line(cfg_, r));
  result_.history.push_back(r);
  log_.add({{"type", "epoch"},
            {"epoch", r.epoch},
            {"last_step", (epoch + 1) * loader_.size() - 1},
            {"train_loss", number(r.train_loss)},
            {"train_accuracy", r.train_accuracy},
            {"test_loss", number(r.test_loss)},
            {"test_accuracy", r.test_accuracy},
            {"lr", number(r.lr)},
            {"seconds", r.seconds},
            {"examples_per_second", number(r.examples_per_second)}});
  if (recording_) log_timeline();
  log_.add(memory_record(epoch + 1));
  log_.flush();
}

// Writes the monitor's records and flags that are not in the log yet.
void Run::log_monitor() {
  const auto& recs = monitor_->records();
  for (; monitor_records_ < recs.size(); ++monitor_records_) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& p : recs[monitor_records_].params)
      params[p.name] = {{"grad_norm", number(p.grad_norm)},
                        {"grad_max", number(p.grad_max)},
                        {"weight_norm", number(p.weight_norm)},
                        {"update_ratio", number(p.update_ratio)},
                        {"zero_fraction", number(p.zero_fraction)},
                        {"nan", p.nan_count},
                        {"inf", p.inf_count}};
    log_.add({{"type", "grad"}, {"step", recs[monitor_records_].step}, {"params", params}});
  }
  const auto& flags = monitor_->flags();
  for (; monitor_flags_ < flags.size(); ++monitor_flags_) {
    const auto& f = flags[monitor_flags_];
    log_.add({{"type", "flag"},
              {"step", f.step},
              {"kind", f.kind},
              {"param", f.param},
              {"value", number(f.value)},
              {"message", f.message}});
  }
}

// Stops the memory history and writes its events as a timeline by category for the report.
void Run::log_timeline() {
  memory::record_history(false);
  recording_ = false;
  const auto events = memory::history();
  nlohmann::json points = nlohmann::json::array();
  const size_t stride = std::max<size_t>(1, events.size() / 2000);  // at most ~2000 points
  for (size_t i = 0; i < events.size(); i += stride) {
    const auto& e = events[i];
    points.push_back({{"seq", e.seq},
                      {"step", e.step},
                      {"op", e.op ? e.op : ""},
                      {"totals", std::vector<int64_t>(e.totals.begin(), e.totals.end())}});
  }
  log_.add({{"type", "memory_timeline"},
            {"categories", memory_categories_json()},
            {"events", events.size()},
            {"points", points}});
}

void Run::finish(int64_t first_epoch, int64_t last_epoch, std::chrono::steady_clock::time_point t0, std::ostream& out) {
  TrainResult& result = result_;
  result.epochs = std::max(first_epoch, last_epoch);
  if (!result.history.empty()) {
    result.train_loss = result.history.back().train_loss;
    result.test_accuracy = result.history.back().test_accuracy;
    result.test_loss = result.history.back().test_loss;
  } else {  // resumed a finished run: report its model
    const Evaluation ev = evaluate(model_, cfg_, d_);
    result.test_accuracy = ev.accuracy;
    result.test_loss = ev.loss;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    const memory::Stats st = memory::stats();
    result.peak_memory_bytes = std::max(overall_peak_, st.peak_allocated_bytes);
    for (int i = 0; i < memory::kNumCategories; ++i) {
      const auto c = static_cast<memory::Category>(i);
      result.peak_memory_by_category[memory::category_name(c)] = st[c].peak_bytes;
    }
    result.peak_rss_bytes = peak_rss_bytes();
  }
  char buf[200];
  if (is_text_model(cfg_.model))
    std::snprintf(buf, sizeof buf,
                  "held-out loss %.4f (%.3f bits per character) after %lld epochs (%.1f s, peak tensor memory %.1f MiB)",
                  result.test_loss, bits_per_char(result.test_loss), static_cast<long long>(result.epochs),
                  result.seconds, static_cast<double>(result.peak_memory_bytes) / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "test accuracy %.2f%% after %lld epochs (%.1f s, peak tensor memory %.1f MiB)",
                  100 * result.test_accuracy, static_cast<long long>(result.epochs), result.seconds,
                  static_cast<double>(result.peak_memory_bytes) / (1 << 20));
  progress_.message(buf);
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
  const auto t0 = std::chrono::steady_clock::now();
  // Under mpirun: see Note [graft train under mpirun] above.
  if (!dist::is_initialized()) dist::init_process_group();
  Parallel par;
  par.world = dist::get_world_size();
  par.rank = dist::get_rank();
  par.monitored = !cfg.log.empty() || !cfg.report.empty();
  std::ostream silent(nullptr);
  std::ostream& out = par.rank == 0 ? rank0_out : silent;
  if (par.rank != 0) {  // rank 0 speaks for the run
    cfg.log.clear();
    cfg.report.clear();
    cfg.json = false;
    cfg.progress = "none";
  }
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (par.world > 1)
    if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
      threads = std::max(1, threads / std::max(1, std::atoi(local)));
  set_num_threads(cfg.threads > 0 ? cfg.threads : threads);
  manual_seed(cfg.seed);

  // Data, then the model and its optimiser and schedule; the reported peak counts from the loading on.
  memory::reset_peak_stats();
  const Data d = load_data(cfg);
  nn::Sequential model = make_model(cfg, d);
  initialise(model, cfg.init);
  if (cfg.checkpoint_attention) checkpoint_attention(*model.ptr());
  std::unique_ptr<optim::Optimizer> opt;
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
  data::DataLoader loader = make_loader(cfg, d, par);
  Schedule sched = make_schedule(cfg, *opt, loader.size());

  // Resume, or start; the log and what watches the run.
  Progress progress(out, Progress::style_for(cfg.progress, out));
  const int64_t first_epoch = resume_or_announce(cfg, d, model, *opt, sched, loader.size(), progress, par);
  TrainResult result;
  result.parameters = parameter_count(model);
  RunLog log(cfg, !cfg.resume.empty());
  if (cfg.resume.empty()) log.add(run_record(cfg, result.parameters));
  const int64_t last_epoch = cfg.stop_after > 0 ? std::min(cfg.epochs, first_epoch + cfg.stop_after) : cfg.epochs;
  Run run(cfg, d, model, *opt, loader, sched, progress, log, result, par);
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
                      {"peak_rss_bytes", r.peak_rss_bytes},
                      {"parameters", r.parameters},
                      {"model", cfg.model},
                      {"optimizer", cfg.optimizer},
                      {"batch_size", batch_size(cfg)},
                      {"seed", cfg.seed}};
  if (!r.history.empty()) j["examples_per_second"] = r.history.back().examples_per_second;
  if (is_text_model(cfg.model)) {
    j["test_bits_per_char"] = bits_per_char(r.test_loss);
    j["context"] = cfg.context;
    j["width"] = cfg.width;
    j["depth"] = cfg.depth;
    j["heads"] = cfg.heads;
  }
  return j.dump();
}

// ---- graft plan ----

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
  const Data d = load_data(cfg);
  const int64_t loading_peak = memory::stats().peak_allocated_bytes;
  const int64_t data_bytes = memory::stats()[memory::Category::Data].current_bytes;
  nn::Sequential model = make_model(cfg, d);
  initialise(model, cfg.init);
  if (cfg.checkpoint_attention) checkpoint_attention(*model.ptr());
  auto opt = make_optimizer(cfg, model->parameters());
  const int64_t batch = batch_size(cfg);
  const bool text = is_text_model(cfg.model);
  const std::vector<int64_t> shape = text ? std::vector<int64_t>{batch, cfg.context}
                                          : std::vector<int64_t>{batch, d.train_x.sizes()[1], d.train_x.sizes()[2],
                                                                 d.train_x.sizes()[3]};

  auto plan_with = [&](int64_t segments) {
    memory::PlanOptions o;
    if (text) o.input_dtype = kInt64;  // bytes
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
      << "  the data set (" << (text ? "uint8 text, training and held-out" : "uint8 images and labels, train and test")
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

