// DataLoader (Note [DataLoader epochs and workers] in graft/data/dataloader.h).
#include "graft/data/dataloader.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "graft/autograd/grad_mode.h"
#include "graft/core/generator.h"
#include "graft/data/samplers.h"
#include "shuffle.h"

namespace graft::data {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Slot {
  Example<> batch;
  std::exception_ptr error;
};

}  // namespace

struct DataLoader::Run {
  std::shared_ptr<const Dataset> dataset;
  std::vector<int64_t> order;
  int64_t batch_size = 1;
  int64_t num_batches = 0;
  int64_t prefetch = 2;

  int64_t next = 0;     // the batch the next advance() takes
  int64_t current = -1;  // the batch in `batch`
  Example<> batch;
  bool done = false;

  // Workers (empty when batches are made on the loop's thread).
  std::mutex mutex;
  std::condition_variable produced, space;
  std::vector<std::deque<Slot>> queues;
  bool stop = false;
  std::vector<std::thread> threads;

  Run() = default;
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  ~Run() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    space.notify_all();
    for (auto& t : threads) t.join();
  }

  Example<> make_batch(int64_t b) const {
    NoGradGuard no_grad;  // a data pipeline never records autograd history
    const int64_t begin = b * batch_size;
    const int64_t end = std::min<int64_t>(begin + batch_size, static_cast<int64_t>(order.size()));
    return dataset->get_batch(std::span<const int64_t>(order.data() + begin, static_cast<size_t>(end - begin)));
  }

  void start_workers(int64_t n) {
    queues.resize(static_cast<size_t>(n));
    threads.reserve(static_cast<size_t>(n));
    for (int64_t w = 0; w < n; ++w) threads.emplace_back([this, w, n] { work(w, n); });
  }

  void work(int64_t w, int64_t n) {
    auto& queue = queues[static_cast<size_t>(w)];
    for (int64_t b = w; b < num_batches; b += n) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        space.wait(lock, [&] { return stop || static_cast<int64_t>(queue.size()) < prefetch; });
        if (stop) return;
      }
      Slot slot;
      try {
        slot.batch = make_batch(b);
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool failed = slot.error != nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex);
        queue.push_back(std::move(slot));
      }
      produced.notify_all();
      if (failed) return;
    }
  }

  void advance() {
    if (next >= num_batches) {
      done = true;
      batch = {};
      return;
    }
    const int64_t b = next++;
    if (threads.empty()) {
      batch = {};  // free the previous batch before making the next
      batch = make_batch(b);
      current = b;
      return;
    }
    auto& queue = queues[static_cast<size_t>(b % static_cast<int64_t>(threads.size()))];
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex);
      produced.wait(lock, [&] { return !queue.empty(); });
      slot = std::move(queue.front());
      queue.pop_front();
    }
    space.notify_all();
    if (slot.error) {
      done = true;  // the worker that failed makes no more batches
      batch = {};
      std::rethrow_exception(slot.error);
    }
    batch = std::move(slot.batch);
    current = b;
  }
};

FullDataLoaderOptions::FullDataLoaderOptions(const DataLoaderOptions& options)
    : timeout(options.timeout()), enforce_ordering(options.enforce_ordering()), drop_last(options.drop_last()) {
  GRAFT_CHECK(options.batch_size() >= 1, "FullDataLoaderOptions", "a batch size >= 1",
              std::to_string(options.batch_size()), "DataLoaderOptions().batch_size(n) with n >= 1");
  GRAFT_CHECK(options.workers() >= 0, "FullDataLoaderOptions", "workers >= 0", std::to_string(options.workers()),
              "0 prepares batches on the calling thread");
  batch_size = static_cast<size_t>(options.batch_size());
  workers = static_cast<size_t>(options.workers());
  max_jobs = options.max_jobs().value_or(2 * workers);
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  GRAFT_CHECK(dataset_ != nullptr, "DataLoader", "a dataset", "a null pointer",
              "pass a dataset, e.g. std::make_shared<TensorDataset>(x, y)");
  GRAFT_CHECK(options_.batch_size() >= 1, "DataLoader", "batch_size >= 1", std::to_string(options_.batch_size()),
              "pass batch_size >= 1");
  GRAFT_CHECK(options_.num_workers() >= 0 && options_.num_workers() <= 256, "DataLoader",
              "num_workers in [0, 256]", std::to_string(options_.num_workers()),
              "0 prepares batches in the loop itself; 1 or 2 background threads are usually enough");
  GRAFT_CHECK(options_.prefetch() >= 1, "DataLoader", "prefetch >= 1", std::to_string(options_.prefetch()),
              "the number of batches each worker may prepare ahead");
  GRAFT_CHECK(options_.num_replicas() >= 1 && options_.rank() >= 0 && options_.rank() < options_.num_replicas(),
              "DataLoader", "distributed(num_replicas >= 1, rank in [0, num_replicas))",
              "num_replicas " + std::to_string(options_.num_replicas()) + ", rank " + std::to_string(options_.rank()),
              "pass graft::distributed::get_world_size() and get_rank()");
  if (options_.seed()) {
    seed_ = *options_.seed();
  } else {
    Generator& g = default_generator();
    std::lock_guard<std::mutex> lock(g.mutex());
    seed_ = g.random64();
  }
}

int64_t DataLoader::size() const {
  const int64_t w = options_.num_replicas();
  const int64_t n = w == 1 ? dataset_->size() : (options_.drop_last() ? dataset_->size() / w : (dataset_->size() + w - 1) / w);
  const int64_t bs = options_.batch_size();
  return options_.drop_last() ? n / bs : (n + bs - 1) / bs;
}

void DataLoader::set_epoch(int64_t epoch) {
  GRAFT_CHECK(epoch >= 0, "DataLoader::set_epoch", "epoch >= 0", std::to_string(epoch),
              "epochs count from 0 (the first epoch is 0)");
  next_epoch_.store(epoch, std::memory_order_relaxed);
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options_.shuffle() && order.size() > 1) {
    Generator g(splitmix64(seed_ ^ splitmix64(static_cast<uint64_t>(epoch))));
    detail::shuffle(order, g);
  }
  if (options_.num_replicas() > 1)
    return samplers::distributed_shard(order, static_cast<size_t>(options_.num_replicas()),
                                       static_cast<size_t>(options_.rank()), options_.drop_last());
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  auto run = std::make_shared<Run>();
  run->dataset = dataset_;
  run->order = epoch_order(next_epoch_.fetch_add(1, std::memory_order_relaxed));
  run->batch_size = options_.batch_size();
  run->num_batches = size();
  run->prefetch = options_.prefetch();
  if (options_.num_workers() > 0 && run->num_batches > 0) {
    run->start_workers(std::min<int64_t>(options_.num_workers(), run->num_batches));
  }
  run->advance();
  return Iterator(std::move(run));
}

Example<>& DataLoader::Iterator::operator*() const {
  GRAFT_CHECK(run_ && !run_->done, "DataLoader::Iterator", "an iterator at a batch", "an iterator past the end",
              "compare with loader.end() before dereferencing");
  return run_->batch;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  GRAFT_CHECK(run_ && !run_->done, "DataLoader::Iterator", "an iterator at a batch", "an iterator past the end",
              "do not dereference or advance end(); compare with end() first");
  run_->advance();
  return *this;
}

bool DataLoader::Iterator::operator==(std::default_sentinel_t) const { return !run_ || run_->done; }

int64_t DataLoader::Iterator::batch_index() const { return run_ ? run_->current : -1; }

}  // namespace graft::data
