// TensorImpl and the Tensor handle's metadata and autograd accessors.
#include "graft/core/small_object_pool.h"
#include "graft/core/tensor.h"

#include <atomic>

#include "graft/engine/engine.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"
#include "graft/core/half.h"

namespace graft {

TensorImpl::TensorImpl(std::shared_ptr<Storage> st, int64_t off, IntArrayRef sz, IntArrayRef strd, DType dt)
    : storage(std::move(st)), offset(off), sizes(sz), strides(strd), numel(numel_of(sz)), dtype(dt) {}

TensorImpl::~TensorImpl() = default;

autograd::AutogradMeta& TensorImpl::autograd_meta() {
  if (!autograd) autograd = std::make_unique<autograd::AutogradMeta>();
  return *autograd;
}

bool TensorImpl::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

TensorImpl& Tensor::impl() const {
  GRAFT_CHECK(impl_ != nullptr, "Tensor", "a defined tensor", "an undefined (default-constructed) tensor",
              "create it with a factory such as graft::zeros, or check .defined() first");
  return *impl_;
}

int64_t Tensor::size(int64_t d) const {
  return impl().sizes[static_cast<size_t>(wrap_dim(d, dim(), "size"))];
}
int64_t Tensor::stride(int64_t d) const {
  return impl().strides[static_cast<size_t>(wrap_dim(d, dim(), "stride"))];
}

template <class T>
T* Tensor::data_ptr() const {
  GRAFT_CHECK(dtype() == dtype_of<T>(), "data_ptr", std::string("the tensor's dtype ") + dtype_name(dtype()),
              std::string("data_ptr<") + dtype_name(dtype_of<T>()) + ">",
              "ask for the C++ type matching the dtype, or convert with .to(dtype) first");
  return static_cast<T*>(data_ptr());
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template bool* Tensor::data_ptr<bool>() const;
template Half* Tensor::data_ptr<Half>() const;
template BFloat16* Tensor::data_ptr<BFloat16>() const;

Scalar Tensor::item() const {
  GRAFT_CHECK(numel() == 1, "item", "a tensor with exactly one element",
              "a tensor of shape " + shape_str(sizes()) + " with " + std::to_string(numel()) + " elements",
              "reduce it first (e.g. .sum()), or index one element with .select()");
  const char* p = impl().data_bytes();
  switch (dtype()) {
    case DType::Float32: return Scalar(*reinterpret_cast<const float*>(p));
    case DType::Float64: return Scalar(*reinterpret_cast<const double*>(p));
    case DType::Int64: return Scalar(*reinterpret_cast<const int64_t*>(p));
    case DType::Bool: return Scalar(*reinterpret_cast<const uint8_t*>(p) != 0);  // any byte, not UB
    case DType::Float16: return Scalar(static_cast<double>(reinterpret_cast<const Half*>(p)->to_float()));
    case DType::BFloat16: return Scalar(static_cast<double>(reinterpret_cast<const BFloat16*>(p)->to_float()));
    default: throw Error("item", "a float32, float64, int64 or bool tensor", dtype_name(dtype()), "");
  }
}

template <class T>
T Tensor::item() const {
  return item().to<T>();
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int Tensor::item<int>() const;
template bool Tensor::item<bool>() const;

// ---- autograd ----

bool Tensor::requires_grad() const {
  const auto& a = impl().autograd;
  return a && (a->requires_grad || a->grad_fn);
}

Tensor& Tensor::requires_grad_(bool r) {
  set_requires_grad(r);
  return *this;
}

const Tensor& Tensor::set_requires_grad(bool r) const {
  auto& i = impl();
  if (!r && !i.autograd) return *this;
  GRAFT_CHECK(!i.autograd || !i.autograd->grad_fn, "requires_grad_",
              "a leaf tensor (one not produced by a recorded op)",
              std::string("a non-leaf tensor with grad_fn ") + (i.autograd ? i.autograd->grad_fn->name() : ""),
              "call .detach() to get a leaf, then requires_grad_() on it");
  GRAFT_CHECK(!r || is_floating_point(), "requires_grad_", "a floating-point tensor",
              std::string("a ") + dtype_name(dtype()) + " tensor",
              "only floating-point tensors can require gradients; convert with .to(graft::kFloat32)");
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
  return a ? a->grad : none;
}

Tensor& Tensor::mutable_grad() { return impl().autograd_meta().grad; }

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const TensorList& inputs) const {
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

bool Tensor::retains_grad() const {
  const auto& a = impl().autograd;
  return a && a->retains_grad;
}

Tensor Tensor::detach() const {
  auto& i = impl();
  auto out = std::allocate_shared<TensorImpl>(graft::detail::PoolAllocator<TensorImpl>(), i.storage, i.offset, i.sizes, i.strides, i.dtype);
  out->is_view = true;
  return Tensor(std::move(out));
}

Tensor& Tensor::detach_() {
  auto& i = impl();
  GRAFT_CHECK(!i.is_view || is_leaf(), "detach_", "a tensor that is not a view of another recorded tensor",
              "a view with grad_fn", "use .detach() (out of place) instead");
  if (i.autograd) {
    i.autograd->grad_fn.reset();
    i.autograd->requires_grad = false;
  }
  return *this;
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

void Tensor::remove_hook(unsigned id) const {
  if (is_leaf()) {
    if (impl().autograd) std::erase_if(impl().autograd->hooks, [id](const auto& p) { return p.first == id; });
  } else {
    grad_fn()->remove_pre_hook(id);
  }
}

}  // namespace graft
