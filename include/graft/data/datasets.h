// LibTorch's dataset API (torch::data::datasets), beside graft's own Dataset (graft/data/dataset.h):
//
//   struct MyDataset : graft::data::datasets::Dataset<MyDataset> {
//     graft::data::Example<> get(size_t index) override;
//     std::optional<size_t> size() const override;
//   };
//   auto ds = graft::data::datasets::MNIST("./data").map(graft::data::transforms::Normalize<>(0.1307, 0.3081))
//                 .map(graft::data::transforms::Stack<>());
//
// Note [Batch datasets and their transforms]
// A BatchDataset<Self, Batch, BatchRequest> maps a batch request (the indices a sampler gives) to a
// Batch. Dataset<Self, Example> is the common case: get(index) gives one example, and get_batch calls
// get once per index, giving std::vector<Example>. map(transform) wraps a dataset in a MapDataset whose
// get_batch is transform.apply_batch(dataset.get_batch(request)): a per-example transform
// (Normalize) keeps the batch a vector, a collation (Stack) turns it into one Example<> of stacked
// tensors. Datasets are values: map() copies or moves the dataset into the MapDataset, and the data
// loader holds its own copy.
//
// Besides: StreamDataset (batches by count, for a StreamSampler), TensorDataset (the rows of one
// tensor) and SharedBatchDataset (make_shared_dataset: one dataset shared by copies, for datasets
// that cannot or should not be copied).
//
// Differences from LibTorch: size() gives std::optional<size_t> (LibTorch's c10::optional, the same
// type in graft), and there are no stateful (chunk) datasets.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/tensor.h"
#include "graft/core/util.h"
#include "graft/data/example.h"

namespace graft::data::datasets {

template <typename Source, typename AppliedTransform>
class MapDataset;

template <typename D, typename T>
MapDataset<D, T> map(D dataset, T transform);

// The batch request is, by default, the indices of the batch's examples as an ArrayRef<size_t>
// (graft/core/util.h), as LibTorch's: get_batch({0, 1, 2}) and get_batch(sampler_indices) both work.
template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  // graft has no stateful datasets (LibTorch's chunk datasets, whose batches are optional).
  constexpr static bool is_stateful = false;

  virtual ~BatchDataset() = default;
  virtual Batch get_batch(BatchRequest request) = 0;
  // The number of examples, if known.
  virtual std::optional<size_t> size() const = 0;

  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual ExampleType get(size_t index) = 0;

  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (const size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

template <typename Source, typename AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<Source, AppliedTransform>, typename AppliedTransform::OutputBatchType,
                                       typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType = typename AppliedTransform::OutputBatchType;

  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType request) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(request)));
  }
  std::optional<size_t> size() const override { return dataset_.size(); }

  const Source& dataset() const noexcept { return dataset_; }
  const AppliedTransform& transform() const noexcept { return transform_; }

 private:
  Source dataset_;
  AppliedTransform transform_;
};

template <typename D, typename T>
MapDataset<D, T> map(D dataset, T transform) {
  static_assert(std::is_same_v<typename D::BatchType, typename T::InputBatchType>,
                "map(dataset, transform): the dataset's BatchType is not the transform's InputBatchType "
                "(a per-example transform such as Normalize must come before a collation such as Stack)");
  return {std::move(dataset), std::move(transform)};
}

// A dataset whose batch request is a number of examples (a size_t; a StreamSampler's BatchSize
// converts to it): get_batch(n) gives the next n examples of a stream.
template <typename Self, typename Batch = std::vector<Example<>>>
using StreamDataset = BatchDataset<Self, Batch, size_t>;

// The rows of one tensor: get(i) is tensor[i] (a view) as a TensorExample (data only). Made from a
// tensor (N, ...) or from a list of N tensors of one shape, stacked along a new dim 0.
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  explicit TensorDataset(const std::vector<Tensor>& tensors);
  explicit TensorDataset(Tensor tensor_);

  TensorExample get(size_t index) override;
  std::optional<size_t> size() const override;

  Tensor tensor;
};

// A dataset held by a shared_ptr: copies of a SharedBatchDataset (the data loader's, map()'s) all
// use the one dataset, which is never copied. make_shared_dataset<D>(args...) makes one.
template <typename UnderlyingDataset>
class SharedBatchDataset
    : public BatchDataset<SharedBatchDataset<UnderlyingDataset>, typename UnderlyingDataset::BatchType,
                          typename UnderlyingDataset::BatchRequestType> {
 public:
  using BatchType = typename UnderlyingDataset::BatchType;
  using BatchRequestType = typename UnderlyingDataset::BatchRequestType;

  /* implicit */ SharedBatchDataset(std::shared_ptr<UnderlyingDataset> shared_dataset)  // NOLINT
      : dataset_(std::move(shared_dataset)) {
    GRAFT_CHECK(dataset_ != nullptr, "SharedBatchDataset", "a dataset", "a null shared_ptr",
                "make one with make_shared_dataset<D>(args...)");
  }

  BatchType get_batch(BatchRequestType request) override { return dataset_->get_batch(std::move(request)); }
  std::optional<size_t> size() const override { return dataset_->size(); }

  UnderlyingDataset& operator*() { return *dataset_; }
  const UnderlyingDataset& operator*() const { return *dataset_; }
  UnderlyingDataset* operator->() { return dataset_.get(); }
  const UnderlyingDataset* operator->() const { return dataset_.get(); }

 private:
  std::shared_ptr<UnderlyingDataset> dataset_;
};

// A SharedBatchDataset over a new UnderlyingDataset(args...) (a moved-in dataset is moved, not
// copied).
template <typename UnderlyingDataset, typename... Args>
SharedBatchDataset<UnderlyingDataset> make_shared_dataset(Args&&... args) {
  return std::make_shared<UnderlyingDataset>(std::forward<Args>(args)...);
}

// MNIST or Fashion-MNIST from the four raw IDX files in `root` (train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte; each may also be gzipped,
// with a .gz suffix). images(): float32 (N, 1, 28, 28) scaled to [0, 1]; targets(): int64 (N).
// Errors (a missing file, a bad magic number, mismatched counts) are graft::Error naming the file.
class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };

  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

  // {images()[index], targets()[index]}: a (1, 28, 28) image and a 0-dim label.
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  bool is_train() const noexcept { return is_train_; }
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  bool is_train_ = true;
};

}  // namespace graft::data::datasets
