// LibTorch's serialization API: graft::save / graft::load of modules, optimisers, tensors and lists
// of tensors, and the archives they use, graft::serialize::OutputArchive / InputArchive.
//
//   graft::save(model, "model.pt");            graft::load(model, "model.pt");
//   graft::save(optimizer, "optim.pt");        graft::load(optimizer, "optim.pt");
//   graft::save(tensor, "t.pt");               graft::load(tensor, "t.pt");
//   graft::save(std::vector<Tensor>{a, b}, "v.pt");  std::vector<Tensor> v; graft::load(v, "v.pt");
//
//   graft::serialize::OutputArchive root, inner;
//   inner.write("w", w);                       // "w"
//   root.write("inner", inner);                // "inner.w"
//   root.write("step", step);                  // "step"
//   root.save_to("run.pt");
//   graft::serialize::InputArchive in;
//   in.load_from("run.pt");
//   graft::serialize::InputArchive in_inner;
//   in.read("inner", in_inner);
//   in_inner.read("w", w);
//
// Note [Archive format]
// An archive file is a plain safetensors file (graft/io/safetensors.h, written atomically by
// io::save_safetensors and read by io::load_safetensors, the reader the fuzz target
// fuzz/fuzz_safetensors.cpp covers; the archive itself parses nothing else). Each tensor is stored
// under the archive's keys joined by '.': nested archive "inner" with tensor "w" is "inner.w". The
// safetensors metadata holds
//   "graft.format": "archive/1"    (load_from refuses files without it)
//   "graft.kind":   "module" | "optimizer" | "tensor" | "tensors" | "archive"
//   "graft.values": the values written with write(key, ivalue), when there are any: a JSON object
//                   from each full key to its value as [tag, payload]: ["n"], ["b", true],
//                   ["i", 5], ["d", "0.10000000000000001"] (%.17g, so the double comes back
//                   exactly; "inf", "nan" too), ["s", "text"], ["l", [...]], ["t", [...]],
//                   ["il", [...]], ["dl", [...]], ["D", [[key, value], ...]]
// A module is stored as its state_dict() (parameters and buffers, "conv1.weight",
// "bn.running_mean"); an optimiser as its state_dict() (Note [Optimizer state dict]: per-parameter
// state and every param group's options); a tensor under "0"; a vector of tensors under "0", "1",
// ...; "archive" is an archive a program wrote key by key (or several values in one archive).
// Every graft dtype round-trips with its shape.
//
// load_from also reads the archives LibTorch's torch::save and OutputArchive::save_to write
// (TorchScript zip archives, Note [LibTorch archives] in src/io/libtorch_archive.cpp), telling the
// two formats apart by their first bytes: a module saved by LibTorch loads into the same graft
// module, tensors and vectors of tensors load, an optimizer loads its state and options (options
// LibTorch 1.13 does not have, such as maximize, keep the optimizer's values), and the other
// attributes read as IValues (read(key, ivalue)). save_to(path, ArchiveFormat::LibTorch) (and
// graft::save(value, path, ArchiveFormat::LibTorch)) writes LibTorch's format for torch::load
// (docs/porting.md, "Bringing checkpoints over").
//
// Loading a module is PyTorch's strict load_state_dict: every parameter and buffer must be in the
// file with the same shape and dtype, and the file may hold nothing else; otherwise graft::Error
// lists every missing key, unexpected key and mismatch, names the file, and nothing is changed.
// Values are copied into the module's existing tensors under NoGradGuard, so an optimiser built
// over them stays valid. Loading an optimiser is its load_state_dict (checked completely before
// anything changes), with the file named in the error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/core/ivalue.h"
#include "graft/core/tensor.h"
#include "graft/io/safetensors.h"
#include "graft/nn/module.h"
#include "graft/optim/optimizer.h"

namespace graft::serialize {

// graft: the file save_to writes. Graft: graft's own (Note [Archive format]), the default.
// LibTorch: the TorchScript archive LibTorch's torch::save writes, which torch::load, LibTorch's
// InputArchive and Python's torch.jit.load read (Note [LibTorch archives] in
// src/io/libtorch_archive.cpp); it holds tensors (parameters, and buffers written with
// is_buffer), nested archives and int, double, bool and string values, not an optimizer's state.
enum class ArchiveFormat { Graft, LibTorch };

class OutputArchive {
 public:
  OutputArchive() = default;
  OutputArchive(OutputArchive&&) = default;
  OutputArchive& operator=(OutputArchive&&) = default;
  OutputArchive(const OutputArchive&) = delete;
  OutputArchive& operator=(const OutputArchive&) = delete;

  // Stores `tensor`'s data (any strides, never its autograd history) under `key`; is_buffer marks
  // a module's buffer (it matters to LibTorch's format only). An undefined tensor, an empty key and
  // a key already written are errors.
  void write(const std::string& key, const Tensor& tensor, bool is_buffer = false);
  // Stores every entry of `nested_archive` under "key.<its key>" (a copy: the nested archive is
  // unchanged).
  void write(const std::string& key, OutputArchive& nested_archive);
  // Stores a value that is not a tensor (a step count, a version string, an optimizer's options):
  // None, ints, doubles (exactly), bools, strings, and lists, tuples and dicts of them, in the
  // file's metadata (Note [Archive format]). Tensors inside the value are an error: write them
  // with write(key, tensor).
  void write(const std::string& key, const IValue& ivalue);

  // Writes the archive (Note [Archive format]). save_to(path) is atomic: a failure leaves an
  // existing file untouched. The stream and function forms write the same bytes in one piece; the
  // function must return the number of bytes it was given.
  void save_to(const std::string& filename) const;
  // graft: the same in `format` (graft::save(model, path, ArchiveFormat::LibTorch) writes a file
  // LibTorch's torch::load reads).
  void save_to(const std::string& filename, ArchiveFormat format) const;
  void save_to(std::ostream& stream) const;
  void save_to(const std::function<size_t(const void*, size_t)>& func) const;

  // archive("key", tensor) is write("key", tensor), as in LibTorch.
  template <typename... Ts>
  void operator()(Ts&&... ts) {
    write(std::forward<Ts>(ts)...);
  }

  // graft: what the archive holds, for the "graft.kind" metadata. The operators << call it before
  // they write a value: on an empty archive it sets `kind`; an archive that already holds
  // something becomes "archive", as is one written with write() alone.
  void set_kind(const std::string& kind);
  const std::string& kind() const { return kind_; }
  // graft: the entries written so far, full keys, in write order.
  const io::TensorDict& tensors() const { return tensors_; }

 private:
  io::Metadata metadata() const;
  io::TensorDict tensors_;
  std::map<std::string, IValue> values_;  // write(key, ivalue), full keys
  std::set<std::string> buffers_;         // the keys written with is_buffer
  std::string kind_;  // empty until the first value
};

class InputArchive {
 public:
  InputArchive() = default;
  InputArchive(InputArchive&&) = default;
  InputArchive& operator=(InputArchive&&) = default;
  InputArchive(const InputArchive&) = delete;
  InputArchive& operator=(const InputArchive&) = delete;
  ~InputArchive() = default;

  // Reads the tensor stored under `key` (relative to this archive). When `tensor` is defined with
  // the same shape and dtype, the values are copied into it under NoGradGuard (every handle to it
  // sees them); otherwise `tensor` becomes the loaded tensor (a fresh CPU tensor, requiring grad if
  // the old one did and the dtype is floating-point). read() throws graft::Error naming the file
  // and the key when it is missing; try_read() returns false instead.
  void read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  bool try_read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  // Reads a value that is not a tensor (one written with write(key, ivalue); a LibTorch archive's
  // "pytorch_version", an optimizer's options). read() throws naming the key when it is missing;
  // try_read() returns false.
  void read(const std::string& key, IValue& ivalue);
  bool try_read(const std::string& key, IValue& ivalue);
  // Makes `archive` the entries under "key." (LibTorch's nested archives).
  void read(const std::string& key, InputArchive& archive);
  bool try_read(const std::string& key, InputArchive& archive);

  // Reads an archive written by OutputArchive::save_to. A damaged file, a safetensors file that is
  // no graft archive, or a LibTorch .pt file is a graft::Error naming the file. `device` must be
  // the CPU (or unset): graft has no other device.
  void load_from(const std::string& filename, std::optional<Device> device = std::nullopt);
  void load_from(std::istream& stream, std::optional<Device> device = std::nullopt);
  void load_from(const char* data, size_t size, std::optional<Device> device = std::nullopt);
  void load_from(const std::function<size_t(uint64_t pos, void* buf, size_t nbytes)>& read_func,
                 const std::function<size_t(void)>& size_func, std::optional<Device> device = std::nullopt);

  // The names directly in this archive: its tensors and nested archives ("fc1", "fc2" for a
  // module with two Linear children), in name order.
  std::vector<std::string> keys() const;

  template <typename... Ts>
  void operator()(Ts&&... ts) {
    read(std::forward<Ts>(ts)...);
  }

  // graft: every tensor of this archive, keys relative to it ("fc1.weight"), in name order.
  io::TensorDict tensors() const;
  // graft: the values that are not tensors, keys relative to this archive.
  std::map<std::string, IValue> values() const;
  // graft: whether the file is one LibTorch wrote (rather than graft).
  bool from_libtorch() const;
  // graft: the "graft.kind" of the file (nested archives report their file's kind; a LibTorch
  // archive is "optimizer" when it holds one, else "archive").
  const std::string& kind() const;
  // graft: what errors call the source: the file name, "<stream>", "<memory>".
  const std::string& source() const;
  // graft: the full key of `key` in the file ("inner.w").
  std::string full_key(const std::string& key) const;

 private:
  struct Contents {
    io::TensorDict tensors;
    std::map<std::string, IValue> values;  // LibTorch archives' other attributes, full keys
    std::string kind;
    std::string source;
    bool libtorch = false;
  };
  void set_contents(io::SafetensorsContents contents, std::string source);
  void set_libtorch_contents(const char* data, size_t size, std::string source);
  const Contents& contents(const char* op) const;
  std::shared_ptr<const Contents> contents_;
  std::string prefix_;  // "" or "inner."
};

}  // namespace graft::serialize

namespace graft {

// A tensor is stored under "0", as LibTorch stores it.
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Tensor& tensor);
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Tensor& tensor);

}  // namespace graft

namespace graft::nn {

// A module's parameters and buffers under their state_dict() names; >> is the strict load of
// Note [Archive format].
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Module& module);
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Module& module);
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const std::shared_ptr<Module>& module);
serialize::InputArchive& operator>>(serialize::InputArchive& archive, const std::shared_ptr<Module>& module);

template <typename ModuleType>
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const ModuleHolder<ModuleType>& module) {
  return archive << *module;
}
template <typename ModuleType>
serialize::InputArchive& operator>>(serialize::InputArchive& archive, ModuleHolder<ModuleType>& module) {
  return archive >> *module;
}

}  // namespace graft::nn

namespace graft::optim {

// The optimiser's state_dict() (Note [Optimizer state dict]); >> is its load_state_dict().
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Optimizer& optimizer);
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Optimizer& optimizer);

}  // namespace graft::optim

namespace graft {

// graft::save(value, path) / graft::load(value, path): LibTorch's spelling. The trailing arguments
// are those of OutputArchive::save_to / InputArchive::load_from (a path, a stream, ...).
template <typename Value, typename... SaveToArgs>
void save(const Value& value, SaveToArgs&&... args) {
  serialize::OutputArchive archive;
  archive << value;
  archive.save_to(std::forward<SaveToArgs>(args)...);
}

// Tensors under "0", "1", ...
template <typename... SaveToArgs>
void save(const std::vector<Tensor>& tensor_vec, SaveToArgs&&... args) {
  serialize::OutputArchive archive;
  archive.set_kind("tensors");
  for (size_t i = 0; i < tensor_vec.size(); ++i) archive.write(std::to_string(i), tensor_vec[i]);
  archive.save_to(std::forward<SaveToArgs>(args)...);
}

template <typename Value, typename... LoadFromArgs>
void load(Value& value, LoadFromArgs&&... args) {
  serialize::InputArchive archive;
  archive.load_from(std::forward<LoadFromArgs>(args)...);
  archive >> value;
}

// Appends the tensors stored under "0", "1", ... (stopping at the first missing index), as
// LibTorch does.
template <typename... LoadFromArgs>
void load(std::vector<Tensor>& tensor_vec, LoadFromArgs&&... args) {
  serialize::InputArchive archive;
  archive.load_from(std::forward<LoadFromArgs>(args)...);
  for (size_t i = 0;; ++i) {
    Tensor value;
    if (!archive.try_read(std::to_string(i), value)) break;
    tensor_vec.push_back(std::move(value));
  }
}

}  // namespace graft
