// graft's losses against values and input gradients computed by PyTorch itself.
// tests/fixtures/loss_fixtures.txt is written by tests/fixtures/gen_loss_fixtures.py (format in
// its docstring); this test only reads it, so it needs no PyTorch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

struct FixtureTensor {
  bool is_int = false;
  std::vector<int64_t> sizes;
  std::vector<double> values;

  Tensor make_tensor() const { return make(values, sizes, is_int ? kInt64 : kFloat64); }
};

struct ReductionResult {
  std::string reduction;
  std::map<std::string, FixtureTensor> tensors;  // out, grad_output, grad_input, grad_target
};

struct LossFixtureCase {
  std::string name, fn;
  std::map<std::string, std::string> params;
  bool nograd = false;
  std::map<std::string, FixtureTensor> args;  // input, target, weight, pos_weight
  std::vector<ReductionResult> results;
};

std::filesystem::path loss_fixture_path() {
  return std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "loss_fixtures.txt";
}

double parse_double(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') throw std::runtime_error("bad number '" + s + "'");
  return v;
}

// "t <role> <dtype> <ndim> <sizes...> <values...>" after the leading "t".
std::pair<std::string, FixtureTensor> parse_tensor(std::istringstream& in) {
  std::string role, dtype;
  int64_t ndim = 0;
  in >> role >> dtype >> ndim;
  if (!in || (dtype != "f64" && dtype != "i64") || ndim < 0) throw std::runtime_error("bad tensor header for " + role);
  FixtureTensor t;
  t.is_int = dtype == "i64";
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t s = -1;
    in >> s;
    if (!in || s < 0) throw std::runtime_error("bad size in tensor " + role);
    t.sizes.push_back(s);
    numel *= s;
  }
  std::string tok;
  while (in >> tok) t.values.push_back(parse_double(tok));
  if (static_cast<int64_t>(t.values.size()) != numel)
    throw std::runtime_error("tensor " + role + ": " + std::to_string(t.values.size()) + " values for " +
                             std::to_string(numel) + " elements");
  return {role, t};
}

std::vector<LossFixtureCase> load_fixtures() {
  std::ifstream f(loss_fixture_path());
  if (!f) throw std::runtime_error("cannot open " + loss_fixture_path().string());
  std::vector<LossFixtureCase> cases;
  std::optional<LossFixtureCase> cur;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    try {
      if (kind == "case") {
        if (cur) throw std::runtime_error("case inside a case");
        cur.emplace();
        in >> cur->name >> cur->fn;
      } else if (!cur) {
        throw std::runtime_error("'" + kind + "' outside a case");
      } else if (kind == "param") {
        std::string k, v;
        in >> k >> v;
        cur->params[k] = v;
      } else if (kind == "flag") {
        std::string w;
        in >> w;
        if (w == "nograd") cur->nograd = true;
      } else if (kind == "reduction") {
        cur->results.push_back({});
        in >> cur->results.back().reduction;
      } else if (kind == "t") {
        auto [role, t] = parse_tensor(in);
        if (cur->results.empty()) cur->args[role] = std::move(t);
        else cur->results.back().tensors[role] = std::move(t);
      } else if (kind == "end") {
        cases.push_back(std::move(*cur));
        cur.reset();
      } else {
        throw std::runtime_error("unknown line kind '" + kind + "'");
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(loss_fixture_path().string() + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  if (cur) throw std::runtime_error("unterminated case " + cur->name);
  return cases;
}

const std::vector<LossFixtureCase>& loss_fixtures() {
  static const std::vector<LossFixtureCase> cases = load_fixtures();
  return cases;
}

Reduction parse_reduction(const std::string& r) {
  if (r == "none") return kNone;
  if (r == "sum") return kSum;
  if (r == "mean") return kMean;
  throw std::runtime_error("unknown reduction " + r);
}

// Calls the loss the case names, with its options.
Tensor call_loss(const LossFixtureCase& c, const Tensor& input, const Tensor& target, Reduction red) {
  auto opt = [&](const char* role) { return c.args.count(role) ? c.args.at(role).make_tensor() : Tensor(); };
  auto param = [&](const char* k, double dflt) { return c.params.count(k) ? parse_double(c.params.at(k)) : dflt; };
  const Tensor weight = opt("weight"), pos_weight = opt("pos_weight");
  const auto ignore = static_cast<int64_t>(param("ignore_index", -100));
  if (c.fn == "cross_entropy")
    return F::cross_entropy(input, target, F::CrossEntropyFuncOptions().weight(weight).ignore_index(ignore)
                                               .reduction(red).label_smoothing(param("label_smoothing", 0.0)));
  if (c.fn == "nll_loss")
    return F::nll_loss(input, target, F::NLLLossFuncOptions().weight(weight).ignore_index(ignore).reduction(red));
  if (c.fn == "mse_loss") return F::mse_loss(input, target, F::MSELossFuncOptions().reduction(red));
  if (c.fn == "l1_loss") return F::l1_loss(input, target, F::L1LossFuncOptions().reduction(red));
  if (c.fn == "smooth_l1_loss")
    return F::smooth_l1_loss(input, target, F::SmoothL1LossFuncOptions().reduction(red).beta(param("beta", 1.0)));
  if (c.fn == "binary_cross_entropy")
    return F::binary_cross_entropy(input, target, F::BinaryCrossEntropyFuncOptions().weight(weight).reduction(red));
  if (c.fn == "binary_cross_entropy_with_logits")
    return F::binary_cross_entropy_with_logits(
        input, target, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(weight).pos_weight(pos_weight).reduction(red));
  throw std::runtime_error("unknown loss " + c.fn);
}

constexpr double kLossTol = 1e-10;

TEST(LossFixtures, FileLoads) {
  ASSERT_NO_THROW(loss_fixtures());
  EXPECT_GE(loss_fixtures().size(), 40u);
  std::map<std::string, int> per_fn;
  for (const auto& c : loss_fixtures()) ++per_fn[c.fn];
  for (const char* fn : {"cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy",
                         "binary_cross_entropy_with_logits"})
    EXPECT_GT(per_fn[fn], 0) << "no fixture for " << fn;
}

class LossFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(LossFixture, ValuesAndGradientsMatchPyTorch) {
  const LossFixtureCase& c = loss_fixtures()[GetParam()];
  ASSERT_EQ(c.results.size(), 3u) << c.name;
  for (const auto& res : c.results) {
    SCOPED_TRACE(c.name + " reduction=" + res.reduction);
    const Reduction red = parse_reduction(res.reduction);
    Tensor input = c.args.at("input").make_tensor();
    Tensor target = c.args.at("target").make_tensor();
    const bool grad_target = !c.nograd && res.tensors.count("grad_target");
    if (!c.nograd) input.requires_grad_();
    if (grad_target) target.requires_grad_();
    Tensor out;
    try {
      out = call_loss(c, input, target, red);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    const FixtureTensor& expected = res.tensors.at("out");
    EXPECT_TRUE(all_close(out, expected.values, expected.sizes, kLossTol, kLossTol)) << "loss value";
    if (c.nograd) continue;
    const FixtureTensor& go = res.tensors.at("grad_output");
    out.backward(go.make_tensor());
    const FixtureTensor& gi = res.tensors.at("grad_input");
    ASSERT_TRUE(input.grad().defined()) << "no gradient for input";
    EXPECT_TRUE(all_close(input.grad(), gi.values, gi.sizes, kLossTol, kLossTol)) << "gradient of input";
    if (grad_target) {
      const FixtureTensor& gt = res.tensors.at("grad_target");
      ASSERT_TRUE(target.grad().defined()) << "no gradient for target";
      EXPECT_TRUE(all_close(target.grad(), gt.values, gt.sizes, kLossTol, kLossTol)) << "gradient of target";
    }
  }
}

size_t loss_fixture_count() {
  try {
    return loss_fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, LossFixture, ::testing::Range<size_t>(0, loss_fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return loss_fixtures()[info.param].name; });

}  // namespace
}  // namespace graft::test
