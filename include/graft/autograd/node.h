// Node: one recorded operation of the graph, i.e. its backward function.
//
// Note [One output per node]
// Every graft op that records a node has exactly one differentiable output (ops with several
// outputs, like split, are built from single-output views; max(dim) returns indices that carry no
// gradient). A node therefore receives one gradient and returns one gradient per input. This keeps
// the engine's input buffers to one tensor per node.
//
// Note [Saved tensors]
// A node saves what its backward needs (exp its output, mul its inputs) as SavedTensor, stamped
// with the storage's version. Saving an output stores a detached alias (the output's autograd data
// points back to the node, so holding the output itself would be a reference cycle); unpacking
// rebuilds an alias whose grad_fn is the node, so double backward sees the right graph.
// release_saved() drops them as soon as the engine has run the node (unless retain_graph).
// While a SavedTensorsHooks scope is active (graft/autograd/saved_tensor_hooks.h) the node keeps
// what the pack hook returned instead, and unpack() hands the unpack hook's result to backward.
// A saved storage counts as memory::Category::SavedActivations (Note [Memory categories]).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graft/autograd/grad_mode.h"
#include "graft/core/small_object_pool.h"
#include "graft/core/tensor.h"

namespace graft::autograd {

class Node;

struct Edge {
  std::shared_ptr<Node> fn;  // null: this input does not need a gradient
};

// What the engine checks a returned gradient against (Note [The engine validates gradients]).
struct InputMeta {
  Shape sizes;
  DType dtype = DType::Float32;
};

// Note [Forward op of a node]
// Each node records the forward op it is the backward of, for the messages that name it (the
// in-place version check, anomaly mode, the out-of-memory report): "the backward of log1p". An op
// of GRAFT_FORALL_OPS (graft/ops/op_list.h) passes its OpId and the list's name for it; autograd
// sits below ops, so a node keeps the id as a plain integer and the name as a pointer to the list's
// static string (src/ops/ops_common.h's make_node(name, OpId, inputs, fn) fills both). Nodes made
// elsewhere (AccumulateGrad, checkpoint, nn's backward hooks, autocast's casts) and the
// double-backward nodes of a few ops ("avg_pool2d_backward") pass ForwardOp::unlisted(name): a
// name, no id. fused_linear's nodes name their activation as well ("fused_linear_tanh").
struct ForwardOp {
  static constexpr int kNoId = -1;
  int id = kNoId;            // a graft::ops::OpId, or kNoId
  const char* name = "";     // static storage
  static constexpr ForwardOp unlisted(const char* op_name) { return {kNoId, op_name}; }
};

struct SavedTensorHookPair;  // graft/autograd/saved_tensor_hooks.h

// Marks a storage as held by the graph for the memory accounting, for as long as it lives
// (copies mark again; moved-from marks do nothing). `produced_by`: the forward op that made the
// tensor (null for inputs and leaves); `saved_by`: the node saving it. Both are static strings.
class SavedMark {
 public:
  SavedMark() = default;
  SavedMark(const Tensor& t, const char* produced_by, const char* saved_by);
  SavedMark(const SavedMark& o);
  SavedMark(SavedMark&& o) noexcept : storage_(o.storage_) { o.storage_ = nullptr; }
  SavedMark& operator=(SavedMark o) noexcept {
    std::swap(storage_, o.storage_);
    return *this;
  }
  ~SavedMark() { reset(); }
  void reset() noexcept;

 private:
  Storage* storage_ = nullptr;
};

class SavedTensor {
 public:
  SavedTensor() = default;
  // `saver`: the node saving it (its name and forward op go to the memory report).
  SavedTensor(const Tensor& t, bool is_output, const Node& saver);
  // Throws when the graph was freed or the tensor was changed in place since it was saved.
  Tensor unpack(Node& owner) const;
  void reset() {
    mark_.reset();
    data_ = Tensor();
    hooks_.reset();
    released_ = true;
  }
  bool defined() const { return data_.defined(); }
  // The storage this saved tensor keeps alive (null when released).
  const Storage* held_storage() const { return data_.defined() ? data_.impl().storage.get() : nullptr; }
  // For Note [Iterative graph destruction]: hands over the saved tensor's grad_fn when this is its
  // last owner, so the caller can destroy it without recursion.
  std::shared_ptr<Node> steal_grad_fn();

 private:
  Tensor data_;     // the tensor, or what the pack hook made of it
  SavedMark mark_;  // after data_: unmarks before the storage can go
  std::shared_ptr<const SavedTensorHookPair> hooks_;  // set when data_ is packed
  std::weak_ptr<Storage> original_;                   // packed: the original's storage, for the version check
  Shape sizes_;                                       // packed: the original's shape and dtype
  DType dtype_ = DType::Float32;
  uint32_t version_ = 0;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
};

using GradHook = std::function<Tensor(const Tensor&)>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node(const char* name, ForwardOp op);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // "MulBackward0", as PyTorch names it; a std::string as LibTorch returns it, so that
  // `grad_fn()->name() == "MulBackward0"` compares text, not pointers.
  std::string name() const { return name_; }
  // The same name as the static string the node keeps (no allocation: for the engine's hot path).
  const char* name_c_str() const { return name_; }
  // "mul": the forward op whose backward this is (Note [Forward op of a node]).
  const char* forward_op_name() const { return op_.name; }
  // Its graft::ops::OpId as an integer, or ForwardOp::kNoId.
  int op_id() const { return op_.id; }

  // Given d(output), returns d(input_i) for every input (undefined where none flows).
  virtual TensorList apply(const Tensor& grad_output) = 0;

  // ---- saved tensors ----
  void save(const Tensor& t, bool is_output = false) { saved_.emplace_back(t, is_output, *this); }
  Tensor saved(size_t i) { return saved_.at(i).unpack(*this); }
  void release_saved();
  bool released() const { return released_; }
  // The storages this node's saved tensors keep alive (for the graph-leak detector).
  std::vector<const Storage*> saved_storages() const;

  // ---- edges to the nodes of the inputs ----
  std::vector<Edge> next_edges;
  std::vector<InputMeta> input_meta;
  size_t num_inputs() const { return next_edges.size(); }
  // Whether input i takes a gradient (PyTorch's needs_input_grad): a backward skips the work for
  // inputs that do not.
  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].fn != nullptr; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  // An AccumulateGrad (the engine asks this for every node it runs; cheaper than a dynamic_cast).
  bool is_accumulate_grad() const { return is_accumulate_grad_; }

  // ---- hooks on the gradient of this node's output (tensor hooks of non-leaf tensors) ----
  unsigned add_pre_hook(GradHook hook);
  size_t remove_pre_hook(unsigned id);  // how many were removed (0 or 1)
  std::vector<std::pair<unsigned, GradHook>>& pre_hooks() { return pre_hooks_; }
  // retain_grad(): runs after the other hooks and stores the gradient on the tensor.
  std::function<void(const Tensor&)> retain_grad_hook;

  // Registered with the graph-leak detector (src/autograd/node_tracking.h).
  bool tracked() const { return tracked_; }
  void set_tracked(bool tracked) { tracked_ = tracked; }

 protected:
  uint64_t sequence_nr_;
  bool is_accumulate_grad_ = false;

 private:
  const char* name_;
  ForwardOp op_;
  bool released_ = false;
  bool tracked_ = false;
  std::vector<SavedTensor> saved_;
  std::vector<std::pair<unsigned, GradHook>> pre_hooks_;
};

// A node whose backward is a lambda (Node&, const Tensor& grad) -> TensorList, written right under
// the forward in each op file. Tensors the backward needs go through save()/saved(), never into the
// lambda's captures, so release_saved() can free them.
template <class F>
class LambdaNode final : public Node {
 public:
  LambdaNode(const char* name, ForwardOp op, F fn) : Node(name, op), fn_(std::move(fn)) {}
  TensorList apply(const Tensor& grad_output) override { return fn_(static_cast<Node&>(*this), grad_output); }

 private:
  F fn_;
};

// Writes a gradient into a leaf's .grad (Note [Accumulating into .grad] in node.cpp).
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  TensorList apply(const Tensor& grad_output) override;
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// Per-tensor autograd data; exists only for tensors that take part in autograd.
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<Node> grad_accumulator;  // leaves only; the node holds the leaf, not the reverse
  std::vector<std::pair<unsigned, GradHook>> hooks;  // leaves only (non-leaf hooks live on grad_fn)
  // Tensor::register_post_accumulate_grad_hook: run with the leaf once its .grad holds this pass's
  // sum (distributed data parallel launches its all-reduce from here).
  std::vector<std::pair<unsigned, std::function<void(const Tensor&)>>> post_accumulate_hooks;
};

// ---- recording (used by op implementations) ----
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
// The edge a gradient for `t` flows into: its grad_fn, its grad accumulator, or none.
Edge gradient_edge(const Tensor& t);
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);
void collect_edges(Node& node, std::initializer_list<const Tensor*> inputs);
void collect_edges(Node& node, const TensorList& inputs);
// Makes `output` a non-leaf requiring grad whose grad_fn is `node`.
void set_history(Tensor& output, const std::shared_ptr<Node>& node);

inline bool should_record(std::initializer_list<const Tensor*> inputs) {
  return GradMode::is_enabled() && any_requires_grad(inputs);
}

// Returns a node connected to `inputs`, or null when nothing needs recording (grad mode off or
// no input requires grad). Typical use, next to the forward kernel (ops pass an OpId instead of a
// ForwardOp, Note [Forward op of a node]):
//   if (auto node = make_node("ExpBackward0", OpId::exp, {&x}, [](Node& n, const Tensor& g) -> TensorList {
//         return {g * n.saved(0)};            // d exp(x)/dx = exp(x)
//       })) { node->save(y, /*is_output=*/true); set_history(y, node); }
namespace detail {
template <class F>
std::shared_ptr<Node> new_lambda_node(const char* name, ForwardOp op, F&& fn) {
  using N = LambdaNode<std::decay_t<F>>;
  return std::allocate_shared<N>(graft::detail::PoolAllocator<N>(), name, op, std::forward<F>(fn));  // Note [Small-object pool]
}
}  // namespace detail

template <class F>
std::shared_ptr<Node> make_node(const char* name, ForwardOp op, std::initializer_list<const Tensor*> inputs, F&& fn) {
  if (!should_record(inputs)) return nullptr;
  auto node = detail::new_lambda_node(name, op, std::forward<F>(fn));
  collect_edges(*node, inputs);
  return node;
}

template <class F>
std::shared_ptr<Node> make_node(const char* name, ForwardOp op, const TensorList& inputs, F&& fn) {
  if (!GradMode::is_enabled()) return nullptr;
  bool any = false;
  for (const auto& t : inputs) any = any || (t.defined() && t.requires_grad());
  if (!any) return nullptr;
  auto node = detail::new_lambda_node(name, op, std::forward<F>(fn));
  collect_edges(*node, inputs);
  return node;
}

}  // namespace graft::autograd
