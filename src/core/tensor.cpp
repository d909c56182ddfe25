// TensorImpl and the Tensor handle's metadata. Tensor's autograd methods are declared in tensor.h
// with the rest of the class and defined in the layer they use: src/autograd/tensor_autograd.cpp
// (requires_grad, grad, hooks, detach, and TensorImpl's destructor, which destroys AutogradMeta),
// src/engine/tensor_backward.cpp (backward, retain_grad) and src/ops/tensor_methods.cpp (the ops).
#include "graft/core/small_object_pool.h"
#include "graft/core/tensor.h"

#include "graft/core/error.h"
#include "graft/core/half.h"
#include "graft/core/memory.h"

namespace graft {

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
template int32_t* Tensor::data_ptr<int32_t>() const;
template int16_t* Tensor::data_ptr<int16_t>() const;
template int8_t* Tensor::data_ptr<int8_t>() const;
template uint8_t* Tensor::data_ptr<uint8_t>() const;

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
    case DType::Int32: return Scalar(static_cast<int64_t>(*reinterpret_cast<const int32_t*>(p)));
    case DType::Int16: return Scalar(static_cast<int64_t>(*reinterpret_cast<const int16_t*>(p)));
    case DType::Int8: return Scalar(static_cast<int64_t>(*reinterpret_cast<const int8_t*>(p)));
    case DType::UInt8: return Scalar(static_cast<int64_t>(*reinterpret_cast<const uint8_t*>(p)));
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
template int16_t Tensor::item<int16_t>() const;
template int8_t Tensor::item<int8_t>() const;
template uint8_t Tensor::item<uint8_t>() const;

namespace detail {
bool set_meta_op(bool on);  // src/core/dtype.cpp

void throw_meta_data_access() {
  const char* op = memory::current_op();
  throw Error(op ? op : "data_ptr", "a tensor with data", "a meta tensor (sizes, strides and dtype only)",
              std::string(op ? "this op reads its input's values, which a meta tensor does not have" : "meta tensors have no data") +
                  "; run it on CPU tensors, or keep meta tensors to shape-only work (Note [Meta device])");
}

Device op_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* meta = nullptr;
  const Tensor* cpu = nullptr;
  for (const Tensor* t : tensors) {
    if (!t || !t->defined()) continue;
    if (t->is_meta()) meta = meta ? meta : t;
    else if (t->dim() > 0) cpu = cpu ? cpu : t;
  }
  if (!meta) return Device(DeviceType::CPU);
  GRAFT_CHECK(!cpu, op, "every tensor on one device (all meta, or all CPU)",
              "a meta tensor of shape " + shape_str(meta->sizes()) + " beside a CPU tensor of shape " + shape_str(cpu->sizes()),
              "move the CPU tensors to the meta device with .to(graft::kMeta), or the model with module->to(graft::kMeta)");
  return Device(DeviceType::Meta);
}

MetaOpScope::MetaOpScope(const char* op, std::initializer_list<const Tensor*> tensors)
    : meta_(op_device(op, tensors).is_meta()) {
  if (meta_) previous_ = set_meta_op(true);
}
MetaOpScope::~MetaOpScope() {
  if (meta_) set_meta_op(previous_);
}
}  // namespace detail

// Tensor::set_data: the data of `new_data` (storage, layout, dtype) in this TensorImpl, so every
// handle sees it (a module's to(kMeta) moves its parameters this way, so the device may change).
// The storage takes this tensor's memory category (Note [Memory categories]): a
// parameter given new data stays a parameter in the accounting.
void Tensor::set_data(const Tensor& new_data) const {
  GRAFT_CHECK(defined() && new_data.defined(), "set_data", "two defined tensors",
              defined() ? "an undefined new_data" : "an undefined tensor", "give set_data a tensor with data");
  TensorImpl& dst = impl();
  const TensorImpl& s = new_data.impl();
  if (&dst == &s) return;
  if (dst.storage && s.storage && dst.storage != s.storage)
    memory::set_category(*s.storage, memory::category_of(*dst.storage));
  dst.storage = s.storage;
  dst.offset = s.offset;
  dst.sizes = s.sizes;
  dst.strides = s.strides;
  dst.numel = s.numel;
  dst.dtype = s.dtype;
  dst.is_view = false;
}

}  // namespace graft
