// Activation checkpointing: checkpoint(), checkpoint_sequential() and the budget planner.
//
// Note [Checkpointing]
// A recorded forward keeps every activation its backward formulas need until backward reaches
// them; for a deep network that is most of the training step's memory. checkpoint(fn, inputs)
// keeps only fn's inputs and recomputes the rest when backward gets there:
//
//   forward   out = fn(inputs), saves only measured    -> nothing inside fn is kept for backward
//             node CheckpointBackward0: edges to the inputs, saved inputs, generator state,
//                                       the shape and dtype of each tensor fn's ops saved
//   backward  node.apply(g):
//               detached copies d_i of the inputs (leaves; requires_grad as the originals)
//               generator := saved state; recompute flag on; grad mode on
//               out' = fn(d)                            -> a fresh graph of fn, leaves d_i and
//               generator := where it was                  fn's parameters; its saves compared
//               backward(out', g) on the fresh graph    -> parameters' .grad, d_i.grad
//               return {d_i.grad}                       -> the outer pass carries on to the inputs
//
// Reentrant backward. The inner backward runs inside the outer engine's call of apply(). That is
// safe because everything a pass mutates lives in its own GraphTask (dependency counts, input
// buffers, the ready queue) and the two graphs share no node: the recomputed graph starts at the
// detached copies, so the inner pass cannot reach (or free) outer nodes. The engine's grad mode
// scope is restored when the inner pass returns. The inner pass is the same kind as the outer
// (detail::current_backward_pass()): backward() writes every leaf's .grad, backward(inputs=...)
// only the requested ones, grad() none (it asks the inner pass for the inputs' gradients only).
// create_graph would need the inner gradients to be differentiable functions of the outer
// inputs, which the detached copies cut; it is refused.
//
// RNG replay. Dropout draws its mask from the default generator (graft::rand). The forward saves
// the generator's state before fn runs; the recompute sets that state, so every draw repeats and
// the masks match bit for bit, then sets the generator back to where it was before the recompute.
// Net effect: after forward + backward the generator is where the forward left it, exactly as
// without checkpointing. Generators passed explicitly to ops inside fn are not replayed.
//
// BatchNorm once. In training, BatchNorm's forward updates running_mean/var and
// num_batches_tracked; running it twice would apply the momentum update twice (and count the
// batch twice). is_checkpoint_recompute() is true during the recompute, and BatchNorm skips the
// update then while still normalising with the batch statistics, so the recomputed output (and
// hence every gradient) equals the forward's. The statistics move once, in the forward.
//
// Same saved tensors. The forward runs fn with grad mode on, as the recompute will, under a
// saved-tensor hook (Note [Saved-tensor hooks]) that records each saved tensor's shape and dtype and
// keeps a placeholder instead of the tensor, so the activations are freed as they would be without
// recording (PyTorch's non-reentrant checkpoint does the same). The recompute's saves go through a
// hook that compares them with the forward's, in order, and their number after fn returns: a
// function whose shapes depend on state that changed in between (a counter, a flag, a data-dependent
// size) is an error naming the saved tensor's index and both shapes, as PyTorch raises "Recomputed
// values for the following tensors have different metadata than during the forward pass", instead of
// gradients of another computation.
//
// Memory. The node saves the inputs as SavedTensor (an in-place change before backward is caught
// like for any op); they are released when the node has run. During backward of a chain of
// checkpoints, what is live is the inputs of the checkpoints not yet reached, one segment's
// recomputed graph (freed node by node by the inner pass), the gradients and the engine's
// buffers. checkpoint_sequential runs its last segment normally: backward needs its activations
// first, so recomputing them would cost a forward and save nothing at the peak.
//
// Note [Checkpoint budget]
// plan_checkpoint_sequential measures instead of guessing from shapes: which tensors a module's
// graph keeps depends on its ops (Linear keeps its input, Tanh its output, BatchNorm internal
// statistics), and the allocator's counters are exact. A probing forward runs each module alone,
// grad mode on, on a detached input that requires grad, and reads memory::stats() around it; the
// storage use counts tell whether the module's graph holds its input and its output. In a recorded
// chain, the activation between modules i and i+1 is kept iff module i keeps its output or module
// i+1 keeps its input (Linear -> Tanh: neither, the Linear output is a temporary; Tanh -> Linear:
// both). The formula is in graft/utils/checkpoint.h. The probe runs as a recompute (running
// statistics untouched) and restores the generator, so planning changes no state.
#include "graft/utils/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "graft/engine/engine.h"
#include "graft/autograd/grad_mode.h"
#include "graft/autograd/node.h"
#include "graft/autograd/saved_tensor_hooks.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/generator.h"
#include "graft/core/memory.h"
#include "graft/nn/modules/container.h"
#include "graft/nn/modules/transformer.h"
#include "graft/ops/ops.h"

namespace graft {

namespace {

using autograd::Node;

Generator::State generator_state() {
  Generator& g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.state();
}

void set_generator_state(const Generator::State& st) {
  Generator& g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(st);
}

// Sets the default generator to `replay` for a scope, then back to where it was (exceptions
// included): the draws inside repeat an earlier run's, the stream outside is untouched.
class GeneratorReplay {
 public:
  explicit GeneratorReplay(const Generator::State& replay) : resume_(generator_state()) { set_generator_state(replay); }
  ~GeneratorReplay() { set_generator_state(resume_); }
  GeneratorReplay(const GeneratorReplay&) = delete;
  GeneratorReplay& operator=(const GeneratorReplay&) = delete;

 private:
  Generator::State resume_;
};

// The shape and dtype of a tensor saved for backward (Note [Checkpointing], "Same saved tensors").
struct SavedMeta {
  std::vector<int64_t> sizes;
  DType dtype = kFloat32;
};

SavedMeta saved_meta(const Tensor& t) { return {std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), t.dtype()}; }

std::string describe(const SavedMeta& m) { return "shape " + shape_str(m.sizes) + ", " + dtype_name(m.dtype); }

const char* kSameSavesHint =
    "the checkpointed function must save the same tensors when it is run again in backward: its shapes and "
    "dtypes must not depend on state that changes between the forward and the backward (a counter, a flag, "
    "a global)";

class CheckpointBackward final : public Node {
 public:
  CheckpointBackward(CheckpointFunction fn, const Generator::State& rng, CheckpointPolicy policy)
      : Node("CheckpointBackward0", autograd::ForwardOp::unlisted("checkpoint")), fn_(std::move(fn)), rng_(rng),
        kept_(policy == CheckpointPolicy::kSaveMatmuls ? std::make_shared<autograd::detail::KeptOutputs>() : nullptr) {}

  // The linears' outputs kept by the forward (kSaveMatmuls), or nullptr.
  autograd::detail::KeptOutputs* kept() const { return kept_.get(); }

  TensorList apply(const Tensor& grad_output) override {
    const autograd::detail::BackwardPassInfo* pass = autograd::detail::current_backward_pass();
    GRAFT_CHECK(!(pass && pass->create_graph) && !GradMode::is_enabled(), "checkpoint",
                "a backward pass without create_graph", "create_graph=true (double backward)",
                "a checkpoint's gradient is computed by a backward pass of its own over detached inputs, which is "
                "not differentiable again; call the function without graft::checkpoint for double backward");
    // Detached copies: leaves of the recomputed graph, so the inner pass stops at them.
    TensorList detached(num_inputs());
    TensorList wanted;  // the copies whose gradient the outer pass needs
    for (size_t i = 0; i < num_inputs(); ++i) {
      detached[i] = saved(i).detach();
      if (needs_input_grad(i)) {
        detached[i].requires_grad_(true);
        wanted.push_back(detached[i]);
      }
    }
    Tensor out;
    auto count = std::make_shared<size_t>(0);
    if (kept_) {
      kept_->replay = true;
      kept_->next = 0;
    }
    {
      const autograd::detail::KeptOutputsScope keep(kept_.get());
      GeneratorReplay replay(rng_);
      autograd::CheckpointRecomputeGuard recompute;
      EnableGradGuard grad_on;
      // Each save compared with the forward's, in order (Note [Checkpointing], "Same saved tensors").
      autograd::SavedTensorsHooks compare(
          [this, count](const Tensor& t) {
            const size_t i = (*count)++;
            const SavedMeta now = saved_meta(t);
            GRAFT_CHECK(i < forward_saves_.size(), "checkpoint",
                        "the recompute to save " + std::to_string(forward_saves_.size()) +
                            " tensors for backward, as the forward did",
                        "saved tensor " + std::to_string(i) + " (" + describe(now) + ") beyond them", kSameSavesHint);
            const SavedMeta& then = forward_saves_[i];
            GRAFT_CHECK(now.sizes == then.sizes && now.dtype == then.dtype, "checkpoint",
                        "saved tensor " + std::to_string(i) + " of the recompute to have the forward's metadata (" +
                            describe(then) + ")",
                        describe(now), kSameSavesHint);
            return t;
          },
          [](const Tensor& t) { return t; });
      out = fn_(detached);
    }
    GRAFT_CHECK(!kept_ || kept_->next == kept_->outputs.size(), "checkpoint",
                "the recompute to run the " + std::to_string(kept_ ? kept_->outputs.size() : 0) +
                    " linears the forward ran",
                std::to_string(kept_ ? kept_->next : 0) + " linears", kSameSavesHint);
    GRAFT_CHECK(*count == forward_saves_.size(), "checkpoint",
                "the recompute to save " + std::to_string(forward_saves_.size()) + " tensors for backward, as the "
                "forward did", std::to_string(*count) + " saved tensors", kSameSavesHint);
    // Nothing differentiable came out (fn detached, or uses no parameter and no input needing a
    // gradient): no gradient flows, as it would not without the checkpoint.
    if (!out.defined() || !out.requires_grad()) return {};
    GRAFT_CHECK(out.sizes().equals(grad_output.sizes()), "checkpoint",
                "the recomputed output to have the forward's shape " + shape_str(grad_output.sizes()),
                "shape " + shape_str(out.sizes()),
                "the checkpointed function must compute the same thing when it is run again in backward");

    TensorList result(num_inputs());
    if (pass && !pass->accumulate) {
      // grad(): the inputs' gradients only, no .grad written anywhere.
      if (wanted.empty()) return {};
      TensorList g = autograd::grad({out}, wanted, {grad_output}, std::nullopt, false, /*allow_unused=*/true);
      for (size_t i = 0, k = 0; i < num_inputs(); ++i)
        if (needs_input_grad(i)) result[i] = g[k++];
      return result;
    }
    if (pass && pass->inputs) {
      // backward(inputs=...): the copies, plus the requested leaves that fn may use.
      TensorList targets = wanted;
      targets.insert(targets.end(), pass->inputs->begin(), pass->inputs->end());
      autograd::backward({out}, {grad_output}, std::nullopt, false, targets);
    } else {
      autograd::backward({out}, {grad_output});
    }
    out = Tensor();
    for (size_t i = 0; i < num_inputs(); ++i)
      if (needs_input_grad(i)) result[i] = detached[i].grad();
    return result;
  }

 private:
  CheckpointFunction fn_;
  Generator::State rng_;
  std::shared_ptr<autograd::detail::KeptOutputs> kept_;

 public:
  std::vector<SavedMeta> forward_saves_;  // set by checkpoint_impl after the forward
};

// checkpoint() with a hint: record=false when nothing inside fn can require grad (no input and no
// parameter of a Sequential segment does), so the output needs no node.
Tensor checkpoint_impl(const CheckpointFunction& fn, const TensorList& inputs, bool record, CheckpointPolicy policy) {
  GRAFT_CHECK(static_cast<bool>(fn), "checkpoint", "a function to run", "an empty std::function",
              "pass a callable that takes the input tensors and returns a Tensor");
  for (size_t i = 0; i < inputs.size(); ++i)
    GRAFT_CHECK(inputs[i].defined(), "checkpoint", "defined input tensors",
                "an undefined tensor at input " + std::to_string(i), "pass only defined tensors");
  auto check_output = [](const Tensor& out) {
    GRAFT_CHECK(out.defined(), "checkpoint", "a function that returns a defined Tensor", "an undefined Tensor",
                "return the segment's output from the checkpointed function");
  };
  if (!GradMode::is_enabled() || !record) {
    const autograd::detail::KeptOutputsScope keep_none(nullptr);  // an enclosing checkpoint's are its own
    Tensor out = fn(inputs);
    check_output(out);
    return out;
  }
  auto node = std::make_shared<CheckpointBackward>(fn, generator_state(), policy);
  autograd::collect_edges(*node, inputs);
  // Saved before fn runs: an fn that changes an input in place makes backward fail loudly
  // (the recompute would start from the changed value) instead of silently differ.
  for (const Tensor& t : inputs) node->save(t);
  Tensor out;
  {
    // Grad mode on, as in the recompute; what fn's ops save is measured, and a placeholder kept
    // instead (Note [Checkpointing], "Same saved tensors").
    const Tensor placeholder = empty({0});
    auto saves = std::make_shared<std::vector<SavedMeta>>();
    autograd::SavedTensorsHooks measure(
        [saves, placeholder](const Tensor& t) {
          saves->push_back(saved_meta(t));
          return placeholder;
        },
        [](const Tensor& t) { return t; });
    const autograd::detail::KeptOutputsScope keep(node->kept());
    out = fn(inputs);
    node->forward_saves_ = std::move(*saves);
  }
  check_output(out);
  // fn's graph (placeholders only) goes with the handle fn returned.
  if (!out.is_floating_point()) return out.detach();
  // A new handle: fn may have returned one of its inputs, whose history must stay its own.
  out = out.detach();
  autograd::set_history(out, node);
  return out;
}

// [begin, end) module indices of each segment: as even as possible, earlier segments one longer.
std::vector<std::pair<size_t, size_t>> segment_bounds(size_t n, size_t segments) {
  std::vector<std::pair<size_t, size_t>> b;
  const size_t base = n / segments, rem = n % segments;
  size_t start = 0;
  for (size_t k = 0; k < segments; ++k) {
    const size_t len = base + (k < rem ? 1 : 0);
    b.emplace_back(start, start + len);
    start += len;
  }
  return b;
}

void check_segments(const nn::SequentialImpl& seq, int64_t segments) {
  const int64_t n = static_cast<int64_t>(seq.size());
  GRAFT_CHECK(n >= 1, "checkpoint_sequential", "a Sequential with at least one module", "an empty Sequential",
              "add modules to the Sequential, or call the module directly");
  GRAFT_CHECK(segments >= 1 && segments <= n, "checkpoint_sequential",
              "a segment count between 1 and the number of modules (" + std::to_string(n) + ")",
              "segments = " + std::to_string(segments),
              segments < 1 ? "use 1 for a plain forward" : "each segment needs at least one module");
}

bool segment_may_require_grad(const std::vector<nn::SequentialEntry>& entries, const Tensor& input) {
  if (input.requires_grad()) return true;
  for (const auto& e : entries)
    for (const Tensor& p : e.module()->parameters())
      if (p.requires_grad()) return true;
  return false;
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

Tensor checkpoint(const CheckpointFunction& fn, const TensorList& inputs, CheckpointPolicy policy) {
  return checkpoint_impl(fn, inputs, true, policy);
}

Tensor checkpoint_sequential(nn::SequentialImpl& seq, int64_t segments, const Tensor& input, CheckpointPolicy policy) {
  check_segments(seq, segments);
  GRAFT_CHECK(input.defined(), "checkpoint_sequential", "a defined input", "an undefined tensor", "");
  if (!GradMode::is_enabled()) return seq.forward(input);
  const auto& entries = seq.entries();
  const auto bounds = segment_bounds(entries.size(), static_cast<size_t>(segments));
  Tensor x = input;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    // The segment's entries by value: they own their modules, so the node stays valid even if the
    // Sequential is changed or dropped before backward.
    std::vector<nn::SequentialEntry> run(entries.begin() + static_cast<std::ptrdiff_t>(bounds[k].first),
                                         entries.begin() + static_cast<std::ptrdiff_t>(bounds[k].second));
    const bool record = segment_may_require_grad(run, x);
    x = checkpoint_impl(
        [run = std::move(run)](const TensorList& in) -> Tensor {
          Tensor h = in[0];
          for (const auto& e : run) h = e.forward(h);
          return h;
        },
        {x}, record, policy);
  }
  for (size_t i = bounds.back().first; i < entries.size(); ++i) x = entries[i].forward(x);
  return x;
}

Tensor checkpoint_sequential(const nn::Sequential& seq, int64_t segments, const Tensor& input,
                             CheckpointPolicy policy) {
  GRAFT_CHECK(!seq.is_empty(), "checkpoint_sequential", "a constructed Sequential", "an empty holder (nullptr)",
              "construct the Sequential, e.g. nn::Sequential(nn::Linear(4, 4))");
  return checkpoint_sequential(*seq.ptr(), segments, input, policy);
}

std::string CheckpointPlan::str() const {
  std::string s;
  for (size_t k = 0; k < predicted_by_segments.size(); ++k) {
    s += "S=" + std::to_string(k + 1) + " predicted " + mib(predicted_by_segments[k]);
    if (static_cast<int64_t>(k + 1) == segments) s += "  <- chosen";
    s += "\n";
  }
  return s;
}

CheckpointPlan plan_checkpoint_sequential(nn::SequentialImpl& seq, CheckpointBudget budget, const Tensor& input) {
  const char* op = "plan_checkpoint_sequential";
  GRAFT_CHECK(seq.size() >= 1, op, "a Sequential with at least one module", "an empty Sequential",
              "add modules to the Sequential, or call the module directly");
  GRAFT_CHECK(budget.bytes > 0, op, "a positive byte budget", std::to_string(budget.bytes) + " bytes",
              "pass a budget in bytes > 0, e.g. graft::memory::parse_bytes(\"2GiB\")");
  GRAFT_CHECK(input.defined(), op, "a defined input", "an undefined tensor", "");
  const auto& entries = seq.entries();
  const size_t n = entries.size();
  CheckpointPlan plan;
  plan.extra.assign(n, 0);
  plan.out.assign(n, 0);
  plan.keeps_in.assign(n, false);
  plan.keeps_out.assign(n, false);

  // The probe (Note [Checkpoint budget]): one module at a time, so it needs about one module's
  // activations; no state changes (generator replayed, running statistics untouched).
  {
    GeneratorReplay replay(generator_state());
    autograd::CheckpointRecomputeGuard no_stat_updates;
    EnableGradGuard grad_on;
    Tensor x = input.detach();
    for (size_t i = 0; i < n; ++i) {
      // A non-leaf input, as inside a chain: a leaf's AccumulateGrad would hold the input itself and
      // pass for "the module keeps its input". A view of a detached leaf is one (its node keeps
      // only sizes).
      Tensor xi = x.detach();
      x = Tensor();
      if (xi.is_floating_point()) {
        Tensor leaf = xi.requires_grad_(true);
        xi = leaf.dim() > 0 ? leaf.narrow(0, 0, leaf.size(0)) : leaf.view_as(leaf);
      }
      const long impl_uses = xi.use_count(), storage_uses = xi.impl().storage.use_count();
      const int64_t before = memory::stats().allocated_bytes;
      Tensor y = entries[i].forward(xi);
      const int64_t after = memory::stats().allocated_bytes;
      const bool new_storage = !y.is_alias_of(xi);
      plan.out[i] = new_storage ? static_cast<int64_t>(y.impl().storage->nbytes) : 0;
      plan.extra[i] = std::max<int64_t>(0, after - before - plan.out[i]);
      plan.keeps_in[i] = xi.use_count() > impl_uses || xi.impl().storage.use_count() > storage_uses;
      plan.keeps_out[i] = new_storage && (y.use_count() > 1 || y.impl().storage.use_count() > 1);
      x = y.detach();
    }
  }
  for (const Tensor& p : seq.parameters())
    if (p.requires_grad()) plan.param_grad_bytes += static_cast<int64_t>(p.nbytes());
  // The backward's working set: the incoming and outgoing gradient of a module and temporaries.
  // Four outputs' worth: a mean-of-squares loss's backward allocates that much at the start of
  // backward, when the last segment's activations are all live (measured with memory::history()).
  const int64_t working = 4 * *std::max_element(plan.out.begin(), plan.out.end());

  auto act = [&](size_t a, size_t b) {
    int64_t s = plan.out[b - 1];
    for (size_t i = a; i < b; ++i) s += plan.extra[i];
    for (size_t i = a; i + 1 < b; ++i)
      if (plan.keeps_out[i] || plan.keeps_in[i + 1]) s += plan.out[i];
    return s;
  };
  int64_t best = INT64_MAX, best_s = 1;
  plan.segments = 0;
  for (size_t S = 1; S <= n; ++S) {
    const auto bounds = segment_bounds(n, S);
    int64_t kept = 0, widest = 0;
    for (size_t k = 0; k < S; ++k) {
      if (k + 1 < S) kept += plan.out[bounds[k].second - 1];
      widest = std::max(widest, act(bounds[k].first, bounds[k].second));
    }
    const int64_t predicted = kept + widest + plan.param_grad_bytes + working;
    plan.predicted_by_segments.push_back(predicted);
    if (predicted < best) best = predicted, best_s = static_cast<int64_t>(S);
    if (plan.segments == 0 && predicted <= budget.bytes) plan.segments = static_cast<int64_t>(S);
  }
  GRAFT_CHECK(plan.segments > 0, op, "a budget of at least the smallest predicted peak, " + mib(best) + " (" +
                                         std::to_string(best_s) + " segments)",
              "a budget of " + mib(budget.bytes),
              "raise the budget, or lower the batch size (activations scale with it); predictions:\n" + plan.str());
  plan.predicted_peak_bytes = plan.predicted_by_segments[static_cast<size_t>(plan.segments - 1)];
  return plan;
}

CheckpointPlan plan_checkpoint_sequential(const nn::Sequential& seq, CheckpointBudget budget, const Tensor& input) {
  GRAFT_CHECK(!seq.is_empty(), "plan_checkpoint_sequential", "a constructed Sequential", "an empty holder (nullptr)",
              "construct the Sequential, e.g. nn::Sequential(nn::Linear(4, 4))");
  return plan_checkpoint_sequential(*seq.ptr(), budget, input);
}

Tensor checkpoint_sequential(nn::SequentialImpl& seq, CheckpointBudget budget, const Tensor& input) {
  if (!GradMode::is_enabled()) {
    GRAFT_CHECK(seq.size() >= 1, "checkpoint_sequential", "a Sequential with at least one module",
                "an empty Sequential", "add modules to the Sequential, or call the module directly");
    return seq.forward(input);
  }
  return checkpoint_sequential(seq, plan_checkpoint_sequential(seq, budget, input).segments, input);
}

Tensor checkpoint_sequential(const nn::Sequential& seq, CheckpointBudget budget, const Tensor& input) {
  GRAFT_CHECK(!seq.is_empty(), "checkpoint_sequential", "a constructed Sequential", "an empty holder (nullptr)",
              "construct the Sequential, e.g. nn::Sequential(nn::Linear(4, 4))");
  return checkpoint_sequential(*seq.ptr(), budget, input);
}

int64_t checkpoint_attention(nn::Module& model, bool enabled) {
  int64_t changed = 0;
  for (const auto& m : model.modules()) {
    auto* mha = dynamic_cast<nn::MultiheadAttentionImpl*>(m.get());
    if (!mha) continue;
    ++changed;
    if (!enabled) {
      mha->attention_core = nullptr;
      continue;
    }
    // The mask goes in as an input when it is a float mask that may require grad, so that its
    // gradient flows; a bool mask (or none) is captured.
    mha->attention_core = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double p,
                             bool causal) {
      auto core = [mask, p, causal](const TensorList& in) {
        const Tensor& m = in.size() > 3 ? in[3] : mask;
        return scaled_dot_product_attention(in[0], in[1], in[2], m.defined() ? std::optional<Tensor>(m) : std::nullopt,
                                            p, causal);
      };
      if (mask.defined() && mask.dtype() != kBool) return checkpoint(core, {q, k, v, mask});
      return checkpoint(core, {q, k, v});
    };
  }
  return changed;
}

}  // namespace graft
