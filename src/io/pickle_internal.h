// What the unpickler (pickle.cpp) and the pickler (pickle_writer.cpp) share: the opcodes and
// storage type names; and their entry points graft's own archives use (internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/core/ivalue.h"

namespace graft::io::detail {

// ---- dtypes and storage types ------------------------------------------------------------------

// The unpickler accepts these globals as storage types; the pickler names a tensor's dtype by them.
struct StorageName {
  DType dtype;
  const char* name;  // torch.<name>: the legacy typed-storage classes torch.save names
};
inline constexpr StorageName kStorageNames[] = {
    {DType::Float32, "FloatStorage"}, {DType::Float64, "DoubleStorage"}, {DType::Float16, "HalfStorage"},
    {DType::BFloat16, "BFloat16Storage"}, {DType::Int64, "LongStorage"}, {DType::Int32, "IntStorage"},
    {DType::Int16, "ShortStorage"}, {DType::Int8, "CharStorage"}, {DType::UInt8, "ByteStorage"},
    {DType::Bool, "BoolStorage"},
};

// ---- opcodes (Python's pickletools names) -----------------------------------------------------

// In a namespace of their own: the short names (NONE, LIST, DICT) would otherwise fill io::detail
// for every file that includes this header. pickle.cpp and pickle_writer.cpp use them unqualified.
namespace pickle_opcodes {
enum Op : uint8_t {
  MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', BININT = 'J', BININT1 = 'K', BININT2 = 'M',
  NONE = 'N', BINPERSID = 'Q', REDUCE = 'R', BINUNICODE = 'X', EMPTY_LIST = ']', APPEND = 'a', BUILD = 'b',
  GLOBAL = 'c', DICT = 'd', APPENDS = 'e', BINGET = 'h', LONG_BINGET = 'j', LIST = 'l', BINPUT = 'q',
  LONG_BINPUT = 'r', SETITEM = 's', TUPLE = 't', SETITEMS = 'u', EMPTY_DICT = '}', EMPTY_TUPLE = ')',
  BINFLOAT = 'G', BINBYTES = 'B', SHORT_BINBYTES = 'C', PROTO = 0x80, NEWOBJ = 0x81, TUPLE1 = 0x85,
  TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89, LONG1 = 0x8a, LONG4 = 0x8b,
  SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e, STACK_GLOBAL = 0x93, MEMOIZE = 0x94,
  FRAME = 0x95,
};
}  // namespace pickle_opcodes

// ---- entry points (the readers in pickle.cpp, the archive writer in pickle_writer.cpp) ----------

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

// The bytes of an archive LibTorch's torch::load (torch::jit::load) reads (pickle_writer.cpp):
// data.pkl holding the objects, the code folder declaring their classes in TorchScript,
// constants.pkl, version, and the storages.
// Errors name `op`.
std::string write_script_archive(const ScriptObject& root, const std::string& op);

}  // namespace graft::io::detail
