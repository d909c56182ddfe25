// Thread-local autograd switches: NoGradGuard, EnableGradGuard, InferenceMode, DetectAnomalyGuard,
// CheckpointRecomputeGuard.
#pragma once

#include <vector>

#include "graft/core/tensor.h"

namespace graft {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// RAII: sets grad mode for the current thread and restores the previous mode on exit.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

// Records nothing: ops inside run without building a graph (inference, optimiser updates).
class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

// Re-enables recording inside a NoGradGuard.
class EnableGradGuard : public AutoGradMode {
 public:
  EnableGradGuard() : AutoGradMode(true) {}
};

// Inference: no graph, and in-place writes skip version-counter bookkeeping for tensors made here.
// graft treats it as NoGradGuard plus a flag ops may consult (InferenceMode::is_enabled()).
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  bool prev_grad_, prev_inference_;
};

namespace autograd {

// LibTorch's torch::autograd::InferenceMode (torch/csrc/autograd/InferenceMode.h) is c10's.
using InferenceMode = ::graft::InferenceMode;

// Anomaly mode: the engine checks every gradient a backward node produces and raises a
// graft::Error naming the node and its forward op at the first NaN or Inf.
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

// True while a checkpoint recomputes its segment in backward (and during a plan's probe) on this
// thread. Modules with state that forward updates (BatchNorm's running statistics) check it so
// that the update happens once.
bool is_checkpoint_recompute();

// Sets is_checkpoint_recompute() for a scope (restores the previous value after).
class CheckpointRecomputeGuard {
 public:
  CheckpointRecomputeGuard();
  ~CheckpointRecomputeGuard();
  CheckpointRecomputeGuard(const CheckpointRecomputeGuard&) = delete;
  CheckpointRecomputeGuard& operator=(const CheckpointRecomputeGuard&) = delete;

 private:
  bool prev_;
};

namespace detail {
// Note [Selective recomputation]
// A checkpoint taken with CheckpointPolicy::kSaveMatmuls (graft/utils/checkpoint.h) keeps the
// outputs of its matrix products (graft::linear) instead of recomputing them: while its forward
// runs, each linear's output is appended to the checkpoint's KeptOutputs; while its recompute runs,
// each linear takes the next kept output instead of multiplying again (the same linears run in the
// same order: a count or shape that differs is an error). In both passes the linear's node is
// LinearBackward0 (saves x and W; gx = g W, gW = g^T x, gb = sum of g over the rows), so the two
// passes save the same tensors. What is recomputed is then only the cheap element-wise work
// (layer norms, activations, residual adds, dropout) and attention's core, as the selective
// policies of PyTorch's activation checkpointing and Korthikanti et al. (2022) do; what is kept
// per Transformer block is its input and its four products' outputs.
struct KeptOutputs {
  std::vector<Tensor> outputs;
  size_t next = 0;      // the next output a recompute takes
  bool replay = false;  // false: the forward, appending; true: the recompute, taking
};
// The running checkpoint's kept outputs on this thread, or nullptr (the policy keeps nothing, or no
// checkpoint runs). A checkpoint inside a selective one keeps its own (or none).
KeptOutputs* kept_outputs();
class KeptOutputsScope {
 public:
  explicit KeptOutputsScope(KeptOutputs* kept);
  ~KeptOutputsScope();
  KeptOutputsScope(const KeptOutputsScope&) = delete;
  KeptOutputsScope& operator=(const KeptOutputsScope&) = delete;

 private:
  KeptOutputs* prev_;
};
}  // namespace detail

}  // namespace autograd
}  // namespace graft
