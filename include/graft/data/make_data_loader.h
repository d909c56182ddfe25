// LibTorch's data loader over a datasets::BatchDataset (graft/data/datasets.h):
//
//   auto loader = graft::data::make_data_loader<graft::data::samplers::SequentialSampler>(
//       std::move(dataset), graft::data::DataLoaderOptions().batch_size(64));
//   for (auto& batch : *loader) step(batch.data, batch.target);
//
// Each begin() starts an epoch: it resets the sampler (a RandomSampler draws a new permutation) and
// yields dataset.get_batch(sampler.next(batch_size)) until the sampler is done; with drop_last, a
// last batch smaller than batch_size is left out. The batch type is the dataset's BatchType: with
// .map(Stack<>()), an Example<> of stacked tensors.
//
// With workers(W), W threads prepare the batches, each with its own copy of the dataset (Note
// [make_data_loader's workers]).
#pragma once

#include <concepts>
#include <cstddef>
#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graft/core/error.h"
#include "graft/data/dataloader.h"
#include "graft/data/datasets.h"
#include "graft/data/detail/data_shuttle.h"  // reachable from graft.h, as LibTorch makes them
#include "graft/data/detail/queue.h"
#include "graft/data/detail/sequencers.h"
#include "graft/data/samplers.h"

namespace graft::data {

// An exception thrown by the dataset in a worker thread, rethrown by the loop at that batch (as
// LibTorch's torch::data::WorkerException). original_exception is the dataset's own exception.
struct WorkerException : public std::exception {
  explicit WorkerException(std::exception_ptr original) : original_exception(std::move(original)) {
    try {
      std::rethrow_exception(original_exception);
    } catch (const std::exception& e) {
      message = std::string("Caught exception in DataLoader worker thread. Original message: ") + e.what();
    } catch (...) {
      message = "Caught exception in DataLoader worker thread (not a std::exception)";
    }
  }
  const char* what() const noexcept override { return message.c_str(); }

  std::exception_ptr original_exception;
  std::string message;
};

// Note [make_data_loader's workers]
// With workers() = W > 0 the loader starts W threads, each with its own copy of the dataset (the
// dataset must be copyable then), as LibTorch's StatelessDataLoader does. The thread that iterates
// owns the sampler: it keeps up to max_jobs batch requests (default 2 * W) queued as jobs, numbered
// 0, 1, 2, ... per epoch; a worker takes a job, calls get_batch, and sends the batch (or the
// exception it threw) back. With enforce_ordering (the default) the batches come out in the
// sampler's order whatever order the workers finish in (sequencers::OrderedSequencer); without,
// in the order they finish. With timeout(t), waiting more than t for a batch throws graft::Error
// ("Timeout in DataLoader queue ..."). With W = 0 the batches are made on the iterating thread.
//
// Iterators follow LibTorch's: begin() starts an epoch and returns an iterator that fetches its
// first batch when first dereferenced, advanced or compared with end(). Copies of an iterator share
// its position; two iterators from two begin() calls are different iterators and compare unequal
// (each equals only itself and its copies); end() equals end(), and an iterator equals end() once
// its epoch is exhausted. With workers, begin() while an epoch's batches are still in flight throws.
// The destructor (or join()) stops the workers: the jobs not started are dropped, the ones started
// are waited for.
template <typename Dataset, typename Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : sampler_(std::move(sampler)), options_(std::move(options)), full_(check_options(options_)) {
    if (full_.workers == 0) {
      main_thread_dataset_.emplace(std::move(dataset));
      return;
    }
    if constexpr (std::copy_constructible<Dataset>) {
      sequencer_ = new_sequencer();
      workers_.reserve(full_.workers);
      // Each worker gets one copy of the dataset, made here on the calling thread in order.
      try {
        for (size_t w = 0; w < full_.workers; ++w)
          workers_.emplace_back([this, copy = dataset]() mutable { worker_thread(copy); });
      } catch (...) {
        join();  // a copy or a thread start failed: stop the workers already running
        throw;
      }
    } else {
      GRAFT_CHECK(false, "make_data_loader", "a copyable dataset when workers() > 0",
                  "a dataset that cannot be copied", "each worker thread needs its own copy: use workers(0), "
                  "or share the dataset with make_shared_dataset");
    }
  }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;
  ~StatelessDataLoader() { join(); }

 private:
  // One iterator's state; copies of an Iterator share it.
  struct IteratorState {
    StatelessDataLoader* loader = nullptr;  // null for end()
    std::optional<BatchType> batch;
    bool initialized = false;  // whether the first batch was fetched
    void lazy_initialize() {
      if (!initialized) {
        batch = loader->next();
        initialized = true;
      }
    }
  };

 public:
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = BatchType;
    using difference_type = std::ptrdiff_t;
    using pointer = BatchType*;
    using reference = BatchType&;

    Iterator() : state_(std::make_shared<IteratorState>()) {}
    BatchType& operator*() const {
      GRAFT_CHECK(state_->loader, "StatelessDataLoader::Iterator", "an iterator at a batch",
                  "end(), the past-the-end iterator (Dereferencing the DataLoader's past-the-end iterator is not "
                  "allowed)",
                  "compare with loader->end() before dereferencing");
      state_->lazy_initialize();
      GRAFT_CHECK(state_->batch.has_value(), "StatelessDataLoader::Iterator", "an iterator at a batch",
                  "an iterator whose epoch is exhausted (Attempted to dereference iterator that was past the end)",
                  "compare with loader->end() before dereferencing");
      return *state_->batch;
    }
    BatchType* operator->() const { return &**this; }
    Iterator& operator++() {
      GRAFT_CHECK(state_->loader, "StatelessDataLoader::Iterator", "an iterator at a batch",
                  "end(), the past-the-end iterator (Incrementing the DataLoader's past-the-end iterator is not "
                  "allowed)",
                  "do not advance end(); compare with end() first");
      state_->lazy_initialize();
      GRAFT_CHECK(state_->batch.has_value(), "StatelessDataLoader::Iterator", "an iterator at a batch",
                  "an iterator whose epoch is exhausted (Attempted to increment iterator past the end)",
                  "compare with loader->end() before advancing");
      state_->batch = state_->loader->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    // Note [make_data_loader's workers]: an iterator from begin() equals only itself (and its
    // copies), or end() once exhausted; end() equals end().
    bool operator==(const Iterator& other) const {
      if (state_ == other.state_) return true;
      if (state_->loader && other.state_->loader) return false;
      if (!state_->loader && !other.state_->loader) return true;
      IteratorState& valid = state_->loader ? *state_ : *other.state_;
      valid.lazy_initialize();
      return !valid.batch.has_value();
    }

   private:
    friend class StatelessDataLoader;
    explicit Iterator(StatelessDataLoader* loader) : state_(std::make_shared<IteratorState>()) {
      state_->loader = loader;
    }
    std::shared_ptr<IteratorState> state_;
  };

  // Starts a new epoch (resetting the sampler) and returns an iterator at its first batch.
  Iterator begin() {
    GRAFT_CHECK(shuttle_.in_flight_jobs() == 0, "StatelessDataLoader::begin",
                "no batches in flight from an earlier iterator",
                std::to_string(shuttle_.in_flight_jobs()) +
                    " in flight (Attempted to get a new DataLoader iterator while another iterator is not yet "
                    "exhausted)",
                "finish the epoch's loop before calling begin() again");
    sampler_.reset(std::nullopt);
    if (full_.workers > 0) {
      sequence_number_ = 0;
      sequencer_ = new_sequencer();
      prefetch(full_.max_jobs);
    }
    return Iterator(this);
  }
  Iterator end() { return Iterator(); }

  const DataLoaderOptions& options() const noexcept { return options_; }

  // Stops and joins the worker threads (the destructor calls it); the loader cannot be iterated
  // with workers afterwards.
  void join() {
    if (joined_ || workers_.empty()) return;
    shuttle_.drain();
    for (size_t w = 0; w < workers_.size(); ++w) shuttle_.push_job(Job{std::nullopt, 0, /*quit=*/true});
    for (std::thread& worker : workers_) worker.join();
    joined_ = true;
  }

 private:
  struct Job {
    std::optional<BatchRequestType> request;
    size_t sequence_number = 0;
    bool quit = false;
  };
  struct Result {
    std::optional<BatchType> batch;
    std::exception_ptr exception;
    size_t sequence_number = 0;
  };

  static FullDataLoaderOptions check_options(const DataLoaderOptions& options) {
    GRAFT_CHECK(options.batch_size() >= 1, "make_data_loader", "a batch size >= 1",
                std::to_string(options.batch_size()), "DataLoaderOptions().batch_size(n) with n >= 1");
    GRAFT_CHECK(options.workers() >= 0, "make_data_loader", "workers >= 0", std::to_string(options.workers()),
                "workers(0) makes the batches on the iterating thread");
    FullDataLoaderOptions full(options);
    GRAFT_CHECK(full.workers == 0 || full.max_jobs >= 1, "make_data_loader", "max_jobs >= 1 with workers",
                "max_jobs = 0", "leave max_jobs out (2 * workers) or give at least 1");
    return full;
  }

  std::unique_ptr<detail::sequencers::Sequencer<Result>> new_sequencer() const {
    if (full_.enforce_ordering)
      return std::make_unique<detail::sequencers::OrderedSequencer<Result>>(full_.max_jobs);
    return std::make_unique<detail::sequencers::NoSequencer<Result>>();
  }

  // The next request of this epoch, or nullopt when the sampler is done (or, with drop_last, has
  // only a short batch left).
  std::optional<BatchRequestType> next_request() {
    const auto batch_size = static_cast<size_t>(options_.batch_size());
    std::optional<BatchRequestType> request = sampler_.next(batch_size);
    // size(): a list of indices, a BatchSize and a user's CustomBatchRequest all have it.
    if (!request || (request->size() < batch_size && options_.drop_last()) || request->size() == 0)
      return std::nullopt;
    return request;
  }

  void prefetch(size_t jobs) {
    for (size_t j = 0; j < jobs; ++j) {
      std::optional<BatchRequestType> request = next_request();
      if (!request) break;
      shuttle_.push_job(Job{std::move(request), sequence_number_++, false});
    }
  }

  // The next batch of the epoch, or nullopt at its end.
  std::optional<BatchType> next() {
    if (full_.workers == 0) {
      std::optional<BatchRequestType> request = next_request();
      if (!request) return std::nullopt;
      return main_thread_dataset_->get_batch(*request);
    }
    GRAFT_CHECK(!joined_, "StatelessDataLoader", "a loader whose workers run", "a loader after join()",
                "make a new loader");
    while (std::optional<Result> result =
               sequencer_->next([this] { return shuttle_.pop_result(full_.timeout); })) {
      if (result->exception) throw WorkerException(result->exception);
      if (result->batch) {
        prefetch(1);
        return std::move(result->batch);
      }
    }
    return std::nullopt;
  }

  void worker_thread(Dataset& dataset) {
    for (;;) {
      Job job = shuttle_.pop_job();
      if (job.quit) return;
      Result result;
      result.sequence_number = job.sequence_number;
      try {
        result.batch.emplace(dataset.get_batch(*job.request));
      } catch (...) {
        result.exception = std::current_exception();
      }
      shuttle_.push_result(std::move(result));
    }
  }

  std::optional<Dataset> main_thread_dataset_;  // with workers = 0
  Sampler sampler_;
  DataLoaderOptions options_;
  FullDataLoaderOptions full_;
  detail::DataShuttle<Job, Result> shuttle_;
  std::unique_ptr<detail::sequencers::Sequencer<Result>> sequencer_;
  size_t sequence_number_ = 0;  // of the next job pushed this epoch
  std::vector<std::thread> workers_;
  bool joined_ = false;
};

// make_data_loader(dataset, sampler, options), and make_data_loader<Sampler>(dataset, options) with a
// Sampler made from dataset.size() (RandomSampler by default). options may be a batch size.
template <typename Dataset, typename Sampler>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, Sampler sampler,
                                                                       DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

template <typename Sampler = samplers::RandomSampler, typename Dataset>
  requires std::constructible_from<Sampler, size_t>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                       DataLoaderOptions options = {}) {
  const std::optional<size_t> size = dataset.size();
  GRAFT_CHECK(size.has_value(), "make_data_loader", "a dataset whose size() is known",
              "size() = nullopt (Expected the dataset to be sized in order to construct the Sampler)",
              "a sampler needs the number of examples; pass a sampler: make_data_loader(dataset, sampler, options)");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

}  // namespace graft::data
