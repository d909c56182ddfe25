// Thread-local autograd switches: NoGradGuard, EnableGradGuard, InferenceMode, DetectAnomalyGuard,
// CheckpointRecomputeGuard.
#pragma once

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

}  // namespace autograd
}  // namespace graft
