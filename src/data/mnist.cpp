// MNIST / Fashion-MNIST from IDX files.
#include "graft/data/mnist.h"

#include <sys/stat.h>

#include <cerrno>
#include <system_error>

#include "graft/core/factory.h"
#include "graft/data/idx.h"

namespace graft::data {

namespace {

bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Why `p` cannot be read as a data file: empty when it is a regular file, "no such file" when it
// is missing, else what is there (a directory, a FIFO, a symbolic link loop, ...).
std::string problem(const std::string& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return "no such file";
    if (err == ELOOP) return p + " is a symbolic link loop";
    return p + ": " + std::error_code(err, std::generic_category()).message();
  }
  if (S_ISREG(st.st_mode)) return {};
  if (S_ISDIR(st.st_mode)) return p + " is a directory";
  if (S_ISFIFO(st.st_mode)) return p + " is a FIFO (named pipe), not a regular file";
  return p + " is not a regular file (a device or a socket)";
}

std::string join(const std::string& root, const std::string& name) {
  if (root.empty()) return name;
  return root.back() == '/' ? root + name : root + "/" + name;
}

// The path of `stem` in root, raw or gzipped; empty when neither exists.
std::string find_file(const std::string& root, const std::string& stem) {
  const std::string raw = join(root, stem);
  if (is_file(raw)) return raw;
  if (is_file(raw + ".gz")) return raw + ".gz";
  return {};
}

const char* prefix(MNIST::Mode mode) { return mode == MNIST::Mode::kTrain ? "train" : "t10k"; }

std::string locate(const std::string& root, MNIST::Mode mode, const char* kind) {
  const std::string stem = std::string(prefix(mode)) + kind;
  std::string p = find_file(root, stem);
  if (p.empty()) {
    // Neither name is a regular file: say what is there, if anything (a directory, a FIFO or a
    // symbolic link loop is not "no such file").
    const std::string raw = join(root, stem);
    std::string why = problem(raw);
    if (why == "no such file") why = problem(raw + ".gz");
    throw Error("MNIST(\"" + root + "\")", "the file " + raw + " (or " + stem + ".gz)", why,
                why == "no such file"
                    ? "download MNIST / Fashion-MNIST there, or on Debian `apt-get install dataset-fashion-mnist` "
                      "and use " + std::string(kFashionMNISTDebianDir)
                    : std::string("put the IDX file itself there"));
  }
  return p;
}

}  // namespace

bool MNIST::exists(const std::string& root, Mode mode) {
  const std::string p = prefix(mode);
  return !find_file(root, p + "-images-idx3-ubyte").empty() && !find_file(root, p + "-labels-idx1-ubyte").empty();
}

namespace {

struct MnistFiles {
  IdxArray images, labels;
};

// The two files of `mode`, checked to be MNIST's (uint8 images (N, H, W), uint8 labels (N)).
MnistFiles read_files(const std::string& root, MNIST::Mode mode) {
  const std::string images_path = locate(root, mode, "-images-idx3-ubyte");
  const std::string labels_path = locate(root, mode, "-labels-idx1-ubyte");
  IdxArray images = read_idx_array(images_path);
  IdxArray labels = read_idx_array(labels_path);
  const std::string op = "MNIST(\"" + root + "\")";
  GRAFT_CHECK(images.type == IdxType::UInt8 && images.sizes.size() == 3, op,
              "uint8 images with 3 dims (N, H, W) in " + images_path,
              std::string(idx_type_name(images.type)) + " with sizes " + shape_str(images.sizes),
              "this is not an MNIST image file");
  GRAFT_CHECK(labels.type == IdxType::UInt8 && labels.sizes.size() == 1, op,
              "uint8 labels with 1 dim (N) in " + labels_path,
              std::string(idx_type_name(labels.type)) + " with sizes " + shape_str(labels.sizes),
              "this is not an MNIST label file");
  GRAFT_CHECK(images.sizes[0] == labels.sizes[0], op, "as many labels as images",
              std::to_string(images.sizes[0]) + " images in " + images_path + " and " +
                  std::to_string(labels.sizes[0]) + " labels in " + labels_path,
              "the files come from different sets; use a matching pair");
  // An empty set or 0 x 0 images would only fail later, deep inside training, naming no file.
  GRAFT_CHECK(images.sizes[0] > 0, op, "at least one image in " + images_path,
              "sizes " + shape_str(images.sizes) + " (an empty data set)", "this image file holds no images");
  GRAFT_CHECK(images.sizes[1] > 0 && images.sizes[2] > 0, op, "images of at least 1 x 1 pixels in " + images_path,
              "sizes " + shape_str(images.sizes) + " (N, H, W)", "the image file's header is corrupt");
  return {std::move(images), std::move(labels)};
}

}  // namespace

MNIST::MNIST(const std::string& root, Mode mode) {
  const MnistFiles f = read_files(root, mode);
  const IdxArray& images = f.images;
  const IdxArray& labels = f.labels;
  const int64_t n = images.sizes[0], h = images.sizes[1], w = images.sizes[2];
  images_ = make_empty({n, 1, h, w}, kFloat32);
  float* img = images_.data_ptr<float>();
  for (size_t i = 0; i < images.bytes.size(); ++i) img[i] = static_cast<float>(images.bytes[i]) / 255.0f;
  targets_ = make_empty({n}, kInt64);
  int64_t* lab = targets_.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) lab[i] = labels.bytes[static_cast<size_t>(i)];
}

ByteImageDataset read_mnist_bytes(const std::string& root, MNIST::Mode mode) {
  MnistFiles f = read_files(root, mode);
  const int64_t n = f.images.sizes[0];
  Tensor labels = make_empty({n}, kInt64);
  int64_t* lab = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) lab[i] = f.labels.bytes[static_cast<size_t>(i)];
  f.labels = {};
  return ByteImageDataset(f.images.bytes, {n, 1, f.images.sizes[1], f.images.sizes[2]}, labels);
}

Example<> MNIST::get(int64_t index) const {
  detail::check_index(index, size(), "MNIST::get");
  return {images_.select(0, index), targets_.select(0, index)};
}

Example<> MNIST::get_batch(std::span<const int64_t> indices) const {
  GRAFT_CHECK(!indices.empty(), "MNIST::get_batch", "at least one index", "none", "pass at least one index");
  return {detail::gather_rows(images_, indices, "MNIST::get_batch"),
          detail::gather_rows(targets_, indices, "MNIST::get_batch")};
}

}  // namespace graft::data
