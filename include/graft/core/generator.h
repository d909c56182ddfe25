// The random-number generator behind rand, randn, randint, dropout and the initialisers.
// One default generator per process (seed it with graft::manual_seed); pass your own for isolation.
#pragma once

#include <cstdint>
#include <mutex>

namespace graft {

// xoshiro256** seeded through splitmix64: fast, 2^256 period, and its state is four words, so the
// whole state can be saved and restored (checkpointing replays random numbers this way).
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) { manual_seed(seed); }
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }
  uint64_t next_u64();
  double next_double();  // uniform in [0, 1)
  double next_normal();  // standard normal
  struct State { uint64_t s[4]; uint64_t seed; bool has_spare; double spare; };
  State get_state() const { return {{s_[0], s_[1], s_[2], s_[3]}, seed_, has_spare_, spare_}; }
  void set_state(const State& st);
  std::mutex& mutex() { return mutex_; }

 private:
  uint64_t s_[4]{};
  uint64_t seed_ = 0;
  bool has_spare_ = false;
  double spare_ = 0;
  std::mutex mutex_;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace graft
