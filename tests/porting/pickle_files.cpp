// LibTorch-style source (tests/porting, docs/porting.md): a program that reads a file Python's
// torch.save wrote with torch::pickle_load, walks it, and writes and reads back a mixed value with
// torch::pickle_save, as a ported program does. CMake ports it and builds it against graft; where
// LibTorch is installed it also builds it unchanged against LibTorch, and the outputs are compared.
// The fixture is tests/fixtures/pickle/dtypes.pt (GRAFT_FIXTURES_DIR names tests/fixtures), a plain
// dict of one tensor per dtype, which LibTorch 1.13 reads too (it turns an OrderedDict into None).
// Every value is checked against the manifest's, written here by hand, so the program fails on its
// own as well.
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "porting_checks.h"

namespace {

using porting::check;

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "opened " + path);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string shape(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

}  // namespace

int main() {
  const char* dir = std::getenv("GRAFT_FIXTURES_DIR");
  if (!dir) {
    std::printf("GRAFT_FIXTURES_DIR is not set: point it at tests/fixtures\n");
    return 1;
  }
  // 1. From Python: {"float32": ..., "float64": ..., ..., "bool": ...}.
  const torch::IValue v = torch::pickle_load(read_file(std::string(dir) + "/pickle/dtypes.pt"));
  check(v.isGenericDict(), "the root is a dict");
  const std::vector<std::string> names = {"float32", "float64", "float16", "bfloat16", "int64",
                                          "int32",   "int16",   "int8",    "uint8",    "bool"};
  const std::vector<size_t> sizes = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};
  size_t i = 0;
  for (const auto& entry : v.toGenericDict()) {
    const std::string& key = entry.key().toStringRef();
    const torch::Tensor& t = entry.value().toTensor();
    std::printf("%s %s elem=%zu float=%d\n", key.c_str(), shape(t).c_str(), t.element_size(),
                static_cast<int>(t.is_floating_point()));
    check(i < names.size() && key == names[i], "key " + std::to_string(i) + " is " + names[i]);
    check(t.element_size() == sizes[i], key + "'s element size");
    ++i;
  }
  check(i == names.size(), "ten entries");
  const torch::Tensor i64 = v.toGenericDict().at("int64").toTensor();
  std::printf("int64[2]=%lld int64[4]=%lld\n", static_cast<long long>(i64[2].item<int64_t>()),
              static_cast<long long>(i64[4].item<int64_t>()));
  check(i64[2].item<int64_t>() == 9007199254740993LL, "2^53 + 1 read exactly");
  const torch::Tensor u8 = v.toGenericDict().at("uint8").toTensor();
  check(u8[1].item<int64_t>() == 255, "uint8 255");

  // 2. A mixed value, written and read back.
  c10::impl::GenericDict d(c10::AnyType::get(), c10::AnyType::get());
  d.insert("weight", torch::arange(6, torch::kFloat32).reshape({2, 3}));
  d.insert("step", int64_t{12});
  d.insert("name", std::string("run-7"));
  c10::impl::GenericList l(c10::AnyType::get());
  l.push_back(1.5);
  l.push_back(true);
  d.insert("extra", l);
  d.insert("pair", c10::ivalue::Tuple::create(int64_t{3}, std::string("x")));
  const std::vector<char> bytes = torch::pickle_save(d);
  const torch::IValue back = torch::pickle_load(bytes);
  const auto bd = back.toGenericDict();
  const torch::Tensor w = bd.at("weight").toTensor();
  std::printf("weight %s sum=%g step=%lld name=%s extra=[%g, %d] pair=(%lld, %s)\n", shape(w).c_str(),
              w.sum().item<double>(), static_cast<long long>(bd.at("step").toInt()), bd.at("name").toStringRef().c_str(),
              bd.at("extra").toList().get(0).toDouble(), static_cast<int>(bd.at("extra").toList().get(1).toBool()),
              static_cast<long long>(bd.at("pair").toTupleRef().elements()[0].toInt()),
              bd.at("pair").toTupleRef().elements()[1].toStringRef().c_str());
  check(w.sum().item<double>() == 15.0, "weight's sum");
  check(bd.at("step").toInt() == 12, "step");
  check(bd.at("name").toStringRef() == "run-7", "name");
  return porting::failures == 0 ? 0 : 1;
}
