// State dicts by name, from and to files (a graft extension: LibTorch has no such functions; its
// users write torch::pickle_load and a loop by hand).
//
//   // Python: torch.save(model.state_dict(), "model.pt")
//   graft::load_state_dict(model, "model.pt");                       // strict, as PyTorch's default
//   auto r = graft::load_state_dict(model, "backbone.pt", /*strict=*/false);  // r.missing_keys, ...
//   graft::load_state_dict(model, "ckpt.pt", {.key = "model_state_dict"});    // {"epoch": ..., "model_state_dict": ...}
//   graft::save_state_dict(model, "out.pt");   // Python: model.load_state_dict(torch.load("out.pt"))
//
// Note [State dict files]
// load_state_dict tells the file apart by its content, not its name:
//   - PyTorch's torch.save format (a zip archive, or the legacy format of PyTorch before 1.6),
//     read by graft::pickle_load (graft/io/pickle.h, Note [Safe unpickling]). Its root must be a
//     dict of str -> tensor (model.state_dict()), or, with options.key, a dict holding one under
//     that key;
//   - a safetensors file (graft/io/safetensors.h): Hugging Face's safetensors.torch.save_file, and
//     graft::save(module, path). With options.key, the tensors named "<key>.<name>" are the state
//     dict, under <name> (graft train --save's "model." part is key "model");
//   - anything else is a graft::Error saying what was found (a TorchScript archive, as LibTorch's
//     torch::save writes, is one too, pointing to graft::load).
// The keys are matched against module.state_dict() with PyTorch's load_state_dict rules:
//   - strict: a key of the module the file lacks (missing) or a key of the file the module lacks
//     (unexpected) is an error listing every one of them; non-strict: they are returned instead,
//     as PyTorch's _IncompatibleKeys;
//   - a shape mismatch is an error in both modes, as in PyTorch ("size mismatch for fc.weight:
//     copying a param with shape [3, 4] from checkpoint, the shape in current model is [2, 4]");
//   - unlike PyTorch (whose copy_ converts silently), a dtype mismatch is an error too, unless
//     options.convert_dtypes: then a floating-point tensor is converted to the module's
//     floating-point dtype and an integer one to its integer dtype (float64 weights into a float32
//     model, an int32 counter into an int64 buffer). A floating-point value for an integer or bool
//     tensor, or the reverse, stays an error: it means the keys are wrong, not the precision.
// Every problem is reported in one graft::Error that names the file, and nothing in the module
// changes unless every check passes. The values are copied into the module's existing tensors
// under NoGradGuard, so an optimiser built over its parameters stays valid (as with graft::load).
//
// save_state_dict writes module.state_dict() (parameters and buffers in state_dict() order,
// detached: requires_grad false, as PyTorch's state_dict() gives them) with graft::pickle_save:
// a dict Python's torch.load reads, atomically (a failure leaves an existing file as it was).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/nn/module.h"

namespace graft {

struct LoadStateDictOptions {
  // PyTorch's strict: missing and unexpected keys are errors (true) or reported (false).
  bool strict = true;
  // Convert a tensor of another dtype of the same kind (floating point, integer) to the module's
  // dtype; otherwise any dtype mismatch is an error.
  bool convert_dtypes = false;
  // The key under which the file's root dict holds the state dict ("state_dict", "model",
  // "model_state_dict"); "" reads the root itself. For safetensors: the prefix "<key>.".
  std::string key;
};

// PyTorch's _IncompatibleKeys: the module's keys the file lacked, the file's keys the module lacks.
using LoadStateDictResult = nn::LoadStateDictResult;

// Loads the state dict in `path` into `module` (Note [State dict files]).
LoadStateDictResult load_state_dict(nn::Module& module, const std::string& path, bool strict = true);
LoadStateDictResult load_state_dict(nn::Module& module, const std::string& path, const LoadStateDictOptions& options);
LoadStateDictResult load_state_dict(const std::shared_ptr<nn::Module>& module, const std::string& path,
                                    bool strict = true);
LoadStateDictResult load_state_dict(const std::shared_ptr<nn::Module>& module, const std::string& path,
                                    const LoadStateDictOptions& options);
template <typename ModuleType>
LoadStateDictResult load_state_dict(nn::ModuleHolder<ModuleType>& module, const std::string& path, bool strict = true) {
  return load_state_dict(static_cast<nn::Module&>(*module), path, strict);
}
template <typename ModuleType>
LoadStateDictResult load_state_dict(nn::ModuleHolder<ModuleType>& module, const std::string& path,
                                    const LoadStateDictOptions& options) {
  return load_state_dict(static_cast<nn::Module&>(*module), path, options);
}

// Writes module.state_dict() to `path` in PyTorch's torch.save format.
void save_state_dict(const nn::Module& module, const std::string& path);
void save_state_dict(const std::shared_ptr<nn::Module>& module, const std::string& path);
template <typename ModuleType>
void save_state_dict(const nn::ModuleHolder<ModuleType>& module, const std::string& path) {
  save_state_dict(static_cast<const nn::Module&>(*module), path);
}

}  // namespace graft
