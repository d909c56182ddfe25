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
// Difference from LibTorch: batches are prepared on the thread that iterates, in order, whatever
// workers() says (LibTorch starts `workers` threads, each with a copy of the dataset). The options
// are kept so that LibTorch code compiles; graft's own DataLoader (graft/data/dataloader.h) has
// background workers.
#pragma once

#include <concepts>
#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "graft/core/error.h"
#include "graft/data/dataloader.h"
#include "graft/data/datasets.h"
#include "graft/data/detail/data_shuttle.h"  // reachable from graft.h, as LibTorch makes them
#include "graft/data/detail/queue.h"
#include "graft/data/detail/sequencers.h"
#include "graft/data/samplers.h"

namespace graft::data {

template <typename Dataset, typename Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(std::move(options)) {
    GRAFT_CHECK(options_.batch_size() >= 1, "make_data_loader", "a batch size >= 1",
                std::to_string(options_.batch_size()), "DataLoaderOptions().batch_size(n) with n >= 1");
  }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = BatchType;
    using difference_type = std::ptrdiff_t;
    using pointer = BatchType*;
    using reference = BatchType&;

    Iterator() = default;
    BatchType& operator*() const {
      GRAFT_CHECK(loader_ && loader_->batch_, "StatelessDataLoader::Iterator", "an iterator at a batch",
                  "an iterator past the end", "compare with loader->end() before dereferencing");
      return *loader_->batch_;
    }
    BatchType* operator->() const { return &**this; }
    Iterator& operator++() {
      GRAFT_CHECK(loader_ && loader_->batch_, "StatelessDataLoader::Iterator", "an iterator at a batch",
                  "an iterator past the end", "do not advance end(); compare with end() first");
      loader_->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    // Iterators are equal when both are at the end; an iterator at a batch equals only itself.
    bool operator==(const Iterator& other) const {
      const bool at_end = !loader_ || !loader_->batch_, other_at_end = !other.loader_ || !other.loader_->batch_;
      return (at_end && other_at_end) || (!at_end && loader_ == other.loader_);
    }

   private:
    friend class StatelessDataLoader;
    explicit Iterator(StatelessDataLoader* loader) : loader_(loader) {}
    StatelessDataLoader* loader_ = nullptr;
  };

  // Starts a new epoch (resetting the sampler) and returns its first batch. One epoch at a time: a
  // second begin() restarts.
  Iterator begin() {
    sampler_.reset(std::nullopt);
    advance();
    return Iterator(this);
  }
  Iterator end() { return Iterator(); }

  const DataLoaderOptions& options() const noexcept { return options_; }
  // LibTorch joins its worker threads here; graft has none.
  void join() {}

 private:
  void advance() {
    batch_.reset();
    const auto batch_size = static_cast<size_t>(options_.batch_size());
    std::optional<BatchRequestType> request = sampler_.next(batch_size);
    // size(): a list of indices, a BatchSize and a user's CustomBatchRequest all have it.
    if (!request || (request->size() < batch_size && options_.drop_last()) || request->size() == 0) return;
    batch_.emplace(dataset_.get_batch(*request));
  }

  Dataset dataset_;
  Sampler sampler_;
  DataLoaderOptions options_;
  std::optional<BatchType> batch_;  // the current batch; empty at the end of an epoch
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
  GRAFT_CHECK(size.has_value(), "make_data_loader", "a dataset whose size() is known", "size() = nullopt",
              "a sampler needs the number of examples; pass a sampler: make_data_loader(dataset, sampler, options)");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

}  // namespace graft::data
