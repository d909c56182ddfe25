// x.index({...}) with several advanced (tensor) indices in one call, and index_put_ with them
// (Note [Several advanced indices] in src/ops/tensor_indexing.cpp), against PyTorch 1.13's x[...]
// (tests/fixtures/multi_index_fixtures.txt, written by gen_multi_index_fixtures.py: values, the
// gradient of sum(x[...] * w), and x after x[...] = v), plus hand-worked cases and the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/fixture_file.h"
#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

const std::vector<FixtureCase>& multi_index_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("multi_index_fixtures.txt");
  return cases;
}

// The fixture's "spec" as graft's indices (the generator's docstring gives the items).
std::vector<indexing::TensorIndex> multi_index_items(const FixtureCase& c) {
  using namespace indexing;
  std::vector<TensorIndex> out;
  const std::string spec = c.param("spec");
  size_t at = 0;
  while (at <= spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string tok = spec.substr(at, comma - at);
    at = comma + 1;
    if (tok[0] == 'i') {
      out.emplace_back(c.tensor("idx" + tok.substr(1)));
    } else if (tok[0] == 'm') {
      out.emplace_back(c.tensor("mask" + tok.substr(1)).to(kBool));
    } else if (tok == "None") {
      out.emplace_back(None);
    } else if (tok == "...") {
      out.emplace_back(Ellipsis);
    } else if (tok == "True" || tok == "False") {
      out.emplace_back(tok == "True");
    } else if (tok.find(':') != std::string::npos) {
      std::optional<int64_t> part[3];
      size_t from = 0;
      for (int k = 0; k < 3 && from <= tok.size(); ++k) {
        size_t colon = tok.find(':', from);
        if (colon == std::string::npos) colon = tok.size();
        if (colon > from) part[k] = std::stoll(tok.substr(from, colon - from));
        from = colon + 1;
      }
      out.emplace_back(Slice(part[0], part[1], part[2]));
    } else {
      out.emplace_back(static_cast<int64_t>(std::stoll(tok)));
    }
  }
  return out;
}

TEST(MultiIndexFixtures, FileLoads) {
  ASSERT_NO_THROW(multi_index_fixtures());
  EXPECT_GE(multi_index_fixtures().size(), 20u);
}

class MultiIndexFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(MultiIndexFixture, ValuesGradientAndPutMatchPyTorch) {
  const FixtureCase& c = multi_index_fixtures()[GetParam()];
  const std::vector<indexing::TensorIndex> items = multi_index_items(c);
  Tensor x = c.tensor("x").clone().requires_grad_();
  Tensor out;
  try {
    out = x.index(items);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_TRUE(all_close(out, c.tensor("out"), 0, 0)) << "value";
  (out * c.tensor("w")).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(all_close(x.grad(), c.tensor("grad_x"), 1e-12, 1e-12)) << "gradient";
  if (c.flag("put")) {
    Tensor y = c.tensor("x").clone();
    y.index_put_(items, c.tensor("v"));
    EXPECT_TRUE(all_close(y, c.tensor("put"), 0, 0)) << "index_put_";
  }
}

size_t multi_index_fixture_count() {
  try {
    return multi_index_fixtures().size();
  } catch (...) {
    return 0;  // FileLoads reports it
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, MultiIndexFixture, ::testing::Range<size_t>(0, multi_index_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return multi_index_fixtures()[info.param].name;
                         });

// x = arange(12).view(3, 4): x[[0, 2], [1, 3]] = [x[0][1], x[2][3]] = [1, 11].
TEST(MultiIndex, TwoIndicesByHand) {
  const Tensor x = arange(12, kInt64).view({3, 4});
  const Tensor r = x.index({tensor({0L, 2L}), tensor({1L, 3L})});
  EXPECT_TRUE(all_close(r, {1, 11}, {2}, 0, 0));
  // Broadcast: rows (2,1) with cols (2,): [[x[0][1], x[0][3]], [x[2][1], x[2][3]]] = [[1, 3], [9, 11]].
  const Tensor b = x.index({tensor({0L, 2L}).view({2, 1}), tensor({1L, 3L})});
  EXPECT_TRUE(all_close(b, {1, 3, 9, 11}, {2, 2}, 0, 0));
  // A 2-D mask on both dims: its true elements in row-major order.
  const Tensor m = make({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, {3, 4}, kBool);  // 0, 5, 10
  EXPECT_TRUE(all_close(x.index({m}), {0, 5, 10}, {3}, 0, 0));
}

TEST(MultiIndex, PutWithTwoIndicesByHand) {
  Tensor x = zeros({3, 4}, kInt64);
  x.index_put_({tensor({0L, 2L, -1L}), tensor({1L, 3L, 0L})}, tensor({5L, 6L, 7L}));
  EXPECT_TRUE(all_close(x, {0, 5, 0, 0, 0, 0, 0, 0, 7, 0, 0, 6}, {3, 4}, 0, 0));
  x.index_put_({tensor({1L}), tensor({1L, 2L})}, 9);  // a number, broadcast
  EXPECT_TRUE(all_close(x, {0, 5, 0, 0, 0, 9, 9, 0, 7, 0, 0, 6}, {3, 4}, 0, 0));
}

TEST(MultiIndex, MetaTensorsGetTheShape) {
  const Tensor x = empty({3, 4, 5}, TensorOptions(kFloat32).device(kMeta));
  const Tensor r = x.index({tensor({0L, 1L}).view({2, 1}), indexing::Slice(), tensor({1L, 2L, 3L})});
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
}

TEST(MultiIndex, Errors) {
  const Tensor x = zeros({3, 4});
  EXPECT_TRUE(throws_error([&] { (void)x.index({}); },
                           {"index", "Passing an empty index list to Tensor::index() is not valid syntax"}));
  EXPECT_TRUE(throws_error([&] { (void)x.index(std::vector<indexing::TensorIndex>{}); }, {"empty index list"}));
  Tensor y = zeros({3, 4});
  EXPECT_TRUE(throws_error([&] { y.index_put_(std::vector<indexing::TensorIndex>{}, 1); },
                           {"index_put_", "empty index list"}));
  EXPECT_TRUE(throws_error([&] { (void)x.index({tensor({0L, 1L}), tensor({0L, 1L, 2L})}); }, {"index", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error([&] { (void)x.index({tensor({0L}), tensor({4L})}); },
                           {"index", "index 4 is out of bounds for dimension 1 with size 4"}));
  EXPECT_TRUE(throws_error([&] { (void)x.index({tensor({-4L}), tensor({0L})}); }, {"out of bounds for dimension 0"}));
  EXPECT_TRUE(throws_error([&] { (void)x.index({zeros({3, 3}, kBool)}); }, {"index", "mask", "[3, 3]"}));
  EXPECT_TRUE(throws_error([&] { (void)x.index({tensor({0L}), tensor({0.5})}); }, {"int64 or bool"}));
}

}  // namespace
}  // namespace graft::test
