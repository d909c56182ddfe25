// What `graft train`, `graft plan` and `graft sample` need to know about a model's job, behind one
// seam: the image task (mlp, cnn on IDX images) and the text task (gpt, lstm on bytes).
//
// Note [Task seam]
// A Task answers everything that differs between the image and the text models: the defaults and
// the flags it accepts, its data, its model, how evaluation batches it, its epoch and result lines,
// the extra flags its checkpoints record, and the input a plan feeds it. task_for() is the one
// place that reads the --model string (task.cpp); everything else asks the Task, so a new model
// is a new entry there and, for a new kind of data, a new Task. The run (train.cpp), the plan
// (plan.cpp) and the checkpoints (run_checkpoint.cpp) never compare the model's name.
#pragma once

#include <graft/graft.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace graft::cli {

struct TrainConfig;  // config.h
struct EpochRecord;  // run_result.h
struct TrainResult;

// A task's data: what training and evaluation read.
struct TaskData {
  std::shared_ptr<const data::Dataset> train, test;
  std::vector<int64_t> example_sizes;  // one example's input: (C, H, W) images, (context) bytes
  int64_t classes = 0;                 // the model's outputs per prediction
  std::string what;                    // "60000 images (10 classes)", for the first line of a run
};

class Task {
 public:
  virtual ~Task() = default;

  // ---- flags ----
  virtual int64_t default_batch_size() const = 0;
  virtual std::string default_optimizer() const = 0;
  virtual int64_t default_epochs() const = 0;
  // The task's own flags, and the other task's refused rather than ignored (graft::Error naming
  // `command`, the flag and the model; Note [Flags a model does not read] in config.cpp).
  virtual void check_flags(const TrainConfig& cfg, const std::string& command) const = 0;
  // True when a batch of one example cannot train (the mlp's batch norm: one value per channel).
  virtual bool needs_two_examples_per_batch(const TrainConfig&) const { return false; }
  // True when the model has attention cores to recompute (--checkpoint-attention).
  virtual bool has_attention() const { return false; }

  // ---- checkpoints (Note [Resumable runs] in train.h) ----
  // The task's shaping flags beyond the common ones, as checkpoint metadata "flag.<name>".
  virtual std::map<std::string, std::string> shape_flags(const TrainConfig&) const { return {}; }
  // Reads them back from a checkpoint's metadata into `cfg` (graft::Error naming `op` and `path`).
  virtual void read_shape_flags(const io::Checkpoint&, const std::string& /*path*/, const std::string& /*op*/,
                                TrainConfig& /*cfg*/) const {}

  // ---- data and model ----
  virtual TaskData load(const TrainConfig& cfg) const = 0;
  // The model for `data` (only its example_sizes and classes are read; graft sample passes none).
  virtual nn::Sequential build_model(const TrainConfig& cfg, const TaskData& data) const = 0;
  // The input dtype of a plan's step (unset: memory::PlanOptions' default, float32).
  virtual std::optional<DType> input_dtype() const { return std::nullopt; }
  // The data set's kind, for graft plan's line: "uint8 images and labels, train and test".
  virtual std::string data_description() const = 0;
  // True when the model continues byte sequences (graft sample).
  virtual bool generates_bytes() const { return false; }

  // ---- evaluation and lines ----
  virtual int64_t eval_chunk() const = 0;  // examples per evaluation batch
  virtual std::string epoch_line(const TrainConfig& cfg, const EpochRecord& r) const = 0;
  virtual std::string result_line(const TrainResult& r) const = 0;
  // The task's fields of graft train --json's object.
  virtual void add_result_fields(const TrainConfig&, const TrainResult&, nlohmann::json&) const {}
  // The hint of the error a non-finite loss is (training or held-out): only flags the model takes.
  virtual std::string divergence_hint(const TrainConfig&) const { return "lower --lr"; }
};

// The names --model takes, in --help's order.
const std::vector<std::string>& model_names();
// The task of --model `model` (Note [Task seam]); graft::Error "graft train --model" for another name.
const Task& task_for(const std::string& model);
// The same, or nullptr for a name no task has.
const Task* find_task(const std::string& model);

// The image task (image_task.cpp) and the text task (text_task.cpp) of each model; task_for's.
enum class ImageNet { kMlp, kCnn };
enum class TextNet { kGpt, kLstm };
std::unique_ptr<Task> make_image_task(ImageNet net);
std::unique_ptr<Task> make_text_task(TextNet net);

}  // namespace graft::cli
