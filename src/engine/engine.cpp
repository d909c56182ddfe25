// The backward engine: iterative, dependency-counted, latest node first, frees as it goes.
//
// Note [Engine walk]
// 1. Discover the graph from the roots with an explicit stack (no recursion: a 100,000-op chain
//    must not overflow), counting for each node how many edges point at it.
// 2. When inputs are given (grad(), or backward(inputs=...)), mark the nodes that lead to them;
//    only those run.
// 3. A node is ready when every edge into it has delivered its gradient. Ready nodes run highest
//    sequence number first (the most recent forward op first), which frees memory soonest.
// 4. After a node runs its saved tensors are released (unless retain_graph), its input buffer is
//    dropped, and each returned gradient is validated and summed into the buffer of the next node.
//
// Note [The engine validates gradients]
// Backward formulas may return a gradient in the broadcast shape of the output; the engine sums it
// down to the input's shape (in ONE place, here), casts it to the input's dtype, and rejects a shape
// that cannot be summed down, naming the node and the input index.
#include "graft/engine/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "../autograd/composite_backward.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "graft/core/torch_check.h"
#include "graft/ops/ops.h"

namespace graft::autograd {

namespace {

// The pass running on this thread (detail::current_backward_pass()). A node's apply() may start a
// pass of its own (reentrant backward: each pass has its own GraphTask, so they do not interfere);
// the scope restores the outer pass's info when the inner one ends, exceptions included.
thread_local const detail::BackwardPassInfo* current_pass = nullptr;

class PassScope {
 public:
  explicit PassScope(const detail::BackwardPassInfo* info) : prev_(current_pass) { current_pass = info; }
  ~PassScope() { current_pass = prev_; }
  PassScope(const PassScope&) = delete;
  PassScope& operator=(const PassScope&) = delete;

 private:
  const detail::BackwardPassInfo* prev_;
};

// queue_callback(): the callbacks of the outermost pass on this thread, run when it ends (null
// outside a pass). Passes started inside a node (checkpointing) queue onto the outermost one, so a
// callback sees every leaf of the user's backward() written.
thread_local std::vector<std::function<void()>>* final_callbacks = nullptr;

struct NodeHash {
  size_t operator()(const Node* n) const { return std::hash<const void*>()(n); }
};

struct ReadyCmp {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

bool has_non_finite(const Tensor& t) {
  if (!t.defined() || !t.is_floating_point()) return false;
  NoGradGuard ng;
  return logical_not(isfinite(t)).sum().item<int64_t>() > 0;
}

Tensor validate_gradient(Node& node, size_t i, Tensor g) {
  const InputMeta& m = node.input_meta[i];
  if (!g.sizes().equals(m.sizes)) {
    // Sum down a broadcast gradient; anything else is a bug in the formula.
    bool ok = g.dim() >= static_cast<int64_t>(m.sizes.size());
    const size_t lead = ok ? static_cast<size_t>(g.dim()) - m.sizes.size() : 0;
    for (size_t d = 0; ok && d < m.sizes.size(); ++d) {
      const int64_t gs = g.size(static_cast<int64_t>(d + lead));
      ok = gs == m.sizes[d] || m.sizes[d] == 1;
    }
    GRAFT_CHECK(ok, node.name(),
                "a gradient at index " + std::to_string(i) + " of a shape compatible with " + shape_str(m.sizes),
                "a gradient of shape " + shape_str(g.sizes()) + ", which does not match the expected shape",
                "a backward formula returned a wrongly shaped gradient (a bug in that op)");
    g = sum_to(g, m.sizes);
  }
  if (g.dtype() != m.dtype && is_floating_point(m.dtype)) g = g.to(m.dtype);
  return g;
}

struct GraphTask {
  bool keep_graph = false;
  bool create_graph = false;
  bool accumulate = true;  // false for grad(): leaves' .grad untouched
  std::unordered_map<Node*, int, NodeHash> deps;
  std::unordered_map<Node*, Tensor, NodeHash> buffers;
  // Nodes that lead to a requested input (empty: run everything).
  std::unordered_set<Node*, NodeHash> needed;
  std::unordered_set<Node*, NodeHash> targets;
  bool filter = false;
  // grad(): where to capture gradients (node -> indices into `captured`).
  std::unordered_map<Node*, std::vector<size_t>, NodeHash> capture;
  TensorList captured;
};

void accumulate_into(GraphTask& task, Node* node, Tensor g) {
  auto it = task.buffers.find(node);
  if (it == task.buffers.end() || !it->second.defined()) {
    task.buffers[node] = std::move(g);
    return;
  }
  Tensor& buf = it->second;
  if (!task.create_graph && buf.use_count() == 1 && buf.impl().storage.use_count() == 1 && buf.is_contiguous() &&
      buf.dtype() == g.dtype() && buf.sizes().equals(g.sizes())) {
    NoGradGuard ng;
    buf.add_(g);
  } else {
    buf = buf + g;
  }
}

// Steps 1 and 2 of Note [Engine walk].
void discover(GraphTask& task, const std::vector<Node*>& roots, const std::unordered_set<Node*, NodeHash>& targets) {
  std::vector<Node*> stack(roots.begin(), roots.end());
  std::unordered_set<Node*, NodeHash> seen(roots.begin(), roots.end());
  std::vector<Node*> order;  // discovery order, for the needed-set pass
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (auto& e : n->next_edges) {
      if (!e.fn) continue;
      Node* c = e.fn.get();
      task.deps[c] += 1;
      if (seen.insert(c).second) stack.push_back(c);
    }
  }
  if (!task.filter) return;
  // A node is needed if it is a target or has an edge to a needed node. Iterate to a fixed point in
  // reverse discovery order (children tend to come later), which converges in a few sweeps.
  task.needed = targets;
  task.targets = targets;
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* n = *it;
      if (task.needed.count(n)) continue;
      for (auto& e : n->next_edges) {
        if (e.fn && task.needed.count(e.fn.get())) {
          task.needed.insert(n);
          changed = true;
          break;
        }
      }
    }
  }
}

Tensor run_pre_hooks(Node& node, Tensor g) {
  for (auto& [id, hook] : node.pre_hooks()) {
    Tensor r = hook(g);
    if (r.defined()) g = r;
  }
  if (node.retain_grad_hook) node.retain_grad_hook(g);
  return g;
}

Tensor run_leaf_hooks(const Tensor& leaf, Tensor g) {
  if (!leaf.impl().autograd) return g;
  for (auto& [id, hook] : leaf.impl().autograd->hooks) {
    Tensor r = hook(g);
    if (r.defined()) g = r;
  }
  return g;
}

// With inputs given, a node runs only if it passes gradient on towards a requested input; an
// AccumulateGrad runs only for backward(inputs=...) on a requested leaf, never for grad().
bool should_run(const GraphTask& task, Node* node) {
  if (!task.filter) return true;
  if (node->is_accumulate_grad()) return task.accumulate && task.targets.count(node);
  for (auto& e : node->next_edges)
    if (e.fn && task.needed.count(e.fn.get())) return true;
  return false;
}

void execute(GraphTask& task, const std::vector<std::pair<Node*, Tensor>>& roots) {
  std::priority_queue<Node*, std::vector<Node*>, ReadyCmp> ready;
  for (auto& [node, g] : roots) accumulate_into(task, node, g);
  for (auto& [node, g] : roots)
    if (task.deps[node] == 0) ready.push(node);  // duplicates are handled by the buffer lookup below

  AutoGradMode mode(task.create_graph);
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    auto bit = task.buffers.find(node);
    if (bit == task.buffers.end()) continue;  // already run (a root listed twice)
    Tensor g = std::move(bit->second);
    task.buffers.erase(bit);

    if (g.defined() && !node->is_accumulate_grad()) g = run_pre_hooks(*node, std::move(g));
    if (auto cit = task.capture.find(node); cit != task.capture.end()) {
      for (size_t idx : cit->second) {
        Tensor cg = g;
        if (node->is_accumulate_grad() && cg.defined())
          cg = run_leaf_hooks(Tensor(static_cast<AccumulateGrad*>(node)->leaf()), cg);
        task.captured[idx] = cg;
      }
    }
    const bool run = should_run(task, node);
    TensorList outs;
    if (run && g.defined()) {
      memory::OpScope op_scope(node->name_c_str());  // allocations are the node's (OOM report, history)
      // On a meta gradient the formula's temporaries are meta too (Note [Meta device]).
      const graft::detail::MetaOpScope meta_scope(node->name_c_str(), {&g});
      outs = node->apply(g);
      if (!task.keep_graph) node->release_saved();
      GRAFT_ASSERT(outs.empty() || outs.size() == node->num_inputs(),
                   std::string(node->name()) + " returned " + std::to_string(outs.size()) + " gradients for " +
                       std::to_string(node->num_inputs()) + " inputs");
    }
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      Node* child = node->next_edges[i].fn.get();
      if (!child) continue;
      if (task.filter && !task.needed.count(child)) continue;
      if (i < outs.size() && outs[i].defined()) {
        Tensor gi = validate_gradient(*node, i, std::move(outs[i]));
        if (AnomalyMode::is_enabled() && has_non_finite(gi)) {
          throw Error(node->name(),
                      "returned NaN or Inf values in its gradient for input " + std::to_string(i) +
                          " (the backward of the forward op '" + node->forward_op_name() +
                          "'). Hint: check that op's inputs for values outside its domain (log of 0, "
                          "sqrt of a negative, division by 0) or for overflow");
        }
        accumulate_into(task, child, std::move(gi));
      } else if (!task.buffers.count(child)) {
        task.buffers[child] = Tensor();  // keep a slot so the child still runs (with nothing)
      }
      if (--task.deps[child] == 0) ready.push(child);
    }
  }
}

std::pair<std::vector<std::pair<Node*, Tensor>>, std::vector<std::shared_ptr<Node>>> make_roots(
    const TensorList& outputs, const TensorList& grad_outputs, const char* op) {
  GRAFT_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), op,
              std::to_string(outputs.size()) + " grad_outputs (one per output)",
              std::to_string(grad_outputs.size()), "pass one gradient per output, or none for scalar outputs");
  std::vector<std::pair<Node*, Tensor>> roots;
  std::vector<std::shared_ptr<Node>> keep;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    GRAFT_CHECK(out.defined() && out.requires_grad(), op, "outputs that require grad",
                "element " + std::to_string(i) + " of tensors does not require grad and does not have a grad_fn",
                "make sure a leaf in the computation has requires_grad=true and that the forward did not run "
                "under NoGradGuard or on .detach()ed tensors");
    Tensor g = i < grad_outputs.size() ? grad_outputs[i] : Tensor();
    if (!g.defined()) {
      GRAFT_CHECK(out.numel() == 1, op, "a scalar output when no gradient is given",
                  "an output of shape " + shape_str(out.sizes()),
                  "grad can be implicitly created only for scalar outputs: pass a gradient of the output's "
                  "shape, e.g. backward(graft::ones_like(y)), or reduce it with .sum() first");
      g = ones_like(out);
    } else {
      GRAFT_CHECK(g.sizes().equals(out.sizes()), op, "a gradient of the output's shape " + shape_str(out.sizes()),
                  shape_str(g.sizes()), "reshape the gradient to the output's shape, e.g. graft::ones_like(y)");
    }
    Edge e = gradient_edge(out);
    roots.emplace_back(e.fn.get(), g);
    keep.push_back(e.fn);
  }
  return {roots, keep};
}

// What backward() and grad() share: the roots from the outputs (checked first), the pass's
// options, the targets the caller adds (each target's node, also kept alive through `keep`),
// discovery (steps 1 and 2 of Note [Engine walk]) and the walk itself.
template <class AddTargets>
void run_graph_task(GraphTask& task, const char* op, const TensorList& outputs, const TensorList& grad_outputs,
                    std::optional<bool> retain_graph, bool create_graph, const detail::BackwardPassInfo& info,
                    AddTargets&& add_targets) {
  auto [roots, keep] = make_roots(outputs, grad_outputs, op);
  task.keep_graph = retain_graph.value_or(create_graph);
  task.create_graph = create_graph;
  std::unordered_set<Node*, NodeHash> targets;
  add_targets(targets, keep);
  std::vector<Node*> root_nodes;
  for (auto& r : roots) root_nodes.push_back(r.first);
  discover(task, root_nodes, targets);
  if (final_callbacks) {  // a pass inside a node of an outer pass
    PassScope scope(&info);
    execute(task, roots);
    return;
  }
  std::vector<std::function<void()>> callbacks;
  struct Owner {
    ~Owner() { final_callbacks = nullptr; }
  } owner;
  final_callbacks = &callbacks;
  {
    PassScope scope(&info);
    execute(task, roots);
  }
  // Callbacks may queue more; an index, since push_back may move the elements.
  for (size_t i = 0; i < callbacks.size(); ++i) {
    auto cb = std::move(callbacks[i]);
    cb();
  }
}

}  // namespace

const detail::BackwardPassInfo* detail::current_backward_pass() { return current_pass; }

void queue_callback(std::function<void()> callback) {
  GRAFT_CHECK(final_callbacks != nullptr, "queue_callback", "to be called during a backward pass",
              "a call outside backward()", "queue callbacks from a hook that runs during backward");
  final_callbacks->push_back(std::move(callback));
}

void backward(const TensorList& outputs, const TensorList& grad_outputs, std::optional<bool> retain_graph,
              bool create_graph, const TensorList& inputs) {
  // As PyTorch (once per process, or every time under Warning::WarnAlways): each leaf's .grad then
  // holds a graph that refers back to the leaf, a cycle that keeps both alive.
  if (create_graph && inputs.empty())
    GRAFT_TORCH_WARN_ONCE("Using backward() with create_graph=True will create a reference cycle between each leaf "
                          "and its .grad, which can leak memory. Prefer autograd::grad(); or, after use, reset the "
                          "leaves' .grad to an undefined Tensor to break the cycle.");
  GraphTask task;
  const detail::BackwardPassInfo info{create_graph, true, inputs.empty() ? nullptr : &inputs};
  run_graph_task(task, "backward", outputs, grad_outputs, retain_graph, create_graph, info,
                 [&](std::unordered_set<Node*, NodeHash>& targets, std::vector<std::shared_ptr<Node>>& keep) {
                   if (inputs.empty()) return;
                   task.filter = true;
                   task.captured.resize(inputs.size());
                   for (size_t i = 0; i < inputs.size(); ++i) {
                     const Tensor& in = inputs[i];
                     GRAFT_CHECK(in.defined() && in.requires_grad(), "backward", "inputs that require grad",
                                 "input " + std::to_string(i) + " does not",
                                 "only tensors with requires_grad=true can receive gradients");
                     if (in.is_leaf()) {
                       auto acc = grad_accumulator(in);
                       targets.insert(acc.get());
                       keep.push_back(acc);
                     } else {  // a non-leaf: captured like grad()'s inputs, accumulated into its .grad below
                       Edge e = gradient_edge(in);
                       targets.insert(e.fn.get());
                       task.capture[e.fn.get()].push_back(i);
                       keep.push_back(e.fn);
                     }
                   }
                 });
  // PyTorch's backward(inputs=...) fills the .grad of a non-leaf input as retain_grad() would: the
  // gradient of this pass added to what .grad holds (a graph of its own with create_graph).
  for (size_t i = 0; i < task.captured.size(); ++i) {
    if (!task.captured[i].defined()) continue;
    const Tensor g = create_graph ? task.captured[i] : task.captured[i].detach();
    Tensor& held = inputs[i].impl().autograd_meta().grad;
    held = held.defined() ? (create_graph ? held + g : (held + g).detach()) : (create_graph ? g : g.clone().detach());
  }
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  // "grad requires non-empty inputs." and "Set allow_unused=True ..." below are LibTorch's words,
  // which its tests look for.
  GRAFT_CHECK(!inputs.empty(), "grad", "at least one input", "an empty list of inputs. grad requires non-empty inputs",
              "grad() returns the gradients of the outputs with respect to `inputs`: name the tensors you want "
              "gradients for (to fill every leaf's .grad, call backward() instead)");
  GraphTask task;
  task.accumulate = false;
  task.filter = true;
  task.captured.resize(inputs.size());
  const detail::BackwardPassInfo info{create_graph, false, &inputs};
  run_graph_task(task, "grad", outputs, grad_outputs, retain_graph, create_graph, info,
                 [&](std::unordered_set<Node*, NodeHash>& targets, std::vector<std::shared_ptr<Node>>& keep) {
                   for (size_t i = 0; i < inputs.size(); ++i) {
                     const Tensor& in = inputs[i];
                     GRAFT_CHECK(in.defined() && in.requires_grad(), "grad", "inputs that require grad",
                                 "input " + std::to_string(i) + " does not require grad",
                                 "call requires_grad_() on it before the forward pass");
                     Edge e = gradient_edge(in);
                     targets.insert(e.fn.get());
                     task.capture[e.fn.get()].push_back(i);
                     keep.push_back(e.fn);
                   }
                 });
  for (size_t i = 0; i < inputs.size(); ++i) {
    GRAFT_CHECK(task.captured[i].defined() || allow_unused, "grad",
                "every input to be used in the graph of the outputs",
                "input " + std::to_string(i) + " (shape " + shape_str(inputs[i].sizes()) + ") that was not used",
                "Set allow_unused=True if this is the desired behavior: with allow_unused = true, unused inputs "
                "get an undefined tensor");
    if (task.captured[i].defined() && !create_graph) task.captured[i] = task.captured[i].detach();
  }
  return task.captured;
}

// The fused ops' create_graph backward differentiates their composites through grad() (Note [The
// create_graph policy] in src/autograd/composite_backward.h): installed when the engine is linked.
namespace {
TensorList composite_grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs) {
  return grad(outputs, inputs, grad_outputs, /*retain_graph=*/true, /*create_graph=*/true, /*allow_unused=*/true);
}
[[maybe_unused]] const bool composite_grad_installed = (detail::set_composite_grad(&composite_grad), true);
}  // namespace

}  // namespace graft::autograd
