// datasets::MNIST: LibTorch's spelling of graft's MNIST reader (graft/data/mnist.h), whose IDX parsing
// and checks it reuses; and datasets::TensorDataset.
#include "graft/data/datasets.h"

#include "graft/data/dataset.h"
#include "graft/data/mnist.h"
#include "graft/ops/ops.h"

namespace graft::data::datasets {

MNIST::MNIST(const std::string& root, Mode mode) : is_train_(mode == Mode::kTrain) {
  const data::MNIST files(root, is_train_ ? data::MNIST::Mode::kTrain : data::MNIST::Mode::kTest);
  images_ = files.images();
  targets_ = files.targets();
}

Example<> MNIST::get(size_t index) {
  const auto n = static_cast<size_t>(images_.size(0));
  GRAFT_CHECK(index < n, "MNIST::get", "an index in [0, " + std::to_string(n) + ")", std::to_string(index),
              "indices count from 0 up to size() - 1");
  const auto i = static_cast<int64_t>(index);
  return {images_.select(0, i), targets_.select(0, i)};
}

std::optional<size_t> MNIST::size() const { return static_cast<size_t>(images_.size(0)); }

TensorDataset::TensorDataset(const std::vector<Tensor>& tensors) {
  GRAFT_CHECK(!tensors.empty(), "TensorDataset", "at least one tensor", "an empty list",
              "pass the examples' tensors (one shape), or one tensor (N, ...)");
  tensor = graft::stack(tensors);
}

TensorDataset::TensorDataset(Tensor tensor_) : tensor(std::move(tensor_)) {
  GRAFT_CHECK(tensor.defined() && tensor.dim() >= 1, "TensorDataset", "a tensor (N, ...) of at least 1 dim",
              tensor.defined() ? "a 0-dim tensor" : "an undefined tensor", "examples are the rows of dim 0");
}

TensorExample TensorDataset::get(size_t index) {
  const auto n = static_cast<size_t>(tensor.size(0));
  GRAFT_CHECK(index < n, "TensorDataset::get", "an index in [0, " + std::to_string(n) + ")", std::to_string(index),
              "indices count from 0 up to size() - 1");
  return tensor.select(0, static_cast<int64_t>(index));
}

std::optional<size_t> TensorDataset::size() const { return static_cast<size_t>(tensor.size(0)); }

}  // namespace graft::data::datasets
