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

#include "../support/fixture_file.h"
#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

const std::vector<FixtureCase>& norm_resample_fixtures() {
  static const std::vector<FixtureCase> cases = load_fixture_cases("norm_resample_fixtures.txt");
  return cases;
}

// Calls the case's function on the tensors in `t` (input, weight, bias, running_mean, running_var).
Tensor norm_resample_call(const FixtureCase& c, std::map<std::string, Tensor>& t) {
  auto param = [&](const char* k) { return c.number(k); };
  auto has = [&](const char* k) { return c.params.count(k) > 0; };
  auto get = [&](const char* role) { return t.count(role) ? t.at(role) : Tensor(); };
  if (c.kind == "group_norm")
    return F::group_norm(t.at("input"), F::GroupNormFuncOptions(static_cast<int64_t>(param("num_groups")))
                                            .weight(get("weight")).bias(get("bias")).eps(param("eps")));
  if (c.kind == "instance_norm")
    return F::instance_norm(t.at("input"), F::InstanceNormFuncOptions()
                                               .running_mean(get("running_mean")).running_var(get("running_var"))
                                               .weight(get("weight")).bias(get("bias"))
                                               .use_input_stats(param("use_input_stats") != 0)
                                               .momentum(param("momentum")).eps(param("eps")));
  if (c.kind == "interpolate") {
    F::InterpolateFuncOptions o;
    o.mode(c.params.at("mode") == "bilinear" ? kBilinear : kNearest);
    if (has("size")) {
      std::vector<int64_t> s;
      for (double v : c.numbers("size")) s.push_back(static_cast<int64_t>(v));
      o.size(s);
    } else {
      o.scale_factor(c.numbers("scale_factor"));
    }
    if (has("align_corners")) o.align_corners(param("align_corners") != 0);
    return F::interpolate(t.at("input"), o);
  }
  if (c.kind == "pad") {
    std::vector<int64_t> p;
    for (double v : c.numbers("pad")) p.push_back(static_cast<int64_t>(v));
    const std::string& m = c.params.at("mode");
    F::PadFuncOptions o(p);
    o.mode(m == "reflect" ? kReflect : m == "replicate" ? kReplicate : m == "circular" ? kCircular : kConstant);
    if (has("value")) o.value(param("value"));
    return F::pad(t.at("input"), o);
  }
  if (c.kind == "pixel_shuffle") return F::pixel_shuffle(t.at("input"), static_cast<int64_t>(param("factor")));
  if (c.kind == "pixel_unshuffle") return F::pixel_unshuffle(t.at("input"), static_cast<int64_t>(param("factor")));
  throw std::runtime_error("unknown fn " + c.kind);
}

constexpr double kNormResampleTol = 1e-10;

TEST(NormResampleFixtures, FileLoads) {
  ASSERT_NO_THROW(norm_resample_fixtures());
  std::map<std::string, int> per_fn;
  for (const auto& c : norm_resample_fixtures()) ++per_fn[c.kind];
  for (const char* fn : {"group_norm", "instance_norm", "interpolate", "pad", "pixel_shuffle", "pixel_unshuffle"})
    EXPECT_GT(per_fn[fn], 0) << "no fixture for " << fn;
}

class NormResampleFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(NormResampleFixture, ValuesAndGradientsMatchPyTorch) {
  const FixtureCase& c = norm_resample_fixtures()[GetParam()];
  SCOPED_TRACE(c.name);
  std::map<std::string, Tensor> t;
  for (const char* role : {"input", "weight", "bias", "running_mean", "running_var"})
    if (c.has(role)) t[role] = c.tensor(role).clone();  // the running statistics change in place
  for (const char* role : {"input", "weight", "bias"})
    if (t.count(role)) t[role].requires_grad_();
  Tensor out;
  try {
    out = norm_resample_call(c, t);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  const auto expect = [&](const Tensor& actual, const std::string& role) {
    EXPECT_TRUE(all_close(actual, c.tensor(role), kNormResampleTol, kNormResampleTol)) << role;
  };
  expect(out, "out");
  out.backward(c.tensor("grad_output"));
  for (const char* role : {"input", "weight", "bias"})
    if (t.count(role)) expect(t.at(role).grad(), std::string("grad_") + role);
  for (const char* role : {"running_mean", "running_var"})
    if (t.count(role)) expect(t.at(role), std::string(role) + "_after");
  // float32 gives the same to float32 precision.
  std::map<std::string, Tensor> t32;
  for (auto& [role, v] : t) t32[role] = v.detach().to(kFloat32);
  for (const char* role : {"running_mean", "running_var"})
    if (c.has(role)) t32[role] = c.tensor(role).to(kFloat32);
  EXPECT_TRUE(all_close(norm_resample_call(c, t32), c.tensor("out"), 1e-4, 1e-4)) << "float32";
}

std::vector<size_t> case_indices() {
  std::vector<size_t> idx;
  try {
    for (size_t i = 0; i < norm_resample_fixtures().size(); ++i) idx.push_back(i);
  } catch (const std::exception&) {
  }
  return idx;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, NormResampleFixture, ::testing::ValuesIn(case_indices()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return norm_resample_fixtures()[info.param].name;
                         });

}  // namespace
}  // namespace graft::test
