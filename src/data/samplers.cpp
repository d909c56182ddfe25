// SequentialSampler and RandomSampler.
#include "graft/data/samplers.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <string>

#include "graft/core/error.h"
#include "graft/core/generator.h"
#include "shuffle.h"

namespace graft::data::samplers {
namespace {

// The next min(batch_size, left) entries of order from index, or nullopt at the end.
std::optional<std::vector<size_t>> take(const std::vector<size_t>* order, size_t size, size_t& index,
                                        size_t batch_size, const char* op) {
  GRAFT_CHECK(batch_size > 0, op, "a batch size >= 1", "0", "DataLoaderOptions().batch_size(n) with n >= 1");
  if (index >= size) return std::nullopt;
  const size_t n = std::min(batch_size, size - index);
  std::vector<size_t> out(n);
  if (order) {
    std::copy_n(order->begin() + static_cast<std::ptrdiff_t>(index), n, out.begin());
  } else {
    std::iota(out.begin(), out.end(), index);
  }
  index += n;
  return out;
}

}  // namespace

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  return take(nullptr, size_, index_, batch_size, "SequentialSampler::next");
}

RandomSampler::RandomSampler(int64_t size) {
  GRAFT_CHECK(size >= 0, "RandomSampler", "a size >= 0", std::to_string(size), "the size is the dataset's");
  reset(static_cast<size_t>(size));
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  const size_t n = new_size.value_or(indices_.size());
  indices_.resize(n);
  std::iota(indices_.begin(), indices_.end(), size_t{0});
  Generator& g = default_generator();
  {
    std::lock_guard<std::mutex> lock(g.mutex());
    detail::shuffle(indices_, g);
  }
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  return take(&indices_, indices_.size(), index_, batch_size, "RandomSampler::next");
}

DistributedSampler::DistributedSampler(size_t size, size_t num_replicas, size_t rank, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : size_(size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed), drop_last_(drop_last) {
  GRAFT_CHECK(num_replicas >= 1, "DistributedSampler", "num_replicas >= 1", std::to_string(num_replicas),
              "pass graft::distributed::get_world_size()");
  GRAFT_CHECK(rank < num_replicas, "DistributedSampler", "a rank in [0, " + std::to_string(num_replicas) + ")",
              std::to_string(rank), "pass graft::distributed::get_rank()");
  reset();
}

void DistributedSampler::set_epoch(size_t epoch) {
  epoch_ = epoch;
  reset();
}

void DistributedSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  std::vector<size_t> order(size_);
  std::iota(order.begin(), order.end(), size_t{0});
  if (shuffle_ && size_ > 1) {
    // The same permutation on every rank: it depends on (seed, epoch) only.
    Generator g(seed_ + epoch_);
    detail::shuffle(order, g);
  }
  indices_ = distributed_shard(order, num_replicas_, rank_, drop_last_);
  index_ = 0;
}

std::optional<std::vector<size_t>> DistributedSampler::next(size_t batch_size) {
  return take(&indices_, indices_.size(), index_, batch_size, "DistributedSampler::next");
}

}  // namespace graft::data::samplers
