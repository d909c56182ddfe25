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

// Note [Inference tensors]
// As in PyTorch, every tensor allocated while InferenceMode is on is an inference tensor
// (Tensor::is_inference(), set in TensorImpl's constructor); a view or detach() of a tensor is one
// when its base is. Inference tensors skip autograd for good, so three uses are errors once
// InferenceMode is off: requires_grad_(true) (tensor_autograd.cpp), an in-place op (check_inplace
// in src/ops/copy.cpp) and being saved for backward by a recorded op (SavedTensor, node.cpp).
// .clone() outside InferenceMode makes a normal tensor of the same values.
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

namespace detail {
namespace {
thread_local KeptOutputs* current_kept = nullptr;
}  // namespace
KeptOutputs* kept_outputs() { return current_kept; }
KeptOutputsScope::KeptOutputsScope(KeptOutputs* kept) : prev_(current_kept) { current_kept = kept; }
KeptOutputsScope::~KeptOutputsScope() { current_kept = prev_; }
}  // namespace detail
}  // namespace autograd

}  // namespace graft
