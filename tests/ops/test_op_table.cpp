// Runs every record of the op table through the generic checks listed in tests/support/op_table.h.
#include <gtest/gtest.h>

#include <cmath>

#include <fstream>
#include <set>
#include <string>
#include <string_view>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

// Fresh leaves (float64) with requires_grad set as the record says.
TensorList prepare(const OpRecord& r, const TensorList& sample, DType float_dtype = kFloat64) {
  return record_inputs(r, sample, float_dtype);
}

std::string record_name(const OpRecord& r, size_t i) {
  std::string n = r.name + (r.variant.empty() ? "" : "_" + r.variant) + "_" + std::to_string(i);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

class OpTable : public ::testing::TestWithParam<size_t> {
 protected:
  const OpRecord& rec() const { return op_table()[GetParam()]; }
};

TEST_P(OpTable, ForwardMatchesReference) {
  const auto& r = rec();
  ASSERT_TRUE(r.fn && r.reference && r.samples) << r.name << ": a record needs fn, reference and samples";
  for (const auto& sample : r.samples()) {
    auto in = prepare(r, sample);
    Tensor expected = r.reference(in);
    Tensor got = r.fn(in);
    EXPECT_TRUE(all_close(got, expected, r.atol, r.rtol)) << r.name << " float64";
    if (r.float32) {
      auto in32 = prepare(r, sample, kFloat32);
      Tensor got32 = r.fn(in32);
      if (got.is_floating_point()) {
        EXPECT_EQ(got32.dtype(), kFloat32) << r.name;
      }
      EXPECT_TRUE(all_close(got32, expected, r.atol32, r.rtol32)) << r.name << " float32";
    }
  }
}

TEST_P(OpTable, HalfPrecisionForward) {
  const auto& r = rec();
  if (!r.half) GTEST_SKIP() << r.name << " has no half-precision record";
  for (DType half : {kBFloat16, kFloat16}) {
    // Within two units in the last place of the half dtype (8 significant bits for bfloat16, 11 for
    // float16), of the float64 reference computed on the inputs as the half dtype rounds them.
    const double rel = std::ldexp(1.0, half == kBFloat16 ? -6 : -9);
    for (const auto& sample : r.samples()) {
      TensorList in;
      for (const Tensor& t : sample) in.push_back(t.defined() && t.is_floating_point() ? t.detach().to(half) : t);
      TensorList in64;
      for (const Tensor& t : in) in64.push_back(t.defined() && t.is_floating_point() ? t.to(kFloat64) : t);
      const Tensor expected = r.reference(in64);
      const Tensor got = r.fn(in);
      if (expected.is_floating_point()) {
        EXPECT_EQ(got.dtype(), half) << r.name;
      }
      EXPECT_TRUE(all_close(got.to(expected.dtype()), expected, rel, rel)) << r.name << " " << dtype_name(half);
    }
  }
}

TEST_P(OpTable, NonContiguousInputs) {
  const auto& r = rec();
  if (!r.non_contiguous) GTEST_SKIP() << "record opts out";
  for (const auto& sample : r.samples()) {
    auto in = prepare(r, sample);
    TensorList nc;
    for (const auto& t : in) nc.push_back(t.defined() && t.dim() > 0 ? non_contiguous(t) : t);
    for (const auto& t : nc)
      if (t.defined() && t.dim() > 0 && t.numel() > 1) {
        EXPECT_FALSE(t.is_contiguous());
      }
    EXPECT_TRUE(all_close(r.fn(nc), r.fn(in), 0, 0)) << r.name;
  }
}

TEST_P(OpTable, Gradcheck) {
  const auto& r = rec();
  if (!r.gradcheck) GTEST_SKIP() << "not differentiable";
  for (const auto& sample : r.samples()) {
    auto in = prepare(r, sample);
    try {
      EXPECT_TRUE(autograd::gradcheck(r.fn, in)) << r.name;
    } catch (const Error& e) {
      ADD_FAILURE() << r.name << ": " << e.what();
    }
  }
}

TEST_P(OpTable, Gradgradcheck) {
  const auto& r = rec();
  if (!r.gradcheck || !r.gradgradcheck) GTEST_SKIP() << "no second derivative checked";
  for (const auto& sample : r.samples()) {
    auto in = prepare(r, sample);
    try {
      EXPECT_TRUE(autograd::gradgradcheck(r.fn, in)) << r.name;
    } catch (const Error& e) {
      ADD_FAILURE() << r.name << ": " << e.what();
    }
  }
}

// The gradients a recorded backward (create_graph) returns equal the plain backward's. For a fused
// op the two are different code: the kernel backward, and the differentiated composite (Note [The
// create_graph policy] in src/autograd/composite_backward.h), so this holds the composite to the
// kernel, and Gradgradcheck above then checks the composite's own derivative.
TEST_P(OpTable, CreateGraphGradientsMatchPlain) {
  const auto& r = rec();
  if (!r.gradcheck || !r.gradgradcheck) GTEST_SKIP() << "no second derivative checked";
  uint64_t seed = 500;
  for (const auto& sample : r.samples()) {
    auto in = prepare(r, sample);
    TensorList wrt;
    for (const Tensor& t : in)
      if (t.defined() && t.requires_grad()) wrt.push_back(t);
    if (wrt.empty()) continue;
    const Tensor y = r.fn(in);
    if (!y.requires_grad()) continue;
    const Tensor v = uniform_sample(y.sizes(), seed++, -1, 1);
    const TensorList plain = autograd::grad({y}, wrt, {v}, /*retain_graph=*/true, /*create_graph=*/false, true);
    const TensorList recorded = autograd::grad({y}, wrt, {v}, /*retain_graph=*/true, /*create_graph=*/true, true);
    for (size_t i = 0; i < wrt.size(); ++i) {
      const Tensor a = plain[i].defined() ? plain[i] : zeros_like(wrt[i]);
      const Tensor b = recorded[i].defined() ? recorded[i].detach() : zeros_like(wrt[i]);
      EXPECT_TRUE(all_close(b, a, 1e-9, 1e-9)) << r.name << " input " << i;
    }
  }
}

TEST_P(OpTable, InputUsedTwice) {
  const auto& r = rec();
  if (!r.gradcheck) GTEST_SKIP() << "not differentiable";
  for (const auto& sample : r.samples()) {
    auto in = prepare(r, sample);
    if (in.empty() || !in[0].requires_grad()) continue;
    std::vector<size_t> same;
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i].defined() && in[i].requires_grad() && in[i].sizes().equals(in[0].sizes())) same.push_back(i);
    autograd::TestFunction f;
    TensorList args{in[0]};
    if (!same.empty()) {
      // f(x) = op(x, ..., x, ...): the engine must add the gradients of both uses.
      f = [&](const TensorList& a) {
        TensorList call = in;
        call[0] = a[0];
        for (size_t i : same) call[i] = a[0];
        return r.fn(call);
      };
    } else {
      f = [&](const TensorList& a) {
        TensorList call = in;
        call[0] = a[0];
        Tensor y = r.fn(call);
        return y * r.fn(call);
      };
    }
    try {
      EXPECT_TRUE(autograd::gradcheck(f, args)) << r.name;
    } catch (const Error& e) {
      ADD_FAILURE() << r.name << ": " << e.what();
    }
  }
}

TEST_P(OpTable, ErrorInputs) {
  const auto& r = rec();
  for (const auto& e : r.errors) EXPECT_TRUE(throws_error(e.call, e.message_contains)) << r.name;
}

INSTANTIATE_TEST_SUITE_P(Ops, OpTable, ::testing::Range<size_t>(0, op_table().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return record_name(op_table()[info.param], info.param);
                         });

// Every op in GRAFT_FORALL_OPS has at least one record, and every record names a listed op.
TEST(OpCoverage, EveryOpHasARecord) {
  std::set<std::string> recorded;
  for (const auto& r : op_table()) recorded.insert(r.name);
  std::set<std::string> listed;
  for (auto n : ops::op_names()) {
    listed.insert(std::string(n));
    EXPECT_TRUE(recorded.count(std::string(n))) << "op '" << n << "' has no record in the op test table";
  }
  for (const auto& n : recorded) EXPECT_TRUE(listed.count(n)) << "record for unlisted op '" << n << "'";
}

// The name of the function a header line declares at namespace level when it returns Tensor,
// Tensor&, TensorList, bool, RNNLayerResult or a std::tuple (the pattern
// ^(inline )?(Tensor|Tensor&|TensorList|bool|RNNLayerResult|std::tuple<...>)
// name\( ), or "" for any other line. Parsed by hand: GCC 12's <regex> trips -Wmaybe-uninitialized
// in the sanitizer build.
std::string declared_op(std::string_view line) {
  if (line.starts_with("inline ")) line.remove_prefix(7);
  bool typed = false;
  for (std::string_view type : {"Tensor ", "Tensor& ", "TensorList ", "bool ", "RNNLayerResult "}) {
    if (line.starts_with(type)) {
      line.remove_prefix(type.size());
      typed = true;
      break;
    }
  }
  if (!typed && line.starts_with("std::tuple<")) {
    const size_t close = line.find('>');
    if (close == std::string_view::npos || close + 1 >= line.size() || line[close + 1] != ' ') return "";
    line.remove_prefix(close + 2);
    typed = true;
  }
  if (!typed) return "";
  size_t n = 0;
  while (n < line.size() && ((line[n] >= 'a' && line[n] <= 'z') || (line[n] >= '0' && line[n] <= '9') || line[n] == '_')) ++n;
  if (n == 0 || n >= line.size() || line[n] != '(') return "";
  return std::string(line.substr(0, n));
}

// Every op that the public headers declare is in GRAFT_FORALL_OPS (and so, by the test above, has
// records): a declaration returning a tensor, tensors or a bool at namespace level is an op.
TEST(OpCoverage, EveryPublicOpIsListed) {
  std::set<std::string> listed;
  for (auto n : ops::op_names()) listed.insert(std::string(n));
  // var_all / std_all are the all-dims forms behind var(x) / std(x) (a braced list must not pick them);
  // F::adaptive_max_pool2d_with_indices is LibTorch's name for the op adaptive_max_pool2d's pair;
  // F::interpolate only picks one of the upsample_* ops (their records cover it);
  // F::softmin (softmax of -x) and F::normalize (x / max(norm, eps)) are compositions of listed ops,
  // as in LibTorch, checked against PyTorch in tests/ops/test_act_loss_fixtures.cpp;
  // F::local_response_norm is PyTorch's composition (pad, avg_pool, pow), checked against PyTorch
  // in tests/nn/test_norm3d.cpp; F::triplet_margin_with_distance_loss is PyTorch's composition (a
  // user's distance or pairwise_distance, minimum, clamp_min, the reduction), checked against PyTorch
  // in tests/nn/test_loss2.cpp; F::dropout3d (feature_dropout of a volume batch, or of one volume
  // as a batch of one), F::alpha_dropout and F::feature_alpha_dropout (PyTorch's composition: a
  // Bernoulli keep from bernoulli_, then mul and add) are checked against the seeded draws in
  // tests/nn/test_modules_misc.cpp.
  // F::max_pool3d, F::avg_pool3d, F::adaptive_avg_pool3d, F::adaptive_max_pool1d/3d and the
  // _with_indices forms of max_pool1d/3d and adaptive_max_pool1d/3d are compositions of the listed 2-D
  // pools (Note [3-D pooling from the 2-D ops] in src/nn/modules/pooling.cpp), checked against PyTorch
  // in tests/nn/test_pool3d.cpp. F::max_unpool1d/2d/3d are a gather of the listed op with a backward
  // that gathers the gradient (Note [Max unpooling] there), F::lp_pool1d/2d PyTorch's composition
  // (pow, avg_pool, sign, relu, abs), checked against PyTorch in tests/nn/test_unpool_pad3d.cpp.
  // is_autocast_enabled (autocast.h) asks for the mode, it computes nothing; detail::attention_probs
  // and detail::attention_additive_mask (attention.h) are scaled_dot_product_attention's own formula,
  // shared with MultiheadAttention, not ops of their own.
  const std::set<std::string> not_ops = {"var_all",     "std_all", "adaptive_max_pool2d_with_indices",
                                         "interpolate", "softmin", "normalize", "local_response_norm", "is_autocast_enabled",
                                         "triplet_margin_with_distance_loss", "dropout3d", "alpha_dropout",
                                         "feature_alpha_dropout",
                                         "attention_probs", "attention_additive_mask",
                                         "max_pool3d", "max_pool3d_with_indices", "max_pool1d_with_indices",
                                         "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
                                         "adaptive_max_pool1d_with_indices", "adaptive_max_pool3d",
                                         "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d",
                                         "max_unpool3d", "lp_pool1d", "lp_pool2d"};
  size_t declared = 0;
  // Every ops header, so that an op declared beside its guard (attention.h, rnn.h) is seen too.
  for (const char* header : {"/include/graft/ops/ops.h", "/include/graft/ops/attention.h", "/include/graft/ops/rnn.h",
                             "/include/graft/ops/autocast.h", "/include/graft/nn/functional.h"}) {
    std::ifstream in(std::string(GRAFT_SOURCE_DIR) + header);
    ASSERT_TRUE(in) << "cannot read " << header;
    std::string line;
    while (std::getline(in, line)) {
      const std::string name = declared_op(line);
      if (name.empty() || not_ops.count(name)) continue;
      ++declared;
      EXPECT_TRUE(listed.count(name)) << header << " declares '" << name << "', which is not in GRAFT_FORALL_OPS";
    }
  }
  EXPECT_GT(declared, 100u);  // the pattern still matches the headers' style
}

TEST(OpCoverage, EveryRecordHasErrorCasesOrIsAView) {
  // Each op family tests its misuse; records may share error cases, but an op with none is a gap.
  std::set<std::string> with_errors;
  for (const auto& r : op_table())
    if (!r.errors.empty() || !r.no_misuse.empty()) with_errors.insert(r.name);
  for (auto n : ops::op_names()) EXPECT_TRUE(with_errors.count(std::string(n))) << "op '" << n << "' has no error case";
}

}  // namespace
}  // namespace graft::test
