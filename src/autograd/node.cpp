// Node, SavedTensor, AccumulateGrad and graph recording.
#include "graft/autograd/node.h"

#include <atomic>
#include <utility>

#include "autograd/node_tracking.h"
#include "core/memory_internal.h"
#include "graft/autograd/saved_tensor_hooks.h"
#include "graft/core/error.h"
#include "graft/core/memory.h"

namespace graft::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
std::atomic<unsigned> next_hook_id{1 << 30};

// Note [Iterative graph destruction]
// A 100,000-op chain is a 100,000-deep chain of shared_ptr<Node>. Destroying it recursively would
// overflow the stack, so a dying node hands its edges and saved tensors to a thread-local list
// that the outermost destructor drains in a loop.
thread_local std::vector<std::shared_ptr<Node>>* pending_deletes = nullptr;
}  // namespace

Node::Node(const char* name, ForwardOp op) : sequence_nr_(next_sequence_nr++), name_(name), op_(op) {
  if (op_.name == nullptr || *op_.name == '\0') op_.name = name;  // an unnamed op: the node's name stands in
  if (detail::g_track_nodes.load(std::memory_order_relaxed)) detail::track_node(this);
}

Node::~Node() {
  if (tracked()) detail::untrack_node(this);
  const bool outermost = pending_deletes == nullptr;
  std::vector<std::shared_ptr<Node>> local;
  if (outermost) pending_deletes = &local;
  for (auto& e : next_edges)
    if (e.fn && e.fn.use_count() == 1) pending_deletes->push_back(std::move(e.fn));
  next_edges.clear();
  for (auto& s : saved_)
    if (auto fn = s.steal_grad_fn()) pending_deletes->push_back(std::move(fn));
  saved_.clear();
  if (outermost) {
    while (!local.empty()) {
      auto n = std::move(local.back());
      local.pop_back();
      n.reset();  // its destructor appends to `local`
    }
    pending_deletes = nullptr;
  }
}

void Node::release_saved() {
  for (auto& s : saved_) s.reset();
  released_ = true;
}

std::vector<const Storage*> Node::saved_storages() const {
  std::vector<const Storage*> out;
  for (const auto& s : saved_)
    if (const Storage* st = s.held_storage()) out.push_back(st);
  return out;
}

unsigned Node::add_pre_hook(GradHook hook) {
  const unsigned id = next_hook_id++;
  pre_hooks_.emplace_back(id, std::move(hook));
  return id;
}

size_t Node::remove_pre_hook(unsigned id) {
  return std::erase_if(pre_hooks_, [id](const auto& p) { return p.first == id; });
}

// ---- SavedMark ----

SavedMark::SavedMark(const Tensor& t, const char* produced_by, const char* saved_by) {
  if (!t.defined()) return;
  storage_ = t.impl().storage.get();
  memory::detail::on_saved(*storage_, t.sizes(), t.dtype(), produced_by, saved_by);
}

SavedMark::SavedMark(const SavedMark& o) : storage_(o.storage_) {
  // A copy holds the storage too (the registry keeps the first saver's description).
  if (storage_) storage_->saved_count.fetch_add(1, std::memory_order_relaxed);
}

void SavedMark::reset() noexcept {
  if (storage_) memory::detail::on_unsaved(*storage_);
  storage_ = nullptr;
}

// ---- SavedTensor ----

SavedTensor::SavedTensor(const Tensor& t, bool is_output, const Node& saver) : is_output_(is_output) {
  if (!t.defined()) return;
  GRAFT_CHECK(!t.is_inference(), saver.name_c_str(), "a normal tensor to save for backward",
              "an inference tensor of shape " + shape_str(t.sizes()) + ". Inference tensors cannot be saved for backward.",
              "inference tensors are made under InferenceMode; make a normal tensor with .clone() outside "
              "InferenceMode and use that in autograd");
  version_ = t._version();
  // An output saved by its own node is differentiable through that node, whether it is saved
  // before or after set_history().
  requires_grad_ = is_output || t.requires_grad();
  // For the memory report: the forward op that made the tensor (Note [Forward op of a node]).
  const auto& fn = t.grad_fn();
  const char* produced_by = is_output ? saver.forward_op_name() : (fn ? fn->forward_op_name() : nullptr);
  const char* saved_by = saver.name_c_str();
  if (auto hooks = SavedTensorsHooks::current()) {  // Note [Saved-tensor hooks]
    Tensor packed;
    {
      NoGradGuard no_grad;
      SavedTensorsHooks::Disable no_nested_hooks;
      packed = hooks->pack(t.detach());
    }
    GRAFT_CHECK(packed.defined(), "saved tensor pack hook", "a defined tensor from the pack hook",
                "an undefined tensor", "return the tensor itself, or something unpack can turn back into it");
    original_ = t.impl().storage;
    sizes_ = Shape(t.sizes());
    dtype_ = t.dtype();
    hooks_ = std::move(hooks);
    data_ = std::move(packed);
    mark_ = SavedMark(data_, produced_by, saved_by);
    return;
  }
  data_ = is_output ? t.detach() : t;  // Note [Saved tensors]
  mark_ = SavedMark(data_, produced_by, saved_by);
}

Tensor SavedTensor::unpack(Node& owner) const {
  if (released_) {
    throw Error(owner.name(),
                "trying to backward through the graph a second time (or to read saved tensors after they were "
                "freed). Saved tensors are freed when backward() finishes. Hint: pass retain_graph=true to the "
                "first backward() if you need to run backward through the same graph again, or recompute the "
                "forward pass");
  }
  if (!data_.defined()) return data_;
  // With hooks, the original's storage (if it still lives) carries the version to check.
  std::shared_ptr<Storage> original = hooks_ ? original_.lock() : data_.impl().storage;
  const uint32_t now = original ? original->version.load(std::memory_order_relaxed) : version_;
  if (now != version_) {
    const char* writer = original->last_writer;
    throw Error(owner.name(),
                "one of the variables needed for gradient computation has been modified by an inplace "
                "operation: the tensor of shape " + shape_str(data_.sizes()) + " (" + dtype_name(data_.dtype()) +
                ") saved by " + owner.name() + " (the backward of " + owner.forward_op_name() + ") was at version " +
                std::to_string(version_) + " when it was saved but is now at version " + std::to_string(now) +
                (writer ? std::string(", last changed by ") + writer : std::string()) +
                ". Hint: use the out-of-place version of that op (e.g. add instead of add_), or .clone() the "
                "tensor before changing it");
  }
  Tensor value = data_;
  if (hooks_) {
    {
      NoGradGuard no_grad;
      value = hooks_->unpack(data_);
    }
    GRAFT_CHECK(value.defined() && value.sizes().equals(sizes_.ref()), "saved tensor unpack hook",
                "a tensor of the saved tensor's shape " + shape_str(sizes_.ref()),
                value.defined() ? shape_str(value.sizes()) : std::string("an undefined tensor"),
                "unpack must return a tensor like the one pack received");
    if (value.dtype() != dtype_) {  // e.g. kept in bfloat16: backward gets the original dtype back
      NoGradGuard no_grad;
      value = value.to(dtype_);
    }
    // A saved input: backward reads its value. (Double backward through a packed input sees a
    // constant: the pack hook cut it from the graph, as in PyTorch.)
    if (!is_output_) return value;
  } else if (!is_output_) {
    return data_;
  }
  // Rebuild the output with its grad_fn, so that double backward differentiates through it.
  Tensor alias = value.detach();
  if (requires_grad_) {
    auto& meta = alias.impl().autograd_meta();
    meta.grad_fn = owner.shared_from_this();
  }
  return alias;
}

std::shared_ptr<Node> SavedTensor::steal_grad_fn() {
  if (!data_.defined() || data_.use_count() != 1) return nullptr;
  auto& a = data_.impl().autograd;
  if (!a || !a->grad_fn || a->grad_fn.use_count() != 1) return nullptr;
  return std::move(a->grad_fn);
}

// ---- AccumulateGrad ----

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
    : Node("AccumulateGrad", ForwardOp::unlisted("accumulate_grad")), leaf_(std::move(leaf)) {
  sequence_nr_ = UINT64_MAX;  // run as soon as ready: frees gradient buffers early
  is_accumulate_grad_ = true;
}

// Note [Accumulating into .grad]
// A leaf's .grad keeps summing across backward calls until zeroed. The first gradient is stolen
// without a copy when nothing else holds it and it is contiguous; later ones add in place, or out of
// place under create_graph (so the sum itself is differentiable).
TensorList AccumulateGrad::apply(const Tensor& grad_in) {
  // Note [Gradient stealing]
  // The engine hands over its only handle to the incoming gradient, so with this local copy a gradient nothing else refers to has use_count 2 (a gradient returned for
  // two inputs, or captured by autograd::grad, has more). Such a gradient becomes .grad as it is,
  // without a copy, as in PyTorch; a hook's replacement is judged the same way.
  Tensor grad = grad_in;
  bool sole = grad.use_count() == 2;
  auto& meta = leaf_->autograd_meta();
  for (auto& [id, hook] : meta.hooks) {
    Tensor r = hook(grad);
    if (r.defined()) {
      grad = std::move(r);
      sole = grad.use_count() == 1;
    }
  }
  if (!grad.defined()) return {};
  {
    Tensor& acc = meta.grad;
    // Note [Memory categories]: whatever storage ends up as .grad is counted as a gradient.
    struct TagGradient {
      Tensor& acc;
      ~TagGradient() {
        if (acc.defined()) memory::set_category(*acc.impl().storage, memory::Category::Gradients);
      }
    } tag{acc};
    if (!acc.defined()) {
      if (!GradMode::is_enabled() && sole && grad.impl().storage.use_count() == 1 &&
          grad.is_contiguous() && grad.storage_offset() == 0 && grad.impl().storage->nbytes == grad.nbytes()) {
        acc = grad.detach();
      } else {
        acc = GradMode::is_enabled() ? grad.clone() : grad.detach().clone();
      }
    } else if (!GradMode::is_enabled()) {
      acc.add_(grad);
    } else {
      acc = acc + grad;
    }
  }
  if (!meta.post_accumulate_hooks.empty()) {
    const Tensor leaf(leaf_);
    // A copy: a hook may remove itself.
    auto hooks = meta.post_accumulate_hooks;
    for (auto& [id, hook] : hooks) hook(leaf);
  }
  return {};
}

// ---- recording ----

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  auto& meta = leaf.impl().autograd_meta();
  if (auto acc = meta.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(leaf.impl_ptr());
  meta.grad_accumulator = acc;
  return acc;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (const auto& fn = t.grad_fn()) return {fn};
  return {grad_accumulator(t)};
}

namespace {
void add_input(Node& node, const Tensor* t) {
  if (t && t->defined()) {
    node.next_edges.push_back(gradient_edge(*t));
    node.input_meta.push_back({Shape(t->sizes()), t->dtype()});
  } else {
    node.next_edges.push_back({});
    node.input_meta.push_back({});
  }
}
}  // namespace

void collect_edges(Node& node, std::initializer_list<const Tensor*> inputs) {
  node.next_edges.reserve(inputs.size());
  node.input_meta.reserve(inputs.size());
  for (const Tensor* t : inputs) add_input(node, t);
}

void collect_edges(Node& node, const TensorList& inputs) {
  node.next_edges.reserve(inputs.size());
  node.input_meta.reserve(inputs.size());
  for (const Tensor& t : inputs) add_input(node, &t);
}

void set_history(Tensor& output, const std::shared_ptr<Node>& node) {
  if (!node) return;
  auto& meta = output.impl().autograd_meta();
  // retain_grad() follows the tensor through in-place ops, as PyTorch moves its hook: .grad is the
  // gradient of the tensor's latest value, not of the value the in-place op overwrote.
  if (meta.retains_grad && meta.grad_fn && meta.grad_fn != node)
    node->retain_grad_hook = std::exchange(meta.grad_fn->retain_grad_hook, nullptr);
  meta.grad_fn = node;
  meta.requires_grad = false;  // requires_grad() is true through grad_fn
  if (node->tracked()) detail::track_output(node.get(), output);
}

}  // namespace graft::autograd
