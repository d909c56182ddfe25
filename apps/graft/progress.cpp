#include "progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace graft::cli {

Progress::Style Progress::style_for(const std::string& name, const std::ostream& out) {
  if (name == "bar") return Style::kBar;
  if (name == "lines") return Style::kLines;
  if (name == "none") return Style::kNone;
  return (&out == &std::cout && isatty(STDOUT_FILENO)) ? Style::kBar : Style::kLines;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  const auto s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

void Progress::start_epoch(int64_t epoch, int64_t epochs, int64_t batches) {
  epoch_ = epoch;
  epochs_ = epochs;
  batches_ = batches;
  done_ = examples_ = 0;
  loss_sum_ = 0;
  epoch_start_ = Clock::now();
  last_draw_ = {};
  if (style_ == Style::kBar) draw(true);
}

void Progress::batch_done(double loss, int64_t examples) {
  ++done_;
  examples_ += examples;
  loss_sum_ += loss;
  if (style_ == Style::kBar) draw(done_ == batches_);
}

// [epoch 2/5] [########......]  312/469  loss 0.4123  21,345 img/s  0:02 left
void Progress::draw(bool force) {
  const auto now = Clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - epoch_start_).count();
  constexpr int kWidth = 30;
  const int filled = batches_ > 0 ? static_cast<int>(kWidth * done_ / batches_) : 0;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  const double rate = elapsed > 0 ? static_cast<double>(examples_) / elapsed : 0;
  const double left = done_ > 0 ? elapsed / static_cast<double>(done_) * static_cast<double>(batches_ - done_) : 0;
  char buf[256];
  std::snprintf(buf, sizeof buf, "\r[epoch %lld/%lld] [%s] %lld/%lld  loss %.4f  %.0f img/s  %s left ",
                static_cast<long long>(epoch_), static_cast<long long>(epochs_), bar.c_str(),
                static_cast<long long>(done_), static_cast<long long>(batches_),
                done_ > 0 ? loss_sum_ / static_cast<double>(done_) : 0.0, rate, format_duration(left).c_str());
  out_ << buf << std::flush;
}

void Progress::end_epoch(const std::string& summary) {
  if (style_ == Style::kNone) return;
  if (style_ == Style::kBar) out_ << "\r\033[K";  // clear the bar's line
  out_ << summary << '\n' << std::flush;
}

void Progress::message(const std::string& line) {
  if (style_ != Style::kNone) out_ << line << '\n' << std::flush;
}

}  // namespace graft::cli
