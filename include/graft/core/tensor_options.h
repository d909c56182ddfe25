// TensorOptions: dtype, device and requires_grad for factories, spelled as in LibTorch:
//   graft::zeros({2, 3}, graft::TensorOptions().dtype(graft::kFloat64).requires_grad(true))
//   graft::ones({2}, graft::kFloat64)         graft::randn({4}, graft::requires_grad())
#pragma once

#include <optional>
#include <type_traits>

#include "graft/core/dtype.h"

namespace graft {

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}    // NOLINT: implicit, as in LibTorch
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions(DeviceType d) : device_(d) {}  // NOLINT
  // LibTorch's: what makes a Device makes options, so `x.to({kCUDA, 1})` and
  // TensorOptions("cpu:0") name a device.
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  TensorOptions(DeviceType t, I index) : device_(Device(t, static_cast<int8_t>(index))) {}  // NOLINT
  TensorOptions(const std::string& device) : device_(Device(device)) {}     // NOLINT

  TensorOptions(Layout l) : layout_(l) {}  // NOLINT

  TensorOptions dtype(DType d) const { auto o = *this; o.dtype_ = d; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  TensorOptions device(DeviceType t, I index) const { return device(Device(t, static_cast<int8_t>(index))); }
  // LibTorch's: a CUDA device of this index.
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  TensorOptions device_index(I index) const { return device(DeviceType::CUDA, index); }
  TensorOptions layout(Layout l) const { auto o = *this; o.layout_ = l; return o; }
  TensorOptions requires_grad(bool r) const { auto o = *this; o.requires_grad_ = r; return o; }

  DType dtype() const { return dtype_ ? *dtype_ : get_default_dtype(); }
  bool has_dtype() const { return dtype_.has_value(); }
  // Unset: the default device (get_default_device(): the CPU, or meta inside a DefaultDeviceGuard).
  Device device() const { return device_ ? *device_ : get_default_device(); }
  bool has_device() const { return device_.has_value(); }
  bool requires_grad() const { return requires_grad_; }
  Layout layout() const { return layout_.value_or(kStrided); }
  bool has_layout() const { return layout_.has_value(); }

 private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  std::optional<Layout> layout_;
  bool requires_grad_ = false;
};

inline TensorOptions dtype(DType d) { return TensorOptions().dtype(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions layout(Layout l) { return TensorOptions().layout(l); }
template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
TensorOptions device_index(I index) { return TensorOptions().device_index(index); }

}  // namespace graft
