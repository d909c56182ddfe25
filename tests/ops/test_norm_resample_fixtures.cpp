// graft's group_norm, instance_norm, interpolate, pad and pixel_(un)shuffle against values and
// gradients computed by PyTorch itself. tests/fixtures/norm_resample_fixtures.txt is written by
// tests/fixtures/gen_norm_resample_fixtures.py (format in its docstring); this test only reads it.
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
  std::vector<int64_t> sizes;
  std::vector<double> values;
  Tensor make_tensor() const { return make(values, sizes); }
};

struct FixtureCase {
  std::string name, fn;
  std::map<std::string, std::string> params;
  std::map<std::string, FixtureTensor> tensors;
};

std::filesystem::path fixture_path() {
  return std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "norm_resample_fixtures.txt";
}

double parse_double(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') throw std::runtime_error("bad number '" + s + "'");
  return v;
}

std::vector<double> parse_list(const std::string& s) {
  std::vector<double> out;
  std::stringstream in(s);
  std::string tok;
  while (std::getline(in, tok, ',')) out.push_back(parse_double(tok));
  return out;
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
        std::string role;
        int64_t ndim = -1;
        in >> role >> ndim;
        if (!in || ndim < 0) throw std::runtime_error("bad tensor header");
        FixtureTensor t;
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

// Calls the case's function on the tensors in `t` (input, weight, bias, running_mean, running_var).
Tensor call(const FixtureCase& c, std::map<std::string, Tensor>& t) {
  auto param = [&](const char* k) { return parse_double(c.params.at(k)); };
  auto has = [&](const char* k) { return c.params.count(k) > 0; };
  auto get = [&](const char* role) { return t.count(role) ? t.at(role) : Tensor(); };
  if (c.fn == "group_norm")
    return F::group_norm(t.at("input"), F::GroupNormFuncOptions(static_cast<int64_t>(param("num_groups")))
                                            .weight(get("weight")).bias(get("bias")).eps(param("eps")));
  if (c.fn == "instance_norm")
    return F::instance_norm(t.at("input"), F::InstanceNormFuncOptions()
                                               .running_mean(get("running_mean")).running_var(get("running_var"))
                                               .weight(get("weight")).bias(get("bias"))
                                               .use_input_stats(param("use_input_stats") != 0)
                                               .momentum(param("momentum")).eps(param("eps")));
  if (c.fn == "interpolate") {
    F::InterpolateFuncOptions o;
    o.mode(c.params.at("mode") == "bilinear" ? kBilinear : kNearest);
    if (has("size")) {
      std::vector<int64_t> s;
      for (double v : parse_list(c.params.at("size"))) s.push_back(static_cast<int64_t>(v));
      o.size(s);
    } else {
      o.scale_factor(parse_list(c.params.at("scale_factor")));
    }
    if (has("align_corners")) o.align_corners(param("align_corners") != 0);
    return F::interpolate(t.at("input"), o);
  }
  if (c.fn == "pad") {
    std::vector<int64_t> p;
    for (double v : parse_list(c.params.at("pad"))) p.push_back(static_cast<int64_t>(v));
    const std::string& m = c.params.at("mode");
    F::PadFuncOptions o(p);
    o.mode(m == "reflect" ? kReflect : m == "replicate" ? kReplicate : m == "circular" ? kCircular : kConstant);
    if (has("value")) o.value(param("value"));
    return F::pad(t.at("input"), o);
  }
  if (c.fn == "pixel_shuffle") return F::pixel_shuffle(t.at("input"), static_cast<int64_t>(param("factor")));
  if (c.fn == "pixel_unshuffle") return F::pixel_unshuffle(t.at("input"), static_cast<int64_t>(param("factor")));
  throw std::runtime_error("unknown fn " + c.fn);
}

constexpr double kTol = 1e-10;

TEST(NormResampleFixtures, FileLoads) {
  ASSERT_NO_THROW(fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : fixtures()) ++per_fn[c.fn];
  for (const char* fn : {"group_norm", "instance_norm", "interpolate", "pad", "pixel_shuffle", "pixel_unshuffle"})
    EXPECT_GT(per_fn[fn], 0) << "no fixture for " << fn;
}

class NormResampleFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(NormResampleFixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = fixtures()[GetParam()];
  SCOPED_TRACE(c.name);
  std::map<std::string, Tensor> t;
  for (const char* role : {"input", "weight", "bias", "running_mean", "running_var"})
    if (c.tensors.count(role)) t[role] = c.tensors.at(role).make_tensor();
  for (const char* role : {"input", "weight", "bias"})
    if (t.count(role)) t[role].requires_grad_();
  Tensor out;
  try {
    out = call(c, t);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  const auto expect = [&](const Tensor& actual, const std::string& role) {
    const FixtureTensor& e = c.tensors.at(role);
    EXPECT_TRUE(all_close(actual, e.values, e.sizes, kTol, kTol)) << role;
  };
  expect(out, "out");
  out.backward(c.tensors.at("grad_output").make_tensor());
  for (const char* role : {"input", "weight", "bias"})
    if (t.count(role)) expect(t.at(role).grad(), std::string("grad_") + role);
  for (const char* role : {"running_mean", "running_var"})
    if (t.count(role)) expect(t.at(role), std::string(role) + "_after");
  // float32 gives the same to float32 precision.
  std::map<std::string, Tensor> t32;
  for (auto& [role, v] : t) t32[role] = v.detach().to(kFloat32);
  for (const char* role : {"running_mean", "running_var"})
    if (c.tensors.count(role)) t32[role] = c.tensors.at(role).make_tensor().to(kFloat32);
  const FixtureTensor& e = c.tensors.at("out");
  EXPECT_TRUE(all_close(call(c, t32), e.values, e.sizes, 1e-4, 1e-4)) << "float32";
}

std::vector<size_t> case_indices() {
  std::vector<size_t> idx;
  try {
    for (size_t i = 0; i < fixtures().size(); ++i) idx.push_back(i);
  } catch (const std::exception&) {
  }
  return idx;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, NormResampleFixture, ::testing::ValuesIn(case_indices()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return fixtures()[info.param].name; });

}  // namespace
}  // namespace graft::test
