// IDX files, raw and gzipped, written byte by byte by the tests themselves.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "../io/temp_dir.h"
#include "../support/test_util.h"
#include "graft/data/idx.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

using data::IdxType;

// An IDX file: magic, big-endian sizes, then `payload` (already big-endian).
std::vector<uint8_t> idx_file(uint8_t type, const std::vector<uint32_t>& sizes, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> b = {0, 0, type, static_cast<uint8_t>(sizes.size())};
  for (uint32_t s : sizes) {
    b.push_back(static_cast<uint8_t>(s >> 24));
    b.push_back(static_cast<uint8_t>(s >> 16));
    b.push_back(static_cast<uint8_t>(s >> 8));
    b.push_back(static_cast<uint8_t>(s));
  }
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// Big-endian bytes of `v` as the unsigned integer `u` of `n` bytes.
void put_be(std::vector<uint8_t>& out, uint64_t u, int n) {
  for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(u >> (8 * i)));
}

// gzip-compresses `bytes` into `path` with zlib's gz* interface (an independent writer).
void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

TEST(Idx, ReadsEveryElementType) {
  TempDir dir;
  {
    // uint8, 2 x 3
    write_bytes(dir / "u8", idx_file(0x08, {2, 3}, {0, 1, 127, 128, 254, 255}));
    Tensor t = data::read_idx(dir / "u8");
    EXPECT_EQ(t.dtype(), kInt64);
    EXPECT_TRUE(all_close(t, {0, 1, 127, 128, 254, 255}, {2, 3}, 0, 0));
  }
  {
    write_bytes(dir / "i8", idx_file(0x09, {4}, {0x00, 0x7f, 0x80, 0xff}));
    EXPECT_TRUE(all_close(data::read_idx(dir / "i8"), {0, 127, -128, -1}, {4}, 0, 0));
  }
  {
    std::vector<uint8_t> p;
    for (int v : {1, -2, 32767, -32768, 258}) put_be(p, static_cast<uint16_t>(static_cast<int16_t>(v)), 2);
    write_bytes(dir / "i16", idx_file(0x0B, {5}, p));
    EXPECT_TRUE(all_close(data::read_idx(dir / "i16"), {1, -2, 32767, -32768, 258}, {5}, 0, 0));
  }
  {
    std::vector<uint8_t> p;
    for (int64_t v : {int64_t{1}, int64_t{-2}, int64_t{2147483647}, int64_t{-2147483648LL}, int64_t{65536}})
      put_be(p, static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    write_bytes(dir / "i32", idx_file(0x0C, {1, 5}, p));
    EXPECT_TRUE(all_close(data::read_idx(dir / "i32"), {1, -2, 2147483647, -2147483648.0, 65536}, {1, 5}, 0, 0));
  }
  {
    std::vector<uint8_t> p;
    for (float v : {1.5f, -0.1f, 3e38f}) put_be(p, std::bit_cast<uint32_t>(v), 4);
    write_bytes(dir / "f32", idx_file(0x0D, {3}, p));
    Tensor t = data::read_idx(dir / "f32");
    EXPECT_EQ(t.dtype(), kFloat32);
    EXPECT_EQ(values(t), (std::vector<double>{1.5, static_cast<double>(-0.1f), static_cast<double>(3e38f)}));
  }
  {
    std::vector<uint8_t> p;
    for (double v : {0.1, -1e300, 2.0}) put_be(p, std::bit_cast<uint64_t>(v), 8);
    write_bytes(dir / "f64", idx_file(0x0E, {3, 1}, p));
    Tensor t = data::read_idx(dir / "f64");
    EXPECT_EQ(t.dtype(), kFloat64);
    EXPECT_TRUE(all_close(t, {0.1, -1e300, 2.0}, {3, 1}, 0, 0));
  }
  {
    // 0 dims: one element; a zero size: no elements.
    write_bytes(dir / "scalar", idx_file(0x08, {}, {42}));
    Tensor s = data::read_idx(dir / "scalar");
    EXPECT_EQ(s.dim(), 0);
    EXPECT_EQ(s.item<int64_t>(), 42);
    write_bytes(dir / "none", idx_file(0x0D, {0, 28}, {}));
    EXPECT_EQ(data::read_idx(dir / "none").sizes().vec(), (std::vector<int64_t>{0, 28}));
  }
}

TEST(Idx, ArrayKeepsTheRawType) {
  std::vector<uint8_t> p;
  for (int v : {-1, 300}) put_be(p, static_cast<uint16_t>(static_cast<int16_t>(v)), 2);
  data::IdxArray a = data::parse_idx(idx_file(0x0B, {2}, p));
  EXPECT_EQ(a.type, IdxType::Int16);
  EXPECT_EQ(a.sizes, (std::vector<int64_t>{2}));
  ASSERT_EQ(a.bytes.size(), 4u);
  int16_t v[2];
  std::memcpy(v, a.bytes.data(), 4);  // host byte order
  EXPECT_EQ(v[0], -1);
  EXPECT_EQ(v[1], 300);
  EXPECT_STREQ(data::idx_type_name(a.type), "int16");
}

TEST(Idx, ReadsGzippedFiles) {
  TempDir dir;
  std::vector<uint8_t> pixels(5 * 7 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 37) % 256);
  const auto raw = idx_file(0x08, {5, 7, 3}, pixels);
  write_gz(dir / "x.gz", raw);
  Tensor t = data::read_idx(dir / "x.gz");
  std::vector<double> expect(pixels.begin(), pixels.end());
  EXPECT_TRUE(all_close(t, expect, {5, 7, 3}, 0, 0));
  // The suffix does not matter: the gzip magic does.
  write_gz(dir / "no_suffix", raw);
  EXPECT_TRUE(all_close(data::read_idx(dir / "no_suffix"), expect, {5, 7, 3}, 0, 0));
  // Two gzip members one after the other (cat a.gz b.gz) make one file.
  write_gz(dir / "a.gz", std::vector<uint8_t>(raw.begin(), raw.begin() + 20));
  write_gz(dir / "b.gz", std::vector<uint8_t>(raw.begin() + 20, raw.end()));
  auto cat = read_bytes(dir / "a.gz");
  auto b = read_bytes(dir / "b.gz");
  cat.insert(cat.end(), b.begin(), b.end());
  write_bytes(dir / "cat.gz", cat);
  EXPECT_TRUE(all_close(data::read_idx(dir / "cat.gz"), expect, {5, 7, 3}, 0, 0));
}

TEST(Idx, LargeGzippedFileStreams) {
  // More than one inflate chunk (64 KiB) of output.
  TempDir dir;
  std::vector<uint8_t> p;
  for (int i = 0; i < 50000; ++i) put_be(p, static_cast<uint32_t>(i * 7919), 4);
  write_gz(dir / "big.gz", idx_file(0x0C, {50000}, p));
  Tensor t = data::read_idx(dir / "big.gz");
  ASSERT_EQ(t.numel(), 50000);
  EXPECT_EQ(t.data_ptr<int64_t>()[49999], static_cast<int32_t>(static_cast<uint32_t>(49999 * 7919)));
}

struct BadIdx {
  const char* what;
  std::vector<uint8_t> bytes;
  std::vector<std::string> message;
};

std::vector<BadIdx> bad_idx() {
  return {
      {"empty", {}, {"at least 4 bytes", "0 bytes"}},
      {"short", {0, 0, 8}, {"at least 4 bytes", "3 bytes"}},
      {"bad magic", {0x50, 0x4b, 3, 4, 0, 0}, {"magic number", "50 4b 03 04", "not an IDX file"}},
      {"unknown type", idx_file(0x0A, {1}, {0}), {"type code 0a"}},
      {"too many dims", idx_file(0x08, std::vector<uint32_t>(65, 1), {0}), {"at most 64 dims", "65 dims"}},
      {"truncated header", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0}, {"16 header bytes for 3 dims", "10 bytes", "truncated"}},
      {"truncated data", idx_file(0x08, {2, 3}, {1, 2, 3, 4, 5}), {"6 bytes of data for uint8 sizes [2, 3]", "only 5",
                                                                   "truncated"}},
      {"truncated float data", idx_file(0x0D, {2}, {0, 0, 0, 0, 0, 0, 0}), {"8 bytes of data for float32", "only 7"}},
      {"trailing bytes", idx_file(0x08, {2}, {1, 2, 3}), {"2 bytes of data", "1 trailing bytes", "do not match"}},
      {"huge sizes", idx_file(0x08, {65536, 65536, 131072}, {}), {"below 2^48", "corrupt"}},
      {"huge sizes, small data", idx_file(0x0E, {1u << 20, 1u << 20}, {1, 2}), {"8796093022208 bytes", "only 2"}},
  };
}

TEST(Idx, MalformedFilesAreClearErrors) {
  TempDir dir;
  for (const auto& b : bad_idx()) {
    SCOPED_TRACE(b.what);
    auto parts = b.message;
    parts.push_back("parse_idx(\"buf\")");
    EXPECT_TRUE(throws_error([&] { data::parse_idx(b.bytes, "buf"); }, parts));
    // Raw and gzipped files give the same message, naming the file.
    write_bytes(dir / "raw", b.bytes);
    auto raw_parts = b.message;
    raw_parts.push_back("read_idx(\"" + dir / "raw" + "\")");
    EXPECT_TRUE(throws_error([&] { data::read_idx(dir / "raw"); }, raw_parts));
    write_gz(dir / "gz", b.bytes);
    auto gz_parts = b.message;
    gz_parts.push_back("read_idx(\"" + dir / "gz" + "\")");
    EXPECT_TRUE(throws_error([&] { data::read_idx(dir / "gz"); }, gz_parts));
  }
}

TEST(Idx, CorruptGzip) {
  TempDir dir;
  write_gz(dir / "ok.gz", idx_file(0x08, {100}, std::vector<uint8_t>(100, 7)));
  const auto good = read_bytes(dir / "ok.gz");
  ASSERT_NO_THROW(data::parse_idx(good));
  // Cut anywhere after the magic: a truncated stream (or a truncated IDX inside it).
  for (size_t n = 2; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_TRUE(throws_error([&] { data::parse_idx(cut, "cut"); }, {"parse_idx(\"cut\")"})) << n;
  }
  std::vector<uint8_t> cut(good.begin(), good.end() - 12);
  EXPECT_TRUE(throws_error([&] { data::parse_idx(cut); }, {"complete gzip stream", "truncated"}));
  // A damaged deflate stream.
  std::vector<uint8_t> bad = good;
  bad[10] ^= 0xff;
  bad[11] ^= 0xff;
  EXPECT_TRUE(throws_error([&] { data::parse_idx(bad); }, {"parse_idx"}));
  // A bad CRC at the end.
  std::vector<uint8_t> crc = good;
  crc[crc.size() - 6] ^= 1;
  EXPECT_TRUE(throws_error([&] { data::parse_idx(crc); }, {"valid gzip stream", "incorrect data check"}));
  // Garbage after the stream.
  std::vector<uint8_t> tail = good;
  tail.push_back(0);
  tail.push_back(1);
  EXPECT_TRUE(throws_error([&] { data::parse_idx(tail); }, {"nothing after the end of the gzip stream", "2 extra"}));
}

TEST(Idx, MissingFilesAndDirectories) {
  TempDir dir;
  EXPECT_TRUE(throws_error([&] { data::read_idx(dir / "train-images-idx3-ubyte"); },
                           {"read_idx(\"" + dir / "train-images-idx3-ubyte" + "\")", "No such file", "check the path"}));
  EXPECT_TRUE(throws_error([&] { data::read_idx(dir.path()); }, {"a regular file", "a directory"}));
}

// The process's peak resident set in KiB (VmHWM), after resetting it to the current resident set
// when `reset`; -1 where /proc does not allow it.
int64_t peak_rss_kib(bool reset) {
  if (reset) {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";  // Linux >= 4.0: reset the peak RSS
    clear.flush();
    if (!clear.good()) return -1;
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// Issue 14, item 7: a 1 MB gzipped file whose header claimed 4096 x 65536 x 65536 took 2.1 GB
// before failing. The claim (2^44 bytes) is more than the compressed bytes can inflate to (deflate
// packs at most about 1032:1), so it is an error after the first chunk, before the buffer grows.
TEST(Idx, GzipBombFailsBeforeAllocating) {
  TempDir dir;
  {
    // The header, then 128 MiB of zeros: about 128 KiB compressed, 1000 times less than the claim.
    gzFile f = gzopen((dir / "bomb.gz").c_str(), "wb1");
    ASSERT_NE(f, nullptr);
    const std::vector<uint8_t> header = idx_file(0x08, {4096, 65536, 65536}, {});
    ASSERT_EQ(gzwrite(f, header.data(), static_cast<unsigned>(header.size())), static_cast<int>(header.size()));
    const std::vector<uint8_t> zeros(1 << 20, 0);
    for (int i = 0; i < 128; ++i) ASSERT_EQ(gzwrite(f, zeros.data(), 1u << 20), 1 << 20);
    ASSERT_EQ(gzclose(f), Z_OK);
  }
  const auto bytes = read_bytes(dir / "bomb.gz");
  ASSERT_LT(bytes.size(), size_t{1} << 20);
  const int64_t before = peak_rss_kib(true);
  // 2^44 = 17592186044416 bytes claimed; the bound is 1032 x the compressed size + 64 KiB.
  const std::string bound = "inflates to at most " + std::to_string(1032 * bytes.size() + 65536) + " bytes";
  EXPECT_TRUE(throws_error([&] { data::read_idx(dir / "bomb.gz"); },
                           {"read_idx(\"" + dir / "bomb.gz" + "\")", "a gzip stream of " + std::to_string(bytes.size()),
                            bound, "17592186044416 bytes of data for uint8 sizes [4096, 65536, 65536]", "corrupt"}));
  const int64_t after = peak_rss_kib(false);
  if (before >= 0 && after >= 0) {
    // Before the fix the reader inflated all 128 MiB (and more buffer) first.
    EXPECT_LT(after - before, 32 * 1024) << "KiB of peak RSS growth";
  }
}

// A claim the data can hold is read into a buffer of exactly its size (no geometric overshoot):
// the right data inflates, and one byte more is trailing data.
TEST(Idx, GzipAtTheClaimAndOneBytePast) {
  TempDir dir;
  std::vector<uint8_t> payload(300000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 13);
  write_gz(dir / "ok.gz", idx_file(0x08, {3, 100000}, payload));
  const data::IdxArray a = data::read_idx_array(dir / "ok.gz");
  ASSERT_EQ(a.bytes.size(), 300000u);
  EXPECT_EQ(a.bytes[299999], static_cast<uint8_t>(299999 * 13));
  payload.push_back(1);
  write_gz(dir / "long.gz", idx_file(0x08, {3, 100000}, payload));
  EXPECT_TRUE(throws_error([&] { data::read_idx(dir / "long.gz"); }, {"300000 bytes of data", "1 trailing bytes"}));
}

// Issue 14, items 6 and 9: a FIFO, a device and a symbolic link loop are named for what they are
// (a FIFO without a writer used to block open() for ever).
TEST(Idx, FifoDeviceAndSymlinkLoop) {
  TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A watchdog: should the open block, a writer comes after 5 s, so the test fails instead of hanging.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 50 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (done) return;
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(throws_error([&] { data::read_idx(fifo); }, {"read_idx", "a regular file", "a FIFO (named pipe)"}));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  done = true;
  watchdog.join();
  EXPECT_TRUE(throws_error([&] { data::read_idx("/dev/zero"); }, {"a character device, not a regular file"}));
  ASSERT_EQ(::symlink("loop", (dir / "loop").c_str()), 0);
  EXPECT_TRUE(throws_error([&] { data::read_idx(dir / "loop"); },
                           {"read_idx(\"" + dir / "loop" + "\")", "Too many levels of symbolic links",
                            "points back to itself"}));
}

}  // namespace
}  // namespace graft::test
