// The activations, cumulative ops, distances and losses added for issue 15 ("beyond the four
// programs") against values and input gradients computed by PyTorch itself.
// tests/fixtures/act_loss_fixtures.txt is written by tests/fixtures/gen_act_loss_fixtures.py (format
// in its docstring); this test only reads it, so it needs no PyTorch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
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

struct FixtureCase {
  std::string name, fn;
  std::map<std::string, std::string> params;
  std::map<std::string, FixtureTensor> tensors;  // arg0.., out, grad_output, grad0..
};

std::filesystem::path fixture_path() {
  return std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "act_loss_fixtures.txt";
}

double parse_double(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);  // accepts inf and nan
  if (end == s.c_str() || *end != '\0') throw std::runtime_error("bad number '" + s + "'");
  return v;
}

std::vector<FixtureCase> load_fixtures() {
  std::ifstream f(fixture_path());
  if (!f) throw std::runtime_error("cannot open " + fixture_path().string());
  std::vector<FixtureCase> cases;
  std::optional<FixtureCase> cur;
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
      } else if (kind == "t") {
        std::string role, dtype;
        int64_t ndim = -1;
        in >> role >> dtype >> ndim;
        if (!in || (dtype != "f64" && dtype != "i64") || ndim < 0) throw std::runtime_error("bad tensor header");
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
        if (static_cast<int64_t>(t.values.size()) != numel) throw std::runtime_error("tensor " + role + ": wrong count");
        cur->tensors[role] = std::move(t);
      } else if (kind == "end") {
        cases.push_back(std::move(*cur));
        cur.reset();
      } else {
        throw std::runtime_error("unknown line kind '" + kind + "'");
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(fixture_path().string() + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  if (cur) throw std::runtime_error("unterminated case " + cur->name);
  return cases;
}

const std::vector<FixtureCase>& fixtures() {
  static const std::vector<FixtureCase> cases = load_fixtures();
  return cases;
}

// The graft call a case names, with its options rebuilt from the params.
Tensor call(const FixtureCase& c, const TensorList& a) {
  auto num = [&](const char* k, double dflt) { return c.params.count(k) ? parse_double(c.params.at(k)) : dflt; };
  auto flag = [&](const char* k) { return num(k, 0) != 0; };
  auto dim = [&](int64_t dflt) { return static_cast<int64_t>(num("dim", static_cast<double>(dflt))); };
  const std::string red_name = c.params.count("reduction") ? c.params.at("reduction") : "mean";
  const Reduction red = red_name == "none" ? kNone : red_name == "sum" ? kSum : kMean;
  const std::string& fn = c.fn;
  if (fn == "selu") return F::selu(a[0]);
  if (fn == "mish") return F::mish(a[0]);
  if (fn == "hardswish") return F::hardswish(a[0]);
  if (fn == "hardsigmoid") return F::hardsigmoid(a[0]);
  if (fn == "relu6") return F::relu6(a[0]);
  if (fn == "hardtanh")
    return F::hardtanh(a[0], F::HardtanhFuncOptions().min_val(num("min_val", -1)).max_val(num("max_val", 1)));
  if (fn == "glu") return F::glu(a[0], F::GLUFuncOptions(dim(-1)));
  if (fn == "softmin") return F::softmin(a[0], F::SoftminFuncOptions(dim(1)));
  if (fn == "cumsum") return a[0].cumsum(dim(0));
  if (fn == "cumprod") return cumprod(a[0], dim(0));
  if (fn == "cosine_similarity")
    return F::cosine_similarity(a[0], a[1], F::CosineSimilarityFuncOptions().dim(dim(1)).eps(num("eps", 1e-8)));
  if (fn == "pairwise_distance")
    return F::pairwise_distance(
        a[0], a[1], F::PairwiseDistanceFuncOptions().p(num("p", 2)).eps(num("eps", 1e-6)).keepdim(flag("keepdim")));
  if (fn == "normalize")
    return F::normalize(a[0], F::NormalizeFuncOptions().p(num("p", 2)).dim(dim(1)).eps(num("eps", 1e-12)));
  if (fn == "huber_loss") return F::huber_loss(a[0], a[1], F::HuberLossFuncOptions(red).delta(num("delta", 1)));
  if (fn == "kl_div") {
    const F::KLDivReduction r = red_name == "batchmean" ? F::KLDivReduction(kBatchMean) : F::KLDivReduction(red);
    return F::kl_div(a[0], a[1], F::KLDivFuncOptions(r).log_target(flag("log_target")));
  }
  if (fn == "cosine_embedding_loss")
    return F::cosine_embedding_loss(a[0], a[1], a[2],
                                    F::CosineEmbeddingLossFuncOptions().margin(num("margin", 0)).reduction(red));
  if (fn == "margin_ranking_loss")
    return F::margin_ranking_loss(a[0], a[1], a[2],
                                  F::MarginRankingLossFuncOptions().margin(num("margin", 0)).reduction(red));
  if (fn == "triplet_margin_loss")
    return F::triplet_margin_loss(a[0], a[1], a[2],
                                  F::TripletMarginLossFuncOptions()
                                      .margin(num("margin", 1))
                                      .p(num("p", 2))
                                      .swap(flag("swap"))
                                      .reduction(red));
  if (fn == "cross_entropy")
    return F::cross_entropy(a[0], a[1],
                            F::CrossEntropyFuncOptions()
                                .weight(a[2])
                                .ignore_index(static_cast<int64_t>(num("ignore_index", -100)))
                                .reduction(red)
                                .label_smoothing(num("label_smoothing", 0)));
  if (fn == "nll_loss")
    return F::nll_loss(a[0], a[1],
                       F::NLLLossFuncOptions().weight(a[2]).ignore_index(static_cast<int64_t>(num("ignore_index", -100)))
                           .reduction(red));
  throw std::runtime_error("unknown function " + fn);
}

TEST(ActLossFixtures, FileLoads) {
  ASSERT_NO_THROW(fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : fixtures()) ++per_fn[c.fn];
  for (const char* fn : {"selu", "mish", "hardswish", "hardsigmoid", "hardtanh", "relu6", "glu", "softmin", "cumsum",
                         "cumprod", "cosine_similarity", "pairwise_distance", "normalize", "huber_loss", "kl_div",
                         "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "cross_entropy",
                         "nll_loss"})
    EXPECT_GT(per_fn[fn], 0) << "no fixture for " << fn;
}

class ActLossFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(ActLossFixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = fixtures()[GetParam()];
  // PyTorch's hardsigmoid backward uses 1/6 rounded to float32 even for float64 (about 3e-9 off);
  // graft uses 1/6.
  const double tol = 1e-10, grad_tol = c.fn == "hardsigmoid" ? 1e-7 : 1e-10;
  TensorList args;
  for (int i = 0; c.tensors.count("arg" + std::to_string(i)); ++i) {
    Tensor t = c.tensors.at("arg" + std::to_string(i)).make_tensor();
    if (c.tensors.count("grad" + std::to_string(i))) t.requires_grad_();
    args.push_back(t);
  }
  Tensor out;
  try {
    out = call(c, args);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  const FixtureTensor& expected = c.tensors.at("out");
  EXPECT_TRUE(all_close(out, expected.values, expected.sizes, tol, tol)) << "value";
  if (!c.tensors.count("grad_output")) return;
  out.backward(c.tensors.at("grad_output").make_tensor());
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string role = "grad" + std::to_string(i);
    if (!c.tensors.count(role)) continue;
    const FixtureTensor& g = c.tensors.at(role);
    ASSERT_TRUE(args[i].grad().defined()) << "no gradient for arg " << i;
    EXPECT_TRUE(all_close(args[i].grad(), g.values, g.sizes, grad_tol, grad_tol)) << "gradient of arg " << i;
  }
}

size_t fixture_count() {
  try {
    return fixtures().size();
  } catch (const std::exception&) {
    return 0;  // FileLoads reports the problem
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, ActLossFixture, ::testing::Range<size_t>(0, fixture_count()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return fixtures()[info.param].name; });

}  // namespace
}  // namespace graft::test
