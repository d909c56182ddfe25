// Safetensors checkpoints: the format of Hugging Face's `safetensors`, readable by PyTorch, JAX and
// the reference Rust implementation, and written byte for byte as that implementation writes it.
//
// Note [Safetensors layout]
//   bytes [0, 8)        N, the header length, unsigned 64-bit little-endian
//   bytes [8, 8 + N)    a JSON object, UTF-8, starting with '{' and padded with spaces to make
//                       8 + N a multiple of 8:
//                         {"__metadata__": {"key": "value", ...},            (optional, strings only)
//                          "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//   bytes [8 + N, end)  the byte buffer; each tensor's little-endian, row-major data lies at
//                       [begin, end) of it. Together the tensors cover the buffer exactly: sorted by
//                       offset, each begins where the previous one ends, and the last one ends at the
//                       end of the file.
// graft writes tensors by descending dtype (I64, F64, F32, BF16, F16, BOOL) and then by name, as the
// reference does, so every tensor is aligned to its element size; the header lists __metadata__
// first and then the tensors in data order. The reader accepts any order that covers the buffer.
//
// graft's dtypes map to "F32", "F64", "I64", "BOOL", "F16" and "BF16". Other safetensors dtypes
// (I32, U8, F8_E4M3, ...) are rejected with a hint to convert them before saving.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/core/ordered_dict.h"
#include "graft/core/tensor.h"

namespace graft::io {

using Metadata = std::map<std::string, std::string>;
using TensorDict = OrderedDict<std::string, Tensor>;

// What a safetensors file holds. `tensors` are in name order; they are fresh contiguous CPU tensors
// that do not require grad. Unpacks as `auto [tensors, metadata] = load_safetensors(path);`.
struct SafetensorsContents {
  TensorDict tensors;
  Metadata metadata;
};

struct LoadOptions {
  // Convert F16 and BF16 tensors to float32 (exactly) instead of returning kFloat16/kBFloat16
  // tensors, which hold the raw bits but have no kernels yet.
  bool half_to_float32 = false;
};

// Writes `tensors` (any strides; their data, never their autograd history) and `metadata` to `path`
// atomically: the file is written to a temporary file in the same directory, flushed to disk
// (fsync) and renamed over `path`, so a failure at any point leaves an existing file untouched.
// Throws graft::Error naming the file for an unwritable directory, a full disk, a non-CPU or
// undefined tensor, or a tensor named "__metadata__".
void save_safetensors(const std::string& path, const TensorDict& tensors, const Metadata& metadata = {});
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const Metadata& metadata = {});

// Reads a safetensors file. Every malformed input (truncated file, header length past the end,
// invalid JSON, unknown dtype, shape that does not match the offsets, overlapping, out-of-bounds or
// non-contiguous offsets, negative dims, sizes that overflow) throws graft::Error naming the file
// and the problem; nothing is allocated from sizes the file has not shown it holds.
SafetensorsContents load_safetensors(const std::string& path, const LoadOptions& options = {});

// The same two operations on memory. `name` is what error messages call the buffer.
std::vector<uint8_t> serialize_safetensors(const TensorDict& tensors, const Metadata& metadata = {});
SafetensorsContents parse_safetensors(std::span<const uint8_t> bytes, std::string_view name = "<memory>",
                                      const LoadOptions& options = {});

// ---- checkpoints: several state dicts in one file, each under its own prefix ----
// save_checkpoint("run.safetensors", {{"model.", model.state_dict()}, {"optim.", optim_state}},
//                 {{"epoch", "3"}});
// stores "model.fc1.weight", "optim.state.0.exp_avg", ... and the metadata. Two parts that produce
// the same name are an error.
using CheckpointParts = std::vector<std::pair<std::string, TensorDict>>;
void save_checkpoint(const std::string& path, const CheckpointParts& parts, const Metadata& metadata = {});

struct Checkpoint {
  TensorDict tensors;  // every tensor, full names, in name order
  Metadata metadata;

  // The tensors whose names start with `prefix`, with the prefix removed (in name order). With
  // `required`, a prefix that matches nothing throws, naming the prefixes that are present.
  TensorDict part(const std::string& prefix, bool required = true) const;
  // The metadata value for `key`; throws naming the keys present when it is missing.
  const std::string& meta(const std::string& key) const;
};
Checkpoint load_checkpoint(const std::string& path, const LoadOptions& options = {});

namespace detail {
// Test hook: when set to n >= 0, the next saves fail after writing n bytes of the temporary file,
// as a full disk would (the hook stays set until reset with -1).
void set_save_failure_after_bytes(int64_t n);
}  // namespace detail

}  // namespace graft::io
