// MNIST and Fashion-MNIST, read from the four standard IDX files in a directory.
#pragma once

#include <string>

#include "graft/data/byte_images.h"
#include "graft/data/dataset.h"

namespace graft::data {

// Reads <root>/train-images-idx3-ubyte and train-labels-idx1-ubyte (kTrain) or t10k-images-idx3-ubyte
// and t10k-labels-idx1-ubyte (kTest), each raw or with a .gz suffix. Images are float32 scaled to
// [0, 1], shaped (N, 1, H, W) (28 x 28 for MNIST); labels are int64, shaped (N).
// Debian's dataset-fashion-mnist package puts Fashion-MNIST in kFashionMNISTDebianDir.
class MNIST : public Dataset {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

  int64_t size() const override { return images_.size(0); }
  Example<> get(int64_t index) const override;
  Example<> get_batch(std::span<const int64_t> indices) const override;
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

  // True when both files for `mode` are in `root` (raw or gzipped).
  static bool exists(const std::string& root, Mode mode = Mode::kTrain);

 private:
  Tensor images_, targets_;
};

// The same files as MNIST(root, mode), kept as their bytes (Note [Byte images]): a quarter of the
// float32 images' memory, counted under memory::Category::Data; get_batch gives float32 (B, 1, H, W),
// in [0, 1] or normalised with .normalized(mean, stddev). graft train loads its data this way.
ByteImageDataset read_mnist_bytes(const std::string& root, MNIST::Mode mode = MNIST::Mode::kTrain);

// Fashion-MNIST has MNIST's file names and layout.
using FashionMNIST = MNIST;

inline constexpr const char* kFashionMNISTDebianDir = "/usr/share/datasets/fashion-mnist";

}  // namespace graft::data
