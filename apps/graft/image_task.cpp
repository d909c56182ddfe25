// The image task (Note [Task seam] in task.h): the mlp and the cnn on IDX images (Fashion-MNIST).
#include <graft/graft.h>

#include <cstdio>
#include <filesystem>

#include "task.h"
#include "config.h"
#include "run_result.h"

namespace graft::cli {
namespace {

namespace nn = graft::nn;

// The number of classes, after checking every label is one of them (issue 14, item 9: a test
// label of 12 silently made 13 outputs). --classes N fixes it; 0 means 10 for the default data set
// (Fashion-MNIST), and for --data the largest training label + 1, so every test label must be one
// the training set has. `train_y` is the whole training set (before --train-limit).
int64_t check_labels(const TrainConfig& cfg, const std::string& root, const Tensor& train_y, const Tensor& test_y) {
  const Tensor train_labels = train_y.contiguous(), test_labels = test_y.contiguous();
  const int64_t* tr = train_labels.data_ptr<int64_t>();
  int64_t classes = cfg.classes;
  if (classes == 0 && !cfg.data.empty()) {
    for (int64_t i = 0; i < train_labels.numel(); ++i) classes = std::max(classes, tr[i] + 1);
  } else if (classes == 0) {
    classes = 10;
  }
  const auto check = [&](const Tensor& labels, const char* mode) {
    const int64_t* p = labels.data_ptr<int64_t>();
    for (int64_t i = 0; i < labels.numel(); ++i) {
      if (p[i] >= 0 && p[i] < classes) continue;
      // The file MNIST read: the raw one if it is there, else the gzipped one.
      std::string file = root + (root.back() == '/' ? "" : "/") + mode + "-labels-idx1-ubyte";
      std::error_code ec;
      if (!std::filesystem::is_regular_file(file, ec)) file += ".gz";
      throw Error("graft train --data",
                  "labels 0 .. " + std::to_string(classes - 1) + " (" + std::to_string(classes) + " classes" +
                      (cfg.classes > 0 ? ", --classes" : cfg.data.empty() ? ", Fashion-MNIST's" : ", as the training labels") +
                      ")",
                  "label " + std::to_string(p[i]) + " at index " + std::to_string(i) + " in " + file,
                  "pass --classes N for a data set with N classes (labels 0 .. N - 1)");
    }
  };
  check(train_labels, "train");
  check(test_labels, "t10k");
  return classes;
}

class ImageTask final : public Task {
 public:
  explicit ImageTask(ImageNet net) : net_(net) {}

  // 128 for the mlp, 64 for the cnn (more, smaller steps: 91.6% instead of 91.2% after 5 epochs).
  int64_t default_batch_size() const override { return net_ == ImageNet::kCnn ? 64 : 128; }
  std::string default_optimizer() const override { return "sgd"; }
  int64_t default_epochs() const override { return 5; }
  // The text models' flags are refused rather than ignored (Note [Flags a model does not read]).
  void check_flags(const TrainConfig& c, const std::string& command) const override {
    refuse_flags(c, command, {"--context", "--width", "--depth", "--heads", "--checkpoint-attention"},
                 "the text models' (gpt, lstm)");
  }
  bool needs_two_examples_per_batch(const TrainConfig& cfg) const override {
    return cfg.batch_norm && net_ == ImageNet::kMlp;
  }

  TaskData load(const TrainConfig& cfg) const override {
    const std::string root = cfg.data.empty() ? data::kFashionMNISTDebianDir : cfg.data;
    // The images stay uint8 (a quarter of float32's memory, memory category "data"); each batch is
    // normalised as it is gathered, so no float copy of a whole set exists (issue 14, item 14).
    data::ByteImageDataset train_set = data::read_mnist_bytes(root, data::MNIST::Mode::kTrain);
    data::ByteImageDataset test_set = data::read_mnist_bytes(root, data::MNIST::Mode::kTest);
    TaskData d;
    const std::vector<int64_t> train_sizes = train_set.sizes();
    const Tensor full_train_targets = train_set.targets();  // every label is checked, before --train-limit
    if (cfg.train_limit > 0 && cfg.train_limit < train_set.size()) train_set = train_set.head(cfg.train_limit);
    GRAFT_CHECK(std::equal(train_sizes.begin() + 1, train_sizes.end(), test_set.sizes().begin() + 1,
                           test_set.sizes().end()),
                "graft train --data", "training and test images of one size",
                "train " + shape_str(train_sizes) + " and test " + shape_str(test_set.sizes()),
                "point --data at one data set");
    // Normalise with the training images' own mean and standard deviation (Fashion-MNIST: 0.286,
    // 0.353), summed exactly over the bytes.
    const data::ByteImageDataset::Moments m = train_set.moments();
    const double mean = m.mean, stddev = std::max(1e-6, m.stddev);
    const data::ByteImageDataset train_x = train_set.normalized(mean, stddev);
    const data::ByteImageDataset test_x = test_set.normalized(mean, stddev);
    d.classes = check_labels(cfg, root, full_train_targets, test_x.targets());
    d.train = std::make_shared<const data::ByteImageDataset>(train_x);
    d.test = std::make_shared<const data::ByteImageDataset>(test_x);
    d.example_sizes.assign(train_x.sizes().begin() + 1, train_x.sizes().end());  // (C, H, W)
    d.what = std::to_string(train_x.size()) + " images (" + std::to_string(d.classes) + " classes)";
    // What loading freed (the full training set after --train-limit) goes back to the system instead
    // of staying cached for the whole run.
    memory::empty_cache();
    return d;
  }

  // mlp: Flatten, Linear(C*H*W, 512), [BatchNorm1d], ReLU, [Dropout], Linear(512, 256), [BatchNorm1d],
  //      ReLU, [Dropout], Linear(256, classes)
  // cnn: Conv2d(C, 32, 3), [BatchNorm2d], ReLU, MaxPool2d(2), Conv2d(32, 64, 3), [BatchNorm2d], ReLU,
  //      MaxPool2d(2), Flatten, Linear(64 * h * w, 128), ReLU, [Dropout], Linear(128, classes)
  nn::Sequential build_model(const TrainConfig& cfg, const TaskData& d) const override {
    const int64_t C = d.example_sizes.at(0), H = d.example_sizes.at(1), W = d.example_sizes.at(2);
    const int64_t classes = d.classes;
    nn::Sequential m;
    if (net_ == ImageNet::kMlp) {
      m->push_back(nn::Flatten());
      int64_t in = C * H * W;
      for (int64_t width : {512, 256}) {
        m->push_back(nn::Linear(in, width));
        if (cfg.batch_norm) m->push_back(nn::BatchNorm1d(width));
        m->push_back(nn::ReLU());
        if (cfg.dropout > 0) m->push_back(nn::Dropout(cfg.dropout));
        in = width;
      }
      m->push_back(nn::Linear(in, classes));
    } else {
      int64_t h = H, w = W, in = C;
      for (int64_t channels : {32, 64}) {
        GRAFT_CHECK(h >= 4 && w >= 4, "graft train --model cnn", "images of at least 10 x 10",
                    std::to_string(H) + " x " + std::to_string(W), "use --model mlp for small images");
        m->push_back(nn::Conv2d(in, channels, 3));
        if (cfg.batch_norm) m->push_back(nn::BatchNorm2d(channels));
        m->push_back(nn::ReLU());
        m->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
        h = (h - 2) / 2;
        w = (w - 2) / 2;
        in = channels;
      }
      m->push_back(nn::Flatten());
      m->push_back(nn::Linear(in * h * w, 128));
      m->push_back(nn::ReLU());
      if (cfg.dropout > 0) m->push_back(nn::Dropout(cfg.dropout));
      m->push_back(nn::Linear(128, classes));
    }
    return m;
  }

  std::string data_description() const override { return "uint8 images and labels, train and test"; }
  std::string divergence_hint(const TrainConfig& cfg) const override {
    return cfg.batch_norm ? "lower --lr" : "lower --lr or turn on --batch-norm";
  }
  int64_t eval_chunk() const override { return 1000; }

  std::string epoch_line(const TrainConfig& cfg, const EpochRecord& r) const override {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "epoch %lld/%lld  train_loss %.4f  train_acc %.2f%%  test_loss %.4f  test_acc %.2f%%  lr %.3g  %.1f s",
                  static_cast<long long>(r.epoch), static_cast<long long>(cfg.epochs), r.train_loss,
                  100 * r.train_accuracy, r.test_loss, 100 * r.test_accuracy, r.lr, r.seconds);
    return buf;
  }

  std::string result_line(const TrainResult& result) const override {
    char buf[200];
    std::snprintf(buf, sizeof buf, "test accuracy %.2f%% after %lld epochs (%.1f s, peak tensor memory %.1f MiB)",
                  100 * result.test_accuracy, static_cast<long long>(result.epochs), result.seconds,
                  static_cast<double>(result.peak_memory_bytes) / (1 << 20));
    return buf;
  }

 private:
  ImageNet net_;
};

}  // namespace

std::unique_ptr<Task> make_image_task(ImageNet net) { return std::make_unique<ImageTask>(net); }

}  // namespace graft::cli
