// dtype sizes and names (from kDTypeTable, Note [One dtype table]) and promotion.
#include "graft/core/dtype.h"

#include <atomic>
#include <ostream>
#include <utility>

#include "graft/core/error.h"

namespace graft {

const DTypeInfo& dtype_info(DType t) {
  const auto i = static_cast<size_t>(t);
  GRAFT_ASSERT(i < kNumDTypes, "every DType has a row in kDTypeTable");
  return kDTypeTable[i];
}

size_t element_size(DType t) { return static_cast<size_t>(t) < kNumDTypes ? dtype_info(t).itemsize : 0; }

const char* dtype_name(DType t) { return static_cast<size_t>(t) < kNumDTypes ? dtype_info(t).name : "?"; }

std::ostream& operator<<(std::ostream& os, DType t) {
  return os << (static_cast<size_t>(t) < kNumDTypes ? dtype_info(t).scalar_type_name : "UNKNOWN_SCALAR");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // PyTorch's table (c10/core/ScalarType.h's promoteTypes) follows from one order,
  //   bool < uint8, int8 < int16 < int32 < int64 < float16, bfloat16 < float32 < float64,
  // with two exceptions: uint8 and int8 meet at int16 (the smallest type holding both ranges), and
  // float16 and bfloat16 at float32.
  auto rank = [](DType t) {
    switch (t) {
      case DType::Bool: return 0;
      case DType::UInt8: return 1;
      case DType::Int8: return 1;
      case DType::Int16: return 2;
      case DType::Int32: return 3;
      case DType::Int64: return 4;
      case DType::Float16: return 5;
      case DType::BFloat16: return 5;
      case DType::Float32: return 6;
      case DType::Float64: return 7;
    }
    return 0;
  };
  const int ra = rank(a), rb = rank(b);
  if (ra == rb) return ra == 1 ? DType::Int16 : DType::Float32;  // {uint8, int8}, {float16, bfloat16}
  return ra > rb ? a : b;
}

namespace {
std::atomic<DType> g_default_dtype{DType::Float32};
}  // namespace

DType get_default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(DType dtype) {
  GRAFT_CHECK(dtype == DType::Float32 || dtype == DType::Float64, "set_default_dtype", "float32 or float64",
              dtype_name(dtype), "the default dtype is the dtype of floating tensors made without one; PyTorch "
              "allows only float32 and float64 here");
  g_default_dtype.store(dtype, std::memory_order_relaxed);
}

namespace {
thread_local Device t_default_device{DeviceType::CPU};
thread_local bool t_meta_op = false;  // detail::MetaOpScope (graft/core/tensor.h)
}  // namespace

Device get_default_device() { return t_meta_op ? Device(DeviceType::Meta) : t_default_device; }

namespace detail {
bool in_meta_op() { return t_meta_op; }
bool set_meta_op(bool on) { return std::exchange(t_meta_op, on); }
}  // namespace detail

DefaultDeviceGuard::DefaultDeviceGuard(Device device) : previous_(t_default_device) {
  GRAFT_CHECK(device.is_cpu() || device.is_meta(), "DefaultDeviceGuard", "a CPU device or the meta device", device.str(),
              "graft runs on the CPU and on meta tensors so far; the CUDA device is planned");
  t_default_device = device;
}
DefaultDeviceGuard::~DefaultDeviceGuard() { t_default_device = previous_; }

// LibTorch's grammar: a type name, then optionally ':' and a non-negative index without a sign or
// leading zeros ("cpu", "cuda:1", "meta"). Anything else is an error ("cuda:", "cpu::1", "3").
Device::Device(const std::string& device_string) {
  const size_t colon = device_string.find(':');
  const std::string name = device_string.substr(0, colon);
  const char* hint = "write \"cpu\", \"meta\" or \"cuda\", optionally with \":<index>\" (\"cuda:1\")";
  if (name == "cpu") type_ = DeviceType::CPU;
  else if (name == "cuda") type_ = DeviceType::CUDA;
  else if (name == "meta") type_ = DeviceType::Meta;
  else throw Error("Device", "a device type (cpu, cuda or meta)", "\"" + device_string + "\"", hint);
  if (colon == std::string::npos) return;
  const std::string digits = device_string.substr(colon + 1);
  const bool ok = !digits.empty() && digits.size() <= 3 &&
                  digits.find_first_not_of("0123456789") == std::string::npos && (digits.size() == 1 || digits[0] != '0') &&
                  std::stoi(digits) <= 127;
  if (!ok) throw Error("Device", "a device index from 0 to 127 after ':'", "\"" + device_string + "\"", hint);
  index_ = static_cast<int8_t>(std::stoi(digits));
}

std::string Device::str() const {
  std::string s(type_ == DeviceType::CPU ? "cpu" : type_ == DeviceType::Meta ? "meta" : "cuda");
  if (index_ >= 0) {
    s.push_back(':');
    s.append(std::to_string(index_));
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& device) { return os << device.str(); }
std::ostream& operator<<(std::ostream& os, Layout layout) { return os << (layout == kStrided ? "Strided" : "Sparse"); }

}  // namespace graft
