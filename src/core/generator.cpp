// PyTorch's CPU generator: a 32-bit Mersenne Twister (Matsumoto & Nishimura, 1998) with at::mt19937's
// seeding, and the state layout of torch.get_rng_state(). See Note [PyTorch's random streams].
#include "graft/core/generator.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <string>

#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/tensor.h"

namespace graft {

namespace {
constexpr int kN = 624, kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU, kUpper = 0x80000000U, kLower = 0x7fffffffU;

uint32_t twist(uint32_t u, uint32_t v) { return (((u & kUpper) | (v & kLower)) >> 1) ^ ((v & 1U) ? kMatrixA : 0U); }

// Regenerates all 624 words (the standard mt19937 recurrence).
void next_state(Generator::State& s) {
  uint32_t* p = s.mt.data();
  for (int j = 0; j < kN - kM; ++j) p[j] = p[j + kM] ^ twist(p[j], p[j + 1]);
  for (int j = kN - kM; j < kN - 1; ++j) p[j] = p[j + kM - kN] ^ twist(p[j], p[j + 1]);
  p[kN - 1] = p[kM - 1] ^ twist(p[kN - 1], p[0]);
  s.left = kN;
  s.next = 0;
}

// torch.get_rng_state()'s layout (CPUGeneratorImplState on x86-64 and aarch64): the legacy TH
// state (seed, left, seeded, next, 624 words widened to 64 bits, normal_x/y/rho, normal_is_valid),
// then the float normal sample and its flag.
constexpr size_t kOffSeed = 0, kOffLeft = 8, kOffSeeded = 12, kOffNext = 16, kOffWords = 24;
constexpr size_t kOffNormalX = kOffWords + 8 * kN, kOffNormalY = kOffNormalX + 8, kOffNormalRho = kOffNormalY + 8;
constexpr size_t kOffNormalValid = kOffNormalRho + 8;
constexpr size_t kLegacySize = kOffNormalValid + 8;  // 5048, padded to 8
constexpr size_t kOffFloatNormal = kLegacySize, kOffFloatValid = kOffFloatNormal + 4;
constexpr size_t kStateSize = kOffFloatValid + 4;  // 5056

template <class T>
void put(std::vector<uint8_t>& b, size_t off, T v) { std::memcpy(b.data() + off, &v, sizeof(T)); }
template <class T>
T get(const uint8_t* b, size_t off) {
  T v;
  std::memcpy(&v, b + off, sizeof(T));
  return v;
}
}  // namespace

void Generator::manual_seed(uint64_t seed) {
  // at::mt19937's seeding: the low 32 bits start the recurrence; the whole seed is reported back.
  state_ = State{};
  state_.seed = seed;
  state_.mt[0] = static_cast<uint32_t>(seed & 0xffffffffU);
  for (int j = 1; j < kN; ++j)
    state_.mt[j] = 1812433253U * (state_.mt[j - 1] ^ (state_.mt[j - 1] >> 30)) + static_cast<uint32_t>(j);
  state_.left = 1;
  state_.next = 0;
}

namespace {
// A state the engine can reach: the draws before the next twist stay inside the 624 words.
void check_state(const Generator::State& st) {
  GRAFT_CHECK(st.left >= 1 && st.left <= kN && st.next <= static_cast<uint32_t>(kN) &&
                  st.next + static_cast<uint32_t>(st.left) <= static_cast<uint32_t>(kN + 1),
              "Generator::set_state", "a Mersenne Twister state (left in [1, 624], next <= 625 - left)",
              "left " + std::to_string(st.left) + ", next " + std::to_string(st.next),
              "pass a state that get_state() or torch.get_rng_state() returned");
}
}  // namespace

void Generator::set_state(const State& st) {
  check_state(st);
  state_ = st;
}

uint32_t Generator::random() {
  if (--state_.left == 0) next_state(state_);
  uint32_t y = state_.mt[state_.next++];
  // Tempering.
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

uint64_t Generator::random64() {
  const uint64_t hi = random();
  const uint64_t lo = random();
  return (hi << 32) | lo;
}

double Generator::next_double() {
  return static_cast<double>(random64() & ((uint64_t{1} << 53) - 1)) * (1.0 / static_cast<double>(uint64_t{1} << 53));
}

double Generator::next_normal() {
  // Box-Muller on (u1, u2): r cos(theta) now, r sin(theta) on the next call. 1 - u2 is in (0, 1].
  if (state_.next_double_normal) {
    const double v = *state_.next_double_normal;
    state_.next_double_normal.reset();
    return v;
  }
  const double u1 = next_double();
  const double u2 = next_double();
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 2.0 * std::numbers::pi * u1;
  state_.next_double_normal = r * std::sin(theta);
  return r * std::cos(theta);
}

std::vector<uint8_t> Generator::state_bytes() const {
  std::vector<uint8_t> b(kStateSize, 0);
  put<uint64_t>(b, kOffSeed, state_.seed);
  put<int32_t>(b, kOffLeft, state_.left);
  put<int32_t>(b, kOffSeeded, 1);
  put<uint64_t>(b, kOffNext, state_.next);
  for (int j = 0; j < kN; ++j) put<uint64_t>(b, kOffWords + 8 * static_cast<size_t>(j), state_.mt[j]);
  put<double>(b, kOffNormalY, state_.next_double_normal.value_or(0.0));
  put<int32_t>(b, kOffNormalValid, state_.next_double_normal ? 1 : 0);
  put<float>(b, kOffFloatNormal, state_.next_float_normal.value_or(0.0f));
  b[kOffFloatValid] = state_.next_float_normal ? 1 : 0;
  return b;
}

Generator::State Generator::state_from_bytes(const uint8_t* data, size_t size) {
  GRAFT_CHECK(data != nullptr && (size == kStateSize || size == kLegacySize), "Generator::state_from_bytes",
              "a CPU generator state of " + std::to_string(kStateSize) + " bytes (or the legacy " +
                  std::to_string(kLegacySize) + ")",
              std::to_string(data ? size : 0) + " bytes", "pass what state_bytes() or torch.get_rng_state() returned");
  State st;
  st.seed = get<uint64_t>(data, kOffSeed);
  st.left = get<int32_t>(data, kOffLeft);
  const uint64_t next = get<uint64_t>(data, kOffNext);
  GRAFT_CHECK(get<int32_t>(data, kOffSeeded) != 0 && next <= static_cast<uint64_t>(kN), "Generator::state_from_bytes",
              "a seeded state with next <= 624", "seeded " + std::to_string(get<int32_t>(data, kOffSeeded)) +
                  ", next " + std::to_string(next), "the bytes are not a generator state");
  st.next = static_cast<uint32_t>(next);
  for (int j = 0; j < kN; ++j) st.mt[j] = static_cast<uint32_t>(get<uint64_t>(data, kOffWords + 8 * static_cast<size_t>(j)));
  if (get<int32_t>(data, kOffNormalValid) != 0) {
    if (size == kStateSize) {
      st.next_double_normal = get<double>(data, kOffNormalY);
    } else {  // the legacy layout kept the uniform and the radius: the cached value is the sine one
      st.next_double_normal = get<double>(data, kOffNormalRho) *
                              std::sin(2.0 * std::numbers::pi * get<double>(data, kOffNormalX));
    }
  }
  if (size == kStateSize && data[kOffFloatValid] != 0) st.next_float_normal = get<float>(data, kOffFloatNormal);
  GRAFT_CHECK(!st.next_double_normal || std::isfinite(*st.next_double_normal), "Generator::state_from_bytes",
              "a finite cached normal value", "a non-finite one", "the bytes are damaged");
  check_state(st);  // set_state's bounds, checked before anyone uses the state
  return st;
}

uint64_t Generator::seed() {
  std::random_device rd;
  const uint64_t s = (static_cast<uint64_t>(rd()) << 32) | rd();
  manual_seed(s);
  return s;
}

Tensor Generator::get_state() const {
  const std::vector<uint8_t> bytes = state_bytes();
  Tensor t = empty({static_cast<int64_t>(bytes.size())}, kUInt8);
  std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return t;
}

void Generator::set_state(const Tensor& new_state) {
  GRAFT_CHECK(new_state.defined() && new_state.dtype() == kUInt8 && new_state.device().is_cpu(),
              "Generator::set_state", "a CPU uint8 tensor (torch.get_rng_state()'s bytes)",
              new_state.defined() ? std::string("a ") + dtype_name(new_state.dtype()) + " tensor" : "an undefined tensor",
              "pass what get_state() returned");
  const Tensor bytes = new_state.contiguous();
  set_state(state_from_bytes(bytes.data_ptr<uint8_t>(), static_cast<size_t>(bytes.numel())));
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(default_generator().mutex());
  default_generator().manual_seed(seed);
}

}  // namespace graft
