// ByteImageDataset: images kept as their uint8 bytes and turned into float32 one batch at a time.
//
//   auto train = graft::data::read_mnist_bytes(dir);          // 47 MB for Fashion-MNIST, not 188
//   const auto m = train.moments();                           // of byte / 255 over every pixel
//   graft::data::DataLoader loader(train.normalized(m.mean, m.stddev), graft::data::DataLoaderOptions(128));
//
// Note [Byte images]
// graft tensors have no uint8 dtype, and a float32 copy of an image set is four times its bytes
// (plus the temporaries of normalising it as a whole). This dataset keeps the N * C * H * W bytes in
// one graft-allocated buffer, counted under memory::Category::Data (Note [Memory categories]), with
// the int64 labels (N), also Data. get() and get_batch() gather the rows and convert them in one
// pass through a 256-entry table: pixel = (byte / 255 - mean) / stddev, computed in double and
// rounded to float once (mean 0 and stddev 1, the default, give MNIST's float images in [0, 1]).
// Copies of the dataset share the bytes; normalized() and the loaders' copies cost nothing.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graft/data/dataset.h"

namespace graft {
struct Storage;
}

namespace graft::data {

class ByteImageDataset : public Dataset {
 public:
  ByteImageDataset() = default;  // empty: no examples
  // `bytes` holds prod(sizes) values, example after example; sizes is (N, ...) (for images
  // (N, C, H, W)); targets is int64 (N). Both are copied into Data-category storage.
  ByteImageDataset(std::span<const uint8_t> bytes, std::vector<int64_t> sizes, const Tensor& targets);

  int64_t size() const override { return sizes_.empty() ? 0 : sizes_[0]; }
  // Float32 (sizes[1:]...) and (B, sizes[1:]...) normalised as the Note says; targets int64.
  Example<> get(int64_t index) const override;
  Example<> get_batch(std::span<const int64_t> indices) const override;
  // The examples [start, start + length) in order, as get_batch would give them.
  Example<> rows(int64_t start, int64_t length) const;

  // The first n examples, copied (a set narrowed this way frees the rest with the original).
  ByteImageDataset head(int64_t n) const;
  // The same bytes (shared) with data given as (byte / 255 - mean) / stddev.
  ByteImageDataset normalized(double mean, double stddev) const;

  // The mean and the (unbiased, N - 1) standard deviation of byte / 255 over every value of the set,
  // from exact integer sums of the bytes and their squares: no float copy of the set is made.
  struct Moments {
    double mean = 0, stddev = 0;
  };
  Moments moments() const;

  std::span<const uint8_t> bytes() const;
  const std::vector<int64_t>& sizes() const { return sizes_; }  // (N, ...)
  const Tensor& targets() const { return targets_; }
  double mean() const { return mean_; }
  double stddev() const { return stddev_; }

 private:
  void fill(std::span<const int64_t> indices, float* out, const char* op) const;

  std::shared_ptr<const Storage> storage_;  // the bytes; null when empty
  std::vector<int64_t> sizes_;
  int64_t row_bytes_ = 0;  // prod(sizes[1:])
  Tensor targets_;
  double mean_ = 0, stddev_ = 1;
  std::array<float, 256> table_ = make_table(0, 1);

  static std::array<float, 256> make_table(double mean, double stddev);
};

}  // namespace graft::data
