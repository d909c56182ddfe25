// graft::load of the archives LibTorch's torch::save wrote (Note [LibTorch archives] in
// src/io/libtorch_archive.cpp): tests/fixtures/libtorch/make_libtorch_archives.cpp wrote them with
// LibTorch 1.13, and the manifests beside them hold what LibTorch held when it saved.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"
#include "manifest.h"
#include "temp_dir.h"

namespace graft::test {
namespace {

std::string lt_fixture(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "libtorch" / name).string();
}

// The model make_libtorch_archives.cpp saves, in LibTorch's spelling.
struct LtNetImpl : nn::Module {
  LtNetImpl()
      : fc(register_module("fc", nn::Linear(4, 3))),
        bn(register_module("bn", nn::BatchNorm1d(3))),
        head(register_module("head", nn::Sequential(nn::Linear(3, 2)))) {}
  nn::Linear fc;
  nn::BatchNorm1d bn;
  nn::Sequential head;
};
GRAFT_MODULE(LtNet);

// A manifest's tensor line without its storage id and requires_grad fields (the 7th and 8th), which
// say how LibTorch held the tensor rather than what it holds.
std::string tensor_fields(const std::string& line) {
  std::vector<std::string> f;
  size_t pos = 0;
  while (pos <= line.size()) {
    const size_t sp = line.find(' ', pos);
    f.push_back(line.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos));
    if (sp == std::string::npos) break;
    pos = sp + 1;
  }
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (i == 6 || i == 7) continue;
    out += (out.empty() ? "" : " ") + f[i];
  }
  return out;
}

// path -> line, for the manifest's tensor, int and float lines.
std::map<std::string, std::string> manifest_by_path(const std::string& file) {
  std::map<std::string, std::string> out;
  for (const auto& line : expected_lines(lt_fixture(file))) {
    const size_t a = line.find(' ');
    const size_t b = line.find(' ', a + 1);
    out[line.substr(a + 1, b - a - 1)] = line;
  }
  return out;
}

// The manifest line graft's `t` makes under `path`.
std::string rendered(const Tensor& t, const std::string& path) {
  ManifestWriter w(false);
  w.walk(IValue(t), path);
  return w.lines.at(0);
}

TEST(LibTorchArchive, AModuleLoadsWithEveryParameterAndBuffer) {
  LtNet net;
  graft::load(net, lt_fixture("module.pt"));
  const auto want = manifest_by_path("module.expected");
  size_t checked = 0;
  for (const auto& item : net->state_dict()) {
    const std::string path = "root/" + item.key();
    ASSERT_TRUE(want.count(path)) << path;
    EXPECT_EQ(tensor_fields(rendered(item.value(), path)), tensor_fields(want.at(path)));
    ++checked;
  }
  EXPECT_EQ(checked, 9u);  // 6 parameters, 3 buffers (num_batches_tracked too)
  EXPECT_TRUE(net->fc->weight.requires_grad());
}

TEST(LibTorchArchive, ATensorAndAVectorOfTensorsLoad) {
  Tensor t;
  graft::load(t, lt_fixture("tensor.pt"));
  EXPECT_EQ(tensor_fields(rendered(t, "root/0")), tensor_fields(manifest_by_path("tensor.expected").at("root/0")));
  std::vector<Tensor> v;
  graft::load(v, lt_fixture("tensors.pt"));
  ASSERT_EQ(v.size(), 3u);
  const auto want = manifest_by_path("tensors.expected");
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string path = "root/" + std::to_string(i);
    EXPECT_EQ(tensor_fields(rendered(v[i], path)), tensor_fields(want.at(path)));
  }
}

// The optimizer's state, read back from graft's state dict, against what LibTorch held.
void expect_optimizer_matches(const optim::Optimizer& opt, const std::string& manifest,
                              const std::vector<std::string>& fields) {
  const auto want = manifest_by_path(manifest);
  const auto sd = opt.state_dict();
  for (int p = 0; p < 6; ++p) {
    for (const auto& f : fields) {
      const std::string key = "state." + std::to_string(p) + "." + f;
      const std::string path = "state/" + std::to_string(p) + "/" + f;
      SCOPED_TRACE(key);
      ASSERT_TRUE(sd.contains(key));
      ASSERT_TRUE(want.count(path));
      EXPECT_EQ(tensor_fields(rendered(sd[key], path)), tensor_fields(want.at(path)));
    }
  }
}

TEST(LibTorchArchive, AnAdamOptimizerLoadsItsStateAndOptions) {
  LtNet net;
  optim::Adam opt(net->parameters(), optim::AdamOptions(0.5).betas({0.5, 0.5}).eps(1e-3));
  graft::load(opt, lt_fixture("adam.pt"));
  expect_optimizer_matches(opt, "adam.expected", {"exp_avg", "exp_avg_sq"});
  const auto sd = opt.state_dict();
  for (int p = 0; p < 6; ++p) EXPECT_EQ(sd["state." + std::to_string(p) + ".step"].item<double>(), 2.0);
  const auto& o = static_cast<const optim::AdamOptions&>(opt.param_groups()[0].options());
  EXPECT_EQ(o.lr(), 0.01);
  EXPECT_EQ(std::get<0>(o.betas()), 0.9);
  EXPECT_EQ(std::get<1>(o.betas()), 0.999);
  EXPECT_EQ(o.eps(), 1e-8);
  EXPECT_FALSE(o.amsgrad());
}

TEST(LibTorchArchive, AnSgdOptimizerLoadsItsMomentumBuffers) {
  LtNet net;
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.5));
  graft::load(opt, lt_fixture("sgd.pt"));
  expect_optimizer_matches(opt, "sgd.expected", {"momentum_buffer"});
  const auto& o = static_cast<const optim::SGDOptions&>(opt.param_groups()[0].options());
  EXPECT_EQ(o.lr(), 0.01);
  EXPECT_EQ(o.momentum(), 0.9);
}

TEST(LibTorchArchive, ValuesReadAsIValuesAndNestedArchivesAsArchives) {
  serialize::InputArchive in;
  in.load_from(lt_fixture("adam.pt"));
  IValue version;
  in.read("pytorch_version", version);
  EXPECT_EQ(version.toStringRef(), "1.5.0");
  EXPECT_FALSE(in.try_read("no_such_value", version));
  serialize::InputArchive module_in;
  module_in.load_from(lt_fixture("module.pt"));
  serialize::InputArchive head;
  module_in.read("head", head);
  Tensor w;
  head.read("0.weight", w);
  EXPECT_EQ(w.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(module_in.keys(), (std::vector<std::string>{"bn", "fc", "head"}));
}

TEST(LibTorchArchive, MismatchesAreErrorsThatChangeNothing) {
  // Another architecture: the strict load names what differs and loads nothing.
  auto other = nn::Sequential(nn::Linear(4, 3));
  const Tensor before = other->parameters()[0].clone();
  const std::string msg = error_message([&] { graft::load(other, lt_fixture("module.pt")); });
  EXPECT_NE(msg.find("module.pt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fc.weight"), std::string::npos) << msg;
  EXPECT_TRUE(allclose(other->parameters()[0], before, 0, 0));
  // An optimizer's file is no module.
  LtNet net;
  EXPECT_NE(error_message([&] { graft::load(net, lt_fixture("adam.pt")); }).find("optimizer"), std::string::npos);
  // An optimizer over other parameters.
  optim::Adam small(other->parameters(), optim::AdamOptions(0.1));
  EXPECT_THROW(graft::load(small, lt_fixture("adam.pt")), Error);
}

TEST(LibTorchArchive, DamagedArchivesAreErrors) {
  std::ifstream in(lt_fixture("module.pt"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t cut : {size_t{10}, bytes.size() / 2, bytes.size() - 5}) {
    SCOPED_TRACE(cut);
    serialize::InputArchive a;
    EXPECT_THROW(a.load_from(bytes.data(), cut), Error);
  }
  // A Python torch.save file is no LibTorch archive: the error says where to go.
  serialize::InputArchive py;
  const std::string msg = error_message([&] {
    py.load_from((std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "pickle" / "nested.pt").string());
  });
  EXPECT_NE(msg.find("pickle_load"), std::string::npos) << msg;
}

// ---- graft writes LibTorch's format (serialize::ArchiveFormat::LibTorch) ---------------------

// LtNet with parameter number k filled with 0.5 + k and known buffers (check_jit_load.py's contract).
LtNet filled_net() {
  LtNet net;
  NoGradGuard no_grad;
  double k = 0.5;
  for (auto& p : net->parameters()) p.fill_(k++);
  net->bn->running_mean.fill_(0.25);
  net->bn->running_var.fill_(2.0);
  net->bn->num_batches_tracked.fill_(3);
  return net;
}

TEST(LibTorchArchiveInterop, WritesArchivesLibTorchReads) {
  const char* dir_env = std::getenv("GRAFT_LIBTORCH_INTEROP_DIR");
  TempDir tmp;
  const std::string dir = dir_env ? dir_env : tmp.path();
  const auto format = serialize::ArchiveFormat::LibTorch;
  graft::save(filled_net(), dir + "/net.pt", format);
  graft::save(std::vector<Tensor>{arange(6, kFloat32), tensor({int64_t{-3}, int64_t{1} << 40}, kInt64)},
              dir + "/tensors.pt", format);
  serialize::OutputArchive values, inner;
  inner.write("epoch", IValue(int64_t{4}));
  values.write("lr", IValue(0.125));
  values.write("name", IValue("run-7"));
  values.write("w", ones({2}));
  values.write("inner", inner);
  values.save_to(dir + "/values.pt", format);

  // graft reads them back as LibTorch archives.
  LtNet back;
  graft::load(back, dir + "/net.pt");
  const LtNet want = filled_net();
  const auto got_sd = back->state_dict();
  for (const auto& item : want->state_dict()) {
    EXPECT_TRUE(allclose(got_sd[item.key()].to(kFloat64), item.value().to(kFloat64), 0, 0)) << item.key();
  }
  serialize::InputArchive in;
  in.load_from(dir + "/values.pt");
  EXPECT_TRUE(in.from_libtorch());
  IValue lr;
  in.read("lr", lr);
  EXPECT_EQ(lr.toDouble(), 0.125);
  serialize::InputArchive in_inner;
  in.read("inner", in_inner);
  IValue epoch;
  in_inner.read("epoch", epoch);
  EXPECT_EQ(epoch.toInt(), 4);
}

TEST(LibTorchArchiveInterop, ValuesLibTorchsFormatCannotHoldAreRefused) {
  TempDir tmp;
  serialize::OutputArchive a;
  a.write("l", IValue(std::vector<int64_t>{1, 2}));
  const std::string msg = error_message([&] { a.save_to(tmp / "x.pt", serialize::ArchiveFormat::LibTorch); });
  EXPECT_NE(msg.find("IntList"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(tmp / "x.pt"));
  a.save_to(tmp / "x.pt");  // graft's own format holds it
  serialize::OutputArchive b;
  b.write("x", IValue(int64_t{1}));
  b.write("x.y", ones({1}));  // "x" would be both a value and a module
  EXPECT_THROW(b.save_to(tmp / "y.pt", serialize::ArchiveFormat::LibTorch), Error);
}

}  // namespace
}  // namespace graft::test
