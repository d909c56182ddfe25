// make_data_loader's worker threads, ordering, timeout and iterators (Note [make_data_loader's
// workers] in graft/data/make_data_loader.h). Expected values are by construction: batch i of a
// SequentialSampler with batch size 1 is index i.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

// Shared by every copy of a dataset: how many copies were made, which threads ran get_batch, and
// a gate that holds batch 0 back until the other batches are done.
struct Shared {
  std::atomic<int> copies{0};
  std::mutex mutex;
  std::condition_variable cv;
  size_t finished = 0;  // batches other than 0 done
  size_t consumed = 0;  // batches the test's loop has received (LastFirst's consumed mode)
  std::vector<std::thread::id> threads;
  bool open = false;  // for GatedDataset
};

// get_batch({i}) = i; batch 0 waits until the other n - 1 batches have finished (or, with
// wait_for_consumed, until the loop has received them), so with n workers it finishes last.
struct LastFirst : data::datasets::BatchDataset<LastFirst, size_t> {
  LastFirst(size_t n, std::shared_ptr<Shared> shared, bool wait_for_consumed = false)
      : n_(n), shared_(std::move(shared)), wait_for_consumed_(wait_for_consumed) {}
  LastFirst(const LastFirst& o) : n_(o.n_), shared_(o.shared_), wait_for_consumed_(o.wait_for_consumed_) {
    ++shared_->copies;
  }
  LastFirst(LastFirst&&) noexcept = default;
  LastFirst& operator=(const LastFirst&) = delete;
  LastFirst& operator=(LastFirst&&) = delete;

  size_t get_batch(ArrayRef<size_t> indices) override {
    const size_t i = indices.front();
    std::unique_lock<std::mutex> lock(shared_->mutex);
    shared_->threads.push_back(std::this_thread::get_id());
    if (i == 0) {
      shared_->cv.wait(lock, [&] { return (wait_for_consumed_ ? shared_->consumed : shared_->finished) == n_ - 1; });
    } else {
      ++shared_->finished;
      shared_->cv.notify_all();
    }
    return i;
  }
  std::optional<size_t> size() const override { return n_; }

  size_t n_;
  std::shared_ptr<Shared> shared_;
  bool wait_for_consumed_ = false;
};

template <typename Loader>
std::vector<size_t> drain(Loader& loader) {
  std::vector<size_t> out;
  for (size_t v : loader) out.push_back(v);
  return out;
}

TEST(MakeDataLoaderWorkers, EnforceOrderingGivesTheSamplersOrderWhateverTheWorkersFinishOrder) {
  constexpr size_t n = 4;
  auto shared = std::make_shared<Shared>();
  auto loader = data::make_data_loader(LastFirst(n, shared), data::samplers::SequentialSampler(n),
                                       data::DataLoaderOptions(1).workers(n).enforce_ordering(true));
  EXPECT_EQ(shared->copies.load(), static_cast<int>(n));  // one copy of the dataset per worker
  EXPECT_EQ(drain(*loader), (std::vector<size_t>{0, 1, 2, 3}));
  // The batches were made on worker threads, not on this one.
  ASSERT_EQ(shared->threads.size(), n);
  for (const auto& id : shared->threads) EXPECT_NE(id, std::this_thread::get_id());
}

TEST(MakeDataLoaderWorkers, WithoutOrderingBatchesComeAsTheyFinish) {
  constexpr size_t n = 4;
  auto shared = std::make_shared<Shared>();
  // Batch 0 waits until the loop has received the other three: with enforce_ordering it would
  // never come (the loader would wait for batch 0 first).
  auto loader = data::make_data_loader(LastFirst(n, shared, /*wait_for_consumed=*/true),
                                       data::samplers::SequentialSampler(n),
                                       data::DataLoaderOptions(1).workers(n).enforce_ordering(false));
  std::vector<size_t> out;
  for (size_t v : *loader) {
    out.push_back(v);
    {
      std::lock_guard<std::mutex> lock(shared->mutex);
      ++shared->consumed;
    }
    shared->cv.notify_all();
  }
  ASSERT_EQ(out.size(), n);
  EXPECT_EQ(out.back(), 0u);  // batch 0 is held back until 1, 2, 3 are done
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<size_t>{0, 1, 2, 3}));
}

// get(i) = 2 i + 1 after the gate opens; 20 examples in batches of 3 (the last of 2).
struct GatedDataset : data::datasets::Dataset<GatedDataset, int> {
  explicit GatedDataset(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  int get(size_t index) override {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    shared_->cv.wait(lock, [&] { return shared_->open; });
    return static_cast<int>(2 * index + 1);
  }
  std::optional<size_t> size() const override { return 20; }
  std::shared_ptr<Shared> shared_;
};

void open_gate(Shared& shared) {
  {
    std::lock_guard<std::mutex> lock(shared.mutex);
    shared.open = true;
  }
  shared.cv.notify_all();
}

TEST(MakeDataLoaderWorkers, TimeoutThrowsWhenNoBatchArrivesInTime) {
  auto shared = std::make_shared<Shared>();
  auto loader = data::make_data_loader(GatedDataset(shared), data::samplers::SequentialSampler(20),
                                       data::DataLoaderOptions(3).workers(2).timeout(std::chrono::milliseconds(20)));
  const auto start = std::chrono::steady_clock::now();
  auto it = loader->begin();
  EXPECT_TRUE(throws_error([&] { (void)*it; }, {"Timeout in DataLoader queue", "timeout was 20 ms"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  open_gate(*shared);
  // The batch that timed out arrives later: the iterator goes on from it.
  EXPECT_EQ(*it, (std::vector<int>{1, 3, 5}));
  ++it;
  EXPECT_EQ(*it, (std::vector<int>{7, 9, 11}));
}

TEST(MakeDataLoaderWorkers, BatchesAndEpochsAsWithoutWorkers) {
  auto shared = std::make_shared<Shared>();
  open_gate(*shared);
  auto loader = data::make_data_loader(GatedDataset(shared), data::samplers::SequentialSampler(20),
                                       data::DataLoaderOptions(3).workers(3).max_jobs(2).drop_last(true));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<int>> batches;
    for (auto& b : *loader) batches.push_back(b);
    ASSERT_EQ(batches.size(), 6u) << "epoch " << epoch;  // 20 / 3, the short last batch dropped
    for (size_t b = 0; b < batches.size(); ++b)
      EXPECT_EQ(batches[b], (std::vector<int>{static_cast<int>(6 * b + 1), static_cast<int>(6 * b + 3),
                                              static_cast<int>(6 * b + 5)}));
  }
}

TEST(MakeDataLoaderWorkers, BeginWhileBatchesAreInFlightThrows) {
  auto shared = std::make_shared<Shared>();
  open_gate(*shared);
  auto loader = data::make_data_loader(GatedDataset(shared), data::samplers::SequentialSampler(20),
                                       data::DataLoaderOptions(5).workers(2));
  auto it = loader->begin();
  EXPECT_TRUE(throws_error([&] { loader->begin(); },
                           {"StatelessDataLoader::begin", "Attempted to get a new DataLoader iterator"}));
  // Once the epoch is exhausted a new one may start.
  int batches = 0;
  for (; it != loader->end(); ++it) ++batches;
  EXPECT_EQ(batches, 4);
  EXPECT_EQ(std::distance(loader->begin(), loader->end()), 4);
  // Without workers nothing is in flight: begin() restarts the epoch.
  auto single = data::make_data_loader(GatedDataset(shared), data::samplers::SequentialSampler(20),
                                       data::DataLoaderOptions(5));
  auto a = single->begin();
  EXPECT_EQ((*a)[0], 1);
  auto b = single->begin();
  EXPECT_EQ((*b)[0], 1);
}

TEST(MakeDataLoaderWorkers, LeavingAnEpochEarlyStopsTheWorkers) {
  auto shared = std::make_shared<Shared>();
  open_gate(*shared);
  auto loader = data::make_data_loader(GatedDataset(shared), data::samplers::SequentialSampler(20),
                                       data::DataLoaderOptions(1).workers(3));
  for (auto& batch : *loader) {
    EXPECT_EQ(batch, std::vector<int>{1});
    break;
  }
  loader.reset();  // joins the workers with jobs still queued; must not hang
  SUCCEED();
}

struct Throwing : data::datasets::Dataset<Throwing, int> {
  int get(size_t index) override {
    if (index == 2) throw std::invalid_argument("no example 2");
    return static_cast<int>(index);
  }
  std::optional<size_t> size() const override { return 4; }
};

TEST(MakeDataLoaderWorkers, AWorkersExceptionIsRethrownAtItsBatch) {
  auto loader = data::make_data_loader(Throwing(), data::samplers::SequentialSampler(4),
                                       data::DataLoaderOptions(1).workers(2));
  auto it = loader->begin();
  EXPECT_EQ(*it, std::vector<int>{0});
  ++it;
  EXPECT_EQ(*it, std::vector<int>{1});
  try {
    ++it;
    FAIL() << "expected a WorkerException";
  } catch (const data::WorkerException& e) {
    EXPECT_STREQ(e.what(), "Caught exception in DataLoader worker thread. Original message: no example 2");
    EXPECT_THROW(std::rethrow_exception(e.original_exception), std::invalid_argument);
  }
}

// Iterators as LibTorch's (Note [make_data_loader's workers]); 12 examples in batches of 4.
struct Count : data::datasets::Dataset<Count, int> {
  int get(size_t index) override { return static_cast<int>(index); }
  std::optional<size_t> size() const override { return 12; }
};

TEST(MakeDataLoaderWorkers, IteratorComparison) {
  auto loader = data::make_data_loader(Count(), data::samplers::SequentialSampler(12), data::DataLoaderOptions(4));
  auto i = loader->begin();
  auto j = loader->begin();
  EXPECT_NE(i, j);  // two begin() iterators are two iterators
  EXPECT_EQ(i, i);
  auto copy = i;
  EXPECT_EQ(copy, i);  // a copy shares the position
  EXPECT_EQ(loader->end(), loader->end());
  EXPECT_NE(i, loader->end());  // fetches batch {0..3}
  EXPECT_EQ(copy->front(), 0);
  ++copy;
  EXPECT_EQ(i->front(), 4);  // i moved with its copy
  ++i;
  ++i;
  EXPECT_EQ(i, loader->end());  // exhausted
  EXPECT_EQ(loader->end(), copy);
  EXPECT_TRUE(throws_error([&] { ++i; }, {"Attempted to increment iterator past the end"}));
  EXPECT_TRUE(throws_error([&] { (void)*i; }, {"Attempted to dereference iterator that was past the end"}));
  auto e = loader->end();
  EXPECT_TRUE(throws_error([&] { ++e; }, {"Incrementing the DataLoader's past-the-end iterator is not allowed"}));
  EXPECT_TRUE(throws_error([&] { (void)*e; }, {"past-the-end iterator is not allowed"}));
}

struct NotCopyable : data::datasets::Dataset<NotCopyable, int> {
  NotCopyable() = default;
  NotCopyable(const NotCopyable&) = delete;
  NotCopyable(NotCopyable&&) noexcept = default;
  int get(size_t index) override { return static_cast<int>(index); }
  std::optional<size_t> size() const override { return 3; }
};

TEST(MakeDataLoaderWorkers, WorkersNeedACopyableDataset) {
  auto plain = data::make_data_loader(NotCopyable(), data::samplers::SequentialSampler(3), data::DataLoaderOptions(2));
  EXPECT_EQ(std::distance(plain->begin(), plain->end()), 2);
  EXPECT_TRUE(throws_error(
      [] { data::make_data_loader(NotCopyable(), data::samplers::SequentialSampler(3), data::DataLoaderOptions(2).workers(2)); },
      {"make_data_loader", "copyable dataset"}));
}

}  // namespace
}  // namespace graft::test
