// LibTorch's archives, read (libtorch_archive.h).
//
// Note [LibTorch archives]
// LibTorch's OutputArchive is a TorchScript module: write(key, tensor) registers a parameter,
// write(key, archive) a submodule, write(key, ivalue) an attribute, and save_to() saves the module
// as torch::jit::save does: a zip with <top>/data.pkl (the module object, pickled), <top>/data/<key>
// (the storages, as in torch.save's format), <top>/code/ (the classes' TorchScript source, which
// LibTorch compiles on load and graft never reads), constants.pkl and version. In data.pkl each
// module is an object of a class named __torch__.<...>.Module whose attributes (a dict applied by
// BUILD) are its tensors, values and submodules, and "training". graft's unpickler reads those
// objects as dicts (io/pickle_internal.h), and this file flattens them: a tensor of submodule
// "head" of submodule "0" is "head.0.weight", the key graft::save uses, so a module loads with the
// same strict checks as graft's own files. The other attributes stay IValues
// (InputArchive::read(key, IValue&)).
//
// torch::save(optimizer) writes (torch/csrc/api/src/optim/serialize.cpp's layout, as the files
// show):
//   pytorch_version                       "1.5.0"
//   param_groups.param_groups/size        int64 0-d: the number of groups
//   param_groups.param_groups/<g>.params/size   int64 0-d: its number of parameters
//   param_groups.param_groups/<g>.params/<j>    a string naming parameter j's state ("0x55...":
//                                               the address of its TensorImpl when it was saved)
//   param_groups.param_groups/<g>.options.<opt> lr, betas (a tuple), eps, momentum, nesterov, ...
//   state.<name>.<field>                  that parameter's state: step (an int), exp_avg, ...
// libtorch_optimizer_state maps it onto graft's state dict: parameters numbered across the groups
// in order, as graft and PyTorch number them.
//
// Writing (OutputArchive::save_to(path, ArchiveFormat::LibTorch), io::detail::write_script_archive
// in pickle_writer.cpp) is the reverse: the dotted keys become nested objects, each of a class
// "__torch__.Module" / "__torch__.___torch_mangle_<i>.Module" declared in the code folder as LibTorch
// declares it (__parameters__, __buffers__, one annotation per attribute: Tensor, int, float,
// bool, str, or the submodule's class). torch::load compiles those declarations, so it and
// Python's torch.jit.load read the file (tests/fixtures/libtorch/check_jit_load.py checks).
#include "io/libtorch_archive.h"

#include <algorithm>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "io/file_util.h"
#include "io/pickle_internal.h"

namespace graft::io::detail {
namespace {

bool is_object(const IValue& v) {
  if (!v.isGenericDict()) return false;
  auto d = v.toGenericDict();
  return !d.empty() && d.begin()->key().isString() && d.begin()->key().toStringRef() == kScriptClassKey;
}

void flatten(const IValue& object, const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& tensors,
             std::map<std::string, IValue>& values, const std::string& op) {
  for (const auto& e : object.toGenericDict()) {
    if (!e.key().isString()) {
      throw Error(op, "attribute names that are strings", "a " + e.key().tagKind() + " key", "the file is damaged");
    }
    const std::string& name = e.key().toStringRef();
    if (name == kScriptClassKey) continue;
    const std::string key = prefix + name;
    if (is_object(e.value())) {
      flatten(e.value(), key + ".", tensors, values, op);
    } else if (e.value().isTensor()) {
      tensors.emplace_back(key, e.value().toTensor().detach());
    } else {
      values.emplace(key, e.value());
    }
  }
}

}  // namespace

LibTorchArchive read_libtorch_archive(const char* data, size_t size, const std::string& source, const std::string& op_name) {
  const IValue root = read_torch_zip(data, size, source, op_name, /*script_objects=*/true);
  const std::string op = file_op(op_name.c_str(), source);
  if (!is_object(root)) {
    throw Error(op, "a LibTorch archive (torch::save's module object)", "a pickled " + root.tagKind(),
                "a file Python's torch.save wrote holds plain values: read it with graft::pickle_load, or a state "
                "dict with graft::load_state_dict");
  }
  std::vector<std::pair<std::string, Tensor>> tensors;
  LibTorchArchive out;
  flatten(root, "", tensors, out.values, op);
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].first == tensors[i - 1].first) {
      throw Error(op, "one tensor per key", "two under \"" + tensors[i].first + "\"", "the file is damaged");
    }
  }
  for (auto& [k, t] : tensors) out.tensors.insert(k, std::move(t));
  const bool optimizer = out.values.count("pytorch_version") && out.tensors.contains("param_groups.param_groups/size");
  out.kind = optimizer ? "optimizer" : "archive";
  return out;
}

TensorDict libtorch_optimizer_state(const TensorDict& tensors, const std::map<std::string, IValue>& values,
                                    const std::string& prefix, const std::string& op) {
  auto fail = [&](const std::string& expected, const std::string& got) -> void {
    throw Error(op, expected + " (LibTorch's optimizer archive)", got,
                "is the file one torch::save(optimizer, ...) wrote? (Note [LibTorch archives])");
  };
  auto count = [&](const std::string& key) {
    const Tensor* t = tensors.find(prefix + key);
    if (!t || t->numel() != 1 || t->dtype() != kInt64) fail("a 0-d int64 tensor \"" + prefix + key + "\"", t ? "another tensor" : "none");
    const int64_t n = t->item<int64_t>();
    // A count beyond the file's tensors and values cannot be honest.
    if (n < 0 || n > static_cast<int64_t>(tensors.size() + values.size())) fail("a count the file can hold", std::to_string(n));
    return n;
  };
  auto value = [&](const std::string& key) -> const IValue& {
    auto it = values.find(prefix + key);
    if (it == values.end()) fail("the value \"" + prefix + key + "\"", "none");
    return it->second;
  };
  auto number_tensor = [&](const IValue& v, const std::string& key) -> Tensor {
    if (v.isBool()) return tensor(v.toBool(), kBool);
    if (v.isDouble()) return tensor(v.toDouble(), kFloat64);
    if (v.isInt()) return tensor(static_cast<double>(v.toInt()), kFloat64);
    if (v.isTuple()) {
      std::vector<double> xs;
      for (const auto& e : v.toTupleRef().elements()) {
        if (!e.isDouble() && !e.isInt()) fail("numbers in \"" + key + "\"", "a " + e.tagKind());
        xs.push_back(e.isDouble() ? e.toDouble() : static_cast<double>(e.toInt()));
      }
      return tensor(xs, kFloat64);
    }
    fail("a number, a bool or a tuple of numbers for \"" + key + "\"", "a " + v.tagKind());
    return {};
  };

  TensorDict out;
  int64_t id = 0;
  const int64_t groups = count("param_groups.param_groups/size");
  for (int64_t g = 0; g < groups; ++g) {
    const std::string gp = "param_groups.param_groups/" + std::to_string(g) + ".";
    const int64_t n = count(gp + "params/size");
    std::vector<int64_t> ids;
    for (int64_t j = 0; j < n; ++j, ++id) {
      const IValue& name = value(gp + "params/" + std::to_string(j));
      if (!name.isString()) fail("a parameter's state name (a string)", "a " + name.tagKind());
      ids.push_back(id);
      // The parameter's state; none when it never stepped.
      const std::string sp = prefix + "state." + name.toStringRef() + ".";
      const std::string dst = "state." + std::to_string(id) + ".";
      for (const auto& item : tensors) {
        if (item.key().compare(0, sp.size(), sp) == 0) out.insert(dst + item.key().substr(sp.size()), item.value());
      }
      for (auto it = values.lower_bound(sp); it != values.end() && it->first.compare(0, sp.size(), sp) == 0; ++it) {
        out.insert(dst + it->first.substr(sp.size()), number_tensor(it->second, it->first));
      }
    }
    out.insert("param_groups." + std::to_string(g) + ".params", tensor(ids, kInt64));
    const std::string op_prefix = prefix + gp + "options.";
    for (auto it = values.lower_bound(op_prefix); it != values.end() && it->first.compare(0, op_prefix.size(), op_prefix) == 0;
         ++it) {
      out.insert("param_groups." + std::to_string(g) + "." + it->first.substr(op_prefix.size()),
                 number_tensor(it->second, it->first));
    }
  }
  return out;
}

}  // namespace graft::io::detail
