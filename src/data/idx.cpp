// IDX reading (Note [IDX layout] in graft/data/idx.h), raw or gzipped.
//
// Gzipped input is inflated in chunks, and the IDX header is checked as soon as it has been
// decompressed: the output never grows past the size the header announces (plus one byte), and a
// header claiming more than the compressed bytes can inflate to is an error before the buffer
// grows, so a corrupt or hostile file cannot make the reader allocate more than it proves it holds.
#include "graft/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>

#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "io/file_util.h"

namespace graft::data {

namespace {

constexpr IdxType kTypes[] = {IdxType::UInt8, IdxType::Int8, IdxType::Int16,
                              IdxType::Int32, IdxType::Float32, IdxType::Float64};

std::string hex_bytes(std::span<const uint8_t> b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i) s += ' ';
    s += digits[b[i] >> 4];
    s += digits[b[i] & 15];
  }
  return s;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The header of an IDX buffer, once enough of it is present.
struct IdxHeader {
  IdxType type;
  std::vector<int64_t> sizes;
  size_t header_bytes;  // 4 + 4 * ndims
  uint64_t data_bytes;  // numel * element size
};

// Checks the 4-byte magic; returns the number of dims.
size_t check_magic(std::span<const uint8_t> b, const std::string& op) {
  GRAFT_CHECK(b.size() >= 4, op, "at least 4 bytes (the IDX magic number)", std::to_string(b.size()) + " bytes",
              "the file is truncated or empty");
  GRAFT_CHECK(b[0] == 0 && b[1] == 0, op, "an IDX magic number 00 00 <type> <ndims>",
              "bytes " + hex_bytes(b.first(4)), "this is not an IDX file");
  const bool known = std::find(std::begin(kTypes), std::end(kTypes), static_cast<IdxType>(b[2])) != std::end(kTypes);
  GRAFT_CHECK(known, op,
              "an IDX type code 08 (uint8), 09 (int8), 0b (int16), 0c (int32), 0d (float32) or 0e (float64)",
              "type code " + hex_bytes(b.subspan(2, 1)), "the file is corrupt or not an IDX file");
  GRAFT_CHECK(b[3] <= kMaxDims, op, "at most " + std::to_string(kMaxDims) + " dims (graft's limit)",
              std::to_string(b[3]) + " dims", "graft tensors have at most " + std::to_string(kMaxDims) + " dims, as PyTorch's");
  return b[3];
}

// Parses the header once 4 + 4 * ndims bytes are present.
IdxHeader parse_header(std::span<const uint8_t> b, const std::string& op) {
  const size_t nd = check_magic(b, op);
  IdxHeader h{static_cast<IdxType>(b[2]), {}, 4 + 4 * nd, 0};
  GRAFT_CHECK(b.size() >= h.header_bytes, op,
              std::to_string(h.header_bytes) + " header bytes for " + std::to_string(nd) + " dims",
              std::to_string(b.size()) + " bytes", "the file is truncated");
  uint64_t extent = 1, numel = 1;
  for (size_t i = 0; i < nd; ++i) {
    const uint64_t d = be32(b.data() + 4 + 4 * i);
    h.sizes.push_back(static_cast<int64_t>(d));
    // The product of max(size, 1) bounds numel and every stride; keep it below 2^48 elements.
    const uint64_t m = std::max<uint64_t>(d, 1);
    GRAFT_CHECK(extent <= (uint64_t{1} << 48) / m, op, "a total size below 2^48 elements",
                "sizes " + shape_str(h.sizes) + (i + 1 < nd ? "..." : ""), "the file is corrupt");
    extent *= m;
    numel *= d;
  }
  h.data_bytes = numel * idx_type_size(h.type);
  return h;
}

void check_data_size(const IdxHeader& h, uint64_t have, const std::string& op) {
  const std::string what = std::to_string(h.data_bytes) + " bytes of data for " + idx_type_name(h.type) +
                           " sizes " + shape_str(h.sizes);
  GRAFT_CHECK(have >= h.data_bytes, op, what, "only " + std::to_string(have) + " bytes",
              "the file is truncated; download it again");
  GRAFT_CHECK(have == h.data_bytes, op, what,
              std::to_string(have) + " bytes (" + std::to_string(have - h.data_bytes) + " trailing bytes)",
              "the sizes in the header do not match the data; the file is corrupt");
}

IdxArray decode(std::span<const uint8_t> b, const std::string& op) {
  const IdxHeader h = parse_header(b, op);
  check_data_size(h, b.size() - h.header_bytes, op);
  IdxArray a;
  a.type = h.type;
  a.sizes = h.sizes;
  a.bytes.assign(b.begin() + static_cast<std::ptrdiff_t>(h.header_bytes), b.end());
  const size_t es = idx_type_size(h.type);
  if (es > 1 && std::endian::native == std::endian::little) {
    for (size_t i = 0; i + es <= a.bytes.size(); i += es) std::reverse(a.bytes.begin() + i, a.bytes.begin() + i + es);
  }
  return a;
}

// Deflate's densest encoding: 258 bytes per two-bit code of a run, about 1032:1 (zlib's technical
// notes). No gzip stream of n compressed bytes inflates to more than kMaxRatio * n + a little.
constexpr uint64_t kMaxRatio = 1032;

// Inflates a gzip stream (one or more members). The first chunk holds the IDX header (at most
// 4 + 4 * 8 bytes); from then on the output never grows past the size the header claims (plus one
// byte, to see trailing data), and a claim the compressed bytes cannot hold is an error before
// anything more is allocated (issue 14, item 7: a 1 MB file claiming 4096 x 65536 x 65536 bytes).
std::vector<uint8_t> gunzip(std::span<const uint8_t> in, const std::string& op) {
  z_stream zs{};
  GRAFT_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, op, "zlib to initialise", "an error", "out of memory?");
  struct Cleanup {
    z_stream* z;
    ~Cleanup() { inflateEnd(z); }
  } cleanup{&zs};

  std::vector<uint8_t> out;
  std::optional<IdxHeader> header;
  constexpr size_t kChunk = 1 << 16;
  size_t consumed = 0;
  bool plausible = false;  // the header's claim has been checked against the compressed size
  for (;;) {
    size_t room = kChunk;
    if (header) {
      const uint64_t claimed = header->header_bytes + header->data_bytes;  // <= 36 + 2^51: no overflow
      if (!plausible) {
        const uint64_t n = in.size();
        const uint64_t most = n <= (std::numeric_limits<uint64_t>::max() - kChunk) / kMaxRatio
                                  ? kMaxRatio * n + kChunk : std::numeric_limits<uint64_t>::max();
        GRAFT_CHECK(claimed <= most, op,
                    "a header whose size the compressed data can hold (a gzip stream of " + std::to_string(n) +
                        " bytes inflates to at most " + std::to_string(most) + " bytes)",
                    std::to_string(header->data_bytes) + " bytes of data for " + idx_type_name(header->type) +
                        " sizes " + shape_str(header->sizes),
                    "the header is corrupt (or the file is a decompression bomb); download the file again");
        plausible = true;
      }
      // One byte more than the claim, so that trailing data shows up (out.size() <= claimed here).
      room = static_cast<size_t>(std::min<uint64_t>(kChunk, claimed + 1 - out.size()));
      if (out.size() + room > out.capacity()) {
        // Grow geometrically, but never past the claim.
        out.reserve(static_cast<size_t>(
            std::min<uint64_t>(std::max<uint64_t>(2 * out.capacity(), out.size() + room), claimed + 1)));
      }
    }
    const size_t avail = std::min<size_t>(in.size() - consumed, std::numeric_limits<uInt>::max());
    zs.next_in = const_cast<Bytef*>(in.data() + consumed);
    zs.avail_in = static_cast<uInt>(avail);
    const size_t old = out.size();
    out.resize(old + room);
    zs.next_out = out.data() + old;
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    consumed += avail - zs.avail_in;
    out.resize(old + (room - zs.avail_out));
    if (rc == Z_BUF_ERROR) {
      // No progress possible with a fresh output chunk: the input ended inside the stream.
      throw Error(op, "a complete gzip stream",
                  "compressed data that ends early (after " + std::to_string(out.size()) + " decompressed bytes)",
                  "the file is truncated; download it again");
    }
    if (rc != Z_OK && rc != Z_STREAM_END) {
      throw Error(op, "a valid gzip stream",
                  std::string("corrupt compressed data (") + (zs.msg ? zs.msg : "zlib error " + std::to_string(rc)) +
                      ")",
                  "the file is damaged; download it again");
    }
    if (!header && out.size() >= 4 && out.size() >= 4 + 4 * check_magic(out, op)) header = parse_header(out, op);
    if (header && out.size() - header->header_bytes > header->data_bytes) {
      check_data_size(*header, out.size() - header->header_bytes, op);  // throws: trailing bytes
    }
    if (rc == Z_STREAM_END) {
      if (consumed == in.size()) break;
      // Another gzip member may follow (as `cat a.gz b.gz` makes).
      GRAFT_CHECK(in.size() - consumed >= 2 && in[consumed] == 0x1f && in[consumed + 1] == 0x8b, op,
                  "nothing after the end of the gzip stream",
                  std::to_string(in.size() - consumed) + " extra bytes", "the file is corrupt");
      GRAFT_CHECK(inflateReset(&zs) == Z_OK, op, "zlib to reset", "an error",
                  "the gzip stream is corrupt; download the file again");
    }
  }
  return out;
}

bool is_gzip(std::span<const uint8_t> b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

IdxArray parse_with_op(std::span<const uint8_t> bytes, const std::string& op) {
  if (is_gzip(bytes)) {
    const std::vector<uint8_t> raw = gunzip(bytes, op);
    return decode(raw, op);
  }
  return decode(bytes, op);
}

// The graft dtype whose elements an IDX type stores; none for a byte that names no IDX type.
std::optional<DType> element_dtype(IdxType t) {
  switch (t) {
    case IdxType::UInt8:
      return DType::UInt8;
    case IdxType::Int8:
      return DType::Int8;
    case IdxType::Int16:
      return DType::Int16;
    case IdxType::Int32:
      return DType::Int32;
    case IdxType::Float32:
      return DType::Float32;
    case IdxType::Float64:
      return DType::Float64;
  }
  return std::nullopt;
}

}  // namespace

// Each IDX element type is a graft dtype of the same name and size (Note [One dtype table]).
const char* idx_type_name(IdxType t) {
  const std::optional<DType> d = element_dtype(t);
  return d ? dtype_name(*d) : "?";
}

size_t idx_type_size(IdxType t) {
  const std::optional<DType> d = element_dtype(t);
  return d ? element_size(*d) : 0;
}

int64_t IdxArray::numel() const {
  uint64_t n = 1;  // unsigned: a hand-built IdxArray with absurd sizes wraps instead of overflowing
  for (int64_t s : sizes) n *= static_cast<uint64_t>(s);
  return static_cast<int64_t>(n);
}

IdxArray parse_idx(std::span<const uint8_t> bytes, std::string_view name) {
  return parse_with_op(bytes, io::detail::file_op("parse_idx", std::string(name)));
}

IdxArray read_idx_array(const std::string& path) {
  const std::string op = io::detail::file_op("read_idx", path);
  io::detail::InputFile f(path, op);
  const std::vector<uint8_t> bytes = f.read_all();
  return parse_with_op(bytes, op);
}

Tensor idx_to_tensor(const IdxArray& a) {
  const int64_t n = a.numel();
  GRAFT_CHECK(a.bytes.size() == static_cast<size_t>(n) * idx_type_size(a.type), "idx_to_tensor",
              std::to_string(n * static_cast<int64_t>(idx_type_size(a.type))) + " bytes for sizes " + shape_str(a.sizes),
              std::to_string(a.bytes.size()) + " bytes", "build IdxArray with matching sizes and bytes");
  auto convert = [&]<class Src, class Dst>(DType dt) {
    Tensor t = make_empty(a.sizes, dt);
    Dst* out = t.data_ptr<Dst>();
    for (int64_t i = 0; i < n; ++i) {
      Src v;
      std::memcpy(&v, a.bytes.data() + static_cast<size_t>(i) * sizeof(Src), sizeof(Src));
      out[i] = static_cast<Dst>(v);
    }
    return t;
  };
  switch (a.type) {
    case IdxType::UInt8: return convert.template operator()<uint8_t, int64_t>(kInt64);
    case IdxType::Int8: return convert.template operator()<int8_t, int64_t>(kInt64);
    case IdxType::Int16: return convert.template operator()<int16_t, int64_t>(kInt64);
    case IdxType::Int32: return convert.template operator()<int32_t, int64_t>(kInt64);
    case IdxType::Float32: return convert.template operator()<float, float>(kFloat32);
    case IdxType::Float64: return convert.template operator()<double, double>(kFloat64);
  }
  GRAFT_ASSERT(false, "unknown IdxType");
  return {};
}

Tensor read_idx(const std::string& path) { return idx_to_tensor(read_idx_array(path)); }

}  // namespace graft::data
