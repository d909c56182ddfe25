// Progress output of `graft train`: a live bar on a terminal, one plain line per epoch otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace graft::cli {

class Progress {
 public:
  enum class Style { kBar, kLines, kNone };
  // "auto" picks kBar when `out` is std::cout and stdout is a terminal, else kLines.
  static Style style_for(const std::string& name, const std::ostream& out);

  Progress(std::ostream& out, Style style) : out_(out), style_(style) {}

  void start_epoch(int64_t epoch, int64_t epochs, int64_t batches);
  // After each batch: its mean loss and its number of examples.
  void batch_done(double loss, int64_t examples);
  // Ends the epoch's bar (if any) and prints its summary line.
  void end_epoch(const std::string& summary);
  void message(const std::string& line);

 private:
  using Clock = std::chrono::steady_clock;
  void draw(bool force);

  std::ostream& out_;
  Style style_;
  int64_t epoch_ = 0, epochs_ = 0, batches_ = 0, done_ = 0, examples_ = 0;
  double loss_sum_ = 0;
  Clock::time_point epoch_start_{}, last_draw_{};
};

// "1:05" or "1:02:03".
std::string format_duration(double seconds);

}  // namespace graft::cli
