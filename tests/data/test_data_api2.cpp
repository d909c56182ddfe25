// The rest of LibTorch's data API that its own data loader tests (test_api) use (issue 32):
// make_tempfile, detail::Queue / DataShuttle / sequencers, StreamSampler and StreamDataset,
// datasets::TensorDataset, SharedBatchDataset, FullDataLoaderOptions, samplers' save/load, custom
// batch requests and ArrayRef batch requests. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

bool api2_file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Sets TMPDIR for one test and puts the old value back.
struct Api2TmpdirGuard {
  explicit Api2TmpdirGuard(const std::string& value) {
    const char* old = std::getenv("TMPDIR");
    if (old) before = old;
    ::setenv("TMPDIR", value.c_str(), 1);
  }
  ~Api2TmpdirGuard() {
    if (before) {
      ::setenv("TMPDIR", before->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  std::optional<std::string> before;
};

TEST(DataApi2, TempFileIsRemovedWhenItDies) {
  std::string name;
  {
    TempFile file = make_tempfile("api2-");
    name = file.name;
    ASSERT_TRUE(api2_file_exists(name));
    EXPECT_GE(file.fd, 0);
    // "<dir>/api2-" and six characters mkstemp chose.
    const std::string base = name.substr(name.rfind('/') + 1);
    EXPECT_EQ(base.substr(0, 5), "api2-");
    EXPECT_EQ(base.size(), 11u);
    EXPECT_EQ(::write(file.fd, "abc", 3), 3);
    struct stat st {};
    ASSERT_EQ(::stat(name.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 3);
  }
  EXPECT_FALSE(api2_file_exists(name));
}

TEST(DataApi2, TempFileMovesOwnership) {
  std::string name;
  {
    TempFile a = make_tempfile();
    name = a.name;
    TempFile b = std::move(a);
    EXPECT_EQ(b.name, name);
    EXPECT_TRUE(a.name.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    EXPECT_EQ(a.fd, -1);          // NOLINT(bugprone-use-after-move)
    {
      TempFile c = make_tempfile();
      const std::string c_name = c.name;
      c = std::move(b);  // c's own file goes, b's file is c's now
      EXPECT_FALSE(api2_file_exists(c_name));
      EXPECT_EQ(c.name, name);
      EXPECT_TRUE(api2_file_exists(name));
    }
    EXPECT_FALSE(api2_file_exists(name));  // removed once, by c
  }
  EXPECT_FALSE(api2_file_exists(name));
}

TEST(DataApi2, TempFileInAMissingDirectory) {
  Api2TmpdirGuard guard("/nonexistent-graft-dir");
  EXPECT_FALSE(try_make_tempfile().has_value());
  EXPECT_TRUE(
      throws_error([] { make_tempfile("p-"); }, {"make_tempfile", "/nonexistent-graft-dir/p-XXXXXX", "TMPDIR"}));
}

TEST(DataApi2, QueueIsFirstInFirstOut) {
  data::detail::Queue<int> queue;
  queue.push(1);
  queue.push(2);
  queue.push(3);
  EXPECT_EQ(queue.pop(), 1);
  EXPECT_EQ(queue.pop(), 2);
  queue.push(4);
  EXPECT_EQ(queue.pop(), 3);
  EXPECT_EQ(queue.clear(), 1u);  // 4
  EXPECT_EQ(queue.clear(), 0u);
  EXPECT_TRUE(throws_error([&] { queue.pop(std::chrono::milliseconds(5)); },
                           {"Timeout in DataLoader queue while waiting for next batch (timeout was 5 ms)"}));
}

TEST(DataApi2, QueueAcrossThreads) {
  data::detail::Queue<int> queue;
  // The pop blocks until the other thread pushes.
  std::thread pusher([&queue] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    queue.push(123);
  });
  EXPECT_EQ(queue.pop(), 123);
  pusher.join();
  queue.push(7);
  auto popped = std::async(std::launch::async, [&queue] { return queue.pop(std::chrono::milliseconds(1000)); });
  EXPECT_EQ(popped.get(), 7);
}

TEST(DataApi2, DataShuttleCountsJobsInFlight) {
  data::detail::DataShuttle<int, std::string> shuttle;
  EXPECT_FALSE(shuttle.pop_result().has_value());  // nothing in flight: no wait
  shuttle.push_job(10);
  shuttle.push_job(20);
  EXPECT_EQ(shuttle.in_flight_jobs(), 2u);
  EXPECT_EQ(shuttle.pop_job(), 10);
  shuttle.push_result("ten");
  EXPECT_EQ(shuttle.pop_result().value(), "ten");
  EXPECT_EQ(shuttle.in_flight_jobs(), 1u);
  // Job 20 is in flight and no result comes: a timeout.
  EXPECT_TRUE(throws_error([&] { shuttle.pop_result(std::chrono::milliseconds(5)); }, {"Timeout"}));
  EXPECT_EQ(shuttle.pop_job(), 20);
  shuttle.push_result("twenty");
  EXPECT_EQ(shuttle.pop_result().value(), "twenty");
  EXPECT_FALSE(shuttle.pop_result().has_value());
}

TEST(DataApi2, DataShuttleDrain) {
  data::detail::DataShuttle<int, int> shuttle;
  // Three jobs: one taken with its result pushed, two never taken.
  shuttle.push_job(1);
  shuttle.push_job(2);
  shuttle.push_job(3);
  EXPECT_EQ(shuttle.pop_job(), 1);
  shuttle.push_result(100);
  shuttle.drain();
  EXPECT_EQ(shuttle.in_flight_jobs(), 0u);
  EXPECT_FALSE(shuttle.pop_result().has_value());
}

struct Api2Numbered {
  size_t sequence_number;
};

TEST(DataApi2, Sequencers) {
  data::detail::sequencers::NoSequencer<int> none;
  EXPECT_EQ(none.next([] { return 5; }).value(), 5);

  data::detail::sequencers::OrderedSequencer<Api2Numbered> ordered(5);
  EXPECT_EQ(ordered.next_sequence_number_, 0u);
  EXPECT_EQ(ordered.buffer_.size(), 5u);
  // Results arrive as 0, 2, 4, 3, 1: 0 at once (1 pulled), then 2, 4, 3 are buffered while
  // waiting for 1 (5 pulled in all), then 2, 3, 4 come from the buffer without pulling.
  const std::vector<size_t> arrivals = {0, 2, 4, 3, 1};
  size_t pulled = 0;
  auto producer = [&]() -> std::optional<Api2Numbered> {
    if (pulled == arrivals.size()) return std::nullopt;
    return Api2Numbered{arrivals[pulled++]};
  };
  EXPECT_EQ(ordered.next(producer).value().sequence_number, 0u);
  EXPECT_EQ(pulled, 1u);
  EXPECT_EQ(ordered.next(producer).value().sequence_number, 1u);
  EXPECT_EQ(pulled, 5u);
  for (size_t expected = 2; expected <= 4; ++expected) {
    EXPECT_EQ(ordered.next(producer).value().sequence_number, expected);
    EXPECT_EQ(pulled, 5u);
  }
  EXPECT_FALSE(ordered.next(producer).has_value());  // the producer is done

  // With 2 slots waiting for 0, result 2 cannot be kept (it would take 0's slot).
  data::detail::sequencers::OrderedSequencer<Api2Numbered> small(2);
  EXPECT_TRUE(throws_error([&] { small.next([] { return Api2Numbered{2}; }); },
                           {"OrderedSequencer::next", "[0, 2)", "2"}));
}

TEST(DataApi2, StreamSampler) {
  data::samplers::StreamSampler sampler(100);
  // 10 + 2 + 85 = 97 asked for, so next(123) gives the 3 left.
  EXPECT_EQ(sampler.next(10).value().size(), 10u);
  EXPECT_EQ(static_cast<size_t>(sampler.next(2).value()), 2u);
  EXPECT_EQ(sampler.next(85).value().size(), 85u);
  EXPECT_EQ(sampler.next(123).value().size(), 3u);
  EXPECT_FALSE(sampler.next(1).has_value());
  sampler.reset(7);
  EXPECT_EQ(sampler.next(5).value().size(), 5u);
  EXPECT_EQ(sampler.examples_retrieved_so_far(), 5u);
  EXPECT_EQ(sampler.next(5).value().size(), 2u);
  EXPECT_FALSE(sampler.next(5).has_value());
  sampler.reset();
  EXPECT_EQ(sampler.epoch_size(), 7u);
  EXPECT_EQ(sampler.next(100).value().size(), 7u);
  EXPECT_TRUE(throws_error([&] { sampler.next(0); }, {"StreamSampler::next", "batch size >= 1"}));
}

// An endless stream 0, 1, 2, ...: get_batch(n) gives the next n numbers.
struct Api2Counter : data::datasets::StreamDataset<Api2Counter, std::vector<int>> {
  std::vector<int> get_batch(size_t batch_size) override {
    std::vector<int> batch(batch_size);
    for (int& v : batch) v = counter++;
    return batch;
  }
  std::optional<size_t> size() const override { return std::nullopt; }
  int counter = 0;
};

TEST(DataApi2, StreamDatasetWithStreamSampler) {
  // epoch 40, batches of 13: 13, 13, 13, 1; mapped x -> 10 x.
  auto loader = data::make_data_loader(Api2Counter().map(data::transforms::Lambda<int>([](int x) { return 10 * x; })),
                                       data::samplers::StreamSampler(40), data::DataLoaderOptions(13));
  std::vector<std::vector<int>> batches;
  for (auto& batch : *loader) batches.push_back(batch);
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].size(), 13u);
  EXPECT_EQ(batches[0][0], 0);
  EXPECT_EQ(batches[1][0], 130);   // 10 * 13
  EXPECT_EQ(batches[2][12], 380);  // 10 * 38
  EXPECT_EQ(batches[3], (std::vector<int>{390}));
  // drop_last leaves the short batch out; the stream goes on from where it was (40).
  auto dropping = data::make_data_loader(Api2Counter(), data::samplers::StreamSampler(40),
                                         data::DataLoaderOptions(13).drop_last(true));
  size_t n = 0;
  for (auto& batch : *dropping) {
    EXPECT_EQ(batch.front(), static_cast<int>(13 * n));
    ++n;
  }
  EXPECT_EQ(n, 3u);
}

TEST(DataApi2, TensorDataset) {
  data::datasets::TensorDataset from_tensor(graft::eye(3));
  EXPECT_EQ(from_tensor.size().value(), 3u);
  const Tensor row = from_tensor.get(1);
  EXPECT_EQ(values(row), (std::vector<double>{0, 1, 0}));
  EXPECT_TRUE(throws_error([&] { from_tensor.get(3); }, {"TensorDataset::get", "[0, 3)"}));

  // Three (2) rows stacked to (3, 2).
  data::datasets::TensorDataset from_list(std::vector<Tensor>{make({1, 2}, {2}), make({3, 4}, {2}), make({5, 6}, {2})});
  EXPECT_EQ(from_list.size().value(), 3u);
  EXPECT_EQ(values(from_list.get(2).data), (std::vector<double>{5, 6}));
  auto stacked = data::datasets::TensorDataset(from_list.tensor).map(data::transforms::Stack<data::TensorExample>());
  const data::TensorExample batch = stacked.get_batch({2, 0});
  EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(batch.data), (std::vector<double>{5, 6, 1, 2}));

  EXPECT_TRUE(throws_error([] { data::datasets::TensorDataset(std::vector<Tensor>{}); }, {"TensorDataset", "empty"}));
  EXPECT_TRUE(throws_error([] { data::datasets::TensorDataset(graft::tensor(1.0)); }, {"TensorDataset", "0-dim"}));
}

// A batch dataset in LibTorch's spelling: get_batch(ArrayRef<size_t>) overrides.
struct Api2FirstPlusOne : data::datasets::BatchDataset<Api2FirstPlusOne, int> {
  int get_batch(ArrayRef<size_t> indices) override { return 1 + static_cast<int>(indices.front()); }
  std::optional<size_t> size() const override { return 4; }
};

// get(i) = 1 + i, as int examples.
struct Api2Ints : data::datasets::Dataset<Api2Ints, int> {
  int get(size_t index) override { return 1 + static_cast<int>(index); }
  std::optional<size_t> size() const override { return 6; }
};

TEST(DataApi2, ArrayRefBatchRequests) {
  Api2FirstPlusOne first;
  EXPECT_EQ(first.get_batch({2, 3}), 3);
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(first, 1);
  std::vector<int> got;
  std::copy(loader->begin(), loader->end(), std::back_inserter(got));
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3, 4}));

  Api2Ints ints;
  EXPECT_EQ(ints.get_batch({0, 4}), (std::vector<int>{1, 5}));
  EXPECT_EQ(ints.get_batch(2), (std::vector<int>{3}));  // one index
  // A batch lambda built with braces: the sum of the batch. {1, 2, 3, 4, 5, 6}[1..5] sums to 20.
  auto summed = ints.map(data::transforms::BatchLambda<std::vector<int>, std::string>{
      [](std::vector<int> v) { return std::to_string(std::accumulate(v.begin(), v.end(), 0)); }});
  EXPECT_EQ(summed.get_batch({1, 2, 3, 4, 5}), "20");
}

// A batch request that is not a list: offset + each index.
struct Api2OffsetRequest : data::samplers::CustomBatchRequest {
  Api2OffsetRequest(size_t offset_, std::vector<size_t> index_) : offset(offset_), index(std::move(index_)) {}
  size_t size() const override { return index.size(); }
  size_t offset;
  std::vector<size_t> index;
};

struct Api2OffsetDataset : data::datasets::BatchDataset<Api2OffsetDataset, std::vector<int>, Api2OffsetRequest> {
  std::vector<int> get_batch(Api2OffsetRequest request) override {
    std::vector<int> out;
    for (size_t i : request.index) out.push_back(static_cast<int>(request.offset + i));
    return out;
  }
  std::optional<size_t> size() const override { return 7; }
};

// Batches {offset 100k; indices 0..n-1} until 7 indices were given; save/load record their calls.
struct Api2OffsetSampler : data::samplers::Sampler<Api2OffsetRequest> {
  void reset(std::optional<size_t> /*new_size*/ = std::nullopt) override { given = 0; }
  std::optional<Api2OffsetRequest> next(size_t batch_size) override {
    if (given >= 7) return std::nullopt;
    const size_t n = std::min(batch_size, 7 - given);
    std::vector<size_t> index(n);
    std::iota(index.begin(), index.end(), size_t{0});
    const size_t offset = 100 * (given / batch_size);
    given += n;
    return Api2OffsetRequest(offset, std::move(index));
  }
  void save(serialize::OutputArchive& archive) const override {
    archive.write("given", graft::tensor(static_cast<int64_t>(given)));
  }
  void load(serialize::InputArchive& archive) override {
    Tensor t;
    archive.read("given", t);
    given = static_cast<size_t>(t.item<int64_t>());
  }
  size_t given = 0;
};

TEST(DataApi2, CustomBatchRequest) {
  // Batches of 3 over 7: {0,1,2}, {100,101,102}, {200} (the last one short).
  auto loader = data::make_data_loader(Api2OffsetDataset(), Api2OffsetSampler(), data::DataLoaderOptions(3));
  std::vector<std::vector<int>> batches;
  for (auto& batch : *loader) batches.push_back(batch);
  EXPECT_EQ(batches, (std::vector<std::vector<int>>{{0, 1, 2}, {100, 101, 102}, {200}}));
  auto dropping = data::make_data_loader(Api2OffsetDataset(), Api2OffsetSampler(),
                                         data::DataLoaderOptions(3).drop_last(true));
  size_t n = 0;
  for (auto& batch : *dropping) n += batch.size() > 0 ? 1 : 0;
  EXPECT_EQ(n, 2u);

  // graft::save / graft::load go through the user's save and load.
  Api2OffsetSampler a;
  a.next(3);
  a.next(2);
  std::stringstream stream;
  graft::save(a, stream);
  Api2OffsetSampler b;
  graft::load(b, stream);
  EXPECT_EQ(b.given, 5u);
}

TEST(DataApi2, SaveAndLoadSequentialSampler) {
  data::samplers::SequentialSampler a(10);
  a.next(3);
  a.next(4);
  ASSERT_EQ(a.index(), 7u);
  std::stringstream stream;
  graft::save(a, stream);
  data::samplers::SequentialSampler b(10);
  graft::load(b, stream);
  EXPECT_EQ(b.index(), 7u);
  EXPECT_EQ(b.next(5).value(), (std::vector<size_t>{7, 8, 9}));

  // An index past the loading sampler's epoch is refused, and the sampler is left as it was.
  std::stringstream again;
  graft::save(a, again);
  data::samplers::SequentialSampler small(5);
  small.next(2);
  EXPECT_TRUE(throws_error([&] { graft::load(small, again); }, {"SequentialSampler::load", "'index' in [0, 5]", "7"}));
  EXPECT_EQ(small.index(), 2u);
}

TEST(DataApi2, SaveAndLoadRandomSampler) {
  graft::manual_seed(5);
  data::samplers::RandomSampler a(10);
  const std::vector<size_t> head = a.next(3).value();
  std::stringstream stream;
  graft::save(a, stream);
  data::samplers::RandomSampler b(4);  // another size and permutation: the loaded one replaces it
  graft::load(b, stream);
  EXPECT_EQ(b.index(), 3u);
  const std::vector<size_t> tail = b.next(10).value();
  ASSERT_EQ(tail.size(), 7u);
  EXPECT_EQ(a.next(10).value(), tail);  // b goes on where a was
  // head and tail together are 0..9, each once.
  std::vector<size_t> all = head;
  all.insert(all.end(), tail.begin(), tail.end());
  std::sort(all.begin(), all.end());
  std::vector<size_t> expected(10);
  std::iota(expected.begin(), expected.end(), size_t{0});
  EXPECT_EQ(all, expected);

  // A SequentialSampler's archive has no "indices": an error naming the key, b unchanged.
  data::samplers::SequentialSampler seq(10);
  std::stringstream seq_stream;
  graft::save(seq, seq_stream);
  EXPECT_TRUE(throws_error([&] { graft::load(b, seq_stream); }, {"indices"}));
  EXPECT_EQ(b.index(), 10u);
}

TEST(DataApi2, SaveAndLoadDistributedSamplers) {
  // 10 examples, 3 replicas, rank 1, in order: the order padded to 12 is 0..9, 0, 1 and rank 1
  // takes positions 1, 4, 7, 10: {1, 4, 7, 0}.
  data::samplers::DistributedSequentialSampler a(10, 3, 1);
  EXPECT_EQ(a.next(2).value(), (std::vector<size_t>{1, 4}));
  EXPECT_EQ(a.index(), 2u);
  std::stringstream stream;
  graft::save(a, stream);
  data::samplers::DistributedSequentialSampler b(10, 3, 1);
  graft::load(b, stream);
  EXPECT_EQ(b.index(), 2u);
  EXPECT_EQ(b.next(5).value(), (std::vector<size_t>{7, 0}));

  // Without duplicates: floor(10 / 3) = 3 each; rank 2 takes positions 2, 5, 8.
  data::samplers::DistributedSequentialSampler exact(10, 3, 2, /*allow_duplicates=*/false);
  EXPECT_EQ(exact.next(10).value(), (std::vector<size_t>{2, 5, 8}));

  // The random one: the epoch comes back, and with it the same permutation.
  data::samplers::DistributedRandomSampler r(10);
  r.set_epoch(3);
  r.next(4);
  std::stringstream random_stream;
  graft::save(r, random_stream);
  data::samplers::DistributedRandomSampler s(10);
  graft::load(s, random_stream);
  EXPECT_EQ(s.epoch(), 3u);
  EXPECT_EQ(s.index(), 4u);
  EXPECT_EQ(s.next(10).value(), r.next(10).value());
}

TEST(DataApi2, SaveAndLoadStreamSampler) {
  data::samplers::StreamSampler a(50);
  a.next(20);
  std::stringstream stream;
  graft::save(a, stream);
  data::samplers::StreamSampler b(50);
  graft::load(b, stream);
  EXPECT_EQ(b.examples_retrieved_so_far(), 20u);
  EXPECT_EQ(b.next(100).value().size(), 30u);
}

// Neither copyable nor default-constructible: a SharedBatchDataset never copies it.
struct Api2Uncopyable : data::datasets::Dataset<Api2Uncopyable, int> {
  explicit Api2Uncopyable(const std::string& /*name*/) {}
  Api2Uncopyable(Api2Uncopyable&&) = default;
  Api2Uncopyable& operator=(Api2Uncopyable&&) = default;
  Api2Uncopyable(const Api2Uncopyable&) = delete;
  Api2Uncopyable& operator=(const Api2Uncopyable&) = delete;
  int get(size_t index) override { return base + static_cast<int>(index); }
  std::optional<size_t> size() const override { return 5; }
  int base = 0;
};

TEST(DataApi2, SharedBatchDataset) {
  auto shared = data::datasets::make_shared_dataset<Api2Uncopyable>("x");
  auto copy = shared;
  copy->base = 10;  // one dataset behind both
  EXPECT_EQ(shared->base, 10);
  EXPECT_EQ((*shared).get_batch({0, 4}), (std::vector<int>{10, 14}));
  auto moved_in = data::datasets::make_shared_dataset<Api2Uncopyable>(Api2Uncopyable("y"));
  EXPECT_EQ(moved_in.size().value(), 5u);

  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(shared,
                                                                          data::DataLoaderOptions(2).workers(3));
  std::vector<std::vector<int>> batches;
  for (auto& batch : *loader) batches.push_back(batch);
  EXPECT_EQ(batches, (std::vector<std::vector<int>>{{10, 11}, {12, 13}, {14}}));
}

TEST(DataApi2, FullDataLoaderOptions) {
  const data::FullDataLoaderOptions defaults{data::DataLoaderOptions()};
  EXPECT_EQ(defaults.batch_size, 1u);
  EXPECT_FALSE(defaults.drop_last);
  EXPECT_EQ(defaults.workers, 0u);
  EXPECT_EQ(defaults.max_jobs, 0u);
  EXPECT_FALSE(defaults.timeout.has_value());
  EXPECT_TRUE(defaults.enforce_ordering);

  const data::FullDataLoaderOptions ten_workers{data::DataLoaderOptions(32).workers(10)};
  EXPECT_EQ(ten_workers.batch_size, 32u);
  EXPECT_EQ(ten_workers.max_jobs, 20u);  // 2 * workers
  const data::FullDataLoaderOptions given{data::DataLoaderOptions(4).workers(10).max_jobs(3).drop_last(true).timeout(
      std::chrono::milliseconds(7))};
  EXPECT_EQ(given.max_jobs, 3u);
  EXPECT_TRUE(given.drop_last);
  EXPECT_EQ(given.timeout.value().count(), 7);
  EXPECT_TRUE(throws_error([] { data::FullDataLoaderOptions{data::DataLoaderOptions(0)}; },
                           {"FullDataLoaderOptions", "batch size >= 1"}));
}

}  // namespace
}  // namespace graft::test
