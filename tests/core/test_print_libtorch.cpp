// LibTorch's print style (Note [LibTorch's tensor print]) against what LibTorch 1.13 printed for the
// same tensors: tests/fixtures/libtorch/print_libtorch.cpp built every case of print_cases.inc and
// wrote print_libtorch.expected; this file builds the same cases with graft and compares the text
// byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"

namespace graft::test {
namespace {

struct Case {
  const char* name;
  const char* dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
  double lin_a, lin_b;
  int64_t lin_n;
  bool transpose;
};

const std::vector<Case> kCases = {
#include "../fixtures/libtorch/print_cases.inc"
};

DType dtype_of(const std::string& s) {
  for (const DTypeInfo& row : kDTypeTable)
    if (s == row.name) return row.dtype;
  ADD_FAILURE() << "unknown dtype " << s;
  return kFloat32;
}

Tensor build(const Case& c) {
  std::vector<double> v = c.values;
  for (int64_t i = 0; i < c.lin_n; ++i) v.push_back(c.lin_a + c.lin_b * static_cast<double>(i));
  Tensor t = make(v, {static_cast<int64_t>(v.size())}, kFloat64).reshape(c.shape).to(dtype_of(c.dtype));
  return c.transpose ? t.t() : t;
}

// The expected file's sections: "=== name\n" then the text up to the next "=== " line, without the
// newline the generator wrote after each.
std::map<std::string, std::string> expected_sections() {
  std::ifstream in(std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/libtorch/print_libtorch.expected");
  EXPECT_TRUE(in.good()) << "cannot read print_libtorch.expected";
  std::map<std::string, std::string> out;
  std::string line, name, text;
  auto flush = [&] {
    if (name.empty()) return;
    if (!text.empty()) text.pop_back();
    out[name] = text;
  };
  while (std::getline(in, line)) {
    if (line.rfind("=== ", 0) == 0) {
      flush();
      name = line.substr(4);
      text.clear();
    } else {
      text += line + "\n";
    }
  }
  flush();
  return out;
}

const std::map<std::string, std::string>& expected() {
  static const std::map<std::string, std::string> sections = expected_sections();
  return sections;
}

TEST(PrintLibTorch, EveryCaseAsLibTorchPrintsIt) {
  ASSERT_GT(expected().size(), 2 * kCases.size() - 1);
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const Tensor t = build(c);
    std::ostringstream os;
    os << t;
    EXPECT_EQ(os.str(), expected().at(c.name));
    std::ostringstream narrow;
    print(narrow, t, 40);
    EXPECT_EQ(narrow.str(), expected().at(std::string(c.name) + " linesize 40"));
  }
}

TEST(PrintLibTorch, AutogradUndefinedAndTheStreamAfter) {
  const Tensor a = ones({2, 3}).requires_grad_();
  const Tensor b = (a * 2).sum(1);
  std::ostringstream os1, os2, os3, os4;
  os1 << a;
  os2 << b;
  os3 << Tensor();
  os4 << make({0.5, 1e-7}, {2}, kFloat32) << " " << 0.1 << " " << 1234567.0;
  EXPECT_EQ(os1.str(), expected().at("requires_grad"));
  EXPECT_EQ(os2.str(), expected().at("grad_fn"));
  EXPECT_EQ(os3.str(), expected().at("undefined"));
  EXPECT_EQ(os4.str(), expected().at("stream state after"));
}

TEST(PrintLibTorch, SizesStridesTypeStringsAndDevices) {
  const Tensor a = ones({2, 3});
  std::ostringstream sizes, types, devices;
  sizes << a.sizes() << " " << a.t().strides() << " " << tensor(1.0).sizes();
  EXPECT_EQ(sizes.str(), expected().at("sizes"));
  types << a.toString() << " " << ones({1}, kInt64).toString() << " " << ones({1}, kBool).toString() << " "
        << ones({1}, kUInt8).toString();
  EXPECT_EQ(types.str(), expected().at("toString"));
  // LibTorch's t.dtype() is a caffe2::TypeMeta that prints "float"; graft's is the scalar type,
  // which prints as LibTorch's t.scalar_type() does (docs/porting.md lists the difference).
  devices << a.dtype() << " " << a.scalar_type() << " " << a.device() << " " << kInt64;
  EXPECT_EQ(expected().at("dtype and device"), "float Float cpu Long");
  EXPECT_EQ(devices.str(), "Float Float cpu Long");
  EXPECT_EQ(Tensor().toString(), "UndefinedType");
  EXPECT_EQ(empty({2, 3}, TensorOptions(kFloat32).device(kMeta)).toString(), "MetaFloatType");
}

TEST(PrintLibTorch, MetaTensorsPrintTheirTypeAndSizesOnly) {
  std::ostringstream os;
  os << empty({2, 3}, TensorOptions(kFloat64).device(kMeta));
  EXPECT_EQ(os.str(), "[ MetaDoubleType{2,3} ]");
}

TEST(PrintLibTorch, StyleSwitchesTensorsToPythonsRepr) {
  const Tensor t = make({1, 2}, {2}, kFloat32);
  EXPECT_EQ(print_style(), PrintStyle::LibTorch);
  {
    PrintStyleGuard python(PrintStyle::Python);
    std::ostringstream os;
    os << t;
    EXPECT_EQ(os.str(), "tensor([1., 2.])");
  }
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), " 1\n 2\n[ CPUFloatType{2} ]");
  EXPECT_EQ(repr(t), "tensor([1., 2.])");
  EXPECT_EQ(t.str(), "tensor([1., 2.])");
}

}  // namespace
}  // namespace graft::test
