// Note [PyTorch's random streams]: after the same manual_seed graft draws what PyTorch 1.13 draws
// on the CPU. Every expected value comes from tests/fixtures/random_fixtures.txt, written by
// PyTorch through tests/fixtures/gen_random_fixtures.py (format there); the Mersenne Twister
// itself is checked against the reference sequence of Matsumoto and Nishimura's mt19937.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

struct Fixture {
  std::string dtype;
  std::vector<double> values;
};

const std::map<std::string, Fixture>& fixtures() {
  static const std::map<std::string, Fixture> rows = [] {
    std::map<std::string, Fixture> m;
    std::ifstream in(std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "random_fixtures.txt");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ss(line);
      std::string name;
      Fixture f;
      size_t n = 0;
      ss >> name >> f.dtype >> n;
      f.values.resize(n);
      for (double& v : f.values) ss >> v;
      m[name] = f;
    }
    return m;
  }();
  return rows;
}

// The tensor's values (in logical order) equal PyTorch's exactly, dtype included.
::testing::AssertionResult same_as_pytorch(const std::string& name, const Tensor& t) {
  const auto it = fixtures().find(name);
  if (it == fixtures().end()) return ::testing::AssertionFailure() << "no fixture " << name;
  if (it->second.dtype != dtype_name(t.dtype()))
    return ::testing::AssertionFailure() << name << ": dtype " << dtype_name(t.dtype()) << ", PyTorch's "
                                         << it->second.dtype;
  const std::vector<double> got = values(t.to(kFloat64));
  if (got.size() != it->second.values.size())
    return ::testing::AssertionFailure() << name << ": " << got.size() << " values, PyTorch's " << it->second.values.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != it->second.values[i])
      return ::testing::AssertionFailure() << name << "[" << i << "]: " << got[i] << ", PyTorch's "
                                           << it->second.values[i];
  return ::testing::AssertionSuccess();
}

TEST(RandomStreams, MersenneTwisterMatchesTheReferenceSequence) {
  // mt19937 seeded with 5489 (the reference's default): its 10000th output is 4123659995
  // (the value the C++ standard requires of std::mt19937, [rand.predef]).
  Generator g(5489);
  uint32_t v = 0;
  for (int i = 0; i < 10000; ++i) v = g.random();
  EXPECT_EQ(v, 4123659995U);
  // random64 is two draws, the first the high half.
  Generator a(5489), b(5489);
  const uint64_t hi = a.random(), lo = a.random();
  EXPECT_EQ(b.random64(), (hi << 32) | lo);
}

TEST(RandomStreams, RandnMatchesPyTorchForEverySizeAndDtype) {
  for (int n : {1, 3, 15, 16, 17, 40}) {
    manual_seed(static_cast<uint64_t>(n));
    EXPECT_TRUE(same_as_pytorch("randn_f32_" + std::to_string(n), randn({n})));
    manual_seed(static_cast<uint64_t>(n));
    EXPECT_TRUE(same_as_pytorch("randn_f64_" + std::to_string(n), randn({n}, kFloat64)));
  }
  // The cached second normal carries across calls; blocks of 16 leave it alone.
  manual_seed(0);
  EXPECT_TRUE(same_as_pytorch("randn_seq_a", randn({2, 2})));
  EXPECT_TRUE(same_as_pytorch("randn_seq_b", randn({3})));
  EXPECT_TRUE(same_as_pytorch("randn_seq_c", randn({3, 4})));
  EXPECT_TRUE(same_as_pytorch("randn_seq_d", randn({20})));
  EXPECT_TRUE(same_as_pytorch("randn_seq_e", randn({1})));
  manual_seed(3);
  EXPECT_TRUE(same_as_pytorch("randn_f16_5", randn({5}, kFloat16)));
  EXPECT_TRUE(same_as_pytorch("randn_bf16_5", randn({5}, kBFloat16)));
}

TEST(RandomStreams, UniformAndNormalFillsMatchPyTorch) {
  manual_seed(1);
  EXPECT_TRUE(same_as_pytorch("rand_f32_20", rand({20})));
  EXPECT_TRUE(same_as_pytorch("rand_f64_5", rand({5}, kFloat64)));
  EXPECT_TRUE(same_as_pytorch("rand_f16_5", rand({5}, kFloat16)));
  EXPECT_TRUE(same_as_pytorch("rand_bf16_5", rand({5}, kBFloat16)));
  manual_seed(2);
  EXPECT_TRUE(same_as_pytorch("uniform_f32", empty({7}).uniform_(-2, 3)));
  EXPECT_TRUE(same_as_pytorch("uniform_f64", empty({7}, kFloat64).uniform_(-2, 3)));
  manual_seed(4);
  EXPECT_TRUE(same_as_pytorch("normal_f32_contig", empty({20}).normal_(1.5, 2.0)));
  // A strided tensor: value by value, in memory order.
  Tensor t = empty({4, 5}).t();
  t.normal_(1.5, 2.0);
  EXPECT_TRUE(same_as_pytorch("normal_f32_strided", t));
}

TEST(RandomStreams, IntegersPermutationsAndBernoulliMatchPyTorch) {
  manual_seed(5);
  EXPECT_TRUE(same_as_pytorch("randint_small", randint(-5, 7, {10})));
  EXPECT_TRUE(same_as_pytorch("randint_wide", randint(0, int64_t{1} << 40, {4})));
  EXPECT_TRUE(same_as_pytorch("randint_f32", randint(3, 10, {5}, kFloat32)));
  EXPECT_TRUE(same_as_pytorch("random_int32", empty({6}, kInt32).random_(-3, 3)));
  manual_seed(6);
  EXPECT_TRUE(same_as_pytorch("randperm_10", randperm(10)));
  EXPECT_TRUE(same_as_pytorch("randperm_1", randperm(1)));
  EXPECT_TRUE(same_as_pytorch("randperm_f32_5", randperm(5, kFloat32)));
  manual_seed(7);
  EXPECT_TRUE(same_as_pytorch("bernoulli_f32", empty({12}).bernoulli_(0.3)));
  EXPECT_TRUE(same_as_pytorch("dropout", F::dropout(arange(1.0, 11.0), F::DropoutFuncOptions().p(0.4).training(true))));
  EXPECT_TRUE(same_as_pytorch("dropout2d", F::dropout2d(ones({2, 3, 2, 2}), F::Dropout2dFuncOptions().p(0.5).training(true))));
  EXPECT_TRUE(same_as_pytorch("alpha_dropout",
                              F::alpha_dropout(arange(1.0, 9.0), F::AlphaDropoutFuncOptions().p(0.3).training(true))));
  manual_seed(8);
  EXPECT_TRUE(same_as_pytorch(
      "rrelu", F::rrelu(tensor({1.0f, -1.0f, 0.0f, 2.0f, -3.0f, -0.5f}),
                        F::RReLUFuncOptions().lower(0.1).upper(0.3).training(true))));
}

TEST(RandomStreams, ModuleInitialisationMatchesPyTorch) {
  manual_seed(9);
  nn::Linear lin(4, 3);
  EXPECT_TRUE(same_as_pytorch("linear_weight", lin->weight));
  EXPECT_TRUE(same_as_pytorch("linear_bias", lin->bias));
  manual_seed(10);
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3));
  EXPECT_TRUE(same_as_pytorch("conv_weight", conv->weight));
  EXPECT_TRUE(same_as_pytorch("conv_bias", conv->bias));
  manual_seed(11);
  EXPECT_TRUE(same_as_pytorch("kaiming_normal", nn::init::kaiming_normal_(empty({6, 5}))));
  EXPECT_TRUE(same_as_pytorch("xavier_uniform", nn::init::xavier_uniform_(empty({3, 4}))));
  // orthogonal_: the same draws; graft's Gram-Schmidt and LAPACK's Householder QR round differently.
  manual_seed(12);
  const Tensor q = nn::init::orthogonal_(empty({3, 5}));
  const auto& want = fixtures().at("orthogonal").values;
  const std::vector<double> got = values(q.to(kFloat64));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(RandomStreams, StateBytesAreTorchGetRngStates) {
  manual_seed(13);
  (void)randn({3});  // leaves the pair's second value cached
  const std::vector<uint8_t> bytes = default_generator().state_bytes();
  const auto& want = fixtures().at("state_bytes").values;
  ASSERT_EQ(bytes.size(), want.size());
  for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(static_cast<double>(bytes[i]), want[i]) << "byte " << i;
  EXPECT_TRUE(same_as_pytorch("state_next", randn({3})));
  // PyTorch's bytes, read back into a fresh generator, draw what PyTorch drew next.
  std::vector<uint8_t> theirs(want.begin(), want.end());
  Generator g(1);
  g.set_state(Generator::state_from_bytes(theirs.data(), theirs.size()));
  EXPECT_TRUE(same_as_pytorch("state_next", randn({3}, kFloat32, &g)));
}

TEST(RandomStreams, LibTorchsTensorStateAndSeed) {
  // get_state() / set_state(Tensor): torch.get_rng_state()'s bytes as a uint8 tensor.
  Generator g(13);
  (void)randn({3}, kFloat32, &g);
  const Tensor st = g.get_state();
  EXPECT_EQ(st.dtype(), kUInt8);
  const auto& want = fixtures().at("state_bytes").values;
  EXPECT_EQ(values(st.to(kFloat64)), want);
  Generator h(1);
  h.set_state(st);
  EXPECT_TRUE(same_as_pytorch("state_next", randn({3}, kFloat32, &h)));
  EXPECT_TRUE(throws_error([&] { h.set_state(zeros({5056})); }, {"Generator::set_state", "uint8", "float32"}));
  EXPECT_TRUE(throws_error([&] { h.set_state(Tensor()); }, {"Generator::set_state", "undefined"}));
  // seed(): a fresh seed, reported by current_seed() and replayed by manual_seed.
  const uint64_t s = h.seed();
  EXPECT_EQ(h.current_seed(), s);
  const Tensor a = randn({4}, kFloat32, &h);
  Generator k(s);
  EXPECT_TRUE(equal(randn({4}, kFloat32, &k), a));
}

TEST(RandomStreams, DamagedStatesAreErrors) {
  std::vector<uint8_t> good = Generator(3).state_bytes();
  EXPECT_TRUE(throws_error([&] { Generator::state_from_bytes(good.data(), 100); },
                           {"Generator::state_from_bytes", "5056 bytes", "100 bytes"}));
  std::vector<uint8_t> unseeded = good;
  unseeded[12] = 0;  // the seeded flag
  EXPECT_TRUE(throws_error([&] { Generator::state_from_bytes(unseeded.data(), unseeded.size()); }, {"seeded 0"}));
  std::vector<uint8_t> past_end = good;
  past_end[8] = 200;  // left 200 with next 624: the draws would run past the 624 words
  past_end[16] = 0x70;
  past_end[17] = 0x02;
  EXPECT_TRUE(throws_error([&] { Generator::state_from_bytes(past_end.data(), past_end.size()); },
                           {"Generator::set_state", "left 200, next 624"}));
  Generator::State st;
  st.left = 0;
  Generator g;
  EXPECT_TRUE(throws_error([&] { g.set_state(st); }, {"left in [1, 624]", "left 0"}));
  EXPECT_TRUE(g.state() == Generator().state()) << "a refused state changes nothing";
}

TEST(RandomStreams, BadArgumentsAreErrorsAndDrawNothing) {
  manual_seed(21);
  const Generator::State before = default_generator().state();
  EXPECT_TRUE(throws_error([] { randperm(-1); }, {"randperm", "n >= 0", "n -1"}));
  EXPECT_TRUE(throws_error([] { randperm(3, kBool); }, {"randperm", "bool"}));
  EXPECT_TRUE(throws_error([] { rand({2}, kInt64); }, {"rand", "floating-point", "int64"}));
  EXPECT_TRUE(throws_error([] { randint(5, 5, {2}); }, {"randint", "low < high"}));
  EXPECT_TRUE(throws_error([] { empty({2}, kBool).random_(0, 3); }, {"random_", "bool"}));
  EXPECT_TRUE(throws_error([] { empty({2}).bernoulli_(1.5); }, {"bernoulli_", "[0, 1]"}));
  EXPECT_TRUE(default_generator().state() == before) << "a refused call draws nothing";
  // An empty permutation and an empty tensor draw nothing either.
  EXPECT_EQ(randperm(0).numel(), 0);
  EXPECT_EQ(randn({0, 3}).numel(), 0);
  EXPECT_TRUE(default_generator().state() == before);
}

}  // namespace
}  // namespace graft::test
