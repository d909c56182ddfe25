// data::detail::sequencers: how a data loader with several workers hands out their results
// (LibTorch's torch::data::detail::sequencers).
//   - NoSequencer: in the order they arrive.
//   - OrderedSequencer: in the order of their sequence_number (0, 1, 2, ...), keeping the results
//     that arrive early in a ring buffer of max_jobs slots (no more than max_jobs results are ever
//     in flight, so slot sequence_number % max_jobs is free).
// A Result for OrderedSequencer has a `size_t sequence_number` member.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/error.h"

namespace graft::data::detail::sequencers {

template <typename Result>
struct Sequencer {
  // Produces the next result a worker finished, or nullopt when there are no more.
  using ResultProducer = std::function<std::optional<Result>()>;
  virtual ~Sequencer() = default;
  virtual std::optional<Result> next(ResultProducer next_result) = 0;
};

template <typename Result>
struct NoSequencer final : public Sequencer<Result> {
  using typename Sequencer<Result>::ResultProducer;
  std::optional<Result> next(ResultProducer next_result) override { return next_result(); }
};

template <typename Result>
struct OrderedSequencer : public Sequencer<Result> {
  using typename Sequencer<Result>::ResultProducer;

  explicit OrderedSequencer(size_t max_jobs) : buffer_(max_jobs) {
    GRAFT_CHECK(max_jobs >= 1, "OrderedSequencer", "max_jobs >= 1", "0", "allow at least one job in flight");
  }

  // The result numbered next_sequence_number_: from the buffer when it came early, else pulled
  // from next_result, buffering the ones that overtake it.
  std::optional<Result> next(ResultProducer next_result) override {
    if (std::optional<Result>& early = slot(next_sequence_number_)) {
      std::optional<Result> result = std::move(early);
      early.reset();
      ++next_sequence_number_;
      return result;
    }
    for (;;) {
      std::optional<Result> result = next_result();
      if (!result) return std::nullopt;
      const size_t number = result->sequence_number;
      if (number == next_sequence_number_) {
        ++next_sequence_number_;
        return result;
      }
      GRAFT_CHECK(number > next_sequence_number_ && number - next_sequence_number_ < buffer_.size(),
                  "OrderedSequencer::next",
                  "a sequence number in [" + std::to_string(next_sequence_number_) + ", " +
                      std::to_string(next_sequence_number_ + buffer_.size()) + ")",
                  std::to_string(number), "at most max_jobs results may be in flight, each numbered once");
      GRAFT_CHECK(!slot(number).has_value(), "OrderedSequencer::next", "each sequence number once",
                  "sequence number " + std::to_string(number) + " twice", "number each job's result once");
      slot(number) = std::move(result);
    }
  }

  std::optional<Result>& slot(size_t sequence_number) { return buffer_[sequence_number % buffer_.size()]; }

  // Public, as in LibTorch (its tests read them).
  size_t next_sequence_number_ = 0;            // of the result next() returns next
  std::vector<std::optional<Result>> buffer_;  // early results, at sequence_number % max_jobs
};

}  // namespace graft::data::detail::sequencers
