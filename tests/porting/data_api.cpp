// The data API as LibTorch spells it: MNIST read from a synthetic IDX set written here, Normalize, Stack,
// samplers, make_data_loader, a custom Dataset, nn::Dropout2d in eval mode, and AT_ASSERT. LibTorch
// source, compiled as is against LibTorch and, renamed by tools/port-from-libtorch.sh, against graft;
// each printed value is checked against a value derived by hand in the comments. Exits 1 on a
// mismatch.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

int failures = 0;

void check(const char* what, double got, double expected) {
  const bool ok = std::fabs(got - expected) <= 1e-6 * (1.0 + std::fabs(expected));
  std::printf("%s = %.6f%s\n", what, got, ok ? "" : "  MISMATCH");
  if (!ok) {
    std::printf("  expected %.6f\n", expected);
    ++failures;
  }
}

// Element i of t in row-major order.
double element(const torch::Tensor& t, int64_t i) { return t.reshape({-1}).select(0, i).item<double>(); }

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// n images of 28 x 28 whose pixel i of image k is (7 k + i) % 256, and labels (2 k + 1) % 10.
void write_split(const std::string& dir, const std::string& prefix, uint32_t n) {
  std::vector<uint8_t> images = {0, 0, 0x08, 3}, labels = {0, 0, 0x08, 1};
  put_be32(images, n);
  put_be32(images, 28);
  put_be32(images, 28);
  put_be32(labels, n);
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t i = 0; i < 28 * 28; ++i) images.push_back(static_cast<uint8_t>((7 * k + i) % 256));
    labels.push_back(static_cast<uint8_t>((2 * k + 1) % 10));
  }
  std::ofstream(dir + "/" + prefix + "-images-idx3-ubyte", std::ios::binary)
      .write(reinterpret_cast<const char*>(images.data()), static_cast<std::streamsize>(images.size()));
  std::ofstream(dir + "/" + prefix + "-labels-idx1-ubyte", std::ios::binary)
      .write(reinterpret_cast<const char*>(labels.data()), static_cast<std::streamsize>(labels.size()));
}

// data[i] = {i, i + 0.5}, target[i] = 3 i.
struct Counting : torch::data::datasets::Dataset<Counting> {
  explicit Counting(size_t n) : n_(n) {}
  torch::data::Example<> get(size_t index) override {
    const double i = static_cast<double>(index);
    return {torch::tensor({i, i + 0.5}, torch::kFloat64),
            torch::scalar_tensor(static_cast<int64_t>(3 * index), torch::kInt64)};
  }
  torch::optional<size_t> size() const override { return n_; }
  size_t n_;
};

}  // namespace

int main() {
  const std::string name = "data_api_" + std::to_string(::getpid());
  const std::string dir = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::create_directories(dir);
  // LibTorch's reader insists on the full sizes (60000 training, 10000 test images); the test split
  // is the smaller one, so only it is written.
  write_split(dir, "t10k", 10000);

  // MNIST: 10000 images (10000, 1, 28, 28) in [0, 1], int64 targets 1, 3, 5, 7, 9, 1, ...
  auto raw = torch::data::datasets::MNIST(dir, torch::data::datasets::MNIST::Mode::kTest);
  check("test size", static_cast<double>(raw.size().value()), 10000);
  check("images dim 1", static_cast<double>(raw.images().size(1)), 1);
  check("images dim 3", static_cast<double>(raw.images().size(3)), 28);
  check("images float32", raw.images().dtype() == torch::kFloat32 ? 1 : 0, 1);
  check("targets int64", raw.targets().dtype() == torch::kInt64 ? 1 : 0, 1);
  check("is_train", raw.is_train() ? 1 : 0, 0);
  check("max pixel", raw.images().max().item<double>(), 1.0);           // pixel 255 occurs
  check("image 2 pixel 3", element(raw.get(2).data, 3), 17.0 / 255.0);  // 7 * 2 + 3 = 17
  check("target 4", static_cast<double>(raw.get(4).target.item<int64_t>()), 9);

  // Normalised ((x - 0.5) / 0.25) and stacked, in batches of 4096: 4096, 4096 and 1808.
  auto test = torch::data::datasets::MNIST(dir, torch::data::datasets::MNIST::Mode::kTest)
                  .map(torch::data::transforms::Normalize<>(0.5, 0.25))
                  .map(torch::data::transforms::Stack<>());
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test), torch::data::DataLoaderOptions().batch_size(4096).workers(1));
  int batches = 0;
  double target_sum = 0;
  for (auto& batch : *test_loader) {
    if (batches == 0) {
      check("batch 0 size", static_cast<double>(batch.data.size(0)), 4096);
      // image 1, pixel 10: (7 + 10) / 255 = 17 / 255, normalised (17 / 255 - 0.5) / 0.25.
      check("batch 0 image 1 pixel 10", element(batch.data, 28 * 28 + 10), (17.0 / 255.0 - 0.5) / 0.25);
      check("batch 0 target 1", element(batch.target, 1), 3);
    }
    if (batches == 2) check("batch 2 size", static_cast<double>(batch.data.size(0)), 1808);
    target_sum += batch.target.sum().item<double>();
    ++batches;
  }
  check("test batches", batches, 3);
  check("test target sum", target_sum, 50000);  // 1 + 3 + 5 + 7 + 9 = 25 for each 5 images

  // Normalize per channel: channel 0 (x - 1) / 2, channel 1 (x - 10) / 5.
  torch::data::transforms::Normalize<> per_channel({1.0, 10.0}, {2.0, 5.0});
  torch::Tensor image = torch::tensor({1.0, 3.0, 10.0, 20.0}, torch::kFloat32).reshape({2, 1, 2});
  torch::Tensor normalised = per_channel(image);
  check("per-channel c0", element(normalised, 1), 1.0);  // (3 - 1) / 2
  check("per-channel c1", element(normalised, 3), 2.0);  // (20 - 10) / 5

  // A custom dataset: 7 examples in batches of 3 with drop_last: 2 batches; data rows {i, i + 0.5}.
  auto counting = Counting(7).map(torch::data::transforms::Stack<>());
  auto seq = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(counting), torch::data::DataLoaderOptions(3).drop_last(true));
  int seq_batches = 0;
  double seq_sum = 0;
  for (auto& batch : *seq) {
    ++seq_batches;
    seq_sum += batch.data.sum().item<double>();
  }
  check("drop_last batches", seq_batches, 2);
  check("drop_last data sum", seq_sum, 33.0);  // sum over i < 6 of (2 i + 0.5) = 30 + 3

  // A random sampler visits each example once per epoch: targets 0 + 3 + ... + 18 = 63, in 3 batches.
  torch::manual_seed(4);
  auto random = torch::data::make_data_loader(Counting(7).map(torch::data::transforms::Stack<>()), 3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    int n = 0;
    double target_sum = 0;
    for (auto& batch : *random) {
      ++n;
      target_sum += batch.target.sum().item<double>();
    }
    check("random batches", n, 3);
    check("random target sum", target_sum, 63);
  }

  // Dropout2d in eval mode is the identity; AT_ASSERT passes on a true condition.
  torch::nn::Dropout2d drop(torch::nn::Dropout2dOptions(0.5));
  drop->eval();
  torch::Tensor x = torch::ones({2, 3, 2, 2});
  check("dropout2d eval sum", drop->forward(x).sum().item<double>(), 24);
  check("dropout eval sum", torch::dropout(x, 0.5, /*train=*/false).sum().item<double>(), 24);
  AT_ASSERT(!std::isnan(x.sum().item<float>()));
  check("cuda available", torch::cuda::is_available() ? 1 : 0, 0);
  torch::Device device(torch::kCPU);
  check("to(cpu) sum", x.to(device).sum().item<double>(), 24);

  std::filesystem::remove_all(dir);
  std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
