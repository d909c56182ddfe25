// State dicts by name, from and to files (Note [State dict files] in graft/io/state_dict.h).
#include "graft/io/state_dict.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>

#include "graft/autograd/grad_mode.h"
#include "graft/core/ivalue.h"
#include "graft/core/shape.h"
#include "graft/io/pickle.h"
#include "graft/io/safetensors.h"
#include "io/file_util.h"
#include "io/state_dict_check.h"

namespace graft::io::detail {

StateDictFit fit_state_dict(const OrderedDict<std::string, Tensor>& module_state,
                            const OrderedDict<std::string, Tensor>& file) {
  StateDictFit fit;
  for (const auto& item : module_state) {
    const Tensor* src = file.find(item.key());
    if (!src) {
      fit.missing.push_back(item.key());
      continue;
    }
    const Tensor& dst = item.value();
    const bool shape = !src->sizes().equals(dst.sizes());
    if (shape || src->dtype() != dst.dtype()) fit.mismatches.push_back({item.key(), *src, dst, shape});
  }
  for (const auto& item : file)
    if (!module_state.contains(item.key())) fit.unexpected.push_back(item.key());
  return fit;
}

}  // namespace graft::io::detail

namespace graft {

namespace {

using TensorDict = OrderedDict<std::string, Tensor>;

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// Every key, quoted: PyTorch lists them all, and so does this (a strict failure is fixed key by key).
std::string quoted_all(const std::vector<std::string>& keys) {
  std::string s;
  for (const std::string& k : keys) s += (s.empty() ? "" : ", ") + quoted(k);
  return s;
}

// What a file starts with (Note [State dict files]).
enum class FileKind { Torch, Safetensors, Other };

struct Sniffed {
  FileKind kind = FileKind::Other;
  std::string what, hint;  // for FileKind::Other: what it looks like, and what to do
};

Sniffed sniff(const std::string& path, const std::string& op) {
  io::detail::InputFile file(path, op);
  uint8_t head[16] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(file.size(), sizeof head));
  file.read_at(0, std::span<uint8_t>(head, n), "the file's first bytes");
  Sniffed s;
  // torch.save's zip archive, or a pickle (PROTO 2..5): its legacy format, whose magic number
  // pickle_load checks (any other pickle is its error to report).
  if ((n >= 4 && std::memcmp(head, "PK\x03\x04", 4) == 0) || (n >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)) {
    s.kind = FileKind::Torch;
    return s;
  }
  // Safetensors: an 8-byte little-endian header length, then the JSON header, which starts with '{'
  // (Note [Safetensors layout]); load_safetensors checks the rest.
  if (n >= 9 && head[8] == '{') {
    uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = (header << 8) | head[i];
    if (header >= 2 && header <= file.size() - 8) {
      s.kind = FileKind::Safetensors;
      return s;
    }
  }
  s.hint = "in Python, torch.save(model.state_dict(), path) or safetensors.torch.save_file(model.state_dict(), path)";
  if (n == 0) {
    s.what = "an empty file";
  } else {
    char hex[3 * sizeof head + 1] = {};
    for (size_t i = 0; i < std::min<size_t>(n, 8); ++i) std::snprintf(hex + 3 * i, 4, "%02x ", head[i]);
    s.what = "a file starting with the bytes " + std::string(hex, 3 * std::min<size_t>(n, 8) - 1) +
             " (neither torch.save's format nor a safetensors header)";
  }
  return s;
}

// The name an IValue's kind has in messages ("an int", "a list").
std::string kind_of(const IValue& v) {
  if (v.isNone()) return "None";
  if (v.isTensor()) return "a tensor";
  if (v.isInt()) return "an int";
  if (v.isDouble()) return "a float";
  if (v.isBool()) return "a bool";
  if (v.isString()) return "a str";
  if (v.isTuple()) return "a tuple";
  if (v.isList()) return "a list";
  if (v.isGenericDict()) return "a dict";
  return v.tagKind();
}

bool is_state_dict(const IValue& v) {
  if (!v.isGenericDict()) return false;
  for (const auto& e : v.toGenericDict())
    if (!e.key().isString() || !e.value().isTensor()) return false;
  return true;
}

// The keys of `root`'s entries that hold a state dict (a dict of str -> tensor), for the hint to set
// options.key: the usual names first ("state_dict", "model", "model_state_dict"), then the others.
std::vector<std::string> state_dict_keys(const impl::GenericDict& root) {
  std::vector<std::string> usual, others;
  for (const auto& e : root) {
    if (!e.key().isString() || !is_state_dict(e.value())) continue;
    const std::string& k = e.key().toStringRef();
    (k == "state_dict" || k == "model" || k == "model_state_dict" || k == "net" ? usual : others).push_back(k);
  }
  usual.insert(usual.end(), others.begin(), others.end());
  return usual;
}

std::string key_hint(const std::vector<std::string>& keys) {
  if (keys.empty())
    return "save model.state_dict() itself (torch.save(model.state_dict(), path)), or a dict holding it under a key";
  return "the state dict is under " + quoted(keys.front()) + ": set LoadStateDictOptions::key = " + quoted(keys.front()) +
         (keys.size() > 1 ? " (state dicts are also under " +
                                quoted_all(std::vector<std::string>(keys.begin() + 1, keys.end())) + ")"
                          : std::string());
}

// The state dict of a torch.save file: the root dict, or the dict under options.key.
TensorDict read_pickle(const std::string& path, const std::string& op, const std::string& key) {
  IValue root;
  try {
    root = pickle_load(path);
  } catch (const Error& e) {
    // A TorchScript archive (LibTorch's torch::save, torch.jit.save) pickles __torch__ classes.
    if (std::string(e.what()).find("global __torch__.") == std::string::npos) throw;
    throw Error(op, "a state dict torch.save wrote (a dict of str -> tensor)",
                "a TorchScript archive (its pickle names __torch__ classes), as LibTorch's torch::save and "
                "torch.jit.save write",
                "graft::load(module, path) reads the files LibTorch's torch::save(module, path) wrote");
  }
  IValue dict = root;
  if (!key.empty()) {
    GRAFT_CHECK(root.isGenericDict(), op, "a dict at the root holding the state dict under " + quoted(key),
                kind_of(root) + " at the root", "leave LoadStateDictOptions::key empty to read the root itself");
    const impl::GenericDict d = root.toGenericDict();
    const auto it = d.find(IValue(key));
    if (it == d.end()) {
      std::vector<std::string> keys;
      for (const auto& e : d)
        if (e.key().isString()) keys.push_back(e.key().toStringRef());
      throw Error(op, "the root dict's entry " + quoted(key) + " (LoadStateDictOptions::key)",
                  "no such entry (the root's keys: " + (keys.empty() ? std::string("none") : quoted_all(keys)) + ")",
                  key_hint(state_dict_keys(d)));
    }
    dict = it->value();
  }
  const std::string where = key.empty() ? std::string("the root") : "the root's entry " + quoted(key);
  GRAFT_CHECK(dict.isGenericDict(), op, "a dict of str -> tensor (a state_dict()) at " + where,
              kind_of(dict) + " at " + where, "save model.state_dict() (torch.save(model.state_dict(), path))");
  TensorDict out("state_dict key");
  for (const auto& e : dict.toGenericDict()) {
    GRAFT_CHECK(e.key().isString(), op, "a dict of str -> tensor (a state_dict()) at " + where,
                "a key that is " + kind_of(e.key()), "a state dict's keys are parameter names such as \"fc.weight\"");
    const std::string& k = e.key().toStringRef();
    if (!e.value().isTensor()) {
      const std::string hint =
          key.empty() && root.isGenericDict() ? key_hint(state_dict_keys(root.toGenericDict()))
                                              : "save model.state_dict() (torch.save(model.state_dict(), path))";
      throw Error(op, "a dict of str -> tensor (a state_dict()) at " + where,
                  "the entry " + quoted(k) + " holding " + kind_of(e.value()), hint);
    }
    out.insert(k, e.value().toTensor());
  }
  return out;
}

// The state dict of a safetensors file: every tensor, or those named "<key>.<name>", as <name>.
TensorDict read_safetensors(const std::string& path, const std::string& op, const std::string& key) {
  io::SafetensorsContents contents = io::load_safetensors(path);
  if (key.empty()) return std::move(contents.tensors);
  const std::string prefix = key + ".";
  TensorDict out("state_dict key");
  std::vector<std::string> prefixes;
  for (const auto& item : contents.tensors) {
    const std::string& k = item.key();
    if (k.compare(0, prefix.size(), prefix) == 0) {
      out.insert(k.substr(prefix.size()), item.value());
    } else {
      const std::string p = k.substr(0, k.find('.'));
      if (prefixes.empty() || prefixes.back() != p) prefixes.push_back(p);
    }
  }
  GRAFT_CHECK(!out.is_empty(), op, "tensors named " + quoted(prefix + "<name>") + " (LoadStateDictOptions::key)",
              "none (the file's names start with " + (prefixes.empty() ? std::string("nothing: it is empty") : quoted_all(prefixes)) + ")",
              "set LoadStateDictOptions::key to one of the prefixes, or leave it empty for every tensor");
  return out;
}

enum class DKind { Floating, Integer, Bool };
DKind dkind(DType t) {
  if (is_floating_point(t)) return DKind::Floating;
  return t == kBool ? DKind::Bool : DKind::Integer;
}

}  // namespace

LoadStateDictResult load_state_dict(nn::Module& module, const std::string& path, const LoadStateDictOptions& options) {
  const std::string op = "graft::load_state_dict(" + module.name() + ", " + quoted(path) + ")";
  const Sniffed s = sniff(path, op);
  GRAFT_CHECK(s.kind != FileKind::Other, op,
              "a state dict file: PyTorch's torch.save format or safetensors", s.what, s.hint);
  TensorDict file = s.kind == FileKind::Torch ? read_pickle(path, op, options.key) : read_safetensors(path, op, options.key);

  const TensorDict own = module.state_dict();
  const io::detail::StateDictFit fit = io::detail::fit_state_dict(own, file);
  std::vector<std::string> problems;
  if (options.strict && !fit.missing.empty()) problems.push_back("missing key(s) in state_dict: " + quoted_all(fit.missing));
  if (options.strict && !fit.unexpected.empty())
    problems.push_back("unexpected key(s) in state_dict: " + quoted_all(fit.unexpected));
  bool dtype_problem = false;
  for (const auto& m : fit.mismatches) {
    if (m.shape) {
      problems.push_back("size mismatch for " + quoted(m.key) + ": copying a param with shape " +
                         shape_str(m.file.sizes()) + " from checkpoint, the shape in current model is " +
                         shape_str(m.module.sizes()));
    } else if (!options.convert_dtypes) {
      problems.push_back("dtype mismatch for " + quoted(m.key) + ": the checkpoint has " + dtype_name(m.file.dtype()) +
                         ", the current model has " + dtype_name(m.module.dtype()));
      dtype_problem = true;
    } else if (dkind(m.file.dtype()) != dkind(m.module.dtype())) {
      problems.push_back("dtype mismatch for " + quoted(m.key) + ": the checkpoint has " + dtype_name(m.file.dtype()) +
                         ", the current model has " + dtype_name(m.module.dtype()) +
                         " (convert_dtypes converts within floating point and within integers only)");
    } else {
      file[m.key] = m.file.to(m.module.dtype());  // converted before anything is copied
    }
  }
  if (!problems.empty()) {
    std::string msg = "error(s) in loading state_dict for " + module.name() + " from " + quoted(path) + ":";
    for (const std::string& p : problems) msg += "\n\t" + p;
    msg += "\n(nothing was loaded. Hint: ";
    if (options.strict && (!fit.missing.empty() || !fit.unexpected.empty()))
      msg += "load into the architecture that was saved; LoadStateDictOptions::strict = false loads the keys both have";
    else
      msg += "load into the architecture that was saved";
    if (dtype_problem) msg += "; LoadStateDictOptions::convert_dtypes = true converts the checkpoint's dtypes";
    msg += ")";
    throw Error(op, msg);
  }
  // Every check has passed: Module::load_state_dict copies under NoGradGuard into the existing
  // tensors (its own checks of the keys and shapes pass again).
  return module.load_state_dict(file, options.strict);
}

LoadStateDictResult load_state_dict(nn::Module& module, const std::string& path, bool strict) {
  LoadStateDictOptions options;
  options.strict = strict;
  return load_state_dict(module, path, options);
}

LoadStateDictResult load_state_dict(const std::shared_ptr<nn::Module>& module, const std::string& path, bool strict) {
  GRAFT_CHECK(module != nullptr, "graft::load_state_dict(" + quoted(path) + ")", "a module", "a null module pointer",
              "construct the module (same architecture) first, then load into it");
  return load_state_dict(*module, path, strict);
}

LoadStateDictResult load_state_dict(const std::shared_ptr<nn::Module>& module, const std::string& path,
                                    const LoadStateDictOptions& options) {
  GRAFT_CHECK(module != nullptr, "graft::load_state_dict(" + quoted(path) + ")", "a module", "a null module pointer",
              "construct the module (same architecture) first, then load into it");
  return load_state_dict(*module, path, options);
}

void save_state_dict(const nn::Module& module, const std::string& path) {
  // A plain dict (str -> tensor) in state_dict() order; Python's load_state_dict takes any mapping.
  impl::GenericDict dict(StringType::get(), TensorType::get());
  for (const auto& item : module.state_dict()) dict.insert(IValue(item.key()), IValue(item.value().detach()));
  pickle_save(IValue(dict), path);
}

void save_state_dict(const std::shared_ptr<nn::Module>& module, const std::string& path) {
  GRAFT_CHECK(module != nullptr, "graft::save_state_dict(" + quoted(path) + ")", "a module", "a null module pointer",
              "construct the module first");
  save_state_dict(*module, path);
}

}  // namespace graft
