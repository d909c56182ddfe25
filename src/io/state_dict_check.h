// How a file's tensors fit a module's state dict, key by key: the one comparison behind
// graft::load(module, path) (serialize.cpp) and graft::load_state_dict (state_dict.cpp), which
// word and judge its findings each their own way (internal).
#pragma once

#include <string>
#include <vector>

#include "graft/core/ordered_dict.h"
#include "graft/core/tensor.h"

namespace graft::io::detail {

struct StateDictFit {
  // A key both hold, with another shape (`shape`) or the same shape and another dtype.
  struct Mismatch {
    std::string key;
    Tensor file, module;
    bool shape = false;
  };
  std::vector<std::string> missing;     // the module's keys the file lacks, in the module's order
  std::vector<std::string> unexpected;  // the file's keys the module lacks, in the file's order
  std::vector<Mismatch> mismatches;     // in the module's order
};

// Compares `file` with `module_state` (module.state_dict()).
StateDictFit fit_state_dict(const OrderedDict<std::string, Tensor>& module_state,
                            const OrderedDict<std::string, Tensor>& file);

}  // namespace graft::io::detail
