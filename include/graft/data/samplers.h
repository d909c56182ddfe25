// LibTorch's samplers (torch::data::samplers): a sampler yields the indices of the next batch, and
// the data loader resets it at the start of every epoch.
//   - SequentialSampler(n): 0, 1, ..., n - 1 in order, every epoch.
//   - RandomSampler(n): a random permutation of 0..n-1, drawn afresh by every reset() from graft's
//     default generator (graft::manual_seed makes the epochs' orders repeatable).
//   - StreamSampler(epoch_size): no indices, only how many examples a StreamDataset should give
//     (a BatchSize): batch_size each time, until epoch_size examples have been asked for.
//   - DistributedSampler and LibTorch's two distributed ones (below).
//
// Note [Saving samplers]
// save(archive) / load(archive) store where a sampler is in its epoch, so that a resumed run goes
// on from there; graft::save(sampler, stream) / graft::load(sampler, stream) call them (operator<<
// and operator>> below). The keys are LibTorch's, each an int64 tensor:
//   SequentialSampler   "index"
//   RandomSampler       "index", "indices" (the epoch's whole permutation)
//   StreamSampler       "examples_retrieved_so_far"
//   DistributedSampler  "sample_index_", "epoch_" (the permutation is remade from seed + epoch)
// load checks the values against the sampler (an index past its epoch is an error) before changing
// anything. A user's Sampler must define both (they are pure virtual, as in LibTorch).
// Difference from LibTorch: RandomSampler takes no index dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace graft::serialize {
class OutputArchive;
class InputArchive;
}  // namespace graft::serialize

namespace graft::data::samplers {

template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  // Starts over (a new epoch), over new_size examples when given.
  virtual void reset(std::optional<size_t> new_size) = 0;
  // Up to batch_size indices, or nullopt when the epoch is done.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
  // Note [Saving samplers].
  virtual void save(serialize::OutputArchive& archive) const = 0;
  virtual void load(serialize::InputArchive& archive) = 0;
};

// graft::save(sampler, path_or_stream) / graft::load(sampler, ...) (Note [Saving samplers]).
template <typename BatchRequest>
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Sampler<BatchRequest>& sampler) {
  sampler.save(archive);
  return archive;
}
template <typename BatchRequest>
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Sampler<BatchRequest>& sampler) {
  sampler.load(archive);
  return archive;
}

// A batch request that is not a list of indices (LibTorch's CustomBatchRequest): a sampler of
// Sampler<MyRequest> gives MyRequests, a BatchDataset<D, Batch, MyRequest> takes them. size() is
// the number of examples it asks for (the data loader's drop_last compares it with batch_size).
struct CustomBatchRequest {
  CustomBatchRequest() = default;
  CustomBatchRequest(const CustomBatchRequest&) = default;
  CustomBatchRequest(CustomBatchRequest&&) noexcept = default;
  CustomBatchRequest& operator=(const CustomBatchRequest&) = default;
  CustomBatchRequest& operator=(CustomBatchRequest&&) noexcept = default;
  virtual ~CustomBatchRequest() = default;
  virtual size_t size() const = 0;
};

// How many examples a StreamDataset should give next; converts to size_t.
struct BatchSize : public CustomBatchRequest {
  explicit BatchSize(size_t size) : size_(size) {}
  size_t size() const noexcept override { return size_; }
  operator size_t() const noexcept { return size_; }  // NOLINT: implicit, as LibTorch's
  size_t size_;
};

class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;
  size_t index() const noexcept { return index_; }  // of the next index to yield

 private:
  size_t size_;
  size_t index_ = 0;
};

class RandomSampler : public Sampler<> {
 public:
  explicit RandomSampler(int64_t size);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;
  size_t index() const noexcept { return index_; }

 private:
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

// For a StreamDataset (graft/data/datasets.h): next(batch_size) is BatchSize(min(batch_size,
// left)) until epoch_size examples have been asked for in this epoch, then nullopt.
class StreamSampler : public Sampler<BatchSize> {
 public:
  explicit StreamSampler(size_t epoch_size) : epoch_size_(epoch_size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<BatchSize> next(size_t batch_size) override;
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;
  size_t epoch_size() const noexcept { return epoch_size_; }
  size_t examples_retrieved_so_far() const noexcept { return examples_retrieved_so_far_; }

 private:
  size_t epoch_size_;
  size_t examples_retrieved_so_far_ = 0;
};

// PyTorch's DistributedSampler: each of num_replicas ranks takes every num_replicas-th index
// (from `rank`) of one order that all ranks share: 0 .. size-1, or, with shuffle, its permutation
// seeded by seed + epoch (set_epoch before each epoch; every rank must use the same seed). Without
// drop_last the order is padded with its own first indices to a multiple of num_replicas, so every
// rank gets ceil(size / num_replicas) indices; with it, the tail is dropped (floor). The rank and
// the world size come from the caller: graft::distributed::get_rank() / get_world_size().
class DistributedSampler : public Sampler<> {
 public:
  DistributedSampler(size_t size, size_t num_replicas, size_t rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;
  void set_epoch(size_t epoch);
  size_t epoch() const noexcept { return epoch_; }
  size_t index() const noexcept { return index_; }  // into indices(), of the next index to yield
  size_t num_samples() const noexcept { return indices_.size(); }  // this rank's, per epoch
  const std::vector<size_t>& indices() const noexcept { return indices_; }

 private:
  size_t size_, num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  size_t epoch_ = 0;
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

// LibTorch's names for the two kinds (torch::data::samplers::DistributedRandomSampler and
// DistributedSequentialSampler; allow_duplicates = !drop_last). LibTorch reseeds by epoch too.
class DistributedRandomSampler : public DistributedSampler {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : DistributedSampler(size, num_replicas, rank, true, 0, !allow_duplicates) {}
};
class DistributedSequentialSampler : public DistributedSampler {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : DistributedSampler(size, num_replicas, rank, false, 0, !allow_duplicates) {}
};

// The shard of `order` that `rank` of num_replicas takes (DistributedSampler's rule, above).
template <class T>
std::vector<T> distributed_shard(const std::vector<T>& order, size_t num_replicas, size_t rank, bool drop_last) {
  const size_t n = order.size();
  const size_t per_rank = drop_last ? n / num_replicas : (n + num_replicas - 1) / num_replicas;
  const size_t total = per_rank * num_replicas;
  std::vector<T> out;
  out.reserve(per_rank);
  for (size_t i = rank; i < total; i += num_replicas) out.push_back(order[n ? i % n : 0]);
  return out;
}

}  // namespace graft::data::samplers
