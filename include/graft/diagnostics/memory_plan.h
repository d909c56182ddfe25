// graft::memory::plan: a training step's peak memory and its breakdown by category, predicted before
// the run, for any batch size, and the largest batch that fits a budget.
//
//   auto p = graft::memory::plan(*model, {128, 1, 28, 28}, optimizer.get());
//   std::cout << p.table();                                  // peak and breakdown at batch 128
//   int64_t b = p.max_batch_size(graft::memory::parse_bytes("2GiB"));
//
// Note [Memory planner]
// A training step of a given program makes the same allocations in the same order at every batch
// size; only their sizes change, and each size is an affine function of the batch size B (a weight:
// constant; an activation: proportional to B). So are the live bytes of every category after every
// allocation event. The planner runs the step (zero_grad, forward, loss, backward, optimiser step)
// at two tiny batch sizes with the memory history on (a few kilobytes of tensor data instead of the
// real step's megabytes: the "shape-only run" of a planner, done by running the program small), and
// pairs the two event sequences: event i is live_i(B) = a_i + b_i B per category. The peak at any B
// is max_i of the sum over categories, the breakdown is that event's totals, and the largest batch
// under a budget is min over events of (budget - a_i) / b_i. This is exact, not an estimate, for
// every event sequence that does not depend on the data (MLPs, CNNs, checkpointing); when the two
// sequences differ in length the planner says so and falls back to extrapolating the peaks.
// Tensors the step does not make (the dataset, a prefetched batch) count as they are when plan() is
// called. The model, its gradients, the optimiser's state and the default generator are restored
// afterwards. Two steps are planned, the higher peak counting: the first (the optimiser's state
// created inside it, as in a run's first step) and a steady one (after a warm-up step).
// What it cannot see: memory outside graft's allocator (OpenBLAS's buffers, the program itself).
//
// Note [Planning on shapes alone]
// Given a model whose parameters are meta tensors (built under DefaultDeviceGuard(kMeta), or moved
// with module->to(kMeta)), the same steps run on the meta device (docs/meta.md): every op's shape
// rule, autograd recording and memory accounting, and no kernel, so planning a model of billions
// of parameters allocates nothing of it and takes the time of a few thousand op calls. The events
// paired are then the meta device's (its own counters and history), the probes run at the planned
// batch size and twice it (the plan is exact at the size asked, whatever a kernel does at small
// sizes), and Plan::predicted_peak_rounded_bytes adds the caching allocator's block rounding. The
// CPU's counters, limit and history are untouched. Tensors the caller keeps live on meta while
// planning (a data loader's batches in flight) count, as live CPU tensors count in a CPU plan.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graft/core/memory.h"
#include "graft/core/tensor.h"

namespace graft::nn {
class Module;
}
namespace graft::optim {
class Optimizer;
}

namespace graft::memory {

struct PlanOptions {
  // The loss of the planned step: "cross_entropy" (integer targets below the output's last size) or
  // "mse" (targets shaped like the output).
  std::string loss = "cross_entropy";
  // The forward to plan; null: model.forward(x) through the module's call (e.g. a lambda running
  // checkpoint_sequential(model, segments, x) plans checkpointing).
  std::function<Tensor(const Tensor&)> forward = nullptr;
  // The whole step to plan, in place of the planner's own (forward, loss, zero_grad, backward,
  // optimiser step), given the input batch: e.g. a training loop's step, which keeps the logits for
  // its accuracy. Null: the planner's step with `forward` and `loss`.
  std::function<void(const Tensor&)> step = nullptr;
  // The two small batch sizes the step runs at on the CPU (>= 2 for batch norm); on meta the step
  // runs at the planned size and twice it.
  int64_t probe_batch_a = 2, probe_batch_b = 4;
  // The input's dtype: floating point inputs are randn, integer ones zeros (token 0 for an
  // nn::Embedding). cross_entropy's targets are one zero per row of the output, so a model may
  // return (batch x positions, classes) logits.
  DType input_dtype = kFloat32;
};

struct Plan {
  int64_t batch_size = 0;
  int64_t predicted_peak_bytes = 0;             // the most live tensor bytes during the step
  // On meta (Note [Planning on shapes alone]): the peak of the caching allocator's blocks at the
  // planned batch size (each storage rounded up to its size class); 0 for a CPU plan.
  int64_t predicted_peak_rounded_bytes = 0;
  std::array<int64_t, kNumCategories> at_peak{};        // the breakdown at that moment
  std::array<int64_t, kNumCategories> category_peak{};  // each category's own peak in the step
  std::string peak_op;                          // the op allocating when the peak is reached
  int64_t baseline_bytes = 0;                   // live before the step (the model, data, ...)
  bool exact = true;                            // false: the two probes differed (see the Note)

  // The prediction at another batch size, and the largest batch whose peak is <= budget_bytes (0 if
  // none fits).
  Plan at_batch_size(int64_t batch_size) const;
  int64_t max_batch_size(int64_t budget_bytes) const;
  // A readable table: the peak, its breakdown and each category's own peak.
  std::string table() const;
  // {"batch_size", "predicted_peak_bytes", "at_peak": {category: bytes}, "category_peak": {...},
  //  "peak_op", "baseline_bytes", "exact"}
  std::string json() const;

  // Per event and category: live bytes = intercept + slope * batch size.
  struct Line {
    std::array<double, kNumCategories> intercept{}, slope{};
    const char* op = nullptr;
  };
  std::vector<Line> lines;
};

// Plans one training step of `model` on inputs of `input_shape` (its first size is the batch size)
// with `optimizer` (may be null: no optimiser step, no state). A model on meta is planned on shapes
// alone (Note [Planning on shapes alone]).
Plan plan(nn::Module& model, IntArrayRef input_shape, optim::Optimizer* optimizer, const PlanOptions& options = {});

}  // namespace graft::memory
