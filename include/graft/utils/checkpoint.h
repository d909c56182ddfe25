// Activation checkpointing (gradient checkpointing): keep a segment's inputs instead of its
// activations, and recompute the activations in backward. torch.utils.checkpoint, in C++.
//
//   graft::Tensor h = graft::checkpoint([&](const graft::Tensor& x) { return block->forward(x); }, x);
//   graft::Tensor y = graft::checkpoint([&](const graft::Tensor& a, const graft::Tensor& b) {
//     return graft::tanh(a.matmul(b)); }, a, b);                          // any number of tensors
//   graft::Tensor z = graft::checkpoint([&](const graft::TensorList& in) { return in[0] + in[1]; },
//                                       {a, b});                          // or one TensorList
//   graft::Tensor out = graft::checkpoint_sequential(model, 4, x);         // nn::Sequential in 4 runs
//   graft::Tensor out2 = graft::checkpoint_sequential(model, graft::CheckpointBudget{64 << 20}, x);
//
// What checkpoint(fn, inputs) does (Note [Checkpointing] in src/utils/checkpoint.cpp):
// - forward: runs fn under NoGradGuard, so none of fn's activations are kept; the node
//   "CheckpointBackward0" keeps the inputs (as saved tensors: changing one in place before backward
//   is an error, as for any op) and the default generator's state.
// - backward: restores the generator state, re-runs fn with grad mode on over detached copies of
//   the inputs (autograd::is_checkpoint_recompute() is true meanwhile), puts the generator back,
//   and runs a backward pass of its own through the recomputed graph. Parameters used by fn receive
//   their gradient there, into .grad as usual; the inputs' gradients go back to the outer pass.
//   Dropout masks therefore match the forward's, BatchNorm's running statistics move once, and the
//   default generator ends where it would have without checkpointing.
// - fn must be deterministic given its inputs, the default generator and its modules' state (a
//   recompute whose output shape differs is an error). Forward hooks of modules inside fn run in
//   both passes.
// - Under NoGradGuard / InferenceMode it just returns fn(inputs).
// - Inputs need not require grad: the output of a checkpoint taken in grad mode always requires
//   grad, because fn may use parameters that do (with PyTorch's reentrant checkpoint such
//   parameters silently got no gradient). When the recompute finds nothing that requires grad, no
//   gradient flows. An output of an integer dtype carries no gradient.
// - Works with backward(); with backward(inputs=...) (only the requested leaves are written, inside
//   fn too) and autograd::grad() (no .grad written) as long as what is requested is reached
//   through the checkpoint's inputs. Parameters used inside fn are not edges of the node: grad()
//   with respect to them reports them unused, and backward(inputs=...) naming only them does not
//   run the checkpoint, so they get nothing (PyTorch's reentrant checkpoint refuses both; use plain
//   backward() there). Double backward (create_graph=true) through a checkpoint is refused with a
//   graft::Error.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/tensor.h"

namespace graft {

namespace nn {
class Module;
class SequentialImpl;
class Sequential;
}  // namespace nn

// The type-erased form every checkpoint goes through.
using CheckpointFunction = std::function<Tensor(const TensorList&)>;

// What a checkpoint keeps besides its inputs.
// - kRecomputeAll: nothing; backward recomputes all of fn.
// - kSaveMatmuls: the outputs of fn's linears (graft::linear, so nn::Linear and attention's
//   projections), which the recompute takes back instead of multiplying again; only the cheap
//   element-wise work and attention's core are recomputed (Note [Selective recomputation] in
//   graft/autograd/grad_mode.h). For a Transformer block: about 10 d values a token kept (its input
//   and its four products' outputs) where the plain block keeps about twice that, for a recompute
//   of a few percent of the block's time instead of a third.
enum class CheckpointPolicy { kRecomputeAll, kSaveMatmuls };

// fn(inputs) with its activations recomputed in backward instead of kept. Throws graft::Error for an
// empty fn, an undefined input, or an fn that returns an undefined tensor.
Tensor checkpoint(const CheckpointFunction& fn, const TensorList& inputs,
                  CheckpointPolicy policy = CheckpointPolicy::kRecomputeAll);

// The same with the tensors as separate arguments: checkpoint(fn, a, b) calls fn(a, b).
template <class F, class... Ts>
  requires(sizeof...(Ts) >= 1 && (std::same_as<std::remove_cvref_t<Ts>, Tensor> && ...) &&
           std::is_invocable_r_v<Tensor, F&, const Ts&...>)
Tensor checkpoint(F fn, const Ts&... inputs) {
  return checkpoint(CheckpointFunction([fn = std::move(fn)](const TensorList& in) mutable -> Tensor {
                      return [&]<size_t... I>(std::index_sequence<I...>) -> Tensor {
                        return fn(in[I]...);
                      }(std::index_sequence_for<Ts...>{});
                    }),
                    TensorList{inputs...});
}

// Runs `seq` as `segments` consecutive runs of its modules: every run but the last through
// checkpoint(), the last normally (its activations are needed right away by backward, so
// recomputing them would only cost time), as torch.utils.checkpoint.checkpoint_sequential does.
// The modules are split as evenly as possible, earlier runs taking the extra module when the count
// does not divide; segments == 1 is a plain forward. Throws graft::Error unless
// 1 <= segments <= seq.size(). Under NoGradGuard it is seq.forward(input). The Sequential's own
// hooks do not run (as with .forward()); its entries' hooks do, twice for checkpointed entries.
// `policy` applies to every checkpointed run.
Tensor checkpoint_sequential(nn::SequentialImpl& seq, int64_t segments, const Tensor& input,
                             CheckpointPolicy policy = CheckpointPolicy::kRecomputeAll);
Tensor checkpoint_sequential(const nn::Sequential& seq, int64_t segments, const Tensor& input,
                             CheckpointPolicy policy = CheckpointPolicy::kRecomputeAll);

// ---- choosing the segments from a memory budget ----

// Bytes the forward and backward of checkpoint_sequential may add on top of what is live when it is
// called (parameters, the input and optimiser state are already live; gradients are counted, since
// backward creates them).
struct CheckpointBudget {
  int64_t bytes = 0;
};

// The measurements behind a plan, and the segment count chosen.
//
// Estimate (Note [Checkpoint budget] in src/utils/checkpoint.cpp): one probing forward runs each
// module on its own with grad mode on and measures, with graft::memory::stats(),
//   extra[i]        bytes module i's graph keeps besides its input and output (internal activations);
//   out[i]          bytes of module i's output, when it is a new storage (0 for views and in-place);
//   keeps_in[i]     whether module i's graph holds its input, keeps_out[i] its output.
// A run of modules [a, b) recorded normally keeps
//   act(a, b) = sum extra[a..b) + sum over the boundaries i in [a, b-1) of out[i] if keeps_out[i] or
//               keeps_in[i+1] + out[b-1],
// and the predicted peak of S segments is
//   kept_inputs(S) + max over segments of act(segment) + param_grad_bytes + 4 * max out[i],
// where kept_inputs is the sum of the outputs of the checkpointed runs (the next run's input, held
// by its node), and 4 * max out is an allowance for the backward's working set (a module's incoming
// and outgoing gradient, temporaries, and a simple loss's backward: mean(out^2) takes four outputs'
// worth at the start of backward). Kept inputs are all counted though backward frees them as it
// goes, and the gradients though they appear as activations are freed, so for chains of standard
// layers it is an upper bound: for tanh MLPs 3% to 12% above the measured peak (tests).
struct CheckpointPlan {
  int64_t segments = 1;
  int64_t predicted_peak_bytes = 0;           // for `segments`
  std::vector<int64_t> predicted_by_segments;  // [S - 1]: the prediction for S segments
  std::vector<int64_t> extra, out;
  std::vector<bool> keeps_in, keeps_out;
  int64_t param_grad_bytes = 0;
  std::string str() const;  // one line per S: "S=3 predicted 41.2 MiB"
};

// Measures `seq` on `input` (one probing forward: no gradients, no running-statistics update, the
// default generator left where it was; forward hooks do run) and returns the fewest segments whose
// predicted peak fits the budget. Throws graft::Error when no segment count fits, naming the
// smallest prediction. The plan depends on the input's shape: plan once, then call
// checkpoint_sequential(seq, plan.segments, x) every step.
CheckpointPlan plan_checkpoint_sequential(nn::SequentialImpl& seq, CheckpointBudget budget, const Tensor& input);
CheckpointPlan plan_checkpoint_sequential(const nn::Sequential& seq, CheckpointBudget budget, const Tensor& input);

// plan_checkpoint_sequential + checkpoint_sequential in one call (the probe runs on every call;
// under NoGradGuard there is nothing to plan and it is seq.forward(input)).
Tensor checkpoint_sequential(nn::SequentialImpl& seq, CheckpointBudget budget, const Tensor& input);
Tensor checkpoint_sequential(const nn::Sequential& seq, CheckpointBudget budget, const Tensor& input);

// ---- selective recomputation (Korthikanti et al. 2022) ----

// Checkpoints the attention core (softmax(q k^T / sqrt(d) + mask) v, with its dropout) of every
// nn::MultiheadAttention in `model`, and nothing else: each core keeps only q, k and v (and a float
// mask) and is recomputed in backward, while the projections, layer norms and feed-forward blocks
// keep their activations. enabled = false puts the plain call back.
//
// What it saves depends on the attention path (Note [Memory-efficient attention]): the memory-
// efficient kernel already keeps only O(T d) per head (q, k, v, its output and one log-sum-exp per
// row), so the checkpoint saves the output and the log-sum-exp; the plain path (SDPBackend::kMath,
// need_weights, a float mask that requires grad) keeps the (N, H, L, S) probabilities, and the
// checkpoint removes them: the 5 a s / h term of Korthikanti et al.'s s b h (34 + 5 a s / h) bytes
// per layer. Returns the number of attention modules changed.
int64_t checkpoint_attention(nn::Module& model, bool enabled = true);

}  // namespace graft
