// Reading the archives LibTorch's torch::save and OutputArchive::save_to write (internal; used by
// graft::serialize::InputArchive, Note [LibTorch archives] in libtorch_archive.cpp).
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "graft/core/ivalue.h"
#include "graft/io/safetensors.h"

namespace graft::io::detail {

struct LibTorchArchive {
  TensorDict tensors;                    // full dotted keys ("head.0.weight"), in name order
  std::map<std::string, IValue> values;  // the other attributes ("pytorch_version", "state.0x...step")
  std::string kind;                      // "optimizer" when it holds one, else "archive"
};

// The archive in data[0, size), which must be a zip; errors say op_name("source").
LibTorchArchive read_libtorch_archive(const char* data, size_t size, const std::string& source, const std::string& op_name);

// graft's optimizer state dict (Note [Optimizer state dict]) from what torch::save(optimizer)
// wrote, keys relative to `prefix` ("" for the whole archive).
TensorDict libtorch_optimizer_state(const TensorDict& tensors, const std::map<std::string, IValue>& values,
                                    const std::string& prefix, const std::string& op);

}  // namespace graft::io::detail
