// The create_graph policy of the fused ops: differentiate the op's composite definition.
//
// Note [The create_graph policy]
// A fused op (batch_norm, layer_norm, group_norm, the fused cross_entropy, fused_linear,
// scaled_dot_product_attention's memory-efficient kernel, rnn_layer, ...) runs a kernel forward and
// a kernel backward. Those kernels are differentiable once: they read and write memory, and record
// nothing. When backward itself records (create_graph = true, so GradMode is on inside the node),
// every fused op answers the same way: its backward returns the gradients of the op's composite
// definition, the same formula written in graft ops (the specification the kernel is tested
// against, one function in the op's file), recomputed from the saved inputs and differentiated by
// the engine with create_graph:
//     grads = autograd::grad({composite(inputs)}, {inputs that need a gradient}, {g}, create_graph)
// The gradients are then graphs of graft ops through the inputs and g, so second (and higher)
// derivatives exist for every fused op, with nobody writing a second backward by hand. What it costs
// (one composite forward and its recorded backward, only under create_graph) is what
// create_graph costs in PyTorch anyway. The other policy, a backward recorded as an op with a
// derivative of its own, is kept where that derivative is itself an existing op: convolution
// (convolution_backward is convolutions) and the activations' input gradients (detail::relu_backward
// and its siblings are graft ops). No fused op refuses create_graph.
//
// The engine sits above the ops (tools/check-layers.sh), so the ops reach autograd::grad through a
// pointer the engine installs when it is linked in (src/engine/engine.cpp); a program that runs a
// backward links the engine.
#pragma once

#include <functional>

#include "graft/autograd/node.h"
#include "graft/core/tensor.h"

namespace graft::autograd {

// composite(inputs) -> the op's output, in graft ops. `inputs` are the node's inputs in the node's
// order (undefined where the op had none, e.g. no bias); the gradient of input i is computed when
// n.needs_input_grad(i) and inputs[i] requires grad, else left undefined. `g` is the output's
// gradient. Call it from a node's backward when GradMode::is_enabled() (Note [The create_graph policy]).
TensorList differentiate_composite(const Node& n, const TensorList& inputs,
                                   const std::function<Tensor(const TensorList&)>& composite, const Tensor& g);

namespace detail {
// autograd::grad(outputs, inputs, grad_outputs, create_graph = true, allow_unused = true), as the
// engine installs it.
using CompositeGradFn = TensorList (*)(const TensorList& outputs, const TensorList& inputs,
                                       const TensorList& grad_outputs);
void set_composite_grad(CompositeGradFn fn);
}  // namespace detail

}  // namespace graft::autograd
