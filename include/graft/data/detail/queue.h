// data::detail::Queue<T>: a FIFO for handing values between threads (LibTorch's
// torch::data::detail::Queue, which its data loader's workers use for jobs and results).
// push never blocks; pop blocks until a value is there, or throws graft::Error after `timeout`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "graft/core/error.h"

namespace graft::data::detail {

template <typename T>
class Queue {
 public:
  void push(T value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      values_.push_back(std::move(value));
    }
    ready_.notify_one();
  }

  // The oldest value. With a timeout, throws graft::Error ("Timeout in DataLoader queue while
  // waiting for next batch (timeout was N ms)", LibTorch's words) when none arrives in time.
  T pop(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto has_value = [this] { return !values_.empty(); };
    if (timeout) {
      if (!ready_.wait_for(lock, *timeout, has_value)) {
        throw Error("DataLoader",
                    "Timeout in DataLoader queue while waiting for next batch (timeout was " +
                        std::to_string(timeout->count()) + " ms)");
      }
    } else {
      ready_.wait(lock, has_value);
    }
    T value = std::move(values_.front());
    values_.pop_front();
    return value;
  }

  // Drops every queued value; returns how many there were.
  size_t clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t n = values_.size();
    values_.clear();
    return n;
  }

 private:
  std::deque<T> values_;
  std::mutex mutex_;
  std::condition_variable ready_;
};

}  // namespace graft::data::detail
