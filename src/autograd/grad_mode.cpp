// Thread-local autograd modes.
#include "graft/autograd/grad_mode.h"

namespace graft {

namespace {
thread_local bool grad_enabled = true;
thread_local bool inference_enabled = false;
thread_local bool anomaly_enabled = false;
thread_local bool checkpoint_recomputing = false;
}  // namespace

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool e) { grad_enabled = e; }

InferenceMode::InferenceMode(bool enabled) : prev_grad_(grad_enabled), prev_inference_(inference_enabled) {
  inference_enabled = enabled;
  grad_enabled = enabled ? false : prev_grad_;
}
InferenceMode::~InferenceMode() {
  grad_enabled = prev_grad_;
  inference_enabled = prev_inference_;
}
bool InferenceMode::is_enabled() { return inference_enabled; }

namespace autograd {
bool AnomalyMode::is_enabled() { return anomaly_enabled; }
void AnomalyMode::set_enabled(bool e) { anomaly_enabled = e; }

bool is_checkpoint_recompute() { return checkpoint_recomputing; }
CheckpointRecomputeGuard::CheckpointRecomputeGuard() : prev_(checkpoint_recomputing) { checkpoint_recomputing = true; }
CheckpointRecomputeGuard::~CheckpointRecomputeGuard() { checkpoint_recomputing = prev_; }
}  // namespace autograd

}  // namespace graft
