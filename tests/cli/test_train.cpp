// `graft train` (apps/graft/train.cpp) on a small synthetic IDX data set the test writes itself:
// learning, resuming bit for bit, the JSON line, progress lines, and errors for bad flags, missing
// data and mismatched checkpoints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <sstream>

#include "../io/temp_dir.h"
#include "../support/test_util.h"
#include "graft/graft.h"
#include "report.h"
#include "train.h"

namespace graft::test {
namespace {

using cli::TrainConfig;

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// Three classes of 12 x 12 images: class k has a bright 4 x 4 square in its own place (k = 0: top
// left, 1: centre, 2: bottom right) on a noisy background, so a small network separates them fully.
void write_split(const TempDir& dir, const std::string& prefix, uint32_t n, uint32_t seed) {
  std::vector<uint8_t> images = {0, 0, 8, 3}, labels = {0, 0, 8, 1};
  put_be32(images, n);
  put_be32(images, 12);
  put_be32(images, 12);
  put_be32(labels, n);
  uint32_t state = seed;
  auto next = [&state] {  // a small LCG: the data does not depend on graft's generator
    state = state * 1664525u + 1013904223u;
    return state >> 24;
  };
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t k = i % 3;
    const uint32_t r0 = 1 + 3 * k, c0 = 1 + 3 * k;
    for (uint32_t r = 0; r < 12; ++r)
      for (uint32_t c = 0; c < 12; ++c) {
        const bool bright = r >= r0 && r < r0 + 4 && c >= c0 && c < c0 + 4;
        images.push_back(static_cast<uint8_t>(bright ? 160 + next() % 96 : next() % 96));
      }
    labels.push_back(static_cast<uint8_t>(k));
  }
  write_bytes(dir / (prefix + "-images-idx3-ubyte"), images);
  write_bytes(dir / (prefix + "-labels-idx1-ubyte"), labels);
}

struct Squares {
  TempDir dir;
  Squares() {
    write_split(dir, "train", 240, 1);
    write_split(dir, "t10k", 60, 2);
  }
};

TrainConfig small_config(const std::string& data_dir) {
  TrainConfig c;
  c.data = data_dir;
  c.batch_size = 16;
  c.epochs = 3;
  c.threads = 1;
  c.progress = "none";
  c.lr = 0.05;
  return c;
}

// Every tensor of a checkpoint, by name.
io::TensorDict model_part(const std::string& file) { return io::load_checkpoint(file).part("model."); }

TEST(Train, MlpAndCnnLearnTheSquares) {
  Squares data;
  for (const char* model : {"mlp", "cnn"}) {
    TrainConfig c = small_config(data.dir.path());
    c.model = model;
    std::ostringstream out;
    const cli::TrainResult r = cli::train(c, out);
    EXPECT_EQ(r.epochs, 3) << model;
    ASSERT_EQ(r.history.size(), 3u) << model;
    EXPECT_GE(r.test_accuracy, 0.95) << model;  // separable data: near 100%
    EXPECT_LT(r.history.back().train_loss, r.history.front().train_loss) << model;
    // parameter counts worked out by hand for 12 x 12 inputs and 3 classes
    const int64_t mlp = (144 * 512 + 512) + (512 * 256 + 256) + (256 * 3 + 3);
    const int64_t cnn = (1 * 32 * 9 + 32) + (32 * 64 * 9 + 64) + (64 * 1 * 1 * 128 + 128) + (128 * 3 + 3);
    EXPECT_EQ(r.parameters, std::string(model) == "mlp" ? mlp : cnn) << model;
    EXPECT_GT(r.peak_memory_bytes, 0);
  }
}

// Note [Resumable runs]: stopping after epoch 1 and resuming gives the uninterrupted run's weights
// exactly, with dropout (random masks) and batch norm (running statistics) in the model.
TEST(Train, ResumeContinuesTheSameRunBitForBit) {
  Squares data;
  TempDir out_dir;
  for (const char* schedule : {"cosine", "step", "plateau"}) {
    TrainConfig c = small_config(data.dir.path());
    c.dropout = 0.3;
    c.batch_norm = true;
    c.schedule = schedule;
    std::ostringstream sink;

    TrainConfig full = c;
    full.save = out_dir / "full.safetensors";
    const cli::TrainResult a = cli::train(full, sink);

    TrainConfig first = c;
    first.save = out_dir / "part.safetensors";
    first.stop_after = 1;
    const cli::TrainResult b1 = cli::train(first, sink);
    EXPECT_EQ(b1.epochs, 1);
    TrainConfig rest = c;
    rest.resume = rest.save = out_dir / "part.safetensors";
    const cli::TrainResult b2 = cli::train(rest, sink);
    EXPECT_EQ(b2.epochs, 3);
    ASSERT_EQ(b2.history.size(), 2u);

    EXPECT_EQ(a.train_loss, b2.train_loss) << schedule;
    EXPECT_EQ(a.test_accuracy, b2.test_accuracy) << schedule;
    const io::TensorDict wa = model_part(full.save), wb = model_part(rest.save);
    ASSERT_EQ(wa.size(), wb.size());
    for (const auto& item : wa) {
      const Tensor* other = wb.find(item.key());
      ASSERT_NE(other, nullptr) << item.key();
      EXPECT_TRUE(equal(item.value(), *other)) << schedule << ": " << item.key() << " differs after resuming";
    }
    // the batch-norm running statistics are in the model part and were compared above
    EXPECT_TRUE(wa.contains("2.running_mean") || wa.contains("3.running_mean") || wa.contains("1.running_mean"));
  }
}

TEST(Train, ResumeWithOtherFlagsIsAnErrorNamingTheFlag) {
  Squares data;
  TempDir out_dir;
  TrainConfig c = small_config(data.dir.path());
  c.epochs = 1;
  c.save = out_dir / "run.safetensors";
  std::ostringstream sink;
  cli::train(c, sink);
  TrainConfig other = c;
  other.resume = c.save;
  other.model = "cnn";
  EXPECT_TRUE(throws_error([&] { cli::train(other, sink); }, {"--resume", "--model mlp", "--model cnn"}));
  TrainConfig not_a_run = small_config(data.dir.path());
  io::save_safetensors(out_dir / "plain.safetensors", std::map<std::string, Tensor>{{"w", zeros({2})}});
  not_a_run.resume = out_dir / "plain.safetensors";
  EXPECT_TRUE(throws_error([&] { cli::train(not_a_run, sink); }, {"--resume", "graft train --save"}));
}

TEST(Train, JsonLineAndProgressLines) {
  Squares data;
  TrainConfig c = small_config(data.dir.path());
  c.epochs = 2;
  c.json = true;
  c.progress = "lines";
  std::ostringstream out;
  const cli::TrainResult r = cli::train(c, out);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 4u);
  int epoch_lines = 0;
  for (const auto& l : lines) epoch_lines += l.rfind("epoch ", 0) == 0;
  EXPECT_EQ(epoch_lines, 2);
  EXPECT_NE(out.str().find("epoch 2/2"), std::string::npos);
  const auto j = nlohmann::json::parse(lines.back());
  for (const char* key : {"test_accuracy", "train_loss", "epochs", "seconds", "peak_memory_bytes"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["test_accuracy"].get<double>(), r.test_accuracy);
  EXPECT_EQ(j["train_loss"].get<double>(), r.train_loss);
  EXPECT_EQ(j["epochs"].get<int64_t>(), 2);
  EXPECT_EQ(j["peak_memory_bytes"].get<int64_t>(), r.peak_memory_bytes);
}

TEST(Train, RunLogHoldsEveryStepAndEpoch) {
  Squares data;
  TempDir out_dir;
  TrainConfig c = small_config(data.dir.path());
  c.epochs = 2;  // 240 images / batch 16 = 15 steps per epoch
  c.log = out_dir / "run.jsonl";
  c.report = out_dir / "report.html";
  c.monitor_every = 5;
  std::ostringstream sink;
  const cli::TrainResult r = cli::train(c, sink);
  int64_t runs = 0, steps = 0, epochs = 0, results = 0, grads = 0, monitors = 0, next_step = 0;
  int64_t memory_records = 0, timelines = 0;
  for (const std::string& line : cli::read_run_log(c.log)) {
    const auto j = nlohmann::json::parse(line);
    const std::string type = j["type"];
    if (type == "run") ++runs;
    if (type == "step") {
      EXPECT_EQ(j["step"].get<int64_t>(), next_step++);
      EXPECT_GT(j["loss"].get<double>(), 0);
      ++steps;
    }
    if (type == "epoch") {
      ++epochs;
      EXPECT_EQ(j["last_step"].get<int64_t>(), 15 * epochs - 1);
      EXPECT_EQ(j["test_accuracy"].get<double>(), r.history[static_cast<size_t>(epochs - 1)].test_accuracy);
    }
    if (type == "grad") {
      EXPECT_EQ(j["step"].get<int64_t>() % 5, 0) << line;
      ++grads;
    }
    monitors += type == "monitor";
    results += type == "result";
    if (type == "memory") {
      ++memory_records;
      // The bytes by category: parameters are what the model holds, by hand.
      const int64_t mlp_params = (144 * 512 + 512) + (512 * 256 + 256) + (256 * 3 + 3);
      EXPECT_EQ(j["peak"]["parameters"].get<int64_t>(), 4 * mlp_params);
      EXPECT_EQ(j["peak"]["optimizer_state"].get<int64_t>(), 4 * mlp_params);  // sgd momentum buffers
      EXPECT_GT(j["peak"]["saved_activations"].get<int64_t>(), 0);
    }
    if (type == "memory_timeline") {
      ++timelines;
      EXPECT_EQ(j["categories"].size(), 6u);  // the five of the step, and the data set (issue 14, item 14)
      ASSERT_GT(j["points"].size(), 10u);
      // The timeline covers the first steps (0 to 3) and its totals are category bytes.
      EXPECT_EQ(j["points"].front()["step"].get<int64_t>(), 0);
      EXPECT_LE(j["points"].back()["step"].get<int64_t>(), 3);
      EXPECT_EQ(j["points"].back()["totals"].size(), 6u);
    }
  }
  EXPECT_EQ(memory_records, 2);  // one per epoch
  EXPECT_EQ(timelines, 1);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(steps, 30);
  EXPECT_EQ(epochs, 2);
  EXPECT_EQ(results, 1);
  EXPECT_EQ(monitors, 1);
  EXPECT_EQ(grads, 6);  // steps 0, 5, ..., 25
  EXPECT_TRUE(std::filesystem::exists(c.report));
}

// `graft plan` predicts the peak of graft train's training steps (peak_train_memory_bytes, measured by
// the allocator) for both models; the budget search returns a batch whose predicted peak fits and
// one more that does not.
TEST(Plan, PredictsTheTrainingStepPeakOfGraftTrain) {
  Squares data;
  for (const char* model : {"mlp", "cnn"}) {
    cli::PlanConfig pc;
    pc.train = small_config(data.dir.path());
    pc.train.model = model;
    pc.train.epochs = 1;
    pc.train.workers = 0;  // no batch prepared ahead: the planned step is the whole story
    pc.json = true;
    std::ostringstream plan_out;
    const cli::PlanResult p = cli::plan(pc, plan_out);
    std::ostringstream train_out;
    const cli::TrainResult r = cli::train(pc.train, train_out);
    const double error = std::abs(static_cast<double>(p.predicted_peak_bytes - r.peak_train_memory_bytes)) /
                         static_cast<double>(r.peak_train_memory_bytes);
    EXPECT_LE(error, 0.10) << model << ": predicted " << p.predicted_peak_bytes << ", measured "
                           << r.peak_train_memory_bytes << "\n" << plan_out.str();
    // The last line is the JSON object.
    std::string last, line;
    std::istringstream lines(plan_out.str());
    while (std::getline(lines, line)) last = line;
    const auto j = nlohmann::json::parse(last);
    EXPECT_EQ(j["predicted_peak_bytes"].get<int64_t>(), p.predicted_peak_bytes);
    for (const char* c : {"parameters", "gradients", "optimizer_state", "saved_activations", "other"})
      EXPECT_TRUE(j["at_peak"].contains(c)) << c;
  }
}

TEST(Plan, BudgetGivesTheLargestBatchAndTheSegmentsThatFit) {
  Squares data;
  cli::PlanConfig pc;
  pc.train = small_config(data.dir.path());
  pc.train.batch_size = 64;
  std::ostringstream out;
  const cli::PlanResult base = cli::plan(pc, out);
  // A budget halfway between the batch-64 and batch-128 peaks.
  cli::PlanConfig big = pc;
  big.train.batch_size = 128;
  std::ostringstream sink;
  const cli::PlanResult p128 = cli::plan(big, sink);
  ASSERT_GT(p128.predicted_peak_bytes, base.predicted_peak_bytes);
  pc.budget = std::to_string((base.predicted_peak_bytes + p128.predicted_peak_bytes) / 2);
  std::ostringstream out2;
  const cli::PlanResult r = cli::plan(pc, out2);
  EXPECT_GT(r.max_batch_size, 64);
  EXPECT_LT(r.max_batch_size, 128);
  cli::PlanConfig at = pc;
  at.budget.clear();
  at.train.batch_size = r.max_batch_size;
  EXPECT_LE(cli::plan(at, sink).predicted_peak_bytes, r.budget_bytes);
  at.train.batch_size = r.max_batch_size + 1;
  EXPECT_GT(cli::plan(at, sink).predicted_peak_bytes, r.budget_bytes);
  EXPECT_NE(out2.str().find("the largest batch that fits is " + std::to_string(r.max_batch_size)), std::string::npos)
      << out2.str();
}

TEST(Train, BadFlagsAndMissingDataAreClearErrors) {
  std::ostringstream sink;
  TrainConfig c;
  c.model = "resnet";
  EXPECT_TRUE(throws_error([&] { cli::train(c, sink); }, {"--model", "mlp | cnn", "resnet"}));
  c = TrainConfig();
  c.batch_size = -1;
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--batch-size", "positive", "-1"}));
  c = TrainConfig();
  c.dropout = 1.0;
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--dropout", "[0, 1)"}));
  // Issue 14, item 5: --lr 0 was silently the optimiser's default (0.05 for sgd).
  c = TrainConfig();
  c.lr = 0.0;
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--lr", "positive"}));
  c = TrainConfig();
  c.stop_after = 1;
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--stop-after", "--save"}));
  TempDir empty;
  c = TrainConfig();
  c.data = empty.path();
  c.progress = "none";
  EXPECT_TRUE(throws_error([&] { cli::train(c, sink); }, {"train-images-idx3-ubyte"}));
}

// Issue 14, items 4 and 5: output paths are checked before any work. Two outputs on one file, or
// an output in a missing directory, used to fail only after the run (or destroy one output).
TEST(Train, OutputPathsAreCheckedBeforeTraining) {
  TempDir dir;
  TrainConfig c;
  c.log = dir / "x";
  c.report = dir / "x";
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--log", "--report", "same file"}));
  c = TrainConfig();
  c.log = dir / "x";
  c.save = dir.path() + "/../" + std::filesystem::path(dir.path()).filename().string() + "/x";
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--save", "--log", "same file"}));
  c = TrainConfig();
  c.report = dir / "missing/report.html";
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--report", "missing", "does not exist"}));
  c = TrainConfig();
  c.save = dir / "missing/ck.safetensors";
  EXPECT_TRUE(throws_error([&] { cli::validate(c); }, {"--save", "missing"}));
  // --resume may name --save's own file (a run continues its checkpoint).
  c = TrainConfig();
  c.save = dir / "ck.safetensors";
  c.resume = dir / "ck.safetensors";
  EXPECT_NO_THROW(cli::validate(c));
  EXPECT_TRUE(dir.files().empty());  // nothing was written by the checks
}

// Issue 14, item 14: the data set is held as uint8 bytes and counted as its own category, "data":
// the Squares set is 240 + 60 images of 12 x 12 bytes and as many int64 labels, by hand.
constexpr int64_t kSquaresDataBytes = (240 + 60) * 12 * 12 + (240 + 60) * 8;

TEST(Train, TheDataSetIsItsOwnMemoryCategoryInTheResultTheTableAndTheLog) {
  Squares data;
  TempDir out_dir;
  TrainConfig c = small_config(data.dir.path());
  c.epochs = 1;
  c.log = out_dir / "run.jsonl";
  c.progress = "lines";  // prints the memory table at the end
  std::ostringstream out;
  const cli::TrainResult r = cli::train(c, out);
  EXPECT_EQ(r.peak_memory_by_category.at("data"), kSquaresDataBytes);
  // The reported peaks hold the data set (the run's from the loading on; the steps' too).
  const int64_t model_bytes = 4 * ((144 * 512 + 512) + (512 * 256 + 256) + (256 * 3 + 3));
  EXPECT_GE(r.peak_memory_bytes, kSquaresDataBytes + 3 * model_bytes);  // + parameters, gradients, momentum
  EXPECT_GE(r.peak_train_memory_bytes, kSquaresDataBytes + 3 * model_bytes);
  // The memory table at the end has a line for it.
  const std::string text = out.str();
  EXPECT_NE(text.find("\n  data "), std::string::npos) << text;
  int64_t records = 0;
  for (const std::string& line : cli::read_run_log(c.log)) {
    const auto j = nlohmann::json::parse(line);
    if (j["type"] == "memory") {
      ++records;
      EXPECT_EQ(j["current"]["data"].get<int64_t>(), kSquaresDataBytes);
      EXPECT_EQ(j["peak"]["data"].get<int64_t>(), kSquaresDataBytes);
    }
    if (j["type"] == "memory_timeline") {
      EXPECT_EQ(j["categories"].back(), "data");
      EXPECT_EQ(j["points"].front()["totals"].back().get<int64_t>(), kSquaresDataBytes);
    }
  }
  EXPECT_EQ(records, 1);
  EXPECT_EQ(memory::stats()[memory::Category::Data].current_bytes, 0);  // freed with the run
}

TEST(Plan, CountsTheDataSetAsItsOwnLineOfThePeak) {
  Squares data;
  cli::PlanConfig pc;
  pc.train = small_config(data.dir.path());
  pc.json = true;
  std::ostringstream out;
  const cli::PlanResult p = cli::plan(pc, out);
  EXPECT_EQ(p.data_bytes, kSquaresDataBytes);
  std::string last, line;
  std::istringstream lines(out.str());
  while (std::getline(lines, line)) last = line;
  const auto j = nlohmann::json::parse(last);
  EXPECT_EQ(j["at_peak"]["data"].get<int64_t>(), kSquaresDataBytes);
  EXPECT_EQ(j["data_bytes"].get<int64_t>(), kSquaresDataBytes);
  // The predicted peak is the step's own lines plus the data set's bytes.
  int64_t step_lines = 0;
  for (const auto& [name, bytes] : j["at_peak"].items())
    if (name != "data") step_lines += bytes.get<int64_t>();
  EXPECT_EQ(p.predicted_peak_bytes, step_lines + kSquaresDataBytes);
  EXPECT_GE(p.predicted_peak_bytes, p.loading_peak_bytes);
  EXPECT_GE(p.loading_peak_bytes, kSquaresDataBytes);
  EXPECT_NE(out.str().find("\n  data "), std::string::npos) << out.str();
  // A budget below what loading needs fits no batch at all.
  pc.budget = std::to_string(kSquaresDataBytes - 1);
  pc.json = false;
  std::ostringstream small;
  const cli::PlanResult none = cli::plan(pc, small);
  EXPECT_EQ(none.max_batch_size, 0);
  EXPECT_NE(small.str().find("does not fit"), std::string::npos) << small.str();
}

TEST(Train, TrainLimitKeepsOnlyTheFirstImagesAsData) {
  Squares data;
  TrainConfig c = small_config(data.dir.path());
  c.epochs = 1;
  c.train_limit = 100;
  std::ostringstream out;
  const cli::TrainResult r = cli::train(c, out);
  // During the run: 100 training images and the 60 test images, with their labels; the full
  // training set read first is gone.
  EXPECT_EQ(r.peak_memory_by_category.at("data"), (100 + 60) * (144 + 8));  // the last epoch's peaks
  EXPECT_GE(r.peak_memory_bytes, (240 + 100 + 60) * (144 + 8));  // loading held all three at once
  cli::PlanConfig pc;
  pc.train = c;
  std::ostringstream sink;
  EXPECT_EQ(cli::plan(pc, sink).data_bytes, (100 + 60) * (144 + 8));
}

}  // namespace
}  // namespace graft::test
