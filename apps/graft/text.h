// `graft train --model gpt|lstm`: the text task's data (byte-level language modelling) and models
// (its Task is text_task.cpp), and `graft sample` (sample.cpp).
//
// Note [Text task]
// Any file (or directory of files) is a sequence of bytes; the vocabulary is the 256 byte values, so
// no tokenizer is needed and every file is valid input. The text is cut into blocks of 4096 bytes
// (a tenth of the text when it is shorter than 40 KiB) and every tenth block is held out: the held-
// out text comes from all over the corpus, not from its last files. Each part is cut into windows of
// --context bytes, back to back; an example is a window x and the window shifted by one byte y, and
// the loss is the mean cross-entropy of predicting y[t] from x[0..t] over every position.
// Held-out loss is in nats per byte; bits per character is that loss / ln 2 (a byte is a character
// for ASCII text, as the fortunes are). An epoch visits every training window once, in an order
// fixed by the seed and the epoch (the DataLoader's), so runs resume exactly (Note [Resumable runs]).
//
// The models are nn::Sequential, like the image models, so graft plan and checkpoint_sequential
// work on them unchanged; their forward takes int64 bytes (B, T) and returns logits (B T, 256):
//   gpt:  embed (bytes + learnt positions) -> depth x block (pre-norm TransformerEncoderLayer with
//         GELU and 4x feed-forward, causal self-attention) -> LayerNorm -> head (Linear to 256)
//   lstm: embed (bytes) -> an nn::LSTM of depth layers of width -> head
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include <graft/graft.h>

#include "task.h"  // TextNet

namespace graft::cli {

struct TrainConfig;  // config.h

inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";
inline constexpr int64_t kVocab = 256;

// The training and held-out text of Note [Text task]. `path` is a file or a directory (its regular
// files, in name order; in the fortunes directory only the fortune files, not their .dat indexes
// and .u8 copies); empty: kFortunesDir. Throws graft::Error for a missing, unreadable or special
// file, or a text too short for one window of `context` bytes in each part.
struct TextCorpus {
  std::string train, held_out;
  std::string source;  // what was read, for messages
  int64_t files = 0;
};
TextCorpus load_text(const std::string& path, int64_t context);

// Windows of `context` bytes of `text` (Note [Text task]): example i is x = text[i T, i T + T) and
// y = text[i T + 1, i T + T + 1) as int64 (T,); get_batch stacks them into (B, T). The bytes are
// kept once, as uint8 in memory category "data".
class TextDataset : public data::Dataset {
 public:
  TextDataset(const std::string& text, int64_t context);
  int64_t size() const override { return windows_; }
  data::Example<> get(int64_t index) const override;
  data::Example<> get_batch(std::span<const int64_t> indices) const override;
  TextDataset head(int64_t n) const;  // the first n windows
  int64_t context() const { return context_; }

 private:
  Tensor bytes_;  // uint8 (windows * context + 1)
  int64_t context_ = 0, windows_ = 0;
};

// The text model `net` of Note [Text task], from --context, --width, --depth, --heads, --dropout.
nn::Sequential build_text_model(const TrainConfig& cfg, TextNet net);

// `graft sample`: continues `prompt` with `length` bytes drawn from the model in `checkpoint` (a
// checkpoint graft train --model gpt|lstm wrote), at `temperature` (0: always the likeliest byte)
// among the `top_k` likeliest (0: all), and writes prompt + continuation to `out`.
struct SampleConfig {
  std::string checkpoint;
  std::string prompt;
  int64_t length = 200;
  double temperature = 0.8;
  int64_t top_k = 0;
  uint64_t seed = 0;
  int threads = 0;
};
std::string sample(const SampleConfig& config, std::ostream& out);

}  // namespace graft::cli
