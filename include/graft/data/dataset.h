// Datasets: indexable collections of examples {data, target}, and transforms on them.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/data/example.h"

namespace graft::data {

// An Example<> (graft/data/example.h) is one example, or a batch of them (data (B, ...), target (B, ...)).

// A dataset of size() examples. get() and get_batch() are const and may be called from DataLoader
// worker threads concurrently: implementations must not change shared state in them.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Example<> get(int64_t index) const = 0;
  // The examples at `indices` stacked along a new first dim. The default calls get() for each and
  // stacks; datasets that hold whole tensors override it with one gather.
  virtual Example<> get_batch(std::span<const int64_t> indices) const;
};

// Examples are rows of two tensors: get(i) = {data[i], targets[i]} (views, no copy).
class TensorDataset : public Dataset {
 public:
  // data (N, ...) and targets (N, ...) with the same N; both are detached (and made contiguous).
  TensorDataset(const Tensor& data, const Tensor& targets);
  int64_t size() const override { return size_; }
  Example<> get(int64_t index) const override;
  Example<> get_batch(std::span<const int64_t> indices) const override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
  int64_t size_ = 0;
};

using Transform = std::function<Tensor(const Tensor&)>;

// Normalize(mean, std): (x - mean[c]) / std[c] for each channel c. The channel dim is dim -3, so it
// applies to an image (C, H, W) and to a batch (B, C, H, W) alike; tensors of fewer than 3 dims are
// one channel. A single mean/std applies to every channel. Needs floating-point data.
class Normalize {
 public:
  Normalize(double mean, double stddev) : Normalize(std::vector<double>{mean}, std::vector<double>{stddev}) {}
  Normalize(std::vector<double> mean, std::vector<double> stddev);
  Tensor operator()(const Tensor& x) const;
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& stddev() const { return std_; }

 private:
  std::vector<double> mean_, std_;
};

// A dataset whose examples' data (and optionally targets) pass through transforms.
class TransformDataset : public Dataset {
 public:
  // `batchable`: the data transform gives the same result applied to a batch (B, ...) as to each
  // example (Normalize does), so get_batch applies it once to the whole batch.
  TransformDataset(std::shared_ptr<const Dataset> base, Transform data_transform, bool batchable = false,
                   Transform target_transform = {});
  int64_t size() const override { return base_->size(); }
  Example<> get(int64_t index) const override;
  Example<> get_batch(std::span<const int64_t> indices) const override;
  const Dataset& base() const { return *base_; }

 private:
  std::shared_ptr<const Dataset> base_;
  Transform data_transform_, target_transform_;
  bool batchable_;
};

// map(dataset, Normalize(0.5, 0.25)): the dataset with a transform on its data.
template <std::derived_from<Dataset> D>
std::shared_ptr<TransformDataset> map(D dataset, Transform data_transform, bool batchable = true) {
  return std::make_shared<TransformDataset>(std::make_shared<D>(std::move(dataset)), std::move(data_transform),
                                            batchable);
}
inline std::shared_ptr<TransformDataset> map(std::shared_ptr<const Dataset> dataset, Transform data_transform,
                                             bool batchable = true) {
  return std::make_shared<TransformDataset>(std::move(dataset), std::move(data_transform), batchable);
}

namespace detail {
// Throws graft::Error naming `op` unless 0 <= index < size.
void check_index(int64_t index, int64_t size, const char* op);
// Rows `indices` of `t` (dim 0) as a new contiguous tensor.
Tensor gather_rows(const Tensor& t, std::span<const int64_t> indices, const char* op);
}  // namespace detail

}  // namespace graft::data
