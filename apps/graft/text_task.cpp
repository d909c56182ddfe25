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

// Note [Shape flags and the weights]
// graft sample (and --resume) rebuild a text model from the checkpoint's flag.context, flag.width,
// flag.depth and flag.heads, then load its weights. A width, context or depth that disagrees with the
// weights' shapes is an error naming the flag; heads leave no trace in any weight's shape (attention's
// projections are (3 width, width) for any number of heads), so a run also records its shape flags as
// int64 tensors "shape.<flag>" (save_run), and an edited flag.heads disagrees with shape.heads.
// Checkpoints from before these records are checked against the weights alone.

// True when some tensor of `ck` is named `prefix`... .
bool has_prefix(const io::Checkpoint& ck, const std::string& prefix) {
  for (const auto& item : ck.tensors)
    if (item.key().rfind(prefix, 0) == 0) return true;
  return false;
}

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
  void check_flags(const TrainConfig& c, const std::string& command) const override {
    refuse_flags(c, command, {"--batch-norm", "--init", "--classes"}, "the image models' (mlp, cnn)");
    // The LSTM has no attention heads: --heads given on the command line is refused (a library
    // caller's value is left alone: the shared small configurations of the tests set it).
    GRAFT_CHECK(has_attention() || !c.given_flags.count("--heads"), command + " --heads",
                "no --heads with --model " + c.model + " (only gpt has attention heads)", "--heads given",
                "leave --heads out: --model " + c.model + " does not read it");
    const std::string op = command + " --model " + c.model;
    auto in_range = [&](const char* flag, int64_t v, int64_t hi, const std::string& hint) {
      GRAFT_CHECK(v >= 1 && v <= hi, op + " " + flag, "a value in [1, " + std::to_string(hi) + "]", std::to_string(v), hint);
    };
    in_range("--context", c.context, kMaxContext, "128 bytes is a few lines of text");
    in_range("--width", c.width, kMaxWidth, "128 trains in minutes on two cores");
    in_range("--depth", c.depth, kMaxDepth, "2 blocks (or LSTM layers) train in minutes");
    in_range("--heads", c.heads, kMaxWidth, "4 heads of 32 for --width 128");
    GRAFT_CHECK(c.width % c.heads == 0, op + " --heads", "a number of heads that divides --width " + std::to_string(c.width),
                std::to_string(c.heads), "e.g. --width 128 --heads 4");
  }

  // The model's shape, also a shaping flag of its runs (graft sample rebuilds the model from it).
  std::map<std::string, std::string> shape_flags(const TrainConfig& c) const override {
    return {{"context", std::to_string(c.context)},
            {"width", std::to_string(c.width)},
            {"depth", std::to_string(c.depth)},
            {"heads", std::to_string(c.heads)}};
  }

  // The stored flags, then each against what the weights say (issue 34, item 11: an edited
  // flag.heads sampled without a word). Note [Shape flags and the weights].
  void read_shape_flags(const io::Checkpoint& ck, const std::string& path, const std::string& op,
                        TrainConfig& c) const override {
    auto count = [&](const char* flag, int64_t hi) {
      return parse_count(ck.meta(std::string("flag.") + flag), flag, path, 1, hi, op);
    };
    c.context = count("context", kMaxContext);
    c.width = count("width", kMaxWidth);
    c.depth = count("depth", kMaxDepth);
    c.heads = count("heads", kMaxWidth);
    auto agree = [&](const char* flag, int64_t stored, int64_t weights, const std::string& evidence) {
      GRAFT_CHECK(stored == weights, op,
                  "flag." + std::string(flag) + " " + std::to_string(weights) + " as the weights say (" + evidence +
                      ")",
                  "flag." + std::string(flag) + " " + std::to_string(stored) + " in " + path,
                  "the checkpoint's metadata was edited or damaged; use the file graft train --save wrote");
    };
    // The shape flags as the run recorded them in tensors ("shape.<flag>", int64), next to the metadata.
    for (const auto& [flag, value] : shape_flags(c)) {
      const Tensor* rec = ck.tensors.find("shape." + flag);
      if (!rec) continue;  // a checkpoint from before the records
      GRAFT_CHECK(rec->dtype() == kInt64 && rec->numel() == 1, op,
                  "shape." + flag + ": one int64",
                  shape_str(rec->sizes()) + " " + dtype_name(rec->dtype()) + " in " + path,
                  "the checkpoint is damaged; use the file graft train --save wrote");
      agree(flag.c_str(), std::stoll(value), rec->item<int64_t>(), "shape." + flag + " holds the run's --" + flag);
    }
    const bool gpt = net_ == TextNet::kGpt;
    GRAFT_CHECK(!gpt || c.width % c.heads == 0, op, "flag.heads dividing flag.width " +
                std::to_string(c.width), "flag.heads " + std::to_string(c.heads) + " in " + path,
                "the checkpoint's metadata is damaged; use the file graft train --save wrote");
    // The weights' own shapes: the byte embeddings (256, width), the positions (context, width) and
    // one block (gpt) or one LSTM layer per --depth.
    if (const Tensor* e = ck.tensors.find("model.embed.bytes.weight"); e && e->dim() == 2)
      agree("width", c.width, e->size(1), "model.embed.bytes.weight is " + shape_str(e->sizes()));
    if (const Tensor* p = ck.tensors.find("model.embed.positions"); gpt && p && p->dim() == 2)
      agree("context", c.context, p->size(0), "model.embed.positions is " + shape_str(p->sizes()));
    const std::string layer = gpt ? "model.block" : "model.lstm.lstm.weight_ih_l";
    int64_t layers = 0;
    while (layers <= kMaxDepth && has_prefix(ck, layer + std::to_string(layers) + (gpt ? "." : ""))) ++layers;
    if (layers > 0)
      agree("depth", c.depth, layers, std::to_string(layers) + (gpt ? " blocks" : " LSTM layers") + " of weights");
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
