// Graph-node tracking for the graph-leak detector (Note [Graph-leak detection]; not installed).
#pragma once

#include <atomic>

#include "graft/autograd/node.h"

namespace graft::autograd::detail {

// True while a GraphLeakDetector lives (one relaxed load on node creation when off).
extern std::atomic<bool> g_track_nodes;

// Called by Node's constructor / destructor and by set_history (which knows the node's output).
void track_node(Node* node);
void untrack_node(Node* node) noexcept;
void track_output(Node* node, const Tensor& output);

}  // namespace graft::autograd::detail
