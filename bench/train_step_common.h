// The fixed problems of the training-step benchmark (bench/train_step.cpp, built once against
// LibTorch and once, ported, against graft; see BENCHMARKS.md and bench/run_suite.sh).
//
// Library-neutral (includes neither library): the two problems (model, fixed data, fixed initial
// weights) as plain float vectors, from which each build makes its model, so that both libraries
// start from the same weights and see the same batch.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainstep {

// MLP 784-512-256-10 on (128, 784); CNN conv(1->32, 3x3) ReLU maxpool2 conv(32->64, 3x3) ReLU
// maxpool2 flatten linear(1600->128) ReLU linear(128->10) on (64, 1, 28, 28).
enum class Model { Mlp, Cnn };

inline constexpr double kLr = 0.01;
inline constexpr double kMomentum = 0.9;
inline constexpr int64_t kClasses = 10;

inline const char* model_name(Model m) { return m == Model::Mlp ? "mlp" : "cnn"; }
inline int64_t batch_size(Model m) { return m == Model::Mlp ? 128 : 64; }

// One parameter tensor: its shape and initial values.
struct Param {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Everything both sides need to run the same computation: one fixed batch (input, labels) and the
// initial parameters, in the order Module::parameters() lists them for the Sequential both sides
// build (per layer: weight, then bias).
struct Problem {
  Model model;
  std::vector<int64_t> input_shape;
  std::vector<float> input;
  std::vector<int64_t> labels;
  std::vector<Param> params;
};

// A small deterministic generator (splitmix64), so the data do not depend on either library's RNG.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>((next() >> 40) * 0x1.0p-24); }

 private:
  uint64_t s_;
};

// PyTorch's default initialisation of Linear and Conv2d: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
inline void add_layer(std::vector<Param>& ps, Rng& rng, std::vector<int64_t> weight_shape) {
  int64_t fan_in = 1, numel = 1;
  for (size_t i = 0; i < weight_shape.size(); ++i) {
    numel *= weight_shape[i];
    if (i > 0) fan_in *= weight_shape[i];
  }
  const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  Param w{weight_shape, std::vector<float>(static_cast<size_t>(numel))};
  for (float& v : w.values) v = rng.uniform(-bound, bound);
  Param b{{weight_shape[0]}, std::vector<float>(static_cast<size_t>(weight_shape[0]))};
  for (float& v : b.values) v = rng.uniform(-bound, bound);
  ps.push_back(std::move(w));
  ps.push_back(std::move(b));
}

inline Problem make_problem(Model m) {
  Problem p;
  p.model = m;
  Rng rng(m == Model::Mlp ? 1234 : 5678);
  const int64_t n = batch_size(m);
  if (m == Model::Mlp) {
    p.input_shape = {n, 784};
    add_layer(p.params, rng, {512, 784});
    add_layer(p.params, rng, {256, 512});
    add_layer(p.params, rng, {10, 256});
  } else {
    p.input_shape = {n, 1, 28, 28};
    add_layer(p.params, rng, {32, 1, 3, 3});
    add_layer(p.params, rng, {64, 32, 3, 3});
    add_layer(p.params, rng, {128, 1600});
    add_layer(p.params, rng, {10, 128});
  }
  p.input.resize(static_cast<size_t>(n * 784));
  for (float& v : p.input) v = rng.uniform(0.0f, 1.0f);  // like pixel intensities
  p.labels.resize(static_cast<size_t>(n));
  for (int64_t& l : p.labels) l = static_cast<int64_t>(rng.next() % kClasses);
  return p;
}

}  // namespace trainstep
