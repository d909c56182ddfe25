// GraphLeakDetector and the node registry behind it (Note [Graph-leak detection]).
#include "graft/diagnostics/graph_leaks.h"

#include <algorithm>
#include <iostream>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "autograd/node_tracking.h"
#include "graft/core/error.h"
#include "graft/core/memory.h"
#include "graft/core/storage.h"

namespace graft::autograd::detail {

std::atomic<bool> g_track_nodes{false};

namespace {
struct NodeRecord {
  int64_t step = 0;
  bool has_output = false;
  Shape output_sizes;
  DType output_dtype = DType::Float32;
};
struct Registry {
  std::mutex mutex;
  std::unordered_map<const Node*, NodeRecord> nodes;
  int64_t step = 0;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: nodes may die after other statics
  return *r;
}
}  // namespace

void track_node(Node* node) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.nodes[node] = NodeRecord{r.step, false, {}, DType::Float32};
  node->set_tracked(true);
}

void untrack_node(Node* node) noexcept {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.nodes.erase(node);
}

void track_output(Node* node, const Tensor& output) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (auto it = r.nodes.find(node); it != r.nodes.end()) {
    it->second.has_output = true;
    it->second.output_sizes = Shape(output.sizes());
    it->second.output_dtype = output.dtype();
  }
}

}  // namespace graft::autograd::detail

namespace graft::diagnostics {

namespace {

using autograd::Node;
using autograd::detail::registry;

// An estimate of a node's own footprint: the object, its edges and input metadata.
int64_t node_footprint(const Node& n) {
  return 160 + static_cast<int64_t>(n.next_edges.capacity() * sizeof(autograd::Edge) +
                                    n.input_meta.capacity() * sizeof(autograd::InputMeta));
}

// Under the registry's lock: the leaks among the tracked nodes at step `now`.
std::vector<GraphLeak> find_leaks(int64_t now) {
  auto& r = registry();
  const auto& nodes = r.nodes;
  const int64_t cutoff = now - 2;  // made in a step <= cutoff: leaked (one step of grace)
  bool any_old = false;
  for (const auto& [n, rec] : nodes) any_old |= rec.step <= cutoff;
  if (!any_old) return {};

  // Roots: tracked nodes no tracked node points to.
  std::unordered_set<const Node*> pointed_to;
  for (const auto& [n, rec] : nodes)
    for (const auto& e : n->next_edges)
      if (e.fn) pointed_to.insert(e.fn.get());

  std::vector<GraphLeak> leaks;
  std::unordered_set<const Node*> seen;
  std::unordered_set<const Storage*> counted;  // a storage saved by several nodes counts once
  for (const auto& [root, root_rec] : nodes) {
    if (pointed_to.count(root)) continue;
    GraphLeak leak;
    leak.first_step = root_rec.step;
    std::vector<const Node*> stack{root};
    std::unordered_set<const Node*> visited{root};
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      auto it = nodes.find(n);
      if (it == nodes.end()) continue;  // made before the detector: not counted
      ++leak.total_nodes;
      if (it->second.step <= cutoff && seen.insert(n).second) {
        ++leak.leaked_nodes;
        leak.first_step = std::min(leak.first_step, it->second.step);
        for (const Storage* s : n->saved_storages())  // activations only: saved weights live on anyway
          if (memory::category_of(*s) == memory::Category::SavedActivations && counted.insert(s).second)
            leak.saved_bytes += static_cast<int64_t>(s->nbytes);
        leak.node_bytes += node_footprint(*n);
      }
      for (const auto& e : n->next_edges)
        if (e.fn && visited.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
    if (leak.leaked_nodes == 0) continue;
    leak.grad_fn = root->name();
    leak.root_step = root_rec.step;
    leak.tensor = root_rec.has_output ? std::string("a ") + dtype_name(root_rec.output_dtype) + " tensor of shape " +
                                            shape_str(root_rec.output_sizes.ref())
                                      : std::string("a tensor");
    leak.message = "graph leak: " + leak.tensor + " with grad_fn=" + leak.grad_fn + " (made in step " +
                   std::to_string(leak.root_step) + ") keeps " + std::to_string(leak.leaked_nodes) +
                   " graph nodes from steps " + std::to_string(leak.first_step) + " to " + std::to_string(cutoff) +
                   " alive (" + std::to_string(leak.total_nodes) + " nodes in all), pinning " +
                   memory::format_bytes(leak.saved_bytes) + " of saved tensors and about " +
                   memory::format_bytes(leak.node_bytes) +
                   " of graph objects. Hint: a tensor that outlives the step holds its graph: accumulate "
                   "loss.item<float>() or loss.detach() instead of loss (total_loss = total_loss + loss), and run "
                   "evaluation under graft::NoGradGuard.";
    leaks.push_back(std::move(leak));
  }
  std::sort(leaks.begin(), leaks.end(), [](const GraphLeak& a, const GraphLeak& b) {
    return a.leaked_nodes > b.leaked_nodes;
  });
  return leaks;
}

}  // namespace

GraphLeakDetector::GraphLeakDetector(GraphLeakDetectorOptions options) : options_(std::move(options)) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  GRAFT_CHECK(!autograd::detail::g_track_nodes.load(), "GraphLeakDetector", "one detector at a time",
              "a second detector while one is alive", "keep a single GraphLeakDetector for the training loop");
  r.step = 0;
  autograd::detail::g_track_nodes.store(true);
}

GraphLeakDetector::~GraphLeakDetector() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  autograd::detail::g_track_nodes.store(false);
  for (auto& [n, rec] : r.nodes) const_cast<Node*>(n)->set_tracked(false);
  r.nodes.clear();
}

std::vector<GraphLeak> GraphLeakDetector::step() {
  std::vector<GraphLeak> leaks;
  {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    ++r.step;
    leaks = find_leaks(r.step);
  }
  int64_t leaked = 0;
  for (const auto& l : leaks) leaked += l.leaked_nodes;
  if (leaked > 0 && leaked >= 2 * last_reported_nodes_) {
    last_reported_nodes_ = leaked;
    for (const auto& l : leaks) {
      if (options_.on_leak) options_.on_leak(l);
      else std::cerr << "graft: " << l.message << "\n";
    }
  }
  return leaks;
}

std::vector<GraphLeak> GraphLeakDetector::check() const {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return find_leaks(r.step);
}

int64_t GraphLeakDetector::steps() const {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.step;
}

}  // namespace graft::diagnostics
