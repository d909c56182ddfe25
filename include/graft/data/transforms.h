// LibTorch's data transforms (torch::data::transforms), applied to datasets with .map(...)
// (Note [Batch datasets and their transforms] in graft/data/datasets.h):
//   - Transform<In, Out>: a per-example transform; apply(example), apply_batch maps it over a batch.
//   - BatchTransform<InBatch, OutBatch>: a transform of a whole batch (a collation is one).
//   - TensorTransform<Target>: a Transform of Example<Tensor, Target> that changes the data only;
//     TensorLambda and Normalize are ones.
//   - Lambda / BatchLambda / Collate: transforms from a function.
//   - Stack<Example<>>: collates a std::vector<Example<>> into one Example<> by stacking data and
//     targets along a new dim 0; Stack<TensorExample> stacks data only.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "graft/core/factory.h"
#include "graft/core/tensor.h"
#include "graft/data/dataset.h"
#include "graft/data/example.h"
#include "graft/ops/ops.h"

namespace graft::data::transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual OutputType apply(InputType input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output_batch;
    output_batch.reserve(input_batch.size());
    for (auto&& input : input_batch) output_batch.push_back(apply(std::move(input)));
    return output_batch;
  }
};

template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  Output apply_batch(Input input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  Output apply(Input input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// A collation turns a batch (by default a std::vector<T>) into one T.
template <typename T, typename BatchType = std::vector<T>>
using Collation = BatchTransform<BatchType, T>;
template <typename T, typename BatchType = std::vector<T>>
using Collate = BatchLambda<BatchType, T>;

template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  virtual Tensor operator()(Tensor input) = 0;
  E apply(E input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// (data - mean[c]) / stddev[c] per channel c (dim -3 of an image (C, H, W)); one value applies to
// every channel. The arithmetic and its checks are graft::data::Normalize's (graft/data/dataset.h).
template <typename Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(double mean, double stddev) : Normalize(std::vector<double>{mean}, std::vector<double>{stddev}) {}
  Normalize(std::vector<double> mean_, std::vector<double> stddev_)
      : normalize_(mean_, stddev_),
        mean(make_channel_tensor(mean_)),
        stddev(make_channel_tensor(stddev_)) {}

  Tensor operator()(Tensor input) override { return normalize_(input); }

 private:
  data::Normalize normalize_;
  // (C, 1, 1) float32, as LibTorch keeps them.
  static Tensor make_channel_tensor(const std::vector<double>& v) {
    return graft::tensor(v, kFloat32).view({static_cast<int64_t>(v.size()), 1, 1});
  }

 public:
  Tensor mean, stddev;
};

template <typename T = Example<>>
struct Stack;

template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override {
    TensorList data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& example : examples) {
      data.push_back(std::move(example.data));
      targets.push_back(std::move(example.target));
    }
    return {graft::stack(data), graft::stack(targets)};
  }
};

template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    TensorList data;
    data.reserve(examples.size());
    for (auto& example : examples) data.push_back(std::move(example.data));
    return graft::stack(data);
  }
};

}  // namespace graft::data::transforms
