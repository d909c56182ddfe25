// The task factory (Note [Task seam] in task.h): the only code that reads the --model string.
#include "task.h"

#include <graft/core/error.h>

namespace graft::cli {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Task> (*make)();
};

// --model's names, in --help's order, and the task each one makes.
const Entry kModels[] = {
    {"mlp", [] { return make_image_task(ImageNet::kMlp); }},
    {"cnn", [] { return make_image_task(ImageNet::kCnn); }},
    {"gpt", [] { return make_text_task(TextNet::kGpt); }},
    {"lstm", [] { return make_text_task(TextNet::kLstm); }},
};
constexpr size_t kNumModels = sizeof(kModels) / sizeof(kModels[0]);

// One task per model, made on first use and kept for the process (tasks hold no state).
const std::vector<std::unique_ptr<Task>>& tasks() {
  static const std::vector<std::unique_ptr<Task>> all = [] {
    std::vector<std::unique_ptr<Task>> v;
    for (const Entry& e : kModels) v.push_back(e.make());
    return v;
  }();
  return all;
}

}  // namespace

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Entry& e : kModels) v.emplace_back(e.name);
    return v;
  }();
  return names;
}

const Task* find_task(const std::string& model) {
  for (size_t i = 0; i < kNumModels; ++i)
    if (model == kModels[i].name) return tasks()[i].get();
  return nullptr;
}

const Task& task_for(const std::string& model) {
  if (const Task* task = find_task(model)) return *task;
  std::string names;
  for (const std::string& n : model_names()) names += (names.empty() ? "" : " | ") + n;
  throw Error("graft train --model", "one of " + names, "'" + model + "'", "see graft train --help");
}

}  // namespace graft::cli
