// Manifests of checkpoint fixtures (tests/fixtures/pickle/gen_pickle_fixtures.py's docstring has
// the format): graft's loaded values written in that format, for comparison line by line with what
// PyTorch or LibTorch wrote. Shared by test_pickle.cpp and test_libtorch_archive.cpp.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft::test {

inline std::string hex(const std::string& s) {
  if (s.empty()) return "-";
  std::string out;
  char b[3];
  for (unsigned char c : s) {
    std::snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}
inline std::string path_key(const std::string& key) {
  std::string out;
  char b[4];
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  return out;
}
inline std::string join(IntArrayRef v) {
  if (v.empty()) return "-";
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

// Writes what graft loaded in the manifest's format, for comparison line by line with the one
// Python wrote. Values are read element by element through the tensor's strides.
class ManifestWriter {
 public:
  explicit ManifestWriter(bool sums) : sums_(sums) {}
  std::vector<std::string> lines;

  void walk(const IValue& v, const std::string& path) {
    if (v.isGenericDict()) {
      auto d = v.toGenericDict();
      std::string line = "dict " + path + " " + std::to_string(d.size());
      for (const auto& e : d) line += " " + hex(e.key().toStringRef());
      lines.push_back(line);
      for (const auto& e : d) walk(e.value(), path + "/" + path_key(e.key().toStringRef()));
    } else if (v.isTuple() || v.isList()) {
      const auto& items = v.isTuple() ? v.toTupleRef().elements() : v.toListRef();
      lines.push_back(std::string(v.isTuple() ? "tuple " : "list ") + path + " " + std::to_string(items.size()));
      for (size_t i = 0; i < items.size(); ++i) walk(items[i], path + "/" + std::to_string(i));
    } else if (v.isInt()) {
      lines.push_back("int " + path + " " + std::to_string(v.toInt()));
    } else if (v.isDouble()) {
      char b[64];
      std::snprintf(b, sizeof b, "%.17g", v.toDouble());
      lines.push_back("float " + path + " " + b);
    } else if (v.isBool()) {
      lines.push_back("bool " + path + " " + (v.toBool() ? "1" : "0"));
    } else if (v.isString()) {
      lines.push_back("str " + path + " " + hex(v.toStringRef()));
    } else if (v.isNone()) {
      lines.push_back("none " + path);
    } else if (v.isTensor()) {
      tensor(v.toTensor(), path);
    } else {
      lines.push_back("unexpected " + v.tagKind() + " " + path);
    }
  }

 private:
  void tensor(const Tensor& t, const std::string& path) {
    const void* storage = t.unsafeGetTensorImpl()->storage.get();
    auto [it, added] = storage_ids_.emplace(storage, storage_ids_.size());
    std::string line = "tensor " + path + " " + dtype_name(t.dtype()) + " " + join(t.sizes()) + " " + join(t.strides()) +
                       " " + std::to_string(t.storage_offset()) + " " + std::to_string(it->second) + " " +
                       (t.requires_grad() ? "1" : "0");
    const Tensor c = t.detach().contiguous();
    const auto* bytes = static_cast<const uint8_t*>(c.data_ptr());
    const size_t elem = c.element_size();
    uint64_t sum = 0;
    for (int64_t i = 0; i < c.numel(); ++i) {
      const uint8_t* p = bytes + static_cast<size_t>(i) * elem;
      uint64_t bits = 0;
      std::memcpy(&bits, p, elem);  // little-endian: the low bytes
      if (sums_) {
        sum += bits;
        continue;
      }
      char b[32];
      switch (c.dtype()) {
        case kFloat32: std::snprintf(b, sizeof b, " %08" PRIx64, bits); break;
        case kFloat64: std::snprintf(b, sizeof b, " %016" PRIx64, bits); break;
        case kFloat16:
        case kBFloat16: std::snprintf(b, sizeof b, " %04" PRIx64, bits); break;
        case kInt64: std::snprintf(b, sizeof b, " %" PRId64, static_cast<int64_t>(bits)); break;
        case kInt32: std::snprintf(b, sizeof b, " %d", static_cast<int32_t>(bits)); break;
        case kInt16: std::snprintf(b, sizeof b, " %d", static_cast<int16_t>(bits)); break;
        case kInt8: std::snprintf(b, sizeof b, " %d", static_cast<int8_t>(bits)); break;
        default: std::snprintf(b, sizeof b, " %" PRIu64, bits); break;  // uint8, bool
      }
      line += b;
    }
    lines.push_back(line);
    if (sums_) lines.push_back("sum64 " + path + " " + std::to_string(sum));
  }
  bool sums_;
  std::map<const void*, size_t> storage_ids_;
};

// The manifest's lines at `path`, comments left out.
inline std::vector<std::string> expected_lines(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

}  // namespace graft::test
