// differentiate_composite: Note [The create_graph policy] in src/autograd/composite_backward.h.
#include "composite_backward.h"

#include <string>

#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"

namespace graft::autograd {

namespace {
detail::CompositeGradFn g_composite_grad = nullptr;
}

void detail::set_composite_grad(CompositeGradFn fn) { g_composite_grad = fn; }

TensorList differentiate_composite(const Node& n, const TensorList& inputs,
                                   const std::function<Tensor(const TensorList&)>& composite, const Tensor& g) {
  GRAFT_CHECK(g_composite_grad != nullptr, n.name_c_str(), "the backward engine linked in",
              "create_graph without the engine", "link graft's engine (src/engine/engine.cpp)");
  TensorList wrt;                 // the inputs whose gradients are wanted
  std::vector<size_t> positions;  // their positions among `inputs`
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad() && n.needs_input_grad(i)) {
      wrt.push_back(inputs[i]);
      positions.push_back(i);
    }
  TensorList grads(inputs.size());
  if (wrt.empty()) return grads;
  const EnableGradGuard enable;  // recorded: this runs under create_graph
  const Tensor out = composite(inputs);
  const TensorList got = g_composite_grad({out}, wrt, {g});
  for (size_t k = 0; k < positions.size(); ++k) grads[positions[k]] = got[k];
  return grads;
}

}  // namespace graft::autograd
