// The random-number generator behind rand, randn, randint, randperm, dropout and the initialisers.
// One default generator per process (seed it with graft::manual_seed); pass your own for isolation.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace graft {

class Tensor;

// PyTorch's CPU generator, draw for draw (Note [PyTorch's random streams], src/core/random_fill.h):
// a 32-bit Mersenne Twister (mt19937) seeded from the low 32 bits of the seed as at::mt19937,
// random64() made of two 32-bit draws (the first is the high half), and the cached second value
// of a Box-Muller pair. After the same manual_seed, graft::randn, rand, randint, randperm,
// bernoulli_, dropout and nn::init draw the same numbers as LibTorch 1.13 and PyTorch 1.13 on the
// CPU. One difference on purpose: graft's default generator starts from PyTorch's default seed
// 67280421310721, where LibTorch's starts from a nondeterministic one (docs/porting.md).
class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;  // c10::default_rng_seed_val
  explicit Generator(uint64_t seed = kDefaultSeed) { manual_seed(seed); }
  void manual_seed(uint64_t seed);
  void set_current_seed(uint64_t seed) { manual_seed(seed); }
  uint64_t seed();  // reseeds from std::random_device (LibTorch's nondeterministic seed) and returns the seed
  uint64_t initial_seed() const { return state_.seed; }
  uint64_t current_seed() const { return state_.seed; }

  uint32_t random();    // one mt19937 draw (CPUGeneratorImpl::random)
  uint64_t random64();  // (random() << 32) | random() (CPUGeneratorImpl::random64)
  double next_double();  // uniform in [0, 1) from 53 bits of random64(): uniform_real_distribution<double>
  double next_normal();  // standard normal: normal_distribution<double>, the pair's sine value cached

  // The whole state, to save and restore (activation checkpointing replays random numbers this way).
  struct State {
    std::array<uint32_t, 624> mt{};  // the Mersenne Twister's words
    int32_t left = 1;                // draws left before the next twist (1..624)
    uint32_t next = 0;               // index of the next word (0..624)
    uint64_t seed = kDefaultSeed;
    std::optional<double> next_double_normal;  // the cached second value of normal_distribution<double>
    std::optional<float> next_float_normal;    // kept for PyTorch's state layout; graft never sets it
    bool operator==(const State&) const = default;
  };
  const State& state() const { return state_; }
  void set_state(const State& st);  // throws graft::Error on a state no generator can reach

  // LibTorch's spelling: the state as a uint8 tensor of state_bytes() (torch.get_rng_state()), and
  // back from one (5056 bytes, or the legacy 5048).
  Tensor get_state() const;
  void set_state(const Tensor& new_state);

  // PyTorch's byte layout of the state (CPUGeneratorImplState, 5056 bytes: what
  // torch.get_rng_state() returns), so a state moves between graft and PyTorch or LibTorch.
  std::vector<uint8_t> state_bytes() const;
  static State state_from_bytes(const uint8_t* data, size_t size);  // the 5056-byte or legacy 5048-byte layout

  std::mutex& mutex() { return mutex_; }

 private:
  State state_;
  std::mutex mutex_;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace graft
