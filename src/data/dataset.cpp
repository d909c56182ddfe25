// Dataset, TensorDataset, Normalize and TransformDataset.
#include "graft/data/dataset.h"

#include <cmath>
#include <cstring>

#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"

namespace graft::data {

namespace detail {

void check_index(int64_t index, int64_t size, const char* op) {
  GRAFT_CHECK(index >= 0 && index < size, op, "an index in [0, " + std::to_string(size) + ")",
              std::to_string(index), "indices count from 0 up to size() - 1");
}

Tensor gather_rows(const Tensor& t, std::span<const int64_t> indices, const char* op) {
  const int64_t n = t.size(0);
  for (int64_t i : indices) check_index(i, n, op);
  Shape shape(t.sizes());
  shape[0] = static_cast<int64_t>(indices.size());
  if (!t.is_contiguous()) {
    Tensor idx = make_empty({static_cast<int64_t>(indices.size())}, kInt64);
    if (!indices.empty()) std::memcpy(idx.data_ptr(), indices.data(), indices.size() * sizeof(int64_t));
    return index_select(t, 0, idx).contiguous();
  }
  Tensor out = make_empty(shape, t.dtype());
  const size_t row = n ? t.nbytes() / static_cast<size_t>(n) : 0;
  const char* src = static_cast<const char*>(t.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (size_t k = 0; k < indices.size(); ++k) {
    if (row) std::memcpy(dst + k * row, src + static_cast<size_t>(indices[k]) * row, row);
  }
  return out;
}

}  // namespace detail

Example<> Dataset::get_batch(std::span<const int64_t> indices) const {
  GRAFT_CHECK(!indices.empty(), "Dataset::get_batch", "at least one index", "none", "pass at least one index");
  TensorList data, targets;
  data.reserve(indices.size());
  targets.reserve(indices.size());
  for (int64_t i : indices) {
    Example<> e = get(i);
    data.push_back(std::move(e.data));
    targets.push_back(std::move(e.target));
  }
  Example<> out;
  out.data = stack(data);
  if (!targets.empty() && targets.front().defined()) out.target = stack(targets);
  return out;
}

TensorDataset::TensorDataset(const Tensor& data, const Tensor& targets) {
  GRAFT_CHECK(data.defined() && targets.defined(), "TensorDataset", "defined data and targets", "an undefined tensor",
              "pass defined tensors for data and targets");
  GRAFT_CHECK(data.dim() >= 1 && targets.dim() >= 1, "TensorDataset",
              "data and targets with a first (example) dim",
              "shapes " + shape_str(data.sizes()) + " and " + shape_str(targets.sizes()),
              "unsqueeze a 0-dim tensor first");
  GRAFT_CHECK(data.size(0) == targets.size(0), "TensorDataset", "as many targets as examples",
              std::to_string(data.size(0)) + " examples (shape " + shape_str(data.sizes()) + ") and " +
                  std::to_string(targets.size(0)) + " targets (shape " + shape_str(targets.sizes()) + ")",
              "dim 0 counts the examples in both tensors");
  NoGradGuard no_grad;
  data_ = data.detach().contiguous();
  targets_ = targets.detach().contiguous();
  size_ = data.size(0);
}

Example<> TensorDataset::get(int64_t index) const {
  detail::check_index(index, size_, "TensorDataset::get");
  return {data_.select(0, index), targets_.select(0, index)};
}

Example<> TensorDataset::get_batch(std::span<const int64_t> indices) const {
  GRAFT_CHECK(!indices.empty(), "TensorDataset::get_batch", "at least one index", "none", "pass at least one index");
  return {detail::gather_rows(data_, indices, "TensorDataset::get_batch"),
          detail::gather_rows(targets_, indices, "TensorDataset::get_batch")};
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> stddev)
    : mean_(std::move(mean)), std_(std::move(stddev)) {
  GRAFT_CHECK(!mean_.empty() && mean_.size() == std_.size(), "Normalize", "as many means as standard deviations (>= 1)",
              std::to_string(mean_.size()) + " means and " + std::to_string(std_.size()) + " standard deviations",
              "give one value per channel, or one for all");
  for (size_t c = 0; c < std_.size(); ++c) {
    GRAFT_CHECK(std_[c] > 0 && std::isfinite(std_[c]) && std::isfinite(mean_[c]), "Normalize",
                "finite means and standard deviations > 0",
                "mean " + std::to_string(mean_[c]) + ", std " + std::to_string(std_[c]) + " for channel " +
                    std::to_string(c),
                "a zero std would divide by zero");
  }
}

Tensor Normalize::operator()(const Tensor& x) const {
  GRAFT_CHECK(x.defined() && x.is_floating_point(), "Normalize", "floating-point data",
              x.defined() ? std::string(dtype_name(x.dtype())) : std::string("an undefined tensor"),
              "convert first, e.g. x.to(graft::kFloat32)");
  const int64_t channels = x.dim() >= 3 ? x.size(-3) : 1;
  const auto nc = static_cast<int64_t>(mean_.size());
  GRAFT_CHECK(nc == 1 || nc == channels, "Normalize",
              std::to_string(nc) + " channels (dim -3)",
              std::to_string(channels) + " channels in shape " + shape_str(x.sizes()),
              "give one mean/std per channel, or one for all");
  if (nc == 1) return (x - mean_[0]) / std_[0];
  Tensor m = make_empty({nc, 1, 1}, x.dtype()), s = make_empty({nc, 1, 1}, x.dtype());
  for (int64_t c = 0; c < nc; ++c) {
    if (x.dtype() == kFloat64) {
      m.data_ptr<double>()[c] = mean_[static_cast<size_t>(c)];
      s.data_ptr<double>()[c] = std_[static_cast<size_t>(c)];
    } else {
      GRAFT_CHECK(x.dtype() == kFloat32, "Normalize", "float32 or float64 data", dtype_name(x.dtype()),
                  "convert it: x.to(graft::kFloat32)");
      m.data_ptr<float>()[c] = static_cast<float>(mean_[static_cast<size_t>(c)]);
      s.data_ptr<float>()[c] = static_cast<float>(std_[static_cast<size_t>(c)]);
    }
  }
  return (x - m) / s;
}

TransformDataset::TransformDataset(std::shared_ptr<const Dataset> base, Transform data_transform, bool batchable,
                                   Transform target_transform)
    : base_(std::move(base)), data_transform_(std::move(data_transform)),
      target_transform_(std::move(target_transform)), batchable_(batchable) {
  GRAFT_CHECK(base_ != nullptr, "TransformDataset", "a dataset", "a null pointer",
              "pass a dataset, e.g. std::make_shared<TensorDataset>(x, y)");
}

Example<> TransformDataset::get(int64_t index) const {
  Example<> e = base_->get(index);
  if (data_transform_) e.data = data_transform_(e.data);
  if (target_transform_) e.target = target_transform_(e.target);
  return e;
}

Example<> TransformDataset::get_batch(std::span<const int64_t> indices) const {
  if (!batchable_ || target_transform_) return Dataset::get_batch(indices);
  Example<> e = base_->get_batch(indices);
  if (data_transform_) e.data = data_transform_(e.data);
  return e;
}

}  // namespace graft::data
