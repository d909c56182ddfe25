// data::detail::DataShuttle<Job, Result>: two queues, jobs to the workers and results back, and
// the count of jobs in flight (pushed, their result not yet popped), as LibTorch's
// torch::data::detail::DataShuttle. pop_result() returns nullopt at once when no job is in flight,
// so the main thread never waits for a result that no one will push.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <utility>

#include "graft/data/detail/queue.h"

namespace graft::data::detail {

template <typename Job, typename Result>
class DataShuttle {
 public:
  void push_job(Job job) {
    new_jobs_.push(std::move(job));
    ++in_flight_jobs_;
  }
  void push_result(Result result) { results_.push(std::move(result)); }
  // Blocks until a job is there (a worker's side).
  Job pop_job() { return new_jobs_.pop(); }

  // The next result, or nullopt when no job is in flight. Throws graft::Error after `timeout`
  // (Queue::pop).
  std::optional<Result> pop_result(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    if (in_flight_jobs_ == 0) return std::nullopt;
    Result result = results_.pop(timeout);
    --in_flight_jobs_;
    return result;
  }

  // Drops the jobs no worker has taken and waits for (and drops) the results of those that were
  // taken, leaving nothing in flight.
  void drain() {
    in_flight_jobs_ -= new_jobs_.clear();
    while (in_flight_jobs_ > 0) pop_result();
  }

  size_t in_flight_jobs() const noexcept { return in_flight_jobs_; }

 private:
  // Touched by the main thread only (push_job, pop_result, drain), as in LibTorch.
  size_t in_flight_jobs_ = 0;
  Queue<Job> new_jobs_;
  Queue<Result> results_;
};

}  // namespace graft::data::detail
