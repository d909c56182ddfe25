// Compact optimiser state (Note [Compact optimizer state] in graft/optim/state_precision.h): the
// 8-bit dynamic maps against the paper's construction, block-wise quantization against a plain
// linear scan, Adam and SGD steps with bfloat16 and 8-bit state against a float32 reference of the
// same formulas written out here (bit for bit, at 1 and 2 threads), state dicts, the memory
// accounting (CPU and meta) and convergence against float32 Adam.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "graft/graft.h"
#include "../../src/kernels/quantize.h"
#include "optim_test_helpers.h"

// (helpers in their own namespace: the unity build pastes this file into one translation unit with
// others, Note [Unity test builds])
namespace graft::test::compact_state {
namespace {

using optim::StatePrecision;

// ---- the reference: the paper's maps and a plain quantizer ----

// Dettmers et al.'s dynamic tree map as bitsandbytes builds it (create_dynamic_map(signed, 7, 8)):
// exponent e = 0..6 scales 10^-(6-e); the fraction bits left after the sign and the exponent's
// indicator give 2^e (signed) or 2^(e+1) (unsigned) linearly spaced midpoints of [0.1, 1]; plus 0
// and 1.
std::vector<float> paper_map(bool is_signed) {
  std::vector<float> map;
  for (int e = 0; e < 7; ++e) {
    const int pieces = is_signed ? 1 << e : 1 << (e + 1);
    const double scale = 1.0 / std::pow(10.0, 6 - e);
    for (int j = 0; j < pieces; ++j) {
      const double mid = 0.1 + 0.9 * (2 * j + 1) / (2.0 * pieces);  // the midpoint of piece j of [0.1, 1]
      map.push_back(static_cast<float>(mid * scale));
      if (is_signed) map.push_back(static_cast<float>(-mid * scale));
    }
  }
  map.push_back(0.0f);
  map.push_back(1.0f);
  std::sort(map.begin(), map.end());
  return map;
}

struct Quantized {
  std::vector<uint8_t> codes;
  std::vector<float> absmax;
};

// Blocks of 2048: absmax = max |x|; each x / absmax to the first map value at the least distance
// (a linear scan); an all-zero block to the code of 0.
Quantized ref_quantize(const std::vector<float>& x, bool is_signed) {
  const std::vector<float> map = paper_map(is_signed);
  Quantized q;
  q.codes.resize(x.size());
  for (size_t s = 0; s < x.size(); s += 2048) {
    const size_t e = std::min(x.size(), s + 2048);
    float a = 0;
    for (size_t i = s; i < e; ++i) a = std::max(a, std::fabs(x[i]));
    q.absmax.push_back(a);
    for (size_t i = s; i < e; ++i) {
      const float t = a == 0 ? 0.0f : x[i] / a;
      size_t best = 0;
      for (size_t k = 1; k < map.size(); ++k)
        if (std::fabs(t - map[k]) < std::fabs(t - map[best])) best = k;
      q.codes[i] = static_cast<uint8_t>(best);
    }
  }
  return q;
}

std::vector<float> ref_dequantize(const Quantized& q, bool is_signed) {
  const std::vector<float> map = paper_map(is_signed);
  std::vector<float> out(q.codes.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = map[q.codes[i]] * q.absmax[i / 2048];
  return out;
}

// float32 -> bfloat16 -> float32, nearest with ties to even, by comparing the two neighbours'
// distances in double (finite values).
float ref_round_bf16(float f) {
  const uint32_t lo_bits = std::bit_cast<uint32_t>(f) & 0xffff0000u;
  const float lo = std::bit_cast<float>(lo_bits), hi = std::bit_cast<float>(lo_bits + 0x10000u);
  const double dl = std::fabs(static_cast<double>(f) - lo), dh = std::fabs(static_cast<double>(hi) - f);
  if (dl != dh) return dl < dh ? lo : hi;
  return (lo_bits >> 16) & 1u ? hi : lo;
}

std::vector<float> floats(const Tensor& t) {
  const Tensor c = t.detach().to(kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}
std::vector<uint8_t> bytes(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<uint8_t>(c.data_ptr<uint8_t>(), c.data_ptr<uint8_t>() + c.numel());
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// PyTorch 1.13's single-tensor Adam/AdamW in float32, one element at a time (as in
// test_adam_update_loop.cpp; Note [Optimizer update loops] for the rounding).
struct AdamRef {
  bool adamw = false, amsgrad = false;
  double lr = 1e-2, wd = 0;
  int step = 0;
  void update(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v,
              std::vector<float>& vmax) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    ++step;
    const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    const float step_size = static_cast<float>(lr / bc1), bc2_sqrt = static_cast<float>(std::sqrt(bc2));
    for (size_t i = 0; i < p.size(); ++i) {
      float gi = g[i];
      if (adamw) p[i] = p[i] * static_cast<float>(1 - lr * wd);
      else if (wd != 0) gi = std::fma(static_cast<float>(wd), p[i], gi);
      m[i] = std::fma(static_cast<float>(1 - b1), gi, m[i] * static_cast<float>(b1));
      v[i] = std::fma(static_cast<float>(1 - b2) * gi, gi, v[i] * static_cast<float>(b2));
      float denom;
      if (amsgrad) {
        vmax[i] = std::max(vmax[i], v[i]);
        denom = std::sqrt(vmax[i]) / bc2_sqrt + static_cast<float>(eps);
      } else {
        denom = std::sqrt(v[i]) / bc2_sqrt + static_cast<float>(eps);
      }
      p[i] = p[i] + (-step_size * m[i]) / denom;
    }
  }
};

optim::AdamParamState& adam_state(optim::Optimizer& opt, const Tensor& p) {
  return *static_cast<optim::AdamParamState*>(opt.state_of(p));
}

// ---- (1) the maps and the quantizer ----

TEST(CompactState, DynamicMapsAreThePapersConstruction) {
  for (bool is_signed : {true, false}) {
    const std::vector<float> want = paper_map(is_signed);
    ASSERT_EQ(want.size(), 256u);
    const float* got = kernels::dynamic_map(is_signed);
    for (int k = 0; k < 256; ++k) EXPECT_EQ(got[k], want[static_cast<size_t>(k)]) << "code " << k;
    EXPECT_EQ(got[255], 1.0f);
    EXPECT_EQ(got[kernels::dynamic_map_zero_code(is_signed)], 0.0f);
  }
  // Hand-checked values: the smallest magnitudes (exponent 0: one midpoint, 0.55, signed; two,
  // 0.325 and 0.775, unsigned) and the largest below 1 ((0.1 + 0.9 * 127/128) for signed).
  EXPECT_EQ(kernels::dynamic_map(true)[128], 0.55e-6f);
  EXPECT_EQ(kernels::dynamic_map(true)[126], -0.55e-6f);
  EXPECT_EQ(kernels::dynamic_map(false)[1], 0.325e-6f);
  EXPECT_EQ(kernels::dynamic_map(true)[254], static_cast<float>(0.1 + 0.9 * 127.0 / 128.0));
  EXPECT_EQ(kernels::dynamic_map(true)[0], -static_cast<float>(0.1 + 0.9 * 127.0 / 128.0));
}

TEST(CompactState, BlockwiseQuantizationMatchesALinearScan) {
  manual_seed(3);
  const std::vector<float> map = paper_map(true);
  for (bool is_signed : {true, false}) {
    // 2.5 blocks of normal values over six orders of magnitude, then an all-zero block, then a
    // block with the exact midpoints between neighbouring codes (ties go to the lower code).
    std::vector<float> x = floats(randn({5120}) * exp(randn({5120}) * 3.0));
    if (!is_signed)
      for (float& v : x) v = std::fabs(v);
    x.resize(6144, 0.0f);
    x.insert(x.end(), 1.0f);
    for (size_t k = 0; k + 1 < map.size() && x.size() < 8192; ++k) {
      const double mid = (static_cast<double>(map[k]) + map[k + 1]) / 2;
      if (static_cast<float>(mid) == mid && (is_signed || mid >= 0)) x.push_back(static_cast<float>(mid));
    }
    x.push_back(is_signed ? -1.0f : 0.0f);
    const Tensor xt = tensor(std::vector<double>(x.begin(), x.end())).to(kFloat32);
    Tensor absmax;
    const Tensor codes = kernels::quantize_blockwise(xt, is_signed, absmax);
    const Quantized want = ref_quantize(x, is_signed);
    ASSERT_EQ(codes.dtype(), kUInt8);
    ASSERT_EQ(codes.sizes(), xt.sizes());
    ASSERT_EQ(absmax.numel(), 4);
    EXPECT_EQ(bytes(codes), want.codes);
    EXPECT_TRUE(same_bits(floats(absmax), want.absmax));
    EXPECT_TRUE(same_bits(floats(kernels::dequantize_blockwise(codes, absmax, is_signed)), ref_dequantize(want, is_signed)));
  }
}

// ---- (2), (3) steps against the reference ----

struct StepCase {
  bool adamw, amsgrad;
  double wd;
};

TEST(CompactState, Int8AdamStepsMatchTheFloat32ReferenceBitForBit) {
  const int threads_before = get_num_threads();
  for (const StepCase c : {StepCase{false, false, 0.0}, StepCase{true, true, 0.01}, StepCase{false, false, 0.02}}) {
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      manual_seed(11);
      Tensor w = (randn({100, 100}) * 0.5).requires_grad_();  // 10000 values: 4 full blocks and one of 1808
      std::unique_ptr<optim::Optimizer> opt;
      if (c.adamw)
        opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{w}, optim::AdamWOptions(1e-2).weight_decay(c.wd)
                                                                         .amsgrad(c.amsgrad).state_precision(StatePrecision::Int8));
      else
        opt = std::make_unique<optim::Adam>(std::vector<Tensor>{w}, optim::AdamOptions(1e-2).weight_decay(c.wd)
                                                                       .amsgrad(c.amsgrad).state_precision(StatePrecision::Int8));
      AdamRef ref{c.adamw, c.amsgrad, 1e-2, c.wd};
      std::vector<float> p = floats(w);
      Quantized m = ref_quantize(std::vector<float>(p.size(), 0.0f), true);
      Quantized v = ref_quantize(std::vector<float>(p.size(), 0.0f), false), vmax = v;
      for (int step = 0; step < 3; ++step) {
        const Tensor g = randn({100, 100}) * 0.1;
        w.mutable_grad() = g.clone();
        opt->step();
        // dequantize -> float32 Adam -> quantize
        std::vector<float> mf = ref_dequantize(m, true), vf = ref_dequantize(v, false), xf = ref_dequantize(vmax, false);
        ref.update(p, floats(g), mf, vf, xf);
        m = ref_quantize(mf, true);
        v = ref_quantize(vf, false);
        vmax = ref_quantize(xf, false);
        const auto& st = adam_state(*opt, w);
        ASSERT_EQ(st.exp_avg().dtype(), kUInt8);
        ASSERT_EQ(st.exp_avg_absmax().numel(), 5);
        EXPECT_TRUE(same_bits(floats(w), p)) << "step " << step << " threads " << threads;
        EXPECT_EQ(bytes(st.exp_avg()), m.codes);
        EXPECT_TRUE(same_bits(floats(st.exp_avg_absmax()), m.absmax));
        EXPECT_EQ(bytes(st.exp_avg_sq()), v.codes);
        EXPECT_TRUE(same_bits(floats(st.exp_avg_sq_absmax()), v.absmax));
        if (c.amsgrad) {
          EXPECT_EQ(bytes(st.max_exp_avg_sq()), vmax.codes);
          EXPECT_TRUE(same_bits(floats(st.max_exp_avg_sq_absmax()), vmax.absmax));
        }
      }
    }
  }
  set_num_threads(threads_before);
}

TEST(CompactState, BFloat16AdamStepsMatchAReferenceRoundingTheStateAfterEachUpdate) {
  const int threads_before = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    manual_seed(12);
    Tensor w = (randn({7, 1001}) * 0.5).requires_grad_();
    optim::Adam opt({w}, optim::AdamOptions(1e-2).weight_decay(0.01).state_precision(StatePrecision::BFloat16));
    AdamRef ref{false, false, 1e-2, 0.01};
    std::vector<float> p = floats(w), m(p.size(), 0.0f), v(p.size(), 0.0f), vmax;
    for (int step = 0; step < 3; ++step) {
      const Tensor g = randn({7, 1001}) * 0.1;
      w.mutable_grad() = g.clone();
      opt.step();
      ref.update(p, floats(g), m, v, vmax);
      for (float& x : m) x = ref_round_bf16(x);
      for (float& x : v) x = ref_round_bf16(x);
      const auto& st = adam_state(opt, w);
      ASSERT_EQ(st.exp_avg().dtype(), kBFloat16);
      EXPECT_FALSE(st.exp_avg_absmax().defined());
      EXPECT_TRUE(same_bits(floats(w), p)) << "step " << step;
      EXPECT_TRUE(same_bits(floats(st.exp_avg()), m));
      EXPECT_TRUE(same_bits(floats(st.exp_avg_sq()), v));
    }
  }
  set_num_threads(threads_before);
}

TEST(CompactState, SgdMomentumInBFloat16AndInt8MatchesTheReference) {
  for (StatePrecision precision : {StatePrecision::BFloat16, StatePrecision::Int8}) {
    manual_seed(13);
    Tensor w = randn({5000}).requires_grad_();
    optim::SGD opt({w}, optim::SGDOptions(0.1).momentum(0.9).state_precision(precision));
    std::vector<float> p = floats(w), buf(p.size(), 0.0f);
    for (int step = 0; step < 3; ++step) {
      const Tensor g = randn({5000});
      w.mutable_grad() = g.clone();
      opt.step();
      const std::vector<float> gf = floats(g);
      for (size_t i = 0; i < p.size(); ++i) {
        buf[i] = step == 0 ? gf[i] : std::fma(1.0f, gf[i], buf[i] * 0.9f);  // buf = g, then mom * buf + g
        p[i] = std::fma(-0.1f, buf[i], p[i]);
      }
      auto& st = *static_cast<optim::SGDParamState*>(opt.state_of(w));
      EXPECT_TRUE(same_bits(floats(w), p)) << optim::state_precision_name(precision) << " step " << step;
      if (precision == StatePrecision::BFloat16) {
        for (float& x : buf) x = ref_round_bf16(x);
        EXPECT_TRUE(same_bits(floats(st.momentum_buffer()), buf));
      } else {
        const Quantized q = ref_quantize(buf, true);
        EXPECT_EQ(bytes(st.momentum_buffer()), q.codes);
        EXPECT_TRUE(same_bits(floats(st.momentum_buffer_absmax()), q.absmax));
        buf = ref_dequantize(q, true);
      }
    }
  }
}

// ---- (4) state dicts ----
// Loading the 8-bit state needs ParamStateVisitor::compact in the optimiser base (the loader then
// keeps uint8/bfloat16 state and the block scales' own shape); without it the base casts every state
// tensor to the parameter's dtype and holds it to the parameter's shape, and the load of
// state.<id>.exp_avg_absmax ([5]) is refused.

TEST(CompactState, StateDictsSaveAndLoadTheCompactStateExactly) {
  for (StatePrecision precision : {StatePrecision::BFloat16, StatePrecision::Int8}) {
    SCOPED_TRACE(optim::state_precision_name(precision));
    manual_seed(14);
    const Tensor init = randn({100, 100});
    std::vector<Tensor> grads;
    for (int i = 0; i < 5; ++i) grads.push_back(randn({100, 100}) * 0.1);
    Tensor a = init.clone().requires_grad_(), b = init.clone().requires_grad_();
    const auto options = optim::AdamOptions(1e-2).amsgrad(true).state_precision(precision);
    optim::Adam opt_a({a}, options), opt_b({b}, options);
    for (int i = 0; i < 3; ++i) {
      a.mutable_grad() = grads[static_cast<size_t>(i)].clone();
      opt_a.step();
    }
    const auto sd = opt_a.state_dict();
    const DType want = precision == StatePrecision::Int8 ? kUInt8 : kBFloat16;
    EXPECT_EQ(sd["state.0.exp_avg"].dtype(), want);
    EXPECT_EQ(sd["state.0.exp_avg_sq"].dtype(), want);
    EXPECT_EQ(sd["state.0.max_exp_avg_sq"].dtype(), want);
    EXPECT_EQ(sd.contains("state.0.exp_avg_absmax"), precision == StatePrecision::Int8);
    if (precision == StatePrecision::Int8) {
      EXPECT_EQ(sd["state.0.exp_avg_sq_absmax"].sizes(), (std::vector<int64_t>{5}));
    }
    b.detach().copy_(a.detach());
    opt_b.load_state_dict(sd);
    for (int i = 3; i < 5; ++i) {
      a.mutable_grad() = grads[static_cast<size_t>(i)].clone();
      b.mutable_grad() = grads[static_cast<size_t>(i)].clone();
      opt_a.step();
      opt_b.step();
    }
    EXPECT_TRUE(same_bits(floats(a), floats(b)));
    const auto& sa = adam_state(opt_a, a);
    const auto& sb = adam_state(opt_b, b);
    EXPECT_EQ(sb.exp_avg().dtype(), want);
    EXPECT_TRUE(same_bits(floats(sa.exp_avg()), floats(sb.exp_avg())));
    EXPECT_TRUE(same_bits(floats(sa.exp_avg_sq()), floats(sb.exp_avg_sq())));
    EXPECT_TRUE(same_bits(floats(sa.max_exp_avg_sq()), floats(sb.max_exp_avg_sq())));
  }
}

TEST(CompactState, ChangingThePrecisionConvertsTheStateAtTheNextStep) {
  manual_seed(15);
  Tensor w = randn({6000}).requires_grad_();
  optim::Adam opt({w}, optim::AdamOptions(1e-2));
  w.mutable_grad() = randn({6000});
  opt.step();
  const std::vector<float> m_full = floats(adam_state(opt, w).exp_avg());
  static_cast<optim::AdamOptions&>(opt.param_groups()[0].options()).state_precision(StatePrecision::Int8);
  w.mutable_grad() = zeros({6000});
  opt.step();  // the full m quantized, read back, m = 0.9 * m (zero gradient), quantized again
  const std::vector<float> m_read = ref_dequantize(ref_quantize(m_full, true), true);
  std::vector<float> m_next(m_full.size());
  for (size_t i = 0; i < m_full.size(); ++i) m_next[i] = std::fma(0.1f, 0.0f, m_read[i] * 0.9f);
  const Quantized want = ref_quantize(m_next, true);
  EXPECT_EQ(bytes(adam_state(opt, w).exp_avg()), want.codes);
  EXPECT_TRUE(same_bits(floats(adam_state(opt, w).exp_avg_absmax()), want.absmax));
}

// ---- (5) memory ----

// A 3-parameter model: 8192 and 5000 values (8-bit: 4 and 3 blocks) and a bias of 10 (< 4096 values:
// float32 state at int8).
int64_t adam_state_bytes(StatePrecision precision, Device device) {
  const auto opts = TensorOptions().device(device);
  std::vector<Tensor> params = {randn({64, 128}, opts).requires_grad_(), randn({100, 50}, opts).requires_grad_(),
                                randn({10}, opts).requires_grad_()};
  const int64_t before = memory::stats(device)[memory::Category::OptimizerState].current_bytes;
  optim::Adam opt(params, optim::AdamOptions(1e-3).state_precision(precision));
  for (Tensor& p : params) p.mutable_grad() = zeros(p.sizes(), opts);
  opt.step();
  return memory::stats(device)[memory::Category::OptimizerState].current_bytes - before;
}

TEST(CompactState, MemoryStatsCountTheCompactBytesOnTheCpuAndOnMeta) {
  // Two moments each: 4 bytes a value at full precision, 2 at bfloat16, 1 + 4 per block of 2048 at
  // int8 (the bias keeps 4).
  const int64_t full = 2 * 4 * (8192 + 5000 + 10);
  const int64_t bf16 = 2 * 2 * (8192 + 5000 + 10);
  const int64_t int8 = 2 * ((8192 + 4 * 4) + (5000 + 3 * 4) + 4 * 10);
  for (Device device : {kCPU, kMeta}) {
    EXPECT_EQ(adam_state_bytes(StatePrecision::Full, device), full);
    EXPECT_EQ(adam_state_bytes(StatePrecision::BFloat16, device), bf16);
    EXPECT_EQ(adam_state_bytes(StatePrecision::Int8, device), int8);
  }
}

// ---- (6) convergence ----

// Full-batch Adam on a noisy 4-class problem in 2 dimensions (overlapping classes and a quarter of
// the labels random: too many points to learn by heart, so the loss stays well above 0) with an MLP
// 2-96-96-4 whose 96x96 weight gets 8-bit state (the others are under 4096 values): the mean loss
// of the last 20 of 300 steps.
double final_loss(StatePrecision precision) {
  manual_seed(21);
  const Tensor centers = randn({4, 2}) * 1.5;
  Tensor y = randint(0, 4, {2048});
  const Tensor x = centers.index_select(0, y) + randn({2048, 2});
  y = where(rand({2048}).lt(0.25), randint(0, 4, {2048}), y);
  manual_seed(22);
  nn::Sequential model(nn::Linear(2, 96), nn::ReLU(), nn::Linear(96, 96), nn::ReLU(), nn::Linear(96, 4));
  optim::Adam opt(model->parameters(), optim::AdamOptions(3e-3).state_precision(precision));
  double sum = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    const Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    if (step >= 280) sum += loss.item<double>();
  }
  return sum / 20;
}

TEST(CompactState, AdamConvergesWithinTwoPercentOfFloat32) {
  const double full = final_loss(StatePrecision::Full);
  const double bf16 = final_loss(StatePrecision::BFloat16);
  const double int8 = final_loss(StatePrecision::Int8);
  std::printf("[ losses  ] float32 %.5f, bfloat16 %.5f (%+.2f%%), int8 %.5f (%+.2f%%)\n", full, bf16,
              100 * (bf16 / full - 1), int8, 100 * (int8 / full - 1));
  EXPECT_GT(full, 0.3);  // a loss that has not collapsed to 0, so 2% means something
  // Not worse than float32's by more than 2%; a lower loss is another trajectory, not an error, but
  // one far lower (5%) would mean the compact state changed the optimiser rather than rounded it.
  EXPECT_LT(bf16, 1.02 * full);
  EXPECT_LT(int8, 1.02 * full);
  EXPECT_GT(bf16, 0.95 * full);
  EXPECT_GT(int8, 0.95 * full);
}

}  // namespace
}  // namespace graft::test::compact_state
