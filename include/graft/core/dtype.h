// Data types and devices: runtime properties of every tensor.
//
// float16 and bfloat16 are named now so that storage and dispatch grow into them without a change
// of interface; kernels reject them with a clear error until they exist. The same holds for CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace graft {

// The integer dtypes after the first six keep the values graft's files were written with.
enum class DType : uint8_t { Float32, Float64, Int64, Bool, Float16, BFloat16, Int32, Int16, Int8, UInt8 };
using ScalarType = DType;  // LibTorch spelling
using Dtype = DType;       // torch::Dtype (torch/types.h)

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kDouble = DType::Float64;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kLong = DType::Int64;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt = DType::Int32;
inline constexpr DType kInt16 = DType::Int16;
inline constexpr DType kShort = DType::Int16;
inline constexpr DType kInt8 = DType::Int8;
inline constexpr DType kChar = DType::Int8;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kByte = DType::UInt8;
inline constexpr DType kBool = DType::Bool;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kHalf = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;

// Note [One dtype table]
// Every name a dtype has (graft's and torch's "float32", LibTorch's c10::ScalarType "Float",
// PyTorch's Tensor.type() "torch.FloatTensor", safetensors' "F32") and its item size live in
// kDTypeTable, one row per DType in enum order; dtype_name, element_size, the printers and the
// safetensors reader and writer all read it, so a new dtype is one new row.
struct DTypeInfo {
  DType dtype;
  const char* name;              // graft's name, also PyTorch's torch.<name>: "float32"
  const char* scalar_type_name;  // LibTorch's c10::ScalarType name: "Float"
  const char* tensor_type;       // PyTorch's Tensor.type() of a CPU tensor: "torch.FloatTensor"
  const char* safetensors_name;  // the safetensors header's dtype: "F32"
  int safetensors_rank;          // the safetensors reference's dtype order (saving sorts by it, descending)
  size_t itemsize;               // bytes per element
};
inline constexpr DTypeInfo kDTypeTable[] = {
    {DType::Float32, "float32", "Float", "torch.FloatTensor", "F32", 11, 4},
    {DType::Float64, "float64", "Double", "torch.DoubleTensor", "F64", 12, 8},
    {DType::Int64, "int64", "Long", "torch.LongTensor", "I64", 13, 8},
    {DType::Bool, "bool", "Bool", "torch.BoolTensor", "BOOL", 0, 1},
    {DType::Float16, "float16", "Half", "torch.HalfTensor", "F16", 7, 2},
    {DType::BFloat16, "bfloat16", "BFloat16", "torch.BFloat16Tensor", "BF16", 8, 2},
    {DType::Int32, "int32", "Int", "torch.IntTensor", "I32", 9, 4},
    {DType::Int16, "int16", "Short", "torch.ShortTensor", "I16", 5, 2},
    {DType::Int8, "int8", "Char", "torch.CharTensor", "I8", 2, 1},
    {DType::UInt8, "uint8", "Byte", "torch.ByteTensor", "U8", 1, 1},
};
inline constexpr size_t kNumDTypes = sizeof(kDTypeTable) / sizeof(kDTypeTable[0]);
static_assert(
    [] {
      for (size_t i = 0; i < kNumDTypes; ++i)
        if (static_cast<size_t>(kDTypeTable[i].dtype) != i) return false;
      return true;
    }(),
    "kDTypeTable has one row per DType, in enum order");
// The row of t (Note [One dtype table]).
const DTypeInfo& dtype_info(DType t);

size_t element_size(DType t);
const char* dtype_name(DType t);  // "float32", "float64", "int64", "bool", ...
// `std::cout << dtype` writes LibTorch's c10::ScalarType name ("Float", "Long"), as
// `std::cout << t.scalar_type()` does in LibTorch (its `t.dtype()`, a TypeMeta, writes "float").
std::ostream& operator<<(std::ostream& os, DType t);
inline bool is_floating_point(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}
inline bool is_integral(DType t, bool include_bool) {
  return t == DType::Int64 || t == DType::Int32 || t == DType::Int16 || t == DType::Int8 || t == DType::UInt8 ||
         (include_bool && t == DType::Bool);
}
// PyTorch's promotion between two tensors of equal standing: bool < the integers < the floating
// types; among integers the wider wins, and uint8 with a signed type goes to the signed type that
// holds both (uint8 + int8 = int16); float16 + bfloat16 = float32.
DType promote_types(DType a, DType b);

// The dtype factories give a floating tensor when none is named: float32 unless set_default_dtype
// chose float64 (the only two PyTorch allows). Process-wide, as in PyTorch; set it before other
// threads make tensors.
DType get_default_dtype();
void set_default_dtype(DType dtype);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }

// Note [Meta device]
// A meta tensor (kMeta, as in LibTorch) has sizes, strides and a dtype but no memory: every op runs
// its checks, its shape rule and its autograd recording on it, and no kernel. Memory accounting
// counts the bytes it would take in counters of its own (memory::stats(kMeta)), so a model's
// forward, backward and optimizer step on meta tensors tell what each category would need without
// allocating it. Reading a meta tensor's data (data_ptr, item, printing values, to(kCPU)) is a
// graft::Error, never a crash; so is mixing meta and CPU tensors in one op (a 0-dim CPU tensor, a
// wrapped number, excepted, as in PyTorch). See docs/meta.md.
enum class DeviceType : uint8_t { CPU, CUDA, Meta };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
inline constexpr DeviceType kMeta = DeviceType::Meta;

class Device {
 public:
  Device() = default;
  Device(DeviceType t, int8_t i = -1) : type_(t), index_(i) {}  // NOLINT: implicit like LibTorch
  // LibTorch's device string: "cpu", "cuda", "meta", with an optional ":index" ("cuda:1").
  Device(const std::string& device_string);  // NOLINT: implicit like LibTorch
  Device(const char* device_string) : Device(std::string(device_string)) {}  // NOLINT
  DeviceType type() const noexcept { return type_; }
  int8_t index() const noexcept { return index_; }
  void set_index(int8_t index) { index_ = index; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_meta() const { return type_ == DeviceType::Meta; }
  bool has_index() const { return index_ >= 0; }
  bool operator==(const Device&) const = default;
  std::string str() const;

 private:
  DeviceType type_ = DeviceType::CPU;
  int8_t index_ = -1;
};

// LibTorch's memory layouts. graft's tensors are strided (dense); kSparse exists so that options
// naming it read as in LibTorch, and a factory asked for it says that graft has no sparse tensors.
enum class Layout : int8_t { Strided, Sparse };
inline constexpr Layout kStrided = Layout::Strided;
inline constexpr Layout kSparse = Layout::Sparse;
std::ostream& operator<<(std::ostream& os, Layout layout);  // "Strided", "Sparse" (LibTorch's)

// `std::cout << device` writes Device::str(), "cpu", "meta", "cuda:0", as LibTorch does.
std::ostream& operator<<(std::ostream& os, const Device& device);

// The device factories use when their options name none: kCPU, or kMeta inside a
// DefaultDeviceGuard (thread-local, as PyTorch's `with torch.device("meta"):`).
Device get_default_device();

// Makes factories (and so modules' parameters) that name no device use `device` on this thread
// while the guard lives: `{ graft::DefaultDeviceGuard meta(graft::kMeta); nn::Linear big(1 << 16, 1 << 16); }`
// builds the module on meta tensors, allocating nothing (Note [Meta device]). Ops on meta inputs
// open one too, so the temporaries they make are meta as well. Guards nest.
class DefaultDeviceGuard {
 public:
  explicit DefaultDeviceGuard(Device device);
  ~DefaultDeviceGuard();
  DefaultDeviceGuard(const DefaultDeviceGuard&) = delete;
  DefaultDeviceGuard& operator=(const DefaultDeviceGuard&) = delete;

 private:
  Device previous_;
};

}  // namespace graft
