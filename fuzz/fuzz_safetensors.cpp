// Fuzzes the safetensors reader on bytes in memory. Every input must either parse or throw
// graft::Error; anything else (a crash, a sanitizer report, another exception) is a bug. An input
// that parses must survive a round trip: serialize what was read, parse it again, get the same
// tensors and metadata.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "graft/core/error.h"
#include "graft/io/safetensors.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

bool same_tensor(const graft::Tensor& a, const graft::Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  graft::io::SafetensorsContents c;
  try {
    c = graft::io::parse_safetensors(bytes, "fuzz");
  } catch (const graft::Error&) {
    return 0;
  }
  const std::vector<uint8_t> again = graft::io::serialize_safetensors(c.tensors, c.metadata);
  const graft::io::SafetensorsContents c2 = graft::io::parse_safetensors(again, "round trip");
  require(c2.metadata == c.metadata);
  require(c2.tensors.keys() == c.tensors.keys());
  for (const auto& item : c.tensors) require(same_tensor(item.value(), c2.tensors[item.key()]));
  // Written the reference's way, the bytes are a fixed point.
  require(graft::io::serialize_safetensors(c2.tensors, c2.metadata) == again);
  // Half precision widens without trouble.
  const auto wide = graft::io::parse_safetensors(bytes, "fuzz", {.half_to_float32 = true});
  require(wide.tensors.size() == c.tensors.size());
  return 0;
}
