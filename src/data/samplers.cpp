// SequentialSampler, RandomSampler, StreamSampler and DistributedSampler, and their save/load
// (Note [Saving samplers] in graft/data/samplers.h).
#include "graft/data/samplers.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <string>

#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/generator.h"
#include "graft/io/serialize.h"
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

// A count is stored as a 0-dim int64 tensor, as LibTorch stores it.
void write_count(serialize::OutputArchive& archive, const char* key, size_t value) {
  archive.write(key, graft::tensor(static_cast<int64_t>(value)), /*is_buffer=*/true);
}

// The count under `key`: one integer in [0, limit].
size_t read_count(serialize::InputArchive& archive, const char* key, size_t limit, const char* op) {
  Tensor t;
  archive.read(key, t, /*is_buffer=*/true);
  GRAFT_CHECK(t.numel() == 1 && !is_floating_point(t.dtype()) && t.dtype() != kBool, op,
              std::string("'") + key + "' as one integer",
              std::to_string(t.numel()) + " values of " + dtype_name(t.dtype()),
              "load what the same kind of sampler saved");
  const int64_t v = t.to(kInt64).item<int64_t>();
  GRAFT_CHECK(v >= 0 && static_cast<uint64_t>(v) <= limit, op,
              std::string("'") + key + "' in [0, " + std::to_string(limit) + "]", std::to_string(v),
              "the sampler that loads must have the size of the one that saved");
  return static_cast<size_t>(v);
}

}  // namespace

void SequentialSampler::save(serialize::OutputArchive& archive) const { write_count(archive, "index", index_); }

void SequentialSampler::load(serialize::InputArchive& archive) {
  index_ = read_count(archive, "index", size_, "SequentialSampler::load");
}

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

void RandomSampler::save(serialize::OutputArchive& archive) const {
  write_count(archive, "index", index_);
  std::vector<int64_t> indices(indices_.begin(), indices_.end());
  archive.write("indices", graft::tensor(indices), /*is_buffer=*/true);
}

// Loads a permutation of any size (LibTorch's load takes the saved one whole, size included);
// every index must lie in it, and the position within it.
void RandomSampler::load(serialize::InputArchive& archive) {
  const char* op = "RandomSampler::load";
  Tensor t;
  archive.read("indices", t, /*is_buffer=*/true);
  GRAFT_CHECK(t.dim() == 1 && !is_floating_point(t.dtype()) && t.dtype() != kBool, op,
              "'indices' as a 1-dim integer tensor",
              dtype_name(t.dtype()) + std::string(" of ") + std::to_string(t.dim()) + " dims",
              "load what a RandomSampler saved");
  const Tensor as_int64 = t.to(kInt64).contiguous();
  const int64_t* p = as_int64.data_ptr<int64_t>();
  const auto n = static_cast<size_t>(as_int64.numel());
  std::vector<size_t> indices(n);
  for (size_t i = 0; i < n; ++i) {
    GRAFT_CHECK(p[i] >= 0 && static_cast<uint64_t>(p[i]) < n, op, "indices in [0, " + std::to_string(n) + ")",
                std::to_string(p[i]) + " at position " + std::to_string(i), "load what a RandomSampler saved");
    indices[i] = static_cast<size_t>(p[i]);
  }
  const size_t index = read_count(archive, "index", n, op);
  indices_ = std::move(indices);
  index_ = index;
}

void StreamSampler::reset(std::optional<size_t> new_size) {
  if (new_size) epoch_size_ = *new_size;
  examples_retrieved_so_far_ = 0;
}

std::optional<BatchSize> StreamSampler::next(size_t batch_size) {
  GRAFT_CHECK(batch_size > 0, "StreamSampler::next", "a batch size >= 1", "0",
              "DataLoaderOptions().batch_size(n) with n >= 1");
  if (examples_retrieved_so_far_ >= epoch_size_) return std::nullopt;
  const size_t n = std::min(batch_size, epoch_size_ - examples_retrieved_so_far_);
  examples_retrieved_so_far_ += n;
  return BatchSize(n);
}

void StreamSampler::save(serialize::OutputArchive& archive) const {
  write_count(archive, "examples_retrieved_so_far", examples_retrieved_so_far_);
}

void StreamSampler::load(serialize::InputArchive& archive) {
  examples_retrieved_so_far_ = read_count(archive, "examples_retrieved_so_far", epoch_size_, "StreamSampler::load");
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

void DistributedSampler::save(serialize::OutputArchive& archive) const {
  write_count(archive, "sample_index_", index_);
  write_count(archive, "epoch_", epoch_);
}

// The epoch's order is remade from (seed, epoch), then the position in it restored.
void DistributedSampler::load(serialize::InputArchive& archive) {
  const char* op = "DistributedSampler::load";
  const size_t epoch = read_count(archive, "epoch_", SIZE_MAX, op);
  const size_t saved_epoch = epoch_;
  epoch_ = epoch;
  reset();
  try {
    index_ = read_count(archive, "sample_index_", indices_.size(), op);
  } catch (...) {
    epoch_ = saved_epoch;  // leave the sampler as it was, at the start of its epoch
    reset();
    throw;
  }
}

std::optional<std::vector<size_t>> DistributedSampler::next(size_t batch_size) {
  return take(&indices_, indices_.size(), index_, batch_size, "DistributedSampler::next");
}

}  // namespace graft::data::samplers
