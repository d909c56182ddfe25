// data::Example<Data, Target>: one example {data, target}, or a batch of them, as LibTorch spells it.
// Example<> is {Tensor data, Tensor target}; Example<T, example::NoTarget> (TensorExample) has data
// only and converts to it.
#pragma once

#include <utility>

#include "graft/core/tensor.h"

namespace graft::data {

template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  Example(Data data_, Target target_) : data(std::move(data_)), target(std::move(target_)) {}

  Data data;
  Target target;
};

namespace example {
using NoTarget = void;
}  // namespace example

template <typename Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;

  Example() = default;
  Example(Data data_) : data(std::move(data_)) {}  // NOLINT: implicit, as LibTorch's

  operator Data&() { return data; }              // NOLINT
  operator const Data&() const { return data; }  // NOLINT

  Data data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

}  // namespace graft::data
