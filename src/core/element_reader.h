// Reading one element of any dtype as a double or an int64, at an element offset from a tensor's
// first element (internal to src/core: the printers' way to values without the ops layer).
#pragma once

#include <cstdint>

#include "graft/core/dtype.h"
#include "graft/core/half.h"

namespace graft::detail {

// Reads elements of any dtype at an element offset from the tensor's first element.
struct ElementReader {
  const char* base;
  DType dtype;
  double as_double(int64_t off) const {
    switch (dtype) {
      case DType::Float32: return reinterpret_cast<const float*>(base)[off];
      case DType::Float64: return reinterpret_cast<const double*>(base)[off];
      case DType::Int64: return static_cast<double>(reinterpret_cast<const int64_t*>(base)[off]);
      case DType::Bool: return reinterpret_cast<const bool*>(base)[off] ? 1.0 : 0.0;
      case DType::Float16: return half_bits_to_float(reinterpret_cast<const uint16_t*>(base)[off]);
      case DType::BFloat16: return bfloat16_bits_to_float(reinterpret_cast<const uint16_t*>(base)[off]);
      case DType::Int32: return reinterpret_cast<const int32_t*>(base)[off];
      case DType::Int16: return reinterpret_cast<const int16_t*>(base)[off];
      case DType::Int8: return reinterpret_cast<const int8_t*>(base)[off];
      case DType::UInt8: return reinterpret_cast<const uint8_t*>(base)[off];
    }
    return 0;
  }
  int64_t as_int(int64_t off) const {
    switch (dtype) {
      case DType::Int32: return reinterpret_cast<const int32_t*>(base)[off];
      case DType::Int16: return reinterpret_cast<const int16_t*>(base)[off];
      case DType::Int8: return reinterpret_cast<const int8_t*>(base)[off];
      case DType::UInt8: return reinterpret_cast<const uint8_t*>(base)[off];
      default: return reinterpret_cast<const int64_t*>(base)[off];
    }
  }
  bool as_bool(int64_t off) const { return reinterpret_cast<const bool*>(base)[off]; }
};

}  // namespace graft::detail
