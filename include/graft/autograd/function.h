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
// forward returns one Tensor or a variable_list; backward gets one gradient per output (zeros, or
// undefined without materialize_grads, for an output that got none or is non-differentiable).
// Several differentiable outputs: Note [Custom functions with several outputs] (function.cpp).
// What differs from LibTorch (docs/porting.md): there is no forward-mode (jvp) support.
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
class CustomFunctionNode;

namespace detail {

// "graft::autograd::CppNode<LinearFunction>", LibTorch's node name after the rename; static storage.
const char* cpp_node_name(const std::type_info& function_type);

// Checks and maps T::backward's result (one entry per forward argument) to the node's inputs (the
// tensor arguments). `is_var[i]`: whether forward argument i was a tensor.
TensorList gradients_for_inputs(const char* function_name, const std::vector<bool>& is_var, variable_list grads);

// After forward: records every output in the node's slots and gives the differentiable ones their
// history (the node, or one selector node each when there are several); dirty inputs are checked
// (not a leaf requiring grad) and rebased; an output that is an unmodified input, or an output
// returned twice, becomes an alias.
void set_outputs_history(AutogradContext& ctx, variable_list& outputs, const std::shared_ptr<CustomFunctionNode>& node,
                         const TensorList& inputs);

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
  friend class CustomFunctionNode;
  friend void detail::set_outputs_history(AutogradContext&, variable_list&, const std::shared_ptr<CustomFunctionNode>&,
                                          const TensorList&);
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

// One output of a custom function's forward, as its backward sees it.
struct OutputSlot {
  Shape sizes;
  int64_t numel = 0;
  DType dtype = DType::Float32;
  bool defined = false;
  bool differentiable = false;
  int64_t offset = 0;  // several differentiable outputs: where its gradient lies in the packed one
};

// What a custom function's node keeps that does not depend on the function's type (function.cpp).
class CustomFunctionNode : public Node {
 public:
  using Node::Node;
  // The gradients T::backward gets, one per forward output, from the gradient this node received
  // (that output's, or the packed gradient of Note [Custom functions with several outputs]).
  variable_list output_gradients(const Tensor& grad_output);

  AutogradContext ctx_;
  std::vector<bool> is_var_;
  std::vector<OutputSlot> slots_;  // one per forward output, in order
  bool packed_ = false;            // several differentiable outputs
  DType packed_dtype_ = DType::Float32;
  int64_t packed_numel_ = 0;
  std::vector<char> received_;     // packed: which outputs' selectors ran in this backward
};

// The node of a custom function: calls T::backward.
template <class T>
class CppNode final : public CustomFunctionNode {
 public:
  CppNode()
      : CustomFunctionNode(detail::cpp_node_name(typeid(T)), ForwardOp::unlisted(detail::cpp_node_name(typeid(T)))) {}

  TensorList apply(const Tensor& grad_output) override {
    variable_list grads = T::backward(&ctx_, output_gradients(grad_output));
    return detail::gradients_for_inputs(name_c_str(), is_var_, std::move(grads));
  }
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
      detail::set_outputs_history(*ctx, outputs, node, inputs);
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
