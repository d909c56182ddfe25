// The zip layer (src/io/zip_archive.h): archives written by Python's zipfile
// (tests/fixtures/zip/gen_zip_fixtures.py, whose entries are spelled out again here) read back as
// written; damaged and hostile archives give a graft::Error naming the file and the fault, before any
// large allocation; graft's archives read back, are the same bytes for the same entries, and are read
// by Python's zipfile (the CTest case graft_zip_python_reads runs the script's --check on the archive
// ZipInterop.WritesAnArchivePythonReads writes).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../src/io/zip_archive.h"
#include "../support/test_util.h"
#include "graft/graft.h"
#include "temp_dir.h"

namespace graft::test {
namespace {

using io::detail::looks_like_zip;
using io::detail::ZipReader;
using io::detail::ZipWriter;

// The bytes of tests/fixtures/zip/<name>.
std::string zip_fixture(const std::string& name) {
  const auto path = std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "zip" / name;
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot open " << path << " (run tests/fixtures/zip/gen_zip_fixtures.py)";
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The generator's entries (gen_zip_fixtures.py: EMPTY_DICT_PICKLE, STORED_ENTRIES, NOTES, WRITER_ENTRIES).
const std::string zip_pickle("\x80\x02}q\x00.", 6);  // pickle.dumps({}, protocol=2)

std::string zip_bytes_0_to_255() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  return s;
}

std::string zip_notes() {
  std::string s;
  for (int i = 0; i < 40; ++i) s += "graft reads zip archives\n";
  return s;
}

// 100,000 bytes, byte i = (7 i + 3) mod 256.
std::string zip_pattern() {
  std::string s(100'000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((7 * i + 3) % 256);
  return s;
}

struct ZipEntryBytes {
  std::string name, bytes;
};

std::vector<ZipEntryBytes> zip_writer_entries() {
  return {{"archive/version", "3\n"}, {"archive/data.pkl", zip_pickle}, {"archive/data/0", zip_pattern()},
          {"archive/empty", ""}};
}

std::string zip_write(const std::vector<ZipEntryBytes>& entries) {
  ZipWriter w("zip_test");
  for (const auto& e : entries) w.add(e.name, e.bytes);
  return w.finish();
}

// ---- good archives written by Python ----

TEST(ZipReader, StoredEntriesAsPythonWroteThem) {
  const std::string b = zip_fixture("stored.zip");
  EXPECT_TRUE(looks_like_zip(b.data(), b.size()));
  ZipReader r(b.data(), b.size(), "stored.zip", "zip_test");
  EXPECT_EQ(r.names(), (std::vector<std::string>{"version", "archive/data.pkl", "archive/data/0", "archive/empty"}));
  EXPECT_TRUE(r.contains("archive/data.pkl"));
  EXPECT_FALSE(r.contains("data.pkl"));
  EXPECT_FALSE(r.contains("archive/"));
  EXPECT_EQ(r.entry_size("version"), 2u);
  EXPECT_EQ(r.entry_size("archive/data/0"), 256u);
  EXPECT_EQ(r.entry_size("archive/empty"), 0u);
  EXPECT_EQ(r.read("version"), "3\n");
  EXPECT_EQ(r.read("archive/data.pkl"), zip_pickle);
  EXPECT_EQ(r.read("archive/data/0"), zip_bytes_0_to_255());
  EXPECT_EQ(r.read("archive/empty"), "");
  // Again, in another order: entries are independent of each other.
  EXPECT_EQ(r.read("archive/data.pkl"), zip_pickle);

  std::vector<char> dst(256);
  r.read_into("archive/data/0", dst.data(), dst.size());
  EXPECT_EQ(std::string(dst.begin(), dst.end()), zip_bytes_0_to_255());
  r.read_into("archive/empty", nullptr, 0);
}

TEST(ZipReader, DeflatedEntry) {
  const std::string b = zip_fixture("deflated.zip");
  ZipReader r(b.data(), b.size(), "deflated.zip", "zip_test");
  EXPECT_EQ(r.names(), (std::vector<std::string>{"notes.txt", "archive/data.pkl"}));
  EXPECT_EQ(r.entry_size("notes.txt"), 1000u);
  EXPECT_EQ(r.read("notes.txt"), zip_notes());
  EXPECT_EQ(r.read("archive/data.pkl"), zip_pickle);
}

TEST(ZipReader, EmptyArchive) {
  const std::string b = zip_fixture("empty.zip");
  ASSERT_EQ(b.size(), 22u);
  EXPECT_TRUE(looks_like_zip(b.data(), b.size()));
  ZipReader r(b.data(), b.size(), "empty.zip", "zip_test");
  EXPECT_TRUE(r.names().empty());
  EXPECT_FALSE(r.contains("version"));
  EXPECT_TRUE(throws_error([&] { r.read("version"); }, {"zip_test(\"empty.zip\")", "'version'", "no entries"}));
}

TEST(ZipReader, MovedReaderKeepsTheArchive) {
  const std::string b = zip_fixture("stored.zip");
  ZipReader a(b.data(), b.size(), "stored.zip", "zip_test");
  ZipReader r(std::move(a));
  EXPECT_EQ(r.read("version"), "3\n");
  ZipReader c(b.data(), b.size(), "other.zip", "zip_test");
  c = std::move(r);
  EXPECT_EQ(c.read("archive/data/0"), zip_bytes_0_to_255());
}

// ---- misuse and files that are no archive ----

TEST(ZipReader, MissingEntryAndWrongDestination) {
  const std::string b = zip_fixture("stored.zip");
  ZipReader r(b.data(), b.size(), "stored.zip", "pickle_load");
  EXPECT_TRUE(throws_error([&] { r.read("data.pkl"); },
                           {"pickle_load(\"stored.zip\")", "an entry named 'data.pkl'", "no such entry",
                            "'archive/data.pkl'"}));
  EXPECT_TRUE(throws_error([&] { r.entry_size("nope"); }, {"stored.zip", "'nope'"}));
  std::vector<char> dst(300);
  EXPECT_TRUE(throws_error([&] { r.read_into("archive/data/0", dst.data(), dst.size()); },
                           {"stored.zip", "256 bytes", "300 bytes", "entry_size"}));
}

TEST(ZipReader, NotAZipArchive) {
  EXPECT_FALSE(looks_like_zip("", 0));
  EXPECT_FALSE(looks_like_zip("PK", 2));
  EXPECT_FALSE(looks_like_zip("\x80\x02}q", 4));
  EXPECT_TRUE(throws_error([] { ZipReader r("", 0, "<memory>", "pickle_load"); },
                           {"pickle_load(\"<memory>\")", "empty file"}));
  const std::string text = "this is a text file, not a zip archive\n";
  EXPECT_TRUE(throws_error([&] { ZipReader r(text.data(), text.size(), "notes.txt", "pickle_load"); },
                           {"pickle_load(\"notes.txt\")", "zip archive", "Not a zip archive"}));
}

// ---- hostile archives ----

TEST(ZipReaderHostile, TruncatedInTheCentralDirectory) {
  const std::string b = zip_fixture("truncated.zip");
  EXPECT_TRUE(looks_like_zip(b.data(), b.size()));  // the start is intact
  EXPECT_TRUE(throws_error([&] { ZipReader r(b.data(), b.size(), "truncated.zip", "zip_test"); },
                           {"zip_test(\"truncated.zip\")", "a readable zip archive", "Not a zip archive"}));
}

TEST(ZipReaderHostile, LocalHeaderOffsetPastTheEnd) {
  const std::string b = zip_fixture("offset_past_end.zip");
  EXPECT_TRUE(throws_error([&] { ZipReader r(b.data(), b.size(), "offset_past_end.zip", "zip_test"); },
                           {"zip_test(\"offset_past_end.zip\")", "a readable zip archive", "libzip's error"}));
}

TEST(ZipReaderHostile, BombClaimIsRefusedBeforeAllocating) {
  // 1 MiB of zeros deflated to 1033 bytes, claiming 2^40 bytes (the sanitizer build would abort on
  // an allocation of that size, and a Release build would throw std::bad_alloc, not graft::Error).
  const std::string b = zip_fixture("bomb.zip");
  ZipReader r(b.data(), b.size(), "bomb.zip", "zip_test");
  EXPECT_EQ(r.names(), (std::vector<std::string>{"bomb.bin"}));
  const std::vector<std::string> parts = {"zip_test(\"bomb.zip\")", "'bomb.bin'", "1100 times its compressed size",
                                          "1099511627776 bytes", "zip bomb"};
  EXPECT_TRUE(throws_error([&] { r.read("bomb.bin"); }, parts));
  EXPECT_TRUE(throws_error([&] { r.entry_size("bomb.bin"); }, parts));
  std::vector<char> dst(16);
  EXPECT_TRUE(throws_error([&] { r.read_into("bomb.bin", dst.data(), dst.size()); }, parts));
}

TEST(ZipReaderHostile, StoredEntryLargerThanTheArchive) {
  const std::string b = zip_fixture("stored_size.zip");
  ZipReader r(b.data(), b.size(), "stored_size.zip", "zip_test");
  EXPECT_TRUE(throws_error([&] { r.read("archive/data/0"); },
                           {"zip_test(\"stored_size.zip\")", "'archive/data/0'", "no larger than the archive (690 bytes)",
                            "2147483648 bytes"}));
  EXPECT_EQ(r.read("version"), "3\n");  // the other entries are intact
}

TEST(ZipReaderHostile, CrcMismatch) {
  const std::string b = zip_fixture("crc_mismatch.zip");
  ZipReader r(b.data(), b.size(), "crc_mismatch.zip", "zip_test");
  EXPECT_EQ(r.entry_size("archive/data/0"), 256u);
  EXPECT_TRUE(throws_error([&] { r.read("archive/data/0"); },
                           {"zip_test(\"crc_mismatch.zip\")", "'archive/data/0' (256 bytes) to read back intact",
                            "CRC error"}));
  std::vector<char> dst(256);
  EXPECT_TRUE(throws_error([&] { r.read_into("archive/data/0", dst.data(), dst.size()); }, {"CRC error"}));
  EXPECT_EQ(r.read("archive/data.pkl"), zip_pickle);
}

TEST(ZipReaderHostile, DuplicateEntryName) {
  const std::string b = zip_fixture("duplicate.zip");
  EXPECT_TRUE(throws_error([&] { ZipReader r(b.data(), b.size(), "duplicate.zip", "zip_test"); },
                           {"zip_test(\"duplicate.zip\")", "two entries of the same name"}));
}

// Every prefix of a good archive is refused cleanly (or, for the few that still parse, reads back
// as a graft::Error or the true bytes), never a crash.
TEST(ZipReaderHostile, EveryPrefixOfAnArchive) {
  const std::string b = zip_fixture("deflated.zip");
  for (size_t n = 0; n < b.size(); ++n) {
    const std::string cut = b.substr(0, n);
    try {
      ZipReader r(cut.data(), cut.size(), "cut.zip", "zip_test");
      for (const auto& name : r.names()) (void)r.read(name);
      ADD_FAILURE() << "a prefix of " << n << " bytes opened and read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.zip"), std::string::npos) << e.what();
    }
  }
}

// ---- the writer ----

TEST(ZipWriter, RoundTrip) {
  const auto entries = zip_writer_entries();
  const std::string b = zip_write(entries);
  EXPECT_TRUE(looks_like_zip(b.data(), b.size()));
  ZipReader r(b.data(), b.size(), "<memory>", "zip_test");
  ASSERT_EQ(r.names().size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(r.names()[i], entries[i].name);
    EXPECT_EQ(r.entry_size(entries[i].name), entries[i].bytes.size());
    EXPECT_TRUE(r.read(entries[i].name) == entries[i].bytes) << entries[i].name;
  }
}

TEST(ZipWriter, SameEntriesGiveTheSameBytes) {
  const auto entries = zip_writer_entries();
  const std::string a = zip_write(entries);
  const std::string b = zip_write(entries);
  EXPECT_TRUE(a == b);
  auto changed = entries;
  changed[0].bytes = "4\n";
  EXPECT_FALSE(zip_write(changed) == a);
}

TEST(ZipWriter, EntriesAreStoredAt64ByteOffsets) {
  // STORED: each entry's bytes appear verbatim in the archive; found by content (the pattern and the
  // pickle occur nowhere else), their offsets are multiples of 64 as PyTorch writes them. (The
  // Python check reads every entry's offset from its header.)
  const std::string b = zip_write(zip_writer_entries());
  const size_t pattern_at = b.find(zip_pattern());
  ASSERT_NE(pattern_at, std::string::npos);
  EXPECT_EQ(pattern_at % 64, 0u);
  const size_t pickle_at = b.find(zip_pickle);
  ASSERT_NE(pickle_at, std::string::npos);
  EXPECT_EQ(pickle_at % 64, 0u);
  // Names of every length land aligned.
  for (size_t len = 1; len <= 70; ++len) {
    ZipWriter w("zip_test");
    w.add(std::string(len, 'n'), "0123456789abcdef");
    w.add(std::string(len, 'm'), zip_pickle);
    const std::string one = w.finish();
    EXPECT_EQ(one.find("0123456789abcdef") % 64, 0u) << len;
    EXPECT_EQ(one.find(zip_pickle) % 64, 0u) << len;
    ZipReader r(one.data(), one.size(), "<memory>", "zip_test");
    EXPECT_EQ(r.read(std::string(len, 'm')), zip_pickle);
  }
}

TEST(ZipWriter, EmptyArchiveIsPythonsEmptyArchive) {
  ZipWriter w("zip_test");
  EXPECT_EQ(w.finish(), zip_fixture("empty.zip"));
}

TEST(ZipWriter, Misuse) {
  ZipWriter w("torch_save");
  w.add("a", "1");
  EXPECT_TRUE(throws_error([&] { w.add("a", "2"); }, {"torch_save", "a second entry named 'a'"}));
  EXPECT_TRUE(throws_error([&] { w.add("", "2"); }, {"torch_save", "empty name"}));
  EXPECT_TRUE(throws_error([&] { w.add(std::string("b\0c", 3), "2"); }, {"torch_save", "NUL"}));
  EXPECT_TRUE(throws_error([&] { w.add(std::string(70'000, 'x'), "2"); }, {"torch_save", "65535"}));
  const std::string b = w.finish();
  ZipReader r(b.data(), b.size(), "<memory>", "zip_test");
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a"}));  // the refused entries left no trace
  EXPECT_EQ(r.read("a"), "1");
  EXPECT_TRUE(throws_error([&] { w.add("c", "3"); }, {"torch_save", "after finish()"}));
  EXPECT_TRUE(throws_error([&] { w.finish(); }, {"torch_save", "finish() called twice"}));
}

TEST(ZipWriter, NameThatIsNotUtf8) {
  // libzip checks the names when finish() hands it the entries.
  ZipWriter w("torch_save");
  w.add("ok", "1");
  w.add("\xff\xfe", "2");
  EXPECT_TRUE(throws_error([&] { w.finish(); }, {"torch_save", "'\xff\xfe'", "UTF-8"}));
}

// Run by the CTest case graft_zip_python_reads with GRAFT_ZIP_INTEROP_DIR set; check by hand with
// /usr/bin/python3 tests/fixtures/zip/gen_zip_fixtures.py --check DIR/graft_written.zip
TEST(ZipInterop, WritesAnArchivePythonReads) {
  TempDir dir;
  const char* keep = std::getenv("GRAFT_ZIP_INTEROP_DIR");
  const std::string path = keep ? std::string(keep) + "/graft_written.zip" : dir / "graft_written.zip";
  const std::string b = zip_write(zip_writer_entries());
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(b.data(), static_cast<std::streamsize>(b.size()));
    ASSERT_TRUE(f.good()) << "could not write " << path;
  }
  const auto back = read_bytes(path);
  EXPECT_TRUE(std::string(back.begin(), back.end()) == b);
}

}  // namespace
}  // namespace graft::test
