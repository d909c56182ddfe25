// graft::pickle_load / pickle_save (graft/io/pickle.h): files Python's torch.save wrote
// (tests/fixtures/pickle/gen_pickle_fixtures.py, with manifests of what they hold), round trips,
// and hostile files. Python's torch.load reading what graft writes is the CTest case
// graft_pickle_python_reads (tests/fixtures/pickle/check_torch_load.py).
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/io/zip_archive.h"
#include "../support/test_util.h"
#include "graft/graft.h"
#include "graft/io/pickle.h"
#include "manifest.h"
#include "temp_dir.h"

namespace graft::test {
namespace {

std::string fixture(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "pickle" / name).string();
}

void expect_matches_manifest(const std::string& stem, bool sums = false) {
  SCOPED_TRACE(stem);
  const IValue v = pickle_load(fixture(stem + ".pt"));
  ManifestWriter w(sums);
  w.walk(v, "root");
  const auto want = expected_lines(fixture(stem + ".expected"));
  ASSERT_EQ(w.lines.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(w.lines[i], want[i]) << "line " << i;
}

TEST(PickleLoad, ReadsTorchSavedStateDict) { expect_matches_manifest("state_dict"); }
TEST(PickleLoad, ReadsEveryDtype) { expect_matches_manifest("dtypes"); }
TEST(PickleLoad, ReadsViewsSharedStoragesAndEdgeTensors) { expect_matches_manifest("edge"); }
TEST(PickleLoad, ReadsNestedContainersAndScalars) { expect_matches_manifest("nested"); }
TEST(PickleLoad, ReadsALargerTensor) { expect_matches_manifest("large", true); }

TEST(PickleLoad, ReadsWhatLibTorchPickleSaveWrote) {
  // tests/fixtures/libtorch/make_libtorch_archives.cpp wrote it with torch::pickle_save.
  const std::string dir = (std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "libtorch").string();
  ManifestWriter w(false);
  w.walk(pickle_load(dir + "/pickle_save.pt"), "root");
  EXPECT_EQ(w.lines, expected_lines(dir + "/pickle_save.expected"));
}

TEST(PickleLoad, ViewsOfOneStorageShareItInGraft) {
  const IValue v = pickle_load(fixture("edge.pt"));
  const auto views = v.toGenericDict().at("views").toListRef();
  ASSERT_EQ(views.size(), 3u);
  // Writing through one view is seen by the others, as after torch.load.
  const Tensor base = views[0].toTensor();
  base.fill_(5.0);
  EXPECT_EQ(views[1].toTensor().sum().item<double>(), 40.0);
  EXPECT_EQ(views[2].toTensor().sum().item<double>(), 30.0);
}

TEST(PickleLoad, FromBytesEqualsFromPath) {
  std::ifstream in(fixture("nested.pt"), std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ManifestWriter a(false);
  ManifestWriter b(false);
  a.walk(pickle_load(bytes), "root");
  b.walk(pickle_load(fixture("nested.pt")), "root");
  EXPECT_EQ(a.lines, b.lines);
}

TEST(PickleLoad, ReadsTheLegacyFormat) { expect_matches_manifest("legacy"); }

TEST(PickleLoad, ADamagedLegacyFileIsAnErrorAtEveryLength) {
  std::ifstream in(fixture("legacy.pt"), std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t cut = 15; cut < bytes.size(); ++cut) {
    SCOPED_TRACE(cut);
    EXPECT_THROW(pickle_load(std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut))), Error);
  }
  // A storage's numel claimed far beyond the file: refused before anything is allocated.
  std::vector<char> big = bytes;
  const std::string pid_numel = "K\x06N";  // BININT1 6 then NONE (the view metadata): w_row's storage
  auto at = std::search(big.begin(), big.end(), pid_numel.begin(), pid_numel.end());
  ASSERT_NE(at, big.end());
  const std::string huge = "J\xff\xff\xff\x7f";  // BININT 2^31 - 1, one byte longer: rebuild the file
  std::vector<char> edited(big.begin(), at);
  edited.insert(edited.end(), huge.begin(), huge.end());
  edited.insert(edited.end(), at + 2, big.end());
  const std::string msg = error_message([&] { pickle_load(edited); });
  EXPECT_NE(msg.find("fit in the file"), std::string::npos) << msg;
}

// ---- round trips -----------------------------------------------------------------------------

TEST(PickleSave, RoundTripsWhatPythonWrote) {
  for (const char* stem : {"state_dict", "dtypes", "edge", "nested", "legacy"}) {
    SCOPED_TRACE(stem);
    const IValue v = pickle_load(fixture(std::string(stem) + ".pt"));
    ManifestWriter a(false);
    ManifestWriter b(false);
    a.walk(v, "root");
    b.walk(pickle_load(pickle_save(v)), "root");
    EXPECT_EQ(a.lines, b.lines);
  }
}

TEST(PickleSave, KeepsSharingAndWritesEachStorageOnce) {
  const Tensor x = arange(12, kFloat32).reshape({3, 4});
  impl::GenericList l(AnyType::get());
  l.push_back(x);
  l.push_back(x.t());
  l.push_back(x.select(0, 1));
  const std::vector<char> bytes = pickle_save(IValue(l));
  io::detail::ZipReader zip(bytes.data(), bytes.size(), "<memory>", "test");
  size_t storages = 0;
  for (const auto& n : zip.names()) storages += n.rfind("archive/data/", 0) == 0;
  EXPECT_EQ(storages, 1u);
  const auto back = pickle_load(bytes).toListRef();
  EXPECT_EQ(back[0].toTensor().data_ptr(), back[1].toTensor().data_ptr());
  EXPECT_EQ(back[2].toTensor().storage_offset(), 4);
  EXPECT_EQ(back[1].toTensor().stride(0), 1);
  EXPECT_EQ(back[1].toTensor().stride(1), 4);
}

TEST(PickleSave, AContainerHeldTwiceIsOneContainerAfterLoading) {
  impl::GenericList inner(AnyType::get());
  inner.push_back(1);
  impl::GenericList outer(AnyType::get());
  outer.push_back(inner);
  outer.push_back(inner);
  const auto back = pickle_load(pickle_save(IValue(outer))).toListRef();
  EXPECT_TRUE(back[0].toList().is(back[1].toList()));
}

TEST(PickleSave, ACycleIsAnErrorNotAnEndlessLoop) {
  impl::GenericList l(AnyType::get());
  l.push_back(l);  // holds itself
  EXPECT_NE(error_message([&] { pickle_save(IValue(l)); }).find("cycle"), std::string::npos);
  l.clear();  // break the cycle so the list is freed
}

TEST(PickleSave, ToAPathIsAtomic) {
  TempDir dir;
  const std::string path = dir / "out.pt";
  pickle_save(IValue(int64_t{7}), path);
  EXPECT_EQ(pickle_load(path).toInt(), 7);
  Tensor meta = empty({2}, TensorOptions(kFloat32).device(kMeta));
  EXPECT_THROW(pickle_save(IValue(meta), path), Error);
  EXPECT_EQ(pickle_load(path).toInt(), 7);  // the failed save left the file as it was
}

// Written into GRAFT_PICKLE_INTEROP_DIR for tests/fixtures/pickle/check_torch_load.py (its
// docstring is the contract): the CTest case graft_pickle_python_reads runs both.
TEST(PickleInterop, WritesFilesTorchLoadReads) {
  const char* dir_env = std::getenv("GRAFT_PICKLE_INTEROP_DIR");
  TempDir tmp;
  const std::string dir = dir_env ? dir_env : tmp.path();
  auto dict = [] { return impl::GenericDict(AnyType::get(), AnyType::get()); };

  impl::GenericDict t = dict();
  t.insert("f32", arange(6, kFloat32).reshape({2, 3}) / 4);
  t.insert("f64", tensor({1.5, -2.25}, kFloat64));
  t.insert("f16", tensor({0.5, -1.0, 65504.0}, kFloat16));
  t.insert("bf16", tensor({1.0, -2.5, 3e38}, kBFloat16));
  t.insert("i64", tensor({-(int64_t{1} << 62), int64_t{7}}, kInt64));
  t.insert("i32", tensor({-5, 2147483647}, kInt32));
  t.insert("i16", tensor({-300, 300}, kInt16));
  t.insert("i8", tensor({-128, 127}, kInt8));
  t.insert("u8", tensor({0, 255}, kUInt8));
  t.insert("b", tensor({true, false}, kBool));
  t.insert("scalar", tensor(3.25));
  t.insert("empty", zeros({0, 3}));
  pickle_save(IValue(t), dir + "/tensors.pt");

  const Tensor x = arange(12, kFloat32).reshape({3, 4});
  impl::GenericList shared(AnyType::get());
  shared.push_back(x);
  shared.push_back(x.t());
  shared.push_back(x.select(0, 1));
  pickle_save(IValue(shared), dir + "/shared.pt");

  impl::GenericList a(AnyType::get());
  for (IValue e : {IValue(1), IValue(-2), IValue(int64_t{1} << 40), IValue(0.5), IValue(true), IValue(), IValue("h\xc3\xa9llo")}) {
    a.push_back(e);
  }
  impl::GenericDict c = dict();
  c.insert("k", ones({2}));
  impl::GenericDict nested = dict();
  nested.insert("a", a);
  nested.insert("b", ivalue::Tuple::create(1, "x"));
  nested.insert("c", c);
  pickle_save(IValue(nested), dir + "/nested.pt");

  // SmallNet's state dict by the contract's formula (float32 arithmetic, one rounding per op).
  const std::vector<std::pair<std::string, std::vector<int64_t>>> entries = {
      {"conv.weight", {4, 3, 3, 3}}, {"conv.bias", {4}}, {"bn.weight", {4}}, {"bn.bias", {4}},
      {"bn.running_mean", {4}}, {"bn.running_var", {4}}, {"bn.num_batches_tracked", {}},
      {"fc.weight", {5, 8}}, {"fc.bias", {5}}, {"lstm.weight_ih_l0", {24, 5}}, {"lstm.weight_hh_l0", {24, 6}},
      {"lstm.bias_ih_l0", {24}}, {"lstm.bias_hh_l0", {24}}, {"emb.weight", {10, 3}}};
  impl::GenericDict sd = dict();
  for (size_t k = 0; k < entries.size(); ++k) {
    const auto& [name, shape] = entries[k];
    if (name == "bn.num_batches_tracked") {
      sd.insert(name, tensor(int64_t{7}, kInt64));
      continue;
    }
    int64_t numel = 1;
    for (int64_t s : shape) numel *= s;
    sd.insert(name, arange(numel, kFloat32).reshape(shape) * 0.01 + static_cast<double>(k));
  }
  pickle_save(IValue(sd), dir + "/state_dict.pt");
  SUCCEED() << "wrote into " << dir;
}

// ---- hostile files ---------------------------------------------------------------------------

// A checkpoint holding `pkl` as archive/data.pkl and, if given, storage archive/data/0.
std::vector<char> checkpoint(const std::string& pkl, const std::string& storage0 = std::string(16, '\0')) {
  io::detail::ZipWriter zip("test");
  zip.add("archive/data.pkl", pkl);
  zip.add("archive/data/0", storage0);
  const std::string bytes = zip.finish();
  return std::vector<char>(bytes.begin(), bytes.end());
}

// Pickle pieces, protocol 2.
const std::string kProto = "\x80\x02";
std::string binint1(int v) { return std::string("K") + static_cast<char>(v); }
std::string unicode(const std::string& s) {
  std::string out = "X";
  for (int i = 0; i < 4; ++i) out += static_cast<char>((s.size() >> (8 * i)) & 0xff);
  return out + s;
}
// _rebuild_tensor_v2(('storage', torch.FloatStorage, '0', 'cpu', numel), offset, size, stride, False, OrderedDict())
std::string tensor_pickle(int numel, int offset, const std::vector<int>& size, const std::vector<int>& stride) {
  std::string p = "ctorch._utils\n_rebuild_tensor_v2\n(";
  p += "(" + unicode("storage") + "ctorch\nFloatStorage\n" + unicode("0") + unicode("cpu") + binint1(numel) + "tQ";
  p += binint1(offset) + "(";
  for (int s : size) p += binint1(s);
  p += "t(";
  for (int s : stride) p += binint1(s);
  p += "t\x89" "ccollections\nOrderedDict\n)R" "tR";
  return p;
}

std::string load_error(const std::vector<char>& bytes) {
  return error_message([&] { pickle_load(bytes); });
}

TEST(PickleHostile, AHandWrittenTensorPickleLoads) {
  // The pieces below are right: the hostile variants change one thing each.
  std::string storage(16, '\0');
  const float vals[4] = {1, 2, 3, 4};
  std::memcpy(storage.data(), vals, 16);
  const IValue v = pickle_load(checkpoint(kProto + tensor_pickle(4, 1, {3}, {1}) + ".", storage));
  ASSERT_TRUE(v.isTensor());
  EXPECT_EQ(v.toTensor()[2].item<float>(), 4.0f);
}

TEST(PickleHostile, ATensorPastItsStorageIsRefusedBeforeReading) {
  EXPECT_NE(load_error(checkpoint(kProto + tensor_pickle(4, 2, {3}, {1}) + ".")).find("inside its storage"), std::string::npos);
  EXPECT_NE(load_error(checkpoint(kProto + tensor_pickle(4, 0, {2, 2}, {3, 1}) + ".")).find("storage"), std::string::npos);
  EXPECT_NE(load_error(checkpoint(kProto + tensor_pickle(4, 5, {1}, {1}) + ".")).find("offset"), std::string::npos);
}

TEST(PickleHostile, AStorageShorterThanItsNumelIsRefused) {
  const std::string msg = load_error(checkpoint(kProto + tensor_pickle(200, 0, {3}, {1}) + "."));
  EXPECT_NE(msg.find("numel 200"), std::string::npos) << msg;
}

TEST(PickleHostile, ShapesThatOverflowAreRefused) {
  // size 2^62 x 4 with stride 0: no element past the storage, but 2^64 elements.
  std::string p = "ctorch._utils\n_rebuild_tensor_v2\n((" + unicode("storage") + "ctorch\nFloatStorage\n" + unicode("0") +
                  unicode("cpu") + binint1(4) + "tQ" + binint1(0) + "(\x8a\x08" + std::string("\x00\x00\x00\x00\x00\x00\x00\x40", 8) +
                  binint1(4) + "t(" + binint1(0) + binint1(0) + "t\x89" "ccollections\nOrderedDict\n)RtR.";
  const std::string msg = load_error(checkpoint(kProto + p));
  EXPECT_NE(msg.find("2^63"), std::string::npos) << msg;
}

TEST(PickleHostile, UnknownGlobalsAreRefusedByName) {
  const std::string msg = load_error(checkpoint(kProto + "cos\nsystem\n(" + unicode("true") + "tR."));
  EXPECT_NE(msg.find("os.system"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte 2"), std::string::npos) << msg;
  const std::string module = load_error(checkpoint(kProto + "ctorch.nn.modules.linear\nLinear\n)\x81."));
  EXPECT_NE(module.find("torch.nn.modules.linear.Linear"), std::string::npos) << module;
  EXPECT_NE(module.find("state_dict"), std::string::npos) << module;
}

TEST(PickleHostile, DeepNestingIsRefused) {
  std::string deep = kProto;
  for (int i = 0; i < kMaxPickleDepth + 5; ++i) deep += "]";  // EMPTY_LIST
  for (int i = 0; i < kMaxPickleDepth + 4; ++i) deep += "a";  // APPEND each into the one below
  deep += ".";
  EXPECT_NE(load_error(checkpoint(deep)).find("nested"), std::string::npos);
  std::string tuples = kProto + "N";
  for (int i = 0; i < kMaxPickleDepth + 5; ++i) tuples += "\x85";  // TUPLE1
  EXPECT_NE(load_error(checkpoint(tuples + ".")).find("nested"), std::string::npos);
}

TEST(PickleHostile, AMemoBombIsRefused) {
  // A 1000-byte string fetched from the memo 100,000 times: 100 MB from a 200 KB file.
  std::string bomb = kProto + "](" + unicode(std::string(1000, 'x')) + "q\x01";
  bomb += std::string("h\x01", 2) ;
  std::string gets;
  for (int i = 0; i < 100000; ++i) gets += std::string("h\x01", 2);
  bomb += gets + "e.";
  const std::string msg = load_error(checkpoint(bomb));
  EXPECT_NE(msg.find("Pickle bombs"), std::string::npos) << msg;
  // The same fetches of a short string are fine: the limit is in proportion to the file.
  std::string fine = kProto + "](" + unicode("x") + "q\x01";
  for (int i = 0; i < 1000; ++i) fine += std::string("h\x01", 2);
  fine += "e.";
  EXPECT_EQ(pickle_load(checkpoint(fine)).toListRef().size(), 1001u);
}

TEST(PickleHostile, DuplicateKeysKeepTheLastValueAsPythonDoes) {
  const IValue v = pickle_load(checkpoint(kProto + "}(" + unicode("k") + binint1(1) + unicode("k") + binint1(2) + "u."));
  ASSERT_EQ(v.toGenericDict().size(), 1u);
  EXPECT_EQ(v.toGenericDict().at("k").toInt(), 2);
}

TEST(PickleHostile, CyclesAreRefused) {
  // l = []; l.append(l)
  using namespace std::string_literals;
  EXPECT_NE(load_error(checkpoint(kProto + "]q\x00h\x00" "a."s)).find("cycle"), std::string::npos);
  // a = []; b = [a]; a.append(b)
  EXPECT_NE(load_error(checkpoint(kProto + "]q\x00]q\x01h\x00" "ah\x00h\x01" "a0."s)).find("cycle"), std::string::npos);
}

TEST(PickleHostile, TruncatedAndDamagedPicklesAreErrors) {
  const std::string good = kProto + "}(" + unicode("k") + binint1(1) + "u.";
  for (size_t cut = 0; cut < good.size(); ++cut) {
    SCOPED_TRACE(cut);
    EXPECT_THROW(pickle_load(checkpoint(good.substr(0, cut))), Error);
  }
  EXPECT_NE(load_error(checkpoint(kProto + "X\xff\xff\xff\x7f" "abc.")).find("truncated"), std::string::npos);
  EXPECT_NE(load_error(checkpoint(kProto + "h\x07.")).find("memo"), std::string::npos);
  EXPECT_NE(load_error(checkpoint(kProto + "\xff.")).find("opcode 0xff"), std::string::npos);
  EXPECT_NE(load_error(checkpoint(kProto + "KKa.")).find("list"), std::string::npos);
  EXPECT_NE(load_error(checkpoint(kProto + "\x8a\x09" + std::string(9, '\1') + ".")).find("64 bits"), std::string::npos);
}

TEST(PickleHostile, ArchivesWithoutAPickleOrWithAMissingStorageAreErrors) {
  io::detail::ZipWriter zip("test");
  zip.add("archive/other", "x");
  const std::string no_pkl = zip.finish();
  EXPECT_NE(load_error(std::vector<char>(no_pkl.begin(), no_pkl.end())).find("archive/data.pkl"), std::string::npos);
  io::detail::ZipWriter zip2("test");
  zip2.add("archive/data.pkl", kProto + tensor_pickle(4, 0, {4}, {1}) + ".");
  const std::string no_storage = zip2.finish();
  EXPECT_NE(load_error(std::vector<char>(no_storage.begin(), no_storage.end())).find("archive/data/0"), std::string::npos);
  EXPECT_NE(load_error(std::vector<char>{'n', 'o', 't'}).find("zip"), std::string::npos);
  EXPECT_NE(error_message([] { pickle_load(std::string("/nonexistent/x.pt")); }).find("/nonexistent/x.pt"), std::string::npos);
}

}  // namespace
}  // namespace graft::test
