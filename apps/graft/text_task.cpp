// The text task (Note [Task seam] in task.h): the gpt and the lstm on bytes (Note [Text task] in
// text.h).
#include <graft/graft.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "config.h"
#include "run_checkpoint.h"
#include "task.h"
#include "text.h"
#include "run_result.h"

namespace graft::cli {
namespace {

// The text models' shape flags, within check_flags' bounds.
constexpr int64_t kMaxContext = 4096, kMaxWidth = 4096, kMaxDepth = 64;

// Nats per byte -> bits per character (Note [Text task]).
double bits_per_char(double loss) { return loss / std::log(2.0); }

class TextTask final : public Task {
 public:
  explicit TextTask(TextNet net) : net_(net) {}

  int64_t default_batch_size() const override { return 32; }  // windows
  std::string default_optimizer() const override { return "adamw"; }  // SGD trains Transformers poorly
  int64_t default_epochs() const override { return 2; }  // an epoch of the fortunes is 2 million bytes
  bool has_attention() const override { return net_ == TextNet::kGpt; }
  bool generates_bytes() const override { return true; }

  // The text models' flags; the image-only flags are refused with them rather than ignored.
  void check_flags(const TrainConfig& c) const override {
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

  // The model's shape, also a shaping flag of its runs (graft sample rebuilds the model from it).
  std::map<std::string, std::string> shape_flags(const TrainConfig& c) const override {
    return {{"context", std::to_string(c.context)},
            {"width", std::to_string(c.width)},
            {"depth", std::to_string(c.depth)},
            {"heads", std::to_string(c.heads)}};
  }

  void read_shape_flags(const io::Checkpoint& ck, const std::string& path, const std::string& op,
                        TrainConfig& c) const override {
    auto count = [&](const char* flag, int64_t hi) { return parse_count(ck.meta(std::string("flag.") + flag), flag, path, 1, hi, op); };
    c.context = count("context", kMaxContext);
    c.width = count("width", kMaxWidth);
    c.depth = count("depth", kMaxDepth);
    c.heads = count("heads", kMaxWidth);
    GRAFT_CHECK(c.width % c.heads == 0, op, "a width that --heads divides", std::to_string(c.width) + " and " +
                std::to_string(c.heads) + " heads in " + path, "the checkpoint's metadata is damaged");
  }

  // Windows of --context bytes (Note [Text task]); --train-limit keeps the first N.
  TaskData load(const TrainConfig& cfg) const override {
    const TextCorpus corpus = load_text(cfg.data, cfg.context);
    TextDataset train(corpus.train, cfg.context);
    if (cfg.train_limit > 0 && cfg.train_limit < train.size()) train = train.head(cfg.train_limit);
    TaskData d;
    d.classes = kVocab;
    d.example_sizes = {cfg.context};
    d.what = std::to_string(train.size()) + " windows of " + std::to_string(cfg.context) + " bytes (" +
             std::to_string(corpus.train.size()) + " bytes of text from " + corpus.source + ", " +
             std::to_string(corpus.files) + (corpus.files == 1 ? " file" : " files") + "; " +
             std::to_string(corpus.held_out.size()) + " held out)";
    d.train = std::make_shared<const TextDataset>(std::move(train));
    d.test = std::make_shared<const TextDataset>(corpus.held_out, cfg.context);
    return d;
  }

  nn::Sequential build_model(const TrainConfig& cfg, const TaskData&) const override {
    return build_text_model(cfg, net_);
  }
  std::optional<DType> input_dtype() const override { return kInt64; }  // bytes
  std::string data_description() const override { return "uint8 text, training and held-out"; }
  int64_t eval_chunk() const override { return 64; }

  std::string epoch_line(const TrainConfig& cfg, const EpochRecord& r) const override {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "epoch %lld/%lld  train_loss %.4f  test_loss %.4f  test_bpc %.3f  test_acc %.2f%%  lr %.3g  "
                  "%.0f bytes/s  %.1f s",
                  static_cast<long long>(r.epoch), static_cast<long long>(cfg.epochs), r.train_loss, r.test_loss,
                  bits_per_char(r.test_loss), 100 * r.test_accuracy, r.lr, r.examples_per_second, r.seconds);
    return buf;
  }

  std::string result_line(const TrainResult& result) const override {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "held-out loss %.4f (%.3f bits per character) after %lld epochs (%.1f s, peak tensor memory %.1f MiB)",
                  result.test_loss, bits_per_char(result.test_loss), static_cast<long long>(result.epochs),
                  result.seconds, static_cast<double>(result.peak_memory_bytes) / (1 << 20));
    return buf;
  }

  void add_result_fields(const TrainConfig& cfg, const TrainResult& r, nlohmann::json& j) const override {
    j["test_bits_per_char"] = bits_per_char(r.test_loss);
    j["context"] = cfg.context;
    j["width"] = cfg.width;
    j["depth"] = cfg.depth;
    j["heads"] = cfg.heads;
  }

 private:
  TextNet net_;
};

}  // namespace

std::unique_ptr<Task> make_text_task(TextNet net) { return std::make_unique<TextTask>(net); }

}  // namespace graft::cli
