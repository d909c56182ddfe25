// Datasets, transforms and the DataLoader: batching, deterministic per-epoch shuffling, worker
// threads that match the single-threaded order, early exits and errors from worker threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include "../support/test_util.h"
#include "graft/data/dataloader.h"
#include "graft/data/dataset.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

using data::DataLoader;
using data::DataLoaderOptions;
using data::Example;

// n examples: data row i = [i, 10 i] (float32), target i (int64).
data::TensorDataset numbered(int64_t n) {
  std::vector<double> d, t;
  for (int64_t i = 0; i < n; ++i) {
    d.push_back(static_cast<double>(i));
    d.push_back(10.0 * static_cast<double>(i));
    t.push_back(static_cast<double>(i));
  }
  return data::TensorDataset(make(d, {n, 2}, kFloat32), make(t, {n}, kInt64));
}

std::vector<int64_t> targets_of(const Tensor& t) {
  std::vector<int64_t> out;
  for (double v : values(t)) out.push_back(static_cast<int64_t>(v));
  return out;
}

// Every batch's targets, in order.
std::vector<std::vector<int64_t>> run_epoch(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) {
    out.push_back(targets_of(batch.target));
    // Data rows match their targets.
    auto d = values(batch.data);
    for (size_t k = 0; k < out.back().size(); ++k) {
      EXPECT_EQ(d[2 * k], static_cast<double>(out.back()[k]));
      EXPECT_EQ(d[2 * k + 1], 10.0 * static_cast<double>(out.back()[k]));
    }
  }
  return out;
}

// Only get(): uses Dataset's default get_batch (get each, then stack). Optionally throws at one
// index, and counts concurrent calls.
class ItemDataset : public data::Dataset {
 public:
  explicit ItemDataset(int64_t n, int64_t throw_at = -1, int sleep_us = 0) : n_(n), throw_at_(throw_at), sleep_us_(sleep_us) {}
  int64_t size() const override { return n_; }
  Example<> get(int64_t i) const override {
    const int now = ++active_;
    int prev = max_active_.load();
    while (now > prev && !max_active_.compare_exchange_weak(prev, now)) {
    }
    if (sleep_us_) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    --active_;
    GRAFT_CHECK(i != throw_at_, "ItemDataset::get", "a readable example", "a broken one at " + std::to_string(i), "");
    return {full({3}, static_cast<double>(i)), tensor(i)};
  }
  int max_active() const { return max_active_.load(); }

 private:
  int64_t n_, throw_at_;
  int sleep_us_;
  mutable std::atomic<int> active_{0}, max_active_{0};
};

TEST(TensorDataset, RowsAndErrors) {
  auto ds = numbered(5);
  EXPECT_EQ(ds.size(), 5);
  Example<> e = ds.get(3);
  EXPECT_TRUE(all_close(e.data, {3, 30}, {2}, 0, 0));
  EXPECT_EQ(e.target.item<int64_t>(), 3);
  const int64_t idx[] = {4, 1, 4};
  Example<> b = ds.get_batch(idx);
  EXPECT_TRUE(all_close(b.data, {4, 40, 1, 10, 4, 40}, {3, 2}, 0, 0));
  EXPECT_EQ(targets_of(b.target), (std::vector<int64_t>{4, 1, 4}));
  EXPECT_TRUE(throws_error([&] { ds.get(5); }, {"TensorDataset::get", "[0, 5)"}));
  EXPECT_TRUE(throws_error([&] { ds.get(-1); }, {"TensorDataset::get", "-1"}));
  EXPECT_TRUE(throws_error([] { data::TensorDataset(zeros({4, 2}), zeros({3})); },
                           {"TensorDataset", "4 examples", "3 targets"}));
  EXPECT_TRUE(throws_error([] { data::TensorDataset(tensor(1.0), zeros({3})); }, {"first (example) dim"}));
  // Data that requires grad is stored detached.
  data::TensorDataset g(ones({2, 2}, requires_grad()), zeros({2}));
  EXPECT_FALSE(g.get(0).data.requires_grad());
  // Non-contiguous sources work too.
  data::TensorDataset nc(make({1, 2, 3, 4, 5, 6}, {2, 3}).t(), make({7, 8, 9}, {3}));
  EXPECT_TRUE(all_close(nc.get_batch(std::vector<int64_t>{2, 0}).data, {3, 6, 1, 4}, {2, 2}, 0, 0));
}

TEST(Dataset, DefaultGetBatchStacks) {
  ItemDataset ds(4);
  Example<> b = ds.get_batch(std::vector<int64_t>{2, 0, 3});
  EXPECT_TRUE(all_close(b.data, {2, 2, 2, 0, 0, 0, 3, 3, 3}, {3, 3}, 0, 0));
  EXPECT_EQ(targets_of(b.target), (std::vector<int64_t>{2, 0, 3}));
}

TEST(Normalize, PerChannelAndScalar) {
  // 2 channels of 2 x 2, independently: (x - mean[c]) / std[c].
  Tensor x = make({1, 2, 3, 4, 10, 20, 30, 40}, {2, 2, 2}, kFloat32);
  data::Normalize n({1.0, 20.0}, {2.0, 10.0});
  EXPECT_TRUE(all_close(n(x), {0, 0.5, 1, 1.5, -1, 0, 1, 2}, {2, 2, 2}, 1e-7, 0));
  // The same on a batch of two (channels at dim -3).
  Tensor batch = stack({x, x * 2});
  EXPECT_TRUE(all_close(n(batch), {0, 0.5, 1, 1.5, -1, 0, 1, 2, 0.5, 1.5, 2.5, 3.5, 0, 2, 4, 6}, {2, 2, 2, 2}, 1e-6, 0));
  EXPECT_TRUE(all_close(data::Normalize(0.5, 0.25)(make({0.5, 1.0}, {2}, kFloat64)), {0, 2}, {2}, 0, 0));
  EXPECT_EQ(n(x).dtype(), kFloat32);
  EXPECT_TRUE(throws_error([] { data::Normalize(std::vector<double>{0.0}, std::vector<double>{0.0}); }, {"Normalize", "standard deviations > 0"}));
  EXPECT_TRUE(throws_error([] { data::Normalize({0.0, 1.0}, {1.0}); }, {"as many means", "2 means and 1"}));
  EXPECT_TRUE(throws_error([&] { n(zeros({3, 2, 2})); }, {"2 channels", "3 channels in shape [3, 2, 2]"}));
  EXPECT_TRUE(throws_error([&] { n(zeros({2, 2, 2}, kInt64)); }, {"floating-point", "int64"}));
}

TEST(TransformDataset, AppliesToExamplesAndBatches) {
  auto base = std::make_shared<data::TensorDataset>(make({2, 4, 6, 8}, {4, 1, 1, 1}, kFloat32), make({0, 1, 2, 3}, {4}, kInt64));
  auto ds = data::map(std::shared_ptr<const data::Dataset>(base), data::Normalize(4.0, 2.0));
  EXPECT_TRUE(all_close(ds->get(3).data, {2}, {1, 1, 1}, 0, 0));
  EXPECT_TRUE(all_close(ds->get_batch(std::vector<int64_t>{0, 2}).data, {-1, 1}, {2, 1, 1, 1}, 0, 0));
  // Per example, with a target transform.
  data::TransformDataset t(base, data::Normalize(0.0, 2.0), false, [](const Tensor& y) { return y * 10; });
  Example<> b = t.get_batch(std::vector<int64_t>{1, 3});
  EXPECT_TRUE(all_close(b.data, {2, 4}, {2, 1, 1, 1}, 0, 0));
  EXPECT_EQ(targets_of(b.target), (std::vector<int64_t>{10, 30}));
  // A loader over a transformed dataset.
  DataLoader loader(ds, DataLoaderOptions(3));
  std::vector<double> all;
  for (auto& batch : loader)
    for (double v : values(batch.data)) all.push_back(v);
  EXPECT_EQ(all, (std::vector<double>{-1, 0, 1, 2}));
}

TEST(DataLoader, SequentialBatchesAndDropLast) {
  DataLoader loader(numbered(10), DataLoaderOptions().batch_size(4));
  EXPECT_EQ(loader.size(), 3);
  EXPECT_EQ(run_epoch(loader), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  DataLoader dl(numbered(10), DataLoaderOptions().batch_size(4).drop_last(true));
  EXPECT_EQ(dl.size(), 2);
  EXPECT_EQ(run_epoch(dl), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  DataLoader whole(numbered(3), DataLoaderOptions(8).drop_last(true));
  EXPECT_EQ(whole.size(), 0);
  EXPECT_TRUE(run_epoch(whole).empty());
  DataLoader empty(numbered(0), DataLoaderOptions(2).num_workers(2));
  EXPECT_TRUE(run_epoch(empty).empty());
  // Batches have shape (B, ...) and (B).
  DataLoader shapes(numbered(5), DataLoaderOptions(2));
  auto it = shapes.begin();
  EXPECT_EQ(it->data.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*it).target.sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(it.batch_index(), 0);
  ++it;
  EXPECT_EQ(it.batch_index(), 1);
}

TEST(DataLoader, ShuffleIsDeterministicPerSeedAndEpoch) {
  auto opts = DataLoaderOptions().batch_size(7).shuffle(true).seed(1234);
  DataLoader a(numbered(50), opts), b(numbered(50), opts);
  const auto a0 = run_epoch(a), a1 = run_epoch(a);
  EXPECT_EQ(a.epoch(), 2);
  EXPECT_EQ(run_epoch(b), a0);  // same seed, same epoch: same order
  EXPECT_EQ(run_epoch(b), a1);
  EXPECT_NE(a0, a1);  // reshuffled each epoch
  // Each epoch visits every example once.
  for (const auto& epoch : {a0, a1}) {
    std::vector<int64_t> flat;
    for (const auto& batch : epoch) flat.insert(flat.end(), batch.begin(), batch.end());
    std::vector<int64_t> sorted = flat;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(50);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all);
    EXPECT_NE(flat, all);
  }
  // set_epoch replays an epoch; epoch_order says what it is.
  a.set_epoch(1);
  EXPECT_EQ(run_epoch(a), a1);
  std::vector<int64_t> order = a.epoch_order(0), flat0;
  for (const auto& batch : a0) flat0.insert(flat0.end(), batch.begin(), batch.end());
  EXPECT_EQ(order, flat0);
  // Another seed, another order; no shuffle, the identity.
  DataLoader c(numbered(50), DataLoaderOptions().batch_size(7).shuffle(true).seed(99));
  EXPECT_NE(run_epoch(c), a0);
  DataLoader d(numbered(5), DataLoaderOptions(5));
  EXPECT_EQ(d.epoch_order(3), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // Without a seed, graft::manual_seed decides.
  manual_seed(5);
  DataLoader e1(numbered(30), DataLoaderOptions(30).shuffle(true));
  manual_seed(5);
  DataLoader e2(numbered(30), DataLoaderOptions(30).shuffle(true));
  EXPECT_EQ(e1.seed(), e2.seed());
  EXPECT_EQ(run_epoch(e1), run_epoch(e2));
}

TEST(DataLoader, WorkersGiveTheSameBatchesInTheSameOrder) {
  auto base = DataLoaderOptions().batch_size(3).shuffle(true).seed(7);
  DataLoader serial(numbered(40), base);
  const auto e0 = run_epoch(serial), e1 = run_epoch(serial);
  for (int workers : {1, 2, 3, 8}) {
    for (int prefetch : {1, 4}) {
      DataLoader par(numbered(40), DataLoaderOptions(base).num_workers(workers).prefetch(prefetch));
      EXPECT_EQ(run_epoch(par), e0) << workers << " workers";
      EXPECT_EQ(run_epoch(par), e1) << workers << " workers";
    }
  }
}

TEST(DataLoader, WorkersRunConcurrently) {
  auto ds = std::make_shared<ItemDataset>(24, -1, 2000);
  DataLoader loader(std::shared_ptr<const data::Dataset>(ds), DataLoaderOptions(2).num_workers(3));
  int64_t n = 0;
  for (auto& batch : loader) n += batch.data.size(0);
  EXPECT_EQ(n, 24);
  EXPECT_GE(ds->max_active(), 2);
}

TEST(DataLoader, BreakingOutEarlyJoinsTheWorkers) {
  for (int round = 0; round < 20; ++round) {
    DataLoader loader(numbered(100), DataLoaderOptions(3).shuffle(true).seed(static_cast<uint64_t>(round)).num_workers(2));
    int k = 0;
    for (auto& batch : loader) {
      EXPECT_EQ(batch.data.size(0), 3);
      if (++k == 1 + round % 4) break;
    }
    // The next epoch starts fresh.
    EXPECT_EQ(run_epoch(loader).size(), 34u);
  }
  // Never dereferenced, or destroyed before the loader, or outliving it.
  {
    DataLoader loader(numbered(10), DataLoaderOptions(2).num_workers(3));
    auto it = loader.begin();
  }
  DataLoader::Iterator kept;
  {
    DataLoader loader(numbered(10), DataLoaderOptions(2).num_workers(2));
    kept = loader.begin();
  }
  std::vector<int64_t> rest;
  for (; kept != std::default_sentinel; ++kept) rest.push_back(kept->target.size(0));
  EXPECT_EQ(rest, (std::vector<int64_t>{2, 2, 2, 2, 2}));
  EXPECT_TRUE(throws_error([&] { (void)*kept; }, {"past the end"}));
  EXPECT_TRUE(throws_error([&] { ++kept; }, {"past the end"}));
}

TEST(DataLoader, ErrorsInWorkersReachTheLoopAtTheirBatch) {
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(workers);
    DataLoader loader(std::make_shared<ItemDataset>(20, 9), DataLoaderOptions(2).num_workers(workers));
    std::vector<int64_t> seen;
    EXPECT_TRUE(throws_error(
        [&] {
          for (auto& batch : loader) seen.push_back(batch.target.select(0, 0).item<int64_t>());
        },
        {"ItemDataset::get", "broken one at 9"}));
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 2, 4, 6}));  // batch 4 holds example 9
    // The loader still works for the next epoch (which fails at the same place).
    EXPECT_TRUE(throws_error([&] { for (auto& b : loader) (void)b; }, {"broken one at 9"}));
  }
  // A failure in the first batch surfaces from begin().
  DataLoader first(std::make_shared<ItemDataset>(4, 0), DataLoaderOptions(2).num_workers(2));
  EXPECT_TRUE(throws_error([&] { first.begin(); }, {"broken one at 0"}));
}

TEST(DataLoader, BadOptions) {
  EXPECT_TRUE(throws_error([] { DataLoader l(numbered(3), DataLoaderOptions(0)); }, {"batch_size >= 1", "0"}));
  EXPECT_TRUE(throws_error([] { DataLoader l(numbered(3), DataLoaderOptions(1).num_workers(-1)); }, {"num_workers"}));
  EXPECT_TRUE(throws_error([] { DataLoader l(numbered(3), DataLoaderOptions(1).prefetch(0)); }, {"prefetch >= 1"}));
  EXPECT_TRUE(throws_error([] { DataLoader l(std::shared_ptr<const data::Dataset>(), {}); }, {"a dataset"}));
  DataLoader ok(numbered(3), DataLoaderOptions(1));
  EXPECT_TRUE(throws_error([&] { ok.set_epoch(-2); }, {"epoch >= 0"}));
}

TEST(DataLoader, BatchesCarryNoAutogradHistory) {
  auto ds = std::make_shared<data::TransformDataset>(
      std::make_shared<data::TensorDataset>(ones({4, 2}), zeros({4})),
      [w = ones({2}, requires_grad())](const Tensor& x) { return x * w; }, true);
  DataLoader loader(std::shared_ptr<const data::Dataset>(ds), DataLoaderOptions(2).num_workers(1));
  for (auto& batch : loader) EXPECT_FALSE(batch.data.requires_grad());
}

// Issue 14, item 18: begin() on one loader from several threads. Each call must take its own epoch
// number (the counter was a plain int64_t: concurrent increments could be lost). Counted by hand:
// 4 threads x 500 begin() calls start 2000 epochs.
TEST(DataLoader, BeginFromSeveralThreadsCountsEveryEpoch) {
  DataLoader loader(numbered(4), DataLoaderOptions(2).shuffle(true));
  constexpr int kThreads = 4, kCalls = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) (void)loader.begin();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(loader.epoch(), kThreads * kCalls);
  // A copy starts where the original is.
  DataLoader copy = loader;
  EXPECT_EQ(copy.epoch(), kThreads * kCalls);
}

}  // namespace
}  // namespace graft::test
