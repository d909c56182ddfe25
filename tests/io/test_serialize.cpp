// graft::save / graft::load and the archives (graft/io/serialize.h): module, optimiser, tensor and
// tensor-list round trips, nested archive keys, PyTorch's strict load errors, and damaged files.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <tuple>

#include "../support/test_util.h"
#include "graft/graft.h"
#include "temp_dir.h"

namespace graft::test {
namespace {

// The error text of `f`, or "" when it throws nothing (a test then fails on the expected text).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct SmallNetImpl : nn::Module {
  SmallNetImpl() {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 2, 3).padding(1)));
    bn = register_module("bn", nn::BatchNorm2d(2));
    fc = register_module("fc", nn::Linear(2 * 4 * 4, 3));
  }
  Tensor forward(const Tensor& x) { return fc(relu(bn(conv(x))).flatten(1)); }
  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::Linear fc{nullptr};
};
GRAFT_MODULE(SmallNet);

void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  EXPECT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_TRUE(a.sizes().equals(b.sizes())) << what;
  EXPECT_TRUE(equal(a, b)) << what;
}

TEST(Serialize, ModuleRoundTripCopiesParametersAndBuffers) {
  TempDir dir;
  const std::string path = dir / "net.pt";
  manual_seed(1);
  SmallNet a;
  // Two training steps of batch norm move its running statistics away from (0, 1).
  a->train();
  for (int i = 0; i < 2; ++i) a(randn({4, 1, 4, 4}));
  a->eval();
  const Tensor x = randn({2, 1, 4, 4});
  const Tensor expected = a(x);
  graft::save(a, path);

  manual_seed(2);  // a different initialisation
  SmallNet b;
  b->eval();
  ASSERT_FALSE(equal(b->fc->weight, a->fc->weight));
  const Tensor fc_weight_handle = b->fc->weight;  // a handle held elsewhere (an optimiser's)
  graft::load(b, path);

  const auto sa = a->state_dict(), sb = b->state_dict();
  // conv.weight, conv.bias, bn.weight, bn.bias, bn.running_mean, bn.running_var,
  // bn.num_batches_tracked, fc.weight, fc.bias
  ASSERT_EQ(sb.size(), 9u);
  for (const auto& item : sa) expect_same_tensor(sb[item.key()], item.value(), item.key());
  EXPECT_EQ(sb["bn.num_batches_tracked"].item<int64_t>(), 2);
  EXPECT_TRUE(equal(fc_weight_handle, a->fc->weight)) << "loaded into the existing tensor";
  EXPECT_TRUE(b->fc->weight.requires_grad());
  expect_same_tensor(b(x), expected, "forward output");

  // The file: a safetensors file with LibTorch's key names and graft's metadata.
  auto [tensors, metadata] = io::load_safetensors(path);
  EXPECT_EQ(tensors.size(), 9u);
  EXPECT_TRUE(tensors.contains("conv.weight"));
  EXPECT_TRUE(tensors.contains("bn.running_var"));
  EXPECT_EQ(metadata.at("graft.format"), "archive/1");
  EXPECT_EQ(metadata.at("graft.kind"), "module");
}

TEST(Serialize, ModuleLoadIsStrict) {
  TempDir dir;
  const std::string path = dir / "linear.pt";
  graft::save(nn::Linear(4, 3), path);

  nn::Linear narrow(4, 2);
  const Tensor before = narrow->weight.clone();
  const std::string shape = error_of([&] { graft::load(narrow, path); });
  EXPECT_NE(shape.find("graft::load(Linear, \"" + path + "\")"), std::string::npos) << shape;
  EXPECT_NE(shape.find("shape mismatch for \"weight\": the file has [3, 4], the module has [2, 4]"), std::string::npos)
      << shape;
  EXPECT_NE(shape.find("shape mismatch for \"bias\": the file has [3], the module has [2]"), std::string::npos) << shape;
  EXPECT_TRUE(equal(narrow->weight, before)) << "nothing is loaded when a check fails";

  nn::Linear no_bias(nn::LinearOptions(4, 3).bias(false));
  const std::string extra = error_of([&] { graft::load(no_bias, path); });
  EXPECT_NE(extra.find("unexpected key(s): \"bias\""), std::string::npos) << extra;
  EXPECT_EQ(extra.find("missing key"), std::string::npos) << extra;

  const std::string path_no_bias = dir / "no_bias.pt";
  graft::save(no_bias, path_no_bias);
  nn::Linear with_bias(4, 3);
  const std::string missing = error_of([&] { graft::load(with_bias, path_no_bias); });
  EXPECT_NE(missing.find("missing key(s): \"bias\""), std::string::npos) << missing;
  EXPECT_NE(missing.find(path_no_bias), std::string::npos) << missing;

  nn::Linear wide(4, 3);
  wide->to(kFloat64);
  const std::string dtype = error_of([&] { graft::load(wide, path); });
  EXPECT_NE(dtype.find("dtype mismatch for \"weight\": the file has float32, the module has float64"),
            std::string::npos)
      << dtype;
}

TEST(Serialize, FileOfAnotherKindIsRefused) {
  TempDir dir;
  const std::string path = dir / "t.pt";
  graft::save(ones({3, 4}), path);
  nn::Linear fc(4, 3);
  const std::string e = error_of([&] { graft::load(fc, path); });
  EXPECT_NE(e.find("expected a file holding a module (\"graft.kind\"), but got a file holding a tensor"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(path), std::string::npos) << e;
}

// Adam's step depends on its moment estimates, its step count and its options; a step after a
// round trip through a file equals, bit for bit, the step the original optimiser takes.
TEST(Serialize, OptimizerRoundTripContinuesIdentically) {
  TempDir dir;
  const std::string path = dir / "adam.pt";
  manual_seed(3);
  Tensor w = randn({3, 2}).requires_grad_();
  const Tensor target = randn({3, 2});
  auto loss_of = [&](const Tensor& p) { return ((p - target) * (p - target)).sum(); };

  optim::Adam adam({w}, optim::AdamOptions(0.05).betas(std::make_tuple(0.8, 0.95)).weight_decay(0.01));
  for (int i = 0; i < 3; ++i) {
    adam.zero_grad();
    loss_of(w).backward();
    adam.step();
  }
  graft::save(adam, path);

  Tensor w2 = w.detach().clone().requires_grad_();
  optim::Adam fresh({w2}, optim::AdamOptions(1.0));  // other options: the file restores them
  graft::load(fresh, path);
  EXPECT_EQ(fresh.param_groups()[0].options().lr(), 0.05);
  const auto& opts = static_cast<const optim::AdamOptions&>(fresh.param_groups()[0].options());
  EXPECT_EQ(std::get<0>(opts.betas()), 0.8);
  EXPECT_EQ(std::get<1>(opts.betas()), 0.95);
  EXPECT_EQ(opts.weight_decay(), 0.01);

  // Without the loaded state, the same step would differ (Adam's first step moves by about lr).
  Tensor w3 = w.detach().clone().requires_grad_();
  optim::Adam cold({w3}, optim::AdamOptions(0.05).betas(std::make_tuple(0.8, 0.95)).weight_decay(0.01));

  for (auto [opt, p] : {std::pair<optim::Optimizer*, Tensor>{&adam, w}, {&fresh, w2}, {&cold, w3}}) {
    opt->zero_grad();
    loss_of(p).backward();
    opt->step();
  }
  EXPECT_TRUE(equal(w2, w)) << "the step after save/load equals the step without";
  EXPECT_FALSE(equal(w3, w)) << "the test would not notice a state that was not restored";

  auto [tensors, metadata] = io::load_safetensors(path);
  EXPECT_EQ(metadata.at("graft.kind"), "optimizer");
  EXPECT_TRUE(tensors.contains("state.0.exp_avg"));
  EXPECT_TRUE(tensors.contains("param_groups.0.lr"));
  EXPECT_EQ(tensors["state.0.step"].item<double>(), 3.0);
}

TEST(Serialize, OptimizerLoadErrorsNameTheFile) {
  TempDir dir;
  const std::string path = dir / "adam.pt";
  Tensor a = zeros({2}).requires_grad_(), b = zeros({2}).requires_grad_();
  optim::Adam two({a, b});
  graft::save(two, path);
  Tensor c = zeros({2}).requires_grad_();
  optim::Adam one({c});
  const std::string e = error_of([&] { graft::load(one, path); });
  EXPECT_EQ(e.rfind("graft::load(Adam, \"" + path + "\"): ", 0), 0u) << e;
}

TEST(Serialize, TensorRoundTripEveryDType) {
  TempDir dir;
  const std::vector<double> v = {0.0, -1.5, 2.0, 3.25, 1.0, -4.0};  // exact in every float dtype
  for (DType dtype : {kFloat32, kFloat64, kInt64, kBool, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::string path = dir / (std::string(dtype_name(dtype)) + ".pt");
    std::vector<double> vals = v;
    if (dtype == kInt64) vals = {0, -1, 2, 3, 1, -4};
    if (dtype == kBool) vals = {0, 1, 1, 1, 1, 0};
    const Tensor t = make(vals, {2, 3}, kFloat64).to(dtype);
    // A transposed (non-contiguous) view is saved by value.
    graft::save(t.t(), path);
    Tensor back;
    graft::load(back, path);
    ASSERT_TRUE(back.defined());
    EXPECT_EQ(back.dtype(), dtype);
    EXPECT_TRUE(back.sizes().equals({3, 2}));
    const std::vector<double> expected = {vals[0], vals[3], vals[1], vals[4], vals[2], vals[5]};
    EXPECT_EQ(values(back.to(kFloat64)), expected);
  }
  // A 0-dim tensor, loaded into a defined tensor of another shape: it is replaced.
  const std::string path = dir / "scalar.pt";
  graft::save(make({7.5}, {}, kFloat32), path);
  Tensor back = zeros({4});
  graft::load(back, path);
  EXPECT_EQ(back.dim(), 0);
  EXPECT_EQ(back.item<double>(), 7.5);
}

TEST(Serialize, TensorLoadIntoSameShapeCopiesInPlace) {
  TempDir dir;
  const std::string path = dir / "t.pt";
  graft::save(make({1, 2, 3}, {3}, kFloat32), path);
  Tensor t = zeros({3}).requires_grad_();
  const Tensor other_handle = t;
  graft::load(t, path);
  EXPECT_TRUE(t.is_same(other_handle));
  EXPECT_TRUE(t.requires_grad());
  EXPECT_EQ(values(other_handle), (std::vector<double>{1, 2, 3}));
}

TEST(Serialize, TensorVectorRoundTrip) {
  TempDir dir;
  const std::string path = dir / "v.pt";
  const std::vector<Tensor> tensors = {make({1, 2}, {2}, kFloat32), make({5}, {1, 1}, kInt64),
                                       make({1, 0, 1}, {3}, kFloat64).to(kBool)};
  graft::save(tensors, path);
  std::vector<Tensor> back = {ones({1})};  // loading appends, as LibTorch's does
  graft::load(back, path);
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(values(back[0]), (std::vector<double>{1}));
  for (size_t i = 0; i < 3; ++i) expect_same_tensor(back[i + 1], tensors[i], "tensor " + std::to_string(i));
  EXPECT_EQ(io::load_safetensors(path).metadata.at("graft.kind"), "tensors");

  const std::string empty_path = dir / "empty.pt";
  graft::save(std::vector<Tensor>{}, empty_path);
  std::vector<Tensor> none;
  graft::load(none, empty_path);
  EXPECT_TRUE(none.empty());
}

TEST(Serialize, NestedArchiveKeys) {
  TempDir dir;
  const std::string path = dir / "nested.pt";
  serialize::OutputArchive root, inner, innermost;
  innermost.write("z", make({3}, {1}, kInt64));
  inner.write("w", make({1, 2}, {2}, kFloat32));
  inner.write("deep", innermost);
  root.write("inner", inner);
  root.write("b", make({9}, {1}, kFloat64));
  root.save_to(path);

  auto [tensors, metadata] = io::load_safetensors(path);
  EXPECT_EQ(tensors.keys(), (std::vector<std::string>{"b", "inner.deep.z", "inner.w"}));
  EXPECT_EQ(metadata.at("graft.kind"), "archive");

  serialize::InputArchive in;
  in.load_from(path);
  EXPECT_EQ(in.keys(), (std::vector<std::string>{"b", "inner"}));
  serialize::InputArchive in_inner, in_deep;
  in.read("inner", in_inner);
  EXPECT_EQ(in_inner.keys(), (std::vector<std::string>{"deep", "w"}));
  Tensor w, z, b;
  in_inner.read("w", w);
  EXPECT_EQ(values(w), (std::vector<double>{1, 2}));
  in_inner.read("deep", in_deep);
  in_deep("z", z);  // operator() is read()
  EXPECT_EQ(values(z), (std::vector<double>{3}));
  EXPECT_TRUE(in.try_read("b", b));
  EXPECT_EQ(values(b), (std::vector<double>{9}));

  Tensor nothing;
  EXPECT_FALSE(in.try_read("missing", nothing));
  EXPECT_FALSE(nothing.defined());
  serialize::InputArchive none;
  EXPECT_FALSE(in.try_read("b", none)) << "a tensor is no nested archive";
  const std::string e = error_of([&] { in_inner.read("v", nothing); });
  EXPECT_NE(e.find("expected a tensor \"inner.v\" in \"" + path + "\", but got no such key (keys here: \"deep\", \"w\")"),
            std::string::npos)
      << e;

  // Writing a key twice is an error, not a silent overwrite.
  serialize::OutputArchive twice;
  twice.write("a", ones({1}));
  const std::string dup = error_of([&] { twice.write("a", ones({1})); });
  EXPECT_NE(dup.find("a second tensor under \"a\""), std::string::npos) << dup;
}

TEST(Serialize, StreamAndMemoryRoundTrip) {
  nn::Linear a(3, 2), b(3, 2);
  std::stringstream stream;
  serialize::OutputArchive out;
  out << a;
  out.save_to(stream);
  const std::string bytes = stream.str();
  serialize::InputArchive in;
  in.load_from(stream);
  in >> b;
  expect_same_tensor(b->weight, a->weight, "weight from a stream");

  nn::Linear c(3, 2);
  serialize::InputArchive mem;
  mem.load_from(bytes.data(), bytes.size());
  mem >> c;
  expect_same_tensor(c->bias, a->bias, "bias from memory");

  const std::string e = error_of([&] { serialize::InputArchive().load_from(bytes.data(), bytes.size() / 2); });
  EXPECT_NE(e.find("<memory>"), std::string::npos) << e;
}

TEST(Serialize, DamagedFilesAreErrorsNamingTheFile) {
  TempDir dir;
  const std::string good = dir / "good.pt";
  SmallNet net;
  graft::save(net, good);
  const std::vector<uint8_t> bytes = read_bytes(good);

  const std::string truncated = dir / "truncated.pt";
  write_bytes(truncated, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2)));
  const std::string e1 = error_of([&] { graft::load(net, truncated); });
  EXPECT_NE(e1.find("\"" + truncated + "\""), std::string::npos) << e1;

  const std::string noise = dir / "noise.pt";
  std::mt19937 rng(5);
  std::vector<uint8_t> random(4096);
  for (auto& c : random) c = static_cast<uint8_t>(rng());
  write_bytes(noise, random);
  const std::string e2 = error_of([&] { graft::load(net, noise); });
  EXPECT_NE(e2.find("\"" + noise + "\""), std::string::npos) << e2;

  // A file that starts like a zip archive (as LibTorch's are) but is none: the zip reader's error,
  // naming the file.
  const std::string zip = dir / "torch.pt";
  write_bytes(zip, {'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0});
  const std::string e3 = error_of([&] { graft::load(net, zip); });
  EXPECT_NE(e3.find("InputArchive::load_from(\"" + zip + "\"): expected a readable zip archive"), std::string::npos) << e3;

  // A safetensors file that graft::save did not write.
  const std::string plain = dir / "plain.safetensors";
  io::save_safetensors(plain, net->state_dict());
  const std::string e4 = error_of([&] { graft::load(net, plain); });
  EXPECT_NE(e4.find("expected a graft archive (safetensors metadata \"graft.format\": \"archive/1\"), but got a "
                    "safetensors file without \"graft.format\""),
            std::string::npos)
      << e4;

  const std::string e5 = error_of([&] { graft::load(net, dir / "absent.pt"); });
  EXPECT_NE(e5.find(dir / "absent.pt"), std::string::npos) << e5;
}

TEST(Serialize, FailedSaveLeavesTheOldFile) {
  TempDir dir;
  const std::string path = dir / "t.pt";
  graft::save(make({1, 2, 3}, {3}, kFloat32), path);
  io::detail::set_save_failure_after_bytes(10);
  const std::string e = error_of([&] { graft::save(make({4, 5, 6}, {3}, kFloat32), path); });
  io::detail::set_save_failure_after_bytes(-1);
  EXPECT_NE(e.find(path), std::string::npos) << e;
  Tensor back;
  graft::load(back, path);
  EXPECT_EQ(values(back), (std::vector<double>{1, 2, 3}));
}


TEST(Serialize, SequentialAndSharedPtrModules) {
  TempDir dir;
  const std::string path = dir / "seq.pt";
  manual_seed(4);
  nn::Sequential a(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  graft::save(a, path);
  EXPECT_EQ(io::load_safetensors(path).tensors.keys(),
            (std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight"}));
  manual_seed(5);
  nn::Sequential b(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  graft::load(b, path);
  const Tensor x = make({1, -2}, {1, 2}, kFloat32);
  expect_same_tensor(b->forward(x), a->forward(x), "Sequential forward");

  // A module held by std::shared_ptr, as LibTorch's operators take it.
  const std::string path2 = dir / "impl.pt";
  auto impl = std::make_shared<nn::LinearImpl>(nn::LinearOptions(2, 2));
  graft::save(impl, path2);
  auto impl2 = std::make_shared<nn::LinearImpl>(nn::LinearOptions(2, 2));
  graft::load(impl2, path2);
  expect_same_tensor(impl2->weight, impl->weight, "weight through shared_ptr");
}

// A module and an optimiser in one archive, each under its own key (a checkpoint a program writes
// itself); the file's kind is "archive", which any value may be read from.
TEST(Serialize, ModuleAndOptimizerInOneArchive) {
  TempDir dir;
  const std::string path = dir / "both.pt";
  nn::Linear fc(2, 2);
  optim::SGD sgd(fc->parameters(), optim::SGDOptions(0.5).momentum(0.9));
  fc(ones({1, 2})).sum().backward();
  sgd.step();
  serialize::OutputArchive root, model, optimizer;
  model << fc;
  optimizer << sgd;
  root.write("model", model);
  root.write("optimizer", optimizer);
  root.save_to(path);

  nn::Linear fc2(2, 2);
  optim::SGD sgd2(fc2->parameters(), optim::SGDOptions(0.1));
  serialize::InputArchive in, in_model, in_optimizer;
  in.load_from(path);
  in.read("model", in_model);
  in.read("optimizer", in_optimizer);
  in_model >> fc2;
  in_optimizer >> sgd2;
  expect_same_tensor(fc2->weight, fc->weight, "weight");
  EXPECT_EQ(sgd2.param_groups()[0].options().lr(), 0.5);
  EXPECT_TRUE(sgd2.state_dict().contains("state.0.momentum_buffer"));

  // A key of the module missing in a nested archive is named with its full key.
  nn::Linear three(2, 3);
  const std::string e = error_of([&] { in_optimizer >> three; });
  EXPECT_NE(e.find("missing key(s): \"optimizer.weight\", \"optimizer.bias\""), std::string::npos) << e;
}

TEST(Serialize, ValuesRoundTripExactly) {
  // LibTorch's OutputArchive::write(key, IValue): values beside the tensors, nested archives too.
  TempDir dir;
  const std::string path = dir / "values.pt";
  impl::GenericDict opts(AnyType::get(), AnyType::get());
  opts.insert("lr", 0.1);
  opts.insert("betas", ivalue::Tuple::create(0.9, 0.999));
  opts.insert(int64_t{3}, "three");
  impl::GenericList mixed(AnyType::get());
  for (IValue e : {IValue(), IValue(true), IValue(int64_t{-(int64_t{1} << 62)}), IValue(-0.0), IValue("h\xc3\xa9")}) mixed.push_back(e);
  serialize::OutputArchive root, inner;
  inner.write("step", IValue(int64_t{12}));
  inner.write("w", ones({2}));
  root.write("inner", inner);
  root.write("version", IValue("1.5.0"));
  root.write("opts", IValue(opts));
  root.write("mixed", IValue(mixed));
  root.write("ints", IValue(std::vector<int64_t>{1, -2}));
  root.write("doubles", IValue(std::vector<double>{0.1, std::numeric_limits<double>::infinity()}));
  root.save_to(path);

  serialize::InputArchive in;
  in.load_from(path);
  IValue v;
  in.read("version", v);
  EXPECT_EQ(v.toStringRef(), "1.5.0");
  serialize::InputArchive in_inner;
  in.read("inner", in_inner);
  in_inner.read("step", v);
  EXPECT_EQ(v.toInt(), 12);
  in.read("opts", v);
  auto d = v.toGenericDict();
  EXPECT_EQ(d.at("lr").toDouble(), 0.1);  // exactly
  EXPECT_EQ(d.at("betas").toTupleRef().elements()[1].toDouble(), 0.999);
  EXPECT_EQ(d.at(int64_t{3}).toStringRef(), "three");
  in.read("mixed", v);
  const auto& m = v.toListRef();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_TRUE(m[0].isNone());
  EXPECT_TRUE(m[1].toBool());
  EXPECT_EQ(m[2].toInt(), -(int64_t{1} << 62));
  EXPECT_TRUE(std::signbit(m[3].toDouble()));
  EXPECT_EQ(m[4].toStringRef(), "h\xc3\xa9");
  in.read("ints", v);
  EXPECT_EQ(v.toIntVector(), (std::vector<int64_t>{1, -2}));
  in.read("doubles", v);
  EXPECT_EQ(v.toDoubleVector()[0], 0.1);
  EXPECT_TRUE(std::isinf(v.toDoubleVector()[1]));
  EXPECT_FALSE(in.try_read("absent", v));
  EXPECT_EQ(in.keys(), (std::vector<std::string>{"doubles", "inner", "ints", "mixed", "opts", "version"}));
}

TEST(Serialize, ValuesTheFileCannotHoldAreRefused) {
  serialize::OutputArchive a;
  EXPECT_NE(error_of([&] { a.write("t", IValue(std::vector<Tensor>{ones({1})})); }).find("write(key, tensor)"),
            std::string::npos);
  impl::GenericList l(AnyType::get());
  l.push_back(ones({1}));
  EXPECT_THROW(a.write("l", IValue(l)), Error);
  a.write("k", IValue(int64_t{1}));
  EXPECT_THROW(a.write("k", IValue(int64_t{2})), Error);
  a.write("w", ones({1}));
  EXPECT_THROW(a.write("w", IValue(int64_t{2})), Error);
}

TEST(Serialize, DamagedValuesAreErrorsNamingTheKey) {
  TempDir dir;
  const std::string path = dir / "bad.pt";
  io::TensorDict t;
  t.insert("w", ones({1}));
  for (const std::string bad : {"[1]", "{\"k\": [\"i\", \"x\"]}", "{\"k\": [\"d\", \"1.5z\"]}", "{\"k\": [\"q\", 1]}",
                                "{\"k\": [\"D\", [[[\"l\", []], [\"n\"]]]]}", "{\"k\": "}) {
    SCOPED_TRACE(bad);
    io::save_safetensors(path, t, {{"graft.format", "archive/1"}, {"graft.kind", "archive"}, {"graft.values", bad}});
    serialize::InputArchive in;
    const std::string msg = error_of([&] { in.load_from(path); });
    EXPECT_NE(msg.find("bad.pt"), std::string::npos) << msg;
  }
  std::string deep;
  for (int i = 0; i < kMaxPickleDepth + 5; ++i) deep += "[\"l\", [";
  deep += "[\"n\"]";
  for (int i = 0; i < kMaxPickleDepth + 5; ++i) deep += "]]";
  io::save_safetensors(path, t, {{"graft.format", "archive/1"}, {"graft.kind", "archive"}, {"graft.values", "{\"k\": " + deep + "}"}});
  serialize::InputArchive in;
  EXPECT_NE(error_of([&] { in.load_from(path); }).find("nested"), std::string::npos);
}

}  // namespace
}  // namespace graft::test
