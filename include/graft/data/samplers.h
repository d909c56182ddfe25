// LibTorch's samplers (torch::data::samplers): a sampler yields the indices of the next batch, and
// the data loader resets it at the start of every epoch.
//   - SequentialSampler(n): 0, 1, ..., n - 1 in order, every epoch.
//   - RandomSampler(n): a random permutation of 0..n-1, drawn afresh by every reset() from graft's
//     default generator (graft::manual_seed makes the epochs' orders repeatable).
// Differences from LibTorch: no save/load (graft has no serialize::OutputArchive yet), and
// RandomSampler takes no index dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

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
};

class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
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
  size_t index() const noexcept { return index_; }

 private:
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

}  // namespace graft::data::samplers
