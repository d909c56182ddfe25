// The unpickler's entry points that graft's own archive reader shares with pickle_load (internal).
#pragma once

#include <cstddef>
#include <string>

#include "graft/core/ivalue.h"

namespace graft::io::detail {

// In a file LibTorch's torch::save wrote, the pickled root is a TorchScript object (a class named
// __torch__.*) whose attributes are its tensors, values and nested objects. With script_objects,
// the unpickler turns each object into a GenericDict whose first entry is
// (kScriptClassKey, the class's qualified name), followed by its attributes in order. The key
// cannot occur in a Python pickle read without script_objects, where such classes are refused.
inline const std::string kScriptClassKey = std::string("\x01") + "class";

// The root of a zip checkpoint (Note [PyTorch's file format]) held in data[0, size). `source`
// names the file in errors ("model.pt", "<memory>"), `op` the operation ("pickle_load"): errors
// say pickle_load("model.pt").
IValue read_torch_zip(const char* data, size_t size, const std::string& source, const std::string& op,
                      bool script_objects);
// The same for a file in either of torch.save's formats: the zip, or the legacy one
// (Note [PyTorch's legacy format] in pickle.cpp). This is pickle_load.
IValue read_torch_file(const char* data, size_t size, const std::string& source, const std::string& op);

}  // namespace graft::io::detail
