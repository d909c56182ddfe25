// IDX files, the format of MNIST and Fashion-MNIST.
//
// Note [IDX layout]
//   bytes 0-1   zero
//   byte  2     element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
//   byte  3     number of dims, n
//   then        n sizes, unsigned 32-bit big-endian
//   then        the elements, row-major, big-endian; exactly prod(sizes) of them
// A file may also be gzip-compressed as a whole (detected by the gzip magic 1f 8b), as the files
// are distributed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::data {

enum class IdxType : uint8_t { UInt8 = 0x08, Int8 = 0x09, Int16 = 0x0B, Int32 = 0x0C, Float32 = 0x0D, Float64 = 0x0E };
const char* idx_type_name(IdxType t);  // "uint8", "int8", ...
size_t idx_type_size(IdxType t);

// The decoded contents of an IDX file: elements in host byte order.
struct IdxArray {
  IdxType type = IdxType::UInt8;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;  // prod(sizes) * idx_type_size(type) bytes
  int64_t numel() const;
};

// Reads an IDX file, raw or gzipped. Throws graft::Error naming the file and the problem: missing
// file, bad magic, an unknown type code, more dims than graft tensors have (8), truncated data or
// trailing bytes, a corrupt gzip stream.
IdxArray read_idx_array(const std::string& path);
// The same on bytes in memory (raw or gzipped); `name` is what error messages call them.
IdxArray parse_idx(std::span<const uint8_t> bytes, std::string_view name = "<memory>");

// An IDX file as a tensor: integer types become int64, float32 stays float32, float64 float64.
Tensor read_idx(const std::string& path);
Tensor idx_to_tensor(const IdxArray& a);

}  // namespace graft::data
