// ByteImageDataset and read_mnist_bytes (Note [Byte images]; issue 14, item 14): the bytes are
// counted under memory::Category::Data to the byte, and the batches it normalises one at a time are
// the values of the old whole-set float normalisation, computed here with plain loops in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../io/temp_dir.h"
#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

using data::ByteImageDataset;
using data::MNIST;
using memory::Category;

// An IDX file of uint8 values with the given sizes.
std::vector<uint8_t> idx_u8(const std::vector<uint32_t>& sizes, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> b = {0, 0, 8, static_cast<uint8_t>(sizes.size())};
  for (uint32_t s : sizes)
    for (int i = 3; i >= 0; --i) b.push_back(static_cast<uint8_t>(s >> (8 * i)));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// n images of h x w, pixel (k, i) = (k * 37 + i * 11) % 256 (every value 0..255 occurs), labels k % 10.
std::vector<uint8_t> write_image_set(const TempDir& dir, const std::string& prefix, uint32_t n, uint32_t h,
                                     uint32_t w) {
  std::vector<uint8_t> pixels, labels;
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t i = 0; i < h * w; ++i) pixels.push_back(static_cast<uint8_t>((k * 37 + i * 11) % 256));
    labels.push_back(static_cast<uint8_t>(k % 10));
  }
  write_bytes(dir / (prefix + "-images-idx3-ubyte"), idx_u8({n, h, w}, pixels));
  write_bytes(dir / (prefix + "-labels-idx1-ubyte"), idx_u8({n}, labels));
  return pixels;
}

int64_t data_bytes() { return memory::stats()[Category::Data].current_bytes; }

TEST(ByteImages, TheDataSetIsCountedUnderDataToTheByte) {
  TempDir dir;
  write_image_set(dir, "train", 50, 7, 6);
  const int64_t before = data_bytes(), other_before = memory::stats()[Category::Other].current_bytes;
  {
    const ByteImageDataset set = data::read_mnist_bytes(dir.path());
    // 50 images of 7 x 6 bytes, and 50 int64 labels: 2100 + 400 bytes, by hand.
    EXPECT_EQ(data_bytes() - before, 50 * 7 * 6 + 50 * 8);
    EXPECT_EQ(memory::stats()[Category::Other].current_bytes, other_before);  // nothing left in "other"
    EXPECT_EQ(set.sizes(), (std::vector<int64_t>{50, 1, 7, 6}));
    EXPECT_EQ(set.bytes().size(), 2100u);
    // A normalised view and a copy share the bytes: no more data.
    const ByteImageDataset normalised = set.normalized(0.5, 0.25);
    const ByteImageDataset copy = normalised;  // NOLINT: the copy is the point
    EXPECT_EQ(data_bytes() - before, 2500);
    // head() copies the first examples: 20 * 42 + 20 * 8 more.
    const ByteImageDataset first = set.head(20);
    EXPECT_EQ(data_bytes() - before, 2500 + 20 * 42 + 20 * 8);
    // A batch is float32 in "other", not data.
    const data::Example<> b = copy.get_batch(std::vector<int64_t>{3, 1});
    EXPECT_EQ(b.data.dtype(), kFloat32);
    EXPECT_EQ(data_bytes() - before, 2500 + 1000);
  }
  EXPECT_EQ(data_bytes(), before);  // all of it returned
  const std::string table = memory::memory_summary();
  EXPECT_NE(table.find("\n  data "), std::string::npos) << table;
}

TEST(ByteImages, BatchesAreTheOldWholeSetNormalisationComputedInDouble) {
  TempDir dir;
  const std::vector<uint8_t> px = write_image_set(dir, "train", 30, 5, 4);
  const size_t n = px.size();
  // The training images' mean and unbiased standard deviation on the [0, 1] scale, by hand.
  double sum = 0;
  for (uint8_t b : px) sum += b / 255.0;
  const double mean = sum / static_cast<double>(n);
  double ss = 0;
  for (uint8_t b : px) ss += (b / 255.0 - mean) * (b / 255.0 - mean);
  const double stddev = std::sqrt(ss / static_cast<double>(n - 1));

  const ByteImageDataset raw = data::read_mnist_bytes(dir.path());
  const ByteImageDataset::Moments m = raw.moments();
  EXPECT_NEAR(m.mean, mean, 1e-12);
  EXPECT_NEAR(m.stddev, stddev, 1e-12);
  // And as graft train computed them before (mean() and std() of the float32 images), to ~1e-6.
  const MNIST old(dir.path());
  EXPECT_NEAR(m.mean, old.images().mean().item<double>(), 1e-6);
  EXPECT_NEAR(m.stddev, old.images().std().item<double>(), 1e-6);

  const ByteImageDataset set = raw.normalized(m.mean, m.stddev);
  const std::vector<int64_t> idx = {29, 0, 7, 7, 13};
  const data::Example<> b = set.get_batch(idx);
  ASSERT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{5, 1, 5, 4}));
  const std::vector<double> got = values(b.data);
  const std::vector<double> labels = values(b.target);
  // The old path, (images - mean) / std on the whole float set, then a gather:
  const Tensor old_normalised = (old.images() - m.mean) / m.stddev;
  for (size_t k = 0; k < idx.size(); ++k) {
    EXPECT_EQ(labels[k], static_cast<double>(idx[k] % 10));
    const std::vector<double> old_row = values(old_normalised.select(0, idx[k]));
    for (size_t i = 0; i < 20; ++i) {
      const double expect = (px[static_cast<size_t>(idx[k]) * 20 + i] / 255.0 - mean) / stddev;
      EXPECT_NEAR(got[k * 20 + i], expect, 1e-6 * std::max(1.0, std::fabs(expect))) << k << " " << i;
      EXPECT_NEAR(got[k * 20 + i], old_row[i], 2e-6 * std::max(1.0, std::fabs(expect))) << k << " " << i;
    }
  }
  // rows() is get_batch over consecutive indices; get() one example; unnormalised is MNIST's [0, 1].
  EXPECT_EQ(values(set.rows(7, 2).data), values(set.get_batch(std::vector<int64_t>{7, 8}).data));
  EXPECT_EQ(values(set.get(13).data), values(b.data.select(0, 4)));
  EXPECT_EQ(values(raw.get_batch(std::vector<int64_t>{2}).data), values(old.images().narrow(0, 2, 1)));
  // Through a DataLoader, batches of float32 as from the old TensorDataset of floats.
  data::DataLoader loader(std::make_shared<const ByteImageDataset>(set), data::DataLoaderOptions(8));
  int64_t seen = 0;
  for (auto& batch : loader) {
    EXPECT_EQ(batch.data.dtype(), kFloat32);
    seen += batch.data.size(0);
  }
  EXPECT_EQ(seen, 30);
}

TEST(ByteImages, BadArgumentsAreClearErrors) {
  const Tensor labels = zeros({2}, kInt64);
  const std::vector<uint8_t> bytes(2 * 3, 1);
  EXPECT_THROW(ByteImageDataset(bytes, {2, 4}, labels), Error);         // 8 bytes expected
  EXPECT_THROW(ByteImageDataset(bytes, {2, 3}, zeros({3}, kInt64)), Error);
  EXPECT_THROW(ByteImageDataset(bytes, {2, 3}, zeros({2})), Error);  // float labels
  const ByteImageDataset ok(bytes, {2, 3}, labels);
  EXPECT_THROW(ok.get(2), Error);
  EXPECT_THROW(ok.rows(1, 2), Error);
  EXPECT_THROW(ok.head(3), Error);
  EXPECT_THROW(ok.normalized(0, 0), Error);
  EXPECT_EQ(ByteImageDataset().size(), 0);
}

}  // namespace
}  // namespace graft::test
