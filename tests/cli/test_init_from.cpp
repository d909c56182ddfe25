// `graft train --init-from FILE` (Note [Starting from a state dict] in apps/graft/run_setup.h): a run
// starts from the weights of a state dict written here by a formula (in PyTorch's torch.save format
// and in safetensors); a file of other shapes fails before training, naming the key; the flag's
// checks (with --resume, a missing file) under graft train and graft plan.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "../io/temp_dir.h"
#include "../support/test_util.h"
#include "graft/graft.h"
#include "graft/io/pickle.h"
#include "graft/io/state_dict.h"
#include "train.h"

namespace graft::test {
namespace {

using cli::TrainConfig;

// 12 x 12 images of 3 classes (class k: a bright square in its own place), from a small LCG.
void init_from_write_split(const TempDir& dir, const std::string& prefix, uint32_t n, uint32_t seed) {
  auto be32 = [](std::vector<uint8_t>& b, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
  };
  std::vector<uint8_t> images = {0, 0, 8, 3}, labels = {0, 0, 8, 1};
  be32(images, n);
  be32(images, 12);
  be32(images, 12);
  be32(labels, n);
  uint32_t state = seed;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t k = i % 3, r0 = 1 + 3 * k;
    for (uint32_t r = 0; r < 12; ++r)
      for (uint32_t c = 0; c < 12; ++c) {
        state = state * 1664525u + 1013904223u;
        const bool bright = r >= r0 && r < r0 + 4 && c >= r0 && c < r0 + 4;
        images.push_back(static_cast<uint8_t>(bright ? 160 + (state >> 24) % 96 : (state >> 24) % 96));
      }
    labels.push_back(static_cast<uint8_t>(k));
  }
  write_bytes(dir / (prefix + "-images-idx3-ubyte"), images);
  write_bytes(dir / (prefix + "-labels-idx1-ubyte"), labels);
}

struct InitFromData {
  TempDir dir;
  InitFromData() {
    init_from_write_split(dir, "train", 96, 1);
    init_from_write_split(dir, "t10k", 30, 2);
  }
};

// graft train's mlp for 12 x 12 images and 3 classes, as image_task.cpp builds it: Sequential(Flatten,
// Linear(144, 512), ReLU, Linear(512, 256), ReLU, Linear(256, 3)), so its keys are "1.weight", ...
const std::vector<std::pair<std::string, std::vector<int64_t>>> kInitFromMlp = {
    {"1.weight", {512, 144}}, {"1.bias", {512}}, {"3.weight", {256, 512}},
    {"3.bias", {256}},        {"5.weight", {3, 256}}, {"5.bias", {3}}};

// Element i of the tensor named `key`: (2 ((7 i + 5 s) mod 23) - 23) / 256, s = (sum of the key's
// bytes) mod 19: odd multiples of 1/256, exact in float32 and never 0.
Tensor init_from_formula(const std::string& key, const std::vector<int64_t>& shape) {
  int64_t s = 0, numel = 1;
  for (unsigned char c : key) s += c;
  s %= 19;
  for (int64_t d : shape) numel *= d;
  std::vector<double> v(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) v[static_cast<size_t>(i)] = static_cast<double>(2 * ((7 * i + 5 * s) % 23) - 23) / 256;
  return make(v, shape, kFloat32);
}

TrainConfig init_from_config(const std::string& data_dir) {
  TrainConfig c;
  c.data = data_dir;
  c.batch_size = 32;
  c.epochs = 1;
  c.threads = 1;
  c.progress = "none";
  c.schedule = "none";
  return c;
}

// A run whose updates vanish in float32 rounding (lr 1e-30, no momentum: every weight, an odd
// multiple of 1/256, keeps its bits) saves the weights it started from: the file's.
TEST(InitFrom, TheRunStartsFromTheFilesWeights) {
  InitFromData data;
  TempDir dir;
  impl::GenericDict pt(AnyType::get(), AnyType::get());
  io::TensorDict st;
  for (const auto& [key, shape] : kInitFromMlp) {
    pt.insert(key, init_from_formula(key, shape));
    st.insert(key, init_from_formula(key, shape));
  }
  pickle_save(IValue(pt), dir / "init.pt");  // as Python's torch.save(model.state_dict())
  io::save_safetensors(dir / "init.safetensors", st);
  for (const std::string file : {"init.pt", "init.safetensors"}) {
    TrainConfig c = init_from_config(data.dir.path());
    c.init_from = dir / file;
    c.init = "xavier_uniform";  // replaced by the file's weights
    c.lr = 1e-30;
    c.momentum = 0;
    c.save = dir / "run.safetensors";
    std::ostringstream out;
    c.progress = "lines";
    cli::train(c, out);
    EXPECT_NE(out.str().find("weights from " + c.init_from + " (--init-from)"), std::string::npos) << out.str();
    const io::TensorDict saved = io::load_checkpoint(c.save).part("model.");
    ASSERT_EQ(saved.size(), kInitFromMlp.size()) << file;
    for (const auto& [key, shape] : kInitFromMlp) {
      ASSERT_TRUE(saved.contains(key)) << key;
      EXPECT_TRUE(same_values(values(saved[key]), values(init_from_formula(key, shape)))) << file << " " << key;
    }
  }
}

// With a real learning rate the run trains from there: the same file and seed give the same run
// whatever --init says, and another run than the one from the seed's own initialisation.
TEST(InitFrom, InitAndTheSeedsWeightsAreReplaced) {
  InitFromData data;
  TempDir dir;
  impl::GenericDict pt(AnyType::get(), AnyType::get());
  for (const auto& [key, shape] : kInitFromMlp) pt.insert(key, init_from_formula(key, shape));
  pickle_save(IValue(pt), dir / "init.pt");
  std::ostringstream sink;
  auto run = [&](const std::string& init, bool from_file) {
    TrainConfig c = init_from_config(data.dir.path());
    c.init = init;
    if (from_file) c.init_from = dir / "init.pt";
    c.save = dir / (init + (from_file ? "_file" : "") + ".safetensors");
    cli::train(c, sink);
    return io::load_checkpoint(c.save).part("model.");
  };
  const io::TensorDict a = run("default", true), b = run("orthogonal", true), seed_only = run("default", false);
  EXPECT_TRUE(same_values(values(a["1.weight"]), values(b["1.weight"])));
  EXPECT_TRUE(same_values(values(a["5.bias"]), values(b["5.bias"])));
  EXPECT_FALSE(same_values(values(a["5.bias"]), values(seed_only["5.bias"])));
}

TEST(InitFrom, AFileOfOtherShapesFailsBeforeTrainingNamingTheKey) {
  InitFromData data;
  TempDir dir;
  impl::GenericDict pt(AnyType::get(), AnyType::get());
  // The output layer of a model for 10 classes.
  for (const auto& [key, shape] : kInitFromMlp)
    pt.insert(key, key == "5.weight" ? init_from_formula(key, {10, 256})
                   : key == "5.bias" ? init_from_formula(key, {10})
                                     : init_from_formula(key, shape));
  pickle_save(IValue(pt), dir / "ten_classes.pt");
  TrainConfig c = init_from_config(data.dir.path());
  c.init_from = dir / "ten_classes.pt";
  c.save = dir / "never.safetensors";
  std::ostringstream sink;
  EXPECT_TRUE(throws_error([&] { cli::train(c, sink); },
                           {"graft train --init-from", "size mismatch for \"5.weight\": copying a param with shape [10, 256] "
                            "from checkpoint, the shape in current model is [3, 256]", c.init_from, "--model mlp"}));
  EXPECT_FALSE(std::filesystem::exists(c.save));  // no epoch ran

  // A key the model does not have (and one it misses): strict.
  impl::GenericDict renamed(AnyType::get(), AnyType::get());
  for (const auto& [key, shape] : kInitFromMlp) renamed.insert("net." + key, init_from_formula(key, shape));
  pickle_save(IValue(renamed), dir / "renamed.pt");
  c.init_from = dir / "renamed.pt";
  EXPECT_TRUE(throws_error([&] { cli::train(c, sink); },
                           {"graft train --init-from", "missing key(s) in state_dict: \"1.weight\"",
                            "unexpected key(s) in state_dict: \"net.1.weight\""}));
}

TEST(InitFrom, TheFlagsChecks) {
  TempDir dir;
  write_bytes(dir / "init.pt", {1, 2, 3});
  TrainConfig c;
  c.init_from = dir / "init.pt";
  c.resume = dir / "run.safetensors";
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"graft train --init-from", "either --init-from or --resume", "pick one"}));
  EXPECT_TRUE(throws_error([&] { cli::validate(c, "graft plan"); }, {"graft plan --init-from"}));
  c.resume.clear();
  EXPECT_NO_THROW(cli::validate(c));
  c.init_from = dir / "absent.pt";
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"graft train --init-from", dir / "absent.pt", "does not exist"}));
  c.init_from = dir.path();
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"graft train --init-from", "is a directory"}));
  // The log must not overwrite the file the run starts from.
  c.init_from = dir / "init.pt";
  c.log = dir / "init.pt";
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--init-from", "--log", "same file"}));
  // A file that is no state dict: graft::load_state_dict's error, under the flag, before training.
  InitFromData data;
  TrainConfig t = init_from_config(data.dir.path());
  t.init_from = dir / "init.pt";
  std::ostringstream sink;
  EXPECT_TRUE(throws_error([&] { cli::train(t, sink); }, {"graft train --init-from", "neither torch.save's format nor a safetensors"}));
}

}  // namespace
}  // namespace graft::test
