// Safetensors reading and writing (Note [Safetensors layout] in graft/io/safetensors.h).
//
// Note [Validate before allocating]
// The reader first checks the whole header against the number of bytes the file actually holds:
// every shape product is computed with overflow checks, and every tensor's byte range must lie in
// the buffer, match its shape and dtype, and the ranges must tile the buffer exactly. Only then is
// memory allocated, so no tensor is ever larger than the file, whatever the header claims.
#include "graft/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/half.h"
#include "io/file_util.h"

namespace graft::io {

namespace {

using ordered_json = nlohmann::ordered_json;
using io::detail::Writer;

constexpr uint64_t kMaxHeader = 100'000'000;  // as the reference implementation

// graft's dtypes, their safetensors names, item sizes and order: kDTypeTable (Note [One dtype table]).
// Valid safetensors dtypes graft has no tensors for.
constexpr const char* kOtherDTypes[] = {"F8_E5M2", "F8_E4M3", "U16", "U32", "U64"};

std::string named(std::string_view s) {
  std::string out = "'";  // appended piece by piece: Note [Unity build] (GCC 12's false positives)
  out += s;
  out += "'";
  return out;
}

// Host <-> little-endian for elements of `size` bytes, in place.
void to_from_little_endian(uint8_t* p, size_t nbytes, size_t size) {
  if constexpr (std::endian::native == std::endian::little) {
    (void)p, (void)nbytes, (void)size;
  } else {
    for (size_t i = 0; i + size <= nbytes; i += size) std::reverse(p + i, p + i + size);
  }
}

// ---------------------------------------------------------------------------------------------
// Writing

struct OutEntry {
  std::string name;
  Tensor t;  // contiguous
  const DTypeInfo* info;
};

// Appends the data of the contiguous tensor `t` as little-endian bytes.
void append_bytes(const Tensor& t, size_t elem, std::vector<uint8_t>& out) {
  const size_t base = out.size();
  out.resize(base + static_cast<size_t>(t.numel()) * elem);
  uint8_t* dst = out.data() + base;
  if (t.numel()) std::memcpy(dst, t.data_ptr(), static_cast<size_t>(t.numel()) * elem);
  to_from_little_endian(dst, out.size() - base, elem);
}

template <class Items>
std::vector<OutEntry> prepare(const Items& items, const std::string& op) {
  std::vector<OutEntry> entries;
  NoGradGuard no_grad;
  for (const auto& [name, t] : items) {
    GRAFT_CHECK(name != "__metadata__", op, "tensor names other than \"__metadata__\"", "a tensor named \"__metadata__\"",
                "the name is reserved for the metadata map; rename the tensor");
    GRAFT_CHECK(t.defined(), op, "defined tensors", "an undefined tensor for " + named(name),
                "leave the entry out or give it a value");
    GRAFT_CHECK(t.device().is_cpu(), op, "CPU tensors", "tensor " + named(name) + " on " + t.device().str(),
                "move it to the CPU first");
    Tensor c = t.detach();
    const DTypeInfo& info = dtype_info(c.dtype());
    if (!c.is_contiguous()) c = c.contiguous();
    entries.push_back({name, c, &info});
  }
  // Descending dtype, then name: every tensor starts aligned to its element size.
  std::sort(entries.begin(), entries.end(), [](const OutEntry& a, const OutEntry& b) {
    if (a.info->safetensors_rank != b.info->safetensors_rank)
      return a.info->safetensors_rank > b.info->safetensors_rank;
    return a.name < b.name;
  });
  return entries;
}

std::string header_json(const std::vector<OutEntry>& entries, const Metadata& metadata, const std::string& op) {
  ordered_json h = ordered_json::object();
  if (!metadata.empty()) {
    ordered_json m = ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (const auto& e : entries) {
    const uint64_t n = static_cast<uint64_t>(e.t.numel()) * e.info->itemsize;
    ordered_json ti = ordered_json::object();
    ti["dtype"] = e.info->safetensors_name;
    ti["shape"] = e.t.sizes().vec();
    ti["data_offsets"] = {offset, offset + n};
    h[e.name] = std::move(ti);
    offset += n;
  }
  std::string s;
  try {
    s = h.dump();
  } catch (const nlohmann::json::exception&) {
    throw Error(op, "tensor names and metadata in valid UTF-8", "a string that is not valid UTF-8",
                "safetensors headers are JSON; encode names and metadata as UTF-8");
  }
  s.append((8 - (s.size() % 8)) % 8, ' ');  // 8 + N is a multiple of 8
  return s;
}

template <class Items>
void write_all(Writer& w, const Items& items, const Metadata& metadata, const std::string& op) {
  const auto entries = prepare(items, op);
  const std::string header = header_json(entries, metadata, op);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  w.write(len, 8);
  w.write(header.data(), header.size());
  std::vector<uint8_t> buf;
  for (const auto& e : entries) {
    if (e.t.is_contiguous() && std::endian::native == std::endian::little) {
      if (e.t.numel()) w.write(e.t.data_ptr(), e.t.nbytes());
      continue;
    }
    buf.clear();
    append_bytes(e.t, e.info->itemsize, buf);
    w.write(buf.data(), buf.size());
  }
}

class VectorWriter final : public Writer {
 public:
  explicit VectorWriter(std::vector<uint8_t>& out) : out_(out) {}
  void write(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), p, p + n);
  }

 private:
  std::vector<uint8_t>& out_;
};

// ---------------------------------------------------------------------------------------------
// Reading

struct InEntry {
  std::string name;
  const DTypeInfo* info;
  Shape shape;
  uint64_t begin, end;
};

struct Header {
  std::vector<InEntry> entries;  // sorted by offset once validated
  Metadata metadata;
};

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A JSON integer >= 0, or an error describing `what`.
uint64_t non_negative(const ordered_json& v, const std::string& op, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    throw Error(op, what + " >= 0", std::to_string(v.get<int64_t>()), "sizes and offsets cannot be negative");
  }
  throw Error(op, what + " as a non-negative integer", v.dump(), "the header is not a valid safetensors header");
}

const DTypeInfo& parse_dtype(const ordered_json& v, const std::string& op, const std::string& name) {
  GRAFT_CHECK(v.is_string(), op, "a string \"dtype\" for tensor " + named(name), v.dump(), "e.g. \"F32\"");
  const auto& s = v.get_ref<const std::string&>();
  for (const DTypeInfo& i : kDTypeTable)
    if (s == i.safetensors_name) return i;
  for (const char* other : kOtherDTypes) {
    GRAFT_CHECK(s != other, op, "a dtype graft has (F32, F64, I64, BOOL, F16, BF16) for tensor " + named(name),
                "\"" + s + "\"", "convert the tensor before saving it, e.g. t.to(torch.int64) for integers");
  }
  throw Error(op, "a safetensors dtype (F32, F64, I64, BOOL, F16, BF16, ...) for tensor " + named(name),
              "\"" + s + "\"", "the file is corrupt or was written by a newer safetensors version");
}

Header parse_header(std::span<const uint8_t> json_bytes, uint64_t buffer_size, const std::string& op) {
  GRAFT_CHECK(!json_bytes.empty() && json_bytes[0] == '{', op, "a JSON header starting with '{'",
              json_bytes.empty() ? std::string("an empty header")
                                 : "a header starting with byte " + std::to_string(json_bytes[0]),
              "the file is not a safetensors file");
  // (A NUL byte is never valid JSON, but the JSON parser stops at one.)
  const auto* nul = static_cast<const uint8_t*>(std::memchr(json_bytes.data(), 0, json_bytes.size()));
  GRAFT_CHECK(nul == nullptr, op, "a valid JSON header",
              "invalid JSON (a NUL byte at header byte " + std::to_string(nul - json_bytes.data()) + ")",
              "the file is corrupt or not a safetensors file");
  // Keys are checked for duplicates as they are parsed (a JSON object keeps only the last one),
  // and nesting is limited to what a header has.
  std::set<std::string> names;
  std::string duplicate;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, ordered_json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1) {
      if (!names.insert(parsed.get<std::string>()).second && duplicate.empty()) duplicate = parsed.get<std::string>();
    }
    if ((event == nlohmann::json::parse_event_t::object_start ||
         event == nlohmann::json::parse_event_t::array_start) && depth > 2) {
      throw Error(op, "a header nested at most 3 levels deep", "deeper nesting",
                  "the header is not a valid safetensors header");
    }
    return true;
  };
  ordered_json root;
  try {
    root = ordered_json::parse(json_bytes.begin(), json_bytes.end(), callback);
  } catch (const nlohmann::json::exception& e) {
    throw Error(op, "a valid JSON header", std::string("invalid JSON (") + e.what() + ")",
                "the file is corrupt or not a safetensors file");
  }
  GRAFT_CHECK(duplicate.empty(), op, "distinct tensor names in the header", "the name " + named(duplicate) + " twice",
              "the file is corrupt");
  GRAFT_CHECK(root.is_object(), op, "a JSON object as the header", root.type_name(), "the file is corrupt");

  Header h;
  for (auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      GRAFT_CHECK(value.is_object(), op, "\"__metadata__\" as an object of strings", value.type_name(),
                  "the file is corrupt");
      for (auto& [mk, mv] : value.items()) {
        GRAFT_CHECK(mv.is_string(), op, "string metadata values", "metadata " + named(mk) + " = " + mv.dump(),
                    "safetensors metadata maps strings to strings");
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    GRAFT_CHECK(value.is_object(), op, "an object {dtype, shape, data_offsets} for tensor " + named(key),
                value.dump(), "the file is corrupt");
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      GRAFT_CHECK(value.contains(field), op, std::string("a \"") + field + "\" entry for tensor " + named(key),
                  value.dump(), "the file is corrupt");
    }
    InEntry e{key, &parse_dtype(value["dtype"], op, key), Shape(), 0, 0};
    const auto& shape = value["shape"];
    GRAFT_CHECK(shape.is_array(), op, "a \"shape\" array for tensor " + named(key), shape.dump(),
                "the file is corrupt or not a safetensors file");
    GRAFT_CHECK(shape.size() <= static_cast<size_t>(kMaxDims), op,
                "at most " + std::to_string(kMaxDims) + " dims for tensor " + named(key),
                std::to_string(shape.size()) + " dims", "graft tensors have at most " + std::to_string(kMaxDims) + " dims, as PyTorch's");
    // The product of max(dim, 1) bounds numel and every stride: it must fit in int64.
    uint64_t extent = 1, numel = 1;
    for (const auto& d : shape) {
      const uint64_t v = non_negative(d, op, "dims of tensor " + named(key));
      const uint64_t m = std::max<uint64_t>(v, 1);
      GRAFT_CHECK(extent <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / m, op,
                  "a shape whose size fits in 64 bits for tensor " + named(key), shape.dump(),
                  "the file is corrupt");
      extent *= m;
      numel *= v;
      e.shape.push_back(static_cast<int64_t>(v));
    }
    GRAFT_CHECK(numel <= std::numeric_limits<uint64_t>::max() / e.info->itemsize, op,
                "a byte size that fits in 64 bits for tensor " + named(key), shape.dump(), "the file is corrupt");
    const uint64_t nbytes = numel * e.info->itemsize;
    const auto& offs = value["data_offsets"];
    GRAFT_CHECK(offs.is_array() && offs.size() == 2, op, "\"data_offsets\": [begin, end] for tensor " + named(key),
                offs.dump(), "the file is corrupt");
    e.begin = non_negative(offs[0], op, "data offsets of tensor " + named(key));
    e.end = non_negative(offs[1], op, "data offsets of tensor " + named(key));
    GRAFT_CHECK(e.begin <= e.end, op, "begin <= end in the data offsets of tensor " + named(key), offs.dump(),
                "the file is corrupt");
    GRAFT_CHECK(e.end <= buffer_size, op,
                "data offsets of tensor " + named(key) + " within the " + std::to_string(buffer_size) +
                    "-byte data buffer",
                offs.dump(), "the file is truncated or corrupt");
    GRAFT_CHECK(e.end - e.begin == nbytes, op,
                std::to_string(nbytes) + " bytes for tensor " + named(key) + " (" + e.info->safetensors_name +
                    ", shape " + shape.dump() + ")",
                std::to_string(e.end - e.begin) + " bytes in data_offsets " + offs.dump(),
                "the shape, dtype and offsets disagree; the file is corrupt");
    h.entries.push_back(std::move(e));
  }
  // The byte ranges must tile the buffer: no gaps, no overlaps, nothing after the last one.
  std::sort(h.entries.begin(), h.entries.end(), [](const InEntry& a, const InEntry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t pos = 0;
  const InEntry* prev = nullptr;
  for (const auto& e : h.entries) {
    if (e.begin < pos) {
      throw Error(op, "non-overlapping data offsets",
                  "tensor " + named(e.name) + " at [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                      ") overlapping tensor " + named(prev->name) + " at [" + std::to_string(prev->begin) +
                      ", " + std::to_string(prev->end) + ")",
                  "the file is corrupt");
    }
    if (e.begin > pos) {
      throw Error(op, "tensors that cover the data buffer contiguously",
                  "a gap of " + std::to_string(e.begin - pos) + " bytes at byte " + std::to_string(pos) +
                      " before tensor " + named(e.name),
                  "the file is corrupt");
    }
    pos = e.end;
    prev = &e;
  }
  GRAFT_CHECK(pos == buffer_size, op,
              "tensors that cover the whole " + std::to_string(buffer_size) + "-byte data buffer",
              "tensors covering only the first " + std::to_string(pos) + " bytes",
              "the file has trailing bytes or is corrupt");
  return h;
}

// Builds the tensors once the header is valid; `read(begin, dst)` fills dst from the data buffer.
template <class Read>
SafetensorsContents materialise(Header h, const LoadOptions& options, const std::string& op, Read&& read) {
  SafetensorsContents out;
  out.metadata = std::move(h.metadata);
  std::vector<std::pair<std::string, Tensor>> loaded;
  loaded.reserve(h.entries.size());
  for (const auto& e : h.entries) {
    Tensor t = make_empty(e.shape, e.info->dtype);
    const size_t n = static_cast<size_t>(e.end - e.begin);
    auto* dst = static_cast<uint8_t*>(t.data_ptr());
    if (n) read(e.begin, std::span<uint8_t>(dst, n), e.name);
    to_from_little_endian(dst, n, e.info->itemsize);
    if (e.info->dtype == DType::Bool) {
      for (size_t i = 0; i < n; ++i) {
        GRAFT_CHECK(dst[i] <= 1, op, "BOOL values stored as bytes 0 or 1",
                    "byte " + std::to_string(dst[i]) + " at element " + std::to_string(i) + " of tensor " +
                        named(e.name),
                    "the file is corrupt");
      }
    }
    const bool half = e.info->dtype == DType::Float16 || e.info->dtype == DType::BFloat16;
    if (half && options.half_to_float32) {
      Tensor f = make_empty(e.shape, DType::Float32);
      float* fp = f.data_ptr<float>();
      const int64_t count = t.numel();
      for (int64_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, dst + 2 * i, 2);
        fp[i] = e.info->dtype == DType::Float16 ? half_bits_to_float(bits) : bfloat16_bits_to_float(bits);
      }
      t = f;
    }
    loaded.emplace_back(e.name, std::move(t));
  }
  std::sort(loaded.begin(), loaded.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, t] : loaded) out.tensors.insert(name, std::move(t));
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void save_safetensors(const std::string& path, const TensorDict& tensors, const Metadata& metadata) {
  const std::string op = io::detail::file_op("save_safetensors", path);
  io::detail::write_file_atomically(path, op, [&](Writer& w) { write_all(w, tensors, metadata, op); });
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const Metadata& metadata) {
  const std::string op = io::detail::file_op("save_safetensors", path);
  io::detail::write_file_atomically(path, op, [&](Writer& w) { write_all(w, tensors, metadata, op); });
}

std::vector<uint8_t> serialize_safetensors(const TensorDict& tensors, const Metadata& metadata) {
  std::vector<uint8_t> out;
  VectorWriter w(out);
  write_all(w, tensors, metadata, "serialize_safetensors");
  return out;
}

SafetensorsContents parse_safetensors(std::span<const uint8_t> bytes, std::string_view name,
                                      const LoadOptions& options) {
  const std::string op = io::detail::file_op("parse_safetensors", std::string(name));
  GRAFT_CHECK(bytes.size() >= 8, op, "at least 8 bytes (the header length)", std::to_string(bytes.size()) + " bytes",
              "the data is truncated or not a safetensors file");
  const uint64_t n = read_u64_le(bytes.data());
  GRAFT_CHECK(n <= kMaxHeader, op, "a header length of at most 100000000 bytes", std::to_string(n),
              "the data is corrupt or not a safetensors file");
  GRAFT_CHECK(n <= bytes.size() - 8, op,
              "a header length of at most " + std::to_string(bytes.size() - 8) + " bytes (what follows it)",
              std::to_string(n), "the data is truncated or not a safetensors file");
  const size_t start = 8 + static_cast<size_t>(n);
  Header h = parse_header(bytes.subspan(8, static_cast<size_t>(n)), bytes.size() - start, op);
  return materialise(std::move(h), options, op, [&](uint64_t begin, std::span<uint8_t> dst, const std::string&) {
    std::memcpy(dst.data(), bytes.data() + start + begin, dst.size());
  });
}

SafetensorsContents load_safetensors(const std::string& path, const LoadOptions& options) {
  const std::string op = io::detail::file_op("load_safetensors", path);
  io::detail::InputFile f(path, op);
  const uint64_t size = f.size();
  GRAFT_CHECK(size >= 8, op, "a file of at least 8 bytes (the header length)", std::to_string(size) + " bytes",
              "the file is truncated or not a safetensors file");
  uint8_t len[8];
  f.read_at(0, len, "the header length");
  const uint64_t n = read_u64_le(len);
  GRAFT_CHECK(n <= kMaxHeader, op, "a header length of at most 100000000 bytes", std::to_string(n),
              "the file is corrupt or not a safetensors file");
  GRAFT_CHECK(n <= size - 8, op,
              "a header length of at most " + std::to_string(size - 8) + " bytes (the rest of the " +
                  std::to_string(size) + "-byte file)",
              std::to_string(n), "the file is truncated or not a safetensors file");
  std::vector<uint8_t> header(static_cast<size_t>(n));
  f.read_at(8, header, "the header");
  const uint64_t start = 8 + n;
  Header h = parse_header(header, size - start, op);
  return materialise(std::move(h), options, op, [&](uint64_t begin, std::span<uint8_t> dst, const std::string& name) {
    f.read_at(start + begin, dst, "tensor " + named(name));
  });
}

// ---- checkpoints ----

void save_checkpoint(const std::string& path, const CheckpointParts& parts, const Metadata& metadata) {
  const std::string op = io::detail::file_op("save_checkpoint", path);
  TensorDict all;
  std::map<std::string, std::string> owner;
  for (const auto& [prefix, dict] : parts) {
    for (const auto& item : dict) {
      std::string full = prefix + item.key();
      auto [it, fresh] = owner.emplace(full, prefix);
      GRAFT_CHECK(fresh, op, "distinct names across the parts",
                  "the name " + named(full) + " from part " + named(prefix) + " and from part " + named(it->second),
                  "give each part a distinct prefix ending in '.'");
      all.insert(std::move(full), item.value());
    }
  }
  io::detail::write_file_atomically(path, op, [&](Writer& w) { write_all(w, all, metadata, op); });
}

Checkpoint load_checkpoint(const std::string& path, const LoadOptions& options) {
  auto [tensors, metadata] = load_safetensors(path, options);
  return Checkpoint{std::move(tensors), std::move(metadata)};
}

TensorDict Checkpoint::part(const std::string& prefix, bool required) const {
  TensorDict out;
  for (const auto& item : tensors) {
    if (item.key().compare(0, prefix.size(), prefix) == 0) out.insert(item.key().substr(prefix.size()), item.value());
  }
  if (required && out.is_empty()) {
    std::set<std::string> prefixes;
    for (const auto& item : tensors) prefixes.insert(item.key().substr(0, item.key().find('.') + 1));
    std::string present;
    for (const auto& p : prefixes) present += (present.empty() ? "" : ", ") + named(p);
    throw Error("Checkpoint::part", "tensors whose names start with " + named(prefix),
                "none (top-level prefixes present: " + (present.empty() ? std::string("none") : present) + ")",
                "use the prefix the checkpoint was saved with");
  }
  return out;
}

const std::string& Checkpoint::meta(const std::string& key) const {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    std::string present;
    for (const auto& [k, v] : metadata) present += (present.empty() ? "" : ", ") + named(k);
    throw Error("Checkpoint::meta", "a metadata key " + named(key),
                "keys " + (present.empty() ? std::string("(none)") : present), "check the key the checkpoint was saved with");
  }
  return it->second;
}

namespace detail {
void set_save_failure_after_bytes(int64_t n) { io::detail::set_write_failure_after_bytes(n); }
}  // namespace detail

}  // namespace graft::io
