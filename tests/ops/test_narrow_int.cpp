// The narrow integer dtypes (int32, int16, int8, uint8; Note [Narrow integer dtypes] in
// src/ops/ops_common.h) against what PyTorch 1.13 computes: tests/fixtures/int_dtype_fixtures.txt,
// written by tests/fixtures/gen_int_dtype_fixtures.py (format there).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft {
namespace {

std::filesystem::path int_dtype_fixture_path() {
  return std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "int_dtype_fixtures.txt";
}

std::vector<std::vector<std::string>> lines_of(const std::string& kind) {
  std::ifstream in(int_dtype_fixture_path());
  EXPECT_TRUE(in) << int_dtype_fixture_path();
  std::vector<std::vector<std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::vector<std::string> words;
    for (std::string w; ss >> w;) words.push_back(w);
    if (!words.empty() && words[0] == kind) out.push_back(words);
  }
  return out;
}

DType dtype_named(const std::string& name) {
  for (DType d : {kFloat32, kFloat64, kInt64, kBool, kFloat16, kBFloat16, kInt32, kInt16, kInt8, kUInt8})
    if (name == dtype_name(d)) return d;
  ADD_FAILURE() << "no dtype " << name;
  return kFloat32;
}

TEST(NarrowInt, PromotionTableIsPyTorchs) {
  const auto rows = lines_of("promote");
  ASSERT_EQ(rows.size(), 100u);
  for (const auto& r : rows)
    EXPECT_EQ(dtype_name(promote_types(dtype_named(r[1]), dtype_named(r[2]))), r[3]) << r[1] << " + " << r[2];
}

TEST(NarrowInt, TensorPlusScalarAndZeroDimTensor) {
  for (const auto& r : lines_of("tensor_scalar")) {
    const Tensor x = ones({2}, dtype_named(r[1]));
    const Tensor y = r[2] == "int" ? x + 2 : r[2] == "float" ? x + 2.5 : x + true;
    EXPECT_EQ(dtype_name(y.dtype()), r[3]) << r[1] << " + " << r[2];
  }
  const auto rows = lines_of("dim0");
  ASSERT_EQ(rows.size(), 99u);
  for (const auto& r : rows) {
    const Tensor y = ones({2}, dtype_named(r[1])) + ones({}, dtype_named(r[2]));
    EXPECT_EQ(dtype_name(y.dtype()), r[3]) << r[1] << " + 0-dim " << r[2];
  }
}

// "v v v" as a tensor of dtype dt (values read as double, exact for these integers).
Tensor parse_values(const std::vector<std::string>& words, size_t begin, size_t end, DType dt) {
  std::vector<double> v;
  for (size_t i = begin; i < end; ++i) v.push_back(std::stod(words[i]));
  return tensor(v, kFloat64).to(is_floating_point(dt) ? dt : kInt64).to(dt);
}

TEST(NarrowInt, ArithmeticWrapsAndReducesAsPyTorch) {
  const auto rows = lines_of("op");
  ASSERT_GT(rows.size(), 60u);
  for (const auto& r : rows) {
    const std::string& op = r[1];
    const DType dt = dtype_named(r[2]);
    size_t bar1 = 3, bar2;
    while (r[bar1] != "|") ++bar1;
    for (bar2 = bar1 + 1; r[bar2] != "|"; ++bar2) {
    }
    const DType out_dt = dtype_named(r[bar2 + 1]);
    std::vector<std::string> expected(r.begin() + static_cast<std::ptrdiff_t>(bar2 + 2), r.end());
    SCOPED_TRACE(op + " " + r[2]);
    Tensor x, y;
    if (op == "to") {
      x = parse_values(r, 3, bar1, kFloat32);
    } else {
      x = parse_values(r, 3, bar1, dt);
      y = parse_values(r, bar1 + 1, bar2, op == "add_u8_i8" ? kInt8 : dt);
    }
    Tensor got;
    if (op == "add") got = x + y;
    else if (op == "sub") got = x - y;
    else if (op == "mul") got = x * y;
    else if (op == "div") got = x / y;
    else if (op == "neg") got = -x;
    else if (op == "sum") got = x.sum().reshape({1});
    else if (op == "prod") got = x.prod().reshape({1});
    else if (op == "max") got = x.max().reshape({1});
    else if (op == "argmin") got = x.argmin().reshape({1});
    else if (op == "lt") got = x < y;
    else if (op == "eq") got = x == 7;
    else if (op == "add_scalar") got = x + 3;
    else if (op == "mul_scalar_float") got = x * 0.5;
    else if (op == "add_int64") got = x + y.to(kInt64);
    else if (op == "cumsum") got = x.cumsum(0);
    else if (op == "to") got = x.to(dt);
    else if (op == "add_u8_i8") got = x + y;
    else {
      ADD_FAILURE() << "unknown op " << op;
      continue;
    }
    ASSERT_EQ(got.dtype(), out_dt);
    ASSERT_EQ(got.numel(), static_cast<int64_t>(expected.size()));
    const Tensor g64 = got.to(is_floating_point(out_dt) ? kFloat64 : kInt64);
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (is_floating_point(out_dt)) EXPECT_DOUBLE_EQ(g64[i].item<double>(), std::stod(expected[static_cast<size_t>(i)]));
      else EXPECT_EQ(g64[i].item<int64_t>(), std::stoll(expected[static_cast<size_t>(i)])) << "element " << i;
    }
  }
}

TEST(NarrowInt, InPlaceKeepsTheDtypeAndWraps) {
  Tensor x = tensor({250, 3}, kInt64).to(kUInt8);
  x += 10;  // 260 wraps to 4, as uint8 arithmetic does
  EXPECT_EQ(x.dtype(), kUInt8);
  EXPECT_EQ(x[0].item<int64_t>(), 4);
  EXPECT_EQ(x[1].item<int64_t>(), 13);
  x.mul_(tensor({2, 2}, kInt64).to(kUInt8));
  EXPECT_EQ(x[0].item<int64_t>(), 8);
  x.masked_fill_(tensor({true, false}), 7);
  EXPECT_EQ(x[0].item<int64_t>(), 7);
  EXPECT_EQ(x[1].item<int64_t>(), 26);
  // A float result cannot be written into an integer tensor, as in PyTorch.
  EXPECT_THROW(x.mul_(0.5), Error);
}

TEST(NarrowInt, FactoriesPrintingAndItem) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  const Tensor a = arange(4, kInt32);
  EXPECT_EQ(a.dtype(), kInt32);
  EXPECT_EQ(a.element_size(), 4);
  EXPECT_EQ(a[3].item<int64_t>(), 3);
  EXPECT_EQ(zeros({2}, kInt16).element_size(), 2);
  EXPECT_EQ(full({2}, 300, kUInt8)[0].item<int64_t>(), 44);  // 300 mod 256
  EXPECT_EQ(ones({2}, kInt8).sum().item<int64_t>(), 2);
  const Tensor t = tensor({-1.0, 2.0}).to(kByte);
  EXPECT_EQ(t[0].item<int64_t>(), 255);
  std::ostringstream os;
  os << tensor({1, 2}, kInt64).to(kInt32);
  EXPECT_EQ(os.str(), "tensor([1, 2], dtype=graft.int32)");
  // where and comparisons with a narrow operand
  const Tensor w = where(tensor({true, false}), tensor({1, 2}, kInt64).to(kInt8), tensor({5, 6}, kInt64).to(kInt8));
  EXPECT_EQ(w.dtype(), kInt8);
  EXPECT_EQ(w[1].item<int64_t>(), 6);
  EXPECT_TRUE(equal(a.to(kInt64), arange(4)));
}

TEST(NarrowInt, Int32IndicesWhereLibTorchTakesThem) {
  // index_select, index_add and embedding take int32 indices as PyTorch does; gather does not.
  const Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, kFloat64);
  const Tensor i32 = tensor({2, 0}, kInt64).to(kInt32);
  const Tensor picked = x.index_select(0, i32);
  EXPECT_DOUBLE_EQ(picked[0][1].item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(picked[1][0].item<double>(), 1.0);
  const Tensor w = x.detach().requires_grad_();
  embedding(w, i32).sum().backward();
  EXPECT_DOUBLE_EQ(w.grad()[2][0].item<double>(), 1.0);  // rows 2 and 0 used once each
  EXPECT_DOUBLE_EQ(w.grad()[1][0].item<double>(), 0.0);
  try {
    x.gather(0, tensor({{0, 1}}, kInt64).to(kInt32));
    ADD_FAILURE() << "gather took an int32 index";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("an int64 index tensor"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace graft
