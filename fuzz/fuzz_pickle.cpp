// Fuzzes graft::pickle_load (Note [Safe unpickling] in graft/io/pickle.h). An input that starts like
// a zip archive or like PyTorch's legacy format is read as a whole checkpoint; any other input is taken as the pickle data.pkl of
// a checkpoint that also holds one 64-byte storage, archive/data/0, so the mutations reach the
// unpickler rather than dying in the zip layer. Every input must load or throw graft::Error;
// anything else (a crash, a sanitizer report, another exception) is a bug. What loads must survive
// a round trip: pickle_save it, load that, and get the same structure and bytes. Each input is also
// read as a LibTorch archive, whose unpickler accepts TorchScript objects.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "graft/core/error.h"
#include "graft/io/pickle.h"
#include "../src/io/libtorch_archive.h"
#include "../src/io/zip_archive.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

bool same(const graft::IValue& a, const graft::IValue& b) {
  if (a.tagKind() != b.tagKind()) return false;
  if (a.isTensor()) {
    const auto& x = a.toTensor();
    const auto& y = b.toTensor();
    if (x.dtype() != y.dtype() || x.sizes() != y.sizes() || x.requires_grad() != y.requires_grad()) return false;
    const auto cx = x.contiguous();
    const auto cy = y.contiguous();
    return cx.nbytes() == cy.nbytes() && (cx.nbytes() == 0 || std::memcmp(cx.data_ptr(), cy.data_ptr(), cx.nbytes()) == 0);
  }
  if (a.isTuple() || a.isList()) {
    const auto& ea = a.isTuple() ? a.toTupleRef().elements() : a.toListRef();
    const auto& eb = b.isTuple() ? b.toTupleRef().elements() : b.toListRef();
    if (ea.size() != eb.size()) return false;
    for (size_t i = 0; i < ea.size(); ++i) {
      if (!same(ea[i], eb[i])) return false;
    }
    return true;
  }
  if (a.isGenericDict()) {
    auto da = a.toGenericDict();
    auto db = b.toGenericDict();
    if (da.size() != db.size()) return false;
    for (auto ia = da.begin(), ib = db.begin(); ia != da.end(); ++ia, ++ib) {
      if (!same(ia->key(), ib->key()) || !same(ia->value(), ib->value())) return false;
    }
    return true;
  }
  if (a.isDouble()) {
    const double x = a.toDouble();
    const double y = b.toDouble();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a.is(b);  // None, Int, Bool, String
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> file;
  static const char kLegacy[] = "\x80\x02\x8a\x0a";  // PyTorch's legacy format starts with its magic number
  if (graft::io::detail::looks_like_zip(reinterpret_cast<const char*>(data), size) ||
      (size >= 4 && std::memcmp(data, kLegacy, 4) == 0)) {
    file.assign(data, data + size);
  } else {
    graft::io::detail::ZipWriter zip("fuzz");
    zip.add("archive/data.pkl", std::string(reinterpret_cast<const char*>(data), size));
    zip.add("archive/data/0", std::string(64, '\x3f'));
    const std::string bytes = zip.finish();
    file.assign(bytes.begin(), bytes.end());
  }
  // The same bytes as a LibTorch archive (TorchScript objects allowed, Note [LibTorch archives]).
  try {
    (void)graft::io::detail::read_libtorch_archive(file.data(), file.size(), "fuzz", "fuzz");
  } catch (const graft::Error&) {
  }
  graft::IValue v;
  try {
    v = graft::pickle_load(file);
  } catch (const graft::Error&) {
    return 0;
  }
  graft::IValue again;
  try {
    again = graft::pickle_load(graft::pickle_save(v));
  } catch (const graft::Error&) {
    // pickle_save refuses what it cannot write (tensors of one storage with two dtypes, tensor
    // dict keys): those are errors, not crashes.
    return 0;
  }
  require(same(v, again));
  return 0;
}
