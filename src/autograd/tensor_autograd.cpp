// Tensor's autograd accessors (declared in graft/core/tensor.h with the rest of the class; defined
// here, in the autograd layer, because they use AutogradMeta and Node), and core's autograd
// interface (src/core/autograd_interface.h).
#include <atomic>

#include "core/autograd_interface.h"
#include "graft/autograd/grad_mode.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/small_object_pool.h"
#include "graft/core/tensor.h"
#include "graft/core/warning.h"

namespace graft {

// TensorImpl's constructor and destructor are defined here so that core never needs
// AutogradMeta's definition: both instantiate unique_ptr<AutogradMeta>'s deleter (a constructor
// destroys its members when it throws), which needs the complete type.
TensorImpl::TensorImpl(std::shared_ptr<Storage> st, int64_t off, IntArrayRef sz, IntArrayRef strd, DType dt)
    : storage(std::move(st)), offset(off), sizes(sz), strides(strd), numel(numel_of(sz)), dtype(dt),
      is_inference(InferenceMode::is_enabled()) {}  // Note [Inference tensors] in grad_mode.cpp

TensorImpl::~TensorImpl() = default;

autograd::AutogradMeta& TensorImpl::autograd_meta() {
  if (!autograd) autograd = std::make_unique<autograd::AutogradMeta>();
  return *autograd;
}

namespace detail {
const char* grad_fn_name(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name_c_str() : nullptr; }
}  // namespace detail

bool Tensor::requires_grad() const {
  const auto& a = impl().autograd;
  return a && (a->requires_grad || a->grad_fn);
}

Tensor& Tensor::requires_grad_(bool r) const {
  set_requires_grad(r);
  return mut();
}

const Tensor& Tensor::set_requires_grad(bool r) const {
  auto& i = impl();
  if (!r && !i.autograd) return *this;
  GRAFT_CHECK(!i.autograd || !i.autograd->grad_fn, "requires_grad_",
              "a leaf tensor (one not produced by a recorded op)",
              std::string("a non-leaf tensor with grad_fn ") + (i.autograd ? i.autograd->grad_fn->name() : "") +
                  ": you can only change requires_grad flags of leaf variables.",
              "call .detach() to get a leaf, then requires_grad_() on it");
  GRAFT_CHECK(!r || !i.is_inference || InferenceMode::is_enabled(), "requires_grad_",
              "a normal tensor (made outside InferenceMode)",
              "an inference tensor. Setting requires_grad=True on inference tensor outside InferenceMode is not "
              "allowed.",
              "make a normal tensor with .clone() outside InferenceMode first");
  GRAFT_CHECK(!r || is_floating_point(), "requires_grad_", "a floating-point tensor",
              std::string("a ") + dtype_name(dtype()) +
                  " tensor. Only Tensors of floating point and complex dtype can require gradients",
              "convert with .to(graft::kFloat32) (graft has no complex dtypes)");
  i.autograd_meta().requires_grad = r;
  return *this;
}

bool Tensor::is_leaf() const {
  const auto& a = impl().autograd;
  return !a || !a->grad_fn;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  const auto& a = impl().autograd;
  return a ? a->grad_fn : none;
}

const Tensor& Tensor::grad() const {
  static const Tensor none;
  const auto& a = impl().autograd;
  // As PyTorch: reading the .grad of a non-leaf that requires grad and does not retain it is
  // almost always a mistake (backward never fills it): say so.
  if (a && a->grad_fn && !a->retains_grad) [[unlikely]]
    warn("the .grad of a tensor that is not a leaf is being read; backward() does not fill it. Call .retain_grad() "
         "on it before backward() to keep its gradient, or read the leaf tensor's .grad instead");
  return a ? a->grad : none;
}

Tensor& Tensor::mutable_grad() { return impl().autograd_meta().grad; }

bool Tensor::retains_grad() const {
  const auto& a = impl().autograd;
  return a && a->retains_grad;
}

Tensor Tensor::detach() const {
  auto& i = impl();
  auto out = std::allocate_shared<TensorImpl>(graft::detail::PoolAllocator<TensorImpl>(), i.storage, i.offset, i.sizes, i.strides, i.dtype);
  out->is_view = true;
  out->is_inference = i.is_inference;  // the same memory: the same kind of tensor
  return Tensor(std::move(out));
}

Tensor& Tensor::detach_() const {
  auto& i = impl();
  GRAFT_CHECK(!i.is_view || is_leaf(), "detach_", "a tensor that is not a view of another recorded tensor",
              "a view with grad_fn", "use .detach() (out of place) instead");
  if (i.autograd) {
    i.autograd->grad_fn.reset();
    i.autograd->requires_grad = false;
  }
  return mut();
}

HookHandle Tensor::register_hook_impl(std::function<Tensor(const Tensor&)> hook) const {
  GRAFT_CHECK(requires_grad(), "register_hook", "a tensor that requires grad", "one that does not",
              "hooks run during backward, which this tensor takes no part in; call requires_grad_() first");
  static std::atomic<unsigned> next_id{1};
  const unsigned id = next_id++;
  if (is_leaf()) {
    impl().autograd_meta().hooks.emplace_back(id, std::move(hook));
    std::weak_ptr<TensorImpl> weak = impl_;
    return HookHandle(id, [weak, id] {
      if (auto t = weak.lock()) {
        auto& hs = t->autograd_meta().hooks;
        std::erase_if(hs, [id](const auto& p) { return p.first == id; });
      }
    });
  }
  const auto& fn = grad_fn();
  const unsigned nid = fn->add_pre_hook(std::move(hook));
  std::weak_ptr<autograd::Node> weak = fn;
  return HookHandle(nid, [weak, nid] {
    if (auto n = weak.lock()) n->remove_pre_hook(nid);
  });
}

HookHandle Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  GRAFT_CHECK(requires_grad() && is_leaf(), "register_post_accumulate_grad_hook", "a leaf that requires grad",
              requires_grad() ? "a non-leaf tensor" : "a tensor that does not require grad",
              "post-accumulate-grad hooks run where a leaf's .grad is written; register them on parameters");
  static std::atomic<unsigned> next_id{1};
  const unsigned id = next_id++;
  impl().autograd_meta().post_accumulate_hooks.emplace_back(id, std::move(hook));
  std::weak_ptr<TensorImpl> weak = impl_;
  return HookHandle(id, [weak, id] {
    if (auto t = weak.lock()) std::erase_if(t->autograd_meta().post_accumulate_hooks, [id](const auto& p) { return p.first == id; });
  });
}

void Tensor::remove_hook(unsigned id) const {
  size_t removed = 0;
  if (is_leaf()) {
    if (impl().autograd) removed = std::erase_if(impl().autograd->hooks, [id](const auto& p) { return p.first == id; });
  } else {
    removed = grad_fn()->remove_pre_hook(id);
  }
  GRAFT_CHECK(removed > 0, "remove_hook", "the id register_hook returned for this tensor",
              "id " + std::to_string(id) + ": Invalid index, no hook with that id on this tensor",
              "keep the id register_hook gave (a hook is removed once)");
}

}  // namespace graft
