// Custom autograd functions in LibTorch's spelling:
//
//   struct MulConstant : graft::autograd::Function<MulConstant> {
//     static Tensor forward(AutogradContext* ctx, Tensor x, double c) {
//       ctx->saved_data["c"] = c;
//       return x * c;
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
//       return {grad_outputs[0] * ctx->saved_data["c"].toDouble(), Tensor()};  // one per forward argument
//     }
//   };
//   Tensor y = MulConstant::apply(x, 5.5);
//
// Note [Custom autograd functions]
// apply(args...) runs T::forward with grad mode off (the forward's own ops are not recorded) and,
// when grad mode is on and a tensor argument requires grad, records one CppNode<T> whose edges are
// the tensor arguments in order (a std::vector<Tensor> argument adds each of its tensors). In
// backward the node calls T::backward(ctx, {d output}); it must return one gradient per forward
// argument, tensor or not (undefined Tensor() for none, and always for a non-tensor argument).
// Saved tensors (save_for_backward) are SavedTensors of the node: version-checked, freed after
// backward unless retain_graph, seen by saved-tensor hooks and the memory accounting like any
// op's. Backward runs with grad mode as the engine sets it, so with create_graph the ops of
// T::backward are recorded and double backward works through a custom function.
// What differs from LibTorch (docs/porting.md): graft's nodes have one output (Note [One output per
// node]), so forward returns one Tensor, or a variable_list with at most one differentiable output
// (the others marked non-differentiable); there is no forward-mode (jvp) support.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graft/autograd/grad_mode.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/ivalue.h"
#include "graft/core/tensor.h"

namespace graft::autograd {

using Variable = Tensor;
using variable_list = std::vector<Tensor>;
using tensor_list = std::vector<Tensor>;

template <class T>
class CppNode;

class AutogradContext;

namespace detail {

// "graft::autograd::CppNode<LinearFunction>", LibTorch's node name after the rename; static storage.
const char* cpp_node_name(const std::type_info& function_type);

// Checks and maps T::backward's result (one entry per forward argument) to the node's inputs (the
// tensor arguments). `is_var[i]`: whether forward argument i was a tensor.
TensorList gradients_for_inputs(const char* function_name, const std::vector<bool>& is_var, variable_list grads);

// After forward: the differentiable outputs get the node as grad_fn; dirty inputs are checked
// (not a leaf requiring grad) and rebased; an output that is an unmodified input becomes an alias.
// Returns the index of the one differentiable output, or -1 when there is none.
int64_t set_outputs_history(const char* function_name, AutogradContext& ctx, variable_list& outputs,
                            const std::shared_ptr<Node>& node, const TensorList& inputs);

// Hands ctx's to_save_ to the node's saved tensors (outputs saved as outputs: no reference cycle).
void save_variables(AutogradContext& ctx, Node& node, const variable_list& outputs);

}  // namespace detail

class AutogradContext {
 public:
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Anything backward needs besides tensors (LibTorch's saved_data map of IValues).
  std::unordered_map<std::string, IValue> saved_data;

  // Tensors for backward (inputs or outputs of forward, or undefined); call once, in forward.
  void save_for_backward(variable_list to_save);
  // Inputs that forward changed in place (and returns): their history is rebased on this node.
  void mark_dirty(const variable_list& inputs);
  // Outputs that take no gradient (indices, masks): they do not require grad.
  void mark_non_differentiable(const variable_list& outputs);
  // With true (the default), an undefined output gradient reaches backward as zeros.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // The tensors of save_for_backward, in order (undefined stays undefined). Throws after backward
  // freed them, and when one was changed in place since it was saved.
  variable_list get_saved_variables() const;
  // Whether the i-th tensor argument of forward takes a gradient.
  bool needs_input_grad(size_t output_edge_index) const;

 private:
  template <class T>
  friend class CppNode;
  template <class T>
  friend struct Function;
  friend int64_t detail::set_outputs_history(const char*, AutogradContext&, variable_list&,
                                             const std::shared_ptr<Node>&, const TensorList&);
  friend void detail::save_variables(AutogradContext&, Node&, const variable_list&);

  bool is_dirty(const Tensor& t) const;
  bool is_non_differentiable(const Tensor& t) const;

  variable_list to_save_;
  std::vector<const TensorImpl*> dirty_, non_differentiable_;
  bool materialize_grads_ = true;
  bool saved_ = false;    // to_save_ has been handed to the node
  int64_t num_saved_ = 0;
  Node* node_ = nullptr;  // the CppNode owning this context; null when nothing was recorded
};

namespace detail {

// Argument extraction for apply().
inline void extract(std::vector<bool>& is_var, TensorList& inputs, const Tensor& t) {
  is_var.push_back(true);
  inputs.push_back(t);
}
inline void extract(std::vector<bool>& is_var, TensorList& inputs, const std::vector<Tensor>& list) {
  for (const Tensor& t : list) extract(is_var, inputs, t);
}
template <class A>
void extract(std::vector<bool>& is_var, TensorList&, const A&) {
  is_var.push_back(false);
}

}  // namespace detail

// The node of a custom function: calls T::backward.
template <class T>
class CppNode final : public Node {
 public:
  CppNode() : Node(detail::cpp_node_name(typeid(T)), ForwardOp::unlisted(detail::cpp_node_name(typeid(T)))) {}

  TensorList apply(const Tensor& grad_output) override {
    Tensor g = grad_output;
    if (!g.defined() && ctx_.materialize_grads_) g = zeros(output_sizes_.ref(), output_dtype_);
    variable_list grads = T::backward(&ctx_, variable_list{g});
    return detail::gradients_for_inputs(name_c_str(), is_var_, std::move(grads));
  }

  AutogradContext ctx_;
  std::vector<bool> is_var_;
  Shape output_sizes_;
  DType output_dtype_ = DType::Float32;
};

template <class T>
struct Function {
  // Runs T::forward(ctx, args...) and records it (Note [Custom autograd functions]). Returns what
  // forward returns: a Tensor or a variable_list.
  template <class... Args>
  static auto apply(Args&&... args) {
    std::vector<bool> is_var;
    TensorList inputs;
    (detail::extract(is_var, inputs, args), ...);
    bool record = GradMode::is_enabled();
    if (record) {
      record = false;
      for (const Tensor& t : inputs) record = record || (t.defined() && t.requires_grad());
    }
    std::shared_ptr<CppNode<T>> node;
    AutogradContext local;
    AutogradContext* ctx = &local;
    if (record) {
      node = std::make_shared<CppNode<T>>();
      node->is_var_ = is_var;
      collect_edges(*node, inputs);
      ctx = &node->ctx_;
      ctx->node_ = node.get();
    }
    using Result = decltype(T::forward(ctx, std::forward<Args>(args)...));
    static_assert(std::is_same_v<std::decay_t<Result>, Tensor> || std::is_same_v<std::decay_t<Result>, variable_list>,
                  "a custom Function's forward returns a Tensor or a variable_list");
    variable_list outputs;
    {
      AutoGradMode forward_mode(false);
      if constexpr (std::is_same_v<std::decay_t<Result>, Tensor>) {
        outputs.push_back(T::forward(ctx, std::forward<Args>(args)...));
      } else {
        outputs = T::forward(ctx, std::forward<Args>(args)...);
      }
    }
    if (node) {
      const int64_t out = detail::set_outputs_history(node->name_c_str(), *ctx, outputs, node, inputs);
      if (out >= 0) {
        node->output_sizes_ = Shape(outputs[static_cast<size_t>(out)].sizes());
        node->output_dtype_ = outputs[static_cast<size_t>(out)].dtype();
      }
      detail::save_variables(*ctx, *node, outputs);
    }
    if constexpr (std::is_same_v<std::decay_t<Result>, Tensor>) {
      return outputs.front();
    } else {
      return outputs;
    }
  }
};

}  // namespace graft::autograd
