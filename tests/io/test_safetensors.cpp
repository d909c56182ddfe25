// Safetensors: the exact layout (bytes checked against the format's documented examples), round
// trips, interop with PyTorch (tests/fixtures/gen_safetensors_fixture.py), atomic saves, and a
// clear graft::Error for every kind of malformed file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "../support/test_util.h"
#include "graft/graft.h"
#include "graft/io/safetensors.h"
#include "temp_dir.h"

namespace graft::test {
namespace {

using io::Metadata;
using io::TensorDict;

std::vector<uint8_t> le64(uint64_t n) {
  std::vector<uint8_t> b(8);
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  return b;
}

// A file: the length prefix, `header` as given (no padding added), then `data`.
std::vector<uint8_t> file_of(const std::string& header, const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> b = le64(header.size());
  for (char c : header) b.push_back(static_cast<uint8_t>(c));
  for (uint8_t c : data) b.push_back(c);
  return b;
}

std::vector<uint8_t> f32_bytes(std::initializer_list<float> v) {
  std::vector<uint8_t> b;
  for (float f : v) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(u >> (8 * i)));
  }
  return b;
}

// The header JSON of serialized bytes.
nlohmann::ordered_json header_of(const std::vector<uint8_t>& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  return nlohmann::ordered_json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
}

Tensor half_tensor(const std::vector<uint16_t>& bits, DType dt) {
  Tensor t = make_empty({static_cast<int64_t>(bits.size())}, dt);
  std::memcpy(t.data_ptr(), bits.data(), bits.size() * 2);
  return t;
}

std::vector<uint16_t> half_bits(const Tensor& t) {
  std::vector<uint16_t> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.data_ptr(), out.size() * 2);
  return out;
}

// ---- layout ----

TEST(SafetensorsLayout, MatchesTheFormatsDocumentedBytes) {
  // The reference implementation's own serialization examples.
  TensorDict d;
  d.insert("attn.0", tensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f}).reshape({1, 2, 3}));
  const std::string h = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(h.size(), 64u);  // already a multiple of 8: no padding
  EXPECT_EQ(io::serialize_safetensors(d), file_of(h, f32_bytes({0, 1, 2, 3, 4, 5})));

  TensorDict d2;
  d2.insert("attn0", tensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f}).reshape({1, 1, 2, 3}));
  const std::string h2 = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(h2.size(), 65u);
  EXPECT_EQ(io::serialize_safetensors(d2), file_of(h2 + "       ", f32_bytes({0, 1, 2, 3, 4, 5})));

  EXPECT_EQ(io::serialize_safetensors(TensorDict()), file_of("{}      "));
  EXPECT_EQ(io::serialize_safetensors(TensorDict(), {{"framework", "pt"}}),
            file_of(R"({"__metadata__":{"framework":"pt"}})" + std::string(5, ' ')));
}

TEST(SafetensorsLayout, SortsByDescendingDtypeThenNameSoEveryTensorIsAligned) {
  TensorDict d;
  d.insert("z_bool", tensor({true, false, true}));
  d.insert("b_f32", ones({3}));
  d.insert("a_f32", ones({1}));
  d.insert("half", half_tensor({0x3c00}, kFloat16));
  d.insert("bf", half_tensor({0x3f80, 0}, kBFloat16));
  d.insert("f64", ones({2}, kFloat64));
  d.insert("i64", ones({1}, kInt64));
  const auto bytes = io::serialize_safetensors(d, {{"k", "v"}});
  const auto h = header_of(bytes);
  std::vector<std::string> keys;
  for (auto& [k, v] : h.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"__metadata__", "i64", "f64", "a_f32", "b_f32", "bf", "half", "z_bool"}));
  const uint64_t header_len = bytes.size() - (8 + 8 + 16 + 4 + 12 + 4 + 2 + 3);
  EXPECT_EQ((8 + header_len) % 8, 0u);
  uint64_t expect_begin = 0;
  for (auto& [k, v] : h.items()) {
    if (k == "__metadata__") continue;
    const uint64_t b = v["data_offsets"][0], e = v["data_offsets"][1];
    EXPECT_EQ(b, expect_begin) << k;
    expect_begin = e;
    const uint64_t elem = v["dtype"] == "F64" || v["dtype"] == "I64" ? 8 : v["dtype"] == "F32" ? 4
                          : v["dtype"] == "BOOL" ? 1 : 2;
    EXPECT_EQ((8 + header_len + b) % elem, 0u) << k << " is not aligned";
  }
  EXPECT_EQ(8 + header_len + expect_begin, bytes.size());
}

// ---- round trips ----

TEST(Safetensors, RoundTripsEveryDtypeShapeAndStride) {
  TempDir dir;
  const std::string path = dir / "model.safetensors";
  TensorDict d;
  Tensor base = make({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4}, kFloat32);
  d.insert("w.t", base.t());                        // non-contiguous: saved as its values, row-major
  d.insert("w.slice", base.select(1, 2));          // strided view
  d.insert("f64", make({0.1, -1e300, std::numeric_limits<double>::infinity()}, {3}, kFloat64));
  Tensor i64 = make_empty({1, 3}, kInt64);  // (graft::tensor() goes through double: 2^53 + 1 would round)
  const int64_t iv[3] = {-9007199254740993LL, 0, 42};
  std::memcpy(i64.data_ptr(), iv, sizeof iv);
  d.insert("i64", i64);
  d.insert("bool", make({1, 0, 0, 1}, {2, 2}, kBool));
  d.insert("scalar", tensor(2.5));
  d.insert("empty", zeros({0, 5}));
  d.insert("expanded", tensor({1.f, 2.f}).expand({3, 2}));
  d.insert("grad", ones({2}, requires_grad()) * 3);  // has history: only its data is saved
  d.insert("half", half_tensor({0x3c00, 0xc000, 0x7bff}, kFloat16));
  Tensor half_nc = make_empty({2, 2}, kFloat16);
  const uint16_t hb[4] = {1, 2, 3, 4};
  std::memcpy(half_nc.data_ptr(), hb, 8);
  d.insert("half.t", half_nc.t());  // a non-contiguous half tensor (no kernels): copied by strides
  d.insert("bf16", half_tensor({0x3f80, 0x4049}, kBFloat16));
  io::save_safetensors(path, d, {{"epoch", "3"}, {"note", "ünïcödé ✓"}});

  auto [t, meta] = io::load_safetensors(path);
  EXPECT_EQ(meta, (Metadata{{"epoch", "3"}, {"note", "ünïcödé ✓"}}));
  std::vector<std::string> names = t.keys();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names.size(), d.size());
  for (const auto& item : d) {
    const Tensor& got = t[item.key()];
    EXPECT_EQ(got.dtype(), item.value().dtype()) << item.key();
    EXPECT_EQ(got.sizes().vec(), item.value().sizes().vec()) << item.key();
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_FALSE(got.requires_grad());
  }
  EXPECT_TRUE(all_close(t["w.t"], {1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12}, {4, 3}, 0, 0));
  EXPECT_TRUE(all_close(t["w.slice"], {3, 7, 11}, {3}, 0, 0));
  EXPECT_EQ(values(t["f64"]), (std::vector<double>{0.1, -1e300, std::numeric_limits<double>::infinity()}));
  EXPECT_EQ(t["i64"].data_ptr<int64_t>()[0], -9007199254740993LL);
  EXPECT_EQ(values(t["bool"]), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(t["scalar"].dim(), 0);
  EXPECT_EQ(t["scalar"].item<float>(), 2.5f);
  EXPECT_EQ(t["empty"].numel(), 0);
  EXPECT_TRUE(all_close(t["expanded"], {1, 2, 1, 2, 1, 2}, {3, 2}, 0, 0));
  EXPECT_TRUE(all_close(t["grad"], {3, 3}, {2}, 0, 0));
  EXPECT_EQ(half_bits(t["half"]), (std::vector<uint16_t>{0x3c00, 0xc000, 0x7bff}));
  EXPECT_EQ(half_bits(t["half.t"]), (std::vector<uint16_t>{1, 3, 2, 4}));
  EXPECT_EQ(half_bits(t["bf16"]), (std::vector<uint16_t>{0x3f80, 0x4049}));

  // Saving what was loaded gives the same bytes.
  const auto bytes = read_bytes(path);
  EXPECT_EQ(io::serialize_safetensors(t, meta), bytes);
  EXPECT_EQ(io::parse_safetensors(bytes).tensors.keys(), names);
}

TEST(Safetensors, StdMapOverloadAndOverwrite) {
  TempDir dir;
  const std::string path = dir / "m.safetensors";
  io::save_safetensors(path, std::map<std::string, Tensor>{{"b", ones({2})}, {"a", zeros({1}, kInt64)}});
  io::save_safetensors(path, std::map<std::string, Tensor>{{"c", full({1}, 7.0)}});  // replaces the file
  auto [t, meta] = io::load_safetensors(path);
  EXPECT_EQ(t.keys(), std::vector<std::string>{"c"});
  EXPECT_TRUE(meta.empty());
  EXPECT_EQ(t["c"].item<float>(), 7.0f);
  EXPECT_EQ(dir.files(), std::vector<std::string>{"m.safetensors"});  // no temporary files left
}

TEST(Safetensors, HalfToFloat32IsExact) {
  // float16 bit patterns and their exact values: 1, -2, max 65504, min subnormal 2^-24, the
  // largest subnormal, half(0.1), -inf, a NaN, -0.
  TensorDict d;
  d.insert("h", half_tensor({0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x2e66, 0xfc00, 0x7e00, 0x8000}, kFloat16));
  d.insert("b", half_tensor({0x3f80, 0xc049, 0x7f80, 0x0001}, kBFloat16));
  auto c = io::parse_safetensors(io::serialize_safetensors(d), "mem", {.half_to_float32 = true});
  ASSERT_EQ(c.tensors["h"].dtype(), kFloat32);
  const float* h = c.tensors["h"].data_ptr<float>();
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[4], std::ldexp(1023.0f, -24));
  EXPECT_EQ(h[5], 0.0999755859375f);
  EXPECT_EQ(h[6], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(h[7]));
  EXPECT_EQ(std::bit_cast<uint32_t>(h[8]), 0x80000000u);
  const float* b = c.tensors["b"].data_ptr<float>();
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -3.140625f);
  EXPECT_EQ(b[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(b[3], std::bit_cast<float>(0x00010000u));
}

// ---- interop with PyTorch ----

std::string fixture_path() {
  return (std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "torch_written.safetensors").string();
}

TEST(SafetensorsInterop, LoadsTheFileTorchWrote) {
  // Values as tests/fixtures/gen_safetensors_fixture.py built them with torch.
  auto [t, meta] = io::load_safetensors(fixture_path());
  EXPECT_EQ(meta, (Metadata{{"format", "pt"}, {"source", "gen_safetensors_fixture.py"}}));
  EXPECT_EQ(t.keys(), (std::vector<std::string>{"bias", "empty", "layer.0.bf16", "layer.0.half", "mask", "scalar",
                                                "steps", "weight"}));
  EXPECT_TRUE(all_close(t["weight"], {-1, -0.5, 0, 0.5, 1, 1.5}, {2, 3}, 0, 0));
  EXPECT_EQ(t["weight"].dtype(), kFloat32);
  EXPECT_EQ(t["bias"].dtype(), kFloat64);
  EXPECT_EQ(values(t["bias"]), (std::vector<double>{0.1, -2.5, 1e-300, std::numeric_limits<double>::infinity()}));
  ASSERT_EQ(t["steps"].dtype(), kInt64);
  EXPECT_EQ(t["steps"].sizes().vec(), (std::vector<int64_t>{2, 2}));
  const int64_t* s = t["steps"].data_ptr<int64_t>();
  EXPECT_EQ(s[0], -(int64_t{1} << 62));
  EXPECT_EQ(s[1], 7);
  EXPECT_EQ(s[2], 0);
  EXPECT_EQ(s[3], int64_t{1} << 40);
  EXPECT_EQ(t["mask"].dtype(), kBool);
  EXPECT_EQ(values(t["mask"]), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(t["scalar"].dim(), 0);
  EXPECT_EQ(t["scalar"].item<float>(), 3.25f);
  EXPECT_EQ(t["empty"].sizes().vec(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(t["layer.0.half"].dtype(), kFloat16);
  EXPECT_EQ(half_bits(t["layer.0.half"]), (std::vector<uint16_t>{0x3c00, 0xc000, 0x7bff, 0x0001, 0x2e66, 0xfc00}));
  EXPECT_EQ(t["layer.0.bf16"].dtype(), kBFloat16);

  auto f = io::load_safetensors(fixture_path(), {.half_to_float32 = true});
  EXPECT_EQ(values(f.tensors["layer.0.half"]),
            (std::vector<double>{1, -2, 65504, 5.960464477539063e-08, 0.0999755859375,
                                 -std::numeric_limits<double>::infinity()}));  // torch's .float()
  EXPECT_EQ(values(f.tensors["layer.0.bf16"]), (std::vector<double>{1, -3.140625, 1.2676506002282294e+30}));

  // graft writes the very bytes the script wrote with the reference layout.
  EXPECT_EQ(io::serialize_safetensors(t, meta), read_bytes(fixture_path()));
}

TEST(SafetensorsInterop, WritesAFileTorchReads) {
  // Check by hand: /usr/bin/python3 tests/fixtures/gen_safetensors_fixture.py --check <printed path>
  TempDir dir;
  const char* keep = std::getenv("GRAFT_INTEROP_DIR");
  const std::string path = keep ? std::string(keep) + "/graft_written.safetensors" : dir / "graft_written.safetensors";
  TensorDict d;
  d.insert("a", (arange(12, kFloat32).reshape({3, 4}) / 8).t());
  d.insert("b", tensor({{1.5, -0.25}}, kFloat64));
  d.insert("c", tensor({int64_t{-3}, int64_t{0}, int64_t{1} << 50}));
  d.insert("d", tensor({false, true}));
  io::save_safetensors(path, d, {{"written_by", "graft"}, {"epoch", "7"}});
  if (keep) std::printf("wrote %s\n", path.c_str());
  auto back = io::load_safetensors(path);
  EXPECT_TRUE(all_close(back.tensors["a"], {0, 0.5, 1, 0.125, 0.625, 1.125, 0.25, 0.75, 1.25, 0.375, 0.875, 1.375},
                        {4, 3}, 0, 0));
}

// ---- atomic saves ----

TEST(SafetensorsAtomic, AFailedWriteLeavesTheOldFileIntact) {
  TempDir dir;
  const std::string path = dir / "ckpt.safetensors";
  TensorDict old_state;
  old_state.insert("w", arange(100, kFloat32));
  io::save_safetensors(path, old_state, {{"step", "1"}});
  const auto before = read_bytes(path);

  TensorDict new_state;
  new_state.insert("w", arange(1000, kFloat32));
  for (int64_t fail_at : {0, 7, 100, 3000}) {
    io::detail::set_save_failure_after_bytes(fail_at);
    EXPECT_TRUE(throws_error([&] { io::save_safetensors(path, new_state, {{"step", "2"}}); },
                             {"save_safetensors(\"" + path + "\")", "write error after " + std::to_string(fail_at),
                              "previous file", "unchanged"}))
        << fail_at;
    io::detail::set_save_failure_after_bytes(-1);
    EXPECT_EQ(read_bytes(path), before) << "failing after " << fail_at << " bytes changed the file";
    EXPECT_EQ(dir.files(), std::vector<std::string>{"ckpt.safetensors"}) << "a temporary file was left behind";
  }
  EXPECT_NO_THROW(io::save_checkpoint(path, {{"m.", new_state}}));  // the hook is reset
  EXPECT_EQ(io::load_checkpoint(path).part("m.")["w"].numel(), 1000);
}

TEST(SafetensorsAtomic, UnwritableTargets) {
  TempDir dir;
  TensorDict d;
  d.insert("x", ones({1}));
  EXPECT_TRUE(throws_error([&] { io::save_safetensors(dir / "missing/sub/x.safetensors", d); },
                           {"missing/sub/x.safetensors", "temporary file", "create the directory first"}));
  std::filesystem::create_directory(dir / "adir");
  EXPECT_TRUE(throws_error([&] { io::save_safetensors(dir / "adir", d); }, {"rename", "adir"}));
  EXPECT_TRUE(throws_error([&] { io::save_safetensors(dir.path() + "/", d); }, {"a file path"}));
  EXPECT_EQ(dir.files(), std::vector<std::string>{"adir"});
}

TEST(SafetensorsAtomic, ReadOnlyDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can write to read-only directories";
  TempDir dir;
  const std::string path = dir / "x.safetensors";
  TensorDict d;
  d.insert("x", ones({1}));
  io::save_safetensors(path, d);
  const auto before = read_bytes(path);
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  d.insert_or_assign("x", zeros({3}));
  EXPECT_TRUE(throws_error([&] { io::save_safetensors(path, d); }, {path, "writable"}));
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
  EXPECT_EQ(read_bytes(path), before);
}

TEST(Safetensors, SaveRejectsWhatTheFormatCannotHold) {
  TensorDict d;
  d.insert("__metadata__", ones({1}));
  EXPECT_TRUE(throws_error([&] { io::serialize_safetensors(d); }, {"\"__metadata__\"", "reserved"}));
  TensorDict u;
  u.insert("x", Tensor());
  EXPECT_TRUE(throws_error([&] { io::serialize_safetensors(u); }, {"undefined tensor for 'x'"}));
  TensorDict bad;
  bad.insert(std::string("bad\xff"), ones({1}));
  EXPECT_TRUE(throws_error([&] { io::serialize_safetensors(bad); }, {"UTF-8"}));
  EXPECT_TRUE(throws_error([&] { io::serialize_safetensors({}, {{"k", "\xc3"}}); }, {"UTF-8"}));
}

// ---- checkpoints ----

TEST(Checkpoint, PartsWithPrefixes) {
  TempDir dir;
  const std::string path = dir / "run.safetensors";
  TensorDict model, optim;
  model.insert("fc1.weight", make({1, 2, 3, 4}, {2, 2}, kFloat32));
  model.insert("fc1.bias", make({5, 6}, {2}, kFloat32));
  optim.insert("state.0.exp_avg", make({0.5, 0.25}, {2}, kFloat32));
  optim.insert("state.0.step", tensor(int64_t{10}));
  io::save_checkpoint(path, {{"model.", model}, {"optim.", optim}}, {{"epoch", "3"}});

  io::Checkpoint c = io::load_checkpoint(path);
  EXPECT_EQ(c.tensors.size(), 4u);
  EXPECT_EQ(c.meta("epoch"), "3");
  TensorDict m = c.part("model.");
  EXPECT_EQ(m.keys(), (std::vector<std::string>{"fc1.bias", "fc1.weight"}));
  EXPECT_TRUE(all_close(m["fc1.weight"], {1, 2, 3, 4}, {2, 2}, 0, 0));
  TensorDict o = c.part("optim.");
  EXPECT_EQ(o["state.0.step"].item<int64_t>(), 10);
  EXPECT_TRUE(all_close(o["state.0.exp_avg"], {0.5, 0.25}, {2}, 0, 0));
  EXPECT_TRUE(c.part("sched.", false).is_empty());
  EXPECT_TRUE(throws_error([&] { c.part("sched."); }, {"'sched.'", "'model.'", "'optim.'"}));
  EXPECT_TRUE(throws_error([&] { c.meta("step"); }, {"'step'", "'epoch'"}));

  TensorDict a, b;
  a.insert("x.y", ones({1}));
  b.insert("y", ones({1}));
  EXPECT_TRUE(throws_error([&] { io::save_checkpoint(dir / "c.safetensors", {{"m.", a}, {"m.x.", b}}); },
                           {"'m.x.y'", "distinct prefix"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "c.safetensors"));
}

// ---- malformed files ----

struct Bad {
  const char* what;
  std::vector<uint8_t> bytes;
  std::vector<std::string> message;
};

std::vector<Bad> malformed() {
  const auto f8 = f32_bytes({1, 2});  // 8 bytes of data
  auto t = [](const std::string& body) { return "{\"t\":" + body + "}"; };
  std::string deep_h = t(R"({"dtype":"F32","shape":[[[[1]]]],"data_offsets":[0,4]})");
  return {
      {"empty", {}, {"at least 8 bytes", "0 bytes"}},
      {"short length", {1, 0, 0}, {"at least 8 bytes", "3 bytes"}},
      {"length past the end", [] {
         auto b = file_of("{}");
         b[0] = 200;
         return b;
       }(),
       {"header length of at most 2", "got 200", "truncated"}},
      {"huge length", [] {
         auto b = le64(~uint64_t{0});
         b.push_back('{');
         return b;
       }(),
       {"at most 100000000", "18446744073709551615"}},
      {"not an object", file_of("[1, 2]  "), {"starting with '{'"}},
      {"empty header", file_of(""), {"an empty header"}},
      {"invalid json", file_of("{\"t\": }"), {"valid JSON", "parse error"}},
      {"trailing nul", file_of(std::string("{}\0\0\0\0\0\0", 8)), {"valid JSON"}},
      {"invalid utf-8", file_of("{\"\xff\":1}"), {"valid JSON"}},
      {"tensor not an object", file_of(t("3")), {"tensor 't'", "an object"}},
      {"missing dtype", file_of(t(R"({"shape":[2],"data_offsets":[0,8]})")), {"\"dtype\" entry for tensor 't'"}},
      {"missing shape", file_of(t(R"({"dtype":"F32","data_offsets":[0,8]})")), {"\"shape\" entry"}},
      {"missing offsets", file_of(t(R"({"dtype":"F32","shape":[2]})")), {"\"data_offsets\" entry"}},
      {"unknown dtype", file_of(t(R"({"dtype":"F99","shape":[2],"data_offsets":[0,8]})"), f8),
       {"\"F99\"", "safetensors dtype"}},
      {"dtype graft lacks", file_of(t(R"({"dtype":"U32","shape":[2],"data_offsets":[0,8]})"), f8),
       {"\"U32\"", "a dtype graft has", "convert the tensor"}},
      {"dtype not a string", file_of(t(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})"), f8), {"string \"dtype\""}},
      {"shape not an array", file_of(t(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"), f8),
       {"\"shape\" array"}},
      {"negative dim", file_of(t(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), f8),
       {"dims of tensor 't' >= 0", "-2"}},
      {"fractional dim", file_of(t(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"), f8),
       {"non-negative integer", "2.5"}},
      {"huge dim", file_of(t(R"({"dtype":"F32","shape":[1e30],"data_offsets":[0,8]})"), f8),
       {"non-negative integer"}},
      {"too many dims", file_of(t(R"({"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]})"), f8),
       {"at most 64 dims", "65 dims"}},
      {"shape product overflows", file_of(t(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})"), f8),
       {"fits in 64 bits"}},
      {"zero-size shape whose strides overflow",
       file_of(t(R"({"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]})")), {"fits in 64 bits"}},
      {"byte size overflows", file_of(t(R"({"dtype":"I64","shape":[4611686018427387904],"data_offsets":[0,8]})"), f8),
       {"byte size that fits in 64 bits"}},
      {"offsets not a pair", file_of(t(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), f8),
       {"[begin, end]", "[0]"}},
      {"negative offset", file_of(t(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"), f8), {">= 0", "-8"}},
      {"begin after end", file_of(t(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), f8), {"begin <= end"}},
      {"offsets out of bounds", file_of(t(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})"), f8),
       {"within the 8-byte data buffer", "[0,16]"}},
      {"shape/offsets mismatch", file_of(t(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), f8),
       {"12 bytes for tensor 't'", "8 bytes"}},
      {"dtype/offsets mismatch", file_of(t(R"({"dtype":"F64","shape":[2],"data_offsets":[0,8]})"), f8),
       {"16 bytes for tensor 't'"}},
      {"overlap",
       file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
               f8),
       {"non-overlapping", "'b'", "'a'"}},
      {"gap",
       file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f8), {"contiguously", "gap of 4 bytes"}},
      {"trailing data",
       file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f8), {"whole 8-byte data buffer", "first 4"}},
      {"data with no tensors", file_of("{}", f8), {"whole 8-byte"}},
      {"duplicate names",
       file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
               f8),
       {"distinct tensor names", "'a' twice"}},
      {"metadata not an object", file_of(R"({"__metadata__":[1]})"), {"\"__metadata__\" as an object"}},
      {"metadata value not a string", file_of(R"({"__metadata__":{"epoch":3}})"), {"string metadata values", "'epoch'"}},
      {"deep nesting", file_of(deep_h, f32_bytes({1})), {"nested at most"}},
      {"bool byte 2", file_of(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", {1, 2}),
       {"BOOL values", "byte 2 at element 1"}},
  };
}

TEST(SafetensorsMalformed, EveryProblemIsAClearError) {
  TempDir dir;
  for (const Bad& b : malformed()) {
    SCOPED_TRACE(b.what);
    auto parts = b.message;
    // (a named string: GCC 12 -O2 warns falsely on a vector<string>::push_back of a literal here)
    const std::string in_memory = "parse_safetensors(\"case\")";
    parts.push_back(in_memory);
    EXPECT_TRUE(throws_error([&] { io::parse_safetensors(b.bytes, "case"); }, parts));
    // The file reader finds the same problems and names the file.
    const std::string path = dir / "bad.safetensors";
    write_bytes(path, b.bytes);
    auto file_parts = b.message;
    file_parts.push_back("load_safetensors(\"" + path + "\")");
    if (b.bytes.size() >= 8) {
      EXPECT_TRUE(throws_error([&] { io::load_safetensors(path); }, file_parts));
    }
  }
}

TEST(SafetensorsMalformed, EveryTruncationOfAValidFileIsAnError) {
  TensorDict d;
  d.insert("w", arange(6, kFloat32).reshape({2, 3}));
  d.insert("n", tensor({int64_t{1}, int64_t{2}}));
  const auto good = io::serialize_safetensors(d, {{"k", "v"}});
  ASSERT_NO_THROW(io::parse_safetensors(good));
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_TRUE(throws_error([&] { io::parse_safetensors(cut); }, {"parse_safetensors"})) << n << " bytes";
  }
}

TEST(SafetensorsMalformed, MissingFilesAndDirectories) {
  TempDir dir;
  EXPECT_TRUE(throws_error([&] { io::load_safetensors(dir / "nope.safetensors"); },
                           {"load_safetensors(\"" + dir / "nope.safetensors" + "\")", "No such file", "check the path"}));
  EXPECT_TRUE(throws_error([&] { io::load_safetensors(dir.path()); }, {"a regular file", "a directory"}));
}

TEST(SafetensorsMalformed, AcceptsWhatTheReferenceAccepts) {
  // Tensors listed in any order, unknown fields ignored, zero-size tensors anywhere, any
  // whitespace padding, no padding at all.
  const auto f8 = f32_bytes({1, 2});
  auto c = io::parse_safetensors(file_of(
      R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8],"extra":1},"z":{"dtype":"BOOL","shape":[0],"data_offsets":[4,4]},)"
      R"("a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}} )" "\n\t",
      f8));
  EXPECT_EQ(c.tensors.keys(), (std::vector<std::string>{"a", "b", "z"}));
  EXPECT_EQ(c.tensors["a"].item<float>(), 1.0f);
  EXPECT_EQ(c.tensors["b"].item<float>(), 2.0f);
  EXPECT_EQ(c.tensors["z"].numel(), 0);
}

}  // namespace
}  // namespace graft::test
