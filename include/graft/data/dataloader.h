// DataLoader: batches of a Dataset, shuffled deterministically per epoch, optionally prepared by
// background threads.
//
//   graft::data::DataLoader loader(graft::data::MNIST(dir),
//                                  graft::data::DataLoaderOptions().batch_size(64).shuffle(true).seed(1));
//   for (int epoch = 0; epoch < 3; ++epoch)
//     for (auto& batch : loader) step(batch.data, batch.target);  // (64, 1, 28, 28), (64)
//
// Note [DataLoader epochs and workers]
// Each begin() starts an epoch: epoch k visits the examples in the order epoch_order(k), a
// permutation that depends only on (seed, k) when shuffling. With num_workers = W > 0, worker w
// prepares batches w, w + W, w + 2W, ... into its own queue of at most `prefetch` batches and the
// loop takes them in order, so batches arrive in the same order as with W = 0. The threads belong
// to the iterator: leaving the loop early (break, an exception) destroys it, which stops and joins
// them. An exception thrown while preparing a batch is rethrown by the loop at that batch.
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "graft/data/dataset.h"

namespace graft::data {

class DataLoaderOptions {
 public:
  DataLoaderOptions() = default;
  DataLoaderOptions(int64_t batch_size) : batch_size_(batch_size) {}  // NOLINT: LibTorch spelling

  DataLoaderOptions& batch_size(int64_t v) { batch_size_ = v; return *this; }
  DataLoaderOptions& shuffle(bool v) { shuffle_ = v; return *this; }
  // Without a seed, one is drawn from graft's default generator (graft::manual_seed) when the
  // loader is made.
  DataLoaderOptions& seed(uint64_t v) { seed_ = v; return *this; }
  DataLoaderOptions& drop_last(bool v) { drop_last_ = v; return *this; }
  DataLoaderOptions& num_workers(int64_t v) { num_workers_ = v; return *this; }
  DataLoaderOptions& workers(int64_t v) { return num_workers(v); }  // LibTorch spelling
  DataLoaderOptions& prefetch(int64_t v) { prefetch_ = v; return *this; }  // batches queued per worker
  // LibTorch's options of its worker pool, which make_data_loader's loader uses (Note
  // [make_data_loader's workers]): max_jobs (batch requests queued, default 2 * workers),
  // enforce_ordering (batches in the sampler's order) and timeout (waiting longer for a batch throws).
  // graft's DataLoader queues `prefetch` batches per worker and always keeps the batches in order.
  DataLoaderOptions& max_jobs(size_t v) { max_jobs_ = v; return *this; }
  DataLoaderOptions& enforce_ordering(bool v) { enforce_ordering_ = v; return *this; }
  DataLoaderOptions& timeout(std::chrono::milliseconds v) { timeout_ = v; return *this; }
  // Distributed data parallel: each epoch, this rank's shard of the epoch's order, as
  // samplers::DistributedSampler takes it (every num_replicas-th example from `rank`, padded to a
  // multiple of num_replicas; with drop_last the tail that does not divide is dropped, as is the
  // last short batch). Every rank must use the same seed.
  DataLoaderOptions& distributed(int64_t num_replicas, int64_t rank) {
    num_replicas_ = num_replicas;
    rank_ = rank;
    return *this;
  }

  int64_t batch_size() const { return batch_size_; }
  bool shuffle() const { return shuffle_; }
  std::optional<uint64_t> seed() const { return seed_; }
  bool drop_last() const { return drop_last_; }
  int64_t num_workers() const { return num_workers_; }
  int64_t workers() const { return num_workers_; }  // LibTorch spelling
  std::optional<size_t> max_jobs() const { return max_jobs_; }
  bool enforce_ordering() const { return enforce_ordering_; }
  std::optional<std::chrono::milliseconds> timeout() const { return timeout_; }
  int64_t prefetch() const { return prefetch_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }

 private:
  int64_t batch_size_ = 1;
  bool shuffle_ = false;
  std::optional<uint64_t> seed_;
  bool drop_last_ = false;
  int64_t num_workers_ = 0;
  int64_t prefetch_ = 2;
  std::optional<size_t> max_jobs_;
  bool enforce_ordering_ = true;
  std::optional<std::chrono::milliseconds> timeout_;
  int64_t num_replicas_ = 1;
  int64_t rank_ = 0;
};

// DataLoaderOptions with its defaults filled in, as LibTorch's data loaders keep them:
// max_jobs = 2 * workers unless given.
struct FullDataLoaderOptions {
  explicit FullDataLoaderOptions(const DataLoaderOptions& options);

  size_t batch_size = 1;
  size_t workers = 0;
  size_t max_jobs = 0;
  std::optional<std::chrono::milliseconds> timeout;
  bool enforce_ordering = true;
  bool drop_last = false;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  template <std::derived_from<Dataset> D>
  DataLoader(D dataset, DataLoaderOptions options = {})  // NOLINT: takes the dataset by value
      : DataLoader(std::shared_ptr<const Dataset>(std::make_shared<D>(std::move(dataset))), std::move(options)) {}

  struct Run;  // one epoch in progress (defined in dataloader.cpp)

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example<>;
    using difference_type = std::ptrdiff_t;
    using pointer = Example<>*;
    using reference = Example<>&;

    Iterator() = default;
    Example<>& operator*() const;
    Example<>* operator->() const { return &**this; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const;
    int64_t batch_index() const;  // of the current batch, from 0

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<Run> run) : run_(std::move(run)) {}
    std::shared_ptr<Run> run_;
  };

  // Starts the next epoch (reshuffled when shuffling) and returns its first batch.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

  int64_t size() const;  // batches per epoch
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }
  uint64_t seed() const { return seed_; }
  // The number of the epoch the next begin() starts (0 for the first); set it to replay an epoch or
  // to resume training.
  int64_t epoch() const { return next_epoch_.load(std::memory_order_relaxed); }
  void set_epoch(int64_t epoch);
  // The order in which epoch `epoch` visits the examples.
  std::vector<int64_t> epoch_order(int64_t epoch) const;

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  uint64_t seed_ = 0;
  // Atomic: begin() may be called from several threads on one loader; each call takes its own
  // epoch number.
  std::atomic<int64_t> next_epoch_{0};

 public:
  DataLoader(const DataLoader& o)
      : dataset_(o.dataset_), options_(o.options_), seed_(o.seed_), next_epoch_(o.epoch()) {}
  DataLoader& operator=(const DataLoader& o) {
    dataset_ = o.dataset_;
    options_ = o.options_;
    seed_ = o.seed_;
    next_epoch_.store(o.epoch(), std::memory_order_relaxed);
    return *this;
  }
};

}  // namespace graft::data
