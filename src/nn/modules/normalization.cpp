// BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d (the
// others of norm3d.cpp).
#include "graft/nn/modules/normalization.h"

#include "../../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/nn/init.h"
#include "nn/modules/batch_norm_base.h"

namespace graft::nn {

template class BatchNormImplBase<BatchNorm1dImpl>;
template class BatchNormImplBase<BatchNorm2dImpl>;

void BatchNorm1dImpl::check_input_dim(const Tensor& input) const {
  GRAFT_CHECK(input.dim() == 2 || input.dim() == 3, "BatchNorm1d", "a 2-D (N, C) or 3-D (N, C, L) input",
              "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)",
              input.dim() == 4 ? "use BatchNorm2d for (N, C, H, W) inputs" : "");
}

void BatchNorm2dImpl::check_input_dim(const Tensor& input) const {
  GRAFT_CHECK(input.dim() == 4, "BatchNorm2d", "a 4-D (N, C, H, W) input",
              "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)",
              input.dim() == 2 || input.dim() == 3 ? "use BatchNorm1d for (N, C) and (N, C, L) inputs" : "");
}

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) {
  GRAFT_CHECK(!options.normalized_shape().empty(), "LayerNorm", "a non-empty normalized_shape", "[]",
              "pass the trailing dims to normalise, e.g. {hidden_size}");
  for (int64_t s : options.normalized_shape())
    GRAFT_CHECK(s > 0, "LayerNorm", "positive sizes in normalized_shape", shape_str(options.normalized_shape()),
                "pass sizes >= 1");
  reset();
}

void LayerNormImpl::reset() {
  const bool affine = options.elementwise_affine();
  const auto& ns = options.normalized_shape();
  weight = register_parameter("weight", affine ? graft::empty(ns) : Tensor(), affine);
  bias = register_parameter("bias", affine ? graft::empty(ns) : Tensor(), affine);
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (!options.elementwise_affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return functional::layer_norm(
      input, functional::LayerNormFuncOptions(options.normalized_shape()).weight(weight).bias(bias).eps(options.eps()));
}

std::string LayerNormImpl::extra_repr() const {
  // PyTorch prints the shape as a tuple: "(5,)", "(3, 4)".
  const auto& ns = options.normalized_shape();
  std::string s = "(";
  for (size_t i = 0; i < ns.size(); ++i) s += (i ? ", " : "") + std::to_string(ns[i]);
  s += ns.size() == 1 ? ",)" : ")";
  return s + ", eps=" + graft::detail::py_repr(options.eps()) +
         ", elementwise_affine=" + graft::detail::py_bool(options.elementwise_affine());
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_) : options(options_) {
  const int64_t G = options.num_groups(), C = options.num_channels();
  GRAFT_CHECK(G > 0 && C > 0, "GroupNorm", "positive num_groups and num_channels",
              "num_groups " + std::to_string(G) + ", num_channels " + std::to_string(C), "");
  GRAFT_CHECK(C % G == 0, "GroupNorm", "num_channels divisible by num_groups",
              "num_groups " + std::to_string(G) + ", num_channels " + std::to_string(C), "");
  reset();
}

void GroupNormImpl::reset() {
  const bool affine = options.affine();
  const int64_t C = options.num_channels();
  weight = register_parameter("weight", affine ? graft::empty({C}) : Tensor(), affine);
  bias = register_parameter("bias", affine ? graft::empty({C}) : Tensor(), affine);
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  return functional::group_norm(
      input, functional::GroupNormFuncOptions(options.num_groups()).weight(weight).bias(bias).eps(options.eps()));
}

std::string GroupNormImpl::extra_repr() const {
  return std::to_string(options.num_groups()) + ", " + std::to_string(options.num_channels()) +
         ", eps=" + graft::detail::py_repr(options.eps()) + ", affine=" + graft::detail::py_bool(options.affine());
}

template <class Derived, int64_t D>
void InstanceNormImplBase<Derived, D>::reset() {
  detail::register_norm_state(*this, "pass num_features = the input's channel count");
  reset_parameters();
}

template <class Derived, int64_t D>
void InstanceNormImplBase<Derived, D>::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard ng;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

template <class Derived, int64_t D>
void InstanceNormImplBase<Derived, D>::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

template <class Derived, int64_t D>
Tensor InstanceNormImplBase<Derived, D>::forward(const Tensor& input) {
  const std::string shapes = D == 1   ? "a 2-D (C, L) or 3-D (N, C, L) input"
                             : D == 2 ? "a 3-D (C, H, W) or 4-D (N, C, H, W) input"
                                      : "a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input";
  GRAFT_CHECK(input.dim() == D + 1 || input.dim() == D + 2, this->name(), shapes,
              "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(input.dim()) + "-D)",
              input.dim() == D && D > 1 ? "use InstanceNorm" + std::to_string(D - 1) + "d for " + std::to_string(D) +
                                              "-D and " + std::to_string(D + 1) + "-D inputs"
                                        : "");
  const bool unbatched = input.dim() == D + 1;
  // Statistics of the input in training, or whenever there are no running statistics; running
  // statistics are updated in the first run of a checkpointed segment only (as BatchNorm's).
  const bool use_input_stats = this->is_training() || !options.track_running_stats();
  const bool pass_stats = options.track_running_stats() && (!this->is_training() || !autograd::is_checkpoint_recompute());
  const Tensor y = functional::instance_norm(unbatched ? input.unsqueeze(0) : input,
                                             functional::InstanceNormFuncOptions()
                                                 .running_mean(pass_stats ? running_mean : Tensor())
                                                 .running_var(pass_stats ? running_var : Tensor())
                                                 .weight(weight)
                                                 .bias(bias)
                                                 .use_input_stats(use_input_stats)
                                                 .momentum(options.momentum())
                                                 .eps(options.eps()));
  return unbatched ? y.squeeze(0) : y;
}

template <class Derived, int64_t D>
std::string InstanceNormImplBase<Derived, D>::extra_repr() const {
  return std::to_string(options.num_features()) + ", eps=" + graft::detail::py_repr(options.eps()) +
         ", momentum=" + graft::detail::py_repr(options.momentum()) +
         ", affine=" + graft::detail::py_bool(options.affine()) +
         ", track_running_stats=" + graft::detail::py_bool(options.track_running_stats());
}

template class InstanceNormImplBase<InstanceNorm1dImpl, 1>;
template class InstanceNormImplBase<InstanceNorm2dImpl, 2>;
template class InstanceNormImplBase<InstanceNorm3dImpl, 3>;

}  // namespace graft::nn
