// The unpickler's entry points that graft's own archive reader shares with pickle_load (internal).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

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

// A TorchScript module object as LibTorch's OutputArchive saves it (Note [LibTorch archives] in
// libtorch_archive.cpp): its attributes in order, each a tensor (a parameter, or a buffer), an int,
// a double, a bool or a string, or a submodule.
struct ScriptObject {
  struct Attribute {
    std::string name;
    IValue value;
    std::shared_ptr<ScriptObject> object;  // set for a submodule
    bool is_buffer = false;
  };
  std::vector<Attribute> attributes;
};

// The bytes of an archive LibTorch's torch::load (torch::jit::load) reads: data.pkl holding the
// objects, the code folder declaring their classes in TorchScript, constants.pkl, version, and
// the storages.
// Errors name `op`.
std::string write_script_archive(const ScriptObject& root, const std::string& op);

}  // namespace graft::io::detail
