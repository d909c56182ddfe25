// PyTorch's checkpoint format: the files Python's torch.save writes and torch.load reads, in
// LibTorch's spelling (torch::pickle_load / torch::pickle_save).
//
//   graft::IValue sd = graft::pickle_load("model_state.pt");     // torch.save(model.state_dict(), ...)
//   for (const auto& e : sd.toGenericDict())
//     std::cout << e.key().toStringRef() << " " << e.value().toTensor().sizes() << "\n";
//   graft::pickle_save(graft::IValue(dict), "out.pt");            // torch.load("out.pt") reads it
//
// Note [PyTorch's file format]
// Since PyTorch 1.6, torch.save writes a ZIP archive (entries stored, not compressed) whose entries
// sit under one top folder (the file's stem, or "archive"):
//   <top>/data.pkl     the saved object, pickled (protocol 2 by default)
//   <top>/data/<key>   one entry per storage: its raw bytes, little-endian, numel x element size
//   <top>/version      the format version ("3\n" from PyTorch 1.13)
//   <top>/byteorder    "little" or "big" (PyTorch 2.1 and later; absent means little)
// pickle_load also reads the format torch.save wrote before 1.6 (and with
// _use_new_zipfile_serialization=False): Note [PyTorch's legacy format] in src/io/pickle.cpp.
// A tensor in data.pkl is a call of torch._utils._rebuild_tensor_v2(storage, storage_offset,
// size, stride, requires_grad, backward_hooks), its storage a persistent id
// ('storage', torch.FloatStorage, key, location, numel) naming data/<key>; tensors naming one key
// share one storage. A Parameter wraps that in torch._utils._rebuild_parameter(tensor,
// requires_grad, hooks); a state dict is a collections.OrderedDict.
//
// Note [Safe unpickling]
// A checkpoint is untrusted input. A pickle can call any Python function; graft's unpickler is a
// stack machine that executes nothing and knows a short allow-list of globals, as PyTorch's
// torch.load(weights_only=True) does: collections.OrderedDict, the tensor and parameter rebuild
// functions of torch._utils, the torch.*Storage types of graft's dtypes, and the type tags
// LibTorch's torch::pickle_save writes (torch.jit._pickle.restore_type_tag, build_intlist, ...:
// each returns its first argument). Any other global
// (a pickled nn.Module, numpy arrays, arbitrary classes) is a graft::Error naming the global, the
// file and the byte offset in data.pkl. Everything is bounded by the file: strings and
// containers by the bytes left, a storage by its entry's size (a tensor reaching past its storage
// is an error before anything is read), nesting by kMaxPickleDepth. Python's values become:
//   None, bool, int (up to 64 bits), float, str   -> None, Bool, Int, Double, String
//   bytes                                         -> String (its bytes)
//   tuple                                         -> Tuple
//   list                                          -> GenericList (AnyType)
//   dict, OrderedDict                             -> GenericDict (AnyType, AnyType), in order
//   tensor, Parameter                             -> Tensor (a Parameter requires grad)
// An OrderedDict's attributes (a state dict's `_metadata`, the modules' version numbers) are read
// and dropped. Tensors saved on a GPU are loaded on the CPU (graft's only device), as with
// torch.load(map_location="cpu"). LibTorch 1.13 turns an OrderedDict into None and refuses ints of
// 33 to 55 bits; graft reads both.
//
// pickle_save writes the same format, as torch.save does: every distinct storage once (a view saved
// beside its base shares it in the file, as in PyTorch), dicts as dicts, lists as lists, tuples as
// tuples, the typed lists (IntList, ...) as lists; a container that appears twice is written once
// and referenced, as Python's pickler does. Python's torch.load reads it, with weights_only=True too.
#pragma once

#include <string>
#include <vector>

#include "graft/core/ivalue.h"

namespace graft {

// The deepest nesting of containers pickle_load and pickle_save accept.
inline constexpr int kMaxPickleDepth = 1000;

// Reads a file torch.save (or torch::pickle_save, or graft::pickle_save) wrote, from its bytes.
IValue pickle_load(const std::vector<char>& data);
// graft: the same from a file; errors name the file.
IValue pickle_load(const std::string& path);

// The bytes of a file that torch.load reads (Note [PyTorch's file format]).
std::vector<char> pickle_save(const IValue& ivalue);
// graft: the same written to `path` atomically (a failure leaves an existing file as it was).
void pickle_save(const IValue& ivalue, const std::string& path);

}  // namespace graft
