// graft::diagnostics::GraphLeakDetector: finds autograd graphs kept alive past their step.
//
//   graft::diagnostics::GraphLeakDetector leaks;   // debug mode: tracks graph nodes while alive
//   graft::Tensor total_loss = graft::zeros({});
//   for (...) {
//     auto loss = loss_fn(model->forward(x), y);
//     loss.backward();
//     optimizer.step();
//     total_loss = total_loss + loss;   // the mistake: keeps every step's graph (use loss.item())
//     leaks.step();                     // warns: nodes from earlier steps are still alive
//   }
//
// Note [Graph-leak detection]
// While a detector lives, every graph node records the step it was made in (the number of step()
// calls so far). step() marks the end of a step: a node made two or more steps ago that is still
// alive is leaked (one step of grace, since the current step's loss is usually still in scope when
// step() runs). Leaked nodes are grouped by the live graph root that reaches them (a node no other
// node points to: the grad_fn of the tensor that holds the graph); each group is reported with that
// tensor's shape and dtype, its grad_fn, the steps its nodes come from, how many nodes it pins and
// the bytes of saved tensors they still hold (all of it when backward never ran on them, as in an
// evaluation loop that forgot NoGradGuard). Tracking costs a mutex and a hash-map insert per node,
// so it is meant for debugging, not for every run. One detector at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace graft::diagnostics {

struct GraphLeak {
  std::string grad_fn;        // the grad_fn of the tensor holding the graph ("AddBackward0")
  std::string tensor;         // "a float32 tensor of shape []"
  int64_t root_step = 0;      // the step that tensor was made in
  int64_t first_step = 0;     // the oldest leaked node's step
  int64_t leaked_nodes = 0;   // nodes from steps before the grace step
  int64_t total_nodes = 0;    // every node the root keeps alive
  int64_t saved_bytes = 0;    // bytes of saved tensors the leaked nodes hold
  int64_t node_bytes = 0;     // an estimate of the graph objects' own size
  std::string message;        // a readable warning with a hint
};

struct GraphLeakDetectorOptions {
  // Receives each new or grown leak; null: the message goes to std::cerr. A leak is reported again
  // only when its node count has doubled since the last report.
  std::function<void(const GraphLeak&)> on_leak = nullptr;
};

class GraphLeakDetector {
 public:
  explicit GraphLeakDetector(GraphLeakDetectorOptions options = {});
  ~GraphLeakDetector();
  GraphLeakDetector(const GraphLeakDetector&) = delete;
  GraphLeakDetector& operator=(const GraphLeakDetector&) = delete;

  // Ends a step; returns every leak alive now (reported through on_leak when new or grown).
  std::vector<GraphLeak> step();
  // The leaks alive now, without ending a step or reporting.
  std::vector<GraphLeak> check() const;
  int64_t steps() const;

 private:
  GraphLeakDetectorOptions options_;
  int64_t last_reported_nodes_ = 0;
};

}  // namespace graft::diagnostics
