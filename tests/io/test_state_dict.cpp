// graft::load_state_dict / save_state_dict (graft/io/state_dict.h, Note [State dict files]):
// PyTorch's strict and non-strict rules on files written by hand (graft::pickle_save of a dict
// built here, io::save_safetensors), nothing changed on a failure (bit for bit), dtype conversion,
// the key of a checkpoint dict, files that are no state dict, and the state dict Python's
// torch.save wrote (tests/fixtures/pickle/state_dict.pt and its manifest, legacy.pt). Python's
// model.load_state_dict(torch.load(path)) of what save_state_dict writes is the CTest case
// graft_state_dict_python_reads (tests/fixtures/pickle/check_state_dict.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"
#include "graft/io/pickle.h"
#include "graft/io/safetensors.h"
#include "graft/io/state_dict.h"
#include "manifest.h"
#include "temp_dir.h"

namespace graft::test {
namespace {

// gen_pickle_fixtures.py's SmallNet, module for module and in its registration order, so that the
// state dict keys and their order are PyTorch's.
struct SdSmallNetImpl : nn::Module {
  SdSmallNetImpl() : nn::Module("SmallNet") {
    conv = register_module("conv", nn::Conv2d(3, 4, 3));
    bn = register_module("bn", nn::BatchNorm2d(4));
    fc = register_module("fc", nn::Linear(8, 5));
    lstm = register_module("lstm", nn::LSTM(5, 6));
    emb = register_module("emb", nn::Embedding(10, 3));
  }
  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::Linear fc{nullptr};
  nn::LSTM lstm{nullptr};
  nn::Embedding emb{nullptr};
};
GRAFT_MODULE(SdSmallNet);

// A small model for the rule tests: "fc.weight" [2, 4], "fc.bias" [2], "bn.weight", "bn.bias",
// "bn.running_mean", "bn.running_var" [2] and "bn.num_batches_tracked" (0-d int64).
struct SdNetImpl : nn::Module {
  SdNetImpl() : nn::Module("Net") {
    fc = register_module("fc", nn::Linear(4, 2));
    bn = register_module("bn", nn::BatchNorm1d(2));
  }
  nn::Linear fc{nullptr};
  nn::BatchNorm1d bn{nullptr};
};
GRAFT_MODULE(SdNet);

// The values both sides of check_state_dict.py's contract compute: element i of the tensor named
// `key` is ((7 i + 5 s) mod 23 - 11) / 8 with s = (sum of the key's bytes) mod 19, exact in every
// floating-point dtype; an integer tensor holds 1000 + s in every element.
int64_t sd_key_sum(const std::string& key) {
  int64_t s = 0;
  for (unsigned char c : key) s += c;
  return s % 19;
}
double sd_formula(const std::string& key, int64_t i) {
  return static_cast<double>((7 * i + 5 * sd_key_sum(key)) % 23 - 11) / 8.0;
}
// The formula's values for a tensor of `shape` and `dtype`, as a fresh contiguous tensor.
Tensor sd_formula_tensor(const std::string& key, IntArrayRef shape, DType dtype) {
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  std::vector<double> v(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i)
    v[static_cast<size_t>(i)] = is_floating_point(dtype) ? sd_formula(key, i) : static_cast<double>(1000 + sd_key_sum(key));
  return make(v, shape, dtype);
}
// Sets every parameter and buffer of `m` to the formula.
void sd_fill(nn::Module& m) {
  NoGradGuard no_grad;
  for (const auto& item : m.state_dict())
    item.value().copy_(sd_formula_tensor(item.key(), item.value().sizes(), item.value().dtype()));
}
// A dict of str -> tensor as Python's torch.save(model.state_dict()) holds it.
impl::GenericDict sd_dict() { return impl::GenericDict(AnyType::get(), AnyType::get()); }
// The formula's state dict for SdNet, as a pickle dict (optionally leaving out or adding keys).
impl::GenericDict sd_net_dict(DType float_dtype = kFloat32) {
  impl::GenericDict d = sd_dict();
  SdNet shapes;
  for (const auto& item : shapes->state_dict()) {
    const DType dt = item.value().is_floating_point() ? float_dtype : item.value().dtype();
    d.insert(item.key(), sd_formula_tensor(item.key(), item.value().sizes(), dt));
  }
  return d;
}

// Checks that every tensor of `m` holds the formula's values, exactly.
void sd_expect_formula(const nn::Module& m) {
  for (const auto& item : m.state_dict()) {
    const Tensor want = sd_formula_tensor(item.key(), item.value().sizes(), item.value().dtype());
    EXPECT_TRUE(same_values(values(item.value()), values(want))) << item.key();
  }
}

// The bytes of every tensor of `m` (state_dict order), for "nothing changed" checks bit for bit.
std::vector<std::string> sd_snapshot(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& item : m.state_dict()) {
    const Tensor c = item.value().contiguous();
    const auto* p = static_cast<const char*>(c.data_ptr());
    out.emplace_back(p, p + c.nbytes());
  }
  return out;
}

// ---- the rules (PyTorch's load_state_dict) ---------------------------------------------------

TEST(StateDict, LoadsATorchSaveDictStrictly) {
  TempDir dir;
  const std::string path = dir / "net.pt";
  pickle_save(IValue(sd_net_dict()), path);
  SdNet net;
  const std::vector<Tensor> before = net->parameters();
  const LoadStateDictResult r = load_state_dict(net, path);  // a ModuleHolder, strict by default
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  sd_expect_formula(*net);
  // The same tensors (an optimiser built over them stays valid), still requiring grad.
  const std::vector<Tensor> after = net->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_TRUE(after[i].is_same(before[i])) << i;
    EXPECT_TRUE(after[i].requires_grad()) << i;
  }
  EXPECT_EQ(net->bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(net->bn->num_batches_tracked.item<int64_t>(), 1000 + sd_key_sum("bn.num_batches_tracked"));
}

TEST(StateDict, AnOptimizerBuiltBeforeTheLoadStepsTheLoadedWeights) {
  TempDir dir;
  const std::string path = dir / "net.pt";
  pickle_save(IValue(sd_net_dict()), path);
  SdNet net;
  optim::SGD opt(net->fc->parameters(), optim::SGDOptions(0.5));
  load_state_dict(*net, path);
  // d/dw sum(w) = 1: one step of lr 0.5 takes 0.5 off every loaded weight.
  net->fc->weight.sum().backward();
  opt.step();
  std::vector<double> want;
  for (int64_t i = 0; i < 8; ++i) want.push_back(sd_formula("fc.weight", i) - 0.5);
  EXPECT_TRUE(same_values(values(net->fc->weight), want));
}

TEST(StateDict, StrictListsEveryMissingAndUnexpectedKeyAndChangesNothing) {
  TempDir dir;
  impl::GenericDict d = sd_net_dict();
  d.erase("fc.bias");
  d.erase("bn.running_var");
  d.insert("fc.extra", zeros({3}));
  d.insert("head.weight", zeros({1}));
  const std::string path = dir / "partial.pt";
  pickle_save(IValue(d), path);
  SdNet net;
  const auto before = sd_snapshot(*net);
  const std::string e = error_message([&] { load_state_dict(net, path); });
  EXPECT_NE(e.find("graft::load_state_dict(Net, \"" + path + "\")"), std::string::npos) << e;
  EXPECT_NE(e.find("missing key(s) in state_dict: \"fc.bias\", \"bn.running_var\""), std::string::npos) << e;
  EXPECT_NE(e.find("unexpected key(s) in state_dict: \"fc.extra\", \"head.weight\""), std::string::npos) << e;
  EXPECT_NE(e.find("nothing was loaded"), std::string::npos) << e;
  EXPECT_NE(e.find("strict = false"), std::string::npos) << e;
  EXPECT_EQ(sd_snapshot(*net), before);
}

TEST(StateDict, NonStrictReportsTheKeysAndLoadsTheRest) {
  TempDir dir;
  impl::GenericDict d = sd_net_dict();
  d.erase("fc.bias");
  d.insert("fc.extra", zeros({3}));
  const std::string path = dir / "partial.pt";
  pickle_save(IValue(d), path);
  SdNet net;
  const Tensor bias_before = net->fc->bias.clone();
  const LoadStateDictResult r = load_state_dict(net, path, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, std::vector<std::string>{"fc.bias"});
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"fc.extra"});
  EXPECT_TRUE(same_values(values(net->fc->bias), values(bias_before)));  // not in the file: kept
  EXPECT_TRUE(same_values(values(net->fc->weight), values(sd_formula_tensor("fc.weight", {2, 4}, kFloat32))));
  EXPECT_TRUE(same_values(values(net->bn->running_mean),
                          values(sd_formula_tensor("bn.running_mean", {2}, kFloat32))));
  // The options form says the same.
  SdNet other;
  LoadStateDictOptions o;
  o.strict = false;
  const LoadStateDictResult r2 = load_state_dict(other.ptr(), path, o);  // a shared_ptr<Module>
  EXPECT_EQ(r2.missing_keys, r.missing_keys);
  EXPECT_EQ(r2.unexpected_keys, r.unexpected_keys);
}

TEST(StateDict, AShapeMismatchIsAnErrorInBothModes) {
  TempDir dir;
  impl::GenericDict d = sd_net_dict();
  d.insert_or_assign("fc.weight", zeros({3, 4}));
  d.insert_or_assign("bn.bias", zeros({5}));
  d.erase("fc.bias");  // missing too: listed in strict mode, not in non-strict mode
  const std::string path = dir / "shapes.pt";
  pickle_save(IValue(d), path);
  for (bool strict : {true, false}) {
    SdNet net;
    const auto before = sd_snapshot(*net);
    const std::string e = error_message([&] { load_state_dict(net, path, strict); });
    EXPECT_NE(e.find("size mismatch for \"fc.weight\": copying a param with shape [3, 4] from checkpoint, the shape "
                     "in current model is [2, 4]"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("size mismatch for \"bn.bias\": copying a param with shape [5] from checkpoint, the shape in "
                     "current model is [2]"),
              std::string::npos)
        << e;
    EXPECT_EQ(e.find("missing key") != std::string::npos, strict) << e;
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_EQ(sd_snapshot(*net), before) << "strict " << strict;
  }
}

TEST(StateDict, ADtypeMismatchIsAnErrorUnlessConverting) {
  TempDir dir;
  const std::string path = dir / "f64.pt";
  pickle_save(IValue(sd_net_dict(kFloat64)), path);  // float64 weights, the int64 counter
  SdNet net;
  const auto before = sd_snapshot(*net);
  const std::string e = error_message([&] { load_state_dict(net, path); });
  EXPECT_NE(e.find("dtype mismatch for \"fc.weight\": the checkpoint has float64, the current model has float32"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("dtype mismatch for \"bn.running_var\""), std::string::npos) << e;
  EXPECT_EQ(e.find("\"bn.num_batches_tracked\""), std::string::npos) << e;
  EXPECT_NE(e.find("convert_dtypes = true"), std::string::npos) << e;
  EXPECT_EQ(sd_snapshot(*net), before);

  LoadStateDictOptions convert;
  convert.convert_dtypes = true;
  load_state_dict(net, path, convert);
  sd_expect_formula(*net);  // the formula's values are exact in float32 too
  EXPECT_EQ(net->fc->weight.dtype(), kFloat32);

  // An int32 counter converts to the int64 buffer; a float counter does not.
  impl::GenericDict d = sd_net_dict();
  d.insert_or_assign("bn.num_batches_tracked", tensor(int32_t{42}, kInt32));
  const std::string p32 = dir / "i32.pt";
  pickle_save(IValue(d), p32);
  SdNet n2;
  load_state_dict(n2, p32, convert);
  EXPECT_EQ(n2->bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(n2->bn->num_batches_tracked.item<int64_t>(), 42);
  d.insert_or_assign("bn.num_batches_tracked", tensor(3.0, kFloat32));
  const std::string pf = dir / "float_counter.pt";
  pickle_save(IValue(d), pf);
  SdNet n3;
  const auto before3 = sd_snapshot(*n3);
  EXPECT_TRUE(throws_error([&] { load_state_dict(n3, pf, convert); },
                           {"dtype mismatch for \"bn.num_batches_tracked\": the checkpoint has float32, the current "
                            "model has int64", "within floating point and within integers only"}));
  EXPECT_EQ(sd_snapshot(*n3), before3);
}

TEST(StateDict, ReadsTheStateDictUnderAKey) {
  TempDir dir;
  impl::GenericDict root = sd_dict();
  root.insert("epoch", 3);
  root.insert("model_state_dict", sd_net_dict());
  impl::GenericDict optim_state = sd_dict();
  optim_state.insert("lr", 0.1);
  root.insert("optimizer_state_dict", optim_state);
  const std::string path = dir / "checkpoint.pt";
  pickle_save(IValue(root), path);
  SdNet net;
  const auto before = sd_snapshot(*net);
  // Without the key: the root is no state dict, and the hint names the entry that is one.
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, path); },
                           {"a dict of str -> tensor", "the entry \"epoch\" holding an int",
                            "LoadStateDictOptions::key = \"model_state_dict\""}));
  LoadStateDictOptions wrong;
  wrong.key = "state_dict";
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, path, wrong); },
                           {"no such entry", "\"epoch\", \"model_state_dict\", \"optimizer_state_dict\"",
                            "key = \"model_state_dict\""}));
  wrong.key = "epoch";
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, path, wrong); }, {"an int at the root's entry \"epoch\""}));
  EXPECT_EQ(sd_snapshot(*net), before);
  load_state_dict(net, path, {.key = "model_state_dict"});
  sd_expect_formula(*net);
}

TEST(StateDict, RefusesARootThatIsNoDict) {
  TempDir dir;
  impl::GenericList list(AnyType::get());
  list.push_back(ones({2}));
  const std::string path = dir / "list.pt";
  pickle_save(IValue(list), path);
  SdNet net;
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, path); }, {"a dict of str -> tensor", "a list at the root", path}));
  impl::GenericDict int_keys = sd_dict();
  int_keys.insert(0, ones({2}));
  pickle_save(IValue(int_keys), path);
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, path); }, {"a key that is an int"}));
}

TEST(StateDict, ReadsSafetensors) {
  TempDir dir;
  io::TensorDict t;
  SdNet shapes;
  for (const auto& item : shapes->state_dict())
    t.insert(item.key(), sd_formula_tensor(item.key(), item.value().sizes(), item.value().dtype()));
  const std::string path = dir / "net.safetensors";
  io::save_safetensors(path, t);
  SdNet net;
  load_state_dict(net, path);
  sd_expect_formula(*net);

  // graft train --save's layout: the model under "model.", with other parts beside it.
  io::save_checkpoint(dir / "run.safetensors", {{"model.", t}, {"optim.", {{"x", zeros({1})}}}});
  SdNet from_run;
  EXPECT_TRUE(throws_error([&] { load_state_dict(from_run, dir / "run.safetensors"); },
                           {"unexpected key(s) in state_dict: \"model.bn.bias\"", "\"model.fc.weight\", \"optim.x\"",
                            "missing key(s) in state_dict: \"fc.weight\""}));
  load_state_dict(from_run, dir / "run.safetensors", {.key = "model"});
  sd_expect_formula(*from_run);
  EXPECT_TRUE(throws_error([&] { load_state_dict(from_run, dir / "run.safetensors", {.key = "net"}); },
                           {"tensors named \"net.<name>\"", "\"model\", \"optim\""}));

  // float16 weights convert exactly (the formula's values are exact in float16).
  io::TensorDict half;
  for (const auto& item : t) half.insert(item.key(), item.value().is_floating_point() ? item.value().to(kFloat16) : item.value());
  io::save_safetensors(dir / "half.safetensors", half);
  SdNet h;
  EXPECT_TRUE(throws_error([&] { load_state_dict(h, dir / "half.safetensors"); },
                           {"the checkpoint has float16, the current model has float32"}));
  load_state_dict(h, dir / "half.safetensors", {.convert_dtypes = true});
  sd_expect_formula(*h);
}

TEST(StateDict, ReadsWhatGraftSaveWrote) {
  TempDir dir;
  SdNet a;
  sd_fill(*a);
  save(a, dir / "net.pt");  // graft's own archive: safetensors with the state dict's names
  SdNet b;
  load_state_dict(b, dir / "net.pt");
  sd_expect_formula(*b);
}

TEST(StateDict, RefusesFilesThatAreNoStateDict) {
  TempDir dir;
  SdNet net;
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, dir / "absent.pt"); }, {dir / "absent.pt", "No such file"}));
  write_bytes(dir / "empty.pt", {});
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, dir / "empty.pt"); },
                           {"graft::load_state_dict(Net, \"" + dir / "empty.pt" + "\")", "an empty file"}));
  write_bytes(dir / "text.pt", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, dir / "text.pt"); },
                           {"68 65 6c 6c 6f 20 77 6f", "neither torch.save's format nor a safetensors header"}));
  // A pickle that is not torch.save's legacy format (its magic number cut short): pickle_load's error.
  write_bytes(dir / "pickle.pt", {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8});
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, dir / "pickle.pt"); },
                           {dir / "pickle.pt", "a zip archive or PyTorch's legacy format"}));
  // A TorchScript archive (LibTorch's torch::save of a module): graft::load reads those.
  const std::string libtorch =
      (std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "libtorch" / "module.pt").string();
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, libtorch); },
                           {libtorch, "a TorchScript archive", "graft::load(module, path) reads"}));
  // A directory.
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, dir.path()); }, {"a directory"}));
  // A safetensors header that is damaged past its first bytes: load_safetensors' error, naming the file.
  std::vector<uint8_t> bad = {16, 0, 0, 0, 0, 0, 0, 0, '{', '"', 'x', '"', ':', '1', '}', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
  write_bytes(dir / "bad.safetensors", bad);
  EXPECT_TRUE(throws_error([&] { load_state_dict(net, dir / "bad.safetensors"); }, {dir / "bad.safetensors"}));
}

// ---- save_state_dict ---------------------------------------------------------------------------

TEST(StateDict, SaveWritesTheStateDictInOrderDetached) {
  TempDir dir;
  SdNet a;
  sd_fill(*a);
  const std::string path = dir / "saved.pt";
  save_state_dict(a, path);
  const IValue back = pickle_load(path);
  ASSERT_TRUE(back.isGenericDict());
  std::vector<std::string> keys;
  for (const auto& e : back.toGenericDict()) {
    keys.push_back(e.key().toStringRef());
    ASSERT_TRUE(e.value().isTensor());
    EXPECT_FALSE(e.value().toTensor().requires_grad()) << keys.back();
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean",
                                            "bn.running_var", "bn.num_batches_tracked"}));
  EXPECT_EQ(back.toGenericDict().at("bn.num_batches_tracked").toTensor().dtype(), kInt64);
  EXPECT_EQ(back.toGenericDict().at("bn.num_batches_tracked").toTensor().dim(), 0);
  // And reads back into another model.
  SdNet b;
  load_state_dict(b, path);
  sd_expect_formula(*b);
  // The module itself still requires grad and is unchanged by the save.
  EXPECT_TRUE(a->fc->weight.requires_grad());
  sd_expect_formula(*a);
}

TEST(StateDict, SaveIsAtomic) {
  TempDir dir;
  const std::string path = dir / "keep.pt";
  SdNet a;
  sd_fill(*a);
  save_state_dict(a, path);
  const auto bytes = read_bytes(path);
  SdNet other;  // other weights
  io::detail::set_save_failure_after_bytes(100);
  EXPECT_THROW(save_state_dict(other, path), Error);
  io::detail::set_save_failure_after_bytes(-1);
  EXPECT_EQ(read_bytes(path), bytes);
  EXPECT_TRUE(throws_error([&] { save_state_dict(std::shared_ptr<nn::Module>(), path); }, {"a null module pointer"}));
}

// Run by the CTest case graft_state_dict_python_reads with GRAFT_STATE_DICT_INTEROP_DIR set: the
// SmallNet state dict by the formula above, for tests/fixtures/pickle/check_state_dict.py.
TEST(StateDictInterop, WritesAStateDictPythonLoads) {
  TempDir tmp;
  const char* keep = std::getenv("GRAFT_STATE_DICT_INTEROP_DIR");
  const std::string path = (keep ? std::string(keep) : tmp.path()) + "/small_net.pt";
  SdSmallNet net;
  sd_fill(*net);
  save_state_dict(net, path);
  SdSmallNet back;
  load_state_dict(back, path);
  sd_expect_formula(*back);
}

// ---- the state dicts Python's torch.save wrote -------------------------------------------------

std::string sd_fixture(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "pickle" / name).string();
}

// state_dict.pt into the same model: its state dict, written in the manifest's format, is the
// manifest Python wrote (keys in order, dtypes, shapes, strides, every value's bits; one storage
// per tensor, none requiring grad).
TEST(StateDictFixture, LoadsPythonsSmallNetStateDictIntoTheSameModel) {
  SdSmallNet net;
  const LoadStateDictResult r = load_state_dict(net, sd_fixture("state_dict.pt"));
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  impl::GenericDict got(AnyType::get(), AnyType::get());
  for (const auto& item : net->state_dict()) got.insert(item.key(), item.value());
  ManifestWriter writer(/*sums=*/false);
  writer.walk(IValue(got), "root");
  EXPECT_EQ(writer.lines, expected_lines(sd_fixture("state_dict.expected")));
  EXPECT_EQ(net->bn->num_batches_tracked.item<int64_t>(), 1);  // after one forward in train mode
}

// legacy.pt (PyTorch's pre-1.6 format): {"w": float32 (3, 2), "b": int64 (3), "w_row": w[1]}.
struct SdLegacyImpl : nn::Module {
  SdLegacyImpl() : nn::Module("Legacy") { w = register_parameter("w", zeros({3, 2})); }
  Tensor w;
};
GRAFT_MODULE(SdLegacy);

TEST(StateDictFixture, ReadsTheLegacyFormat) {
  SdLegacy m;
  EXPECT_TRUE(throws_error([&] { load_state_dict(m, sd_fixture("legacy.pt")); },
                           {"unexpected key(s) in state_dict: \"b\", \"w_row\""}));
  const LoadStateDictResult r = load_state_dict(m, sd_fixture("legacy.pt"), /*strict=*/false);
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"b", "w_row"}));
  // legacy.expected's bits for w.
  const uint32_t bits[] = {0x3ec8db21, 0xbe64edf7, 0xbea3958a, 0xbf9a3ea8, 0x3f85b0fb, 0xbf221b36};
  const Tensor w = m->w.contiguous();
  for (int i = 0; i < 6; ++i) {
    uint32_t got = 0;
    std::memcpy(&got, w.data_ptr<float>() + i, 4);
    EXPECT_EQ(got, bits[i]) << i;
  }
}

}  // namespace
}  // namespace graft::test
