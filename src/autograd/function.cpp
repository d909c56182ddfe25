// Custom autograd functions (Note [Custom autograd functions] in graft/autograd/function.h): the
// parts of apply() and CppNode that do not depend on the user's type.
#include "graft/autograd/function.h"

#include <cxxabi.h>

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

int64_t set_outputs_history(const char* function_name, AutogradContext& ctx, variable_list& outputs,
                            const std::shared_ptr<Node>& node, const TensorList& inputs) {
  const std::string op = std::string(function_name) + " forward";
  for (const TensorImpl* d : ctx.dirty_) {
    bool returned = false;
    for (const Tensor& o : outputs) returned = returned || (o.defined() && &o.impl() == d);
    GRAFT_CHECK(returned, op, "every tensor marked dirty to be returned by forward", "a dirty tensor not returned",
                "return the tensors forward changed in place (ctx->mark_dirty) among its outputs");
  }
  int64_t differentiable = -1;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& o = outputs[i];
    if (!o.defined()) continue;
    bool is_input = false;
    for (const Tensor& in : inputs) is_input = is_input || same(in, o);
    if (ctx.is_non_differentiable(o)) {
      if (is_input && o.requires_grad()) o = o.detach();  // an alias that does not require grad
      continue;
    }
    if (ctx.is_dirty(o)) {
      GRAFT_CHECK(!(o.is_leaf() && o.requires_grad()), op, "a tensor that is not a leaf requiring grad",
                  "a leaf tensor of shape " + shape_str(o.sizes()) + " that requires grad, marked dirty",
                  "a leaf Variable that requires grad is being used in an in-place operation; pass a .clone()");
      // forward changed it in place (through data_ptr, unseen by graft): count the write, so a
      // backward that saved the old value notices (Note [Version counter]).
      o.impl().storage->bump_version(function_name);
    } else if (is_input) {
      o = o.detach();  // forward returned an input unchanged: the output is a new alias with this history
    }
    GRAFT_CHECK(differentiable < 0, op, "one differentiable output (graft's nodes have one output)",
                "differentiable outputs " + std::to_string(differentiable) + " and " + std::to_string(i),
                "mark the others with ctx->mark_non_differentiable, or split the function in two (docs/porting.md)");
    set_history(o, node);
    differentiable = static_cast<int64_t>(i);
  }
  return differentiable;
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

}  // namespace graft::autograd
