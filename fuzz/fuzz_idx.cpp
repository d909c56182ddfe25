// Fuzzes the IDX reader (raw and gzipped) on bytes in memory. Every input must either parse or
// throw graft::Error; an input that parses must hold exactly the bytes its sizes call for, and
// convert to a tensor of that shape.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "graft/core/error.h"
#include "graft/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  graft::data::IdxArray a;
  try {
    a = graft::data::parse_idx(std::span<const uint8_t>(data, size), "fuzz");
  } catch (const graft::Error&) {
    return 0;
  }
  if (a.bytes.size() != static_cast<size_t>(a.numel()) * graft::data::idx_type_size(a.type)) std::abort();
  const graft::Tensor t = graft::data::idx_to_tensor(a);
  if (t.numel() != a.numel() || t.dim() != static_cast<int64_t>(a.sizes.size())) std::abort();
  return 0;
}
