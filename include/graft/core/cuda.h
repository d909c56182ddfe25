// graft::cuda: LibTorch's queries about CUDA, answered for a CPU-only library. Programs written for
// LibTorch test cuda::is_available() and fall back to the CPU; with graft they always take the CPU
// branch.
#pragma once

#include <cstdint>

namespace graft::cuda {

inline bool is_available() { return false; }
inline int64_t device_count() { return 0; }
inline bool cudnn_is_available() { return false; }

}  // namespace graft::cuda
