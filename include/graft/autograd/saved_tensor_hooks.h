// Saved-tensor hooks: decide how the graph keeps the tensors it saves for backward.
//
//   {
//     graft::autograd::SaveInBFloat16 scope;   // saved activations take half the memory
//     loss = model->forward(x).pow(2).mean();
//   }
//   loss.backward();                           // unpacked back to float32 as backward reads them
//
// Note [Saved-tensor hooks]
// While a SavedTensorsHooks scope is alive on a thread, every tensor a node saves for backward goes
// through pack(t), and the node keeps only what pack returned; backward reads unpack(packed). This is
// PyTorch's torch.autograd.graph.saved_tensors_hooks, in C++. The pair stays with each saved tensor,
// so backward may run after the scope has closed. Scopes nest (the innermost wins). Pack runs with
// gradient recording off and with hooks disabled (saving inside pack would recurse). A packed tensor
// is still checked for in-place changes of the original (while the original's storage lives). When
// unpack returns another dtype than the original's (pack kept it in bfloat16), the value is converted
// back, so backward always computes in the original dtype.
// Packed tensors count as saved activations in graft::memory; the original's bytes, no longer held by
// the graph, are freed as soon as nothing else needs them.
//
// Built-ins (both leave parameters, gradients and optimiser state as they are: the graph saving a
// weight costs nothing, since the weight lives on anyway):
//   SaveInBFloat16   keeps float32 saved tensors in bfloat16 (half the bytes; each element's
//                    relative error at most 2^-8, so gradients carry an error of that order).
//   SaveOnDisk(dir)  writes each saved tensor to an unlinked file in `dir`, memory-mapped: the bytes
//                    leave graft's tensor memory and the page cache may evict them; backward reads
//                    them from the mapping. Tensors smaller than `min_bytes` stay in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "graft/core/tensor.h"

namespace graft::autograd {

using PackHook = std::function<Tensor(const Tensor&)>;
using UnpackHook = std::function<Tensor(const Tensor&)>;

struct SavedTensorHookPair {
  PackHook pack;
  UnpackHook unpack;
};

class SavedTensorsHooks {
 public:
  SavedTensorsHooks(PackHook pack, UnpackHook unpack);
  ~SavedTensorsHooks();
  SavedTensorsHooks(const SavedTensorsHooks&) = delete;
  SavedTensorsHooks& operator=(const SavedTensorsHooks&) = delete;

  // The pair in effect on this thread (null: none), and a scope that suspends all pairs.
  static std::shared_ptr<const SavedTensorHookPair> current();
  class Disable {
   public:
    Disable();
    ~Disable();
    Disable(const Disable&) = delete;
    Disable& operator=(const Disable&) = delete;

   private:
    bool previous_;
  };
};

class SaveInBFloat16 : public SavedTensorsHooks {
 public:
  SaveInBFloat16();
};

class SaveOnDisk : public SavedTensorsHooks {
 public:
  explicit SaveOnDisk(std::string directory = "/tmp", int64_t min_bytes = 4096);
};

}  // namespace graft::autograd
