// pickle_save and write_script_archive: PyTorch's checkpoint format written (Note [PyTorch's file
// format] in graft/io/pickle.h), and LibTorch's archives (Note [LibTorch archives] in
// libtorch_archive.cpp). pickle.cpp reads both; what the two share is in pickle_internal.h.
#include "graft/io/pickle.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "graft/core/error.h"
#include "graft/io/file.h"
#include "io/pickle_internal.h"
#include "io/zip_archive.h"

namespace graft {
namespace io::detail {
namespace {

using namespace pickle_opcodes;  // MARK, STOP, ... (pickle_internal.h)

// ---- the pickler ------------------------------------------------------------------------------

const char* storage_name(DType dtype) {
  for (const auto& s : kStorageNames) {
    if (s.dtype == dtype) return s.name;
  }
  throw Error("pickle_save", "a tensor of a dtype PyTorch's format stores", dtype_name(dtype), "convert it first");
}

class Pickler {
 public:
  std::string run(const IValue& root) {
    out_.push_back(static_cast<char>(PROTO));
    out_.push_back(2);
    write(root, 0);
    out_.push_back(static_cast<char>(STOP));
    return std::move(out_);
  }
  // A TorchScript object tree (Note [LibTorch archives]): each object is its class (`classes`
  // gives each one's qualified name), an empty tuple, NEWOBJ, and its attributes as a dict, BUILD.
  std::string run_object(const ScriptObject& root, const std::map<const ScriptObject*, std::string>& classes) {
    out_.push_back(static_cast<char>(PROTO));
    out_.push_back(2);
    write_object(root, classes, 0);
    out_.push_back(static_cast<char>(STOP));
    return std::move(out_);
  }
  // The storages to write as data/<key>, in key order.
  std::vector<std::pair<std::string, Tensor>> storages;

 private:
  void write_object(const ScriptObject& o, const std::map<const ScriptObject*, std::string>& classes, int depth) {
    if (depth > kMaxPickleDepth) {
      throw Error("OutputArchive::save_to", "archives nested at most " + std::to_string(kMaxPickleDepth) + " deep",
                  "deeper nesting", "flatten the archive");
    }
    const std::string& qualified = classes.at(&o);
    const size_t dot = qualified.rfind('.');
    write_global(qualified.substr(0, dot).c_str(), qualified.substr(dot + 1).c_str());
    op(EMPTY_TUPLE);
    op(NEWOBJ);
    op(EMPTY_DICT);
    if (!o.attributes.empty()) {
      op(MARK);
      for (const auto& a : o.attributes) {
        write_string(a.name);
        if (a.object) {
          write_object(*a.object, classes, depth + 1);
        } else {
          write(a.value, depth + 1);
        }
      }
      op(SETITEMS);
    }
    op(BUILD);
  }
  void op(Op code) { out_.push_back(static_cast<char>(code)); }
  void le(uint64_t v, int k) {
    for (int i = 0; i < k; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void write_int(int64_t v) {
    if (v >= 0 && v < 256) {
      op(BININT1);
      le(static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      op(BININT2);
      le(static_cast<uint64_t>(v), 2);
    } else if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
      op(BININT);
      le(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
    } else {
      op(LONG1);
      out_.push_back(8);
      le(static_cast<uint64_t>(v), 8);
    }
  }
  void write_string(const std::string& s) {
    op(BINUNICODE);
    if (s.size() > std::numeric_limits<uint32_t>::max()) {
      throw Error("pickle_save", "a string under 4 GiB", std::to_string(s.size()) + " bytes", "split it");
    }
    le(s.size(), 4);
    out_ += s;
  }
  void write_global(const char* module, const char* name) {
    op(GLOBAL);
    out_ += module;
    out_ += '\n';
    out_ += name;
    out_ += '\n';
  }
  // Memoizes the container just opened at identity `id`; false when it was written before (a
  // BINGET of it is written instead). A container met again while it is being written holds
  // itself: an error, as pickle_load refuses cycles (Note [No cycles]).
  bool first_time(const void* id) {
    if (open_.count(id)) {
      throw Error("pickle_save", "containers without cycles", "a list, dict or tuple that holds itself",
                  "break the cycle: pickle_load, like graft's IValues, has no cyclic containers");
    }
    auto it = memo_.find(id);
    if (it != memo_.end()) {
      op(LONG_BINGET);
      le(it->second, 4);
      return false;
    }
    return true;
  }
  void put(const void* id) {
    const uint32_t key = static_cast<uint32_t>(memo_.size());
    memo_.emplace(id, key);
    op(LONG_BINPUT);
    le(key, 4);
  }
  template <class Seq>
  void write_list(const Seq& seq, int depth) {
    op(EMPTY_LIST);
    if (seq.empty()) return;
    op(MARK);
    for (const auto& e : seq) write(IValue(e), depth + 1);
    op(APPENDS);
  }
  void write_tensor(const Tensor& t) {
    if (!t.defined()) throw Error("pickle_save", "defined tensors", "an undefined tensor", "store None instead");
    if (t.is_meta()) throw Error("pickle_save", "tensors with data", "a meta tensor", "materialize it on the CPU first");
    const auto& storage = t.impl().storage;
    auto it = storage_keys_.find(storage.get());
    std::string key;
    int64_t numel = 0;
    if (it == storage_keys_.end()) {
      key = std::to_string(storages.size());
      storage_keys_.emplace(storage.get(), std::make_pair(key, t.dtype()));
      numel = static_cast<int64_t>(storage->nbytes / t.element_size());
      // A 1-d tensor over the whole storage, written as data/<key>.
      auto whole = std::make_shared<TensorImpl>(storage, 0, IntArrayRef({numel}), IntArrayRef({1}), t.dtype());
      storages.emplace_back(key, Tensor(std::move(whole)));
    } else {
      if (it->second.second != t.dtype()) {
        throw Error("pickle_save", "tensors that share a storage to share its dtype",
                    std::string(dtype_name(t.dtype())) + " and " + dtype_name(it->second.second),
                    "save a copy (tensor.clone()) of one of them");
      }
      key = it->second.first;
      numel = static_cast<int64_t>(storage->nbytes / t.element_size());
    }
    write_global("torch._utils", "_rebuild_tensor_v2");
    op(MARK);
    // The persistent id ('storage', torch.<dtype>Storage, key, 'cpu', numel)
    op(MARK);
    write_string("storage");
    write_global("torch", storage_name(t.dtype()));
    write_string(key);
    write_string("cpu");
    write_int(numel);
    op(TUPLE);
    op(BINPERSID);
    write_int(t.storage_offset());
    op(MARK);
    for (int64_t s : t.sizes()) write_int(s);
    op(TUPLE);
    op(MARK);
    for (int64_t s : t.strides()) write_int(s);
    op(TUPLE);
    op(t.requires_grad() ? NEWTRUE : NEWFALSE);
    write_global("collections", "OrderedDict");
    op(EMPTY_TUPLE);
    op(REDUCE);
    op(TUPLE);
    op(REDUCE);
  }
  void write(const IValue& v, int depth) {
    if (depth > kMaxPickleDepth) {
      throw Error("pickle_save", "containers nested at most " + std::to_string(kMaxPickleDepth) + " deep", "deeper nesting",
                  "a container that holds itself nests without end: break the cycle");
    }
    if (v.isNone()) {
      op(NONE);
    } else if (v.isBool()) {
      op(v.toBool() ? NEWTRUE : NEWFALSE);
    } else if (v.isInt()) {
      write_int(v.toInt());
    } else if (v.isDouble()) {
      op(BINFLOAT);
      uint64_t bits = 0;
      const double d = v.toDouble();
      std::memcpy(&bits, &d, sizeof bits);
      for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    } else if (v.isString()) {
      write_string(v.toStringRef());
    } else if (v.isTensor()) {
      write_tensor(v.toTensor());
    } else if (v.isIntList()) {
      write_list(v.toIntVector(), depth);
    } else if (v.isDoubleList()) {
      write_list(v.toDoubleVector(), depth);
    } else if (v.isTensorList()) {
      write_list(v.toTensorVector(), depth);
    } else if (v.isTuple()) {
      const auto& t = v.toTupleRef();
      if (!first_time(&t)) return;
      open_.insert(&t);
      op(MARK);
      for (const auto& e : t.elements()) write(e, depth + 1);
      op(TUPLE);
      open_.erase(&t);
      put(&t);
    } else if (v.isList()) {
      auto list = v.toList();
      if (!first_time(list.impl().get())) return;
      op(EMPTY_LIST);
      put(list.impl().get());
      open_.insert(list.impl().get());
      if (!list.empty()) {
        op(MARK);
        for (const auto& e : list) write(e, depth + 1);
        op(APPENDS);
      }
      open_.erase(list.impl().get());
    } else if (v.isGenericDict()) {
      auto dict = v.toGenericDict();
      if (!first_time(dict.impl().get())) return;
      op(EMPTY_DICT);
      put(dict.impl().get());
      open_.insert(dict.impl().get());
      if (!dict.empty()) {
        op(MARK);
        for (const auto& e : dict) {
          if (e.key().isTensor()) {
            throw Error("pickle_save", "dict keys that are str, int, float or bool", "a tensor key",
                        "key the dict by name");
          }
          write(e.key(), depth + 1);
          write(e.value(), depth + 1);
        }
        op(SETITEMS);
      }
      open_.erase(dict.impl().get());
    }
  }

  std::string out_;
  std::unordered_map<const void*, uint32_t> memo_;
  std::set<const void*> open_;  // the containers being written, outermost first
  std::unordered_map<const Storage*, std::pair<std::string, DType>> storage_keys_;
};

}  // namespace
}  // namespace io::detail

namespace {
std::string pickle_bytes(const IValue& ivalue) {
  io::detail::Pickler pickler;
  std::string pkl = pickler.run(ivalue);
  io::detail::ZipWriter zip("pickle_save");
  zip.add("archive/data.pkl", std::move(pkl));
  zip.add("archive/byteorder", "little");
  for (const auto& [key, t] : pickler.storages) {
    const auto* p = static_cast<const char*>(t.impl().storage->data);
    zip.add("archive/data/" + key, std::string(p, p + t.impl().storage->nbytes));
  }
  zip.add("archive/version", "3\n");
  return zip.finish();
}
}  // namespace

namespace io::detail {
namespace {
bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}
// Each object's class: the root "__torch__.Module", the others "__torch__.___torch_mangle_<i>.Module"
// in depth-first order, as LibTorch names them.
void name_classes(const ScriptObject& o, std::map<const ScriptObject*, std::string>& classes,
                  std::vector<const ScriptObject*>& order) {
  classes[&o] = order.empty() ? std::string("__torch__.Module")
                              : "__torch__.___torch_mangle_" + std::to_string(order.size() - 1) + ".Module";
  order.push_back(&o);
  for (const auto& a : o.attributes) {
    if (a.object) name_classes(*a.object, classes, order);
  }
}
// The TorchScript declaration of an object's class, as LibTorch prints it.
std::string class_code(const ScriptObject& o, const std::map<const ScriptObject*, std::string>& classes,
                       const std::string& op) {
  std::string params, buffers, annotations;
  bool odd_names = false;
  for (const auto& a : o.attributes) {
    std::string type;
    if (a.object) {
      type = classes.at(a.object.get());
    } else if (a.value.isTensor()) {
      type = "Tensor";
      (a.is_buffer ? buffers : params) += "\"" + a.name + "\", ";
    } else if (a.value.isInt()) {
      type = "int";
    } else if (a.value.isDouble()) {
      type = "float";
    } else if (a.value.isBool()) {
      type = "bool";
    } else if (a.value.isString()) {
      type = "str";
    } else {
      throw Error(op, "values LibTorch's archives hold (tensors, ints, floats, bools, strings)",
                  "\"" + a.name + "\" holding a " + a.value.tagKind(), "write it in graft's own format (the default)");
    }
    if (is_identifier(a.name)) {
      annotations += "  " + a.name + " : " + type + "\n";
    } else {
      odd_names = true;
      annotations += "  __annotations__[\"" + a.name + "\"] = " + type + "\n";
    }
  }
  return "class Module(Module):\n  __parameters__ = [" + params + "]\n  __buffers__ = [" + buffers + "]\n" +
         (odd_names ? "  __annotations__ = []\n" : "") + annotations;
}
}  // namespace

std::string write_script_archive(const ScriptObject& root, const std::string& op) {
  std::map<const ScriptObject*, std::string> classes;
  std::vector<const ScriptObject*> order;
  name_classes(root, classes, order);
  Pickler pickler;
  std::string pkl = pickler.run_object(root, classes);
  ZipWriter zip(op);
  for (const auto& [key, t] : pickler.storages) {
    const auto* p = static_cast<const char*>(t.impl().storage->data);
    zip.add("archive/data/" + key, std::string(p, p + t.impl().storage->nbytes));
  }
  zip.add("archive/data.pkl", std::move(pkl));
  for (size_t i = 0; i < order.size(); ++i) {
    zip.add(i == 0 ? std::string("archive/code/__torch__.py")
                   : "archive/code/__torch__/___torch_mangle_" + std::to_string(i - 1) + ".py",
            class_code(*order[i], classes, op));
  }
  zip.add("archive/constants.pkl", std::string("\x80\x02).", 4));  // an empty tuple
  zip.add("archive/version", "3\n");
  return zip.finish();
}
}  // namespace io::detail

std::vector<char> pickle_save(const IValue& ivalue) {
  std::string bytes = pickle_bytes(ivalue);
  return std::vector<char>(bytes.begin(), bytes.end());
}

void pickle_save(const IValue& ivalue, const std::string& path) {
  io::write_file_atomically(path, pickle_bytes(ivalue), "pickle_save");
}

}  // namespace graft
