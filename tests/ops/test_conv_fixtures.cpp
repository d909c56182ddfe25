// conv2d, the 2-D pools, batch_norm (running statistics included) and layer_norm against outputs
// and gradients computed by PyTorch itself. tests/fixtures/conv_fixtures.txt is written by
// tests/fixtures/gen_conv_fixtures.py (format in its docstring); this test needs no PyTorch.
// ConvNdFixtures: conv1d, conv3d, conv_transpose1d, the 1-D pools and adaptive_max_pool2d, from
// tests/fixtures/conv_nd_fixtures.txt (gen_conv_nd_fixtures.py, the same format).
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

struct Case {
  std::string name, fn;
  std::map<std::string, std::vector<double>> params;
  std::map<std::string, Tensor> t;

  int64_t i(const std::string& k, size_t at = 0) const { return static_cast<int64_t>(params.at(k).at(at)); }
  ExpandingArray<2> pair(const std::string& k) const { return {i(k, 0), i(k, 1)}; }
  bool flag(const std::string& k) const { return params.at(k).at(0) != 0; }
  Tensor get(const std::string& k) const { return t.count(k) ? t.at(k) : Tensor(); }
};

std::vector<Case> load_conv_cases(const std::string& file = "conv_fixtures.txt") {
  std::ifstream f(std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / file);
  EXPECT_TRUE(f.good()) << "tests/fixtures/" << file << " is missing";
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    if (kind == "case") {
      cases.emplace_back();
      in >> cases.back().name >> cases.back().fn;
    } else if (kind == "param") {
      std::string key, tok;
      in >> key;
      while (in >> tok) cases.back().params[key].push_back(std::strtod(tok.c_str(), nullptr));
    } else if (kind == "t") {
      std::string role;
      int64_t ndim = 0;
      in >> role >> ndim;
      std::vector<int64_t> sizes(static_cast<size_t>(ndim));
      for (auto& s : sizes) in >> s;
      std::vector<double> v;
      std::string tok;
      while (in >> tok) v.push_back(std::strtod(tok.c_str(), nullptr));
      cases.back().t[role] = make(v, sizes);
    } else {
      EXPECT_EQ(kind, "end") << line.substr(0, 40);
    }
  }
  return cases;
}

// Runs the case's op on `a` (input, weight, bias in `dtype`); running stats are fresh copies.
Tensor run_conv_case(const Case& c, const std::map<std::string, Tensor>& a, Tensor* indices, Tensor* rm, Tensor* rv) {
  const auto arg = [&](const char* k) { return a.count(k) ? a.at(k) : Tensor(); };
  const Tensor x = arg("input");
  if (c.fn == "conv2d")
    return F::conv2d(x, arg("weight"), arg("bias"),
                     F::Conv2dFuncOptions().stride(c.pair("stride")).padding(c.pair("padding")).dilation(c.pair("dilation")).groups(c.i("groups")));
  if (c.fn == "max_pool2d") {
    auto [y, idx] = F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(c.pair("kernel_size"))
                                                       .stride(c.pair("stride"))
                                                       .padding(c.pair("padding"))
                                                       .dilation(c.pair("dilation"))
                                                       .ceil_mode(c.flag("ceil_mode")));
    *indices = idx;
    return y;
  }
  if (c.fn == "avg_pool2d") {
    auto o = F::AvgPool2dFuncOptions(c.pair("kernel_size")).stride(c.pair("stride")).padding(c.pair("padding"))
                 .ceil_mode(c.flag("ceil_mode")).count_include_pad(c.flag("count_include_pad"));
    if (c.params.count("divisor_override")) o.divisor_override(c.i("divisor_override"));
    return F::avg_pool2d(x, o);
  }
  if (c.fn == "adaptive_avg_pool2d") return F::adaptive_avg_pool2d(x, c.pair("output_size"));
  if (c.fn == "batch_norm") {
    *rm = c.get("running_mean").defined() ? c.get("running_mean").to(x.dtype(), false, true) : Tensor();
    *rv = c.get("running_var").defined() ? c.get("running_var").to(x.dtype(), false, true) : Tensor();
    return F::batch_norm(x, *rm, *rv, F::BatchNormFuncOptions().weight(arg("weight")).bias(arg("bias"))
                                          .training(c.flag("training")).momentum(c.params.at("momentum")[0])
                                          .eps(c.params.at("eps")[0]));
  }
  if (c.fn == "layer_norm") {
    std::vector<int64_t> ns;
    for (double d : c.params.at("normalized_shape")) ns.push_back(static_cast<int64_t>(d));
    return F::layer_norm(x, F::LayerNormFuncOptions(ns).weight(arg("weight")).bias(arg("bias")).eps(c.params.at("eps")[0]));
  }
  ADD_FAILURE() << "unknown fn " << c.fn;
  return {};
}

TEST(ConvFixtures, MatchPyTorch) {
  const auto cases = load_conv_cases();
  ASSERT_GE(cases.size(), 30u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    for (DType dt : {kFloat64, kFloat32}) {
      const double tol = dt == kFloat64 ? 1e-10 : 2e-4;
      std::map<std::string, Tensor> a;
      for (const char* k : {"input", "weight", "bias"})
        if (c.t.count(k)) a[k] = c.t.at(k).to(dt, false, true).requires_grad_(dt == kFloat64);
      Tensor idx, rm, rv;
      const Tensor y = run_conv_case(c, a, &idx, &rm, &rv);
      EXPECT_TRUE(all_close(y, c.t.at("out"), tol, tol)) << dtype_name(dt);
      if (c.t.count("indices")) {
        EXPECT_TRUE(all_close(idx, c.t.at("indices"), 0, 0));
      }
      if (c.t.count("running_mean_after")) {
        EXPECT_TRUE(all_close(rm, c.t.at("running_mean_after"), tol, tol)) << dtype_name(dt);
        EXPECT_TRUE(all_close(rv, c.t.at("running_var_after"), tol, tol)) << dtype_name(dt);
      }
      if (dt != kFloat64) continue;
      y.backward(c.t.at("grad_output"));
      for (const auto& [k, leaf] : a) {
        ASSERT_TRUE(c.t.count("grad_" + k)) << k;
        EXPECT_TRUE(all_close(leaf.grad(), c.t.at("grad_" + k), 1e-10, 1e-10)) << "grad_" << k;
      }
    }
  }
}

// ---- conv1d, conv3d, conv_transpose1d, 1-D pools, adaptive_max_pool2d ----

template <size_t D>
ExpandingArray<D> sizes(const Case& c, const std::string& k) {
  std::array<int64_t, D> a{};
  for (size_t j = 0; j < D; ++j) a[j] = c.i(k, j);
  return a;
}

Tensor run_nd(const Case& c, const std::map<std::string, Tensor>& a, Tensor* indices) {
  const auto arg = [&](const char* k) { return a.count(k) ? a.at(k) : Tensor(); };
  const Tensor x = arg("input");
  if (c.fn == "conv1d")
    return F::conv1d(x, arg("weight"),
                     F::Conv1dFuncOptions()
                         .bias(arg("bias"))
                         .stride(sizes<1>(c, "stride"))
                         .padding(sizes<1>(c, "padding"))
                         .dilation(sizes<1>(c, "dilation"))
                         .groups(c.i("groups")));
  if (c.fn == "conv3d")
    return F::conv3d(x, arg("weight"),
                     F::Conv3dFuncOptions()
                         .bias(arg("bias"))
                         .stride(sizes<3>(c, "stride"))
                         .padding(sizes<3>(c, "padding"))
                         .dilation(sizes<3>(c, "dilation"))
                         .groups(c.i("groups")));
  if (c.fn == "conv_transpose1d")
    return F::conv_transpose1d(x, arg("weight"),
                               F::ConvTranspose1dFuncOptions()
                                   .bias(arg("bias"))
                                   .stride(sizes<1>(c, "stride"))
                                   .padding(sizes<1>(c, "padding"))
                                   .output_padding(sizes<1>(c, "output_padding"))
                                   .groups(c.i("groups"))
                                   .dilation(sizes<1>(c, "dilation")));
  if (c.fn == "max_pool1d")
    return F::max_pool1d(x, F::MaxPool1dFuncOptions(c.i("kernel_size"))
                                .stride(c.i("stride"))
                                .padding(c.i("padding"))
                                .dilation(c.i("dilation"))
                                .ceil_mode(c.flag("ceil_mode")));
  if (c.fn == "avg_pool1d")
    return F::avg_pool1d(x, F::AvgPool1dFuncOptions(c.i("kernel_size"))
                                .stride(c.i("stride"))
                                .padding(c.i("padding"))
                                .ceil_mode(c.flag("ceil_mode"))
                                .count_include_pad(c.flag("count_include_pad")));
  if (c.fn == "adaptive_avg_pool1d") return F::adaptive_avg_pool1d(x, c.i("output_size"));
  if (c.fn == "adaptive_max_pool2d") {
    auto [y, idx] = F::adaptive_max_pool2d_with_indices(x, c.pair("output_size"));
    *indices = idx;
    return y;
  }
  ADD_FAILURE() << "unknown fn " << c.fn;
  return {};
}

TEST(ConvNdFixtures, MatchPyTorch) {
  const auto cases = load_conv_cases("conv_nd_fixtures.txt");
  ASSERT_GE(cases.size(), 25u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    for (DType dt : {kFloat64, kFloat32}) {
      const double tol = dt == kFloat64 ? 1e-10 : 2e-4;
      std::map<std::string, Tensor> a;
      for (const char* k : {"input", "weight", "bias"})
        if (c.t.count(k)) a[k] = c.t.at(k).to(dt, false, true).requires_grad_(dt == kFloat64);
      Tensor idx;
      const Tensor y = run_nd(c, a, &idx);
      EXPECT_TRUE(all_close(y, c.t.at("out"), tol, tol)) << dtype_name(dt);
      if (c.t.count("indices")) {
        EXPECT_TRUE(all_close(idx, c.t.at("indices"), 0, 0));
      }
      if (dt != kFloat64) continue;
      y.backward(c.t.at("grad_output"));
      for (const auto& [k, leaf] : a) {
        ASSERT_TRUE(c.t.count("grad_" + k)) << k;
        EXPECT_TRUE(all_close(leaf.grad(), c.t.at("grad_" + k), 1e-10, 1e-10)) << "grad_" << k;
      }
    }
  }
}

}  // namespace
}  // namespace graft::test
