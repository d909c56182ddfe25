// ByteImageDataset (Note [Byte images] in graft/data/byte_images.h).
#include "graft/data/byte_images.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "graft/core/storage.h"

namespace graft::data {

namespace {

constexpr const char* kByteImagesOp = "ByteImageDataset";

// A buffer of n bytes from graft's allocator, counted under Category::Data.
std::shared_ptr<Storage> data_storage(size_t n) {
  auto s = std::make_shared<Storage>(n, cpu_allocator());
  memory::set_category(*s, memory::Category::Data);
  return s;
}

}  // namespace

std::array<float, 256> ByteImageDataset::make_table(double mean, double stddev) {
  std::array<float, 256> t{};
  for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = static_cast<float>((b / 255.0 - mean) / stddev);
  return t;
}

ByteImageDataset::ByteImageDataset(std::span<const uint8_t> bytes, std::vector<int64_t> sizes, const Tensor& targets)
    : sizes_(std::move(sizes)) {
  GRAFT_CHECK(!sizes_.empty(), kByteImagesOp, "sizes (N, ...) with at least one dim", "no sizes", "pass e.g. {N, 1, 28, 28}");
  uint64_t row = 1;
  for (size_t i = 1; i < sizes_.size(); ++i) {
    GRAFT_CHECK(sizes_[i] >= 0 && (sizes_[i] == 0 || row <= (uint64_t{1} << 48) / static_cast<uint64_t>(sizes_[i])),
                kByteImagesOp, "non-negative sizes below 2^48 elements in all", shape_str(sizes_), "check the sizes");
    row *= static_cast<uint64_t>(sizes_[i]);
  }
  row_bytes_ = static_cast<int64_t>(row);
  const bool matches = row == 0 ? bytes.empty()
                                 : bytes.size() % row == 0 && bytes.size() / row == static_cast<uint64_t>(sizes_[0]);
  GRAFT_CHECK(sizes_[0] >= 0 && matches,
              kByteImagesOp, "prod(sizes) bytes for sizes " + shape_str(sizes_), std::to_string(bytes.size()) + " bytes",
              "pass one byte per value, example after example");
  GRAFT_CHECK(targets.defined() && targets.dtype() == kInt64 && targets.dim() == 1 && targets.size(0) == sizes_[0], kByteImagesOp,
              "int64 targets of shape [" + std::to_string(sizes_[0]) + "]",
              targets.defined() ? std::string(dtype_name(targets.dtype())) + " " + shape_str(targets.sizes())
                                : std::string("an undefined tensor"),
              "pass one int64 label per example");
  auto s = data_storage(bytes.size());
  if (!bytes.empty()) std::memcpy(s->data, bytes.data(), bytes.size());
  storage_ = std::move(s);
  targets_ = targets.detach().clone();  // its own storage, so that it can be tagged as data
  memory::set_category(*targets_.impl().storage, memory::Category::Data);
}

std::span<const uint8_t> ByteImageDataset::bytes() const {
  if (!storage_) return {};
  return {static_cast<const uint8_t*>(storage_->data), storage_->nbytes};
}

void ByteImageDataset::fill(std::span<const int64_t> indices, float* out, const char* op) const {
  const uint8_t* base = bytes().data();
  const auto row = static_cast<size_t>(row_bytes_);
  for (size_t k = 0; k < indices.size(); ++k) {
    detail::check_index(indices[k], size(), op);
    const uint8_t* src = base + static_cast<size_t>(indices[k]) * row;
    float* dst = out + k * row;
    for (size_t i = 0; i < row; ++i) dst[i] = table_[src[i]];
  }
}

Example<> ByteImageDataset::get(int64_t index) const {
  detail::check_index(index, size(), "ByteImageDataset::get");
  Tensor x = make_empty(std::vector<int64_t>(sizes_.begin() + 1, sizes_.end()), kFloat32);
  const int64_t i[] = {index};
  fill(i, x.data_ptr<float>(), "ByteImageDataset::get");
  return {x, targets_.select(0, index)};
}

Example<> ByteImageDataset::get_batch(std::span<const int64_t> indices) const {
  const char* op = "ByteImageDataset::get_batch";
  GRAFT_CHECK(!indices.empty(), op, "at least one index", "none", "pass at least one index");
  std::vector<int64_t> shape = sizes_;
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor x = make_empty(shape, kFloat32);
  fill(indices, x.data_ptr<float>(), op);
  return {x, detail::gather_rows(targets_, indices, op)};
}

Example<> ByteImageDataset::rows(int64_t start, int64_t length) const {
  GRAFT_CHECK(start >= 0 && length >= 1 && start <= size() - length, "ByteImageDataset::rows",
              "rows within [0, " + std::to_string(size()) + ")",
              "start " + std::to_string(start) + ", length " + std::to_string(length),
              "pass 0 <= start and start + length <= size()");
  std::vector<int64_t> idx(static_cast<size_t>(length));
  std::iota(idx.begin(), idx.end(), start);
  return get_batch(idx);
}

ByteImageDataset ByteImageDataset::head(int64_t n) const {
  GRAFT_CHECK(n >= 0 && n <= size(), "ByteImageDataset::head", "0 <= n <= " + std::to_string(size()),
              std::to_string(n), "pass at most size() examples");
  std::vector<int64_t> sizes = sizes_;
  sizes[0] = n;
  ByteImageDataset out(bytes().first(static_cast<size_t>(n * row_bytes_)), std::move(sizes),
                       targets_.narrow(0, 0, n));
  return out.normalized(mean_, stddev_);
}

ByteImageDataset ByteImageDataset::normalized(double mean, double stddev) const {
  GRAFT_CHECK(std::isfinite(mean) && std::isfinite(stddev) && stddev > 0, "ByteImageDataset::normalized",
              "a finite mean and a positive, finite standard deviation",
              "mean " + std::to_string(mean) + ", stddev " + std::to_string(stddev),
              "compute them with moments() (and keep stddev away from 0)");
  ByteImageDataset out = *this;
  out.mean_ = mean;
  out.stddev_ = stddev;
  out.table_ = make_table(mean, stddev);
  return out;
}

ByteImageDataset::Moments ByteImageDataset::moments() const {
  // A histogram of the byte values (exact counts), then sums over the 256 values in long double:
  // no float copy of the set, and no rounding that grows with its size.
  std::array<uint64_t, 256> count{};
  for (uint8_t b : bytes()) ++count[b];
  const auto n = static_cast<double>(bytes().size());
  if (n == 0) return {};
  long double sum = 0, sum_sq = 0;
  for (int b = 0; b < 256; ++b) {
    const auto c = static_cast<long double>(count[static_cast<size_t>(b)]);
    sum += c * b;
    sum_sq += c * b * b;
  }
  const long double mean = sum / n;                                   // in bytes
  const long double var = n > 1 ? (sum_sq - sum * mean) / (n - 1) : 0;  // sum (b - mean)^2 / (n - 1)
  return {static_cast<double>(mean / 255), static_cast<double>(std::sqrt(std::max<long double>(var, 0)) / 255)};
}

}  // namespace graft::data
