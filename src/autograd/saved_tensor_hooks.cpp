// Saved-tensor hooks and the two built-ins (Note [Saved-tensor hooks]).
#include "graft/autograd/saved_tensor_hooks.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "graft/core/storage.h"

namespace graft::autograd {

namespace {
thread_local std::vector<std::shared_ptr<const SavedTensorHookPair>> t_stack;

// The built-ins move activations only: a parameter (or gradient, or optimiser state) the graph saves
// lives on anyway, so a packed copy would add memory instead of saving it.
bool is_activation(const Tensor& t) {
  const auto c = memory::category_of(*t.impl().storage);
  return c == memory::Category::Other || c == memory::Category::SavedActivations;
}
thread_local bool t_disabled = false;
}  // namespace

SavedTensorsHooks::SavedTensorsHooks(PackHook pack, UnpackHook unpack) {
  GRAFT_CHECK(pack && unpack, "SavedTensorsHooks", "a pack and an unpack function", "an empty function",
              "pass both hooks: pack(tensor) -> what to keep, unpack(kept) -> the tensor");
  t_stack.push_back(std::make_shared<const SavedTensorHookPair>(SavedTensorHookPair{std::move(pack), std::move(unpack)}));
}

SavedTensorsHooks::~SavedTensorsHooks() { t_stack.pop_back(); }

std::shared_ptr<const SavedTensorHookPair> SavedTensorsHooks::current() {
  if (t_disabled || t_stack.empty()) return nullptr;
  return t_stack.back();
}

SavedTensorsHooks::Disable::Disable() : previous_(t_disabled) { t_disabled = true; }
SavedTensorsHooks::Disable::~Disable() { t_disabled = previous_; }

// ---- bfloat16 ----
// float32 tensors are kept in bfloat16 (round to nearest even); other dtypes as they are. The saved
// tensor converts the unpacked value back to the original dtype.
SaveInBFloat16::SaveInBFloat16()
    : SavedTensorsHooks([](const Tensor& t) { return t.dtype() == kFloat32 && is_activation(t) ? t.to(kBFloat16) : t; },
                        [](const Tensor& packed) { return packed; }) {}

// ---- memory-mapped file ----
namespace {

// A tensor whose bytes live in an unlinked, memory-mapped file in `dir`.
Tensor to_mapped_file(const Tensor& t, const std::string& dir) {
  const Tensor c = t.contiguous();
  const size_t nbytes = c.nbytes();
  std::string path = dir + "/graft-saved-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  GRAFT_CHECK(fd >= 0, "SaveOnDisk", "a writable directory for saved tensors", "'" + dir + "': " + std::strerror(errno),
              "pass SaveOnDisk a directory you can write to");
  ::unlink(name.data());  // the file goes away with its last mapping
  if (::ftruncate(fd, static_cast<off_t>(nbytes)) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error("SaveOnDisk", "room for " + std::to_string(nbytes) + " bytes in '" + dir + "'", std::strerror(err),
                "free disk space or choose another directory");
  }
  void* map = ::mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);  // the mapping keeps the file
  GRAFT_CHECK(map != MAP_FAILED, "SaveOnDisk", "a memory mapping of " + std::to_string(nbytes) + " bytes",
              std::strerror(errno), "free address space or disk space");
  std::memcpy(map, c.data_ptr(), nbytes);
  // Written back lazily by the kernel; the pages may be evicted under memory pressure.
  return from_blob(map, c.sizes(), [nbytes](void* p) { ::munmap(p, nbytes); }, TensorOptions().dtype(c.dtype()));
}

}  // namespace

SaveOnDisk::SaveOnDisk(std::string directory, int64_t min_bytes)
    : SavedTensorsHooks(
          [dir = std::move(directory), min_bytes](const Tensor& t) {
            if (static_cast<int64_t>(t.nbytes()) < min_bytes || !is_activation(t)) return t;
            return to_mapped_file(t, dir);
          },
          [](const Tensor& packed) { return packed; }) {}

}  // namespace graft::autograd
