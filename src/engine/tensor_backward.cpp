// Tensor::backward and Tensor::retain_grad (declared in graft/core/tensor.h): they run the engine
// and sum gradients with ops, so they are defined in the engine layer.
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/tensor.h"
#include "graft/engine/engine.h"

namespace graft {

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const TensorList& inputs) const {
  // PyTorch tells "no inputs given" (every leaf) from an explicitly empty list (a mistake). The got
  // carries LibTorch's sentence, which its tests look for.
  GRAFT_CHECK(!inputs.empty(), "backward", "a non-empty `inputs` list, or none (every leaf)",
              "an empty `inputs` list. 'inputs' argument to backward() cannot be empty",
              "leave `inputs` out to accumulate into every leaf's .grad");
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs);
}

void Tensor::retain_grad() const {
  GRAFT_CHECK(requires_grad(), "retain_grad", "a tensor that requires grad", "one that does not",
              "retain_grad() only makes sense on tensors that take part in autograd");
  if (is_leaf()) return;  // leaves keep their .grad anyway
  auto& meta = impl().autograd_meta();
  if (meta.retains_grad) return;
  meta.retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_;
  meta.grad_fn->retain_grad_hook = [weak](const Tensor& g) {
    auto t = weak.lock();
    if (!t || !g.defined()) return;
    auto& m = t->autograd_meta();
    if (!m.grad.defined()) m.grad = g.clone().detach();
    else m.grad = m.grad + g.detach();
  };
}

}  // namespace graft
