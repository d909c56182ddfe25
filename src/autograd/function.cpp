// Custom autograd functions (Note [Custom autograd functions] in graft/autograd/function.h): the
// parts of apply() and CppNode that do not depend on the user's type.
#include "graft/autograd/function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <typeindex>

namespace graft::autograd {

namespace {

bool same(const Tensor& a, const Tensor& b) { return a.defined() && b.defined() && &a.impl() == &b.impl(); }

bool listed(const std::vector<const TensorImpl*>& list, const Tensor& t) {
  if (!t.defined()) return false;
  for (const TensorImpl* p : list)
    if (p == &t.impl()) return true;
  return false;
}

}  // namespace

// ---- AutogradContext ----

void AutogradContext::save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined()) dirty_.push_back(&t.impl());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const Tensor& t : outputs)
    if (t.defined()) non_differentiable_.push_back(&t.impl());
}

bool AutogradContext::is_dirty(const Tensor& t) const { return listed(dirty_, t); }
bool AutogradContext::is_non_differentiable(const Tensor& t) const { return listed(non_differentiable_, t); }

variable_list AutogradContext::get_saved_variables() const {
  if (!node_ || !saved_) return to_save_;  // nothing was recorded (grad mode off, or no input requires grad)
  variable_list out;
  out.reserve(static_cast<size_t>(num_saved_));
  for (int64_t i = 0; i < num_saved_; ++i) out.push_back(node_->saved(static_cast<size_t>(i)));
  return out;
}

bool AutogradContext::needs_input_grad(size_t output_edge_index) const {
  return node_ != nullptr && node_->needs_input_grad(output_edge_index);
}

namespace detail {

const char* cpp_node_name(const std::type_info& function_type) {
  // Interned once per type; the node keeps the pointer (Node names are static strings).
  static std::mutex mutex;
  static std::map<std::type_index, std::string>* names = new std::map<std::type_index, std::string>;  // never freed:
  // nodes may outlive static destruction order
  std::lock_guard<std::mutex> lock(mutex);
  auto it = names->find(function_type);
  if (it == names->end()) {
    int status = 0;
    char* d = abi::__cxa_demangle(function_type.name(), nullptr, nullptr, &status);
    const std::string type = status == 0 && d ? d : function_type.name();
    std::free(d);
    it = names->emplace(function_type, "graft::autograd::CppNode<" + type + ">").first;
  }
  return it->second.c_str();
}

TensorList gradients_for_inputs(const char* function_name, const std::vector<bool>& is_var, variable_list grads) {
  const size_t n = is_var.size();
  GRAFT_CHECK(grads.size() >= n, std::string(function_name) + " backward",
              std::to_string(n) + " gradients (one per argument of forward, Tensor() for those without one)",
              std::to_string(grads.size()) + " gradients",
              "return one entry per forward argument, tensor or not, in order");
  for (size_t i = n; i < grads.size(); ++i)
    GRAFT_CHECK(!grads[i].defined(), std::string(function_name) + " backward",
                std::to_string(n) + " gradients (one per argument of forward)",
                std::to_string(grads.size()) + " gradients, the extra one at position " + std::to_string(i) + " defined",
                "return one entry per forward argument");
  TensorList out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (is_var[i]) {
      out.push_back(std::move(grads[i]));
    } else {
      GRAFT_CHECK(!grads[i].defined(), std::string(function_name) + " backward",
                  "an undefined Tensor() at position " + std::to_string(i) + " (forward's argument " +
                      std::to_string(i) + " is not a tensor)",
                  "a defined gradient", "return graft::Tensor() for arguments that are not tensors");
    }
  }
  return out;
}

// Note [Custom functions with several outputs]
// graft's nodes have one output (Note [One output per node]): a node receives one gradient, which
// the engine sums over every use of the output. A custom function whose forward returns k > 1
// differentiable outputs keeps that rule with k selector nodes: output i's grad_fn is selector i,
// whose one edge leads to the function's node. Selector i places d output_i, flattened, at its
// offset in a zero vector as long as all k outputs together (in the dtype they promote to); the
// engine sums the k vectors in the node's input buffer, which gives their concatenation, and the
// node cuts it back into k gradients (views, reshaped, in each output's dtype) for T::backward. A
// selector that never ran leaves zeros in its part, which is what materialize_grads asks for; with
// set_materialize_grads(false) the node hands such an output an undefined gradient, as LibTorch
// does (each selector marks its output received). The packing is made of recorded tensor
// operations, so double backward works through it. Cost: one zero vector of the outputs' total
// size per selector that runs. Selectors carry the function's node name, so grad_fn()->name() reads
// as in LibTorch; hooks and retain_grad on an output sit on its selector.
void set_outputs_history(AutogradContext& ctx, variable_list& outputs, const std::shared_ptr<CustomFunctionNode>& node,
                         const TensorList& inputs) {
  const char* function_name = node->name_c_str();
  const std::string op = std::string(function_name) + " forward";
  for (const TensorImpl* d : ctx.dirty_) {
    bool returned = false;
    for (const Tensor& o : outputs) returned = returned || (o.defined() && &o.impl() == d);
    GRAFT_CHECK(returned, op, "every tensor marked dirty to be returned by forward", "a dirty tensor not returned",
                "return the tensors forward changed in place (ctx->mark_dirty) among its outputs");
  }
  std::vector<OutputSlot>& slots = node->slots_;
  slots.assign(outputs.size(), OutputSlot{});
  std::vector<size_t> differentiable;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& o = outputs[i];
    if (!o.defined()) continue;
    slots[i].defined = true;
    slots[i].sizes = Shape(o.sizes());
    slots[i].numel = o.numel();
    slots[i].dtype = o.dtype();
    bool is_input = false, repeated = false;
    for (const Tensor& in : inputs) is_input = is_input || same(in, o);
    for (size_t k = 0; k < i; ++k) repeated = repeated || same(outputs[k], o);
    if (ctx.is_non_differentiable(o)) {
      if ((is_input || repeated) && o.requires_grad()) o = o.detach();  // an alias that does not require grad
      continue;
    }
    if (repeated) {
      o = o.detach();  // returned twice: the second is an alias with a history of its own
    } else if (ctx.is_dirty(o)) {
      GRAFT_CHECK(!(o.is_leaf() && o.requires_grad()), op, "a tensor that is not a leaf requiring grad",
                  "a leaf tensor of shape " + shape_str(o.sizes()) + " that requires grad, marked dirty",
                  "a leaf Variable that requires grad is being used in an in-place operation; pass a .clone()");
      // forward changed it in place (through data_ptr, unseen by graft): count the write, so a
      // backward that saved the old value notices (Note [Version counter]).
      o.impl().storage->bump_version(function_name);
    } else if (is_input) {
      o = o.detach();  // forward returned an input unchanged: the output is a new alias with this history
    }
    slots[i].differentiable = true;
    differentiable.push_back(i);
  }
  if (differentiable.size() == 1) {
    set_history(outputs[differentiable[0]], node);
    return;
  }
  if (differentiable.empty()) return;
  node->packed_ = true;
  DType dtype = slots[differentiable[0]].dtype;
  for (size_t i : differentiable) dtype = promote_types(dtype, slots[i].dtype);
  int64_t total = 0;
  for (size_t i : differentiable) {
    slots[i].offset = total;
    total += slots[i].numel;
  }
  node->packed_dtype_ = dtype;
  node->packed_numel_ = total;
  node->received_.assign(outputs.size(), 0);
  for (size_t i : differentiable) {
    auto selector = graft::autograd::detail::new_lambda_node(
        function_name, ForwardOp::unlisted(function_name), [i](Node& self, const Tensor& g) -> TensorList {
          if (!g.defined()) return {Tensor()};
          auto& owner = static_cast<CustomFunctionNode&>(*self.next_edges[0].fn);
          owner.received_[i] = 1;
          const OutputSlot& slot = owner.slots_[i];
          Tensor packed = zeros({owner.packed_numel_}, owner.packed_dtype_);
          packed.narrow(0, slot.offset, slot.numel).copy_(g.reshape({-1}));
          return {packed};
        });
    selector->next_edges.push_back(Edge{node});
    selector->input_meta.push_back(InputMeta{Shape({total}), dtype});
    set_history(outputs[i], selector);
  }
}

void save_variables(AutogradContext& ctx, Node& node, const variable_list& outputs) {
  for (const Tensor& t : ctx.to_save_) {
    bool is_output = false;
    for (const Tensor& o : outputs) is_output = is_output || same(o, t);
    node.save(t, is_output);
  }
  ctx.num_saved_ = static_cast<int64_t>(ctx.to_save_.size());
  ctx.to_save_.clear();  // the node's SavedTensors hold them now (an output held here would be a cycle)
  ctx.saved_ = true;
}

}  // namespace detail

variable_list CustomFunctionNode::output_gradients(const Tensor& grad_output) {
  const bool materialize = ctx_.materialize_grads_;
  variable_list grads(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const OutputSlot& slot = slots_[i];
    if (!slot.defined) continue;
    if (slot.differentiable && !packed_) {
      grads[i] = grad_output;
    } else if (slot.differentiable && grad_output.defined() && received_[i]) {
      grads[i] = grad_output.narrow(0, slot.offset, slot.numel).reshape(slot.sizes.ref()).to(slot.dtype);
    }
    if (!grads[i].defined() && materialize) grads[i] = zeros(slot.sizes.ref(), slot.dtype);
  }
  if (packed_) std::fill(received_.begin(), received_.end(), 0);  // for the next backward (retain_graph)
  return grads;
}

}  // namespace graft::autograd
