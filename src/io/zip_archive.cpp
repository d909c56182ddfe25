// Zip archives in memory on libzip (src/io/zip_archive.h).
//
// Note [Zip entry bounds]
// A zip entry's sizes are claims written in its headers, and a reader that allocates what they
// claim can be made to allocate terabytes by a file of a kilobyte. libzip's consistency checks
// (ZIP_CHECKCONS) bound the compressed size (every entry's data lies before the central directory),
// not the uncompressed one, so before any allocation:
//  - a STORED entry may claim no more bytes than the whole archive holds;
//  - a compressed entry may claim at most ZipReader::max_ratio (1100) times its compressed size:
//    deflate cannot exceed about 1032:1 (258-byte matches coded in 2 bits at best), and PyTorch
//    never compresses at all.
// Then the read itself must deliver exactly the claim: fewer bytes is an error, and so is one byte
// more (the data may decompress to more than it claims). Reading on to the end of the entry is
// also what makes libzip compare the CRC-32, which it does only when its reader reaches the end.
//
// Note [Zip writer layout]
// ZipWriter hands all entries to libzip in finish(), in the order added: STORED, modification time
// 1980-01-01 00:00:00 (the first time MS-DOS timestamps can hold). libzip converts the time with
// localtime(), so the time given is mktime() of those local fields, which localtime() turns back
// into them whatever the time zone: the same entries give the same bytes on every machine.
// PyTorch's writer starts each entry's data at a multiple of 64 bytes of the file, so that a reader
// that maps the file can use the storage in place; readers do not need it. libzip has no option for
// it, but its local header for a new STORED entry of known size is fully determined: 30 bytes, the
// name, a zip64 extra field only for an entry of more than 2^32 - 1 bytes (4 + 16 bytes), then the
// extra fields graft sets. Each entry gets one extra field in its local header only (id "FB" as
// PyTorch's, zero bytes) whose length puts the data at the next multiple of 64; with no data
// descriptors (libzip writes none to a seekable output) each entry's offset follows from the one
// before. finish() then checks every local header in the written bytes against the prediction, so a
// libzip that lays headers out differently is caught (an internal error) instead of going unnoticed.
// An entry of exactly 2^32 - 1 bytes is refused: libzip 1.7 writes it an empty zip64 field that no
// reader (libzip included) accepts.
// An archive with no entries is never written by libzip (it removes the output instead); finish()
// returns the 22-byte end record of an empty archive itself.
#include "io/zip_archive.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <limits>
#include <memory>
#include <utility>

#include "graft/core/error.h"
#include "io/file_util.h"

namespace graft::io::detail {

namespace {

constexpr const char* kHint =
    "the file is damaged or cut short, or is no zip archive (torch.save of PyTorch 1.6 and later and torch::save "
    "write zip archives, older torch.save files are not)";
constexpr const char* kReadHint = "the entry's bytes were damaged after it was written: write the file again";

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// libzip's message for an error record (then released).
std::string take_message(zip_error_t* err) {
  std::string m = std::string("libzip's error \"") + zip_error_strerror(err) + "\"";
  zip_error_fini(err);
  return m;
}

std::string archive_message(zip_t* za) { return std::string("libzip's error \"") + zip_strerror(za) + "\""; }

std::string source_message(zip_source_t* src) {
  return std::string("libzip's error \"") + zip_error_strerror(zip_source_error(src)) + "\"";
}

struct DiscardArchive {
  void operator()(zip_t* za) const { zip_discard(za); }
};
struct CloseFile {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
struct FreeSource {
  void operator()(zip_source_t* src) const { zip_source_free(src); }
};
using ArchivePtr = std::unique_ptr<zip_t, DiscardArchive>;
using SourcePtr = std::unique_ptr<zip_source_t, FreeSource>;

// ---- writer layout (Note [Zip writer layout]) ----

constexpr uint64_t kAlign = 64;
constexpr uint16_t kPadFieldId = 0x4246;  // "FB" little-endian
constexpr uint64_t kLocalHeader = 30;
constexpr uint64_t kU32Max = 0xffffffffu;

// Bytes of the zip64 extra field libzip puts in a STORED entry's local header.
uint64_t local_zip64_field(uint64_t size) { return size > kU32Max ? 4 + 16 : 0; }

uint16_t le16(const std::string& b, uint64_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(b[at]) | (static_cast<uint8_t>(b[at + 1]) << 8));
}

// 1980-01-01 00:00:00 in local time (see the Note).
time_t dos_epoch(const std::string& op) {
  std::tm tm{};
  tm.tm_year = 80;
  tm.tm_mon = 0;
  tm.tm_mday = 1;
  tm.tm_isdst = -1;
  const time_t t = std::mktime(&tm);
  GRAFT_CHECK(t != static_cast<time_t>(-1), op, "a local time for 1980-01-01 00:00:00", "mktime() failing",
              "check the TZ environment variable");
  return t;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ZipReader

ZipReader::ZipReader(const char* data, size_t size, std::string source, std::string op)
    : size_(size), op_(file_op(op.c_str(), source)) {
  // libzip opens 0 bytes as an empty archive; a file of 0 bytes is no archive.
  GRAFT_CHECK(size > 0, op_, "a zip archive", "an empty file (0 bytes)", kHint);
  zip_error_t err;
  zip_error_init(&err);
  SourcePtr src(zip_source_buffer_create(data, size, 0, &err));
  if (!src) throw Error(op_, "to open the bytes as a zip source", take_message(&err), kHint);
  ArchivePtr za(zip_open_from_source(src.get(), ZIP_RDONLY | ZIP_CHECKCONS, &err));
  if (!za) {
    // libzip says "File already exists" for two entries of one name.
    const bool duplicate = zip_error_code_zip(&err) == ZIP_ER_EXISTS;
    throw Error(op_, "a readable zip archive",
                (duplicate ? "two entries of the same name (" : "") + take_message(&err) + (duplicate ? ")" : ""),
                kHint);
  }
  src.release();  // the archive owns it now
  zip_error_fini(&err);

  const zip_int64_t n = zip_get_num_entries(za.get(), 0);
  if (n < 0) throw Error(op_, "the archive's entry count", archive_message(za.get()), kHint);
  names_.reserve(static_cast<size_t>(n));
  for (zip_uint64_t i = 0; i < static_cast<zip_uint64_t>(n); ++i) {
    const char* name = zip_get_name(za.get(), i, 0);
    if (!name) throw Error(op_, "the name of entry " + std::to_string(i), archive_message(za.get()), kHint);
    // libzip refuses two equal names under ZIP_CHECKCONS; names are C strings, so two names
    // differing after a NUL byte would still meet here.
    GRAFT_CHECK(index_.emplace(name, i).second, op_, "entry names that appear once",
                "two entries named " + quoted(name), kHint);
    names_.emplace_back(name);
  }
  archive_ = za.release();
}

ZipReader::~ZipReader() {
  if (archive_) zip_discard(archive_);
}

ZipReader::ZipReader(ZipReader&& other) noexcept
    : archive_(std::exchange(other.archive_, nullptr)), size_(other.size_), op_(std::move(other.op_)),
      names_(std::move(other.names_)), index_(std::move(other.index_)) {}

ZipReader& ZipReader::operator=(ZipReader&& other) noexcept {
  if (this != &other) {
    if (archive_) zip_discard(archive_);
    archive_ = std::exchange(other.archive_, nullptr);
    size_ = other.size_;
    op_ = std::move(other.op_);
    names_ = std::move(other.names_);
    index_ = std::move(other.index_);
  }
  return *this;
}

uint64_t ZipReader::index_of(const std::string& name) const {
  GRAFT_ASSERT(archive_, "use of a moved-from ZipReader");
  const auto it = index_.find(name);
  if (it != index_.end()) return it->second;
  std::string got = "no such entry; the archive holds ";
  if (names_.empty()) got += "no entries";
  for (size_t i = 0; i < names_.size() && i < 8; ++i) got += (i ? ", " : "") + quoted(names_[i]);
  if (names_.size() > 8) got += ", ... (" + std::to_string(names_.size()) + " entries)";
  throw Error(op_, "an entry named " + quoted(name), got,
              "the archive was not written by the program expected, or is incomplete");
}

uint64_t ZipReader::checked_size(uint64_t index, const std::string& name) const {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(archive_, index, 0, &st) != 0)
    throw Error(op_, "the sizes of entry " + quoted(name), archive_message(archive_), kHint);
  constexpr zip_uint64_t need = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
  GRAFT_CHECK((st.valid & need) == need, op_, "entry " + quoted(name) + " to state its sizes and compression",
              "an entry without them", kHint);
  const std::string hint =
      "the archive is damaged, or built to exhaust memory (a zip bomb); it is refused before anything is allocated";
  if (st.comp_method == ZIP_CM_STORE) {
    GRAFT_CHECK(st.size <= size_, op_,
                "STORED entry " + quoted(name) + " to be no larger than the archive (" + std::to_string(size_) +
                    " bytes)",
                "a claimed size of " + std::to_string(st.size) + " bytes", hint);
  } else {
    const bool within = st.comp_size <= std::numeric_limits<uint64_t>::max() / max_ratio &&
                        st.size <= st.comp_size * max_ratio;
    GRAFT_CHECK(within, op_,
                "compressed entry " + quoted(name) + " to claim at most " + std::to_string(max_ratio) +
                    " times its compressed size (" + std::to_string(st.comp_size) + " bytes)",
                "a claimed size of " + std::to_string(st.size) + " bytes", hint);
  }
  return st.size;
}

uint64_t ZipReader::entry_size(const std::string& name) const { return checked_size(index_of(name), name); }

std::string ZipReader::read(const std::string& name) const {
  const uint64_t index = index_of(name);
  const uint64_t size = checked_size(index, name);
  std::string out(static_cast<size_t>(size), '\0');
  read_entry(index, name, out.data(), size);
  return out;
}

void ZipReader::read_into(const std::string& name, void* dst, uint64_t size) const {
  const uint64_t index = index_of(name);
  const uint64_t claimed = checked_size(index, name);
  GRAFT_CHECK(size == claimed, op_, "a destination of " + std::to_string(claimed) + " bytes for entry " + quoted(name),
              std::to_string(size) + " bytes", "size the destination with entry_size()");
  GRAFT_CHECK(dst != nullptr || size == 0, op_, "a destination for entry " + quoted(name), "a null pointer",
              "pass the memory to read into");
  read_entry(index, name, static_cast<char*>(dst), size);
}

void ZipReader::read_entry(uint64_t index, const std::string& name, char* dst, uint64_t size) const {
  const std::string what = "entry " + quoted(name) + " (" + std::to_string(size) + " bytes) to read back intact";
  std::unique_ptr<zip_file_t, CloseFile> f(zip_fopen_index(archive_, index, 0));
  if (!f) throw Error(op_, what, archive_message(archive_), kHint);  // e.g. an unsupported compression method
  uint64_t got = 0;
  while (got < size) {
    const zip_int64_t n = zip_fread(f.get(), dst + got, size - got);
    if (n < 0) throw Error(op_, what, std::string("libzip's error \"") + zip_file_strerror(f.get()) + "\"", kReadHint);
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
  }
  GRAFT_CHECK(got == size, op_, what, "only " + std::to_string(got) + " bytes", kReadHint);
  // Read on to the end: libzip compares the CRC-32 there, and data beyond the claim is an error.
  char probe;
  const zip_int64_t n = zip_fread(f.get(), &probe, 1);
  if (n < 0) throw Error(op_, what, std::string("libzip's error \"") + zip_file_strerror(f.get()) + "\"", kReadHint);
  GRAFT_CHECK(n == 0, op_, what, "more bytes than the entry claims", kReadHint);
}

// ---------------------------------------------------------------------------------------------
// ZipWriter

ZipWriter::ZipWriter(std::string op) : op_(std::move(op)) {}

ZipWriter::~ZipWriter() = default;

void ZipWriter::add(const std::string& name, std::string bytes) {
  GRAFT_CHECK(!finished_, op_, "a ZipWriter before finish()", "add() after finish()", "start a new ZipWriter");
  GRAFT_CHECK(!name.empty(), op_, "a non-empty entry name", "an empty name", "name every entry");
  GRAFT_CHECK(name.find('\0') == std::string::npos, op_, "an entry name without NUL bytes",
              "a name holding a NUL byte", "zip entry names are C strings");
  GRAFT_CHECK(name.size() <= 0xffff, op_, "an entry name of at most 65535 bytes",
              "a name of " + std::to_string(name.size()) + " bytes", "shorten the name");
  GRAFT_CHECK(bytes.size() != kU32Max, op_, "an entry of other than 4294967295 bytes",
              "entry " + quoted(name) + " of exactly 4294967295 bytes",
              "libzip 1.7 writes no valid header for exactly 2^32 - 1 bytes (Note [Zip writer layout])");
  GRAFT_CHECK(added_.emplace(name, entries_.size()).second, op_, "entry names that appear once",
              "a second entry named " + quoted(name), "give every entry its own name");
  entries_.push_back({name, std::move(bytes)});
}

std::string ZipWriter::finish() {
  GRAFT_CHECK(!finished_, op_, "a ZipWriter before finish()", "finish() called twice", "start a new ZipWriter");
  finished_ = true;
  added_.clear();
  if (entries_.empty()) return std::string("PK\x05\x06", 4) + std::string(18, '\0');

  const std::string what = "to build a zip archive in memory";
  const std::string hint = "out of memory, or a fault in libzip";
  zip_error_t err;
  zip_error_init(&err);
  SourcePtr out(zip_source_buffer_create(nullptr, 0, 0, &err));
  if (!out) throw Error(op_, what, take_message(&err), hint);
  ArchivePtr za(zip_open_from_source(out.get(), ZIP_CREATE | ZIP_TRUNCATE, &err));
  if (!za) throw Error(op_, what, take_message(&err), hint);
  zip_error_fini(&err);
  zip_source_keep(out.get());  // the archive frees its reference at close; the bytes are read from ours

  const time_t mtime = dos_epoch(op_);
  static const zip_uint8_t zeros[kAlign] = {};
  struct Placed {
    std::string name;
    uint64_t offset, extra;  // the local header's predicted offset and extra-field bytes
  };
  std::vector<Placed> placed;
  placed.reserve(entries_.size());
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    const uint64_t size = e.bytes.size();
    const uint64_t fixed = kLocalHeader + e.name.size() + local_zip64_field(size) + 4;  // + the pad field's header
    const uint64_t pad = (kAlign - (offset + fixed) % kAlign) % kAlign;
    zip_source_t* src = zip_source_buffer(za.get(), e.bytes.data(), size, 0);
    if (!src) throw Error(op_, what, archive_message(za.get()), hint);
    const zip_int64_t idx = zip_file_add(za.get(), e.name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      throw Error(op_, "entry " + quoted(e.name) + " to be added", archive_message(za.get()),
                  "entry names must be valid UTF-8");
    }
    const auto i = static_cast<zip_uint64_t>(idx);
    if (zip_set_file_compression(za.get(), i, ZIP_CM_STORE, 0) != 0 || zip_file_set_mtime(za.get(), i, mtime, 0) != 0 ||
        zip_file_extra_field_set(za.get(), i, kPadFieldId, ZIP_EXTRA_FIELD_NEW, zeros, static_cast<zip_uint16_t>(pad),
                                 ZIP_FL_LOCAL) != 0)
      throw Error(op_, "entry " + quoted(e.name) + " to be set up", archive_message(za.get()), hint);
    placed.push_back({e.name, offset, local_zip64_field(size) + 4 + pad});
    offset += fixed + pad + size;
  }
  if (zip_close(za.get()) != 0) throw Error(op_, what, archive_message(za.get()), hint);
  za.release();  // zip_close freed it
  entries_.clear();  // their bytes are in the archive now
  entries_.shrink_to_fit();

  // The written bytes, read back from the buffer source.
  if (zip_source_open(out.get()) != 0) throw Error(op_, what, source_message(out.get()), hint);
  struct Closer {
    zip_source_t* s;
    ~Closer() { zip_source_close(s); }
  } closer{out.get()};
  zip_int64_t total = -1;
  if (zip_source_seek(out.get(), 0, SEEK_END) != 0 || (total = zip_source_tell(out.get())) < 0 ||
      zip_source_seek(out.get(), 0, SEEK_SET) != 0)
    throw Error(op_, what, source_message(out.get()), hint);
  std::string bytes(static_cast<size_t>(total), '\0');
  uint64_t got = 0;
  while (got < bytes.size()) {
    const zip_int64_t n = zip_source_read(out.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0) throw Error(op_, what, source_message(out.get()), hint);
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
  }
  GRAFT_CHECK(got == bytes.size(), op_, what, "a short read of the written bytes", hint);

  // Every local header where the layout put it (Note [Zip writer layout]).
  for (const Placed& p : placed) {
    const uint64_t at = p.offset, n = p.name.size();
    const bool ok = at + kLocalHeader + n + p.extra <= bytes.size() && bytes.compare(at, 4, "PK\x03\x04", 4) == 0 &&
                    le16(bytes, at + 26) == n && le16(bytes, at + 28) == p.extra &&
                    bytes.compare(at + kLocalHeader, n, p.name) == 0 && (at + kLocalHeader + n + p.extra) % kAlign == 0;
    GRAFT_ASSERT(ok, "libzip did not lay out entry '" + p.name + "' as Note [Zip writer layout] predicts");
  }
  return bytes;
}

bool looks_like_zip(const char* data, size_t size) {
  return data != nullptr && size >= 4 &&
         (std::memcmp(data, "PK\x03\x04", 4) == 0 || std::memcmp(data, "PK\x05\x06", 4) == 0);
}

}  // namespace graft::io::detail
