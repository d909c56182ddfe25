// The text task's data and models (text.h, Note [Text task]).
#include "text.h"

#include "config.h"
#include "line_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <ostream>
#include <thread>
#include <vector>


namespace graft::cli {
namespace {

namespace nn = graft::nn;
namespace fs = std::filesystem;

constexpr int64_t kMaxTextBytes = int64_t{1} << 30;  // 1 GiB: more is not a text a 2-core run trains on


// Appends the whole regular file `path` to `text`. O_NONBLOCK: opening a FIFO returns at once (and is
// then refused as not a regular file) instead of blocking until a writer appears.
void append_file(const std::string& path, std::string& text) {
  const char* op = "graft train --data";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  GRAFT_CHECK(fd >= 0, op, "a readable text file", path + " (" + errno_text(errno) + ")", "check the path");
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!regular) ::close(fd);
  GRAFT_CHECK(regular, op, "a regular file or a directory of them", path + " (a device, FIFO or socket)",
              "pass a text file");
  // st_size refuses a file too large at once, before any read; the read itself goes to the end of
  // the file, since a procfs file (/proc/self/status) has st_size 0 and content nonetheless (issue
  // 34, item 11: it was read as "0 bytes"). One byte past the limit is read to notice a longer one.
  const auto limit = static_cast<size_t>(kMaxTextBytes);
  auto too_long = [&](size_t bytes) {
    if (bytes > limit) ::close(fd);
    GRAFT_CHECK(bytes <= limit, op, "at most 1 GiB of text", path + " makes " + std::to_string(bytes) + " bytes",
                "train on a part of it");
  };
  too_long(static_cast<size_t>(st.st_size) + text.size());
  const size_t start = text.size();
  size_t end = start;
  int read_errno = 0;
  for (;;) {
    // First st_size + 1 bytes (a regular file is then read whole and its end seen without growing
    // the string again), then more as long as there is more (a procfs file).
    const size_t want = end == start ? std::max<size_t>(static_cast<size_t>(st.st_size) + 1, 4096)
                                     : std::max<size_t>(end - start, 1 << 16);
    text.resize(std::min(end + want, limit + 1));
    if (end == text.size()) break;  // limit + 1 bytes read
    const ssize_t n = ::read(fd, text.data() + end, text.size() - end);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_errno = errno;
    if (n <= 0) break;  // the end of the file, or an error
    end += static_cast<size_t>(n);
  }
  text.resize(end);
  too_long(end);
  ::close(fd);
  errno = read_errno;
  GRAFT_CHECK(read_errno == 0, op, "a readable text file", path + " (" + errno_text(errno) + " after " +
              std::to_string(end - start) + " bytes)", "check the file and its permissions");
}

// The files a directory contributes: its regular files in name order, hidden ones left out, and in
// the fortunes directory the strfile indexes (.dat) and UTF-8 copies (.u8) too.
std::vector<std::string> text_files(const fs::path& dir) {
  std::error_code ec;
  const bool fortunes = fs::equivalent(dir, kFortunesDir, ec);
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || !entry.is_regular_file(ec)) continue;
    const std::string ext = entry.path().extension().string();
    if (fortunes && (ext == ".dat" || ext == ".u8")) continue;
    files.push_back(entry.path().string());
  }
  GRAFT_CHECK(!ec, "graft train --data", "a readable directory", dir.string() + " (" + ec.message() + ")",
              "check its permissions");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TextCorpus load_text(const std::string& path, int64_t context) {
  const std::string root = path.empty() ? std::string(kFortunesDir) : path;
  const char* op = "graft train --data";
  std::error_code ec;
  const auto status = fs::status(root, ec);
  GRAFT_CHECK(fs::exists(status), op, "a text file or a directory of text files", root + " does not exist",
              path.empty() ? "install Debian's fortunes package (tools/install-deps.sh does), or pass --data FILE"
                           : "check the path");
  TextCorpus c;
  c.source = root;
  std::string text;
  if (fs::is_directory(status)) {
    for (const std::string& f : text_files(root)) {
      append_file(f, text);
      ++c.files;
    }
    GRAFT_CHECK(c.files > 0, op, "a directory with at least one regular file", root + " with none",
                "pass a text file");
  } else {
    append_file(root, text);
    c.files = 1;
  }
  // Every tenth block is held out (Note [Text task]).
  const size_t block = text.size() >= 40960 ? 4096 : std::max<size_t>(1, text.size() / 10);
  for (size_t i = 0, b = 0; i < text.size(); i += block, ++b) (b % 10 == 9 ? c.held_out : c.train).append(text, i, block);
  const auto need = static_cast<size_t>(context) + 1;
  GRAFT_CHECK(c.train.size() >= need && c.held_out.size() >= need, op,
              "a text long enough for one window of --context " + std::to_string(context) +
                  " bytes in both the training part (9/10) and the held-out part (1/10): at least " +
                  std::to_string(10 * need) + " bytes",
              root + " with " + std::to_string(text.size()) + " bytes", "lower --context, or pass a longer text");
  return c;
}

TextDataset::TextDataset(const std::string& text, int64_t context) : context_(context) {
  GRAFT_CHECK(context >= 1 && static_cast<int64_t>(text.size()) > context, "TextDataset",
              "a text of more than --context (" + std::to_string(context) + ") bytes",
              std::to_string(text.size()) + " bytes", "lower --context");
  windows_ = (static_cast<int64_t>(text.size()) - 1) / context;
  bytes_ = empty({windows_ * context + 1}, kUInt8);
  std::memcpy(bytes_.data_ptr<uint8_t>(), text.data(), static_cast<size_t>(bytes_.numel()));
  memory::set_category(*bytes_.impl().storage, memory::Category::Data);
}

data::Example<> TextDataset::get(int64_t index) const {
  const int64_t i[] = {index};
  data::Example<> b = get_batch(i);
  return {b.data.squeeze(0), b.target.squeeze(0)};
}

data::Example<> TextDataset::get_batch(std::span<const int64_t> indices) const {
  const auto B = static_cast<int64_t>(indices.size());
  Tensor x = empty({B, context_}, kInt64), y = empty({B, context_}, kInt64);
  const uint8_t* bytes = bytes_.data_ptr<uint8_t>();
  int64_t* px = x.data_ptr<int64_t>();
  int64_t* py = y.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t w = indices[static_cast<size_t>(b)];
    GRAFT_CHECK(w >= 0 && w < windows_, "TextDataset", "a window index in [0, " + std::to_string(windows_) + ")",
                std::to_string(w), "");
    const uint8_t* src = bytes + w * context_;
    for (int64_t t = 0; t < context_; ++t) {
      px[b * context_ + t] = src[t];
      py[b * context_ + t] = src[t + 1];
    }
  }
  return {x, y};
}

TextDataset TextDataset::head(int64_t n) const {
  TextDataset d = *this;
  d.windows_ = std::clamp<int64_t>(n, 1, windows_);
  return d;
}

// ---- the models ----

namespace {

// Byte embeddings (256, width) and, for the Transformer, learnt positions (context, width), both
// N(0, 0.02) as GPT-2 initialises them (its layer norms rescale them); without positions (the LSTM)
// the embeddings keep nn::Embedding's N(0, 1): at 0.02 a two-layer LSTM's input is too faint for it
// to learn from in the first thousands of steps. (B, T) int64 -> (B, T, width).
class ByteEmbeddingImpl : public nn::Module {
 public:
  ByteEmbeddingImpl(int64_t width, int64_t context) : context_(context) {
    bytes = register_module("bytes", nn::Embedding(kVocab, width));
    if (context > 0) {
      nn::init::normal_(bytes->weight, 0.0, 0.02);
      positions = register_parameter("positions", nn::init::normal_(empty({context, width}), 0.0, 0.02));
    }
  }
  Tensor forward(const Tensor& x) {
    GRAFT_CHECK(x.dim() == 2 && (context_ == 0 || x.size(1) <= context_), "graft text model",
                "int64 bytes (batch, positions) with at most " + std::to_string(context_) + " positions",
                shape_str(x.sizes()), "feed at most --context bytes at a time");
    Tensor h = bytes->forward(x);
    return positions.defined() ? h + positions.narrow(0, 0, x.size(1)) : h;
  }
  nn::Embedding bytes{nullptr};
  Tensor positions;

 private:
  int64_t context_ = 0;
};
GRAFT_MODULE(ByteEmbedding);

// A pre-norm Transformer block with causal self-attention: nn::TransformerEncoderLayer (GELU, a 4x
// feed-forward), called with is_causal, so position t sees positions 0 .. t only.
class CausalBlockImpl : public nn::Module {
 public:
  CausalBlockImpl(int64_t width, int64_t heads, double dropout) {
    layer = register_module("layer", nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(width, heads)
                                                                     .dim_feedforward(4 * width)
                                                                     .dropout(dropout)
                                                                     .activation(graft::kGELU)
                                                                     .batch_first(true)
                                                                     .norm_first(true)));
  }
  Tensor forward(const Tensor& x) { return layer->forward(x, {}, {}, /*is_causal=*/true); }
  nn::TransformerEncoderLayer layer{nullptr};
};
GRAFT_MODULE(CausalBlock);

// depth LSTM layers of width, dropout between them; (B, T, width) -> (B, T, width).
class LSTMStackImpl : public nn::Module {
 public:
  LSTMStackImpl(int64_t width, int64_t depth, double dropout) {
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(width, width)
                                                .num_layers(depth)
                                                .batch_first(true)
                                                .dropout(depth > 1 ? dropout : 0.0)));
  }
  Tensor forward(const Tensor& x) { return std::get<0>(lstm->forward(x)); }
  nn::LSTM lstm{nullptr};
};
GRAFT_MODULE(LSTMStack);

// (B, T, width) -> logits (B T, 256): one row per position, as cross_entropy takes them.
class ByteHeadImpl : public nn::Module {
 public:
  explicit ByteHeadImpl(int64_t width) { proj = register_module("proj", nn::Linear(width, kVocab)); }
  Tensor forward(const Tensor& h) { return proj->forward(h).reshape({-1, kVocab}); }
  nn::Linear proj{nullptr};
};
GRAFT_MODULE(ByteHead);

}  // namespace

nn::Sequential build_text_model(const TrainConfig& cfg, TextNet net) {
  nn::Sequential seq;
  const bool gpt = net == TextNet::kGpt;
  seq->push_back("embed", ByteEmbedding(cfg.width, gpt ? cfg.context : 0));
  if (gpt) {
    for (int64_t i = 0; i < cfg.depth; ++i) seq->push_back("block" + std::to_string(i), CausalBlock(cfg.width, cfg.heads, cfg.dropout));
    seq->push_back("norm", nn::LayerNorm(nn::LayerNormOptions({cfg.width})));
  } else {
    seq->push_back("lstm", LSTMStack(cfg.width, cfg.depth, cfg.dropout));
  }
  seq->push_back("head", ByteHead(cfg.width));
  return seq;
}

}  // namespace graft::cli
